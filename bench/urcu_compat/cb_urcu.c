/* SPDX-License-Identifier: MIT */
/*
 * cb_urcu - call_rcu() end to end through liburcu's API (memb), for
 * comparing this layer's call_rcu() with liburcu's and with an older
 * build of the layer (docs/urcu-compat.md, "The layer's call_rcu()").
 * Not built by CMake: it is built by hand, once per library, e.g.
 *
 *   cc -O2 -std=gnu11 -I$SRC/include/scalekit/compat/urcu -I$SRC/include \
 *      cb_urcu.c -o cb_compat -L$BUILD/compat/urcu -L$BUILD \
 *      -lscalekit-urcu -lscalekit -pthread \
 *      -Wl,-rpath,$BUILD/compat/urcu:$BUILD
 *   cc -O2 -std=gnu11 cb_urcu.c -o cb_liburcu \
 *      $(pkg-config --cflags --libs liburcu) -pthread
 *
 * and run in turn (the same arguments), as `scalekit bench` would.
 *
 * The loop of the bench's "callbacks" scenario (bench/callbacks.c), with
 * unpinned threads: THREADS threads each malloc() an object and call_rcu()
 * a callback that frees it, N times; then the main thread calls
 * rcu_barrier().  Prints one line: ns per callback from the release of the
 * threads to the return of rcu_barrier(), and the mean of the threads' own
 * ns per call_rcu() (with its malloc()).  With OWN set in the environment
 * the threads go through one call_rcu_data of their own
 * (create_call_rcu_data()) instead of the default one.
 *
 * Usage: cb_urcu THREADS N
 */
#define _LGPL_SOURCE
#include <urcu.h>

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_THREADS 64

struct obj {
	struct rcu_head head;
	char pad[48];
};

static long n;
static int go;
static double enq_ns[MAX_THREADS];
static struct call_rcu_data *own;

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void free_cb(struct rcu_head *h)
{
	free((char *)h - offsetof(struct obj, head));
}

static void *enqueuer(void *arg)
{
	long i, id = (long)arg;
	unsigned long long t0;

	rcu_register_thread();
	if (own)
		set_thread_call_rcu_data(own);
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		;
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		struct obj *o = malloc(sizeof(*o));

		if (!o)
			abort();
		call_rcu(&o->head, free_cb);
	}
	enq_ns[id] = (double)(now_ns() - t0) / n;
	set_thread_call_rcu_data(NULL);
	rcu_unregister_thread();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t tid[MAX_THREADS];
	unsigned long long t0;
	double enq = 0;
	int t, i;

	if (argc != 3 || (t = atoi(argv[1])) < 1 || t > MAX_THREADS ||
	    (n = atol(argv[2])) < 1) {
		fprintf(stderr, "usage: cb_urcu THREADS N\n");
		return 2;
	}
	rcu_register_thread();
	if (getenv("OWN") && !(own = create_call_rcu_data(0, -1)))
		return 1;
	rcu_barrier();
	for (i = 0; i < t; i++)
		if (pthread_create(&tid[i], NULL, enqueuer, (void *)(long)i))
			return 1;
	t0 = now_ns();
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	for (i = 0; i < t; i++)
		pthread_join(tid[i], NULL);
	rcu_barrier();
	for (i = 0; i < t; i++)
		enq += enq_ns[i] / t;
	printf("%.2f %.2f\n", (double)(now_ns() - t0) / ((double)n * t), enq);
	if (own)
		call_rcu_data_free(own);
	rcu_unregister_thread();
	return 0;
}
