/* SPDX-License-Identifier: MIT */
/*
 * Scenarios "hash-lookup", "hash-resize" and "hash-update": scalekit's
 * resizable hash table (sk_rhash) against liburcu's lock-free hash table
 * (cds_lfht), and against itself while it resizes.  The objects, keys and
 * table adapters are described in hash.h; this file also keeps the key
 * set they share.
 *
 *  hash-lookup   T threads (pinned with --pin) each look up random
 *                present keys, one read section per lookup (lock,
 *                lookup, read the object, unlock), through the
 *                harness's reader threads:
 *                read_section(n) of the lookup adapters is n lookups.
 *                Tables of 2^16 and 2^20 keys; every lookup must find its
 *                key.  Each repetition runs LOOKUP_WINDOWS interleaved
 *                windows of every job; cds_lfht's figure is the median of
 *                its windows, rhash's is paired with it window by window
 *                (sk_bench_paired_median()).
 *  hash-resize   the same lookups on sk_rhash (2^16 keys, 1 thread) while
 *                another thread (with --pin, pinned beside the readers)
 *                resizes the table continuously between 2^16 and 2^17
 *                buckets, against the same table without the resizer,
 *                half of each run at 2^16 and half at 2^17 buckets (the
 *                two sizes the resizing table alternates between; the
 *                resizes are outside the clock): "rhash-resizing" and
 *                "rhash" are the same lookups, the ratio is resizing /
 *                steady.  "rhash-beside": the steady table while the
 *                resizer resizes a second table of the same size (its
 *                own objects): what a resizing thread costs the reader
 *                through the machine alone (cache and memory bandwidth,
 *                and its grace periods), none of it through the table
 *                the reader uses.  "rhash-gp": the steady table while
 *                another thread only waits for grace periods, 4 per
 *                grow + shrink cycle at the resizer's latest rate (what
 *                the grace periods alone cost the reader).  The
 *                rates are over the reader's CPU time: a lookup's cost,
 *                not the share of a CPU the reader got beside the
 *                resizer and other processes.  Each repetition is the
 *                median of RESIZE_WINDOWS interleaved windows of each.
 *                A second row runs the same reader on cds_lfht,
 *                "urcu-lfht-resizing" (another thread calls
 *                cds_lfht_resize() 2^16 <-> 2^17) against "urcu-lfht"
 *                (steady at both sizes): the peer's resizing / steady.
 *  hash-update   T threads insert and remove objects of their own in a
 *                table of 2^16 keys: a thread owns 2 x 2048 objects; one
 *                round inserts the 2048 that are out and removes the 2048
 *                that are in (interleaved), then waits for a grace period
 *                before the removed ones may be inserted again.  Figures
 *                count inserts and removes alike; the grace period (one
 *                per 4096 updates) is included.  The same loop drives every
 *                table through its adapter.
 */
#define _GNU_SOURCE
#include "hash.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scalekit/rcu.h"

#define MAX_COUNTS 16

/*
 * hash-resize: windows per repetition, interleaved (steady, resizing,
 * resizing, steady, ...), each half a run long; a repetition's figure is
 * the median of its windows.  One window per repetition swung the ratio
 * from 0.4 to 1.5 between runs: a single window of the resizing job
 * depends on where in its grow/shrink cycle the scheduler's hiccups fall.
 */
#define RESIZE_WINDOWS 5

/*
 * hash-lookup: windows per repetition, interleaved, each half a run long;
 * rhash's figure is paired with cds_lfht's window by window (run_rep()).
 * One run of each per repetition, 200 ms apart, let the ratio at 2^20
 * keys swing from 1.39 to 2.72 within one run (cds_lfht's own figure from
 * 3.8 to 5.7 Mlookups/s) while another tenant loaded the machine.
 */
#define LOOKUP_WINDOWS 5

/* hash-update: objects per half of a thread's pool (one round). */
#define UPD_HALF (SK_BENCH_CHUNK / 2)

/* ---- the key set ------------------------------------------------------- */

struct sk_bench_hash_set sk_bench_hash_w;
__thread uint64_t sk_bench_hash_rng;
static int seq;

void sk_bench_hash_seed_thread(void)
{
	uint64_t id = (uint64_t)__atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);

	sk_bench_hash_rng = sk_bench_hash_seed_mix(id * 0x9e3779b97f4a7c15ULL) | 1;
}

void sk_bench_hash_seed_reset(void)
{
	__atomic_store_n(&seq, 0, __ATOMIC_RELAXED);
}

void sk_bench_hash_die(const char *what)
{
	fprintf(stderr, "scalekit bench: hash: %s\n", what);
	abort();
}

const struct sk_bench_hash_ops *
sk_bench_hash_ops_of(const struct sk_bench_rcu_ops *impl)
{
	/* By name: the update adapters are copies of the lookup adapters. */
	if (!strncmp(impl->name, "rhash", 5))
		return &sk_bench_hash_rhash;
	if (!strncmp(impl->name, "urcu-lfht", 9) && sk_bench_hash_lfht.name)
		return &sk_bench_hash_lfht;
	return NULL;
}

/* Fill one table through its adapter, on this thread. */
static void table_fill(const struct sk_bench_hash_ops *t)
{
	long i;

	t->thread_init();
	for (i = 0; i < sk_bench_hash_w.nkeys; i++)
		t->insert(&sk_bench_hash_w.objs[i]);
	/*
	 * The runs time a steady table: the background resize the fill may
	 * have queued (sk_rhash grows above 75 % load) ends first.
	 */
	if (t->barrier)
		t->barrier();
	t->thread_exit();
}

int sk_bench_hash_build(long nkeys, unsigned long buckets, int insert,
			const struct sk_bench_hash_ops *only)
{
	const struct sk_bench_hash_ops *all[] = { &sk_bench_hash_rhash,
						  &sk_bench_hash_lfht };
	struct sk_bench_hash_set *w = &sk_bench_hash_w;
	long i;

	memset(w, 0, sizeof(*w));
	w->nkeys = nkeys;
	w->objs = aligned_alloc(64, sizeof(*w->objs) * (size_t)nkeys);
	if (!w->objs)
		goto nomem;
	memset(w->objs, 0, sizeof(*w->objs) * (size_t)nkeys);
	for (i = 0; i < nkeys; i++)
		w->objs[i].key = sk_bench_hash_key((uint64_t)i);
	for (i = 0; i < 64; i++) {
		uint64_t k = sk_bench_hash_key((uint64_t)i * 7919);

		if (sk_bench_hash_of(k) != sk_rhash_hash(&k, sizeof(k), 0))
			sk_bench_hash_die("the inline hash differs from "
					  "sk_rhash_hash()");
	}
	for (i = 0; i < 2; i++) {
		if (!all[i]->name || (only && only != all[i]))
			continue;
		if (all[i]->build(buckets))
			goto nomem;
		if (insert)
			table_fill(all[i]);
	}
	return 0;

nomem:
	fprintf(stderr, "scalekit bench: hash: out of memory for %ld keys\n",
		nkeys);
	sk_bench_hash_free();
	return -1;
}

void sk_bench_hash_free(void)
{
	if (sk_bench_hash_lfht.destroy)
		sk_bench_hash_lfht.destroy();
	sk_bench_hash_rhash.destroy();
	free(sk_bench_hash_w.objs);
	memset(&sk_bench_hash_w, 0, sizeof(sk_bench_hash_w));
}

/* Both tables over nkeys present keys, one bucket per key. */
static int set_build(long nkeys)
{
	return sk_bench_hash_build(nkeys, (unsigned long)nkeys, 1, NULL);
}

/* ---- the update adapter ---------------------------------------------- */

/*
 * hash-update runs one job at a time: the table its update adapter drives
 * is set before each run (thread creation orders it before the loops).
 */
static const struct sk_bench_hash_ops *upd_table;

/*
 * A thread's pool: pool[0..UPD_HALF) and pool[UPD_HALF..2 UPD_HALF); the
 * half "in" is in the table, the other half may be inserted (a grace
 * period has passed since its removal).
 */
static int upd_seq;
static __thread struct hobj *pool;
static __thread int in_half;

static void upd_init(void)
{
	uint64_t id = (uint64_t)__atomic_add_fetch(&upd_seq, 1,
						   __ATOMIC_RELAXED);
	int i;

	upd_table->thread_init();
	pool = aligned_alloc(64, sizeof(*pool) * 2 * UPD_HALF);
	if (!pool)
		sk_bench_hash_die("out of memory for an updater's objects");
	memset(pool, 0, sizeof(*pool) * 2 * UPD_HALF);
	/* Keys beyond every key set: index 2^40 + id * 2^20 + i. */
	for (i = 0; i < 2 * UPD_HALF; i++)
		pool[i].key = sk_bench_hash_key((1ULL << 40) + (id << 20) +
						(uint64_t)i);
	in_half = 0;
	for (i = 0; i < UPD_HALF; i++)
		upd_table->insert(&pool[i]);
}

/* One round per UPD_HALF pairs: n is a multiple of 2 * UPD_HALF. */
static void upd_rounds(long n)
{
	const struct sk_bench_hash_ops *t = upd_table;
	long r;
	int i;

	for (r = 0; r < n; r += 2 * UPD_HALF) {
		struct hobj *in = pool + in_half * UPD_HALF;
		struct hobj *out = pool + (1 - in_half) * UPD_HALF;

		for (i = 0; i < UPD_HALF; i++) {
			t->insert(&out[i]);
			t->remove(&in[i]);
		}
		/* Removed objects are reinserted after a grace period only. */
		t->synchronize();
		in_half = 1 - in_half;
	}
}

static void upd_exit(void)
{
	struct hobj *in = pool + in_half * UPD_HALF;
	int i;

	for (i = 0; i < UPD_HALF; i++)
		upd_table->remove(&in[i]);
	upd_table->synchronize();
	free(pool);
	pool = NULL;
	upd_table->thread_exit();
}

/* The update adapter of a lookup adapter: the same identity. */
static int update_ops(const struct sk_bench_rcu_ops *ops,
		      struct sk_bench_rcu_ops *out)
{
	if (!sk_bench_hash_ops_of(ops))
		return -1;
	*out = *ops;
	out->thread_init = upd_init;
	out->read_section = upd_rounds;
	out->thread_exit = upd_exit;
	return 0;
}

/* ---- measuring --------------------------------------------------------------- */

/*
 * hash-resize's second table ("rhash-beside"): as many objects of its
 * own, the same parameters; the main thread builds it between runs.
 */
static struct sk_rhash *beside;
static struct hobj *beside_objs;

/* The resizer of hash-resize: grow and shrink until stopped. */
struct resizer {
	pthread_t tid;
	unsigned long base; /* the table's usual bucket count */
	const struct sk_bench_hash_ops *t; /* the readers' table */
	struct sk_rhash *other; /* NULL: resize t; else this sk_rhash */
	double gp_rate; /* > 0: no resizes, this many grace periods per s */
	int stop;
	unsigned long cycles; /* grow + shrink pairs done */
};

/*
 * Grace periods per grow + shrink cycle of the resizer: sk_rhash_resize()
 * waits for two (RH-G2, RH-G1) per resize.
 */
#define GPS_PER_CYCLE 4

/*
 * hash-resize's rhash-gp runs: grace periods per second, from the
 * resizer's latest rate over the readers' table (the warm-up runs the
 * resizing job first).
 */
static double gp_rate;

static void resizer_resize(struct resizer *rz, unsigned long nbuckets)
{
	if (!rz->other)
		rz->t->resize(nbuckets);
	else if (sk_rhash_resize(rz->other, nbuckets))
		sk_bench_hash_die("sk_rhash_resize failed");
}

/* rhash-gp: only the resizer's grace periods, at its rate. */
static void gp_main(struct resizer *rz)
{
	uint64_t t0 = sk_bench_now_ns(), due, now;
	unsigned long n = 0;

	while (!__atomic_load_n(&rz->stop, __ATOMIC_RELAXED)) {
		sk_synchronize_rcu();
		n++;
		due = t0 + (uint64_t)((double)n / rz->gp_rate * 1e9);
		/*
		 * Sleep until due in one sleep (the stop flag is checked
		 * once per grace period): each wake-up beside the reader
		 * costs it too on a machine whose CPUs other processes
		 * share (docs/data-structures.md, "The parts, measured").
		 */
		now = sk_bench_now_ns();
		if (now < due)
			sk_bench_sleep_ns(due - now);
	}
	rz->cycles = n / GPS_PER_CYCLE;
}

static void *resizer_main(void *arg)
{
	struct resizer *rz = arg;

	if (rz->gp_rate > 0) {
		gp_main(rz);
		return NULL;
	}
	/* cds_lfht_resize() wants a registered thread (hash.h). */
	rz->t->thread_init();
	while (!__atomic_load_n(&rz->stop, __ATOMIC_RELAXED)) {
		resizer_resize(rz, 2 * rz->base);
		resizer_resize(rz, rz->base);
		rz->cycles++;
	}
	rz->t->thread_exit();
	return NULL;
}

/*
 * Run ops on n threads for run_ns (with a resizer of the readers' table
 * when resize is 1, of the table beside when it is 2, a thread that only
 * waits for grace periods at the resizer's rate when it is 3) and return the
 * total rate in millions per second (sum of each thread's sections / its
 * own time: wall time, or with cpu_time the CPU time it got); *rps gets
 * resize cycles per second.
 * Returns 0 or -errno.
 */
static int measure(const struct sk_bench_rcu_ops *ops, int n, int resize,
		   uint64_t run_ns, int cpu_time, double *mops, double *rps)
{
	struct sk_bench_reader_stat *st = calloc((size_t)n, sizeof(*st));
	struct sk_bench_readers *g;
	struct resizer rz = { .base = (unsigned long)sk_bench_hash_w.nkeys,
			      .other = resize == 2 ? beside : NULL,
			      /* Before any resizing run: 30 cycles/s. */
			      .gp_rate = resize != 3 ? 0
					 : gp_rate > 0 ? gp_rate
						       : 30.0 * GPS_PER_CYCLE };
	uint64_t t0 = 0;
	double sum = 0;
	int i, err;

	if (!st)
		return -ENOMEM;
	sk_bench_hash_seed_reset();
	upd_table = sk_bench_hash_ops_of(ops);
	rz.t = upd_table;
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
		if (resize == 1 && rz.cycles)
			gp_rate = *rps * GPS_PER_CYCLE;
	}
	if (err) {
		free(st);
		return err;
	}
	for (i = 0; i < n; i++)
		sum += (double)st[i].sections /
		       ((double)(cpu_time ? st[i].cpu_ns : st[i].ns) / 1e3);
	free(st);
	*mops = sum;
	return 0;
}

/* One implementation at one thread count: its row and column. */
struct hash_job {
	const struct sk_bench_rcu_ops *ops; /* as measured */
	const char *name;		    /* for progress lines */
	int threads;
	int resize; /* measure()'s resize */
	struct sk_bench_row *row;
	int col;
	/*
	 * hash-resize's steady jobs: half of each run with the readers'
	 * table at base buckets, half at 2 x base, the two sizes a resizing
	 * run alternates between (the resizes are outside the clock); the
	 * figure is the mean of the halves' rates.
	 */
	int both_sizes;
	/*
	 * hash-resize: rates over each reader's CPU time, not its wall
	 * time, so that the figure is the cost of a lookup, not the share
	 * of a CPU the reader got beside the resizer and other processes.
	 */
	int cpu_time;
};

/* hash-resize: the readers' table's usual bucket count (0: not set). */
static unsigned long resize_base;

/* One resize of table t from this (main) thread, registered as t asks. */
static void table_resize(const struct sk_bench_hash_ops *t,
			 unsigned long nbuckets)
{
	t->thread_init();
	t->resize(nbuckets);
	t->thread_exit();
}

/*
 * One run of jb for run_ns: *mops its rate, *rps the resizer's cycles per
 * second (resize modes only).  0 or -errno.
 */
static int measure_job(const struct hash_job *jb, uint64_t run_ns,
		       double *mops, double *rps)
{
	const struct sk_bench_hash_ops *t = sk_bench_hash_ops_of(jb->ops);
	double a = 0, b = 0;
	int err;

	if (!jb->both_sizes)
		return measure(jb->ops, jb->threads, jb->resize, run_ns,
			       jb->cpu_time, mops, rps);
	table_resize(t, resize_base);
	err = measure(jb->ops, jb->threads, jb->resize, run_ns / 2,
		      jb->cpu_time, &a, rps);
	table_resize(t, 2 * resize_base);
	if (!err)
		err = measure(jb->ops, jb->threads, jb->resize, run_ns / 2,
			      jb->cpu_time, &b, rps);
	table_resize(t, resize_base);
	*mops = (a + b) / 2;
	return err;
}

double sk_bench_hash_median(double *v, int n)
{
	int i, j;

	/* Few values: a simple sort. */
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double x = v[j];

			v[j] = v[j - 1];
			v[j - 1] = x;
		}
	return n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : NAN;
}

/* Warm up every job once (cfg->warmup_ns).  0 or -errno; *failed. */
static int warm_up(const struct sk_bench_config *cfg, struct hash_job *jobs,
		   int njobs, struct hash_job **failed)
{
	double mops, rps;
	int i, err;

	for (i = 0; i < njobs; i++) {
		*failed = &jobs[i];
		err = measure_job(&jobs[i], cfg->warmup_ns, &mops, &rps);
		if (err)
			return err;
	}
	return 0;
}

/*
 * One repetition: `windows` interleaved windows of every job (the start
 * rotated, so that no job always runs first), each job's figure the median
 * of its windows, or with pair_ref (not NULL) the figure of the job of
 * the same row named pair_ref paired with it window by window
 * (sk_bench_paired_median()); one window of cfg->run_ns, or several of
 * half that.  rv[] collects the rates of the resizer of the readers'
 * table.  0 or -errno; *failed.
 */
static int run_rep(const struct sk_bench_config *cfg, struct hash_job *jobs,
		   int njobs, int rep, int windows, const char *pair_ref,
		   double *win, double *rv, int *nrv, struct hash_job **failed)
{
	uint64_t ns = windows > 1 ? cfg->run_ns / 2 : cfg->run_ns;
	double rps = NAN, fig[MAX_COUNTS * SK_BENCH_MAX_IMPL];
	int i, r, w, err;

	for (w = 0; w < windows; w++) {
		for (i = 0; i < njobs; i++) {
			int j = (i + rep + w) % njobs;
			struct hash_job *jb = &jobs[j];

			*failed = jb;
			err = measure_job(jb, ns, &win[j * windows + w], &rps);
			if (err)
				return err;
			if (jb->resize == 1) /* the readers' table */
				rv[(*nrv)++] = rps;
		}
	}
	/* Paired figures first: the medians below sort win in place. */
	for (i = 0; i < njobs; i++) {
		fig[i] = NAN;
		for (r = 0; pair_ref && r < njobs; r++)
			if (r != i && jobs[r].row == jobs[i].row &&
			    !strcmp(jobs[r].name, pair_ref) &&
			    strcmp(jobs[i].name, pair_ref))
				fig[i] = sk_bench_paired_median(
					&win[i * windows], &win[r * windows],
					windows);
	}
	for (i = 0; i < njobs; i++)
		jobs[i].row->rep[jobs[i].col][rep] =
			isnan(fig[i]) ? sk_bench_hash_median(&win[i * windows],
							     windows)
				      : fig[i];
	return 0;
}

/*
 * Warm up every job once, then run cfg->reps rounds of all jobs, storing
 * Mops/s (per round the median of `windows` interleaved windows);
 * *rps_median (if not NULL) gets the resizer's median rate.  Returns 0,
 * or -1 after a message.
 */
static int run_jobs(const struct sk_bench_config *cfg, const char *scenario,
		    const char *what, struct hash_job *jobs, int njobs,
		    int windows, const char *pair_ref, double *rps_median)
{
	double *rv = calloc((size_t)(cfg->reps * windows) + 1, sizeof(*rv));
	double *win = calloc((size_t)(njobs * windows), sizeof(*win));
	struct hash_job *jb = NULL;
	int i, rep, err = -ENOMEM, nrv = 0;

	if (!rv || !win || (err = warm_up(cfg, jobs, njobs, &jb)))
		goto fail;
	for (rep = 0; rep < cfg->reps; rep++) {
		err = run_rep(cfg, jobs, njobs, rep, windows, pair_ref, win, rv,
			      &nrv, &jb);
		if (err)
			goto fail;
		for (i = 0; i < njobs; i++)
			sk_bench_progress("%s: rep %d/%d, %s, %d thread%s, "
					  "%-14s %8.2f M%s/s%s",
					  scenario, rep + 1, cfg->reps,
					  jobs[i].row->variant, jobs[i].threads,
					  jobs[i].threads == 1 ? " " : "s",
					  jobs[i].name,
					  jobs[i].row->rep[jobs[i].col][rep],
					  what,
					  jobs[i].resize == 1	? " (resizing)"
					  : jobs[i].resize == 2 ? " (resizing beside)"
					  : jobs[i].resize == 3 ? " (grace periods beside)"
								: "");
	}
	if (rps_median && nrv)
		*rps_median = sk_bench_hash_median(rv, nrv);
	free(rv);
	free(win);
	return 0;

fail:
	fprintf(stderr, "scalekit bench: %s: cannot run %s on %d threads: %s\n",
		scenario, jb ? jb->name : "a job", jb ? jb->threads : 0,
		strerror(-err));
	free(rv);
	free(win);
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
static const char *const resize_impls[] = { "rhash-resizing", "rhash",
					    "rhash-beside", "rhash-gp", NULL };
static const char *const lfht_resize_impls[] = { "urcu-lfht-resizing",
						 "urcu-lfht", NULL };

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
						counts[c], 0, rows[k][c], i, 0, 0
					};
		if (set_build(lookup_sets[k].nkeys))
			return -1;
		sk_bench_progress("hash-lookup: %s built in %.0f ms; %d runs x "
				  "%d reps x %d interleaved windows, %.0f ms "
				  "each (warm-up %.0f ms)%s",
				  lookup_sets[k].variant,
				  (sk_bench_now_ns() - t0) / 1e6, njobs,
				  cfg->reps, LOOKUP_WINDOWS,
				  cfg->run_ns / 2 / 1e6, cfg->warmup_ns / 1e6,
				  rows[k][0]->na[1] ? ""
						    : "; rhash paired with "
						      "urcu-lfht window by "
						      "window");
		if (run_jobs(cfg, "hash-lookup", "lookups", jobs, njobs,
			     LOOKUP_WINDOWS, "urcu-lfht", NULL)) {
			sk_bench_hash_free();
			return -1;
		}
		sk_bench_hash_free();
		for (c = 0; c < ncounts; c++)
			ratio_target(res, rows[k][c], "rhash", "urcu-lfht", 2.0,
				     lookup_sets[k].id);
	}
	return 0;
}

/*
 * The table beside (hash-resize): built through the sk_rhash adapter,
 * which builds into sk_bench_hash_w.sk (the readers' table is put back).
 * Returns 0 or -1 after a message.
 */
static int beside_build(long nkeys)
{
	struct sk_rhash *readers = sk_bench_hash_w.sk;
	long i;

	beside_objs = aligned_alloc(64, sizeof(*beside_objs) * (size_t)nkeys);
	if (!beside_objs || sk_bench_hash_rhash.build((unsigned long)nkeys)) {
		free(beside_objs);
		beside_objs = NULL;
		sk_bench_hash_w.sk = readers;
		fprintf(stderr, "scalekit bench: hash-resize: out of memory for "
				"the second table\n");
		return -1;
	}
	beside = sk_bench_hash_w.sk;
	sk_bench_hash_w.sk = readers;
	memset(beside_objs, 0, sizeof(*beside_objs) * (size_t)nkeys);
	sk_bench_hash_rhash.thread_init();
	for (i = 0; i < nkeys; i++) {
		beside_objs[i].key = sk_bench_hash_key((uint64_t)i);
		if (sk_rhash_insert(beside, &beside_objs[i].sk))
			sk_bench_hash_die("sk_rhash_insert failed");
	}
	sk_bench_hash_rhash.thread_exit();
	return 0;
}

static void beside_free(void)
{
	if (beside)
		sk_rhash_destroy(beside, NULL, NULL);
	free(beside_objs);
	beside = NULL;
	beside_objs = NULL;
}

/*
 * The object lines one grow (to 2 * resize_base buckets) and one shrink
 * (back) of the readers' table t change: each object is one line (struct
 * hobj), compared with a copy before and after each resize.  A line the
 * migration stores its old value to is not counted.  Outside the clock,
 * before the runs; -1 when the copy cannot be allocated.
 */
static long resize_object_lines(const struct sk_bench_hash_ops *t)
{
	size_t n = (size_t)sk_bench_hash_w.nkeys, i;
	struct hobj *o = sk_bench_hash_w.objs, *copy;
	long changed = 0;
	int k;

	copy = aligned_alloc(64, sizeof(*copy) * n);
	if (!copy)
		return -1;
	memcpy(copy, o, sizeof(*copy) * n);
	for (k = 0; k < 2; k++) {
		table_resize(t, k ? resize_base : 2 * resize_base);
		for (i = 0; i < n; i++)
			if (memcmp(&o[i], &copy[i], sizeof(*o))) {
				changed++;
				copy[i] = o[i];
			}
	}
	free(copy);
	return changed;
}

/*
 * Seconds of the reader's lookups a grow + shrink cycle cost: 1 -
 * resizing / steady (the medians of row's columns 0 and 1) over rps, the
 * cycles per second; NAN when a figure is missing.
 */
static double lost_per_cycle(const struct sk_bench_row *row, double rps)
{
	double resizing, steady;

	if (!(rps > 0) || row->nrep < 1 || row->na[0] || row->na[1])
		return NAN;
	resizing = sk_bench_median(row->rep[0], row->nrep);
	steady = sk_bench_median(row->rep[1], row->nrep);
	if (!(resizing > 0) || !(steady > 0))
		return NAN;
	return (1.0 - resizing / steady) / rps;
}

/*
 * hash-resize's cost model, as a note: the lines a grow + shrink cycle
 * writes that the reader later reads (the new arrays' heads, and the
 * objects whose link changed), what the reader lost per cycle (1 -
 * resizing / steady, the medians, over the cycles per second, taking the
 * reader's CPU second for a wall second: it shares 2 CPUs with the
 * resizer only), per line, and how many lines a cycle could write at
 * this cost and rate for resizing / steady >= 0.9
 * (docs/data-structures.md, "What a lookup pays during a resize").
 */
static void resize_cost_note(struct sk_bench_results *res,
			     const struct sk_bench_row *row, long obj_lines,
			     double rps)
{
	double head_lines = 3.0 * (double)resize_base *
			    sizeof(struct sk_rhash_node *) / 64.0;
	double lines = head_lines + (double)obj_lines;
	double lost = lost_per_cycle(row, rps); /* s per cycle */

	if (obj_lines < 0 || isnan(lost))
		return;
	if (lost <= 0) {
		sk_bench_note_add(res,
				  "hash-resize: a cycle wrote %.0f lines that "
				  "the reader reads (%.0f of bucket heads, %ld "
				  "of objects whose link changed); resizing "
				  "was not slower than steady in this run",
				  lines, head_lines, obj_lines);
		return;
	}
	sk_bench_note_add(res,
			  "hash-resize: a cycle wrote %.0f lines that the "
			  "reader reads (%.0f of bucket heads, %ld of objects "
			  "whose link changed, counted in one cycle before "
			  "the runs); the reader lost %.2f ms per cycle, "
			  "%.0f ns per line; at this rate and cost, "
			  "resizing / steady >= 0.9 allows %.0f lines per "
			  "cycle",
			  lines, head_lines, obj_lines, lost * 1e3,
			  lost / lines * 1e9, 0.1 / rps / (lost / lines));
}

/*
 * hash-resize's peer row: the same reader on cds_lfht (built by
 * set_build() with the others) while a thread resizes it 2^16 <-> 2^17
 * buckets with cds_lfht_resize(), against it steady at both sizes, and a
 * note on what a cycle cost its reader beside sk_rhash's (rh_lost, s per
 * cycle).  0, or -1 after a message.
 */
static int lfht_resize_run(const struct sk_bench_config *cfg,
			   struct sk_bench_results *res, double rh_lost)
{
	static const char *const title =
		"hash-resize / urcu-lfht: millions of cds_lfht lookups per "
		"second of the reader's CPU time, 2^16 keys, one reader; "
		"urcu-lfht-resizing: another thread resizes the table 2^16 "
		"<-> 2^17 buckets (cds_lfht_resize()); urcu-lfht: the same "
		"table steady, half of each run at each size (higher is "
		"better)";
	const struct sk_bench_hash_ops *lf = &sk_bench_hash_lfht;
	struct sk_bench_row *row;
	struct hash_job jobs[2];
	double rps = NAN, lost;
	long obj_lines;
	int i;

	row = sk_bench_row_add(res, "hash-resize", "2^16 keys", "Mops/s", title,
			       1, 1, lfht_resize_impls, cfg->reps);
	row->ratio_prefix = "resizing";
	if (row->na[0] || row->na[1])
		return 0;
	for (i = 0; i < 2; i++)
		jobs[i] = (struct hash_job){ row->impl[i], row->impl[i]->name,
					     1, !i, row, i, i, 1 };
	table_resize(lf, resize_base);
	obj_lines = resize_object_lines(lf);
	sk_bench_progress("hash-resize: urcu-lfht: 2 runs x %d reps, %.0f ms "
			  "each (warm-up %.0f ms)",
			  cfg->reps, cfg->run_ns / 1e6, cfg->warmup_ns / 1e6);
	if (run_jobs(cfg, "hash-resize", "lookups", jobs, 2, RESIZE_WINDOWS,
		     NULL, &rps))
		return -1;
	lost = lost_per_cycle(row, rps);
	sk_bench_note_add(res,
			  "hash-resize: urcu-lfht's resizer completed %.0f "
			  "grow+shrink cycles per second (cds_lfht_resize()); "
			  "a cycle changed %ld object lines; its reader lost "
			  "%.2f ms per cycle, sk_rhash's %.2f ms",
			  rps, obj_lines, lost * 1e3, rh_lost * 1e3);
	return 0;
}

/*
 * hash-resize's line round trips (bench/linetrip.c): reps runs of 10 ms
 * each time rt_bracket() is called (before and after the lookups), none
 * on one CPU or where a ping-pong cannot run (stop set).
 */
#define RT_MAX 64

struct rt_samples {
	double v[RT_MAX];
	int n, low, stop;
};

static void rt_bracket(const struct sk_bench_config *cfg,
		       struct rt_samples *rt)
{
	int i;

	if (sk_bench_ncpus() < 2)
		return;
	for (i = 0; i < cfg->reps && !rt->stop && rt->n < RT_MAX; i++)
		rt->stop = sk_bench_rt_sample(cfg->quick ? 2000000 : 10000000,
					      rt->v, &rt->n, &rt->low) != 0;
}

int sk_bench_hash_resize_run(const struct sk_bench_config *cfg,
			     struct sk_bench_results *res)
{
	static const char *const title =
		"hash-resize: millions of sk_rhash lookups per second of the "
		"reader's CPU time, 2^16 keys, one reader; rhash-resizing: "
		"another thread resizes the table 2^16 <-> 2^17 buckets; "
		"rhash: the same table steady, half of each run at each "
		"size; rhash-beside: the same, another thread resizing a "
		"second table; rhash-gp: the same, another thread waiting for "
		"grace periods at the resizer's rate (higher is better)";
	/* measure()'s resize, and whether the table alternates sizes. */
	static const int modes[] = { 1, 0, 2, 3 }, both[] = { 0, 1, 1, 1 };
	struct hash_job jobs[4];
	struct sk_bench_row *row;
	struct rt_samples rt = { .n = 0 };
	double rps = NAN;
	long obj_lines;
	int i, err;

	row = sk_bench_row_add(res, "hash-resize", "2^16 keys", "Mops/s", title,
			       1, 1, resize_impls, cfg->reps);
	row->ratio_prefix = "resizing";
	for (i = 0; i < 4; i++)
		jobs[i] = (struct hash_job){ row->impl[i], row->impl[i]->name,
					     1, modes[i], row, i, both[i], 1 };
	if (set_build(1L << 16))
		return -1;
	if (beside_build(1L << 16)) {
		sk_bench_hash_free();
		return -1;
	}
	/*
	 * Both tables start at the resize's base size: the fill grew them
	 * (2^16 keys are above 75 % of 2^16 buckets) in the background.
	 */
	resize_base = 1UL << 16;
	sk_rhash_barrier(beside);
	if (sk_rhash_resize(beside, resize_base))
		sk_bench_hash_die("sk_rhash_resize failed");
	sk_bench_hash_rhash.resize(resize_base);
	obj_lines = resize_object_lines(&sk_bench_hash_rhash);
	gp_rate = 0;
	sk_bench_progress("hash-resize: 4 runs x %d reps, %.0f ms each "
			  "(warm-up %.0f ms)",
			  cfg->reps, cfg->run_ns / 1e6, cfg->warmup_ns / 1e6);
	rt_bracket(cfg, &rt);
	err = run_jobs(cfg, "hash-resize", "lookups", jobs, 4, RESIZE_WINDOWS,
		       NULL, &rps);
	rt_bracket(cfg, &rt);
	beside_free();
	if (err) {
		sk_bench_hash_free();
		return -1;
	}
	sk_bench_note_add(res,
			  "hash-resize: the resizer completed %.0f grow+shrink "
			  "cycles (2^16 -> 2^17 -> 2^16 buckets) per second, "
			  "median over repetitions (rhash-resizing's runs)",
			  rps);
	resize_cost_note(res, row, obj_lines, rps);
	if (rt.n || rt.low)
		sk_bench_rt_note_add(res, "hash-resize", rt.v, rt.n, rt.low,
				     "measured before and after the runs; a "
				     "line the resizer wrote comes to the "
				     "reader from the resizer's cache (half "
				     "such a round trip) when the reader next "
				     "reads it, so what a resize costs the "
				     "reader grows with this figure "
				     "(docs/benchmarks.md, \"Which figures "
				     "depend on the CPU\")");
	err = lfht_resize_run(cfg, res, lost_per_cycle(row, rps));
	sk_bench_hash_free();
	ratio_target(res, row, "rhash-resizing", "rhash", 0.9, "hash-resize");
	return err;
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
			sk_bench_hash_die("no update adapter");
	for (i = 0; i < rows[0]->nimpl; i++)
		for (c = 0; c < ncounts; c++)
			if (!rows[c]->na[i])
				jobs[njobs++] = (struct hash_job){
					&uops[i], rows[c]->impl[i]->name,
					counts[c], 0, rows[c], i, 0, 0
				};
	if (set_build(1L << 16))
		return -1;
	sk_bench_progress("hash-update: %d runs x %d reps, %.0f ms each "
			  "(warm-up %.0f ms)",
			  njobs, cfg->reps, cfg->run_ns / 1e6,
			  cfg->warmup_ns / 1e6);
	err = run_jobs(cfg, "hash-update", "updates", jobs, njobs, 1, NULL,
		       NULL);
	if (!err && sk_rhash_count(sk_bench_hash_w.sk) != (unsigned long)sk_bench_hash_w.nkeys)
		sk_bench_hash_die("sk_rhash_count differs from the key count after the "
		    "updates");
	sk_bench_hash_free();
	if (err)
		return -1;
	for (c = 0; c < ncounts; c++)
		ratio_target(res, rows[c], "rhash", "urcu-lfht", 1.0,
			     "hash-update");
	return 0;
}
