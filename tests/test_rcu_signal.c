/* SPDX-License-Identifier: MIT */
/*
 * test_rcu_signal.c - read sections begun by signal handlers in a thread
 * that goes online and offline, reads while offline (a switch to general
 * mode and back), and now and then unregisters and registers again by
 * going online, while another thread replaces and poisons the object
 * the sections read.
 *
 * What is proven (real threads, a signal every few microseconds):
 *   - no section sees a poisoned or freed object (under the sanitizers:
 *     no use after free, no free racing a section's loads), and the
 *     thread's loop never hangs (a handler whose section took the registry lock again
 *     would deadlock; the deadline ends the test then);
 *   - the registry counts stay right: afterwards, with one QSBR thread
 *     registered, every grace period is QSBR-only (a thread counted as
 *     general twice would make them general ones);
 *   - broken twin SK__RCU_BUSTED_MODE_SWITCH (a thread that leaves QSBR
 *     mode keeps its count even when a handler switched and counted it
 *     in between) leaves a count behind, and the grace periods show it.
 * The handler reads only while the thread is registered, as docs/rcu.md
 * ("Registration") allows.  Labelled noqemu (tests/CMakeLists.txt):
 * qemu-user mishandles signals delivered to threads.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/testing.h" /* the testing build: tests/testing.cmake */
#include "scalekit/rcu.h"
#include "sk_test.h"
#include "sk_test_rcu.h"
#include "sk_test_util.h"

#define MAGIC ((unsigned long)0x5ca1ab1e5ca1ab1eULL)
#define POISON ((unsigned long)0xdeaddeaddeaddeadULL)

static struct {
	struct sk_test_robj *ptr;
	int stop;
	unsigned long rounds, handled, skipped, bad, gps;
} st;

/* 1 while the switcher is registered: the handler reads only then. */
static volatile sig_atomic_t registered;

static void read_once(void)
{
	struct sk_test_robj *p;

	sk_rcu_read_lock();
	p = sk_rcu_dereference(st.ptr);
	if (__atomic_load_n(&p->val, __ATOMIC_RELAXED) != MAGIC)
		INC(st.bad);
	sk_rcu_read_unlock();
}

static void on_signal(int sig)
{
	(void)sig;
	if (!registered) {
		INC(st.skipped);
		return;
	}
	read_once();
	INC(st.handled);
}

/*
 * Online (registering when not registered), a quiescent state, offline;
 * then in most rounds a read while offline (general mode until the next
 * online); every 256th round unregisters.
 */
static void *switcher(void *arg)
{
	unsigned long i;

	(void)arg;
	for (i = 0; !LOAD(st.stop); i++) {
		SK_CHECK_EQ(sk_rcu_thread_online(), 0);
		registered = 1;
		sk_rcu_quiescent_state();
		sk_rcu_thread_offline();
		if (i % 4 != 3)
			read_once();
		if (i % 256 == 255) {
			registered = 0;
			SK_CHECK_EQ(sk_rcu_unregister_thread(), 0);
		}
		INC(st.rounds);
	}
	registered = 0;
	sk_rcu_unregister_thread(); /* -EINVAL when not registered */
	return NULL;
}

/*
 * Unregistered: replace, wait for a grace period, poison the old object
 * and free it, every 20 us.  A section that still reads it sees the
 * poison, or ASan reports the use after free, or TSan the free without a
 * happens-before edge from the section's loads (which needs the release
 * at nested unlocks in TSan builds: include/scalekit/rcu.h).
 */
static void *replacer(void *arg)
{
	(void)arg;
	while (!LOAD(st.stop)) {
		struct sk_test_robj *old;

		old = __atomic_exchange_n(&st.ptr, sk_test_robj_new(MAGIC),
					  __ATOMIC_ACQ_REL);
		if (LOAD(st.gps) % 2)
			sk_synchronize_rcu_expedited();
		else
			sk_synchronize_rcu();
		__atomic_store_n(&old->val, POISON, __ATOMIC_RELAXED);
		free(old);
		INC(st.gps);
		sk_test_sleep_us(20);
	}
	return NULL;
}

/*
 * Signal the switcher every few microseconds for at least min_s seconds
 * and 1,000 handled sections (with until_reentry, until a section began
 * inside a window), at most 20 s.  Returns the sections begun inside a
 * window.
 */
static void signal_rounds(double min_s, int replace)
{
	pthread_t sw, rep;
	double t0 = sk_test_now();

	memset(&st, 0, sizeof(st));
	st.ptr = sk_test_robj_new(MAGIC);
	sk_test_on_signal(SIGUSR1, on_signal);
	sk_test_thread_start(&sw, switcher, NULL);
	if (replace)
		sk_test_thread_start(&rep, replacer, NULL);
	while (sk_test_now() < t0 + 20.0) {
		if (sk_test_now() >= t0 + min_s && LOAD(st.handled) >= 1000)
			break;
		pthread_kill(sw, SIGUSR1);
		sk_test_sleep_us(5);
	}
	STORE(st.stop, 1);
	sk_test_thread_join(sw);
	if (replace)
		sk_test_thread_join(rep);
	signal(SIGUSR1, SIG_DFL);
	fprintf(stderr,
		"  rounds %lu, handler sections %lu (%lu while unregistered, "
		"skipped), grace periods %lu, bad %lu\n",
		LOAD(st.rounds), LOAD(st.handled), LOAD(st.skipped),
		LOAD(st.gps), LOAD(st.bad));
	SK_CHECK_GT(LOAD(st.rounds), 0);
	SK_CHECK_GT(LOAD(st.handled), 0);
	SK_CHECK_EQ(LOAD(st.bad), 0);
	if (replace)
		SK_CHECK_GT(LOAD(st.gps), 0);
	free(st.ptr);
}

static int qs_stop;

/* An online QSBR thread, announcing until told to stop. */
static void *qsbr_idler(void *arg)
{
	(void)arg;
	SK_CHECK_EQ(sk_rcu_thread_online(), 0);
	STORE(*(int *)arg, 1);
	while (!LOAD(qs_stop)) {
		sk_rcu_quiescent_state();
		sk_test_sleep_us(50);
	}
	sk_rcu_thread_offline();
	return NULL;
}

/*
 * With one online QSBR thread registered (the switcher has unregistered):
 * the grace periods, out of GENERAL_CHECK_GPS, that were not QSBR-only,
 * that is that found a thread counted as general.
 */
#define GENERAL_CHECK_GPS 20

static unsigned long general_gps(void)
{
	struct sk__rcu_gp_kinds k0, k1;
	pthread_t t;
	int online = 0, i;

	STORE(qs_stop, 0);
	sk_test_thread_start(&t, qsbr_idler, &online);
	while (!LOAD(online))
		sched_yield();
	sk__rcu_get_gp_kinds(&k0);
	for (i = 0; i < GENERAL_CHECK_GPS; i++)
		sk_synchronize_rcu();
	sk__rcu_get_gp_kinds(&k1);
	STORE(qs_stop, 1);
	sk_test_thread_join(t);
	return GENERAL_CHECK_GPS - (k1.qsbr_only - k0.qsbr_only);
}

static void handler_sections_keep_the_counts_right(void)
{
	SK_CHECK_EQ(general_gps(), 0); /* the start is right */
	signal_rounds(1.0, 1);
	SK_CHECK_EQ(general_gps(), 0);
}

/*
 * Twin SK__RCU_BUSTED_MODE_SWITCH: a count left behind.  It stays for
 * the rest of the process: the last case.  Rounds of 0.2 s until one
 * leaves it (at most 20).
 */
static void busted_mode_switch_is_caught(void)
{
	unsigned long general = 0;
	int tries;

	sk__rcu_set_busted(SK__RCU_BUSTED_MODE_SWITCH);
	for (tries = 0; tries < 20 && !general; tries++) {
		signal_rounds(0.2, 1);
		general = general_gps();
	}
	sk__rcu_set_busted(0);
	fprintf(stderr, "  BROKEN: %lu of %d grace periods general after %d "
		"rounds\n", general, GENERAL_CHECK_GPS, tries);
	SK_CHECK_GT(general, 0);
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_deadline("test_rcu_signal: the switcher or a grace period", 120);
	SK_RUN(handler_sections_keep_the_counts_right);
	SK_RUN(busted_mode_switch_is_caught);
	return sk_test_report();
}
