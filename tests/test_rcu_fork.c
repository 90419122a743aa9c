/* SPDX-License-Identifier: MIT */
/*
 * test_rcu_fork.c - fork() in a process that uses RCU.
 *
 * In the child only the forking thread exists.  What is proven:
 *   - forked with reader threads running (general and QSBR) and callbacks
 *     in flight (queued, and taken by the worker for a grace period that
 *     a reader holds up): in the child, the registry holds at most the
 *     forking thread, grace periods (normal, expedited, polled,
 *     conditional) complete at once, a new thread can register, callbacks
 *     and sk_rcu_barrier() work (worker restarted on demand), the
 *     parent's pending callbacks run there too, exactly once (records in
 *     MAP_SHARED memory carry getpid() and a count: the child has its own
 *     copy of what they free) and their heads may then be queued again;
 *     in the parent every callback runs exactly once as well;
 *   - forked while another thread is inside sk_synchronize_rcu() or the
 *     expedited one, blocked on a reader: the child's own grace periods
 *     complete, the parent's waiter still waits for its reader;
 *   - forked while the worker is running a batch of callbacks that reuse
 *     (overwrite) their objects, as freeing callbacks do, with the default
 *     worker and with per-CPU workers: the child runs every callback
 *     that had not run in the parent (all the ring's objects come back,
 *     but the one the producer thread may have been queueing at the
 *     fork), none twice, and works normally;
 *   - forked while another thread makes the process's first
 *     sk_call_rcu() (the callback machinery initializing itself): the
 *     child's statistics, sk_rcu_barrier() and callbacks work (300
 *     attempts, each in a fresh process; the child hanging is caught by
 *     alarm(); under gcc's ASan the statistics only, see FC_CHILD_ALLOCS);
 *   - forked by a thread whose own read section holds up a grace period
 *     that an sk_rcu_barrier() in another thread waits for: fork returns
 *     (the last test; a deadlock runs into the CTest timeout).
 * Children report by exit status (waitpid).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scalekit/rcu.h"
#include "sk_test.h"
#include "sk_test_rcu.h"

/*
 * TSan does not support new threads in the child of a multi-threaded fork
 * (it dies with "dup thread with used id", or hangs in its allocator), so
 * under TSan the children skip the checks that start a thread (the
 * callback worker: callbacks, barrier, start_poll); the other builds run
 * them.  die_after_fork=0 lets the remaining children run.
 */
#ifdef __SANITIZE_THREAD__
#define CHILD_THREADS 0
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "die_after_fork=0";
}
#else
#define CHILD_THREADS 1
#endif

/* End a child: exit status 0 when none of its checks failed. */
static void child_exit(void)
{
	fflush(stderr);
	_exit(sk_t_failed_checks ? 1 : 0);
}

static void check_child_ok(pid_t pid, const char *what)
{
	int st = 0;

	SK_CHECK_EQ(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fprintf(stderr, "%s: child %s %d\n", what,
			WIFSIGNALED(st) ? "killed by signal" : "exit status",
			WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	SK_CHECK_EXIT_0(st);
}

/* Reader threads that keep entering and leaving sections. */
static int spin_stop;

static void *spin_reader(void *arg)
{
	int qsbr = (int)(uintptr_t)arg;

	if (qsbr)
		sk_rcu_thread_online();
	while (!LOAD(spin_stop)) {
		if (qsbr) {
			sk_rcu_quiescent_state();
		} else {
			sk_rcu_read_lock();
			sk_cpu_relax();
			sk_rcu_read_unlock();
		}
		sched_yield();
	}
	if (qsbr)
		sk_rcu_thread_offline();
	return NULL;
}

/* ---- callbacks that record where they ran ---------------------------------- */

#define NREC 4096

struct rec {
	int pid;  /* getpid() of the process that ran the callback */
	int runs; /* how many times it ran, in any process */
};

static struct rec *recs; /* MAP_SHARED: parent and children see it */

struct fobj {
	struct sk_rcu_head rcu;
	unsigned id;
};

static void rec_cb(struct sk_rcu_head *h)
{
	struct fobj *o = OF(h, struct fobj, rcu);

	__atomic_store_n(&recs[o->id].pid, (int)getpid(), __ATOMIC_RELAXED);
	__atomic_fetch_add(&recs[o->id].runs, 1, __ATOMIC_ACQ_REL);
}

static int requeued_ran; /* child memory only */
static void requeued_cb(struct sk_rcu_head *h)
{
	(void)h;
	INC(requeued_ran);
}

static void recs_reset(void)
{
	memset(recs, 0, NREC * sizeof(*recs));
}

static struct fobj objs[NREC];

static void *queue_range(void *arg)
{
	unsigned *r = arg, i;

	for (i = r[0]; i < r[1]; i++) {
		objs[i].id = i;
		if (sk_call_rcu(&objs[i].rcu, rec_cb) != 0)
			abort();
	}
	return NULL;
}

static void *register_and_exit(void *arg)
{
	(void)arg;
	sk_rcu_register_thread();
	sk_rcu_read_lock();
	sk_rcu_read_unlock();
	return NULL;
}

/* The child of fork_with_readers_and_callbacks_in_flight. */
static void child_after_busy_fork(unsigned nparent)
{
	struct sk_rcu_stats s = sk_test_rcu_stats();
	pid_t me = getpid();
	unsigned long c;
	unsigned i, nchild = 200;
	pthread_t t;
	int r;

	/* Only the forking thread can be in the registry. */
	SK_CHECK_LE(s.readers, 1);

	/* Grace periods complete: the parent's readers are gone. */
	sk_synchronize_rcu();
	sk_synchronize_rcu_expedited();
	c = sk_get_state_synchronize_rcu();
	sk_cond_synchronize_rcu(c);
	SK_CHECK_EQ(sk_poll_state_synchronize_rcu(c), 1);
	sk_rcu_thread_online();
	sk_rcu_quiescent_state();
	sk_rcu_thread_offline();
	if (!CHILD_THREADS)
		child_exit();

	c = sk_start_poll_synchronize_rcu();
	while (!sk_poll_state_synchronize_rcu(c))
		sched_yield();

	/* A new thread registers and leaves the registry again. */
	sk_test_thread_start(&t, register_and_exit, NULL);
	pthread_join(t, NULL);
	SK_CHECK_LE(sk_test_rcu_stats().readers, 1);

	/* Callbacks work: the worker restarts on demand. */
	for (i = nparent; i < nparent + nchild; i++) {
		objs[i].id = i;
		SK_CHECK_EQ(sk_call_rcu(&objs[i].rcu, rec_cb), 0);
	}
	sk_rcu_barrier();
	for (i = nparent; i < nparent + nchild; i++) {
		SK_CHECK_EQ(LOAD(recs[i].runs), 1);
		SK_CHECK_EQ(LOAD(recs[i].pid), me);
	}

	/*
	 * The parent's pending callbacks ran here too, each once (the
	 * parent's blocker holds them there): the taken batch and the queued
	 * ones, with nothing lost at the fork.
	 */
	for (i = 0; i < nparent; i++) {
		SK_CHECK_EQ(LOAD(recs[i].pid), me);
		SK_CHECK_EQ(LOAD(recs[i].runs), 1);
	}

	/* Their callbacks ran: the heads may be queued again. */
	r = sk_call_rcu(&objs[0].rcu, requeued_cb);
	SK_CHECK_EQ(r, 0);
	r = sk_call_rcu(&objs[nparent - 1].rcu, requeued_cb);
	SK_CHECK_EQ(r, 0);
	sk_rcu_barrier();
	SK_CHECK_EQ(LOAD(requeued_ran), 2);
	SK_CHECK_EQ(LOAD(recs[0].runs), 1);
	child_exit();
}

/*
 * Fork with three reader threads running (two general, one QSBR) and
 * nparent callbacks in flight from two producer threads: some taken by
 * the worker for a grace period that a held reader blocks, some still
 * queued behind it.  Checks in the child: see child_after_busy_fork().
 * In the parent: nothing ran while the reader held (so nothing ran in the
 * child either), then every callback runs exactly once, here.
 */
static void fork_with_readers_and_callbacks_in_flight(void)
{
	unsigned nparent = 2000, range1[2] = { 0, 600 },
		 range2[2] = { 600, 1000 }, range3[2] = { 1000, 2000 };
	pthread_t rd[3], p1, p2;
	struct sk_test_holder blocker;
	unsigned long c0;
	pid_t pid;
	unsigned i;
	int round;

	for (round = 0; round < 3; round++) {
		recs_reset();
		memset(objs, 0, sizeof(objs));
		STORE(spin_stop, 0);
		for (i = 0; i < 3; i++)
			sk_test_thread_start(&rd[i], spin_reader,
					     (void *)(uintptr_t)(i == 2));
		sk_test_holder_start(&blocker, round == 1, NULL, NULL);
		c0 = sk_test_gp_ctr();
		sk_test_thread_start(&p1, queue_range, range1);
		queue_range(range2);
		pthread_join(p1, NULL);
		/* The worker takes these and waits for the blocker... */
		sk_test_wait_gp_started(c0, NULL);
		/* ...and these stay queued behind them. */
		sk_test_thread_start(&p2, queue_range, range3);
		pthread_join(p2, NULL);

		pid = sk_test_fork();
		if (pid == 0)
			child_after_busy_fork(nparent);
		check_child_ok(pid, "fork with callbacks in flight");

		/* Run in the child (when it may start threads), not here. */
		for (i = 0; i < nparent; i++)
			SK_CHECK_EQ(LOAD(recs[i].runs), CHILD_THREADS);
		sk_test_holder_release(&blocker);
		sk_rcu_barrier();
		for (i = 0; i < nparent; i++) {
			SK_CHECK_EQ(LOAD(recs[i].runs), CHILD_THREADS + 1);
			SK_CHECK_EQ(LOAD(recs[i].pid), getpid());
		}
		STORE(spin_stop, 1);
		for (i = 0; i < 3; i++)
			pthread_join(rd[i], NULL);
	}
}

/* ---- fork during a grace period ------------------------------------------- */

struct syncer {
	pthread_t t;
	int expedited;
	struct sk_test_holder *reader;
	int returned, early;
};

static void *syncer_main(void *arg)
{
	struct syncer *s = arg;

	if (s->expedited)
		sk_synchronize_rcu_expedited();
	else
		sk_synchronize_rcu();
	if (!LOAD(s->reader->left))
		STORE(s->early, 1);
	STORE(s->returned, 1);
	return NULL;
}

static int child_ran;
static void child_cb(struct sk_rcu_head *h)
{
	(void)h;
	INC(child_ran);
}

/* sync_calls just before the fork, in the parent (the child's copy). */
static unsigned long calls_before_fork;

static void child_after_fork_in_gp(void)
{
	static struct sk_rcu_head h[10];
	struct sk_rcu_stats s0, s1;
	unsigned long c;
	int i;

	/* The calls of the parent's threads, gone here, still count. */
	SK_CHECK_EQ(sk_rcu_get_stats(&s0), 0);
	SK_CHECK_LE(calls_before_fork, s0.sync_calls);
	for (i = 0; i < 3; i++)
		sk_synchronize_rcu();
	sk_synchronize_rcu_expedited();
	SK_CHECK_EQ(sk_rcu_get_stats(&s1), 0);
	SK_CHECK_EQ(s1.sync_calls - s0.sync_calls, 4);
	c = sk_get_state_synchronize_rcu();
	sk_cond_synchronize_rcu(c);
	SK_CHECK_EQ(sk_poll_state_synchronize_rcu(c), 1);
	if (!CHILD_THREADS)
		child_exit();
	c = sk_start_poll_synchronize_rcu();
	while (!sk_poll_state_synchronize_rcu(c))
		sched_yield();
	for (i = 0; i < 10; i++)
		SK_CHECK_EQ(sk_call_rcu(&h[i], child_cb), 0);
	sk_rcu_barrier();
	SK_CHECK_EQ(LOAD(child_ran), 10);
	child_exit();
}

/*
 * Fork while another thread is inside sk_synchronize_rcu() (and, second
 * round, the expedited one), blocked on a reader: the child completes its
 * own grace periods of every kind and runs callbacks; in the parent the
 * waiter still waits until its reader leaves.
 */
static void fork_while_synchronize_waits(void)
{
	int expedited;

	for (expedited = 0; expedited < 2; expedited++) {
		struct sk_test_holder r;
		struct syncer s = { .expedited = expedited, .reader = &r };
		unsigned long c0;
		pid_t pid;

		sk_test_holder_start(&r, 0, NULL, NULL);
		c0 = sk_test_gp_ctr();
		sk_test_thread_start(&s.t, syncer_main, &s);
		sk_test_wait_gp_started(c0, NULL);
		usleep(10000); /* normal: asleep on the futex by now */
		calls_before_fork = sk_test_rcu_stats().sync_calls;
		pid = sk_test_fork();
		if (pid == 0)
			child_after_fork_in_gp();
		check_child_ok(pid, expedited ? "fork in expedited gp"
					      : "fork in gp");
		SK_CHECK_EQ(LOAD(s.returned), 0);
		sk_test_holder_release(&r);
		pthread_join(s.t, NULL);
		SK_CHECK_EQ(LOAD(s.early), 0);
	}
}

/* ---- fork while the worker runs callbacks ---------------------------------- */

/*
 * Objects recycled through a ring, so that the flood allocates nothing.
 * Once its callback has run an object belongs to the callback (it "may
 * free the object"): this one overwrites it entirely, as free() and a new
 * owner would, then hands it back to the producer.
 */
#define RING 8192

struct ring_obj {
	struct sk_rcu_head rcu;
	long v;
};

static struct ring_obj ring[RING];
static int ring_free[RING]; /* 1: the producer may queue it again */
static int flood_stop;

static void scribble_cb(struct sk_rcu_head *h)
{
	struct ring_obj *o = OF(h, struct ring_obj, rcu);
	int k;

	memset(o, 0xa5, sizeof(*o));
	STORE(ring_free[o - ring], 1);
	/* Keep the worker inside its batch most of the time. */
	for (k = 0; k < 20; k++)
		sk_cpu_relax();
}

static void *flooder(void *arg)
{
	unsigned i;

	(void)arg;
	for (i = 0; !LOAD(flood_stop); i = (i + 1) % RING) {
		while (!LOAD(ring_free[i]))
			if (LOAD(flood_stop))
				return NULL;
			else
				sched_yield();
		STORE(ring_free[i], 0);
		memset(&ring[i], 0, sizeof(ring[i]));
		if (sk_call_rcu(&ring[i].rcu, scribble_cb) != 0)
			abort();
	}
	return NULL;
}

/*
 * Fork n children one after the other, each running child(); returns how
 * many failed, and reports the first.
 */
static int fork_children(int n, void (*child)(void))
{
	int i, bad = 0;

	for (i = 0; i < n; i++) {
		int st = 0;
		pid_t pid = sk_test_fork();

		if (pid == 0)
			child();
		waitpid(pid, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			if (!bad)
				fprintf(stderr, "fork %d: child %s %d\n", i,
					WIFSIGNALED(st) ? "killed by signal"
							: "exit status",
					WIFSIGNALED(st) ? WTERMSIG(st)
							: WEXITSTATUS(st));
			bad++;
		}
	}
	return bad;
}

/*
 * Fork n children running child() (not scaled: forks are cheap) while a
 * thread floods callbacks; all of them must succeed.
 */
static void forks_under_flood(int n, void (*child)(void))
{
	pthread_t t;
	int i, bad;

	if (!CHILD_THREADS) {
		fprintf(stderr, "skipped under TSan (no threads after a "
				"multi-threaded fork)\n");
		return;
	}
	for (i = 0; i < RING; i++)
		ring_free[i] = 1;
	STORE(flood_stop, 0);
	sk_test_thread_start(&t, flooder, NULL);
	usleep(50000);
	bad = fork_children(n, child);
	STORE(flood_stop, 1);
	pthread_join(t, NULL);
	sk_rcu_barrier();
	fprintf(stderr, "%d of %d children failed\n", bad, n);
	SK_CHECK_EQ(bad, 0);
}

/*
 * After sk_rcu_barrier() in a fork child of the flood: every ring object
 * is back (its callback ran, here or before the fork), but at most the
 * one the flooder was queueing at the fork (taken from the ring, not yet
 * pushed, or pushed and not yet linked: lost to the child).
 */
static void check_ring_drained(void)
{
	int i, out = 0;

	for (i = 0; i < RING; i++)
		out += !LOAD(ring_free[i]);
	SK_CHECK_LE(out, 1);
}

static void child_after_fork_in_batch(void)
{
	static struct sk_rcu_head h;

	SK_CHECK_EQ(sk_call_rcu(&h, child_cb), 0);
	sk_rcu_barrier();
	SK_CHECK_EQ(LOAD(child_ran), 1);
	check_ring_drained();
	child_exit();
}

/*
 * Fork again and again while a producer floods callbacks, so that the
 * worker is often in the middle of a batch: the child must not touch the
 * parent's callbacks that already ran (their objects have been reused),
 * and must work normally.
 */
static void fork_while_worker_runs_callbacks(void)
{
	forks_under_flood(200, child_after_fork_in_batch);
}

/* ---- fork while per-CPU callback workers run ------------------------------ */

static void child_with_pcpu_parent(void)
{
	static struct sk_rcu_head h1, h2;

	/* The parent's per-CPU workers do not exist here. */
	SK_CHECK_EQ(sk_rcu_cb_workers_running(), 0);
	SK_CHECK_EQ(sk_rcu_cb_workers_destroy(), -ENOENT);
	STORE(child_ran, 0);
	SK_CHECK_EQ(sk_call_rcu(&h1, child_cb), 0);
	sk_rcu_barrier();
	SK_CHECK_EQ(LOAD(child_ran), 1);
	/* The per-CPU queues' callbacks ran on the default worker. */
	check_ring_drained();
	/* The child may have per-CPU workers of its own. */
	SK_CHECK_EQ(sk_rcu_cb_workers_create(0), 0);
	SK_CHECK_GT(sk_rcu_cb_workers_running(), 0);
	SK_CHECK_EQ(sk_call_rcu(&h2, child_cb), 0);
	sk_rcu_barrier();
	SK_CHECK_EQ(LOAD(child_ran), 2);
	SK_CHECK_EQ(sk_rcu_cb_workers_destroy(), 0);
	child_exit();
}

/*
 * Fork again and again while per-CPU workers run callbacks that a thread
 * floods: the child has none of them (the default worker runs the
 * callbacks of their queues), queues and waits for callbacks on the default worker,
 * creates per-CPU workers of its own and destroys them.
 */
static void fork_while_per_cpu_workers_run(void)
{
	SK_CHECK_EQ(sk_rcu_cb_workers_create(0), 0);
	forks_under_flood(50, child_with_pcpu_parent);
	SK_CHECK_EQ(sk_rcu_cb_workers_destroy(), 0);
}

/* ---- fork during the process's first sk_call_rcu() ------------------------ */

/*
 * A grandchild that neither exits nor dies within this many seconds is
 * killed by SIGALRM: a hang guard (it does microseconds of work), not a
 * time bound.
 */
#define FC_HANG_S 10

struct fc_state {
	int ready, go; /* the first caller spins on go once ready */
};

static struct sk_rcu_head fc_head;

static void fc_cb(struct sk_rcu_head *h)
{
	(void)h;
}

/* The thread that makes the process's first sk_call_rcu(). */
static void *fc_first_caller(void *arg)
{
	struct fc_state *s = arg;

	STORE(s->ready, 1);
	while (!LOAD(s->go))
		sk_cpu_relax();
	if (sk_call_rcu(&fc_head, fc_cb) != 0)
		abort();
	return NULL;
}

/*
 * gcc 12's libasan does not lock its allocator around fork(): a child forked
 * while another thread is inside malloc() or free() inherits the
 * allocator's lock held, and its first allocation, or the start of a new
 * thread (libasan frees the pthread attributes it read), waits forever.
 * A grandchild here is forked exactly while the first caller allocates its
 * queue and starts the worker, so under gcc's ASan it checks only what
 * needs neither allocation nor a new thread: the statistics and a barrier
 * with nothing queued, which is where the original defect showed.  Found
 * with gdb on grandchildren
 * hung in the ASan build (7 of 7 hung in at most 4 attempts each):
 *   main thread: aligned_alloc (queue_get) -> __asan::Allocator::Allocate
 *     -> SizeClassAllocator64::GetFromAllocator -> __sanitizer::Mutex::Lock
 *   or the new worker: __asan::AsanThread::Init -> pthread_getattr_np -> free
 *     -> QuarantineCache::Enqueue -> QuarantineCallback::Allocate(8192)
 *     -> __sanitizer::Mutex::Lock, while the main thread waits for it in
 *     sk_rcu_barrier();
 * and a 20-line program without scalekit (a thread calls aligned_alloc() and
 * free() in a loop, the main thread forks, each child allocates once) hangs
 * 2 of 200 children under gcc 12 -fsanitize=address, 0 of 200 without.
 */
#if defined(__SANITIZE_ADDRESS__) && !defined(__clang__)
#define FC_CHILD_ALLOCS 0
#else
#define FC_CHILD_ALLOCS CHILD_THREADS
#endif

/*
 * The grandchild: the callback machinery must work.  The statistics first
 * (they walk the queue list under the queue lock); then sk_rcu_barrier():
 * before the fix it re-ran the interrupted one-time initialization, which
 * linked the queue list to itself, and spun on it forever.  With nothing
 * queued, neither allocates or starts a thread (with the first caller's
 * callback inherited, the barrier starts the worker to run it: only where
 * the child may).  Then a callback, a barrier
 * and the statistics again, which start the worker and allocate the
 * thread's queue: not under TSan (see CHILD_THREADS) nor gcc's ASan (see
 * FC_CHILD_ALLOCS).
 */
static void fc_grandchild(void)
{
	static struct sk_rcu_head h;
	struct sk_rcu_stats st;

	alarm(FC_HANG_S);
	/*
	 * The first call's callback is pending here too when the fork came
	 * after its push (and is lost to the child when the fork came in
	 * the middle of it): at most one.
	 */
	if (sk_rcu_get_stats(&st) != 0 || st.cb_queued - st.cb_invoked > 1)
		_exit(5);
	/* With nothing queued, the barrier starts no worker. */
	if (st.cb_queued == st.cb_invoked || FC_CHILD_ALLOCS)
		sk_rcu_barrier();
	if (FC_CHILD_ALLOCS) {
		/* The inherited callback, if any, ran. */
		if (sk_rcu_get_stats(&st) != 0 || st.cb_queued != st.cb_invoked)
			_exit(6);
		if (sk_call_rcu(&h, child_cb) != 0)
			_exit(3);
		sk_rcu_barrier();
		if (LOAD(child_ran) != 1)
			_exit(4);
		if (sk_rcu_get_stats(&st) != 0 || st.cb_queued != st.cb_invoked)
			_exit(5);
	}
	_exit(0);
}

/*
 * One attempt, in a process that has not used callbacks yet: a thread
 * makes the first sk_call_rcu() while this thread forks, delay spins
 * after releasing it.  Exits with the grandchild's fate: 0 fine, 1 hung
 * (SIGALRM), 2 anything else.
 */
static void fc_attempt(unsigned delay)
{
	struct fc_state s = { 0, 0 };
	pthread_t t;
	unsigned i;
	pid_t pid;
	int st;

	sk_test_thread_start(&t, fc_first_caller, &s);
	while (!LOAD(s.ready))
		sk_cpu_relax();
	STORE(s.go, 1);
	for (i = 0; i < delay; i++)
		sk_cpu_relax();
	pid = fork();
	if (pid == 0)
		fc_grandchild();
	st = sk_test_wait(pid);
	pthread_join(t, NULL);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		_exit(0);
	if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
		_exit(1);
	fprintf(stderr, "grandchild: %s %d\n",
		WIFSIGNALED(st) ? "signal" : "exit status",
		WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	_exit(2);
}

/*
 * The child process (--child=first-call-fork, started by exec, so nothing
 * has used callbacks in it): n attempts, each in a fresh fork of it; the
 * fork delay sweeps 0..FC_DELAYS-1 times FC_DELAY_STEP spins, across the
 * window in which the first call initializes the callback machinery.
 * Stops at the first failure.  Exit status: 0 when every attempt passed.
 */
#define FC_DELAYS 64
#define FC_DELAY_STEP 8

static int fc_child(unsigned n)
{
	unsigned i, fails = 0, hung = 0;

	for (i = 0; i < n && !fails; i++) {
		pid_t pid = sk_test_fork();
		int st;

		if (pid == 0)
			fc_attempt((i % FC_DELAYS) * FC_DELAY_STEP);
		st = sk_test_wait(pid);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fails++;
			hung += WIFEXITED(st) && WEXITSTATUS(st) == 1;
		}
	}
	fprintf(stderr, "first-call-fork: %u attempts, %u failed%s\n", i,
		fails, hung ? " (grandchild hung: killed by SIGALRM)" : "");
	return fails ? 1 : 0;
}

/*
 * fork() while another thread makes the process's first sk_call_rcu(),
 * that is, while the callback machinery initializes itself: in the child,
 * sk_rcu_barrier(), sk_call_rcu() and the statistics work.  Before the
 * fix the child's queue list was linked to itself (the child handler and
 * a re-run of the interrupted one-time initialization both added the
 * static queue) and sk_rcu_barrier() spun forever.  Each attempt needs a
 * process whose callbacks are untouched: this program runs again as a
 * child, which forks one such process per attempt.
 */
static void fork_during_first_call_rcu_leaves_child_usable(void)
{
	char flag[64], out[4096];
	char *argv[] = { "test_rcu_fork", flag, NULL };
	/* Under TSan, each fork of a multi-threaded process takes ~1 s. */
	unsigned n = CHILD_THREADS ? 300 / sk_test_slow() : 8;
	int st;

	snprintf(flag, sizeof(flag), "--child=first-call-fork=%u", n);
	st = sk_test_exec_self(argv, environ, out, sizeof(out));
	fprintf(stderr, "child: %s", out);
	SK_CHECK_EXIT_0(st);
}

/* ---- fork from a reader while a barrier waits -------------------------------- */

static struct sk_rcu_head fb_head;
static int fb_queued, fb_barrier_done;

static void fb_cb(struct sk_rcu_head *h)
{
	(void)h;
}

static void *fb_barrier_thread(void *arg)
{
	(void)arg;
	if (sk_call_rcu(&fb_head, fb_cb) != 0)
		abort();
	STORE(fb_queued, 1);
	sk_rcu_barrier(); /* waits for a grace period our forker holds up */
	STORE(fb_barrier_done, 1);
	return NULL;
}

/*
 * A thread inside a read section (first round: general; second: online
 * QSBR) calls fork() while another thread's sk_rcu_barrier() waits for a
 * callback whose grace period waits for that very section.  fork() must
 * not wait for the barrier: it returns in both processes, the child exits
 * normally, and the barrier completes once the section ends.  If fork()
 * waited, nothing could end the section: the test runs into the CTest
 * timeout (which is why it runs last).
 */
static void fork_from_reader_while_barrier_waits(void)
{
	int qsbr;

	for (qsbr = 0; qsbr < 2; qsbr++) {
		pthread_t t;
		unsigned long c0;
		pid_t pid;

		memset(&fb_head, 0, sizeof(fb_head));
		STORE(fb_queued, 0);
		STORE(fb_barrier_done, 0);
		if (qsbr)
			sk_rcu_thread_online();
		else
			sk_rcu_read_lock();
		c0 = sk_test_gp_ctr();
		sk_test_thread_start(&t, fb_barrier_thread, NULL);
		while (!LOAD(fb_queued))
			sched_yield();
		/* The callback's grace period waits for us... */
		sk_test_wait_gp_started(c0, NULL);
		/* ...and the barrier for the callback, by now. */
		usleep(20000);
		fprintf(stderr, "forking from inside a %s section...\n",
			qsbr ? "QSBR" : "read");
		pid = sk_test_fork();
		if (pid == 0)
			_exit(0);
		check_child_ok(pid, "fork from reader during barrier");
		SK_CHECK_EQ(LOAD(fb_barrier_done), 0);
		if (qsbr)
			sk_rcu_thread_offline();
		else
			sk_rcu_read_unlock();
		pthread_join(t, NULL);
		SK_CHECK_EQ(LOAD(fb_barrier_done), 1);
	}
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strncmp(argv[1], "--child=first-call-fork=", 24))
		return fc_child((unsigned)strtoul(argv[1] + 24, NULL, 10));
	sk_test_args(argc, argv);
	sk_test_seed_init();
	recs = mmap(NULL, NREC * sizeof(*recs), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (recs == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	SK_RUN(fork_with_readers_and_callbacks_in_flight);
	SK_RUN(fork_while_synchronize_waits);
	SK_RUN(fork_while_worker_runs_callbacks);
	SK_RUN(fork_while_per_cpu_workers_run);
	SK_RUN(fork_during_first_call_rcu_leaves_child_usable);
	SK_RUN(fork_from_reader_while_barrier_waits);
	munmap(recs, NREC * sizeof(*recs));
	return sk_test_report();
}
