/* SPDX-License-Identifier: MIT */
/*
 * Scenarios "hash-lookup", "hash-resize" and "hash-update": scalekit's
 * resizable hash table (sk_rhash) against liburcu's lock-free hash table
 * (cds_lfht), and against itself while it resizes.
 *
 * Both tables hold the same objects: one 64-byte, cache-line-aligned
 * object per key, with the key, an sk_rhash_node and a cds_lfht_node in
 * the same line, so both tables touch the same memory per object.  Keys
 * are 8 bytes, key i is (i + 1) * 0x9e3779b97f4a7c15 (distinct, not
 * small integers), and both tables hash them with the same function:
 * sk_rhash_hash() with seed 0, which sk_rhash calls itself and which
 * cds_lfht users compute and pass in; here an inline copy, checked against
 * sk_rhash_hash() at setup, so that the peer pays no call for it either.
 * cds_lfht runs with the urcu-memb flavor, CDS_LFHT_AUTO_RESIZE and
 * CDS_LFHT_ACCOUNTING (counted grow and shrink, as sk_rhash's automatic
 * resizing), its flat mmap bucket layout (max_nr_buckets <= 2^32), and
 * starts at the size sk_rhash starts with (one bucket per key).
 *
 *  hash-lookup   T threads (pinned) each look up random present keys, one
 *                read section per lookup (lock, lookup, read the object,
 *                unlock), through the harness's reader threads:
 *                read_section(n) of these adapters is n lookups.  Tables
 *                of 2^16 and 2^20 keys; every lookup must find its key.
 *  hash-resize   the same lookups on sk_rhash (2^16 keys, 1 thread) while
 *                another thread (pinned beside the readers) resizes the
 *                table continuously between 2^16 and 2^17 buckets, against
 *                the same run without the resizer: "rhash-resizing" and
 *                "rhash" are the same lookups, the ratio is
 *                resizing / steady.
 *  hash-update   T threads insert and remove objects of their own in a
 *                table of 2^16 keys: a thread owns 2 x 2048 objects; one
 *                round inserts the 2048 that are out and removes the 2048
 *                that are in (interleaved), then waits for a grace period
 *                before the removed ones may be inserted again.  Figures
 *                count inserts and removes alike; the grace period (one
 *                per 4096 updates) is included.  sk_rhash updates run
 *                outside read sections, as its API asks; cds_lfht's inside
 *                one each, as its API asks.
 *
 * The adapters live here rather than in peer_*.c: they are hash-table
 * adapters (struct sk_bench_rcu_ops whose read_section is a lookup loop),
 * used only by these scenarios.  The urcu-memb flavor header maps
 * unprefixed names; nothing else in this file uses those names.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "scalekit/rcu.h"
#include "scalekit/rhash.h"

/*
 * Not under ThreadSanitizer: liburcu-cds is not instrumented, so TSan
 * reports its internal hand-offs (resize worker, destroy) as races.
 */
#if defined(SK_HAVE_LIBURCU_CDS) && defined(SK_HAVE_LIBURCU_MEMB) && \
	!defined(SK_TSAN)
#define HASH_HAVE_LFHT 1
#define _LGPL_SOURCE
#include <urcu/urcu-memb.h>
#include <urcu/rculfhash.h>
#endif

#define MAX_COUNTS 16

/* hash-update: objects per half of a thread's pool (one round). */
#define UPD_HALF (SK_BENCH_CHUNK / 2)

/* cds_lfht's bucket array limit: <= 2^32 selects its flat mmap layout. */
#define LFHT_MAX_BUCKETS (1UL << 24)

/* ---- objects and keys -------------------------------------------------------- */

struct hobj {
	uint64_t key;
	struct sk_rhash_node sk; /* sk_rhash's link */
#ifdef HASH_HAVE_LFHT
	struct cds_lfht_node lf; /* cds_lfht's link */
#else
	char lf_space[16]; /* same layout without liburcu */
#endif
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct hobj) == 64, "one cache line per object");

static inline uint64_t key_of(uint64_t i)
{
	return (i + 1) * 0x9e3779b97f4a7c15ULL;
}

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* sk_rhash_hash(&key, 8, 0), inline (checked in set_build()). */
static inline unsigned long bench_hash(uint64_t key)
{
	uint64_t h = 8 * 0x9e3779b97f4a7c15ULL;

	h = mix64(h ^ key) + 0x9e3779b97f4a7c15ULL;
	return (unsigned long)mix64(h);
}

/* xorshift64*: the index of the next key to look up. */
static inline uint64_t next_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return (x * 0x2545f4914f6cdd1dULL) >> 16;
}

static void die(const char *what)
{
	fprintf(stderr, "scalekit bench: hash: %s\n", what);
	abort();
}

/* ---- the tables ------------------------------------------------------------ */

/*
 * The key set and the tables every adapter works on.  Written by the main
 * thread between runs (thread creation orders it before the adapters'
 * loops), read-only during a run except for the tables themselves.
 */
static struct {
	long nkeys; /* a power of two */
	struct hobj *objs;
	struct sk_rhash *sk;
	int have_sk;
#ifdef HASH_HAVE_LFHT
	struct cds_lfht *lf;
#endif
} W;

/* Lookup threads take seeds 1, 2, ... in each run: every run, same keys. */
static int seq;
static __thread uint64_t rng;

static void seed_thread(void)
{
	uint64_t id = (uint64_t)__atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);

	rng = mix64(id * 0x9e3779b97f4a7c15ULL) | 1;
}

#ifdef HASH_HAVE_LFHT
static int lf_match(struct cds_lfht_node *node, const void *key)
{
	return caa_container_of(node, struct hobj, lf)->key ==
	       *(const uint64_t *)key;
}
#endif

/* Build both tables over nkeys objects.  Returns 0 or -1 after a message. */
static int set_build(long nkeys)
{
	struct sk_rhash_params p = SK_RHASH_PARAMS_DEFAULT;
	long i;

	memset(&W, 0, sizeof(W));
	W.nkeys = nkeys;
	W.objs = aligned_alloc(64, sizeof(*W.objs) * (size_t)nkeys);
	if (!W.objs)
		goto nomem;
	memset(W.objs, 0, sizeof(*W.objs) * (size_t)nkeys);
	for (i = 0; i < nkeys; i++)
		W.objs[i].key = key_of((uint64_t)i);
	for (i = 0; i < 64; i++) {
		uint64_t k = key_of((uint64_t)i * 7919);

		if (bench_hash(k) != sk_rhash_hash(&k, sizeof(k), 0))
			die("the inline hash differs from sk_rhash_hash()");
	}

	p.head_offset = offsetof(struct hobj, sk);
	p.key_offset = offsetof(struct hobj, key);
	p.key_len = sizeof(uint64_t);
	p.initial_buckets = (unsigned long)nkeys;
	if (!(W.sk = sk_rhash_create(&p)))
		goto nomem;
	W.have_sk = 1;
	for (i = 0; i < nkeys; i++)
		if (sk_rhash_insert(W.sk, &W.objs[i].sk))
			die("sk_rhash_insert failed");

#ifdef HASH_HAVE_LFHT
	W.lf = cds_lfht_new_flavor((unsigned long)nkeys, 1, LFHT_MAX_BUCKETS,
				   CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING,
				   &urcu_memb_flavor, NULL);
	if (!W.lf)
		goto nomem;
	urcu_memb_register_thread();
	for (i = 0; i < nkeys; i++) {
		cds_lfht_node_init(&W.objs[i].lf);
		urcu_memb_read_lock();
		cds_lfht_add(W.lf, bench_hash(W.objs[i].key), &W.objs[i].lf);
		urcu_memb_read_unlock();
	}
	urcu_memb_unregister_thread();
#endif
	return 0;

nomem:
	fprintf(stderr, "scalekit bench: hash: out of memory for %ld keys\n",
		nkeys);
	return -1;
}

static void set_free(void)
{
#ifdef HASH_HAVE_LFHT
	if (W.lf) {
		struct cds_lfht_iter it;
		struct cds_lfht_node *n;

		/* cds_lfht_destroy() wants an empty table. */
		urcu_memb_register_thread();
		urcu_memb_read_lock();
		cds_lfht_for_each(W.lf, &it, n)
			cds_lfht_del(W.lf, n);
		urcu_memb_read_unlock();
		urcu_memb_synchronize_rcu();
		if (cds_lfht_destroy(W.lf, NULL))
			die("cds_lfht_destroy failed");
		urcu_memb_unregister_thread();
	}
#endif
	if (W.have_sk)
		sk_rhash_destroy(W.sk, NULL, NULL);
	free(W.objs);
	memset(&W, 0, sizeof(W));
}

/* ---- adapters: lookups ------------------------------------------------------- */

static void lookup_missed(void)
{
	die("a lookup did not find a key that is in the table");
}

static void rhash_thread_init(void)
{
	if (sk_rcu_register_thread())
		die("sk_rcu_register_thread failed");
	seed_thread();
}

static void rhash_thread_exit(void)
{
	sk_rcu_unregister_thread();
}

static void rhash_lookups(long n)
{
	struct sk_rhash *ht = W.sk;
	uint64_t mask = (uint64_t)W.nkeys - 1, s = rng;
	long i;

	for (i = 0; i < n; i++) {
		uint64_t key = key_of(next_rand(&s) & mask);
		struct hobj *o;

		sk_rcu_read_lock();
		o = sk_rhash_lookup(ht, &key);
		if (SK_UNLIKELY(!o))
			lookup_missed();
		SK_BENCH_USE(o->key);
		sk_rcu_read_unlock();
	}
	rng = s;
}

const struct sk_bench_rcu_ops sk_bench_rhash_ops = {
	.name = "rhash",
	.desc = "scalekit sk_rhash: sk_rcu_read_lock + sk_rhash_lookup "
		"(hash-* scenarios)",
	.thread_init = rhash_thread_init,
	.thread_exit = rhash_thread_exit,
	.read_section = rhash_lookups,
};

/* The same lookups; hash-resize runs a resizer beside them. */
const struct sk_bench_rcu_ops sk_bench_rhash_resizing_ops = {
	.name = "rhash-resizing",
	.desc = "rhash lookups while another thread resizes the table "
		"(hash-resize)",
	.thread_init = rhash_thread_init,
	.thread_exit = rhash_thread_exit,
	.read_section = rhash_lookups,
};

#ifdef HASH_HAVE_LFHT
static void lfht_thread_init(void)
{
	urcu_memb_register_thread();
	seed_thread();
}

static void lfht_thread_exit(void)
{
	urcu_memb_unregister_thread();
}

static void lfht_lookups(long n)
{
	struct cds_lfht *ht = W.lf;
	uint64_t mask = (uint64_t)W.nkeys - 1, s = rng;
	long i;

	for (i = 0; i < n; i++) {
		uint64_t key = key_of(next_rand(&s) & mask);
		struct cds_lfht_iter it;
		struct cds_lfht_node *node;
		struct hobj *o;

		urcu_memb_read_lock();
		cds_lfht_lookup(ht, bench_hash(key), lf_match, &key, &it);
		node = cds_lfht_iter_get_node(&it);
		if (SK_UNLIKELY(!node))
			lookup_missed();
		o = caa_container_of(node, struct hobj, lf);
		SK_BENCH_USE(o->key);
		urcu_memb_read_unlock();
	}
	rng = s;
}

const struct sk_bench_rcu_ops sk_bench_urcu_lfht_ops = {
	.name = "urcu-lfht",
	.desc = "liburcu cds_lfht (urcu-memb flavor, auto-resize): "
		"read_lock + cds_lfht_lookup (hash-* scenarios)",
	.thread_init = lfht_thread_init,
	.thread_exit = lfht_thread_exit,
	.read_section = lfht_lookups,
};
#else
const struct sk_bench_rcu_ops sk_bench_urcu_lfht_ops = {
	.name = "urcu-lfht",
	.desc = "liburcu cds_lfht (hash-* scenarios)",
#ifdef SK_TSAN
	.unavailable = "not built under ThreadSanitizer (liburcu-cds is not "
		       "instrumented)",
#else
	.unavailable = "liburcu-cds or liburcu-memb was not found by "
		       "pkg-config at build time",
#endif
};
#endif

/* ---- adapters: updates ----------------------------------------------------------- */

/*
 * A thread's pool: pool[0..UPD_HALF) and pool[UPD_HALF..2 UPD_HALF); the
 * half "in" is in the table, the other half may be inserted (a grace
 * period has passed since its removal).
 */
static int upd_seq;
static __thread struct hobj *pool;
static __thread int in_half;

static void pool_alloc(void)
{
	uint64_t id = (uint64_t)__atomic_add_fetch(&upd_seq, 1,
						   __ATOMIC_RELAXED);
	int i;

	pool = aligned_alloc(64, sizeof(*pool) * 2 * UPD_HALF);
	if (!pool)
		die("out of memory for an updater's objects");
	memset(pool, 0, sizeof(*pool) * 2 * UPD_HALF);
	/* Keys beyond every key set: index 2^40 + id * 2^20 + i. */
	for (i = 0; i < 2 * UPD_HALF; i++)
		pool[i].key = key_of((1ULL << 40) + (id << 20) + (uint64_t)i);
	in_half = 0;
}

static void rhash_upd_init(void)
{
	int i;

	pool_alloc();
	for (i = 0; i < UPD_HALF; i++)
		if (sk_rhash_insert(W.sk, &pool[i].sk))
			die("sk_rhash_insert failed");
}

/* One round per UPD_HALF pairs: n is a multiple of 2 * UPD_HALF. */
static void rhash_updates(long n)
{
	long r;
	int i;

	for (r = 0; r < n; r += 2 * UPD_HALF) {
		struct hobj *in = pool + in_half * UPD_HALF;
		struct hobj *out = pool + (1 - in_half) * UPD_HALF;

		for (i = 0; i < UPD_HALF; i++) {
			if (SK_UNLIKELY(sk_rhash_insert(W.sk, &out[i].sk)))
				die("sk_rhash_insert failed");
			if (SK_UNLIKELY(sk_rhash_remove(W.sk, &in[i].sk)))
				die("sk_rhash_remove failed");
		}
		/* Removed objects are reinserted after a grace period only. */
		sk_synchronize_rcu();
		in_half = 1 - in_half;
	}
}

static void rhash_upd_exit(void)
{
	struct hobj *in = pool + in_half * UPD_HALF;
	int i;

	for (i = 0; i < UPD_HALF; i++)
		if (sk_rhash_remove(W.sk, &in[i].sk))
			die("sk_rhash_remove failed");
	sk_synchronize_rcu();
	free(pool);
	pool = NULL;
}

#ifdef HASH_HAVE_LFHT
static void lfht_add(struct hobj *o)
{
	cds_lfht_node_init(&o->lf);
	urcu_memb_read_lock();
	cds_lfht_add(W.lf, bench_hash(o->key), &o->lf);
	urcu_memb_read_unlock();
}

static void lfht_del(struct hobj *o)
{
	int err;

	urcu_memb_read_lock();
	err = cds_lfht_del(W.lf, &o->lf);
	urcu_memb_read_unlock();
	if (SK_UNLIKELY(err))
		die("cds_lfht_del failed");
}

static void lfht_upd_init(void)
{
	int i;

	urcu_memb_register_thread();
	pool_alloc();
	for (i = 0; i < UPD_HALF; i++)
		lfht_add(&pool[i]);
}

static void lfht_updates(long n)
{
	long r;
	int i;

	for (r = 0; r < n; r += 2 * UPD_HALF) {
		struct hobj *in = pool + in_half * UPD_HALF;
		struct hobj *out = pool + (1 - in_half) * UPD_HALF;

		for (i = 0; i < UPD_HALF; i++) {
			lfht_add(&out[i]);
			lfht_del(&in[i]);
		}
		urcu_memb_synchronize_rcu();
		in_half = 1 - in_half;
	}
}

static void lfht_upd_exit(void)
{
	struct hobj *in = pool + in_half * UPD_HALF;
	int i;

	for (i = 0; i < UPD_HALF; i++)
		lfht_del(&in[i]);
	urcu_memb_synchronize_rcu();
	free(pool);
	pool = NULL;
	urcu_memb_unregister_thread();
}
#endif

/*
 * The update adapter of a lookup adapter: the same identity, with
 * thread_init/read_section/thread_exit running the update rounds.
 */
static int update_ops(const struct sk_bench_rcu_ops *ops,
		      struct sk_bench_rcu_ops *out)
{
	*out = *ops;
	if (ops == &sk_bench_rhash_ops) {
		out->thread_init = rhash_upd_init;
		out->read_section = rhash_updates;
		out->thread_exit = rhash_upd_exit;
		return 0;
	}
#ifdef HASH_HAVE_LFHT
	if (ops == &sk_bench_urcu_lfht_ops) {
		out->thread_init = lfht_upd_init;
		out->read_section = lfht_updates;
		out->thread_exit = lfht_upd_exit;
		return 0;
	}
#endif
	return -1;
}

/* ---- measuring --------------------------------------------------------------- */

/* The resizer of hash-resize: grow and shrink until stopped. */
struct resizer {
	pthread_t tid;
	unsigned long base; /* the table's usual bucket count */
	int stop;
	unsigned long cycles; /* grow + shrink pairs done */
};

static void *resizer_main(void *arg)
{
	struct resizer *rz = arg;

	while (!__atomic_load_n(&rz->stop, __ATOMIC_RELAXED)) {
		if (sk_rhash_resize(W.sk, 2 * rz->base) ||
		    sk_rhash_resize(W.sk, rz->base))
			die("sk_rhash_resize failed");
		rz->cycles++;
	}
	return NULL;
}

/*
 * Run ops on n threads for run_ns (with a resizer when resize is set) and
 * return the total rate in millions per second (sum of each thread's
 * sections / its own time); *rps gets resize cycles per second.
 * Returns 0 or -errno.
 */
static int measure(const struct sk_bench_rcu_ops *ops, int n, int resize,
		   uint64_t run_ns, double *mops, double *rps)
{
	struct sk_bench_reader_stat *st = calloc((size_t)n, sizeof(*st));
	struct sk_bench_readers *g;
	struct resizer rz = { .base = (unsigned long)W.nkeys };
	uint64_t t0 = 0;
	double sum = 0;
	int i, err;

	if (!st)
		return -ENOMEM;
	__atomic_store_n(&seq, 0, __ATOMIC_RELAXED);
	if (resize) {
		pthread_attr_t attr;

		pthread_attr_init(&attr);
		sk_bench_attr_pin(&attr, n); /* beside the readers */
		err = pthread_create(&rz.tid, &attr, resizer_main, &rz);
		pthread_attr_destroy(&attr);
		if (err) {
			free(st);
			return -err;
		}
		t0 = sk_bench_now_ns();
	}
	err = sk_bench_readers_start(&g, ops, n);
	if (!err) {
		sk_bench_sleep_ns(run_ns);
		sk_bench_readers_stop(g, st);
	}
	if (resize) {
		__atomic_store_n(&rz.stop, 1, __ATOMIC_RELAXED);
		pthread_join(rz.tid, NULL);
		*rps = (double)rz.cycles / ((double)(sk_bench_now_ns() - t0) /
					    1e9);
	}
	if (err) {
		free(st);
		return err;
	}
	for (i = 0; i < n; i++)
		sum += (double)st[i].sections / ((double)st[i].ns / 1e3);
	free(st);
	*mops = sum;
	return 0;
}

/* One implementation at one thread count: its row and column. */
struct hash_job {
	const struct sk_bench_rcu_ops *ops; /* as measured */
	const char *name;		    /* for progress lines */
	int threads;
	int resize;
	struct sk_bench_row *row;
	int col;
};

/*
 * Warm up every job once, then run cfg->reps rounds of all jobs, storing
 * Mops/s.  Returns 0, or -1 after a message.
 */
static int run_jobs(const struct sk_bench_config *cfg, const char *scenario,
		    const char *what, struct hash_job *jobs, int njobs,
		    double *rps_median)
{
	double mops, rps = NAN, *rv;
	int i, rep, err, nrv = 0;
	struct hash_job *jb = NULL;

	rv = calloc((size_t)cfg->reps + 1, sizeof(*rv));
	if (!rv)
		return -1;
	for (i = 0; i < njobs; i++) {
		jb = &jobs[i];
		err = measure(jb->ops, jb->threads, jb->resize, cfg->warmup_ns,
			      &mops, &rps);
		if (err)
			goto fail;
	}
	for (rep = 0; rep < cfg->reps; rep++) {
		for (i = 0; i < njobs; i++) {
			/* Rotate the start so no job always runs first. */
			jb = &jobs[(i + rep) % njobs];
			err = measure(jb->ops, jb->threads, jb->resize,
				      cfg->run_ns, &mops, &rps);
			if (err)
				goto fail;
			jb->row->rep[jb->col][rep] = mops;
			if (jb->resize)
				rv[nrv++] = rps;
			sk_bench_progress("%s: rep %d/%d, %s, %d thread%s, "
					  "%-14s %8.2f M%s/s%s",
					  scenario, rep + 1, cfg->reps,
					  jb->row->variant, jb->threads,
					  jb->threads == 1 ? " " : "s",
					  jb->name, mops, what,
					  jb->resize ? " (resizing)" : "");
		}
	}
	if (rps_median && nrv) {
		/* Few values: a simple sort. */
		for (i = 1; i < nrv; i++)
			for (rep = i; rep > 0 && rv[rep - 1] > rv[rep]; rep--) {
				double x = rv[rep];

				rv[rep] = rv[rep - 1];
				rv[rep - 1] = x;
			}
		*rps_median = nrv % 2 ? rv[nrv / 2]
				      : (rv[nrv / 2 - 1] + rv[nrv / 2]) / 2;
	}
	free(rv);
	return 0;

fail:
	fprintf(stderr, "scalekit bench: %s: cannot run %s on %d threads: %s\n",
		scenario, jb->name, jb->threads, strerror(-err));
	free(rv);
	return -1;
}

static void ratio_target(struct sk_bench_results *res,
			 const struct sk_bench_row *row, const char *a,
			 const char *b, double limit, const char *id)
{
	char what[96];

	snprintf(what, sizeof(what), "%s %s, %d thread%s: Mops/s %s / %s",
		 row->scenario, row->variant, row->threads,
		 row->threads == 1 ? "" : "s", a, b);
	sk_bench_ratio_target(res, row, a, b, limit, 0, what, id);
}

/* ---- the scenarios ------------------------------------------------------------ */

static const char *const lookup_impls[] = { "rhash", "urcu-lfht", NULL };
static const char *const resize_impls[] = { "rhash-resizing", "rhash", NULL };

static const struct {
	long nkeys;
	const char *variant, *id;
} lookup_sets[] = {
	{ 1L << 16, "2^16 keys", "hash-lookup-2^16" },
	{ 1L << 20, "2^20 keys", "hash-lookup-2^20" },
};

int sk_bench_hash_lookup_run(const struct sk_bench_config *cfg,
			     struct sk_bench_results *res)
{
	static const char *const title =
		"hash-lookup: millions of lookups per second, all threads, "
		"random present keys, one read section each (higher is "
		"better)";
	struct hash_job jobs[MAX_COUNTS * SK_BENCH_MAX_IMPL];
	struct sk_bench_row *rows[2][MAX_COUNTS];
	int counts[MAX_COUNTS], ncounts, c, i, k, njobs;

	ncounts =
		sk_bench_thread_counts(cfg->max_threads, 0, counts, MAX_COUNTS);
	for (k = 0; k < 2; k++)
		for (c = 0; c < ncounts; c++)
			rows[k][c] = sk_bench_row_add(
				res, "hash-lookup", lookup_sets[k].variant,
				"Mops/s", title, counts[c], 1, lookup_impls,
				cfg->reps);
	for (k = 0; k < 2; k++) {
		uint64_t t0 = sk_bench_now_ns();

		njobs = 0;
		for (i = 0; i < rows[k][0]->nimpl; i++)
			for (c = 0; c < ncounts; c++)
				if (!rows[k][c]->na[i])
					jobs[njobs++] = (struct hash_job){
						rows[k][c]->impl[i],
						rows[k][c]->impl[i]->name,
						counts[c], 0, rows[k][c], i
					};
		if (set_build(lookup_sets[k].nkeys))
			return -1;
		sk_bench_progress("hash-lookup: %s built in %.0f ms; %d runs x "
				  "%d reps, %.0f ms each (warm-up %.0f ms)",
				  lookup_sets[k].variant,
				  (sk_bench_now_ns() - t0) / 1e6, njobs,
				  cfg->reps, cfg->run_ns / 1e6,
				  cfg->warmup_ns / 1e6);
		if (run_jobs(cfg, "hash-lookup", "lookups", jobs, njobs,
			     NULL)) {
			set_free();
			return -1;
		}
		set_free();
		for (c = 0; c < ncounts; c++)
			ratio_target(res, rows[k][c], "rhash", "urcu-lfht", 1.5,
				     lookup_sets[k].id);
	}
	return 0;
}

int sk_bench_hash_resize_run(const struct sk_bench_config *cfg,
			     struct sk_bench_results *res)
{
	static const char *const title =
		"hash-resize: millions of sk_rhash lookups per second while "
		"another thread resizes the table 2^16 <-> 2^17 buckets, vs "
		"no resizer (higher is better)";
	struct hash_job jobs[2];
	struct sk_bench_row *row;
	double rps = NAN;
	int i;

	row = sk_bench_row_add(res, "hash-resize", "2^16 keys", "Mops/s", title,
			       1, 1, resize_impls, cfg->reps);
	row->ratio_prefix = "resizing";
	for (i = 0; i < 2; i++)
		jobs[i] = (struct hash_job){ row->impl[i], row->impl[i]->name,
					     1, i == 0, row, i };
	if (set_build(1L << 16))
		return -1;
	sk_bench_progress("hash-resize: 2 runs x %d reps, %.0f ms each "
			  "(warm-up %.0f ms)",
			  cfg->reps, cfg->run_ns / 1e6, cfg->warmup_ns / 1e6);
	if (run_jobs(cfg, "hash-resize", "lookups", jobs, 2, &rps)) {
		set_free();
		return -1;
	}
	sk_bench_note_add(res,
			  "hash-resize: the resizer completed %.0f grow+shrink "
			  "cycles (2^16 -> 2^17 -> 2^16 buckets) per second, "
			  "median over repetitions",
			  rps);
	set_free();
	ratio_target(res, row, "rhash-resizing", "rhash", 0.9, "hash-resize");
	return 0;
}

int sk_bench_hash_update_run(const struct sk_bench_config *cfg,
			     struct sk_bench_results *res)
{
	static const char *const title =
		"hash-update: millions of updates (inserts + removes) per "
		"second, all threads, 2^16 keys, a grace period per 4096 "
		"updates (higher is better)";
	struct sk_bench_rcu_ops uops[SK_BENCH_MAX_IMPL];
	struct hash_job jobs[MAX_COUNTS * SK_BENCH_MAX_IMPL];
	struct sk_bench_row *rows[MAX_COUNTS];
	int counts[MAX_COUNTS], ncounts, c, i, njobs = 0, err;

	ncounts =
		sk_bench_thread_counts(cfg->max_threads, 0, counts, MAX_COUNTS);
	for (c = 0; c < ncounts; c++)
		rows[c] = sk_bench_row_add(res, "hash-update", "2^16 keys",
					   "Mops/s", title, counts[c], 1,
					   lookup_impls, cfg->reps);
	for (i = 0; i < rows[0]->nimpl; i++)
		if (!rows[0]->na[i] && update_ops(rows[0]->impl[i], &uops[i]))
			die("no update adapter");
	for (i = 0; i < rows[0]->nimpl; i++)
		for (c = 0; c < ncounts; c++)
			if (!rows[c]->na[i])
				jobs[njobs++] = (struct hash_job){
					&uops[i], rows[c]->impl[i]->name,
					counts[c], 0, rows[c], i
				};
	if (set_build(1L << 16))
		return -1;
	sk_bench_progress("hash-update: %d runs x %d reps, %.0f ms each "
			  "(warm-up %.0f ms)",
			  njobs, cfg->reps, cfg->run_ns / 1e6,
			  cfg->warmup_ns / 1e6);
	err = run_jobs(cfg, "hash-update", "updates", jobs, njobs, NULL);
	if (!err && sk_rhash_count(W.sk) != (unsigned long)W.nkeys)
		die("sk_rhash_count differs from the key count after the "
		    "updates");
	set_free();
	if (err)
		return -1;
	for (c = 0; c < ncounts; c++)
		ratio_target(res, rows[c], "rhash", "urcu-lfht", 1.0,
			     "hash-update");
	return 0;
}

/* ---- latency scenarios: hash-update-resize, hash-grow --------------------- */

/*
 * Each repetition also runs a baseline (LAT_EMPTY): the same threads
 * timing empty sections instead of the table's updates (hash-update-resize
 * while sk_rhash resizes; hash-grow for as long as sk_rhash took).  Its
 * worst case is what the clock and the scheduler cost alone on this
 * machine (a 4 ms tick at CONFIG_HZ=250); the notes print it, so that the
 * worst-case targets can be read against it.
 */

static const char *const lat_impls[] = { "rhash", "urcu-lfht", NULL };

/* Latency samples (ns) of one run, and their worst and p99.9. */
struct lat {
	uint64_t *ns;
	size_t n, cap;
};

static void lat_add(struct lat *l, uint64_t ns)
{
	if (l->n < l->cap)
		l->ns[l->n++] = ns;
	else if (ns > l->ns[l->n - 1]) /* full: keep the worst at the end */
		l->ns[l->n - 1] = ns;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Worst and p99.9 in microseconds (sorts the samples). */
static void lat_stats(struct lat *l, double *worst_us, double *p999_us)
{
	if (!l->n) {
		*worst_us = *p999_us = NAN;
		return;
	}
	qsort(l->ns, l->n, sizeof(*l->ns), u64_cmp);
	*worst_us = (double)l->ns[l->n - 1] / 1e3;
	*p999_us = (double)l->ns[(size_t)((double)(l->n - 1) * 0.999)] / 1e3;
}

/* Median of n values (sorts them). */
static double median_of(double *v, int n)
{
	int i, j;

	for (i = 1; i < n; i++)
		for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double x = v[j];

			v[j] = v[j - 1];
			v[j - 1] = x;
		}
	return n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : NAN;
}

/* Record "worst of impl in row <= limit_us" as a target (at most). */
static void worst_target(struct sk_bench_results *res,
			 const struct sk_bench_row *row, double limit_us,
			 const char *id)
{
	struct sk_bench_target t;

	memset(&t, 0, sizeof(t));
	snprintf(t.what, sizeof(t.what), "%s %s: rhash worst (us) <= %.0f",
		 row->scenario, row->variant, limit_us);
	snprintf(t.id, sizeof(t.id), "%s", id);
	snprintf(t.ratio_name, sizeof(t.ratio_name), "rhash worst / %.0f us",
		 limit_us);
	t.threads = row->threads;
	t.limit = 1.0;
	t.at_most = 1;
	t.ratio = sk_bench_row_stat(row, 0);
	t.ratio.median /= limit_us;
	t.ratio.min /= limit_us;
	t.ratio.max /= limit_us;
	if (!t.ratio.n)
		t.na = "not measured";
	sk_bench_target_add(res, &t);
}

/* The resizer of hash-update-resize: base <-> 2 * base until stopped. */
static void *lat_resizer_main(void *arg)
{
	struct resizer *rz = arg;
	int lf = rz->cycles != 0; /* set by the caller: resize cds_lfht */

	rz->cycles = 0;
#ifdef HASH_HAVE_LFHT
	if (lf)
		urcu_memb_register_thread();
#endif
	while (!__atomic_load_n(&rz->stop, __ATOMIC_RELAXED)) {
		if (!lf) {
			if (sk_rhash_resize(W.sk, 2 * rz->base) ||
			    sk_rhash_resize(W.sk, rz->base))
				die("sk_rhash_resize failed");
		}
#ifdef HASH_HAVE_LFHT
		else {
			cds_lfht_resize(W.lf, 2 * rz->base);
			cds_lfht_resize(W.lf, rz->base);
		}
#endif
		rz->cycles++;
	}
#ifdef HASH_HAVE_LFHT
	if (lf)
		urcu_memb_unregister_thread();
#endif
	return NULL;
}

#define LAT_POOL 4096 /* objects an updater cycles through */

/* What a latency run times: a table's update, or nothing (the baseline). */
enum { LAT_RHASH, LAT_LFHT, LAT_EMPTY };

/*
 * One insert+remove pair of o, timed (lf: LAT_*).  LAT_EMPTY times an
 * empty section: what the clock and the scheduler alone cost.
 */
static uint64_t timed_pair(struct hobj *o, int lf)
{
	uint64_t t0 = sk_bench_now_ns();

	if (lf == LAT_EMPTY) {
		sk_barrier(); /* nothing to time */
	} else if (lf == LAT_RHASH) {
		if (sk_rhash_insert(W.sk, &o->sk) ||
		    sk_rhash_remove(W.sk, &o->sk))
			die("sk_rhash insert/remove failed");
	}
#ifdef HASH_HAVE_LFHT
	else {
		lfht_add(o);
		lfht_del(o);
	}
#endif
	return sk_bench_now_ns() - t0;
}

/*
 * hash-update-resize, one run: insert+remove pairs of objects outside the
 * key set on this thread for run_ns while a resizer thread runs (lf:
 * LAT_*; LAT_EMPTY times empty sections while sk_rhash resizes).
 */
static int update_resize_once(int lf, uint64_t run_ns, struct lat *l)
{
	struct resizer rz = { .base = (unsigned long)W.nkeys,
			      .cycles = lf == LAT_LFHT };
	struct hobj *pool = aligned_alloc(64, sizeof(*pool) * LAT_POOL);
	uint64_t end;
	long i = 0;
	int err;

	if (!pool)
		return -ENOMEM;
	memset(pool, 0, sizeof(*pool) * LAT_POOL);
	for (i = 0; i < LAT_POOL; i++)
		pool[i].key = key_of((uint64_t)W.nkeys + (uint64_t)i);
	err = pthread_create(&rz.tid, NULL, lat_resizer_main, &rz);
	if (err) {
		free(pool);
		return -err;
	}
#ifdef HASH_HAVE_LFHT
	if (lf == LAT_LFHT)
		urcu_memb_register_thread();
#endif
	l->n = 0;
	end = sk_bench_now_ns() + run_ns;
	for (i = 0; sk_bench_now_ns() < end; i++) {
		lat_add(l, timed_pair(&pool[i % LAT_POOL], lf));
		if (i % LAT_POOL == LAT_POOL - 1) {
			/* Removed objects are reused after a grace period. */
			if (lf == LAT_RHASH)
				sk_synchronize_rcu();
#ifdef HASH_HAVE_LFHT
			else if (lf == LAT_LFHT)
				urcu_memb_synchronize_rcu();
#endif
		}
	}
#ifdef HASH_HAVE_LFHT
	if (lf == LAT_LFHT) {
		urcu_memb_synchronize_rcu();
		urcu_memb_unregister_thread();
	}
#endif
	__atomic_store_n(&rz.stop, 1, __ATOMIC_RELAXED);
	pthread_join(rz.tid, NULL);
	if (lf != LAT_LFHT)
		sk_synchronize_rcu();
	free(pool);
	return 0;
}

int sk_bench_hash_update_resize_run(const struct sk_bench_config *cfg,
				    struct sk_bench_results *res)
{
	static const char *const title_worst =
		"hash-update-resize: WORST latency of an insert+remove pair, "
		"in us, while another thread resizes keys <-> 2 x keys "
		"buckets continuously (lower is better)";
	static const char *const title_p999 =
		"hash-update-resize: p99.9 latency of an insert+remove pair, "
		"in us, while another thread resizes keys <-> 2 x keys "
		"buckets continuously (lower is better)";
	long nkeys = cfg->quick ? 1L << 16 : 1L << 20;
	const char *variant = cfg->quick ? "2^16 keys" : "2^20 keys";
	struct sk_bench_row *worst, *p999;
	struct lat l = { .cap = 1UL << 22 };
	double *bw = calloc((size_t)cfg->reps * 2, sizeof(*bw));
	double *bp = bw + cfg->reps;
	int rep, i;

	worst = sk_bench_row_add(res, "hash-update-resize", variant,
				 "us worst", title_worst, 1, 1, lat_impls,
				 cfg->reps);
	p999 = sk_bench_row_add(res, "hash-update-resize", variant,
				"us p99.9", title_p999, 1, 1, lat_impls,
				cfg->reps);
	l.ns = malloc(l.cap * sizeof(*l.ns));
	if (!l.ns || !bw || set_build(nkeys))
		die("out of memory");
	sk_bench_progress("hash-update-resize: %s built; 2 runs x %d reps, "
			  "%.0f ms each",
			  variant, cfg->reps, cfg->run_ns / 1e6);
	for (rep = 0; rep < cfg->reps; rep++) {
		/* The baseline: empty sections timed while sk_rhash resizes. */
		if (update_resize_once(LAT_EMPTY, cfg->run_ns, &l))
			die("cannot start the resizer");
		lat_stats(&l, &bw[rep], &bp[rep]);
		for (i = 0; i < worst->nimpl; i++) {
			if (worst->na[i])
				continue;
			if (update_resize_once(i == 1 ? LAT_LFHT : LAT_RHASH,
					       cfg->run_ns, &l))
				die("cannot start the resizer");
			lat_stats(&l, &worst->rep[i][rep], &p999->rep[i][rep]);
			sk_bench_progress("hash-update-resize: rep %d/%d, %-10s "
					  "worst %8.1f us, p99.9 %6.1f us, "
					  "%zu pairs",
					  rep + 1, cfg->reps,
					  worst->impl[i]->name,
					  worst->rep[i][rep],
					  p999->rep[i][rep], l.n);
		}
	}
	set_free();
	free(l.ns);
	sk_bench_note_add(res,
			  "hash-update-resize: baseline, the same loop timing "
			  "an EMPTY section (no table call) while sk_rhash "
			  "resizes: worst %.1f us, p99.9 %.2f us (medians over "
			  "repetitions): what the clock and the scheduler "
			  "alone cost on this machine",
			  median_of(bw, cfg->reps), median_of(bp, cfg->reps));
	free(bw);
	worst_target(res, worst, 1000.0, "hash-update-resize-worst");
	sk_bench_ratio_target(res, p999, "rhash", "urcu-lfht", 1.0, 1,
			      "hash-update-resize p99.9: us rhash / urcu-lfht",
			      "hash-update-resize-p99.9");
	return 0;
}

/* hash-grow: inserters and one lookup thread on a table that starts at 1. */
struct grow_run {
	int lf;		 /* LAT_*: LAT_EMPTY times empty sections */
	long nkeys;	 /* inserted in all */
	int inserters;	 /* threads */
	int done;	 /* inserters finished */
	uint64_t worst;	 /* worst single insert (ns), max over threads */
	uint64_t end_ns; /* LAT_EMPTY: time sections until then */
	int next_id;
};

static void *grow_inserter(void *arg)
{
	struct grow_run *g = arg;
	int id = __atomic_fetch_add(&g->next_id, 1, __ATOMIC_RELAXED);
	long i, per = g->nkeys / g->inserters;
	uint64_t worst = 0;

	if (g->lf != LAT_LFHT && sk_rcu_register_thread())
		die("sk_rcu_register_thread failed");
#ifdef HASH_HAVE_LFHT
	if (g->lf == LAT_LFHT)
		urcu_memb_register_thread();
#endif
	for (i = id * per; g->lf == LAT_EMPTY ? sk_bench_now_ns() < g->end_ns
					      : i < (id + 1) * per;
	     i++) {
		struct hobj *o = &W.objs[i % g->nkeys];
		uint64_t t0 = sk_bench_now_ns(), d;

		if (g->lf == LAT_EMPTY) {
			sk_barrier(); /* nothing to time */
		} else if (g->lf == LAT_RHASH) {
			if (sk_rhash_insert(W.sk, &o->sk))
				die("sk_rhash_insert failed");
		}
#ifdef HASH_HAVE_LFHT
		else {
			lfht_add(o);
		}
#endif
		d = sk_bench_now_ns() - t0;
		worst = d > worst ? d : worst;
	}
#ifdef HASH_HAVE_LFHT
	if (g->lf == LAT_LFHT)
		urcu_memb_unregister_thread();
#endif
	if (g->lf != LAT_LFHT)
		sk_rcu_unregister_thread();
	/* Relaxed max: joined before it is read. */
	for (uint64_t w = __atomic_load_n(&g->worst, __ATOMIC_RELAXED);
	     worst > w && !__atomic_compare_exchange_n(&g->worst, &w, worst, 0,
						       __ATOMIC_RELAXED,
						       __ATOMIC_RELAXED);)
		;
	__atomic_fetch_add(&g->done, 1, __ATOMIC_RELAXED);
	return NULL;
}

static void *grow_looker(void *arg)
{
	struct grow_run *g = arg;

	seed_thread();
	if (g->lf != LAT_LFHT && sk_rcu_register_thread())
		die("sk_rcu_register_thread failed");
#ifdef HASH_HAVE_LFHT
	if (g->lf == LAT_LFHT)
		urcu_memb_register_thread();
#endif
	while (__atomic_load_n(&g->done, __ATOMIC_RELAXED) < g->inserters) {
		uint64_t k = key_of(next_rand(&rng) % (uint64_t)g->nkeys);

		if (g->lf != LAT_LFHT) {
			sk_rcu_read_lock();
			(void)sk_rhash_lookup(W.sk, &k);
			sk_rcu_read_unlock();
		}
#ifdef HASH_HAVE_LFHT
		else {
			struct cds_lfht_iter it;

			urcu_memb_read_lock();
			cds_lfht_lookup(W.lf, bench_hash(k), lf_match, &k,
					&it);
			urcu_memb_read_unlock();
		}
#endif
	}
#ifdef HASH_HAVE_LFHT
	if (g->lf == LAT_LFHT)
		urcu_memb_unregister_thread();
#endif
	if (g->lf != LAT_LFHT)
		sk_rcu_unregister_thread();
	return NULL;
}

/* Empty tables of 1 bucket over the key set (objects not inserted). */
static int grow_tables(long nkeys, int lf)
{
	memset(&W, 0, sizeof(W));
	W.nkeys = nkeys;
	W.objs = aligned_alloc(64, sizeof(*W.objs) * (size_t)nkeys);
	if (!W.objs)
		return -1;
	memset(W.objs, 0, sizeof(*W.objs) * (size_t)nkeys);
	for (long i = 0; i < nkeys; i++)
		W.objs[i].key = key_of((uint64_t)i);
	if (lf != LAT_LFHT) {
		struct sk_rhash_params p = SK_RHASH_PARAMS_DEFAULT;

		p.head_offset = offsetof(struct hobj, sk);
		p.key_offset = offsetof(struct hobj, key);
		p.key_len = sizeof(uint64_t);
		p.initial_buckets = 1;
		p.min_buckets = 1;
		if (!(W.sk = sk_rhash_create(&p)))
			return -1;
		W.have_sk = 1;
	}
#ifdef HASH_HAVE_LFHT
	else {
		W.lf = cds_lfht_new_flavor(1, 1, LFHT_MAX_BUCKETS,
					   CDS_LFHT_AUTO_RESIZE |
						   CDS_LFHT_ACCOUNTING,
					   &urcu_memb_flavor, NULL);
		if (!W.lf)
			return -1;
	}
#endif
	return 0;
}

/*
 * One hash-grow run: total ms and worst insert us.  LAT_EMPTY times empty
 * sections for *total_ms (as given) instead.
 */
static int grow_once(int lf, long nkeys, double *total_ms, double *worst_us)
{
	struct grow_run g = { .lf = lf, .nkeys = nkeys, .inserters = 2 };
	pthread_t th[3];
	uint64_t t0;
	int i;

	if (grow_tables(nkeys, lf))
		return -ENOMEM;
	t0 = sk_bench_now_ns();
	g.end_ns = t0 + (uint64_t)(*total_ms * 1e6);
	for (i = 0; i < 3; i++)
		if (pthread_create(&th[i], NULL,
				   i < 2 ? grow_inserter : grow_looker, &g))
			die("cannot start a hash-grow thread");
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	*total_ms = (double)(sk_bench_now_ns() - t0) / 1e6;
	*worst_us = (double)g.worst / 1e3;
	if (lf != LAT_LFHT)
		sk_rhash_barrier(W.sk); /* the last background grow */
	set_free();
	return 0;
}

int sk_bench_hash_grow_run(const struct sk_bench_config *cfg,
			   struct sk_bench_results *res)
{
	static const char *const title_total =
		"hash-grow: TOTAL time, in ms, to insert the keys into a "
		"table of 1 bucket, 2 inserting threads + 1 looking up (lower "
		"is better)";
	static const char *const title_worst =
		"hash-grow: WORST single insert, in us, inserting the keys "
		"into a table of 1 bucket, 2 inserting threads + 1 looking up "
		"(lower is better)";
	/* --quick: cds_lfht grows from 1 bucket slowly (seconds at 2^16). */
	long nkeys = cfg->quick ? 1L << 12 : 1L << 20;
	const char *variant = cfg->quick ? "2^12 keys" : "2^20 keys";
	struct sk_bench_row *total, *worst;
	double *bw = calloc((size_t)cfg->reps * 2, sizeof(*bw));
	int rep, i;

	if (!bw)
		die("out of memory");
	total = sk_bench_row_add(res, "hash-grow", variant, "ms total",
				 title_total, 3, 1, lat_impls, cfg->reps);
	worst = sk_bench_row_add(res, "hash-grow", variant, "us worst insert",
				 title_worst, 3, 1, lat_impls, cfg->reps);
	for (rep = 0; rep < cfg->reps; rep++) {
		for (i = 0; i < total->nimpl; i++) {
			if (total->na[i])
				continue;
			if (grow_once(i == 1 ? LAT_LFHT : LAT_RHASH, nkeys,
				      &total->rep[i][rep],
				      &worst->rep[i][rep]))
				die("out of memory");
			sk_bench_progress("hash-grow: rep %d/%d, %-10s total "
					  "%8.1f ms, worst insert %8.1f us",
					  rep + 1, cfg->reps,
					  total->impl[i]->name,
					  total->rep[i][rep],
					  worst->rep[i][rep]);
		}
		/* The baseline: the same threads, as long as sk_rhash took. */
		bw[cfg->reps + rep] = total->rep[0][rep];
		if (grow_once(LAT_EMPTY, nkeys, &bw[cfg->reps + rep],
			      &bw[rep]))
			die("out of memory");
	}
	sk_bench_note_add(res,
			  "hash-grow: baseline, the same 2 + 1 threads timing "
			  "EMPTY sections instead of inserts for as long as "
			  "sk_rhash took (the looker on an empty sk_rhash): "
			  "worst %.1f us (median over "
			  "repetitions): what the clock and the scheduler alone "
			  "cost on this machine; sk_rhash adds the callback "
			  "worker that migrates",
			  median_of(bw, cfg->reps));
	free(bw);
	sk_bench_ratio_target(res, total, "rhash", "urcu-lfht", 1.0, 1,
			      "hash-grow total: ms rhash / urcu-lfht",
			      "hash-grow-total");
	worst_target(res, worst, 1000.0, "hash-grow-worst");
	return 0;
}
