/* SPDX-License-Identifier: MIT */
/*
 * The benchmark harness: the adapter registry, reader and idle threads,
 * clocks, and the statistics of repeated measurements.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- adapters ------------------------------------------------------------ */

const struct sk_bench_rcu_ops *const sk_bench_rcu_all[] = {
	&sk_bench_scalekit_ops,
	&sk_bench_scalekit_qsbr_ops,
	&sk_bench_scalekit_qsbr_bare_ops,
	&sk_bench_scalekit_exp_ops,
	&sk_bench_scalekit_poll_ops,
	&sk_bench_scalekit_free_ops,
	&sk_bench_scalekit_pcpu_ops,
	&sk_bench_scalekit_srcu_ops,
	&sk_bench_scalekit_cxx_ops,
	&sk_bench_scalekit_std_ops,
	&sk_bench_scalekit_retire_ops,
	&sk_bench_urcu_memb_ops,
	&sk_bench_urcu_memb_pcpu_ops,
	&sk_bench_urcu_qsbr_ops,
	&sk_bench_urcu_qsbr_bare_ops,
	&sk_bench_scalekit_qsbr_every_ops,
	&sk_bench_urcu_qsbr_every_ops,
	&sk_bench_urcu_bp_ops,
	&sk_bench_ck_epoch_ops,
	&sk_bench_pthread_rwlock_ops,
	&sk_bench_pthread_mutex_ops,
	&sk_bench_rhash_ops,
	&sk_bench_rhash_resizing_ops,
	&sk_bench_rhash_beside_ops,
	&sk_bench_rhash_gp_ops,
	&sk_bench_urcu_lfht_ops,
	&sk_bench_urcu_lfht_resizing_ops,
	&sk_bench_rwlock_rb_ops,
	&sk_bench_rwlock_rb_wr_ops,
	&sk_bench_seqlock_ops,
	&sk_bench_seqlock_wr_ops,
	&sk_bench_ck_spinlock_ops,
	&sk_bench_elided_mutex_ops,
	&sk_bench_elided_spinlock_ops,
	&sk_bench_elided_rwlock_ops,
	&sk_bench_glibc_elided_ops,
	NULL,
};

const struct sk_bench_scenario sk_bench_scenarios[] = {
	{ "read", "ns per read_lock+dereference+read_unlock, 1..N threads",
	  sk_bench_read_run },
	{ "sync", "grace-period latency p50/p99 with busy and idle readers",
	  sk_bench_sync_run },
	{ "sync-many",
	  "grace-period latency p50/p99 with 0, 64 and 1,024 idle "
	  "registered threads, 0 and 8 busy readers, vs urcu-memb",
	  sk_bench_sync_many_run },
	{ "gp-latency",
	  "grace-period wait p50/p90/p99/max, one busy reader, every "
	  "grace-period primitive and peer",
	  sk_bench_gp_latency_run },
	{ "expedited",
	  "expedited vs normal grace-period latency, 0 and 1 busy "
	  "reader",
	  sk_bench_expedited_run },
	{ "poll", "polled grace periods: get+poll cost, start_poll latency",
	  sk_bench_poll_run },
	{ "sync-qsbr-every",
	  "QSBR read loop with a quiescent state after every section, vs "
	  "urcu-qsbr",
	  sk_bench_qsbr_every_run },
	{ "update-load",
	  "one reader's throughput while an updater runs synchronize in a "
	  "loop, vs urcu-memb",
	  sk_bench_update_load_run },
	{ "uperf",
	  "1 and 2 updaters, no readers, synchronize per update, vs "
	  "urcu-memb and urcu-qsbr",
	  sk_bench_uperf_run },
	{ "srcu-read",
	  "ns per SRCU read_lock+dereference+read_unlock, 1..N "
	  "threads",
	  sk_bench_srcu_read_run },
	{ "srcu-sync",
	  "sk_synchronize_srcu latency p50/p99, 0 and 1 busy "
	  "reader",
	  sk_bench_srcu_sync_run },
	{ "hash-lookup",
	  "sk_rhash vs cds_lfht lookups/s, 2^16 and 2^20 keys, 1..N "
	  "threads",
	  sk_bench_hash_lookup_run },
	{ "hash-resize",
	  "sk_rhash lookups/s while another thread resizes, vs "
	  "steady, vs a resizer of a second table and vs grace periods "
	  "alone; cds_lfht resizing vs steady",
	  sk_bench_hash_resize_run },
	{ "hash-update",
	  "sk_rhash vs cds_lfht insert+remove/s, 1..N threads",
	  sk_bench_hash_update_run },
	{ "hash-update-resize",
	  "worst and p99.9 insert+remove latency while another thread "
	  "resizes, sk_rhash vs cds_lfht",
	  sk_bench_hash_update_resize_run },
	{ "hash-grow",
	  "inserting 2^20 keys from 1 bucket (2 inserters + 1 looker): "
	  "total and worst insert, sk_rhash vs cds_lfht",
	  sk_bench_hash_grow_run },
	{ "locks",
	  "uncontended lock+unlock: scalekit locks vs pthread_mutex, ck",
	  sk_bench_locks_run },
	{ "hash-under-lock",
	  "hash table under one lock, 90% lookups, 1 and 2 threads, vs "
	  "sk_rhash",
	  sk_bench_hash_under_lock_run },
	{ "rwlock-read",
	  "read throughput of rwlock_rb, seqlock, pthread_rwlock, RCU; 1 "
	  "and 2 readers",
	  sk_bench_rwlock_read_run },
	{ "list",
	  "1,000-entry list traversals/s, RCU vs pthread rwlock, 1..N "
	  "threads",
	  sk_bench_list_run },
	{ "urcu-compat",
	  "liburcu's API on scalekit (libscalekit-urcu): read pair vs "
	  "urcu-memb and scalekit, 1 and 2 threads",
	  sk_bench_urcu_compat_run },
	/*
	 * Last: it starts every library's callback thread and leaves the
	 * heap larger; no other scenario should run after that but "c++",
	 * which queues scalekit callbacks too.
	 */
	{ "callbacks",
	  "call_rcu end to end: N callbacks + barrier, 1..N "
	  "threads",
	  sk_bench_callbacks_run },
	{ "c++",
	  "the C++ layer against the C calls it wraps: read guard, "
	  "rcu_obj_base::retire",
	  sk_bench_cpp_run },
	/* After callbacks too: it queues every library's deferred frees. */
	{ "sweep",
	  "every read-side primitive x 1, 2, 4, 8 threads x 100/99/90/50% "
	  "reads, and the chooser (also --sweep)",
	  sk_bench_sweep_run },
	{ NULL, NULL, NULL },
};

static struct sk_bench_obj sk_bench_the_obj = { .val = 42 };
struct sk_bench_obj *sk_bench_gp;

const struct sk_bench_rcu_ops *sk_bench_rcu_find(const char *name)
{
	int i;

	for (i = 0; sk_bench_rcu_all[i]; i++)
		if (strcmp(sk_bench_rcu_all[i]->name, name) == 0)
			return sk_bench_rcu_all[i];
	fprintf(stderr, "scalekit bench: internal error: no adapter '%s'\n",
		name);
	abort();
}

void sk_bench_setup(void)
{
	static int done;
	int i;

	if (done)
		return;
	done = 1;
	/* Published before any reader thread exists: thread creation orders it. */
	__atomic_store_n(&sk_bench_gp, &sk_bench_the_obj, __ATOMIC_RELEASE);
	for (i = 0; sk_bench_rcu_all[i]; i++) {
		const struct sk_bench_rcu_ops *ops = sk_bench_rcu_all[i];

		if (!ops->unavailable && ops->init)
			ops->init();
	}
}

/* ---- clocks, CPUs, progress ----------------------------------------------- */

void sk_bench_sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u),
			       (long)(ns % 1000000000u) };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

uint64_t sk_bench_thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the occupancy gate (bench.h) ------------------------------------------ */

/* Counts since the last sk_bench_occ_note(); main thread only. */
static struct {
	int runs;     /* gated runs */
	int repeated; /* runs measured more than once */
	int retried;  /* extra measurements in all */
	int short_;   /* runs that stood below SK_BENCH_OCC_MIN */
	double worst; /* the lowest occupancy that stood */
} occ = { 0, 0, 0, 0, 1.0 };

int sk_bench_occ_gated(int n)
{
	if (n > sk_bench_ncpus())
		return 0;
	occ.runs++;
	return 1;
}

int sk_bench_occ_retry(int attempt, double o)
{
	if (o >= SK_BENCH_OCC_MIN)
		return 0;
	if (attempt < SK_BENCH_OCC_TRIES) {
		occ.repeated += attempt == 1;
		occ.retried++;
		sk_bench_progress("occupancy gate: a thread had %.0f%% of a "
				  "CPU; run %d of at most %d next",
				  o * 100, attempt + 1, SK_BENCH_OCC_TRIES);
		return 1;
	}
	occ.short_++;
	if (o < occ.worst)
		occ.worst = o;
	return 0;
}

void sk_bench_occ_note(struct sk_bench_results *res, const char *scenario)
{
	if (occ.retried || occ.short_)
		sk_bench_note_add(
			res,
			"%s: occupancy gate: %d of %d runs measured again "
			"(%d extra runs) because a thread had less than "
			"%.0f%% of a CPU (another process ran); %d stood "
			"below it after %d tries (lowest %.2f)",
			scenario, occ.repeated, occ.runs, occ.retried,
			SK_BENCH_OCC_MIN * 100, occ.short_, SK_BENCH_OCC_TRIES,
			occ.short_ ? occ.worst : 1.0);
	occ.runs = occ.repeated = occ.retried = occ.short_ = 0;
	occ.worst = 1.0;
}

/* The CPUs of the affinity mask at first use, for round-robin pinning. */
static int cpu_list[CPU_SETSIZE];
static int cpu_count;

/* --pin: sk_bench_attr_pin() and sk_bench_pin_main() pin; 0: they do not. */
static int pin_threads;

void sk_bench_set_pinning(int on)
{
	pin_threads = on;
}

int sk_bench_pinning(void)
{
	return pin_threads;
}

static void cpus_init(void)
{
	cpu_set_t set;
	int c;

	if (cpu_count)
		return;
	if (sched_getaffinity(0, sizeof(set), &set) == 0) {
		for (c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				cpu_list[cpu_count++] = c;
	}
	if (!cpu_count)
		cpu_list[cpu_count++] = -1; /* unknown: do not pin */
}

int sk_bench_ncpus(void)
{
	cpus_init();
	return cpu_list[0] < 0 ? 1 : cpu_count;
}

void sk_bench_progress(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* One write per line, so lines stay whole next to other output. */
	fprintf(stderr, "bench: %s\n", line);
}

int sk_bench_thread_counts(int max, int from_zero, int *out, int cap)
{
	int n = 0, t;

	if (from_zero && n < cap)
		out[n++] = 0;
	for (t = 1; t < max && n < cap; t *= 2)
		out[n++] = t;
	if (max >= 1 && n < cap)
		out[n++] = max;
	return n;
}

void sk_bench_attr_pin(pthread_attr_t *attr, int i)
{
	if (pin_threads)
		sk_bench_attr_pin_always(attr, i);
}

void sk_bench_attr_pin_always(pthread_attr_t *attr, int i)
{
	cpu_set_t set;

	cpus_init();
	if (cpu_list[0] < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu_list[i % cpu_count], &set);
	pthread_attr_setaffinity_np(attr, sizeof(set), &set);
}

/* The main thread's affinity before sk_bench_pin_main(); main thread only. */
static cpu_set_t main_saved;
static int main_pinned;

void sk_bench_pin_main(int i)
{
	cpu_set_t set;

	cpus_init();
	if (!pin_threads || cpu_list[0] < 0 || main_pinned)
		return;
	if (sched_getaffinity(0, sizeof(main_saved), &main_saved) != 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu_list[i % cpu_count], &set);
	if (sched_setaffinity(0, sizeof(set), &set) == 0)
		main_pinned = 1;
}

void sk_bench_unpin_main(void)
{
	if (!main_pinned)
		return;
	sched_setaffinity(0, sizeof(main_saved), &main_saved);
	main_pinned = 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile p (0..1] of the sorted v[0..n-1]. */
static uint64_t percentile(const uint64_t *v, size_t n, double p)
{
	size_t k = (size_t)ceil(p * (double)n);

	return v[k ? k - 1 : 0];
}

void sk_bench_latency(uint64_t *lat, size_t n, double *p50_us, double *p99_us)
{
	qsort(lat, n, sizeof(*lat), cmp_u64);
	*p50_us = (double)percentile(lat, n, 0.50) / 1e3;
	*p99_us = (double)percentile(lat, n, 0.99) / 1e3;
}

size_t sk_bench_time_calls(void (*fn)(void), uint64_t run_ns, size_t min_calls,
			   size_t max_calls, uint64_t *lat, double *p50_us,
			   double *p99_us)
{
	uint64_t start, t0, t1;
	size_t n = 0;

	start = sk_bench_now_ns();
	for (;;) {
		t0 = sk_bench_now_ns();
		fn();
		t1 = sk_bench_now_ns();
		lat[n++] = t1 - t0;
		if (n == max_calls)
			break;
		if (t1 - start >= run_ns &&
		    (n >= min_calls || t1 - start >= 10 * run_ns))
			break;
	}
	sk_bench_latency(lat, n, p50_us, p99_us);
	return n;
}

/* ---- reader threads -------------------------------------------------------- */

struct sk_bench_reader {
	struct sk_bench_readers *group;
	pthread_t tid;
	struct sk_bench_reader_stat st; /* written by the thread before exit */
} __attribute__((aligned(64)));

struct sk_bench_readers {
	const struct sk_bench_rcu_ops *ops;
	int n;
	/* Written by the main thread, read by the readers; own cache line. */
	int go __attribute__((aligned(64)));
	int stop;
	/* Incremented by each reader once it is registered. */
	int ready __attribute__((aligned(64)));
	struct sk_bench_reader *t;
};

static void *reader_main(void *arg)
{
	struct sk_bench_reader *me = arg;
	struct sk_bench_readers *g = me->group;
	const struct sk_bench_rcu_ops *ops = g->ops;
	uint64_t sections = 0, t0, t1, c0, c1;

	if (ops->thread_init)
		ops->thread_init();
	__atomic_fetch_add(&g->ready, 1, __ATOMIC_RELEASE);
	/* Yield while waiting: readers may outnumber CPUs. */
	while (!__atomic_load_n(&g->go, __ATOMIC_ACQUIRE))
		sched_yield();
	t0 = sk_bench_now_ns();
	c0 = sk_bench_thread_cpu_ns();
	do {
		ops->read_section(SK_BENCH_CHUNK);
		sections += SK_BENCH_CHUNK;
	} while (!__atomic_load_n(&g->stop, __ATOMIC_RELAXED));
	c1 = sk_bench_thread_cpu_ns();
	t1 = sk_bench_now_ns();
	if (ops->thread_exit)
		ops->thread_exit();
	me->st.sections = sections;
	me->st.ns = t1 - t0;
	me->st.cpu_ns = c1 - c0;
	return NULL;
}

int sk_bench_readers_start(struct sk_bench_readers **out,
			   const struct sk_bench_rcu_ops *ops, int n)
{
	struct sk_bench_readers *g;
	pthread_attr_t attr;
	int i, err = 0;

	cpus_init();
	*out = NULL;
	g = aligned_alloc(64, sizeof(*g));
	if (!g)
		return -ENOMEM;
	memset(g, 0, sizeof(*g));
	g->ops = ops;
	if (n) {
		g->t = aligned_alloc(64, sizeof(*g->t) * (size_t)n);
		if (!g->t) {
			free(g);
			return -ENOMEM;
		}
		memset(g->t, 0, sizeof(*g->t) * (size_t)n);
	}
	for (i = 0; i < n; i++) {
		g->t[i].group = g;
		pthread_attr_init(&attr);
		sk_bench_attr_pin(&attr, i);
		err = pthread_create(&g->t[i].tid, &attr, reader_main,
				     &g->t[i]);
		pthread_attr_destroy(&attr);
		if (err) {
			fprintf(stderr,
				"scalekit bench: cannot create reader thread "
				"%d of %d: %s\n",
				i + 1, n, strerror(err));
			break;
		}
		g->n++;
	}
	while (__atomic_load_n(&g->ready, __ATOMIC_ACQUIRE) < g->n)
		sched_yield();
	__atomic_store_n(&g->go, 1, __ATOMIC_RELEASE);
	if (err) {
		sk_bench_readers_stop(g, NULL);
		return -err;
	}
	*out = g;
	return 0;
}

void sk_bench_readers_stop(struct sk_bench_readers *g,
			   struct sk_bench_reader_stat *st)
{
	int i;

	if (!g)
		return;
	__atomic_store_n(&g->stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < g->n; i++) {
		pthread_join(g->t[i].tid, NULL);
		if (st)
			st[i] = g->t[i].st;
	}
	free(g->t);
	free(g);
}

/* ---- idle registered threads ------------------------------------------------ */

/* Small stacks: a thousand idle threads should not need a gigabyte. */
#define SK_BENCH_IDLE_STACK (64 * 1024)

struct sk_bench_idle {
	const struct sk_bench_rcu_ops *const *ops;
	int nops;
	int n; /* threads created */
	pthread_t *tid;
	/* Guarded by lock. */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* ready changed, or release set */
	int ready;	     /* threads registered and about to block */
	int release;	     /* 1: the threads may unregister and exit */
};

static void *idle_main(void *arg)
{
	struct sk_bench_idle *idle = arg;
	int i;

	for (i = 0; i < idle->nops; i++) {
		if (idle->ops[i]->thread_init)
			idle->ops[i]->thread_init();
		if (idle->ops[i]->thread_offline)
			idle->ops[i]->thread_offline();
	}
	pthread_mutex_lock(&idle->lock);
	idle->ready++;
	pthread_cond_broadcast(&idle->cond);
	while (!idle->release)
		pthread_cond_wait(&idle->cond, &idle->lock);
	pthread_mutex_unlock(&idle->lock);
	for (i = idle->nops - 1; i >= 0; i--)
		if (idle->ops[i]->thread_exit)
			idle->ops[i]->thread_exit();
	return NULL;
}

int sk_bench_idle_start(struct sk_bench_idle **out,
			const struct sk_bench_rcu_ops *const *ops, int nops,
			int n)
{
	struct sk_bench_idle *idle;
	pthread_attr_t attr;
	int i, err;

	*out = NULL;
	idle = calloc(1, sizeof(*idle));
	if (!idle)
		return 0;
	idle->tid = calloc((size_t)n, sizeof(*idle->tid));
	if (!idle->tid) {
		free(idle);
		return 0;
	}
	idle->ops = ops;
	idle->nops = nops;
	pthread_mutex_init(&idle->lock, NULL);
	pthread_cond_init(&idle->cond, NULL);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, SK_BENCH_IDLE_STACK);
	for (i = 0; i < n; i++) {
		err = pthread_create(&idle->tid[i], &attr, idle_main, idle);
		if (err) {
			fprintf(stderr,
				"scalekit bench: created only %d of %d idle "
				"threads: %s\n",
				i, n, strerror(err));
			break;
		}
		idle->n++;
	}
	pthread_attr_destroy(&attr);
	pthread_mutex_lock(&idle->lock);
	while (idle->ready < idle->n)
		pthread_cond_wait(&idle->cond, &idle->lock);
	pthread_mutex_unlock(&idle->lock);
	*out = idle;
	return idle->n;
}

void sk_bench_idle_stop(struct sk_bench_idle *idle)
{
	int i;

	if (!idle)
		return;
	pthread_mutex_lock(&idle->lock);
	idle->release = 1;
	pthread_cond_broadcast(&idle->cond);
	pthread_mutex_unlock(&idle->lock);
	for (i = 0; i < idle->n; i++)
		pthread_join(idle->tid[i], NULL);
	pthread_cond_destroy(&idle->cond);
	pthread_mutex_destroy(&idle->lock);
	free(idle->tid);
	free(idle);
}

/* ---- results and statistics --------------------------------------------------- */

static __attribute__((noreturn)) void out_of_memory(void)
{
	fprintf(stderr, "scalekit bench: out of memory\n");
	abort();
}

static void *xrealloc(void *p, size_t size)
{
	p = realloc(p, size);
	if (!p)
		out_of_memory();
	return p;
}

/* The array p of n used entries of elem bytes, with room for one more. */
static void *grow(void *p, int n, int *cap, size_t elem)
{
	if (n < *cap)
		return p;
	*cap = *cap ? 2 * *cap : 8;
	return xrealloc(p, elem * (size_t)*cap);
}

struct sk_bench_row *sk_bench_row_add_ops(
	struct sk_bench_results *res, const char *scenario, const char *variant,
	const char *unit, const char *title, int threads, int ratios,
	const struct sk_bench_rcu_ops *const *ops, int nimpl, int nrep)
{
	struct sk_bench_row *row = xrealloc(NULL, sizeof(*row));
	int i, r;

	if (nimpl > SK_BENCH_MAX_IMPL) {
		fprintf(stderr,
			"scalekit bench: internal error: more "
			"than %d implementations in a row\n",
			SK_BENCH_MAX_IMPL);
		abort();
	}
	memset(row, 0, sizeof(*row));
	row->scenario = scenario;
	row->variant = variant;
	row->unit = unit;
	row->title = title;
	row->threads = threads;
	row->ratios = ratios;
	row->nrep = nrep;
	for (i = 0; i < nimpl; i++) {
		row->impl[i] = ops[i];
		row->na[i] = row->impl[i]->unavailable;
		row->rep[i] = xrealloc(NULL, sizeof(double) * (size_t)nrep);
		for (r = 0; r < nrep; r++)
			row->rep[i][r] = NAN;
	}
	row->nimpl = nimpl;
	res->rows =
		grow(res->rows, res->nrows, &res->cap_rows, sizeof(*res->rows));
	res->rows[res->nrows++] = row;
	return row;
}

struct sk_bench_row *sk_bench_row_add(struct sk_bench_results *res,
				      const char *scenario, const char *variant,
				      const char *unit, const char *title,
				      int threads, int ratios,
				      const char *const *impls, int nrep)
{
	const struct sk_bench_rcu_ops *ops[SK_BENCH_MAX_IMPL + 1];
	int i;

	for (i = 0; impls[i] && i <= SK_BENCH_MAX_IMPL; i++)
		ops[i] = sk_bench_rcu_find(impls[i]);
	return sk_bench_row_add_ops(res, scenario, variant, unit, title,
				    threads, ratios, ops, i, nrep);
}

int sk_bench_row_impl(const struct sk_bench_row *row, const char *name)
{
	int i;

	for (i = 0; i < row->nimpl; i++)
		if (strcmp(row->impl[i]->name, name) == 0)
			return i;
	return -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double sk_bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double sk_bench_paired_median(const double *v, const double *ref, int n)
{
	double *t = xrealloc(NULL, sizeof(double) * (size_t)n);
	double r;
	int i;

	for (i = 0; i < n; i++)
		t[i] = ref[i];
	r = sk_bench_median(t, n);
	for (i = 0; i < n; i++)
		t[i] = v[i] / ref[i];
	r *= sk_bench_median(t, n);
	free(t);
	return r;
}

/* Statistic of the finite values among v[0..n-1]. */
static struct sk_bench_stat stat_of(const double *v, int n)
{
	struct sk_bench_stat s = { NAN, NAN, NAN, 0 };
	double *w = xrealloc(NULL, sizeof(double) * (size_t)(n ? n : 1));
	int i, m = 0;

	for (i = 0; i < n; i++)
		if (isfinite(v[i]))
			w[m++] = v[i];
	if (m) {
		qsort(w, (size_t)m, sizeof(double), cmp_double);
		s.min = w[0];
		s.max = w[m - 1];
		s.median = m % 2 ? w[m / 2] : (w[m / 2 - 1] + w[m / 2]) / 2;
		s.n = m;
	}
	free(w);
	return s;
}

struct sk_bench_stat sk_bench_row_stat(const struct sk_bench_row *row, int i)
{
	return stat_of(row->rep[i], row->nrep);
}

struct sk_bench_stat sk_bench_ratio_stat(const struct sk_bench_row *a, int ia,
					 const struct sk_bench_row *b, int ib)
{
	int n = a->nrep < b->nrep ? a->nrep : b->nrep;
	double *q = xrealloc(NULL, sizeof(double) * (size_t)(n ? n : 1));
	struct sk_bench_stat s;
	int r;

	for (r = 0; r < n; r++) {
		double x = a->rep[ia][r], y = b->rep[ib][r];

		q[r] = (isfinite(x) && isfinite(y) && y > 0) ? x / y : NAN;
	}
	s = stat_of(q, n);
	free(q);
	return s;
}

void sk_bench_target_add(struct sk_bench_results *res,
			 const struct sk_bench_target *t)
{
	res->targets = grow(res->targets, res->ntargets, &res->cap_targets,
			    sizeof(*res->targets));
	res->targets[res->ntargets++] = *t;
}

void sk_bench_note_add(struct sk_bench_results *res, const char *fmt, ...)
{
	char *line;
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vasprintf(&line, fmt, ap);
	va_end(ap);
	if (len < 0)
		out_of_memory();
	res->notes = grow(res->notes, res->nnotes, &res->cap_notes,
			  sizeof(*res->notes));
	res->notes[res->nnotes++] = line;
}

void sk_bench_ratio_target(struct sk_bench_results *res,
			   const struct sk_bench_row *row, const char *a,
			   const char *b, double limit, int at_most,
			   const char *what, const char *id)
{
	struct sk_bench_target t = { .threads = row->threads,
				     .limit = limit,
				     .at_most = at_most };
	int ia = sk_bench_row_impl(row, a), ib = sk_bench_row_impl(row, b);

	snprintf(t.what, sizeof(t.what), "%s", what);
	snprintf(t.id, sizeof(t.id), "%s", id);
	snprintf(t.ratio_name, sizeof(t.ratio_name), "%s/%s", a, b);
	if (ia < 0 || ib < 0) {
		fprintf(stderr,
			"scalekit bench: internal error: target %s names an "
			"implementation missing from its row\n",
			id);
		abort();
	}
	if (row->na[ia])
		t.na = row->na[ia];
	else if (row->na[ib])
		t.na = row->na[ib];
	else
		t.ratio = sk_bench_ratio_stat(row, ia, row, ib);
	sk_bench_target_add(res, &t);
}

void sk_bench_results_free(struct sk_bench_results *res)
{
	int r, i;

	for (i = 0; i < res->nnotes; i++)
		free(res->notes[i]);
	free(res->notes);

	for (r = 0; r < res->nrows; r++) {
		for (i = 0; i < res->rows[r]->nimpl; i++)
			free(res->rows[r]->rep[i]);
		free(res->rows[r]);
	}
	free(res->rows);
	free(res->targets);
	memset(res, 0, sizeof(*res));
}
