/* SPDX-License-Identifier: MIT */
/*
 * tests/urcu/urcu_fork.c - fork() while readers and call_rcu() run,
 * written against liburcu's API only (memb or qsbr).  The program
 * installs liburcu's fork hooks (call_rcu_before_fork ...) with
 * pthread_atfork(), as liburcu's documentation asks, and registers a
 * container hook (urcu_register_rculfhash_atfork) whose calls it checks:
 * before_fork, then after_fork_parent in the parent and after_fork_child
 * in the child.  Each child uses RCU (read sections, synchronize_rcu,
 * call_rcu, defer_rcu, the barriers) and exits cleanly; so does the
 * parent, with every callback run.
 */
#define _GNU_SOURCE
#include "urcu_test.h"

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#define NFORKS 3

/*
 * Sanitizers and fork() of a multithreaded program (as
 * tests/test_rcu_fork.c found): gcc's libasan does not lock its allocator
 * around fork(), so a child forked while another thread is inside malloc()
 * or free() may hang at its first allocation or thread start; there the
 * updater pauses outside malloc() for each fork (readers and callbacks
 * still run).  Under TSan a child that starts a thread dies or hangs, so
 * its checks that start the callback worker (call_rcu, defer_rcu and
 * their barriers) are left out there.
 */
#ifdef __SANITIZE_THREAD__
#define CHILD_THREADS  0
#define PAUSE_FOR_FORK 1
const char *__tsan_default_options(void);
const char *__tsan_default_options(void) { return "die_after_fork=0"; }
#elif defined(__SANITIZE_ADDRESS__) && !defined(__clang__)
#define CHILD_THREADS  1
#define PAUSE_FOR_FORK 1
#else
#define CHILD_THREADS  1
#define PAUSE_FOR_FORK 0
#endif

#define LOAD(x)	    __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

struct obj {
	struct rcu_head rh;
	int value;
};

static struct obj *shared;
/*
 * The updater's objects between malloc() and call_rcu(): a child forked
 * then has them, and no updater thread; kept reachable from here, the
 * ASan build's leak check of the child does not count them as leaks.
 */
static struct obj *in_flight_new, *in_flight_old;
static int stop;
static int pause_req, paused; /* PAUSE_FOR_FORK: the updater waits */
static unsigned long queued, freed;
static int hook_before, hook_parent, hook_child;

static void free_obj(struct rcu_head *rh)
{
	free(rh); /* rh is the first member */
	__atomic_fetch_add(&freed, 1, __ATOMIC_RELAXED);
}

static void *reader(void *arg)
{
	struct obj *p;

	(void)arg;
	rcu_register_thread();
	while (!LOAD(stop)) {
		rcu_read_lock();
		p = rcu_dereference(shared);
		if (p)
			URCU_CHECK(LOAD(p->value) == 42);
		rcu_read_unlock();
		rcu_quiescent_state();
	}
	rcu_unregister_thread();
	return NULL;
}

/* Replaces the shared object again and again; call_rcu() frees the old. */
static void *updater(void *arg)
{
	struct obj *n, *old;

	(void)arg;
	rcu_register_thread();
	while (!LOAD(stop)) {
		if (PAUSE_FOR_FORK && LOAD(pause_req)) {
			/* Release: its last free() before the fork. */
			__atomic_store_n(&paused, 1, __ATOMIC_RELEASE);
			while (LOAD(pause_req))
				usleep(100);
			STORE(paused, 0);
		}
		STORE(in_flight_new, (struct obj *)malloc(sizeof(*n)));
		n = LOAD(in_flight_new);
		URCU_CHECK(n != NULL);
		STORE(n->value, 42);
		STORE(in_flight_old, LOAD(shared)); /* the only writer */
		old = rcu_xchg_pointer(&shared, n);
		if (old) {
			call_rcu(&old->rh, free_obj);
			__atomic_fetch_add(&queued, 1, __ATOMIC_RELAXED);
		}
		STORE(in_flight_old, NULL);
		rcu_quiescent_state(); /* qsbr: it holds no reference */
		usleep(20);
	}
	rcu_unregister_thread();
	return NULL;
}

static void before(void *priv) { (void)priv; hook_before++; }
static void parent(void *priv) { (void)priv; hook_parent++; }
static void child(void *priv) { (void)priv; hook_child++; }

static struct urcu_atfork hooks = { before, parent, child, NULL };

static int child_ran_defer;
static void child_deferred(void *p) { *(int *)p = 1; }

/* The child: one thread (the forking one), RCU still works. */
static int child_main(void)
{
	struct obj *p = malloc(sizeof(*p));
	unsigned long f;

	URCU_CHECK(hook_child == 1 && hook_parent == 0 && p != NULL);
	rcu_register_thread();
	rcu_read_lock();
	URCU_CHECK(rcu_read_ongoing());
	rcu_read_unlock();
	synchronize_rcu();
	if (CHILD_THREADS) { /* these start the callback worker */
		f = LOAD(freed);
		call_rcu(&p->rh, free_obj);
		rcu_barrier();
		URCU_CHECK(LOAD(freed) > f);
		defer_rcu(child_deferred, &child_ran_defer);
		rcu_defer_barrier();
		URCU_CHECK(child_ran_defer == 1);
	} else {
		free(p);
	}
	rcu_unregister_thread();
	return 0;
}

int main(void)
{
	pthread_t r[2], u;
	int i, status;
	pid_t pid;

	URCU_CHECK(pthread_atfork(call_rcu_before_fork,
				  call_rcu_after_fork_parent,
				  call_rcu_after_fork_child) == 0);
	urcu_register_rculfhash_atfork(&hooks);
	rcu_register_thread();
	for (i = 0; i < 2; i++)
		URCU_CHECK(pthread_create(&r[i], NULL, reader, NULL) == 0);
	URCU_CHECK(pthread_create(&u, NULL, updater, NULL) == 0);
	for (i = 0; i < NFORKS; i++) {
		usleep(50000);
		hook_parent = hook_child = 0;
		if (PAUSE_FOR_FORK) {
			STORE(pause_req, 1);
			while (!__atomic_load_n(&paused, __ATOMIC_ACQUIRE))
				usleep(100);
		}
		pid = fork();
		STORE(pause_req, 0);
		URCU_CHECK(pid >= 0);
		if (pid == 0)
			exit(child_main());
		URCU_CHECK(hook_before == i + 1 && hook_parent == 1 && hook_child == 0);
		rcu_thread_offline(); /* qsbr: waitpid() blocks */
		URCU_CHECK(waitpid(pid, &status, 0) == pid);
		rcu_thread_online();
		URCU_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		printf("urcu_fork %s: child %d exited cleanly\n", URCU_TEST_FLAVOR, i);
	}
	STORE(stop, 1);
	rcu_thread_offline();
	for (i = 0; i < 2; i++)
		pthread_join(r[i], NULL);
	pthread_join(u, NULL);
	rcu_thread_online();
	free(shared); /* no reader left */
	rcu_barrier();
	URCU_CHECK(LOAD(freed) == LOAD(queued));
	urcu_unregister_rculfhash_atfork(&hooks);
	rcu_unregister_thread();
	printf("urcu_fork %s: %lu callbacks run: ok\n", URCU_TEST_FLAVOR, freed);
	return 0;
}
