/* SPDX-License-Identifier: MIT */
/*
 * Latency scenarios "hash-update-resize" and "hash-grow": the worst cases
 * an updater of sk_rhash and of cds_lfht sees while the table resizes
 * (objects, keys and adapters: hash.h).  Both run through one body,
 * lat_scenario_run(): per repetition, one run per table, then a baseline
 * run (the adapter sk_bench_hash_empty: the same threads timing EMPTY
 * sections), whose worst case is what the clock and the scheduler alone
 * cost on this machine (a 4 ms tick at CONFIG_HZ=250); the notes print it,
 * so that the worst-case targets can be read against it.
 *
 *  hash-update-resize  one thread times insert+remove pairs of objects
 *                      outside the key set (2^20 keys) while another
 *                      resizes the table keys <-> 2 x keys buckets
 *                      continuously (the baseline: while sk_rhash
 *                      resizes).  Every pair is recorded, for both tables
 *                      alike (up to 2^22 pairs; beyond that the worst
 *                      replaces the last): worst and p99.9.  The grace
 *                      period before objects are reused comes once per
 *                      LAT_POOL pairs, untimed.
 *  hash-grow           2 threads insert 2^20 keys into a table of one
 *                      bucket (automatic resizing) while 1 thread looks
 *                      up: the total time and the worst single insert
 *                      (the baseline: for as long as sk_rhash took).
 *
 * Both also report the worst operation that its thread RAN THROUGH: on 2
 * CPUs, 3 or 4 runnable threads are preempted for a scheduler tick (4 ms)
 * now and then, inside whatever they time, with any table and with none
 * (the baseline).  A thread reads its count of involuntary context
 * switches (getrusage(RUSAGE_THREAD), about 0.3 us) after every 64
 * operations and right after every operation over 50 us; an operation
 * counts for this figure when the count did not change across its window
 * (it and the at most 63 before it).  Sleeps inside the table (a futex
 * wait, a nanosleep) are voluntary switches and count; a sched_yield()
 * that switches would be involuntary (sk_rhash does not yield).  A vCPU
 * the hypervisor stops is not seen.
 */
#define _GNU_SOURCE
#include "hash.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "scalekit/rcu.h"

static const char *const lat_impls[] = { "rhash", "urcu-lfht", NULL };

/* ---- the empty adapter (baseline) ----------------------------------- */

static void empty_op(void)
{
}

static void empty_obj(struct hobj *o)
{
	(void)o;
	sk_barrier(); /* nothing to time */
}

static void empty_key(uint64_t key)
{
	(void)key;
}

const struct sk_bench_hash_ops sk_bench_hash_empty = {
	.name = "empty",
	.thread_init = empty_op,
	.thread_exit = empty_op,
	.insert = empty_obj,
	.remove = empty_obj,
	.lookup = empty_key,
	.synchronize = empty_op,
};

/* The table a run of t works on: the baseline uses sk_rhash's. */
static const struct sk_bench_hash_ops *host_of(const struct sk_bench_hash_ops *t)
{
	return t == &sk_bench_hash_empty ? &sk_bench_hash_rhash : t;
}

/* ---- samples -------------------------------------------------------- */

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

/* ---- operations the thread ran through (see the top) ---------------- */

#define RAN_WINDOW 64		/* operations per look at the count */
#define RAN_SLOW_NS 50000u	/* an operation this slow ends its window */

struct ran {
	uint64_t worst;	 /* ns: worst operation not preempted */
	uint64_t wmax;	 /* ns: worst of the open window */
	long ivcsw;	 /* involuntary switches when the window opened */
	unsigned int n;	 /* operations in the open window */
};

static long ran_ivcsw(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		sk_bench_hash_die("getrusage(RUSAGE_THREAD) failed");
	return ru.ru_nivcsw;
}

static void ran_start(struct ran *r)
{
	memset(r, 0, sizeof(*r));
	r->ivcsw = ran_ivcsw();
}

/* Close the open window: its worst counts if no preemption fell in it. */
static void ran_close(struct ran *r)
{
	long now = ran_ivcsw();

	if (now == r->ivcsw && r->wmax > r->worst)
		r->worst = r->wmax;
	r->ivcsw = now;
	r->n = 0;
	r->wmax = 0;
}

/* Account one operation of ns nanoseconds. */
static inline void ran_add(struct ran *r, uint64_t ns)
{
	r->wmax = ns > r->wmax ? ns : r->wmax;
	if (++r->n >= RAN_WINDOW || ns >= RAN_SLOW_NS)
		ran_close(r);
}

static void ran_end(struct ran *r)
{
	if (r->n)
		ran_close(r);
}

/*
 * Record "the rhash figure (a worst case, us) of row <= limit_us" as a
 * target (at most); what names the figure.
 */
static void worst_target(struct sk_bench_results *res,
			 const struct sk_bench_row *row, const char *what,
			 double limit_us, const char *id)
{
	struct sk_bench_target t;

	memset(&t, 0, sizeof(t));
	snprintf(t.what, sizeof(t.what), "%s %s: rhash %s (us) <= %.0f",
		 row->scenario, row->variant, what, limit_us);
	snprintf(t.id, sizeof(t.id), "%s", id);
	snprintf(t.ratio_name, sizeof(t.ratio_name), "rhash %s / %.0f us",
		 what, limit_us);
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

/* ---- the shared body ------------------------------------------------ */

/*
 * A latency scenario: three rows (a, b, and c: the worst operation that
 * its thread ran through, in us) of one run per table.  once() runs table
 * t (or the baseline sk_bench_hash_empty) and stores the run's figures in
 * *a, *b and *c; for the baseline, *a holds sk_rhash's figure of the same
 * repetition on entry (hash-grow runs that long).
 */
struct lat_scenario {
	const char *name, *variant;
	int threads;
	const char *unit_a, *title_a, *unit_b, *title_b, *title_c;
	int (*once)(const struct sk_bench_config *cfg,
		    const struct sk_bench_hash_ops *t, double *a, double *b,
		    double *c);
	const char *note; /* printf format of the baseline's figures */
	void (*targets)(struct sk_bench_results *res, struct sk_bench_row *a,
			struct sk_bench_row *b, struct sk_bench_row *c);
};

static void lat_rep(const struct sk_bench_config *cfg,
		    const struct lat_scenario *sc, struct sk_bench_row **r,
		    int rep)
{
	struct sk_bench_row *a = r[0], *b = r[1], *c = r[2];
	int i;

	for (i = 0; i < a->nimpl; i++) {
		if (a->na[i])
			continue;
		if (sc->once(cfg, sk_bench_hash_ops_of(a->impl[i]),
			     &a->rep[i][rep], &b->rep[i][rep],
			     &c->rep[i][rep]))
			sk_bench_hash_die("cannot run (out of memory, or no "
					  "thread)");
		sk_bench_progress("%s: rep %d/%d, %-10s %s %8.1f, %s %8.1f",
				  sc->name, rep + 1, cfg->reps,
				  a->impl[i]->name, sc->unit_a,
				  a->rep[i][rep], sc->unit_b, b->rep[i][rep]);
	}
}

static int lat_scenario_run(const struct sk_bench_config *cfg,
			    struct sk_bench_results *res,
			    const struct lat_scenario *sc)
{
	struct sk_bench_row *r[3];
	double *ba = calloc((size_t)cfg->reps * 3, sizeof(*ba));
	double *bb = ba + cfg->reps, *bc = bb + cfg->reps;
	int rep;

	if (!ba)
		sk_bench_hash_die("out of memory");
	r[0] = sk_bench_row_add(res, sc->name, sc->variant, sc->unit_a,
				sc->title_a, sc->threads, 1, lat_impls,
				cfg->reps);
	r[1] = sk_bench_row_add(res, sc->name, sc->variant, sc->unit_b,
				sc->title_b, sc->threads, 1, lat_impls,
				cfg->reps);
	r[2] = sk_bench_row_add(res, sc->name, sc->variant, "us worst ran",
				sc->title_c, sc->threads, 1, lat_impls,
				cfg->reps);
	for (rep = 0; rep < cfg->reps; rep++) {
		lat_rep(cfg, sc, r, rep);
		ba[rep] = r[0]->na[0] ? cfg->run_ns / 1e6 : r[0]->rep[0][rep];
		if (sc->once(cfg, &sk_bench_hash_empty, &ba[rep], &bb[rep],
			     &bc[rep]))
			sk_bench_hash_die("cannot run the baseline");
	}
	sk_bench_note_add(res, sc->note, sk_bench_hash_median(ba, cfg->reps),
			  sk_bench_hash_median(bb, cfg->reps),
			  sk_bench_hash_median(bc, cfg->reps));
	free(ba);
	sc->targets(res, r[0], r[1], r[2]);
	return 0;
}

/* ---- hash-update-resize ---------------------------------------------- */

/*
 * Objects the updater cycles through: a removed object is inserted again
 * only after a grace period, which the loop waits for (untimed) once per
 * LAT_POOL pairs.  Large, so that both tables' pairs are timed alike: with
 * 4096, cds_lfht's grace period waited for its resizer's whole resize
 * (its resize runs in read-side sections) and ended the window after
 * 4096 pairs, while sk_rhash's did not.
 */
#define LAT_POOL (1L << 20)

/* The resizer: base <-> 2 * base buckets until stopped. */
struct lat_resizer {
	pthread_t tid;
	const struct sk_bench_hash_ops *t;
	unsigned long base;
	int stop;
};

static void *lat_resizer_main(void *arg)
{
	struct lat_resizer *rz = arg;

	rz->t->thread_init();
	while (!__atomic_load_n(&rz->stop, __ATOMIC_RELAXED)) {
		rz->t->resize(2 * rz->base);
		rz->t->resize(rz->base);
	}
	rz->t->thread_exit();
	return NULL;
}

/* One insert+remove pair of o through t, timed in ns. */
static uint64_t timed_pair(const struct sk_bench_hash_ops *t, struct hobj *o)
{
	uint64_t t0 = sk_bench_now_ns();

	t->insert(o);
	t->remove(o);
	return sk_bench_now_ns() - t0;
}

/* Time pairs through t on this thread for run_ns into l and rn. */
static void timed_pairs(const struct sk_bench_hash_ops *t, struct hobj *pool,
			uint64_t run_ns, struct lat *l, struct ran *rn)
{
	uint64_t end = sk_bench_now_ns() + run_ns, d;
	long i;

	t->thread_init();
	l->n = 0;
	ran_start(rn);
	for (i = 0; sk_bench_now_ns() < end; i++) {
		d = timed_pair(t, &pool[i % LAT_POOL]);
		lat_add(l, d);
		ran_add(rn, d);
		/* Removed objects are reused after a grace period. */
		if (i % LAT_POOL == LAT_POOL - 1) {
			ran_end(rn);
			t->synchronize();
			ran_start(rn);
		}
	}
	ran_end(rn);
	t->synchronize();
	t->thread_exit();
}

/*
 * One run: pairs of objects outside the key set through t for run_ns
 * while a resizer thread resizes t's table (the baseline: sk_rhash's).
 * *worst, *p999 and *ran (the worst pair the thread ran through) in us.
 */
static int update_resize_once(const struct sk_bench_config *cfg,
			      const struct sk_bench_hash_ops *t, double *worst,
			      double *p999, double *ran)
{
	static struct lat l = { .cap = 1UL << 22 };
	struct ran rn;
	struct lat_resizer rz = { .t = host_of(t),
				  .base = (unsigned long)sk_bench_hash_w.nkeys };
	struct hobj *pool = aligned_alloc(64, sizeof(*pool) * (size_t)LAT_POOL);
	long i;
	int err;

	if (!l.ns)
		l.ns = malloc(l.cap * sizeof(*l.ns));
	if (!pool || !l.ns) {
		free(pool);
		return -ENOMEM;
	}
	memset(pool, 0, sizeof(*pool) * (size_t)LAT_POOL);
	for (i = 0; i < LAT_POOL; i++)
		pool[i].key = sk_bench_hash_key(
			(uint64_t)sk_bench_hash_w.nkeys + (uint64_t)i);
	err = pthread_create(&rz.tid, NULL, lat_resizer_main, &rz);
	if (err) {
		free(pool);
		return -err;
	}
	timed_pairs(t, pool, cfg->run_ns, &l, &rn);
	__atomic_store_n(&rz.stop, 1, __ATOMIC_RELAXED);
	pthread_join(rz.tid, NULL);
	free(pool);
	sk_bench_progress("hash-update-resize: %s: %zu pairs timed, all "
			  "recorded%s", t->name, l.n,
			  l.n == l.cap ? " (the buffer filled: the worst "
					 "kept)" : "");
	lat_stats(&l, worst, p999);
	*ran = (double)rn.worst / 1e3;
	return 0;
}

static void update_resize_targets(struct sk_bench_results *res,
				  struct sk_bench_row *worst,
				  struct sk_bench_row *p999,
				  struct sk_bench_row *ran)
{
	worst_target(res, worst, "worst", 1000.0, "hash-update-resize-worst");
	worst_target(res, ran, "worst ran through", 1000.0, "hash-update-resize-worst-ran");
	sk_bench_ratio_target(res, p999, "rhash", "urcu-lfht", 1.0, 1,
			      "hash-update-resize p99.9: us rhash / urcu-lfht",
			      "hash-update-resize-p99.9");
}

int sk_bench_hash_update_resize_run(const struct sk_bench_config *cfg,
				    struct sk_bench_results *res)
{
	struct lat_scenario sc = {
		.name = "hash-update-resize",
		.variant = cfg->quick ? "2^16 keys" : "2^20 keys",
		.threads = 1,
		.unit_a = "us worst",
		.title_a = "hash-update-resize: WORST latency of an "
			   "insert+remove pair, in us, while another thread "
			   "resizes keys <-> 2 x keys buckets continuously "
			   "(lower is better)",
		.unit_b = "us p99.9",
		.title_b = "hash-update-resize: p99.9 latency of an "
			   "insert+remove pair, in us, while another thread "
			   "resizes keys <-> 2 x keys buckets continuously "
			   "(lower is better)",
		.title_c = "hash-update-resize: WORST latency of an "
			   "insert+remove pair that its thread RAN THROUGH (no "
			   "involuntary context switch in its window of 64 "
			   "pairs), in us, while another thread resizes "
			   "(lower is better)",
		.once = update_resize_once,
		.note = "hash-update-resize: baseline, the same loop timing "
			"an EMPTY section (no table call) while sk_rhash "
			"resizes: worst %.1f us, p99.9 %.2f us, worst ran "
			"through %.1f us (medians over repetitions): what the "
			"clock and the scheduler alone cost on this machine",
		.targets = update_resize_targets,
	};
	long nkeys = cfg->quick ? 1L << 16 : 1L << 20;
	int err;

	if (sk_bench_hash_build(nkeys, (unsigned long)nkeys, 1, NULL))
		return -1;
	sk_bench_progress("hash-update-resize: %s built; 3 runs x %d reps, "
			  "%.0f ms each",
			  sc.variant, cfg->reps, cfg->run_ns / 1e6);
	err = lat_scenario_run(cfg, res, &sc);
	sk_bench_hash_free();
	return err;
}

/* ---- hash-grow ------------------------------------------------------- */

/*
 * A run is cut this long after it started: cds_lfht's automatic grow
 * sometimes falls behind (its table stays small, each insert walks a
 * long chain) and one of its runs took 217 s, another over 12 minutes
 * (stopped).  A cut run's total and worst are lower bounds, so the ratio
 * rhash / urcu-lfht of a cut peer run is an upper bound of the true one.
 */
#define GROW_CUT_NS (20ULL * 1000000000ULL)

static int grow_cuts; /* runs cut so far (a note) */

/* One hash-grow run: 2 inserters and 1 looker on table t. */
struct grow_run {
	const struct sk_bench_hash_ops *t;
	long nkeys;	 /* inserted in all */
	int inserters;	 /* threads */
	int done;	 /* inserters finished */
	int cut;	 /* an inserter stopped at cut_ns */
	uint64_t cut_ns; /* now + GROW_CUT_NS at the start */
	uint64_t worst;	 /* worst single insert (ns), max over threads */
	uint64_t ran;	 /* worst insert its thread ran through (ns), max */
	uint64_t end_ns; /* the baseline: time sections until then */
	int next_id;
};

/* *p = max(*p, v); relaxed: the threads are joined before it is read. */
static void atomic_max(uint64_t *p, uint64_t v)
{
	uint64_t w = __atomic_load_n(p, __ATOMIC_RELAXED);

	while (v > w && !__atomic_compare_exchange_n(p, &w, v, 0,
						     __ATOMIC_RELAXED,
						     __ATOMIC_RELAXED))
		;
}

static void *grow_inserter(void *arg)
{
	struct grow_run *g = arg;
	int id = __atomic_fetch_add(&g->next_id, 1, __ATOMIC_RELAXED);
	int empty = g->t == &sk_bench_hash_empty;
	long i, per = g->nkeys / g->inserters;
	uint64_t worst = 0;
	struct ran rn;

	g->t->thread_init();
	ran_start(&rn);
	for (i = id * per; empty ? sk_bench_now_ns() < g->end_ns
				 : i < (id + 1) * per;
	     i++) {
		uint64_t t0 = sk_bench_now_ns(), d;

		if (!empty && t0 > g->cut_ns) {
			/* Relaxed: read after pthread_join(). */
			__atomic_store_n(&g->cut, 1, __ATOMIC_RELAXED);
			break;
		}
		g->t->insert(&sk_bench_hash_w.objs[i % g->nkeys]);
		d = sk_bench_now_ns() - t0;
		worst = d > worst ? d : worst;
		ran_add(&rn, d);
	}
	ran_end(&rn);
	g->t->thread_exit();
	atomic_max(&g->worst, worst);
	atomic_max(&g->ran, rn.worst);
	__atomic_fetch_add(&g->done, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* The looker (on the baseline: lookups of the empty sk_rhash). */
static void *grow_looker(void *arg)
{
	struct grow_run *g = arg;
	const struct sk_bench_hash_ops *t = host_of(g->t);

	sk_bench_hash_seed_thread();
	t->thread_init();
	while (__atomic_load_n(&g->done, __ATOMIC_RELAXED) < g->inserters)
		t->lookup(sk_bench_hash_key(sk_bench_hash_rand(&sk_bench_hash_rng) %
					    (uint64_t)g->nkeys));
	t->thread_exit();
	return NULL;
}

/*
 * One hash-grow run of t: *total_ms, *worst_us (the worst insert) and
 * *ran_us (the worst one its thread ran through).  The baseline times
 * empty sections for *total_ms (as given) instead.
 */
static int grow_once(const struct sk_bench_config *cfg,
		     const struct sk_bench_hash_ops *t, double *total_ms,
		     double *worst_us, double *ran_us)
{
	long nkeys = cfg->quick ? 1L << 12 : 1L << 20;
	struct grow_run g = { .t = t, .nkeys = nkeys, .inserters = 2 };
	pthread_t th[3];
	uint64_t t0;
	int i;

	if (sk_bench_hash_build(nkeys, 1, 0, host_of(t)))
		return -ENOMEM;
	t0 = sk_bench_now_ns();
	g.end_ns = t0 + (uint64_t)(*total_ms * 1e6);
	g.cut_ns = t0 + GROW_CUT_NS;
	for (i = 0; i < 3; i++)
		if (pthread_create(&th[i], NULL,
				   i < 2 ? grow_inserter : grow_looker, &g))
			sk_bench_hash_die("cannot start a hash-grow thread");
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	*total_ms = (double)(sk_bench_now_ns() - t0) / 1e6;
	*worst_us = (double)g.worst / 1e3;
	*ran_us = (double)g.ran / 1e3;
	if (g.cut) {
		grow_cuts++;
		sk_bench_progress("hash-grow: %s cut at %.0f s (not all keys "
				  "inserted): its figures are lower bounds",
				  t->name, GROW_CUT_NS / 1e9);
	}
	if (host_of(t)->barrier)
		host_of(t)->barrier(); /* the last background grow */
	sk_bench_hash_free();
	return 0;
}

static void grow_targets(struct sk_bench_results *res,
			 struct sk_bench_row *total, struct sk_bench_row *worst,
			 struct sk_bench_row *ran)
{
	sk_bench_ratio_target(res, total, "rhash", "urcu-lfht", 1.0, 1,
			      "hash-grow total: ms rhash / urcu-lfht",
			      "hash-grow-total");
	worst_target(res, worst, "worst", 1000.0, "hash-grow-worst");
	worst_target(res, ran, "worst ran through", 1000.0, "hash-grow-worst-ran");
}

int sk_bench_hash_grow_run(const struct sk_bench_config *cfg,
			   struct sk_bench_results *res)
{
	/* --quick: cds_lfht grows from 1 bucket slowly (seconds at 2^16). */
	struct lat_scenario sc = {
		.name = "hash-grow",
		.variant = cfg->quick ? "2^12 keys" : "2^20 keys",
		.threads = 3,
		.unit_a = "ms total",
		.title_a = "hash-grow: TOTAL time, in ms, to insert the keys "
			   "into a table of 1 bucket, 2 inserting threads + 1 "
			   "looking up (lower is better)",
		.unit_b = "us worst insert",
		.title_b = "hash-grow: WORST single insert, in us, inserting "
			   "the keys into a table of 1 bucket, 2 inserting "
			   "threads + 1 looking up (lower is better)",
		.title_c = "hash-grow: WORST single insert that its thread "
			   "RAN THROUGH (no involuntary context switch in its "
			   "window of 64 inserts), in us, 2 inserting threads "
			   "+ 1 looking up (lower is better)",
		.once = grow_once,
		.note = "hash-grow: baseline, the same 2 + 1 threads timing "
			"EMPTY sections instead of inserts for as long as "
			"sk_rhash took (%.0f ms; the looker on an empty "
			"sk_rhash): worst %.1f us, worst ran through %.1f us "
			"(medians over repetitions): "
			"what the clock and the scheduler alone cost on this "
			"machine; sk_rhash adds the callback worker that "
			"migrates",
		.targets = grow_targets,
	};

	int err;

	grow_cuts = 0;
	err = lat_scenario_run(cfg, res, &sc);
	if (grow_cuts)
		sk_bench_note_add(res, "hash-grow: %d run(s) cut at %.0f s "
				  "before every key was inserted (their total "
				  "and worst are lower bounds)",
				  grow_cuts, GROW_CUT_NS / 1e9);
	return err;
}
