/* SPDX-License-Identifier: MIT */
/*
 * tests/urcu/urcu_fork_pending.c - call_rcu() callbacks pending at a
 * fork() run in the child, and the child's call_rcu() and rcu_barrier()
 * work, written against liburcu's API only (memb).
 *
 * Part 1 (every build but TSan's): a reader thread holds a read section
 * open, so that no grace period ends; the main thread queues PENDING
 * callbacks through each of the default, a per-CPU and an own
 * call_rcu_data, checks that none ran, and forks.  The child (without the
 * reader) queues one more through each, calls rcu_barrier() and checks
 * that all of them ran; the parent lets the reader go, calls rcu_barrier()
 * and checks its own.  A child that hangs is killed by alarm(): "ERROR:
 * child".
 *
 * Part 2 (not under the sanitizers: the children allocate, which gcc's
 * libasan may hang on after a fork, and TSan's children cannot start
 * threads): two threads call_rcu() through a call_rcu_data each (the
 * default one, an own one) and wait for each callback, so that nearly
 * every call finds its call_rcu_data idle and starts a carrier, while the
 * main thread forks NFORKS times (the twin: up to 400, stopping at its
 * first failed child).
 * Each child queues one callback through each and calls rcu_barrier():
 * it must return, with them run.  A fork
 * between setting a call_rcu_data busy and queuing its carrier leaves,
 * unless the child handler replaces the carrier, a call_rcu_data busy
 * with nothing to run it: the child's rcu_barrier() hangs ("ERROR:
 * child").  urcu_fork_window builds the layer with a hook in that window
 * (SK__URCU_TEST_WIDE_START): a starter that reaches it asks the main
 * thread to fork and waits there until it has, so that each fork of part
 * 2 lands in the window (the output counts them); its broken twin
 * urcu_fork_window_broken adds SK__URCU_BROKEN_FORK_NO_REPLACE and must
 * report "ERROR: child" (its first child hangs).
 */
#define _GNU_SOURCE
#include "urcu_test.h"

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef __SANITIZE_THREAD__
#define PART1 0
#define PART2 0
const char *__tsan_default_options(void);
const char *__tsan_default_options(void) { return "die_after_fork=0"; }
#elif defined(__SANITIZE_ADDRESS__)
#define PART1 1
#define PART2 0
#else
#define PART1 1
#define PART2 1
#endif

#define PENDING 100
/*
 * CHILD_ALARM: seconds; a child still running then hangs (a correct one
 * takes milliseconds).  The twin's first child hangs for good, and the
 * twin's run is that wait: 3 s there, so that it does not hold a CPU's
 * share of make check for 10.
 */
#ifdef URCU_TEST_BROKEN
#define NFORKS	    400 /* the twin stops at its first hung child */
#define CHILD_ALARM 3
#else
#define NFORKS	    40
#define CHILD_ALARM 10
#endif

#define LOAD(x)	    __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
#define ADD(x, v)   __atomic_fetch_add(&(x), (v), __ATOMIC_SEQ_CST)

struct cb {
	struct rcu_head rh;
	int ran;
};

static unsigned long ran_total;
static int stop, reader_in, reader_go;
static int paused; /* part 2: the main thread waits for a child */
static struct call_rcu_data *own;

static void count_cb(struct rcu_head *rh)
{
	struct cb *c = (struct cb *)((char *)rh - offsetof(struct cb, rh));

	ADD(ran_total, 1);
	STORE(c->ran, 1);
}

/* Wait for child pid; 0 when it exited with 0. */
static int wait_child(pid_t pid, const char *what)
{
	int status;

	URCU_CHECK(waitpid(pid, &status, 0) == pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFSIGNALED(status))
		printf("ERROR: child (%s) killed by signal %d%s\n", what,
		       WTERMSIG(status),
		       WTERMSIG(status) == SIGALRM ? " (hung)" : "");
	else
		printf("ERROR: child (%s) exited with %d\n", what,
		       WEXITSTATUS(status));
	return 1;
}

/* In a child: one callback through crdp (NULL: the CPU's), then run. */
static struct cb child_cb[3];

static int child_queue_and_barrier(struct call_rcu_data *const *crds, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		set_thread_call_rcu_data(crds[i]);
		call_rcu(&child_cb[i].rh, count_cb);
	}
	set_thread_call_rcu_data(NULL);
	rcu_barrier();
	for (i = 0; i < n; i++)
		if (!LOAD(child_cb[i].ran)) {
			printf("ERROR: child: callback %d did not run\n", i);
			return 1;
		}
	return 0;
}

/* ---- part 1 ---------------------------------------------------------------- */

static void *reader(void *arg)
{
	(void)arg;
	rcu_register_thread();
	rcu_read_lock();
	STORE(reader_in, 1);
	while (!LOAD(reader_go))
		usleep(1000);
	rcu_read_unlock();
	rcu_unregister_thread();
	return NULL;
}

static struct cb pend[3][PENDING];

static int part1(void)
{
	struct call_rcu_data *crds[3] = { get_default_call_rcu_data(), own,
					  NULL };
	pthread_t rd;
	pid_t pid;
	int i, k, err = 0;

	URCU_CHECK(!pthread_create(&rd, NULL, reader, NULL));
	while (!LOAD(reader_in))
		usleep(1000);
	STORE(ran_total, 0);
	for (k = 0; k < 3; k++) {
		set_thread_call_rcu_data(crds[k]);
		for (i = 0; i < PENDING; i++)
			call_rcu(&pend[k][i].rh, count_cb);
	}
	set_thread_call_rcu_data(NULL);
	/* The reader's section began before: no grace period ends. */
	usleep(20000);
	URCU_CHECK(LOAD(ran_total) == 0);
	fflush(stdout);
	pid = fork();
	URCU_CHECK(pid >= 0);
	if (pid == 0) {
		alarm(CHILD_ALARM);
		if (child_queue_and_barrier(crds, 3))
			_exit(1);
		/* The parent's pending ones, in this copy of memory. */
		if (LOAD(ran_total) != 3 * PENDING + 3) {
			printf("ERROR: child: %lu callbacks ran, %d expected\n",
			       LOAD(ran_total), 3 * PENDING + 3);
			_exit(1);
		}
		printf("part 1 child: %lu callbacks ran\n", LOAD(ran_total));
		fflush(stdout);
		_exit(0);
	}
	STORE(reader_go, 1);
	URCU_CHECK(!pthread_join(rd, NULL));
	rcu_barrier();
	if (LOAD(ran_total) != 3 * PENDING) {
		printf("ERROR: parent: %lu callbacks ran, %d expected\n",
		       LOAD(ran_total), 3 * PENDING);
		err = 1;
	}
	err |= wait_child(pid, "part 1");
	printf("part 1: %lu callbacks ran in the parent\n", LOAD(ran_total));
	return err;
}

/* ---- part 2 ---------------------------------------------------------------- */

/*
 * The window hook (urcu_fork_window): fork_req asks the main thread for a
 * fork, fork_gen counts the forks done.  A starter in the window waits
 * for the next fork at most WINDOW_WAIT yields, so that a main thread
 * that has stopped forking does not hold it, and not at all while the main
 * thread waits for a child (paused).  (A request made just as the pause
 * began can outlive it and count the next fork as one in the window: the
 * printed count is a figure, not a check.)
 */
#ifdef SK__URCU_TEST_WIDE_START
extern void (*sk__urcu_test_window_hook)(void);
#define WINDOW_WAIT 100000
static unsigned long fork_req, fork_gen;

static void window_hook(void)
{
	unsigned long gen = LOAD(fork_gen);
	int i;

	if (LOAD(paused))
		return; /* no fork comes while the main thread waits */
	STORE(fork_req, 1);
	for (i = 0; i < WINDOW_WAIT && LOAD(fork_gen) == gen && !LOAD(stop) &&
		    !LOAD(paused);
	     i++)
		sched_yield();
}

/* Wait (at most 2 ms) until a starter is in the window; 1 if one is. */
static int wait_window(void)
{
	int i, in;

	for (i = 0; i < 200 && !LOAD(fork_req); i++)
		usleep(10);
	in = LOAD(fork_req) != 0;
	STORE(fork_req, 0);
	return in;
}
#define WINDOW_HOOK_SET(f) STORE(sk__urcu_test_window_hook, (f))
#define FORKED()	   ADD(fork_gen, 1)
#else
#define wait_window()	   (usleep(2000), 0)
#define WINDOW_HOOK_SET(f) ((void)0)
#define FORKED()	   ((void)0)
#endif

#define RING 64

static void *starter(void *arg)
{
	struct call_rcu_data *crdp = arg;
	static struct cb ring[2][RING];
	struct cb *r = ring[crdp == own];
	unsigned long n = 0;

	rcu_register_thread();
	set_thread_call_rcu_data(crdp);
	while (!LOAD(stop)) {
		struct cb *c = &r[n++ % RING];

		STORE(c->ran, 0);
		call_rcu(&c->rh, count_cb);
		/*
		 * Wait for the callback: the call_rcu_data goes idle.  While
		 * the main thread waits for a child, nap instead of yielding:
		 * no fork comes then, and a hung child's wait (the twin's)
		 * would otherwise keep both CPUs busy.
		 */
		while (!LOAD(stop) && !LOAD(c->ran)) {
			if (LOAD(paused))
				usleep(200);
			else
				sched_yield();
		}
	}
	set_thread_call_rcu_data(NULL);
	rcu_unregister_thread();
	return NULL;
}

static int part2(void)
{
	struct call_rcu_data *crds[2] = { get_default_call_rcu_data(), own };
	pthread_t st[2];
	int i, forks, in_window = 0, err = 0;

	WINDOW_HOOK_SET(window_hook);
	for (i = 0; i < 2; i++)
		URCU_CHECK(!pthread_create(&st[i], NULL, starter, crds[i]));
	for (forks = 0; forks < NFORKS && !err; forks++) {
		pid_t pid;

		in_window += wait_window();
		fflush(stdout);
		pid = fork();
		URCU_CHECK(pid >= 0);
		if (pid == 0) {
			alarm(CHILD_ALARM);
			WINDOW_HOOK_SET(NULL); /* no fork to wait for here */
			_exit(child_queue_and_barrier(crds, 2));
		}
		FORKED();
		STORE(paused, 1);
		err |= wait_child(pid, "part 2");
		STORE(paused, 0);
	}
	STORE(stop, 1);
	WINDOW_HOOK_SET(NULL);
	for (i = 0; i < 2; i++)
		URCU_CHECK(!pthread_join(st[i], NULL));
	rcu_barrier();
	printf("part 2: %d forks (%d with a starter in the window), %s\n",
	       forks, in_window, err ? "a child failed" : "ok");
	return err;
}

int main(void)
{
	int err = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	rcu_register_thread();
	URCU_CHECK(create_all_cpu_call_rcu_data(0) == 0);
	own = create_call_rcu_data(0, -1);
	URCU_CHECK(own);
	if (PART1)
		err |= part1();
	if (PART2)
		err |= part2();
	if (!PART1 && !PART2)
		printf("skipped: TSan's fork children cannot start threads\n");
	call_rcu_data_free(own);
	free_all_cpu_call_rcu_data();
	rcu_unregister_thread();
	if (err)
		return 1;
	return !PART1 && !PART2 ? 77 : 0;
}
