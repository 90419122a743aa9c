/* SPDX-License-Identifier: MIT */
/*
 * test_rhash_checker.c - the relativistic hash table under the Triplett
 * checker (tests/rcu_checker.h).  Linked with scalekit_testing, the library
 * built with SK_TESTING=1 (tests/testing.cmake), so every publication and
 * grace period inside src/rhash*.c calls the checker.
 *
 * The reader model is sk_rhash_lookup() and sk_rhash_iter_next() step by
 * step: a lookup loads ht->tbl, then the bucket head, then next pointers,
 * and at the chain's end the array's future pointer, going on in the
 * future array's bucket; an iteration walks bucket after bucket of the
 * array it started with, returns the nodes whose hash belongs to the
 * bucket, and then goes on in the future array.  Readers that started in
 * an old array keep their positions there until the grace period that
 * precedes its free; the test's allocator quarantines every freed block,
 * so a reader loading from a freed array or reaching a freed object is
 * reported.
 *
 * What is proven:
 *   - every grow and shrink between 1..64 buckets (all power-of-two pairs,
 *     one explicit sk_rhash_resize() each, automatic resizing off), for
 *     key sets of 0..100 keys: identity hashes inserted so that every
 *     chain alternates buckets on every node at every level, identity
 *     hashes in random order, and random keys with the default hash under
 *     several seeds: every lookup of every key succeeds and every
 *     iteration returns every key, in every intermediate state of the
 *     migration (each run moved by M1, M2, M3) and for every reader paused
 *     across writes not separated by a grace period; nothing reaches freed
 *     memory; afterwards the chains are clean, the table holds every key
 *     once, and no block leaks;
 *   - inserts, removes (freed after a grace period) and replaces at every
 *     position of every bucket of 1-, 2- and 8-bucket tables;
 *   - the same updates made in the middle of a migration: the checker
 *     build of the table moves two runs per step and calls a test hook
 *     between two steps of an old bucket (partly moved, no lock held);
 *     at every such point of grows 1 -> 2, 1 -> 8, 2 -> 8 and 4 -> 16,
 *     an insert into every old bucket, and a remove and a replace of
 *     every key: every state is checked, the table is right afterwards;
 *     a broken twin that inserts into the old array during a resize MUST
 *     be caught whenever its bucket was already migrated (the key is
 *     lost with the old array);
 *   - two broken twins MUST be caught in every resize with a key
 *     (sk__rhash_test_broken): freeing the old array without the grace
 *     period (a paused reader loads from the freed array), and cutting a
 *     run off its old chain before the future array links it (a lookup
 *     misses a key present throughout);
 *   - the automatic resize check (maybe_resize(), after an update) must not
 *     read a bucket array that a concurrent resize has freed: the updater
 *     is stopped right after loading ht->tbl there (the checker hook arms
 *     a PROT_NONE trap on the array from inside its insert) while another
 *     resize completes.
 * The table's bucket array is private (src/rhash.c): the test mirrors its
 * layout (size, mask, buckets[]) and checks the mirror after init.
 */
#define _GNU_SOURCE
#include "internal/testing.h" /* first: list.h's trace points */
#include "scalekit/rhash.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../src/internal/rhash.h" /* white box: ht->tbl, ht->p.seed */
#include "rcu_checker.h"
#include "sk_test.h"
#include "sk_test_util.h"

/* The bucket array (src/internal/rhash.h). */
#define chk_tbl sk_rhash_table

/* r->aux of a reader about to load t->future (its chain or array done). */
#define AT_FUTURE (~0UL)

#define MAX_OBJS 512
#define MAX_IDS	 SK_CHK_MAX_KEYS

struct obj {
	struct sk_rhash_node node;
	uint64_t key;  /* the table's key (8 bytes) */
	int id;	       /* checker key id */
	int freed;     /* freed by the test after a grace period */
};

static struct obj objs[MAX_OBJS];
static int nobjs;
static uint64_t keyval[MAX_IDS]; /* key of each id */
static struct sk_rhash *ht;
static struct sk_chk chk;

/* ---- allocator: every block recorded, freed blocks quarantined -------- */

#define MAX_BLOCKS 4096

static struct blk {
	char *p;
	size_t size;
	int freed;
} blocks[MAX_BLOCKS];
static int nblocks;

static void *q_alloc(size_t size)
{
	char *p;

	if (nblocks == MAX_BLOCKS)
		return NULL;
	p = (char *)malloc(size);
	if (!p)
		return NULL;
	blocks[nblocks].p = p;
	blocks[nblocks].size = size;
	blocks[nblocks].freed = 0;
	nblocks++;
	return p;
}

static void q_free(void *p)
{
	int i;

	for (i = nblocks - 1; i >= 0; i--) {
		if (blocks[i].p == p && !blocks[i].freed) {
			blocks[i].freed = 1;
			memset(p, 0xa5, blocks[i].size); /* poison */
			return;
		}
	}
	SK_T_FAIL("free of %p, which is no live block", p);
}

static int live_blocks(void)
{
	int i, n = 0;

	for (i = 0; i < nblocks; i++)
		n += !blocks[i].freed;
	return n;
}

/* Release the quarantine (every block must be freed by then). */
static void q_release_all(void)
{
	int i;

	for (i = 0; i < nblocks; i++)
		free(blocks[i].p);
	nblocks = 0;
}

static const struct blk *block_of(const void *addr)
{
	int i;

	for (i = 0; i < nblocks; i++)
		if ((const char *)addr >= blocks[i].p &&
		    (const char *)addr < blocks[i].p + blocks[i].size)
			return &blocks[i];
	return NULL;
}

/* ---- keys and objects ------------------------------------------------- */

static int identity_hash_on;

static unsigned long identity_hash(const void *key, size_t len,
				   unsigned long seed)
{
	(void)len;
	(void)seed;
	return (unsigned long)*(const uint64_t *)key;
}

static unsigned long hash_of(uint64_t key)
{
	return identity_hash_on ? (unsigned long)key
				: sk_rhash_hash(&key, 8, ht->p.seed);
}

static struct obj *obj_new(int id)
{
	struct obj *o = &objs[nobjs++];

	memset(o, 0, sizeof(*o));
	o->id = id;
	o->key = keyval[id];
	return o;
}

static void obj_free(struct obj *o)
{
	o->freed = 1;
	o->node.next = (struct sk_rhash_node *)((unsigned long)0xdead0000beefULL);
	o->node.hash = 0xdeadbeefUL;
}

static struct obj *obj_of(const void *p)
{
	const char *b = (const char *)objs;
	size_t d;

	if ((const char *)p < b || (const char *)p >= b + sizeof(objs))
		return NULL;
	d = (size_t)((const char *)p - b);
	if (d % sizeof(struct obj) != offsetof(struct obj, node))
		return NULL;
	return &objs[d / sizeof(struct obj)];
}

static struct chk_tbl *cur_tbl(void)
{
	return (struct chk_tbl *)sk_rcu_dereference(ht->tbl);
}

/* ---- reader model ----------------------------------------------------- */

/* A reader of kind k enters table t: its first bucket, or the key's. */
static void rh_enter_table(struct chk_tbl *t, const struct sk_chk_kind *k,
			   struct sk_chk_reader *r)
{
	r->ctx = t;
	r->aux = 0;
	if (k->key == SK_CHK_ITER)
		r->slot = &t->buckets[0];
	else
		r->slot = &t->buckets[hash_of(keyval[k->key]) & t->mask];
}

static void rh_start(void *arg, const struct sk_chk_kind *k,
		     struct sk_chk_reader *r)
{
	(void)arg;
	rh_enter_table(cur_tbl(), k, r);
}

static unsigned long tbl_size(const void *t);

/* The chain or array of t is done: load t->future next. */
static int rh_to_future(const struct chk_tbl *t, struct sk_chk_reader *r)
{
	r->slot = &t->future;
	r->aux = AT_FUTURE;
	return SK_CHK_MOVED;
}

/* Loaded t->future (f): go on in f, or end. */
static int rh_in_future(const struct sk_chk_kind *k, struct sk_chk_reader *r)
{
	struct chk_tbl *f = sk_rcu_dereference(*(struct chk_tbl **)r->slot);

	if (!f)
		return SK_CHK_END;
	rh_enter_table(f, k, r);
	return SK_CHK_MOVED;
}

/*
 * sk_rhash_lookup(): the chain of its bucket, then the same in t->future
 * (if any); sk_rhash_iter_next(): every bucket, then the future array.
 */
static int rh_load(void *arg, const struct sk_chk_kind *k,
		   struct sk_chk_reader *r, const void **node)
{
	const struct chk_tbl *t = (const struct chk_tbl *)r->ctx;
	struct sk_rhash_node *n;

	(void)arg;
	if (r->aux == AT_FUTURE)
		return rh_in_future(k, r);
	n = sk_rcu_dereference(*(struct sk_rhash_node **)r->slot);
	/* (A migrated old bucket's head is 1, RHASH_MOVED: the end.) */
	if ((uintptr_t)n > 1) {
		*node = n;
		return SK_CHK_NODE;
	}
	/* The array's size from its block: a freed array's header is poison. */
	if (k->key != SK_CHK_ITER || r->aux + 1 >= tbl_size(t))
		return rh_to_future(t, r);
	r->aux++;
	r->slot = &t->buckets[r->aux];
	return SK_CHK_MOVED;
}

static int rh_enter(void *arg, const struct sk_chk_kind *k,
		    struct sk_chk_reader *r, const void *node)
{
	struct obj *o = obj_of(node);
	const struct chk_tbl *t = (const struct chk_tbl *)r->ctx;

	(void)arg;
	if (!o)
		return SK_CHK_BAD;
	r->slot = &o->node.next;
	if (k->key == SK_CHK_ITER)
		return (o->node.hash & t->mask) == r->aux ? o->id : -1;
	/* sk_rhash_lookup(): hash, then key. */
	if (o->node.hash == hash_of(keyval[k->key]) && o->key == keyval[k->key])
		return k->key;
	return -1;
}

static int rh_freed(void *arg, const void *addr)
{
	struct obj *o;
	const struct blk *b;

	(void)arg;
	if ((const char *)addr >= (const char *)objs &&
	    (const char *)addr < (const char *)objs + sizeof(objs)) {
		o = &objs[((const char *)addr - (const char *)objs) /
			  sizeof(struct obj)];
		return o->freed;
	}
	b = block_of(addr);
	return b && b->freed;
}

/* Buckets of the array at t, from its block (its header may be poisoned). */
static unsigned long tbl_size(const void *t)
{
	const struct blk *b = block_of(t);

	size_t payload;
	unsigned long n;

	if (!b)
		return 0;
	/* The heads, then one lock bit per bucket in whole words. */
	payload = b->size - offsetof(struct chk_tbl, buckets);
	for (n = 1; n <= payload / sizeof(void *); n <<= 1)
		if (n * sizeof(void *) +
			    sk__rhash_lock_words(n) * sizeof(unsigned long) ==
		    payload)
			return n;
	return 0;
}

static void rh_describe(void *arg, const struct sk_chk_reader *r, char *buf,
			size_t len)
{
	const struct blk *b = block_of(r->slot);
	struct obj *o = obj_of((const char *)r->slot -
			       offsetof(struct sk_rhash_node, next));
	size_t n;

	(void)arg;
	if (o)
		snprintf(buf, len, "&%sobject(key id %d)->next",
			 o->freed ? "freed " : "", o->id);
	else if (b)
		snprintf(buf, len, "&%sbuckets[%ld] of the %lu-bucket array",
			 b->freed ? "freed " : "",
			 (long)(((const char *)r->slot - b->p -
				 (long)offsetof(struct chk_tbl, buckets)) /
				(long)sizeof(void *)),
			 tbl_size(b->p));
	else
		snprintf(buf, len, "%p", r->slot);
	n = strlen(buf);
	if (r->aux == AT_FUTURE && b)
		snprintf(buf, len, "&%sarray(%lu buckets)->future",
			 b->freed ? "freed " : "", tbl_size(b->p));
	else if (r->ctx && n + 48 < len)
		snprintf(buf + n, len - n, " (array of %lu, bucket %lu)",
			 tbl_size(r->ctx), r->aux);
}

static const char *rh_root_name(void *arg, const void *root)
{
	(void)arg;
	return root == ht ? "the table" : NULL;
}

static const struct sk_chk_ops rh_ops = {
	.start = rh_start,
	.load = rh_load,
	.enter = rh_enter,
	.freed = rh_freed,
	.describe = rh_describe,
	.root_name = rh_root_name,
};

/* ---- table set-up and final checks ------------------------------------ */

/* Parameters of a table of struct obj (8-byte keys) from buckets up. */
static struct sk_rhash_params obj_table_params(unsigned long buckets)
{
	struct sk_rhash_params p = SK_RHASH_PARAMS_DEFAULT;

	p.head_offset = offsetof(struct obj, node);
	p.key_offset = offsetof(struct obj, key);
	p.key_len = 8;
	p.initial_buckets = buckets;
	p.min_buckets = 1;
	return p;
}

/* Create ht from p, no objects yet; identity: identity_hash is in use. */
static void table_create(const struct sk_rhash_params *p, int identity)
{
	identity_hash_on = identity;
	nobjs = 0;
	SK_CHECK((ht = sk_rhash_create(p)) != NULL);
}

static void table_init(unsigned long buckets, int identity)
{
	struct sk_rhash_params p = obj_table_params(buckets);

	p.hashfn = identity ? identity_hash : NULL;
	p.seed = 0x5eed;
	p.max_buckets = 1UL << 20;
	p.automatic_resize = 0;
	p.alloc = q_alloc;
	p.free = q_free;
	table_create(&p, identity);
	SK_CHECK_EQ(cur_tbl()->size, buckets);
	SK_CHECK_EQ(cur_tbl()->mask, buckets - 1);
}

static void table_destroy(void)
{
	sk_rhash_destroy(ht, NULL, NULL);
	SK_CHECK_EQ(live_blocks(), 0);
	q_release_all();
}

/*
 * After a completed operation: every chain holds only its bucket's nodes,
 * each id of present[] is found once by lookup and iteration, count right.
 */
static void check_table(const uint64_t *present, const char *label)
{
	struct chk_tbl *t = cur_tbl();
	int seen[MAX_IDS] = { 0 }, id, n = 0, bad = 0;
	unsigned long b;
	struct sk_rhash_iter it;
	struct obj *o;

	for (b = 0; b < t->size; b++) {
		struct sk_rhash_node *x;

		for (x = t->buckets[b]; x; x = x->next)
			if ((x->hash & t->mask) != b)
				bad++;
	}
	if (bad)
		SK_T_FAIL("%s: %d nodes in foreign chains after the operation",
			  label, bad);
	sk_rcu_read_lock();
	sk_rhash_iter_start(ht, &it);
	while ((o = (struct obj *)sk_rhash_iter_next(&it)) != NULL) {
		if (o->freed || o->id < 0 || o->id >= MAX_IDS) {
			bad++;
			break;
		}
		seen[o->id]++;
		n++;
	}
	for (id = 0; id < MAX_IDS; id++) {
		int want = sk_chk_bit(present, id);

		if (seen[id] != want) {
			SK_T_FAIL("%s: iteration returns key id %d %d times, "
				  "want %d",
				  label, id, seen[id], want);
			break;
		}
		if (want) {
			o = (struct obj *)sk_rhash_lookup(ht, &keyval[id]);
			if (!o || o->id != id) {
				SK_T_FAIL("%s: lookup of key id %d fails",
					  label, id);
				break;
			}
		}
	}
	sk_rcu_read_unlock();
	SK_CHECK_EQ(bad, 0);
	SK_CHECK_EQ(sk_rhash_count(ht), n);
}

/* Readers: a lookup of every id in [0, nids), one iteration. */
static void add_readers(int nids, const uint64_t *stable)
{
	int id;

	sk_chk_clear_kinds(&chk);
	for (id = 0; id < nids; id++)
		sk_chk_add_lookup(&chk, ht, id, sk_chk_bit(stable, id));
	sk_chk_add_iter(&chk, ht, stable, 0);
}

/* ---- key sets ------------------------------------------------------------ */

enum { KS_ALTERNATE, KS_IDENTITY_SHUFFLED, KS_RANDOM, KS_KINDS };

static const char *const ks_names[] = { "alternating", "identity-shuffled",
					"random" };

/*
 * Fill keyval[0..n) and the insertion order.  KS_ALTERNATE: key i hashes
 * to i and keys are inserted in descending order, so every chain lists its
 * keys ascending: consecutive nodes differ in the lowest bit not yet used,
 * at every table size.
 */
static void make_keys(int kind, int n, uint64_t *rng, int *order)
{
	int i;

	for (i = 0; i < n; i++) {
		keyval[i] = kind == KS_RANDOM ? sk_test_rand(rng) : (uint64_t)i;
		order[i] = kind == KS_ALTERNATE ? n - 1 - i : i;
	}
	if (kind == KS_IDENTITY_SHUFFLED) {
		for (i = n - 1; i > 0; i--) {
			int j = (int)(sk_test_rand(rng) % (uint64_t)(i + 1));
			int x = order[i];

			order[i] = order[j];
			order[j] = x;
		}
	}
}

static void fill(int n, const int *order, uint64_t *present)
{
	int i;

	for (i = 0; i < n; i++) {
		struct obj *o = obj_new(order[i]);

		SK_CHECK_EQ(sk_rhash_insert(ht, &o->node), 0);
		sk_chk_bit_set(present, order[i]);
	}
}

/* ---- resizes ------------------------------------------------------------- */

static const int key_counts[] = { 0, 1, 2, 3, 5, 8, 17, 33, 100 };
#define NCOUNTS (int)(sizeof(key_counts) / sizeof(key_counts[0]))

/* One checked resize from -> to; returns the violations. */
static unsigned long resize_case(unsigned long from, unsigned long to,
				 int kind, int n, uint64_t seed, int expect_ok)
{
	uint64_t present[SK_CHK_WORDS] = { 0 }, rng = seed;
	int order[MAX_IDS];
	char label[160];
	unsigned long v;

	make_keys(kind, n, &rng, order);
	table_init(from, kind != KS_RANDOM);
	fill(n, order, present);
	snprintf(label, sizeof(label),
		 "resize %lu -> %lu, %d %s keys (seed %llu)%s", from, to, n,
		 ks_names[kind], (unsigned long long)seed,
		 sk__rhash_test_broken == SK__RHASH_BROKEN_NO_GP
			 ? " WITHOUT the grace period before the free"
		 : sk__rhash_test_broken ? " CUTTING runs before linking them"
					 : "");
	add_readers(n, present);
	sk_chk_begin(&chk, label);
	SK_CHECK_EQ(sk_rhash_resize(ht, to), 0);
	v = sk_chk_end(&chk);
	if (v && expect_ok)
		SK_T_FAIL("%s: %lu violation(s): %s", label, v, chk.first);
	SK_CHECK_EQ(sk_rhash_buckets(ht), to);
	if (expect_ok)
		check_table(present, label);
	/* Stripes and the current array are all that stays allocated. */
	SK_CHECK_EQ(live_blocks(), 2);
	table_destroy();
	return v;
}

static int nseeds(void)
{
	return sk_test_slow() > 1 ? 1 : 3;
}

/*
 * Under sanitizers (sk_test_slow() > 1) the single-threaded checker is the
 * cost: one seed, no shuffled identity sets, and the sets of 33 and 100
 * keys only on the pairs that span 1..64 buckets.
 */
static int case_wanted(unsigned long from, unsigned long to, int kind, int n)
{
	int extreme = (from == 1 || to == 1) && (from == 64 || to == 64);

	if (sk_test_slow() == 1)
		return 1;
	if (kind == KS_IDENTITY_SHUFFLED)
		return 0;
	return n <= 17 || extreme;
}

/* All seeds of one (from, to, kind, count) case. */
static int resize_cases(unsigned long from, unsigned long to, int kind, int n)
{
	int s, seeds = kind == KS_ALTERNATE ? 1 : nseeds();

	if (!case_wanted(from, to, kind, n))
		return 0;
	for (s = 0; s < seeds; s++)
		resize_case(from, to, kind, n,
			    sk_t_seed + (uint64_t)s * 7919 + 1, 1);
	return seeds;
}

static void every_grow_and_shrink_between_1_and_64_buckets(void)
{
	unsigned long from, to;
	int c, kind, cases = 0;

	for (from = 1; from <= 64; from *= 2)
		for (to = 1; to <= 64; to *= 2)
			for (c = 0; from != to && c < NCOUNTS; c++)
				for (kind = 0; kind < KS_KINDS; kind++)
					cases += resize_cases(from, to, kind,
							      key_counts[c]);
	fprintf(stderr, "  %d resizes checked\n", cases);
}

/*
 * Both broken twins MUST be caught in every resize that has a key: without
 * the grace period, a reader paused in the old array loads from it after
 * its free; with a run cut off its old chain before the future array has
 * it, a lookup of one of its keys misses.
 */
static void broken_twin_caught(int twin)
{
	static const int counts[] = { 1, 3, 8, 17 };
	unsigned long from, to;
	int c, kind, runs = 0, missed = 0;

	sk__rhash_test_broken = twin;
	chk.print_limit = chk.printed + 1; /* show which reader, which state */
	chk.stop_on_violation = 1;	   /* the first one is enough */
	for (from = 1; from <= 64; from *= 2)
		for (to = 1; to <= 64; to *= 2)
			for (c = 0; from != to && c < 4; c++)
				for (kind = 0; kind < KS_KINDS; kind += 2) {
					if (!resize_case(from, to, kind,
							 counts[c],
							 sk_t_seed + 17, 0)) {
						missed++;
						fprintf(stderr,
							"  NOT caught: %lu -> "
							"%lu, %d keys\n",
							from, to, counts[c]);
					}
					runs++;
				}
	sk__rhash_test_broken = 0;
	chk.print_limit = chk.printed + 20;
	chk.stop_on_violation = 0;
	fprintf(stderr, "  twin %d caught in %d of %d resizes\n", twin,
		runs - missed, runs);
	SK_CHECK_GT(runs, 0);
	SK_CHECK_EQ(missed, 0);
}

static void resize_without_grace_period_is_caught(void)
{
	broken_twin_caught(SK__RHASH_BROKEN_NO_GP);
}

static void resize_cutting_before_linking_is_caught(void)
{
	broken_twin_caught(SK__RHASH_BROKEN_CUT_FIRST);
}

/* ---- updates --------------------------------------------------------------- */

/* The updater's own grace period before it frees what it removed. */
static void gp_then_free_later(void)
{
	sk_synchronize_rcu();
	sk__rcu_checker_hook(SK__RCU_CHECK_GP);
}

/*
 * U_STALE: an insert that read the table before the resize began.
 * U_RACE_M2, U_RACE_M3: inserts made inside a migration step, right before
 * the CAS of RH-M2 (a key of the run's new bucket) or of RH-M3 at an old
 * bucket's head (a stale insert of a key of that bucket).
 */
enum { U_INSERT, U_REMOVE, U_REPLACE, U_STALE, U_RACE_M2, U_RACE_M3 };

static const char *const u_names[] = { "insert",       "remove",
				       "replace",      "stale insert",
				       "insert racing RH-M2",
				       "stale insert racing RH-M3" };

/*
 * In a table of `buckets` buckets holding the alternating set of n keys,
 * one update of key id `id` (insert: a new id, n, whose key is chosen to
 * land in bucket id % buckets).
 */
static void update_case(unsigned long buckets, int n, int op, int id)
{
	uint64_t present[SK_CHK_WORDS] = { 0 }, stable[SK_CHK_WORDS], rng = 1;
	int order[MAX_IDS], i;
	struct obj *victim = NULL, *o;
	char label[128];

	make_keys(KS_ALTERNATE, n, &rng, order);
	table_init(buckets, 1);
	fill(n, order, present);
	if (op != U_INSERT)
		for (i = 0; i < nobjs; i++)
			if (objs[i].id == id)
				victim = &objs[i];
	memcpy(stable, present, sizeof(stable));
	if (op == U_REMOVE)
		stable[id / 64] &= ~(1ull << (id % 64));
	if (op == U_INSERT) {
		/* Lands in bucket id % buckets, after the others' keys. */
		keyval[n] = (uint64_t)(id % (int)buckets) + 1024 * buckets;
	}
	snprintf(label, sizeof(label), "%s of key id %d in %lu buckets, %d keys",
		 u_names[op], op == U_INSERT ? n : id, buckets, n);
	add_readers(n + 1, stable);
	sk_chk_begin(&chk, label);
	switch (op) {
	case U_INSERT:
		o = obj_new(n);
		SK_CHECK_EQ(sk_rhash_insert(ht, &o->node), 0);
		sk_chk_bit_set(present, n);
		break;
	case U_REMOVE:
		SK_CHECK_EQ(sk_rhash_remove(ht, &victim->node), 0);
		gp_then_free_later();
		obj_free(victim);
		present[id / 64] &= ~(1ull << (id % 64));
		break;
	case U_REPLACE:
		o = obj_new(id);
		SK_CHECK_EQ(sk_rhash_replace(ht, &victim->node, &o->node), 0);
		gp_then_free_later();
		obj_free(victim);
		break;
	}
	if (sk_chk_end(&chk))
		SK_T_FAIL("%s: %lu violation(s): %s", label, chk.op_violations,
			  chk.first);
	check_table(present, label);
	table_destroy();
}

static void insert_remove_replace_at_every_position(void)
{
	static const unsigned long sizes[] = { 1, 2, 8 };
	static const int counts[] = { 0, 1, 3, 8, 17 };
	int s, c, id, cases = 0;

	for (s = 0; s < 3; s++)
		for (c = 0; c < 5; c++) {
			int n = counts[c];

			for (id = 0; id < (n > (int)sizes[s] ? n : (int)sizes[s]);
			     id++, cases++)
				update_case(sizes[s], n, U_INSERT, id);
			for (id = 0; id < n; id++, cases += 2) {
				update_case(sizes[s], n, U_REMOVE, id);
				update_case(sizes[s], n, U_REPLACE, id);
			}
		}
	fprintf(stderr, "  %d updates checked\n", cases);
}

/* ---- updates in the middle of a migration ----------------------------- */

/*
 * The update made at one step point of a resize: between two migration
 * steps of an old bucket (the testing build moves two runs per step), with
 * the bucket partly moved.
 */
static struct {
	int at;		   /* step point to update at */
	int seen;	   /* step points passed */
	int op, id;	   /* the update; insert: id n, key in old bucket b */
	unsigned long b;   /* insert: the old bucket its key hashes to */
	struct obj *victim;
	uint64_t *present;
	int into_migrated; /* the insert's bucket was already migrated */
} mid;

/*
 * The lowest old bucket not yet migrated completely (the one partly
 * moved): the heads before it are RHASH_MOVED (1), or empty (twins).
 */
static unsigned long partly_moved_bucket(void)
{
	struct chk_tbl *t = cur_tbl();
	unsigned long i = 0;

	while (i < t->size && (uintptr_t)t->buckets[i] <= 1)
		i++;
	return i;
}

/* Insert the new key id mid.id; stale: as if it read the table early. */
static void mid_insert(int stale)
{
	struct obj *o = obj_new(mid.id);

	sk__rhash_test_stale_insert = stale;
	SK_CHECK_EQ(sk_rhash_insert(ht, &o->node), 0);
	sk_chk_bit_set(mid.present, mid.id);
}

static void race_update(int where, unsigned long hash)
{
	struct chk_tbl *t = cur_tbl();

	if (mid.op != U_RACE_M2 + where || mid.seen++ != mid.at)
		return;
	/* Identity hash: a key of the run's new bucket, or of its old one. */
	keyval[mid.id] = (1UL << 20) + (hash & (where ? t->mask : t->future->mask));
	mid_insert(where);
}

static void mid_update(struct sk_rhash *h)
{
	struct obj *o;

	(void)h;
	if (mid.op >= U_RACE_M2 || mid.seen++ != mid.at)
		return;
	switch (mid.op) {
	case U_STALE:
	case U_INSERT:
		mid.into_migrated = mid.b < partly_moved_bucket();
		mid_insert(mid.op == U_STALE);
		break;
	case U_REMOVE:
		SK_CHECK_EQ(sk_rhash_remove(ht, &mid.victim->node), 0);
		gp_then_free_later();
		obj_free(mid.victim);
		mid.present[mid.id / 64] &= ~(1ull << (mid.id % 64));
		break;
	case U_REPLACE:
		o = obj_new(mid.id);
		SK_CHECK_EQ(sk_rhash_replace(ht, &mid.victim->node, &o->node),
			    0);
		gp_then_free_later();
		obj_free(mid.victim);
		break;
	}
}

/* Present keys that a lookup misses after the operation. */
static int lost_keys(const uint64_t *present)
{
	int id, lost = 0;

	sk_rcu_read_lock();
	for (id = 0; id < MAX_IDS; id++)
		if (sk_chk_bit(present, id) &&
		    !sk_rhash_lookup(ht, &keyval[id]))
			lost++;
	sk_rcu_read_unlock();
	return lost;
}

/*
 * Grow from -> to with n alternating keys; at step point `at`, op on key
 * id (insert: a new id n whose key lands in old bucket b).  Returns the
 * step points passed; *caught gets the checker's violations plus the
 * present keys lost.
 */
static int mid_case(unsigned long from, unsigned long to, int n, int at,
		    int op, int id, unsigned long b, unsigned long *caught)
{
	uint64_t present[SK_CHK_WORDS] = { 0 }, stable[SK_CHK_WORDS], rng = 1;
	int order[MAX_IDS], i, expect_ok = !sk__rhash_test_broken;
	char label[160];
	unsigned long v;

	make_keys(KS_ALTERNATE, n, &rng, order);
	keyval[n] = b + (1UL << 20); /* identity hash: old bucket b */
	table_init(from, 1);
	fill(n, order, present);
	memset(&mid, 0, sizeof(mid));
	mid.at = at;
	mid.op = op;
	mid.id = op == U_REMOVE || op == U_REPLACE ? id : n;
	mid.b = b;
	mid.present = present;
	for (i = 0; (op == U_REMOVE || op == U_REPLACE) && i < nobjs; i++)
		if (objs[i].id == id)
			mid.victim = &objs[i];
	memcpy(stable, present, sizeof(stable));
	if (op == U_REMOVE || op == U_REPLACE)
		stable[id / 64] &= ~(1ull << (id % 64));
	snprintf(label, sizeof(label),
		 "grow %lu -> %lu, %d keys, %s of key id %d at step point %d%s",
		 from, to, n, u_names[op], mid.id, at,
		 expect_ok ? "" : " (BROKEN twin)");
	add_readers(n + 1, stable);
	sk__rhash_test_step_hook = mid_update;
	sk__rhash_test_race_hook = race_update;
	sk_chk_begin(&chk, label);
	SK_CHECK_EQ(sk_rhash_resize(ht, to), 0);
	v = sk_chk_end(&chk);
	sk__rhash_test_step_hook = NULL;
	sk__rhash_test_race_hook = NULL;
	if (v && expect_ok)
		SK_T_FAIL("%s: %lu violation(s): %s", label, v, chk.first);
	if (expect_ok && mid.seen > at)
		check_table(present, label);
	*caught = v + (unsigned long)lost_keys(present);
	table_destroy();
	return mid.seen;
}

/* Every update at every step point of one grow; returns the cases run. */
static int mid_grow(unsigned long from, unsigned long to, int n)
{
	unsigned long caught;
	int at, points, id, cases = 0;
	unsigned long b;

	points = mid_case(from, to, n, -1, U_INSERT, 0, 0, &caught);
	for (at = 0; at < points; at++) {
		for (b = 0; b < from; b++, cases += 2) {
			mid_case(from, to, n, at, U_INSERT, 0, b, &caught);
			mid_case(from, to, n, at, U_STALE, 0, b, &caught);
		}
		for (id = 0; id < n; id++, cases += 2) {
			mid_case(from, to, n, at, U_REMOVE, id, 0, &caught);
			mid_case(from, to, n, at, U_REPLACE, id, 0, &caught);
		}
	}
	return cases;
}

static const struct {
	unsigned long from, to;
} mid_grows[] = { { 1, 2 }, { 1, 8 }, { 2, 8 }, { 4, 16 } };
#define NMID (int)(sizeof(mid_grows) / sizeof(mid_grows[0]))

/*
 * Inserts, removes (freed after a grace period) and replaces made while a
 * grow is stopped between two migration steps of an old bucket: the
 * checker sees every state, and the table is right afterwards.  (A shrink
 * moves each old chain in one run, in one step: no partial state.)
 */
static void updates_in_the_middle_of_a_migration(void)
{
	int g, cases = 0;

	/* 17 keys (several step points per bucket) on one grow: the cost. */
	for (g = 0; g < NMID; g++)
		cases += mid_grow(mid_grows[g].from, mid_grows[g].to,
				  g == 2 && sk_test_slow() == 1 ? 17 : 5);
	fprintf(stderr, "  %d updates at step points checked\n", cases);
	SK_CHECK_GT(cases, 0);
}

/*
 * Broken twin: migrated old buckets are left empty instead of moved.  A
 * stale insert (it read the table before the resize began) into such a
 * bucket pushes its node onto the old array, where it is lost when the
 * resize drops that array: it MUST be caught in every such case.
 */
static void stale_insert_into_unmarked_bucket_is_caught(void)
{
	unsigned long b, caught;
	int g, at, points, want = 0, got = 0;

	sk__rhash_test_broken = SK__RHASH_BROKEN_NO_MOVED;
	for (g = 0; g < NMID; g++) {
		unsigned long from = mid_grows[g].from, to = mid_grows[g].to;

		points = mid_case(from, to, 17, -1, U_STALE, 0, 0, &caught);
		for (at = 0; at < points; at++)
			for (b = 0; b < from; b++) {
				mid_case(from, to, 17, at, U_STALE, 0, b,
					 &caught);
				want += mid.into_migrated;
				got += mid.into_migrated && caught;
			}
	}
	sk__rhash_test_broken = 0;
	fprintf(stderr, "  twin %d caught in %d of %d stale inserts into a "
			"migrated bucket\n",
		SK__RHASH_BROKEN_NO_MOVED, got, want);
	SK_CHECK_GT(want, 0);
	SK_CHECK_EQ(got, want);
}

/*
 * Every race point (a CAS of RH-M2, or of RH-M3 at an old head) of the
 * grows, with a lock-free insert there; op U_RACE_M2 or U_RACE_M3.
 * Returns the cases run; *caught counts the cases caught.
 */
static int race_grows(int op, int *caught)
{
	unsigned long c;
	int g, at, points, cases = 0;

	*caught = 0;
	for (g = 0; g < NMID; g++) {
		unsigned long from = mid_grows[g].from, to = mid_grows[g].to;

		points = mid_case(from, to, 9, -1, op, 0, 0, &c);
		for (at = 0; at < points; at++, cases++) {
			mid_case(from, to, 9, at, op, 0, 0, &c);
			*caught += c != 0;
		}
	}
	return cases;
}

/*
 * Lock-free inserts that race the migrator's compare-and-swaps of bucket
 * heads (RH-M2 on the new array's, RH-M3 on the old one's): the migrator
 * retries RH-M1 and RH-M2, or cuts the run off behind the pushed nodes;
 * the checker sees every state and no key is lost.
 */
static void inserts_racing_the_migrators_head_cas(void)
{
	int m2, m3, c2, c3;

	/* An insert that took the bucket lock would deadlock here. */
	sk_test_deadline("a lock-free insert made while the migrator holds "
			 "its bucket lock", 300);
	m2 = race_grows(U_RACE_M2, &c2);
	m3 = race_grows(U_RACE_M3, &c3);
	alarm(0);
	fprintf(stderr, "  %d inserts racing RH-M2, %d racing RH-M3 checked\n",
		m2, m3);
	SK_CHECK_GT(m2, 0);
	SK_CHECK_GT(m3, 0);
	SK_CHECK_EQ(c2 + c3, 0);
}

/* Broken twin: plain stores to the heads lose every racing insert. */
static void head_stores_without_cas_are_caught(void)
{
	int m2, m3, c2, c3;

	sk__rhash_test_broken = SK__RHASH_BROKEN_HEAD_STORE;
	m2 = race_grows(U_RACE_M2, &c2);
	m3 = race_grows(U_RACE_M3, &c3);
	sk__rhash_test_broken = 0;
	fprintf(stderr, "  twin %d caught in %d of %d inserts racing RH-M2, "
			"%d of %d racing RH-M3\n",
		SK__RHASH_BROKEN_HEAD_STORE, c2, m2, c3, m3);
	SK_CHECK_GT(m2, 0);
	SK_CHECK_GT(m3, 0);
	SK_CHECK_EQ(c2, m2);
	SK_CHECK_EQ(c3, m3);
}

/* The checker itself must see the grace periods rhash waits for. */
static void resize_reports_its_grace_periods(void)
{
	uint64_t present[SK_CHK_WORDS] = { 0 }, rng = 1;
	int order[MAX_IDS];
	unsigned long gps;

	make_keys(KS_ALTERNATE, 8, &rng, order);
	table_init(1, 1);
	fill(8, order, present);
	add_readers(8, present);
	gps = chk.st.gp_events;
	sk_chk_begin(&chk, "grow 1 -> 2, 8 keys");
	SK_CHECK_EQ(sk_rhash_resize(ht, 2), 0);
	SK_CHECK_EQ(sk_chk_end(&chk), 0);
	/* One, before the old array's free; no lock is held across it. */
	SK_CHECK_EQ(chk.st.gp_events - gps, 1);
	check_table(present, "grow 1 -> 2");
	table_destroy();
}

/* ---- maybe_resize() and a concurrently freed array ---------------------- */

#ifdef __SANITIZE_ADDRESS__
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "allow_user_segv_handler=1";
}
#endif

/* ---- RH-D1: a change of the lock array waits for old bit holders ------ */

enum { HOLD_IDLE, HOLD_ARMED, HOLD_HELD, HOLD_RELEASED };
static int hold_state;
static __thread int i_am_holder;

/* Library hook (bit held, mapping checked): the holder stops here. */
static void hold_hook(unsigned long hash)
{
	(void)hash;
	if (!i_am_holder || LOAD(hold_state) != HOLD_ARMED)
		return;
	STORE(hold_state, HOLD_HELD);
	while (LOAD(hold_state) != HOLD_RELEASED)
		sched_yield();
}

struct d1_thread {
	pthread_t tid;
	struct obj *o; /* remove it; NULL: resize to 16 buckets */
	int holder, rc, done;
};

static void *d1_main(void *arg)
{
	struct d1_thread *d = arg;

	i_am_holder = d->holder;
	d->rc = d->o ? sk_rhash_remove(ht, &d->o->node) : sk_rhash_resize(ht, 16);
	STORE(d->done, 1);
	return NULL;
}

/*
 * Updater S removes X (hash 5) and stops holding the bit of bucket 5 of
 * the 64-bucket table.  R shrinks the table to 16 buckets: its future
 * array becomes the lock array, so R must wait for S (drain) before it
 * migrates; N removes Y (hash 69: old bucket 5 too) under the new mapping
 * and must wait for S as well (prev_lock).  Returns nonzero when either
 * went on while S held its bit.
 */
static int lock_array_change(int twin)
{
	struct d1_thread s = { .holder = 1 }, r = { 0 }, n = { 0 };
	uint64_t present[SK_CHK_WORDS] = { 0 };
	int i, early = 0;

	sk__rhash_test_broken = twin;
	table_init(64, 1);
	for (i = 0; i < 80; i++) {
		keyval[i] = (uint64_t)i;
		SK_CHECK_EQ(sk_rhash_insert(ht, &obj_new(i)->node), 0);
		sk_chk_bit_set(present, i);
	}
	s.o = &objs[5];
	n.o = &objs[69];
	STORE(hold_state, HOLD_ARMED);
	sk__rhash_test_locked_hook = hold_hook;
	sk_test_thread_start(&s.tid, d1_main, &s);
	while (LOAD(hold_state) != HOLD_HELD)
		sched_yield();
	sk_test_thread_start(&r.tid, d1_main, &r);
	sk_test_sleep_ms(20);
	sk_test_thread_start(&n.tid, d1_main, &n);
	/*
	 * 70 ms for the correct table (nothing may move: a longer wait could
	 * only catch more); the twin gets up to 10 s (slow emulators).
	 */
	for (i = 0; i < (twin ? 2000 : 14); i++) {
		sk_test_sleep_ms(5);
		/* A migration that went on published the 16-bucket table. */
		early = LOAD(n.done) || LOAD(r.done) ||
			sk_rcu_dereference(ht->tbl)->size != 64;
		if (early)
			break;
	}
	fprintf(stderr, "  %s: while S held its bit: N %s, R %s\n",
		twin ? "twin" : "correct", LOAD(n.done) ? "done" : "waiting",
		sk_rcu_dereference(ht->tbl)->size != 64 ? "migrated"
							: "waiting");
	STORE(hold_state, HOLD_RELEASED);
	sk_test_thread_join(s.tid);
	sk_test_thread_join(r.tid);
	sk_test_thread_join(n.tid);
	sk__rhash_test_locked_hook = NULL;
	sk__rhash_test_broken = 0;
	if (!twin) {
		SK_CHECK_EQ(s.rc, 0);
		SK_CHECK_EQ(n.rc, 0);
		SK_CHECK_EQ(r.rc, 0);
		present[0] &= ~(1ULL << 5);
		present[1] &= ~(1ULL << (69 - 64));
		check_table(present, "lock array change");
	}
	sk_rhash_destroy(ht, NULL, NULL);
	q_release_all();
	return early;
}

static void lock_array_change_waits_for_old_bit_holders(void)
{
	sk_test_deadline("a lock-array change waiting for a held bit", 60);
	SK_CHECK_EQ(lock_array_change(0), 0);
	/* The twin that does not drain is caught. */
	SK_CHECK_EQ(lock_array_change(SK__RHASH_BROKEN_NO_DRAIN), 1);
	alarm(0);
}

/*
 * Table memory in private mappings; freed ones become PROT_NONE.  While
 * "armed", the current array is PROT_NONE too and the first thread to touch
 * it stops in the SIGSEGV handler until released.  A touch of a freed
 * mapping is a use after free: counted, then the mapping is made readable
 * again so that the thread goes on with the old contents (the handler:
 * map_segv_install(), tests/support/sk_test_maps.c).
 */
#include "sk_test_maps.h"

static int t0_map;
static __thread int i_am_victim;
static int arm_in_hook;

/* Checker hook: the victim's insert has published its node. */
static void arm_hook(int ev)
{
	if (ev != SK__RCU_CHECK_PUBLISH || !i_am_victim ||
	    !__atomic_load_n(&arm_in_hook, __ATOMIC_RELAXED))
		return;
	arm_in_hook = 0;
	map_arm(t0_map);
}

static struct obj victim_obj;

static void *victim_insert(void *arg)
{
	(void)arg;
	i_am_victim = 1;
	if (sk_rhash_insert(ht, &victim_obj.node))
		abort();
	__atomic_store_n(&map_victim_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * The insert that makes a grow due runs maybe_resize(), which once loaded
 * ht->tbl and read ->size outside any read section (it now only queues
 * the background grow and touches no array).  The victim stops at a touch;
 * outside a read section a resize then completes and frees the array, and
 * the victim reads it.  Inside a read section (a fixed library) the victim
 * is released first; one that never touches the array passes too.
 */
static void *resize_to_4(void *arg)
{
	(void)arg;
	if (sk_rhash_resize(ht, 4))
		abort();
	return NULL;
}

static void table_barrier(void)
{
	sk_rhash_barrier(ht);
}

/*
 * A table of one bucket on mapped arrays (map_alloc), automatic: 31
 * objects fit in the one bucket, so the 32nd insert is the first to make a
 * grow due, however often the library looks at the load factor.
 */
static void one_bucket_table_create(void)
{
	struct sk_rhash_params p = obj_table_params(1);

	p.automatic_resize = 1;
	p.grow_above_pct = 3100;
	p.alloc = map_alloc;
	p.free = map_free;
	table_create(&p, 0);
}

static void maybe_resize_never_reads_a_freed_bucket_array(void)
{
	struct sigaction old;
	pthread_t tv, tr;
	int i, stopped, in_section;

	if (sk_test_qemu_i386_tls_bug("maybe_resize"))
		return;
	map_segv_install(&old);
	one_bucket_table_create();
	for (i = 0; i < 31; i++) {
		struct obj *o;

		keyval[i] = (uint64_t)i;
		o = obj_new(i);
		SK_CHECK_EQ(sk_rhash_insert(ht, &o->node), 0);
	}
	SK_CHECK_EQ(sk_rhash_buckets(ht), 1);
	t0_map = map_of(ht->tbl);
	SK_CHECK(t0_map >= 0);
	memset(&victim_obj, 0, sizeof(victim_obj));
	victim_obj.key = 1000;
	arm_in_hook = 1;
	sk__rcu_checker_hook = arm_hook;
	/*
	 * Our read section holds back the background grow that the victim
	 * queues (a callback, after a grace period) until the array is
	 * disarmed: the callback worker blocks signals, and its touch of
	 * the armed array would kill the process.
	 */
	sk_rcu_read_lock();
	pthread_create(&tv, NULL, victim_insert, NULL);
	/* The victim is in maybe_resize(), holding a pointer to the array. */
	stopped = map_wait_victim(t0_map);
	sk_rcu_read_unlock();
	in_section = stopped &&
		     __atomic_load_n(&map_paused_in_section, __ATOMIC_RELAXED);
	pthread_create(&tr, NULL, resize_to_4, NULL);
	/* A background grow that ran first frees t0 by callback. */
	map_race_victim(tv, tr, t0_map, in_section, table_barrier);
	sk__rcu_checker_hook = NULL;
	sigaction(SIGSEGV, &old, NULL);
	map_victim_report("maybe_resize", stopped, in_section);
	SK_CHECK_EQ(map_uaf_faults, 0);
	SK_CHECK_EQ(sk_rhash_count(ht), 32);
	sk_rhash_destroy(ht, NULL, NULL);
	map_unmap_all();
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	sk_chk_init(&chk, &rh_ops, NULL);
	SK_RUN(resize_reports_its_grace_periods);
	SK_RUN(every_grow_and_shrink_between_1_and_64_buckets);
	SK_RUN(insert_remove_replace_at_every_position);
	SK_RUN(updates_in_the_middle_of_a_migration);
	sk_chk_print_stats(&chk, "rhash (correct table)");
	memset(&chk.st, 0, sizeof(chk.st));
	chk.violations = 0;
	SK_RUN(resize_without_grace_period_is_caught);
	SK_RUN(resize_cutting_before_linking_is_caught);
	SK_RUN(stale_insert_into_unmarked_bucket_is_caught);
	SK_RUN(inserts_racing_the_migrators_head_cas);
	SK_RUN(head_stores_without_cas_are_caught);
	sk_chk_print_stats(&chk, "rhash (broken twin)");
	SK_RUN(maybe_resize_never_reads_a_freed_bucket_array);
	SK_RUN(lock_array_change_waits_for_old_bit_holders);
	sk_chk_destroy(&chk);
	return sk_test_report();
}
