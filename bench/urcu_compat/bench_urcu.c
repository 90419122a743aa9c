/* SPDX-License-Identifier: MIT */
/*
 * scalekit-bench-urcu - the read pair of liburcu's API on scalekit
 * (libscalekit-urcu, docs/urcu-compat.md), measured for `scalekit bench
 * urcu-compat` (bench/urcu_compat.c), which runs this program from its
 * own directory: libscalekit-urcu exports liburcu's own names, so it
 * cannot be linked into the scalekit tool beside the real liburcu.
 *
 * Written against liburcu's API only (memb flavor, <urcu.h> of the compat
 * directory, _LGPL_SOURCE like the bench's urcu-memb adapter), with the
 * loop of the bench's adapters (SK_BENCH_READ_LOOP(), bench/bench.h) and
 * the measurement of bench/read.c: unpinned threads run SK_BENCH_CHUNK
 * sections at a time for the run's length; the figure is the mean over
 * threads of each thread's ns per section.
 *
 * Usage: scalekit-bench-urcu RUN_MS WARMUP_MS THREADS...
 * For each thread count, a warm-up run then a timed run; one line each:
 *   urcu-compat read <threads> <ns per section>
 * Exit status 0, or 2 on a usage error, 1 when a thread cannot start.
 */
#define _LGPL_SOURCE
#include <urcu.h>

#include "bench.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_THREADS 64

static struct sk_bench_obj the_obj = { .val = 42 };
struct sk_bench_obj *sk_bench_gp = &the_obj;

/*
 * go and stop: set by the main thread, polled by the readers between
 * chunks; relaxed (no data travels with them: each reader's figures
 * travel through pthread_join()).
 */
static int go, stop;

struct reader {
	pthread_t tid;
	uint64_t sections, ns;
} __attribute__((aligned(64)));

static void read_chunk(long n)
{
	SK_BENCH_READ_LOOP(n, rcu_read_lock(), rcu_dereference(sk_bench_gp),
			   rcu_read_unlock());
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	uint64_t t0;

	rcu_register_thread();
	while (!__atomic_load_n(&go, __ATOMIC_RELAXED))
		;
	t0 = sk_bench_now_ns();
	do { /* at least one chunk: a figure even when stop came first */
		read_chunk(SK_BENCH_CHUNK);
		r->sections += SK_BENCH_CHUNK;
	} while (!__atomic_load_n(&stop, __ATOMIC_RELAXED));
	r->ns = sk_bench_now_ns() - t0;
	rcu_unregister_thread();
	return NULL;
}

/* One run of n readers for run_ms; *ns: mean over threads of ns/section. */
static int measure(int n, long run_ms, double *ns)
{
	struct reader r[MAX_THREADS];
	struct timespec ts = { run_ms / 1000, (run_ms % 1000) * 1000000L };
	double sum = 0;
	int i, err = 0;

	memset(r, 0, sizeof(r));
	__atomic_store_n(&go, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
	for (i = 0; i < n && !err; i++)
		err = pthread_create(&r[i].tid, NULL, reader_main, &r[i]);
	if (err)
		n = i - 1;
	__atomic_store_n(&go, 1, __ATOMIC_RELAXED);
	while (!err && nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < n; i++) {
		pthread_join(r[i].tid, NULL);
		sum += (double)r[i].ns / (double)r[i].sections;
	}
	if (err) {
		fprintf(stderr, "scalekit-bench-urcu: cannot create a thread: "
				"%s\n", strerror(err));
		return -1;
	}
	*ns = sum / n;
	return 0;
}

static long arg_num(const char *s, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	return (errno || end == s || *end || v < 1 || v > max) ? -1 : v;
}

int main(int argc, char **argv)
{
	long run_ms, warm_ms, n;
	double ns;
	int i;

	if (argc < 4 || (run_ms = arg_num(argv[1], 600000)) < 0 ||
	    (warm_ms = arg_num(argv[2], 600000)) < 0) {
		fprintf(stderr, "usage: scalekit-bench-urcu RUN_MS WARMUP_MS "
				"THREADS...\n");
		return 2;
	}
	for (i = 3; i < argc; i++) {
		n = arg_num(argv[i], MAX_THREADS);
		if (n < 0) {
			fprintf(stderr, "scalekit-bench-urcu: bad thread "
					"count '%s' (1..%d)\n", argv[i],
				MAX_THREADS);
			return 2;
		}
		if (measure((int)n, warm_ms, &ns) || measure((int)n, run_ms, &ns))
			return 1;
		printf("urcu-compat read %ld %.4f\n", n, ns);
		fflush(stdout);
	}
	return 0;
}
