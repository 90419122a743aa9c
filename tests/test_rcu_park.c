/* SPDX-License-Identifier: MIT */
/*
 * test_rcu_park.c - registered general threads that wait for a grace
 * period leave the registry counts ("parking", src/rcu_reader.c) until
 * their next read section, so that updaters that are also readers do not
 * make each other's grace periods pay the heavy fence.
 *
 * What is proven (real threads):
 *   - a parked caller (it leads its own grace period) still waits for a
 *     reader of another thread; broken twin SK__RCU_BUSTED_PARK_SELF (the
 *     leader leaves itself out of the counts a second time) returns while
 *     that reader is still inside its section;
 *   - sk_rcu_get_stats() counts parked threads as registered;
 *   - a read section begun by a signal handler in a parked thread, while
 *     it naps and while it waits for grace periods in a loop, is waited
 *     for: another updater's grace periods never let it see an object
 *     poisoned after them; with twin SK__RCU_BUSTED_PARK_SLOW (below) it
 *     does (run alone: ctest test_rcu_park_busted_handler).  Both run
 *     only by name (ctest test_rcu_park_handler for the first): qemu-user
 *     cannot run them (tests/qemu/README.md), so CTest labels them noqemu;
 *   - a parked thread's word answers the quiet round for it: grace periods
 *     beside a busy reader still pass by the round (and the reader never
 *     sees a poisoned object);
 *   - a child forked by a parked thread counts that thread once: its
 *     grace periods need no first barrier (checked by the kinds counts);
 *   - a parked thread's next read section counts it again: an unregistered
 *     updater's grace period waits for it; broken twin
 *     SK__RCU_BUSTED_PARK_SLOW (the read-lock slow path resumes without
 *     counting the thread) returns while the section is open.
 * The PARK_SLOW twins leave the counts wrong: each runs last in its own
 * process.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal/testing.h" /* the testing build: tests/testing.cmake */
#include "scalekit/rcu.h"
#include "sk_test.h"
#include "sk_test_rcu.h"
#include "sk_test_util.h"

#define HAS_QUIET_ROUND (SK__RCU_SEQ_BITS >= 40)

/* How long the holder keeps its section open after the caller waits. */
#define HOLD_MS 50

/* ---- a reader that holds a section until released ------------------- */

static struct {
	int in, release, left, done;
	int sync_first; /* synchronize (park) before the section */
	int reg, go;	/* sync_first: registered; may synchronize */
} h;

/*
 * Register the calling thread, say so in *mine (if not NULL), and park it
 * (a grace-period wait) once *other says that another thread is
 * registered: a thread parks only when it is not alone.  Its counts then
 * leave out both.
 */
static void register_and_park(int *mine, const int *other)
{
	SK_CHECK_EQ(sk_rcu_register_thread(), 0);
	if (mine)
		STORE(*mine, 1);
	while (!LOAD(*other))
		sched_yield();
	sk_synchronize_rcu(); /* registered: parks, stays parked */
}

static void *holder(void *arg)
{
	(void)arg;
	if (LOAD(h.sync_first))
		register_and_park(&h.reg, &h.go);
	sk_rcu_read_lock();
	STORE(h.in, 1);
	while (!LOAD(h.release))
		sched_yield();
	STORE(h.left, 1);
	sk_rcu_read_unlock();
	while (!LOAD(h.done))
		sched_yield();
	return NULL;
}

static void *releaser(void *arg)
{
	(void)arg;
	sk_test_sleep_ms(HOLD_MS);
	STORE(h.release, 1);
	return NULL;
}

/*
 * Start the holder and wait for its section.  sync_first: the holder
 * registers and parks first, and so does this thread (before it), so
 * that the counts leave out both until the holder's section.
 */
static void holder_start(pthread_t *t, int sync_first)
{
	memset(&h, 0, sizeof(h));
	STORE(h.sync_first, sync_first);
	sk_test_thread_start(t, holder, NULL);
	if (sync_first) {
		register_and_park(NULL, &h.reg);
		STORE(h.go, 1);
	}
	while (!LOAD(h.in))
		sched_yield();
}

/*
 * One grace period by the calling thread while the holder is inside its
 * section; returns whether the section had ended when it returned.
 */
static int sync_waits_for_holder(void)
{
	pthread_t rel;
	int left;

	sk_test_thread_start(&rel, releaser, NULL);
	sk_synchronize_rcu();
	left = LOAD(h.left);
	sk_test_thread_join(rel);
	return left;
}

static void holder_stop(pthread_t t)
{
	STORE(h.release, 1);
	STORE(h.done, 1);
	sk_test_thread_join(t);
}

/*
 * round(busted) runs one grace period against the holder and returns
 * whether the holder's section had ended when it returned: with the
 * library as built (busted 0) it must have, three rounds in a row; with a
 * broken twin one round must return early.
 */
static void check_rounds(int (*round)(int), int busted)
{
	int r;

	for (r = 0; r < (busted ? 1 : 3); r++)
		SK_CHECK_EQ(round(busted), !busted);
}

/* ---- parked caller, reader elsewhere ---------------------------------- */

static int parked_caller_round(int busted)
{
	struct sk_rcu_stats st;
	pthread_t t;
	int left;

	SK_CHECK_EQ(sk_rcu_register_thread(), 0);
	holder_start(&t, 0);
	sk__rcu_set_busted(busted);
	left = sync_waits_for_holder(); /* this thread parks in it */
	sk__rcu_set_busted(0);
	SK_CHECK_EQ(sk_rcu_get_stats(&st), 0);
	SK_CHECK_EQ(st.readers, 2); /* parked, still registered */
	holder_stop(t);
	SK_CHECK_EQ(sk_rcu_unregister_thread(), 0);
	return left;
}

static void parked_caller_waits_for_reader(void)
{
	check_rounds(parked_caller_round, 0);
}

static void busted_park_self_is_caught(void)
{
	check_rounds(parked_caller_round, SK__RCU_BUSTED_PARK_SELF);
}

/* ---- signal-handler sections in a parked thread ----------------------- */

#define S_MAGIC ((unsigned long)0x9e3779b97f4a7c15ULL)
#define S_POISON ((unsigned long)0x6b6b6b6b6b6b6b6bULL)

static struct {
	struct sk_test_robj *ptr, *grave;
	pthread_t waiter;
	int stop, loop_sync;
	int reg, go; /* the waiter registered; may park */
	unsigned long handled, bad, gps;
} s;

/*
 * A section of about 200 us that sleeps half of it (nanosleep() is
 * async-signal-safe), so that the replacer runs meanwhile even on this
 * CPU: the object must stay unpoisoned throughout.
 */
static void on_signal(int sig)
{
	struct timespec nap = { 0, 100000 };
	double t0 = sk_test_now();
	struct sk_test_robj *p;
	unsigned long v1, v2;

	(void)sig;
	sk_rcu_read_lock();
	p = sk_rcu_dereference(s.ptr);
	v1 = __atomic_load_n(&p->val, __ATOMIC_RELAXED);
	nanosleep(&nap, NULL);
	while (sk_test_now() - t0 < 200e-6)
		sk_cpu_relax();
	v2 = __atomic_load_n(&p->val, __ATOMIC_RELAXED);
	sk_rcu_read_unlock();
	if (v1 != S_MAGIC || v2 != S_MAGIC)
		INC(s.bad);
	INC(s.handled);
}

/*
 * Registered, one grace-period wait (parked from then on), then naps
 * until s.loop_sync, then grace-period waits in a loop: the signals find
 * the thread parked and idle (the first handler's section counts it
 * again; it stays counted while it naps), then inside its waits.
 */
static void *sync_looper(void *arg)
{
	(void)arg;
	register_and_park(&s.reg, &s.go);
	while (!LOAD(s.stop) && !LOAD(s.loop_sync))
		sk_test_sleep_us(100);
	while (!LOAD(s.stop))
		sk_synchronize_rcu();
	return NULL;
}

/* Unregistered: replace, wait, poison the old object (kept till the end). */
static void *replacer(void *arg)
{
	(void)arg;
	while (!LOAD(s.stop)) {
		struct sk_test_robj *old = s.ptr;

		sk_rcu_assign_pointer(s.ptr, sk_test_robj_new(S_MAGIC));
		sk_synchronize_rcu();
		__atomic_store_n(&old->val, S_POISON, __ATOMIC_RELAXED);
		old->next = s.grave;
		s.grave = old;
		INC(s.gps);
	}
	return NULL;
}

/*
 * Signal the parked thread every 1 ms while an unregistered thread
 * replaces and poisons objects: nap_s seconds while it naps, then
 * loop_s seconds while it waits for grace periods in a loop (and until
 * 100 handler sections ran: qemu is slow; with until_bad, until a bad
 * read, at most 10 s in all).  Returns the bad reads.
 */
static unsigned long handler_rounds(double nap_s, double loop_s,
				    int until_bad)
{
	pthread_t rep;
	double t0 = sk_test_now(), deadline = t0 + 10.0;
	struct sk_test_robj *p;
	unsigned long bad;

	memset(&s, 0, sizeof(s));
	s.ptr = sk_test_robj_new(S_MAGIC);
	sk_test_on_signal(SIGUSR1, on_signal);
	sk_test_thread_start(&s.waiter, sync_looper, NULL);
	register_and_park(NULL, &s.reg); /* parked all along: not counted */
	STORE(s.go, 1);
	sk_test_thread_start(&rep, replacer, NULL);
	while ((sk_test_now() < t0 + nap_s + loop_s ||
		LOAD(s.handled) < 100 || (until_bad && !LOAD(s.bad))) &&
	       sk_test_now() < deadline) {
		if (sk_test_now() >= t0 + nap_s)
			STORE(s.loop_sync, 1);
		pthread_kill(s.waiter, SIGUSR1);
		sk_test_sleep_ms(1);
	}
	STORE(s.stop, 1);
	sk_test_thread_join(rep);
	sk_test_thread_join(s.waiter);
	signal(SIGUSR1, SIG_DFL);
	SK_CHECK_EQ(sk_rcu_unregister_thread(), 0);
	bad = LOAD(s.bad);
	fprintf(stderr, "  handler sections %lu, grace periods %lu, bad %lu\n",
		LOAD(s.handled), LOAD(s.gps), bad);
	SK_CHECK_GT(LOAD(s.handled), 0);
	SK_CHECK_GT(LOAD(s.gps), 0);
	free(s.ptr);
	while ((p = s.grave)) {
		s.grave = p->next;
		free(p);
	}
	return bad;
}

static void handler_sections_in_parked_thread_are_waited_for(void)
{
	SK_CHECK_EQ(handler_rounds(0.2, 0.3, 0), 0);
}

/*
 * Twin SK__RCU_BUSTED_PARK_SLOW while the thread naps: its first handler
 * section leaves it uncounted, so every later one runs unseen by the
 * replacer's grace periods.  Leaves the counts wrong: run alone (ctest
 * test_rcu_park_busted_handler), never in the default run.
 */
static void busted_handler_section_is_caught(void)
{
	unsigned long bad;

	sk__rcu_set_busted(SK__RCU_BUSTED_PARK_SLOW);
	bad = handler_rounds(0.3, 0, 1);
	sk__rcu_set_busted(0);
	SK_CHECK_GT(bad, 0);
}

/* ---- the quiet round with a parked thread ---------------------------- */

/* The busy reader beside the parked thread. */
static struct sk_test_busy qr;

/* Registered, one grace-period wait (parks), then naps until stopped. */
static void *park_and_nap(void *arg)
{
	(void)arg;
	SK_CHECK_EQ(sk_rcu_register_thread(), 0);
	sk_synchronize_rcu();
	STORE(h.in, 1);
	while (!LOAD(qr.stop))
		sk_test_sleep_ms(1);
	return NULL;
}

/*
 * A busy reader and a parked registered thread: the parked one's word
 * answers for it, so normal grace periods still pass by the quiet round
 * (an idle registered thread that is not parked would stop the round
 * and send every grace period to membarrier(2)).  The reader never sees
 * an object poisoned after a grace period.
 */
static void parked_thread_answers_the_quiet_round(void)
{
	struct sk__rcu_gp_kinds k0, k1;
	pthread_t rd, pk;
	double deadline = sk_test_now() + 30.0;
	struct sk_test_robj *old;
	int i, rounds = 0;

	memset(&qr, 0, sizeof(qr));
	memset(&h, 0, sizeof(h));
	qr.ptr = sk_test_robj_new(S_MAGIC);
	qr.magic = S_MAGIC;
	sk_test_thread_start(&rd, sk_test_busy_reader, &qr);
	while (LOAD(qr.reads) < 2048)
		sched_yield();
	/* Parks: the busy reader is registered. */
	sk_test_thread_start(&pk, park_and_nap, NULL);
	while (!LOAD(h.in))
		sched_yield();
	sk__rcu_get_gp_kinds(&k0);
	do {
		for (i = 0; i < 100; i++) {
			old = qr.ptr;
			sk_rcu_assign_pointer(qr.ptr, sk_test_robj_new(S_MAGIC));
			sk_synchronize_rcu();
			__atomic_store_n(&old->val, S_POISON, __ATOMIC_RELAXED);
			free(old);
		}
		sk__rcu_get_gp_kinds(&k1);
	} while (k1.quiet - k0.quiet < 100 && sk_test_now() < deadline &&
		 (HAS_QUIET_ROUND || ++rounds < 10));
	STORE(qr.stop, 1);
	sk_test_thread_join(rd);
	sk_test_thread_join(pk);
	free(qr.ptr);
	fprintf(stderr, "  quiet %lu, heavy %lu, handshake %lu, bad %lu\n",
		k1.quiet - k0.quiet, k1.heavy - k0.heavy,
		k1.handshake - k0.handshake, LOAD(qr.bad));
	SK_CHECK_EQ(LOAD(qr.bad), 0);
	if (HAS_QUIET_ROUND)
		SK_CHECK_GT(k1.quiet - k0.quiet, 0);
	else
		SK_CHECK_EQ(k1.quiet - k0.quiet, 0); /* no round to run */
}

/* ---- fork() by a parked thread ----------------------------------------- */

/*
 * In the child the forking thread is the only one, counted once: its
 * grace periods take no first barrier at all (no kind counted), before
 * and after a read section.  If the child kept the parked word, its next
 * section would count it a second time and every later grace period
 * would pay for a reader that does not exist.  Exit status: 0 when so.
 */
static int child_of_parked_thread(void)
{
	struct sk__rcu_gp_kinds k0, k1;
	struct sk_rcu_stats st;
	int i;

	sk_rcu_read_lock();
	sk_rcu_read_unlock();
	sk__rcu_get_gp_kinds(&k0);
	for (i = 0; i < 10; i++)
		sk_synchronize_rcu();
	sk__rcu_get_gp_kinds(&k1);
	if (sk_rcu_get_stats(&st) != 0 || st.readers != 1)
		return 1;
	return k1.heavy != k0.heavy || k1.handshake != k0.handshake ||
	       k1.qsbr_only != k0.qsbr_only;
}

static void fork_of_parked_thread_counts_it_once(void)
{
	pthread_t t;
	pid_t pid;
	int status = -1;

	holder_start(&t, 0); /* another registered thread: this one parks */
	SK_CHECK_EQ(sk_rcu_register_thread(), 0);
	STORE(h.release, 1);
	while (!LOAD(h.left))
		sched_yield();
	sk_synchronize_rcu(); /* parks */
	pid = fork();
	if (pid == 0)
		_exit(child_of_parked_thread());
	SK_CHECK(pid > 0);
	SK_CHECK_EQ(waitpid(pid, &status, 0), pid);
	SK_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	holder_stop(t);
	SK_CHECK_EQ(sk_rcu_unregister_thread(), 0);
}

/* ---- a parked thread's next section ----------------------------------- */

struct upd_result {
	int left;
};

/* An unregistered updater: one grace period while the holder reads. */
static void *unregistered_sync(void *arg)
{
	struct upd_result *r = arg;

	r->left = sync_waits_for_holder();
	return NULL;
}

static int next_section_round(int busted)
{
	struct upd_result r = { -1 };
	pthread_t t, u;

	sk__rcu_set_busted(busted);
	holder_start(&t, 1); /* parks, then reads */
	sk_test_thread_start(&u, unregistered_sync, &r);
	sk_test_thread_join(u);
	sk__rcu_set_busted(0);
	holder_stop(t);
	SK_CHECK_EQ(sk_rcu_unregister_thread(), 0);
	return r.left;
}

static void next_section_counts_the_thread_again(void)
{
	check_rounds(next_section_round, 0);
}

static void busted_park_slow_is_caught(void)
{
	check_rounds(next_section_round, SK__RCU_BUSTED_PARK_SLOW);
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_deadline("test_rcu_park: a synchronize call", 120);
	SK_RUN(parked_caller_waits_for_reader);
	SK_RUN(busted_park_self_is_caught);
	/* Signals: by name only, a CTest of its own (labelled noqemu). */
	if (argc > 1)
		SK_RUN(
			handler_sections_in_parked_thread_are_waited_for);
	SK_RUN(parked_thread_answers_the_quiet_round);
	SK_RUN(fork_of_parked_thread_counts_it_once);
	SK_RUN(next_section_counts_the_thread_again);
	/* The twins below leave the counts wrong: one per process, last. */
	if (argc > 1)
		SK_RUN(busted_handler_section_is_caught);
	else
		SK_RUN(busted_park_slow_is_caught);
	return sk_test_report();
}
