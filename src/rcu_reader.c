/* SPDX-License-Identifier: MIT */
/*
 * RCU, reader side: the registry of reader threads and the reader slow
 * paths (registration, QSBR online/offline and quiescent states, the
 * answer to a grace period's handshake or wake-up request), and the
 * check every blocking grace-period call makes first.  The algorithm and
 * the module's overview: src/internal/rcu.h.
 *
 * Barrier pairs placed here [partner's file]:
 *   RCU-M   count_add(): full fences before and after a registry count
 *           changes; pairs with the leader's full barrier after RCU-R1
 *           [rcu_gp.c] (store buffering).
 *   RCU-L1  acquire load of the counter when entering a section (slow
 *           paths), going online or announcing a quiescent state; pairs
 *           with RCU-R1 [rcu_gp.c].
 *   RCU-L2  light fence after the word store of a section's entry (slow
 *           paths), before the counter is loaded again; pairs with RCU-G1
 *           [rcu_gp.c].
 *   RCU-K1  the chunk mark raised before the word shows the new phase
 *           (sk__rcu_mark_raise() [rcu_state.h]); carried by the word
 *           store's pairing to the scan, which reads the mark first
 *           [rcu_gp.c].
 *   RCU-K2  light fence between raising the mark and loading the counter
 *           in a nested entry's slow path; pairs with RCU-G1 (store
 *           buffering).
 *   RCU-Q1  full fence before a QSBR thread's new word (quiescent state,
 *           offline): its earlier loads first; pairs with RCU-G2 [rcu_gp.c].
 *   RCU-Q2  full fence after it (quiescent state, offline, online): the
 *           word before the futex load and later loads; pairs with RCU-G1
 *           and RCU-G3 [rcu_gp.c].
 *   RCU-P1  full fence before a parking thread's word becomes
 *           SK__RCU_PARKED: its earlier sections first; pairs with RCU-G2
 *           [rcu_gp.c] where the leader took the word for an answer
 *           [rcu_handshake.c].
 *   RCU-P2  full fence after the word leaves SK__RCU_PARKED: before the
 *           next section's RCU-L1; pairs with the leader's barrier between
 *           RCU-R1 and its load of the word (store buffering).
 *   RCU-H1  full barrier between reading a handshake request (acquire,
 *           pairs with RCU-H0 [rcu_handshake.c]) and answering it
 *           (release, pairs with RCU-H2 [rcu_handshake.c]).
 */
#define _GNU_SOURCE
#include "scalekit/rcu.h"

#include <errno.h>
#include <stdint.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal/rcu.h"
#include "internal/rcu_state.h"
#include "internal/util.h"

static void reader_exit(void *arg);

__thread unsigned long *sk__rcu_markp __attribute__((tls_model("initial-exec")));

void sk__rcu_key_init(void)
{
	if (pthread_key_create(&sk__rcu.exit_key, reader_exit) != 0)
		sk__die("pthread_key_create failed: cannot track thread exit");
}

/* The key at load time (registration creates it too, if another
 * constructor registers a thread first). */
__attribute__((constructor)) static void sk_rcu_reader_init(void)
{
	pthread_once(&sk__rcu.key_once, sk__rcu_key_init);
}

/*
 * Change a registry count (nreaders, ngeneral) that grace periods read
 * without the registry lock.  Write lock held, or the thread's own mode
 * switch (qsbr_mode_leave(), qsbr_mode_enter()).  RCU-M: the full fences pair
 * with the leader's full barrier between RCU-R1 and its loads of the counts
 * (other_readers()).  Before: the thread's earlier sections (and their
 * loads) come before a leader that reads the new count (it then skips
 * the heavy fence).  After: store buffering, either the leader reads the
 * new count, or this thread's later RCU-L1 loads see the leader's RCU-R1 (its
 * sections start in the new phase and see every earlier unlink).
 */
static void count_add(unsigned long *c, long d)
{
	sk_smp_mb();
	/* Atomic: parking threads change the counts without the lock. */
	__atomic_fetch_add(c, (unsigned long)d, __ATOMIC_RELEASE);
	sk_smp_mb();
}

/*
 * Registering and unregistering hold the registry write lock while the
 * thread's slot and word change.  A signal handler's read section begun
 * there would take the lock again (the read lock's slow path registers a
 * thread whose word is 0: a self-deadlock, or with glibc an EDEADLK that
 * leaves the lock wrong) or begin on a slot being freed.  So both run
 * with every signal blocked; a signal that arrives meanwhile is handled
 * when they end.  (Mode switches take no lock: qsbr_mode_leave().)
 */
static void signals_block(sigset_t *old)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, old);
}

static void signals_restore(const sigset_t *old)
{
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

/*
 * Take the calling thread out of both counts (d = -1) or count it again
 * (d = 1), without the registry lock.  RCU-M, as count_add(): the first
 * fence puts the thread's earlier sections before a leader that reads
 * the lower counts (and the release RMWs carry that order to the
 * leader's acquire loads, for TSan); the second puts the raised counts
 * before the thread's later RCU-L1 loads (store buffering with the
 * leader's barrier after RCU-R1).
 */
static void park_counts(long d)
{
	sk_smp_mb();
	__atomic_fetch_add(&sk__rcu.ngeneral, (unsigned long)d,
			   __ATOMIC_RELEASE);
	__atomic_fetch_add(&sk__rcu.nreaders, (unsigned long)d,
			   __ATOMIC_RELEASE);
	sk_smp_mb();
}

/*
 * Park the calling thread for a grace-period wait (sk__rcu_park() calls
 * this for a registered general thread outside any section:
 * word_is_idle_general()).  Once parked, later waits find the thread
 * parked and cost nothing more.  The thread stays parked after the wait,
 * until its next sk_rcu_read_lock() (whose slow path counts it again:
 * sk_rcu__lock_slow()), sk_rcu_thread_online(), unregistering or
 * exit: an updater that calls synchronize in a loop stays out of the
 * other updaters' grace periods all along.  The word changes before the
 * counts: a signal handler that begins a section from then on takes that
 * slow path too.
 */
void sk__rcu_park_slow(void)
{
	/*
	 * RCU-P1: the thread's earlier sections (their loads) before the
	 * word; pairs with the leader's fence after it reads the word
	 * (RCU-G2), for a leader that takes SK__RCU_PARKED for an answer
	 * (slot_answered() [rcu_handshake.c]).
	 */
	sk_smp_mb();
	SK_TSAN_RELEASE(&sk_rcu__ctr);
	sk_atomic_store_relaxed(&sk_rcu__ctr, SK__RCU_PARKED);
	park_counts(-1);
}

/*
 * Count a parked thread again and make its word SK__RCU_REG.  Counts
 * first, then the word: whoever (the wait's end, or a signal handler's
 * sk_rcu_read_lock() that interrupted it) changes the word from
 * SK__RCU_PARKED has counted the thread; one that finds the word changed
 * after counting took the thread in twice and gives its count back.  The
 * thread is never in a section while uncounted; counted twice it only
 * makes grace periods wait more, for a moment.
 */
static void unpark(void)
{
	unsigned long v = SK__RCU_PARKED;

	park_counts(1);
	/* Seq_cst CAS: atomic against this thread's signal handlers. */
	if (!sk_atomic_cmpxchg_seq_cst(&sk_rcu__ctr, &v, SK__RCU_REG)) {
		park_counts(-1);
		return;
	}
	/*
	 * RCU-P2: the word before the next section's RCU-L1 load (store
	 * buffering with the leader's RCU-R1, full barrier, load of the
	 * word): a leader that read SK__RCU_PARKED has its counter advance
	 * seen by this thread's next sections.
	 */
	sk_smp_mb();
}

void sk__rcu_unpark(void)
{
	if (sk_atomic_load_relaxed(&sk_rcu__ctr) == SK__RCU_PARKED)
		unpark();
}

/* Find a free slot, adding a chunk if all are taken.  Write lock held. */
static struct rcu_slot *slot_alloc(void)
{
	struct rcu_chunk *ch;
	int i;

	for (ch = &sk__rcu_first_chunk; ch; ch = ch->next)
		if (ch->used != ~(uint64_t)0)
			break;
	if (!ch) {
		ch = calloc(1, sizeof(*ch));
		if (!ch)
			return NULL;
		for (i = 0; i < SK__RCU_CHUNK_SLOTS; i++)
			chunk_set_slot(ch, i, NULL);
		sk__rcu.last_chunk->next = ch;
		sk__rcu.last_chunk = ch;
	}
	i = __builtin_ctzll(~ch->used);
	ch->used |= (uint64_t)1 << i;
	chunk_set_slot(ch, i, &sk_rcu__ctr);
	sk__rcu_markp = &ch->mark;
	ch->slots[i].ackp = &sk__rcu_ack;
	ch->slots[i].tid = sk__gettid();
	/* Relaxed: a hint for parking, a statistic. */
	sk_atomic_store_relaxed(&sk__rcu.nslots, sk__rcu.nslots + 1);
	count_add(&sk__rcu.nreaders, 1);
	return &ch->slots[i];
}

/* Give the calling thread's slot back.  Write lock held. */
static void slot_free(void)
{
	struct rcu_chunk *ch;
	int i;

	for (ch = &sk__rcu_first_chunk; ch; ch = ch->next) {
		for (i = 0; i < SK__RCU_CHUNK_SLOTS; i++) {
			if (ch->slots[i].ctrp == &sk_rcu__ctr) {
				chunk_set_slot(ch, i, NULL);
				ch->used &= ~((uint64_t)1 << i);
				sk__rcu_markp = NULL;
				/* Relaxed, as in slot_alloc(). */
				sk_atomic_store_relaxed(&sk__rcu.nslots,
							sk__rcu.nslots - 1);
				count_add(&sk__rcu.nreaders, -1);
				return;
			}
		}
	}
}

/*
 * Register the calling thread, in QSBR mode if qsbr (for
 * sk_rcu_thread_online()), else as a general thread.  A thread that goes
 * online is never counted in ngeneral on the way: grace periods that meet
 * it stay QSBR-only.  Returns 0 or -ENOMEM.
 */
static int reader_register(int qsbr)
{
	struct rcu_slot *s;
	sigset_t old;

	pthread_once(&sk__rcu.key_once, sk__rcu_key_init);
	signals_block(&old);
	pthread_rwlock_wrlock(&sk__rcu.registry_lock);
	s = slot_alloc();
	if (s) {
		/*
		 * Phase 0, never the counter's: the first entry takes the
		 * slow path, which raises the new chunk's mark (enter()).
		 * A QSBR thread starts offline (its word lacks SK__RCU_REG
		 * until sk_rcu_thread_online() announces a phase): a
		 * handler's section before that takes the slow path and
		 * counts the thread as general (qsbr_mode_leave()).
		 */
		sk_atomic_store_relaxed(&sk_rcu__ctr,
					qsbr ? SK__RCU_QOFF : SK__RCU_REG);
		if (!qsbr)
			count_add(&sk__rcu.ngeneral, 1);
		sk__rcu_qsbr_mode = qsbr;
	}
	pthread_rwlock_unlock(&sk__rcu.registry_lock);
	signals_restore(&old);
	if (!s)
		return -ENOMEM;
	/* Keys below PTHREAD_KEYS_MAX use static slots: this cannot fail. */
	pthread_setspecific(sk__rcu.exit_key, &sk_rcu__ctr);
	return 0;
}

static void reader_unregister(void)
{
	sigset_t old;

	signals_block(&old);
	pthread_rwlock_wrlock(&sk__rcu.registry_lock);
	slot_free();
	if (!sk__rcu_qsbr_mode)
		count_add(&sk__rcu.ngeneral, -1);
	sk__rcu_qsbr_mode = 0;
	sk_atomic_store_relaxed(&sk_rcu__ctr, 0UL);
	pthread_rwlock_unlock(&sk__rcu.registry_lock);
	signals_restore(&old);
	pthread_setspecific(sk__rcu.exit_key, NULL);
}

/*
 * QSBR mode (sk__rcu_qsbr_mode, not counted in sk__rcu.ngeneral) and
 * general mode (counted), switched without a lock: the count is atomic (as
 * parking's, park_counts()), and a signal handler that begins a section
 * meanwhile switches too (the read lock's slow path, for a word without
 * SK__RCU_REG).  The mode changes by exchange, one instruction, atomic
 * against this thread's handlers.  The invariant: whenever the word
 * carries SK__RCU_REG at depth 0 (the read lock's fast path enters with
 * light fences), the thread counts as general.  The fences of
 * count_add() are pair RCU-M.
 */

/*
 * Into general mode; registered thread outside sections, whose word lacks
 * SK__RCU_REG.  Counts first, then exchanges, and gives the count back if
 * the exchange finds general mode already (a handler switched and counted
 * in between): the thread is counted before its general section, and once.
 * Twin SK__RCU_BUSTED_MODE_SWITCH keeps both counts.
 */
static void qsbr_mode_leave(void)
{
	if (!__atomic_load_n(&sk__rcu_qsbr_mode, __ATOMIC_RELAXED))
		return;
	count_add(&sk__rcu.ngeneral, 1);
	if (!__atomic_exchange_n(&sk__rcu_qsbr_mode, 0, __ATOMIC_RELAXED) &&
	    !busted(SK__RCU_BUSTED_MODE_SWITCH))
		count_add(&sk__rcu.ngeneral, -1);
}

/*
 * Into QSBR mode with the word offline (SK__RCU_QOFF), for
 * sk_rcu_thread_online(); registered thread outside sections.  Store QOFF,
 * exchange the mode to QSBR (old: what it was), and check that the word
 * is still QOFF.  If it is not, a handler's section came in between
 * (through the slow path: the word lacked SK__RCU_REG) and left a general
 * word: go back to general mode, once counted, and round again.  That
 * handler counted the thread only if it found QSBR mode; it left general
 * mode, which the fix-up's exchange finds (m == 0) only if the handler
 * ran after ours; then the thread was counted twice exactly when ours
 * found general mode (old == 0).  Once the check passes, uncount if ours
 * found general mode: a handler from then on finds QSBR mode and an
 * offline word, and counts the thread again (the thread then announces
 * as a general one: safe, undone at its next switch).  Compiler
 * barriers: against this thread's handlers.
 */
static void qsbr_mode_enter(void)
{
	int old, m;

	for (;;) {
		sk_atomic_store_relaxed(&sk_rcu__ctr, SK__RCU_QOFF);
		sk_barrier();
		old = __atomic_exchange_n(&sk__rcu_qsbr_mode, 1,
					  __ATOMIC_RELAXED);
		sk_barrier();
		if (sk_atomic_load_relaxed(&sk_rcu__ctr) == SK__RCU_QOFF)
			break;
		m = __atomic_exchange_n(&sk__rcu_qsbr_mode, 0, __ATOMIC_RELAXED);
		if (!m && !old)
			count_add(&sk__rcu.ngeneral, -1);
	}
	if (!old)
		count_add(&sk__rcu.ngeneral, -1);
}

/*
 * Enter an outermost section of a registered general thread: raise the
 * chunk's mark to the current counter word (RCU-K1), store that word
 * (depth 1), then check that no scan began meanwhile (RCU-L3), else again
 * with the newer word.  Each round but the last saw a grace period begin,
 * so this ends unless grace periods start back to back without pause.  A
 * signal handler's section nested in here checks its own phase
 * (sk_rcu__nest_slow()) and leaves the word as it found it.
 *
 * stale: the word already showed depth 1 with an older phase (the fast
 * path's store, whose check failed).  A word of an older phase at depth 1
 * looks to a scan like a section it must wait for, and a leader may have
 * gone to sleep on it; no unlock of that phase will follow to wake it
 * (RCU-U3).  So after such a word, wake a sleeping leader: RCU-L2 orders
 * the final word before the futex load, store buffering with RCU-G3.  A
 * leader rarely sleeps then: active readers take the new phase within
 * a microsecond of the advance, long before a leader gives up polling.
 */
static void enter(int stale)
{
	int sys = sk_barrier__fence_sys_get();
	/* RCU-L1: acquire pairs with the counter advance RCU-R1. */
	unsigned long g = sk_atomic_load_acquire(&sk_rcu__gp.ctr), w;

	for (;;) {
		sk__rcu_mark_raise(g);
		sk_atomic_store_relaxed(&sk_rcu__ctr, g);
		/*
		 * RCU-L2: the mark and the word before the loads below and the
		 * section's loads; pairs with RCU-G1 (and RCU-G3).
		 */
		sk_barrier__fence_light_sys(sys);
		/* RCU-L3, acquire as RCU-L1: the section's loads follow. */
		w = sk_atomic_load_acquire(&sk_rcu__gp.ctr);
		if (w == g)
			break;
		g = w;
		stale = 1;
	}
	if (stale && sk_atomic_load_relaxed(&sk_rcu__gp.futex) == -1)
		sk__rcu_wake_leader();
}

#ifdef SK_TESTING
/* Fallback-form fences of this thread's read lock and unlock (testing.h). */
static __thread unsigned long fallback_fences;

unsigned long sk__rcu_test_fallback_fences(void)
{
	return fallback_fences;
}
#define COUNT_FALLBACK_FENCE() (fallback_fences++)
#else
#define COUNT_FALLBACK_FENCE() ((void)0)
#endif

/*
 * The fast path's RCU-L3 check failed: a scan began since the thread's
 * last section (its word shows depth 1 and that section's phase), or
 * light fences are full fences (lock_word in fallback form).
 */
void sk_rcu__lock_recheck(void)
{
	if (!sk_barrier__fence_sys_get()) {
		/*
		 * RCU-L2 in fallback form: the fast path's store before the
		 * load below and the section's loads; pairs with RCU-G1, a
		 * full fence there too.  Then the fast path's check, on ctr.
		 */
		sk_smp_mb();
		COUNT_FALLBACK_FENCE();
		if (sk_atomic_load_acquire(&sk_rcu__gp.ctr) ==
		    sk_atomic_load_relaxed(&sk_rcu__ctr))
			return;
	}
	enter(1);
}

/*
 * A nested entry found the counter's phase different from its word's: the
 * outer section began in an older phase (a scan now waits for it), or the
 * outer entry had not yet made its RCU-L3 check (a signal handler
 * interrupted it).  In the second case no scan might read this chunk:
 * raise the mark to the current counter word, so the next scan reads the
 * word (whose phase is older: it waits for the section).
 */
void sk_rcu__nest_slow(void)
{
	int sys = sk_barrier__fence_sys_get();
	/* RCU-L1: acquire pairs with the counter advance RCU-R1. */
	unsigned long g = sk_atomic_load_acquire(&sk_rcu__gp.ctr), w;

	if (busted(SK__RCU_BUSTED_NEST))
		return;
	for (;;) {
		sk__rcu_mark_raise(g);
		/*
		 * RCU-K2: the mark before the load below; pairs with RCU-G1:
		 * a scan of a later phase than g's reads the raised mark.
		 */
		sk_barrier__fence_light_sys(sys);
		w = sk_atomic_load_acquire(&sk_rcu__gp.ctr);
		if (w == g)
			return;
		g = w;
	}
}

/*
 * Outermost sk_rcu_read_lock() of a thread that is not a registered
 * general one: register the thread, count a parked thread again, or
 * count an offline QSBR thread (SK__RCU_QOFF) as general again (its light
 * fences need the grace period's heavy fence); then enter the section.
 */
void sk_rcu__lock_slow(void)
{
	unsigned long v = sk_atomic_load_relaxed(&sk_rcu__ctr);

	if (v == SK__RCU_PARKED) {
		/* A section begun inside a grace-period wait (a handler). */
		if (busted(SK__RCU_BUSTED_PARK_SLOW))
			sk_atomic_store_relaxed(&sk_rcu__ctr, SK__RCU_REG);
		else
			unpark();
	} else if (v) {
		/* Counted as general before the word shows a general thread. */
		qsbr_mode_leave();
		sk_atomic_store_relaxed(&sk_rcu__ctr, SK__RCU_REG);
	} else if (reader_register(0) != 0) {
		sk__die("sk_rcu_read_lock(): out of memory registering the "
			"thread (call sk_rcu_register_thread() first to get "
			"an error code instead)");
	}
	enter(0);
}

int sk_rcu_register_thread(void)
{
	return sk_atomic_load_relaxed(&sk_rcu__ctr) ? 0 : reader_register(0);
}

/*
 * Leave QSBR online state: the thread no longer holds references.  Full
 * fences, not light ones: a grace period that waits only for QSBR-mode
 * threads issues full fences, not membarrier(2) (see "QSBR-only grace
 * periods").
 */
static void go_offline(void)
{
	/* RCU-Q1: earlier loads before the store; pairs with RCU-G2. */
	sk_smp_mb();
	SK_TSAN_RELEASE(&sk_rcu__ctr);
	sk_atomic_store_relaxed(&sk_rcu__ctr, SK__RCU_QOFF);
	/* RCU-Q2: the store before the futex load; pairs with RCU-G3. */
	sk_smp_mb();
	if (sk_atomic_load_relaxed(&sk_rcu__gp.futex))
		sk_rcu__wake_gp();
}

static const char *in_section_msg =
	"called inside an RCU read-side critical section";

int sk_rcu_unregister_thread(void)
{
	unsigned long v;

	sk__rcu_unpark(); /* parked since its last grace-period wait */
	v = sk_atomic_load_relaxed(&sk_rcu__ctr);

	if (!v)
		return -EINVAL;
	if (nest_of(v) == SK__RCU_QSBR_NEST)
		go_offline();
	else if (nest_of(v) != 0)
		sk__die("sk_rcu_unregister_thread() %s (nesting depth %lu)",
			in_section_msg, depth_of(v));
	reader_unregister();
	return 0;
}

/* Thread-exit destructor of registered threads. */
static void reader_exit(void *arg)
{
	unsigned long v;

	(void)arg;
	sk__rcu_unpark(); /* slot_free() and the counts below count it out */
	v = sk_atomic_load_relaxed(&sk_rcu__ctr);
	if (nest_of(v) == SK__RCU_QSBR_NEST)
		go_offline();
	else if (nest_of(v) != 0)
		sk__die("thread exited inside an RCU read-side critical section "
			"(nesting depth %lu): missing sk_rcu_read_unlock()",
			depth_of(v));
	if (v)
		reader_unregister();
}

int sk_rcu_thread_online(void)
{
	unsigned long v, g, w;

	sk__rcu_unpark(); /* parked since its last grace-period wait */
	v = sk_atomic_load_relaxed(&sk_rcu__ctr);

	if (nest_of(v) == SK__RCU_QSBR_NEST)
		return 0;
	if (nest_of(v) != 0)
		sk__die("sk_rcu_thread_online() %s", in_section_msg);
	if (!v && reader_register(1) != 0)
		return -ENOMEM;
	qsbr_mode_enter();
	/* RCU-L1: acquire pairs with the counter advance RCU-R1. */
	g = sk_atomic_load_acquire(&sk_rcu__gp.ctr);
	for (;;) {
		sk__rcu_mark_raise(g); /* RCU-K1 */
		sk_atomic_store_relaxed(&sk_rcu__ctr, (g & ~SK__RCU_NEST_MASK) |
							      SK__RCU_QSBR_NEST);
		/*
		 * RCU-Q2: the mark and the word before the loads that follow;
		 * pairs with RCU-G1 (full, not light: see go_offline()).
		 */
		sk_smp_mb();
		/*
		 * Offline, the thread was not waited for: if a scan began
		 * since the load above, announce its phase instead (as
		 * enter() does).  RCU-L1 again.
		 */
		w = sk_atomic_load_acquire(&sk_rcu__gp.ctr);
		if (w == g)
			return 0;
		g = w;
	}
}

void sk_rcu_thread_offline(void)
{
	unsigned long v = sk_atomic_load_relaxed(&sk_rcu__ctr);

	if (nest_of(v) != SK__RCU_QSBR_NEST)
		sk__die("sk_rcu_thread_offline() called by a thread that is not "
			"an online QSBR reader outside sk_rcu_read_lock() "
			"(nesting depth %lu)",
			depth_of(v));
	go_offline();
}

void sk_rcu__unlock_misuse(void)
{
	sk__die("unbalanced sk_rcu_read_unlock(): the thread is not inside an "
		"RCU read-side critical section");
}

void sk_rcu__nest_overflow(void)
{
	sk__die("sk_rcu_read_lock() nested deeper than %lu levels: missing "
		"sk_rcu_read_unlock() (or unbounded recursion)",
		SK__RCU_QSBR_NEST - 1);
}

/*
 * Slow path of sk_rcu_quiescent_state(): a grace period began since the
 * last announcement (or misuse).  Announce the current phase between two
 * full fences, which pair with the grace period's heavy or full fences
 * (with only QSBR-mode threads registered, grace periods use full fences).
 */
void sk_rcu__quiescent_slow(void)
{
	unsigned long v = sk_atomic_load_relaxed(&sk_rcu__ctr), gp;

	if (nest_of(v) != SK__RCU_QSBR_NEST)
		sk_rcu__qs_misuse();
	/* RCU-L1: acquire pairs with the counter advance RCU-R1. */
	gp = sk_atomic_load_acquire(&sk_rcu__gp.ctr);
	/* RCU-Q1: earlier loads before the announcement; pairs with RCU-G2. */
	sk_smp_mb();
	/*
	 * RCU-K1.  Online, the thread holds every scan after its last
	 * announcement's phase, so gp's phase is at most one ahead of it: a
	 * scan of a later phase than gp's comes after this announcement.
	 */
	sk__rcu_mark_raise(gp);
	SK_TSAN_RELEASE(&sk_rcu__ctr);
	sk_atomic_store_relaxed(&sk_rcu__ctr,
				(gp & ~SK__RCU_NEST_MASK) | SK__RCU_QSBR_NEST);
	/*
	 * RCU-Q2: announcement before the futex load and later loads; pairs
	 * with RCU-G1/RCU-G3 (a futex of 1 asks for the handshake,
	 * RCU-H0/RCU-H1).
	 */
	sk_smp_mb();
	if (SK_UNLIKELY(sk_atomic_load_relaxed(&sk_rcu__gp.futex)))
		sk_rcu__wake_gp();
}

void sk_rcu__qs_misuse(void)
{
	unsigned long n = nest_of(sk_atomic_load_relaxed(&sk_rcu__ctr));

	if (n > SK__RCU_QSBR_NEST)
		sk__die("sk_rcu_quiescent_state() %s", in_section_msg);
	sk__die("sk_rcu_quiescent_state() called by a thread that is not an "
		"online QSBR reader (call sk_rcu_thread_online() first)");
}

/* A reader answers an expedited handshake (see RCU-H1 above). */
static void ack_handshake(void)
{
	uint64_t e;

	if (!sk_atomic_load_relaxed(&sk_rcu__ctr))
		return; /* not registered: no grace period waits for us */
	/*
	 * Acquire: pairs with RCU-H0, so the counter advance of handshake e is
	 * visible from here on.  Answer only a number read before the
	 * barrier: a later one's advance might not be visible to our next
	 * sections.
	 */
	e = sk_atomic_load_acquire(&sk__rcu.exp_seq);
	if (sk_atomic_load_relaxed(&sk__rcu_ack) == e)
		goto answered; /* with a barrier after reading e */
	/*
	 * RCU-H1: full barrier between reading the request and answering it,
	 * the reader's half of what membarrier(2)'s interrupt would do.  The
	 * acquire above and the release below already give the handshake
	 * what it needs (our ctr stores before the answer, our later
	 * sections after the request, which ordered the counter advance);
	 * the barrier makes the answer mean all that the interrupt means, at
	 * the cost of one fence per thread and request.
	 */
	sk_smp_mb();
	/* Release: pairs with the leader's acquire (RCU-H2). */
	sk_atomic_store_release(&sk__rcu_ack, e);
answered:
	/*
	 * Later unlocks skip the slow path while futex names e.  Relaxed:
	 * only this thread reads it; skipping an answered request needs no
	 * order, and a value that names another request is never skipped.
	 */
	sk_atomic_store_relaxed(&sk_rcu__hs_seen, sk__rcu_hs_word(e));
}

/* Wake a leader sleeping on readers (futex == -1). */
void sk__rcu_wake_leader(void)
{
	int expected = -1;

	/*
	 * A plain load first: a compare-exchange would take the line of the
	 * counter, which every reader loads, even when nobody sleeps.  The
	 * callers' fences (RCU-E1, RCU-U2, RCU-Q2) order what comes before
	 * this load.  Only the first waker pays for the system call.
	 */
	if (sk_atomic_load_relaxed(&sk_rcu__gp.futex) == -1 &&
	    sk_atomic_cmpxchg_seq_cst(&sk_rcu__gp.futex, &expected, 0))
		sk__futex_wake(&sk_rcu__gp.futex, 1);
}

void sk_rcu__wake_gp(void)
{
	if (sk_atomic_load_relaxed(&sk_rcu__gp.futex) > 0)
		ack_handshake();
	else
		sk__rcu_wake_leader();
}

/*
 * The unlock's slow path (v: the word of the section that just ended).  A
 * sleeping leader waits for the sections that began before the phase of
 * the scan it sleeps on; a section of that phase cannot hold it, so its
 * end wakes nobody.  With many busy readers on few CPUs, those needless
 * wake-ups cost the readers a system call each and put the leader back
 * on a CPU, where it preempts a reader, often inside a section that then
 * holds the next grace period (docs/rcu.md, "Many registered threads").
 */
void sk_rcu__wake_gp_from(unsigned long v)
{
	int f;

	if (sk_atomic_load_relaxed(&sk_rcu__gp.heavy)) {
		/*
		 * RCU-U2 in fallback form (on x86-64 the fast path loads heavy
		 * with futex and issues no fence; elsewhere this one is a
		 * second): the store of the word before the futex load below;
		 * pairs with RCU-G3, a full fence there too.
		 */
		sk_smp_mb();
#ifdef SK__RCU_UNLOCK_FLAGS_WIDE
		COUNT_FALLBACK_FENCE(); /* elsewhere the fast path fenced */
#endif
		/* The fast path's test, on futex alone. */
		f = sk_atomic_load_relaxed(&sk_rcu__gp.futex);
		if (!f || f == sk_atomic_load_relaxed(&sk_rcu__hs_seen))
			return;
	}
	/*
	 * RCU-U3: acquire; pairs with RCU-G4, the release store of -1 by a
	 * leader that sleeps on the scan of counter word c (stored before
	 * -1): reading that -1, the load of ctr below returns c (the leader
	 * does not advance while it sleeps).  Reading a stale -1 (of an
	 * earlier sleep), or none, is harmless: RCU-U2/RCU-G3 then let the
	 * leader's re-check see our depth-0 word, so it does not sleep on us.
	 */
	f = sk_atomic_load_acquire(&sk_rcu__gp.futex);
	if (f > 0)
		ack_handshake();
	else if (f == -1 &&
		 !((v ^ sk_atomic_load_relaxed(&sk_rcu__gp.ctr)) >>
		   SK__RCU_SEQ_SHIFT))
		return; /* our section is of the current phase: holds nobody */
	else
		sk__rcu_wake_leader();
}

int sk__rcu_try_enter_wait(void)
{
	unsigned long v = sk_atomic_load_relaxed(&sk_rcu__ctr);

	if (nest_of(v) == SK__RCU_QSBR_NEST) {
		go_offline();
		return 1;
	}
	return nest_of(v) != 0 ? -1 : 0;
}

int sk__rcu_enter_wait(const char *fn)
{
	unsigned long v = sk_atomic_load_relaxed(&sk_rcu__ctr);

	if (nest_of(v) == SK__RCU_QSBR_NEST) {
		go_offline();
		return 1;
	}
	if (nest_of(v) != 0)
		sk__die("%s %s (nesting depth %lu): it would wait for itself "
			"forever",
			fn, in_section_msg, depth_of(v));
	return 0;
}

