/* SPDX-License-Identifier: MIT */
/*
 * valgrind_exit.c - process exit with RCU state live, and a leak check.
 * Not a unit test by itself: tests/valgrind.cmake runs it in these modes.
 *
 *   exit-pending  Threads are registered (general readers and an idle
 *                 thread outside any section, and one QSBR thread parked
 *                 online so that the worker's grace period cannot end);
 *                 main queues callbacks and returns from main().  The
 *                 process must exit 0 (no crash, no hang: CTest TIMEOUT).
 *   exit-running  The same without the parked QSBR thread, while a flood
 *                 of callbacks keeps the worker busy running them (they
 *                 free memory) when main() returns.
 *   exit-loop     Runs the two modes above 20 times each (4 under
 *                 sanitizers; fork + exec of itself) and checks every exit
 *                 status.
 *   leaks         Threads register, read, queue callbacks (SK_FREE_RCU()
 *                 and sk_call_rcu() on malloc()ed objects, whose heads
 *                 are not initialized: the API does not ask for it) and
 *                 exit; main calls sk_rcu_barrier() and returns.  Run under
 *                 valgrind --leak-check=full --errors-for-leak-kinds=definite
 *                 --error-exitcode=99: no definite leak, no error.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scalekit/rcu.h"

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
#define INC(x) __atomic_fetch_add(&(x), 1, __ATOMIC_ACQ_REL)

struct obj {
	long key;
	struct sk_rcu_head rcu;
	char payload[48];
};

static struct obj *shared; /* RCU-protected */
static unsigned long cb_ran;
static int zero_heads; /* exit modes: keep memcheck on the exit paths */

static void free_obj(struct sk_rcu_head *h)
{
	free((char *)h - offsetof(struct obj, rcu));
	__atomic_fetch_add(&cb_ran, 1, __ATOMIC_RELAXED);
}

/*
 * An object as users allocate it: the rcu_head is left uninitialized
 * (leaks mode), or zeroed (exit modes, which test something else).
 */
static struct obj *obj_new(long key)
{
	struct obj *o = malloc(sizeof(*o));

	if (!o)
		abort();
	if (zero_heads)
		memset(&o->rcu, 0, sizeof(o->rcu));
	o->key = key;
	memset(o->payload, 'x', sizeof(o->payload));
	return o;
}

static void die(const char *what)
{
	fprintf(stderr, "valgrind_exit: %s\n", what);
	exit(1);
}

/* Replace the shared object; the old one is freed after a grace period. */
static void replace_shared(long key, int use_free_rcu)
{
	struct obj *n = obj_new(key);
	struct obj *old = __atomic_exchange_n(&shared, n, __ATOMIC_ACQ_REL);

	if (!old)
		return;
	if ((use_free_rcu ? SK_FREE_RCU(old, rcu)
			  : sk_call_rcu(&old->rcu, free_obj)) != 0)
		die("queueing a callback failed");
}

static long read_shared(void)
{
	struct obj *o;
	long k = 0;

	sk_rcu_read_lock();
	o = sk_rcu_dereference(shared);
	if (o)
		k = o->key + o->payload[0];
	sk_rcu_read_unlock();
	return k;
}

/* ---- exit with state live ---------------------------------------------------- */

static int parked, flood;

static void *exit_reader(void *arg)
{
	long i, sum = 0;

	(void)arg;
	sk_rcu_register_thread();
	for (i = 0; i < 2000; i++) {
		sum += read_shared();
		if (i % 100 == 0)
			replace_shared(i, i % 200 == 0);
	}
	INC(parked);
	/* Registered, outside any section, until the process exits. */
	for (;;)
		pause();
	return (void *)sum;
}

static void *exit_qsbr_online(void *arg)
{
	(void)arg;
	sk_rcu_thread_online();
	sk_rcu_quiescent_state();
	INC(parked);
	/* Online forever: any grace period waits for us until exit. */
	for (;;)
		pause();
	return NULL;
}

static void *exit_flooder(void *arg)
{
	long i = 0;

	(void)arg;
	for (;;) {
		replace_shared(i, i & 1);
		if (++i == 50000)
			INC(flood);
	}
	return NULL;
}

static int run_exit(int with_online_qsbr)
{
	pthread_t t;
	int i, nparked = 3;
	long k;

	replace_shared(-1, 0);
	for (i = 0; i < 3; i++)
		if (pthread_create(&t, NULL, exit_reader, NULL))
			die("pthread_create");
	if (with_online_qsbr) {
		if (pthread_create(&t, NULL, exit_qsbr_online, NULL))
			die("pthread_create");
		nparked++;
	} else {
		if (pthread_create(&t, NULL, exit_flooder, NULL))
			die("pthread_create");
		while (!LOAD(flood))
			sched_yield();
	}
	while (LOAD(parked) < nparked)
		sched_yield();
	/* Callbacks queued right before exit. */
	for (k = 0; k < 1000; k++)
		replace_shared(k, k & 1);
	fprintf(stderr, "valgrind_exit: returning from main with callbacks "
			"pending\n");
	return 0;
}

/* Run this program again in mode; 1 when it exited 0. */
static int run_self(const char *self, const char *mode)
{
	int st = 0;
	pid_t pid;

	fflush(stderr);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		execl(self, self, mode, (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &st, 0);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 1;
	fprintf(stderr, "valgrind_exit %s: %s %d\n", mode,
		WIFSIGNALED(st) ? "killed by signal" : "exit status",
		WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	return 0;
}

/* Fewer runs under sanitizers and valgrind (as sk_test_slow()). */
static int runs(void)
{
	const char *v = getenv("SK_TEST_SLOW");

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	return 4;
#endif
	return (v && *v && strcmp(v, "0")) ? 4 : 20;
}

static int run_exit_loop(void)
{
	int i, ok = 0, n = runs();

	for (i = 0; i < n; i++) {
		ok += run_self("/proc/self/exe", "exit-pending");
		ok += run_self("/proc/self/exe", "exit-running");
	}
	printf("%d of %d runs exited 0\n", ok, 2 * n);
	return ok == 2 * n ? 0 : 1;
}

/* ---- leak check ---------------------------------------------------------------- */

static int qsbr_done;

static void *leak_worker(void *arg)
{
	long id = (long)arg, i;
	struct obj *mine[64];

	sk_rcu_register_thread();
	for (i = 0; i < 300; i++) {
		read_shared();
		if (i % 10 == 0)
			replace_shared(id * 1000 + i, i % 20 == 0);
	}
	/* Private objects freed both ways. */
	for (i = 0; i < 64; i++)
		mine[i] = obj_new(i);
	for (i = 0; i < 64; i++)
		if ((i & 1 ? SK_FREE_RCU(mine[i], rcu)
			   : sk_call_rcu(&mine[i]->rcu, free_obj)) != 0)
			die("queueing a callback failed");
	return NULL; /* exits with callbacks pending */
}

static void *leak_qsbr(void *arg)
{
	int i;

	(void)arg;
	sk_rcu_thread_online();
	for (i = 0; i < 300; i++) {
		struct obj *o = sk_rcu_dereference(shared);

		if (o && o->key == -42)
			abort();
		sk_rcu_quiescent_state();
	}
	sk_rcu_thread_offline();
	STORE(qsbr_done, 1);
	return NULL;
}

static int run_leaks(void)
{
	pthread_t t[5];
	struct obj *last;
	long i;

	replace_shared(-1, 0);
	for (i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, leak_worker, (void *)i))
			die("pthread_create");
	if (pthread_create(&t[4], NULL, leak_qsbr, NULL))
		die("pthread_create");
	for (i = 0; i < 5; i++)
		pthread_join(t[i], NULL);
	sk_rcu_barrier();
	last = __atomic_exchange_n(&shared, NULL, __ATOMIC_ACQ_REL);
	sk_synchronize_rcu();
	free(last);
	/* Per worker: 15 replacements by sk_call_rcu(), 32 private objects. */
	fprintf(stderr,
		"valgrind_exit leaks: %lu sk_call_rcu callbacks ran "
		"(expected %d)\n",
		__atomic_load_n(&cb_ran, __ATOMIC_RELAXED), 4 * (15 + 32));
	if (__atomic_load_n(&cb_ran, __ATOMIC_RELAXED) != 4 * (15 + 32))
		return 1;
	return LOAD(qsbr_done) ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	zero_heads = 1;
	if (!strcmp(mode, "exit-pending"))
		return run_exit(1);
	if (!strcmp(mode, "exit-running"))
		return run_exit(0);
	zero_heads = 0;
	if (!strcmp(mode, "exit-loop"))
		return run_exit_loop();
	if (!strcmp(mode, "leaks"))
		return run_leaks();
	fprintf(stderr, "usage: %s exit-pending|exit-running|exit-loop|leaks\n",
		argv[0]);
	return 2;
}
