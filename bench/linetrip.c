/* SPDX-License-Identifier: MIT */
/*
 * One cache line's round trip between two threads, each waiting for the
 * other's store before it stores (a plain ping-pong, no lock), for the
 * notes of the scenarios whose figures follow what moving a line between
 * the CPUs costs:
 *  - rwlock-read: a pthread_rwlock read lock and unlock are two
 *    read-modify-writes of one shared word, so with two readers on two
 *    CPUs its throughput is bounded by how fast that line moves;
 *  - hash-under-lock: every lock and unlock moves the lock's line;
 *  - hash-resize: every line the resizer writes that the reader reads is
 *    a coherence miss for the reader.
 * It is a property of where the two CPUs are (same core complex or not,
 * and on a VM where the host runs the vCPUs), not of any lock or table:
 * docs/benchmarks.md, "Which figures depend on the CPU".
 */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct rt_ball {
	int ball __attribute__((aligned(64))); /* whose turn: 0 or 1 */
	int stop;
	int ready;
	uint64_t rounds;
};

struct rt_arg {
	struct rt_ball *b;
	int me;
	uint64_t cpu_ns;
};

static void *rt_main(void *p)
{
	struct rt_arg *a = p;
	struct rt_ball *b = a->b;
	uint64_t n = 0, c0;

	__atomic_fetch_add(&b->ready, 1, __ATOMIC_RELAXED);
	while (__atomic_load_n(&b->ready, __ATOMIC_RELAXED) < 2)
		;
	c0 = sk_bench_thread_cpu_ns();
	while (!__atomic_load_n(&b->stop, __ATOMIC_RELAXED)) {
		if (__atomic_load_n(&b->ball, __ATOMIC_ACQUIRE) != a->me)
			continue;
		__atomic_store_n(&b->ball, !a->me, __ATOMIC_RELEASE);
		n++;
	}
	a->cpu_ns = sk_bench_thread_cpu_ns() - c0;
	if (a->me == 0)
		b->rounds = n;
	return NULL;
}

/*
 * One ping-pong of run_ns: ns per round trip into *ns; 0, 1 when a
 * thread had less than SK_BENCH_OCC_MIN of a CPU (the two time-shared
 * one CPU: the figure is the scheduler's), or -errno.
 */
static int rt_measure(uint64_t run_ns, double *ns)
{
	struct rt_ball *b = aligned_alloc(64, sizeof(*b));
	struct rt_arg a[2];
	pthread_t t[2];
	uint64_t t0, t1;
	int i, err = 0, low = 0;

	if (!b)
		return -ENOMEM;
	memset(b, 0, sizeof(*b));
	for (i = 0; i < 2; i++) {
		pthread_attr_t attr;

		a[i] = (struct rt_arg){ b, i, 0 };
		pthread_attr_init(&attr);
		sk_bench_attr_pin(&attr, i);
		err = pthread_create(&t[i], &attr, rt_main, &a[i]);
		pthread_attr_destroy(&attr);
		if (err) {
			__atomic_store_n(&b->stop, 1, __ATOMIC_RELAXED);
			__atomic_store_n(&b->ready, 2, __ATOMIC_RELAXED);
			if (i)
				pthread_join(t[0], NULL);
			free(b);
			return -err;
		}
	}
	t0 = sk_bench_now_ns();
	sk_bench_sleep_ns(run_ns);
	__atomic_store_n(&b->stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	t1 = sk_bench_now_ns();
	for (i = 0; i < 2; i++)
		low |= (double)a[i].cpu_ns <
		       SK_BENCH_OCC_MIN * (double)(t1 - t0);
	*ns = b->rounds ? (double)(t1 - t0) / (double)b->rounds : NAN;
	free(b);
	return low;
}

/*
 * Round trips measured (ns, n of them, sorted here) and low runs dropped
 * (a thread had less than SK_BENCH_OCC_MIN of a CPU), as a note of
 * scenario, ending with tail.  Returns the median (ns), NAN when none was
 * measured.
 */
double sk_bench_rt_note_add(struct sk_bench_results *res, const char *scenario,
			    double *v, int n, int low, const char *tail)
{
	double med;

	if (!n) {
		sk_bench_note_add(res,
				  "%s: one cache line's round trip between two "
				  "threads: not measured (in none of %d runs "
				  "did both threads have %.0f%% of a CPU)",
				  scenario, low, SK_BENCH_OCC_MIN * 100);
		return NAN;
	}
	med = sk_bench_median(v, n); /* sorts v: v[0] and v[n - 1] next */
	sk_bench_note_add(res,
			  "%s: one cache line's round trip between two "
			  "threads (ping-pong, no lock): %.0f ns [%.0f..%.0f] "
			  "over %d runs (%d more dropped: a thread had less "
			  "than %.0f%% of a CPU); %s",
			  scenario, med, v[0], v[n - 1], n, low,
			  SK_BENCH_OCC_MIN * 100, tail);
	return med;
}

/*
 * One more round trip of run_ns into v[*n] (or *low when the two threads
 * time-shared a CPU).  Returns -errno when it could not be measured.
 */
int sk_bench_rt_sample(uint64_t run_ns, double *v, int *n, int *low)
{
	double x = NAN;
	int r = rt_measure(run_ns, &x);

	if (r < 0)
		return r;
	*low += r;
	/* Time-shared: the scheduler's figure, not the line's. */
	if (!r && !isnan(x))
		v[(*n)++] = x;
	return 0;
}

