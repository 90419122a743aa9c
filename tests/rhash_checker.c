/* SPDX-License-Identifier: MIT */
/*
 * The hash table's model for the Triplett checker (tests/rhash_checker.h):
 * the reader model of sk_rhash_lookup() and sk_rhash_iter_next(), the
 * quarantining allocator, the objects and key sets, the table's set-up
 * and final checks.  Compiled into each checker program
 * (tests/testing.cmake), with the testing build's definitions.
 */
#define _GNU_SOURCE
#include "rhash_checker.h"

#include "sk_test_rhash.h" /* sk_test_rhash_params() */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sk_test.h"

/* r->aux of a reader about to load t->future (its chain or array done). */
#define AT_FUTURE (~0UL)

struct cobj objs[MAX_OBJS];
int nobjs;
uint64_t keyval[MAX_IDS]; /* key of each id */
struct sk_rhash *ht;
struct sk_chk chk;

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

int live_blocks(void)
{
	int i, n = 0;

	for (i = 0; i < nblocks; i++)
		n += !blocks[i].freed;
	return n;
}

/* Release the quarantine (every block must be freed by then). */
void q_release_all(void)
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

struct cobj *obj_new(int id)
{
	struct cobj *o = &objs[nobjs++];

	memset(o, 0, sizeof(*o));
	o->id = id;
	o->key = keyval[id];
	return o;
}

void obj_free(struct cobj *o)
{
	o->freed = 1;
	o->node.next = (struct sk_rhash_node *)((unsigned long)0xdead0000beefULL);
	o->node.hash = 0xdeadbeefUL;
}

static struct cobj *obj_of(const void *p)
{
	const char *b = (const char *)objs;
	size_t d;

	if ((const char *)p < b || (const char *)p >= b + sizeof(objs))
		return NULL;
	d = (size_t)((const char *)p - b);
	if (d % sizeof(struct cobj) != offsetof(struct cobj, node))
		return NULL;
	return &objs[d / sizeof(struct cobj)];
}

struct chk_tbl *cur_tbl(void)
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
	/*
	 * Lookups of the inline kind start where the inline walk does
	 * (lookup_tbl); the others, as iterations, in tbl.
	 */
	rh_enter_table(k->key == SK_CHK_ITER || ht->mode != RHASH_MODE_U64
			       ? cur_tbl()
			       : (struct chk_tbl *)sk_rcu_dereference(
					 ht->lookup_tbl),
		       k, r);
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
	/* (A migrated old bucket's head points into the future array.) */
	if (n) {
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
	struct cobj *o = obj_of(node);
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
	struct cobj *o;
	const struct blk *b;

	(void)arg;
	if ((const char *)addr >= (const char *)objs &&
	    (const char *)addr < (const char *)objs + sizeof(objs)) {
		o = &objs[((const char *)addr - (const char *)objs) /
			  sizeof(struct cobj)];
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
	/* The heads, then one lock bit and one migrated bit per bucket, in
	 * whole words each. */
	payload = b->size - offsetof(struct chk_tbl, buckets);
	for (n = 1; n <= payload / sizeof(void *); n <<= 1)
		if (n * sizeof(void *) + 2 * sk__rhash_lock_words(n) *
						 sizeof(unsigned long) ==
		    payload)
			return n;
	return 0;
}

static void rh_describe(void *arg, const struct sk_chk_reader *r, char *buf,
			size_t len)
{
	const struct blk *b = block_of(r->slot);
	struct cobj *o = obj_of((const char *)r->slot -
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

const struct sk_chk_ops rh_ops = {
	.start = rh_start,
	.load = rh_load,
	.enter = rh_enter,
	.freed = rh_freed,
	.describe = rh_describe,
	.root_name = rh_root_name,
};

/* ---- table set-up and final checks ------------------------------------ */

/* Parameters of a table of struct cobj (8-byte keys) from buckets up. */
struct sk_rhash_params obj_table_params(unsigned long buckets)
{
	return sk_test_rhash_params(offsetof(struct cobj, node),
				    offsetof(struct cobj, key), buckets);
}

/* Create ht from p, no objects yet; identity: identity_hash is in use. */
void table_create(const struct sk_rhash_params *p, int identity)
{
	identity_hash_on = identity;
	nobjs = 0;
	SK_CHECK((ht = sk_rhash_create(p)) != NULL);
}

void table_init(unsigned long buckets, int identity)
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

void table_destroy(void)
{
	sk_rhash_destroy(ht, NULL, NULL);
	SK_CHECK_EQ(live_blocks(), 0);
	q_release_all();
}

/*
 * After a completed operation: every chain holds only its bucket's nodes,
 * each id of present[] is found once by lookup and iteration, count right.
 */
void check_table(const uint64_t *present, const char *label)
{
	struct chk_tbl *t = cur_tbl();
	int seen[MAX_IDS] = { 0 }, id, n = 0, bad = 0;
	unsigned long b;
	struct sk_rhash_iter it;
	struct cobj *o;

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
	while ((o = (struct cobj *)sk_rhash_iter_next(&it)) != NULL) {
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
			o = (struct cobj *)sk_rhash_lookup(ht, &keyval[id]);
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
void add_readers(int nids, const uint64_t *stable)
{
	int id;

	sk_chk_clear_kinds(&chk);
	for (id = 0; id < nids; id++)
		sk_chk_add_lookup(&chk, ht, id, sk_chk_bit(stable, id));
	sk_chk_add_iter(&chk, ht, stable, 0);
}

/* ---- key sets ------------------------------------------------------------ */

const char *const ks_names[] = { "alternating", "identity-shuffled",
					"random" };

/*
 * Fill keyval[0..n) and the insertion order.  KS_ALTERNATE: key i hashes
 * to i and keys are inserted in descending order, so every chain lists its
 * keys ascending: consecutive nodes differ in the lowest bit not yet used,
 * at every table size.
 */
void make_keys(int kind, int n, uint64_t *rng, int *order)
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

void fill(int n, const int *order, uint64_t *present)
{
	int i;

	for (i = 0; i < n; i++) {
		struct cobj *o = obj_new(order[i]);

		SK_CHECK_EQ(sk_rhash_insert(ht, &o->node), 0);
		sk_chk_bit_set(present, order[i]);
	}
}


/* ---- updates --------------------------------------------------------------- */

/* The updater's own grace period before it frees what it removed. */
void gp_then_free_later(void)
{
	sk_synchronize_rcu();
	sk__rcu_checker_hook(SK__RCU_CHECK_GP);
}

const char *const u_names[] = { "insert",       "remove",
				       "replace",      "stale insert",
				       "insert racing RH-M2" };

int rhash_checker_main(int argc, char **argv, void (*correct)(void),
		       void (*twins)(void), void (*others)(void))
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	sk_chk_init(&chk, &rh_ops, NULL);
	correct();
	sk_chk_print_stats(&chk, "rhash (correct table)");
	memset(&chk.st, 0, sizeof(chk.st));
	chk.violations = 0;
	twins();
	sk_chk_print_stats(&chk, "rhash (broken twin)");
	if (others)
		others();
	sk_chk_destroy(&chk);
	return sk_test_report();
}
