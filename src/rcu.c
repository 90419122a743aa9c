/* SPDX-License-Identifier: MIT */
/*
 * RCU: the registry of reader threads and the grace-period machinery.
 *
 * Algorithm.  A global phase counter, in the upper bits of sk_rcu__gp.ctr,
 * numbers the scans of the registry.  A reader entering its outermost
 * section copies the word into its own ctr; leaving, it stores depth 0.  A
 * QSBR thread keeps a copy while online and refreshes it at each quiescent
 * state.  A scan advances the phase to p and waits until every registered
 * reader either is outside a section or carries phase p (it entered, or
 * announced a quiescent state, after the advance).  Phases are compared
 * for equality only, so they may wrap.
 *
 * Narrow words.  A reader may load sk_rcu__gp.ctr, be preempted, and store
 * the value much later.  If the phase advanced a multiple of 2^SEQ_BITS
 * times meanwhile, the stale copy equals the current phase and one scan
 * would skip a reader that needs waiting for.  With 48 phase bits (64-bit
 * unsigned long) that takes 2^48 scans during one preemption between two
 * adjacent instructions, and one scan per grace period suffices.  With 16
 * bits (32-bit targets) a grace period scans twice, advancing the phase
 * before each: a reader word seen by the first scan and unchanged at the
 * second cannot equal both phases, so it is waited for by one of them; a
 * word stored after the first scan read the old value was stored after G1
 * took effect on its thread, so that section sees every earlier unlink.
 *
 * Cookies.  Grace periods are numbered apart from the phase, by gp_seq
 * (started) and completed, in full unsigned long width; comparisons are
 * modular (see sk__rcu_done()).
 *
 * Barrier pairs (names used in the comments below and in rcu.h):
 *   S1 (caller, sk_smp_mb)   - caller's unlinks before its counter snapshot.
 *   R1 (leader, release)     - counter advance; pairs with L1 in read_lock.
 *   G1 (leader, heavy)       - after the advance, before reading any reader
 *                              ctr.  Pairs with L2/Q2: a reader either has
 *                              made its ctr store visible (and is waited
 *                              for), or its section's loads come after G1
 *                              and see every unlink made before it.
 *   G2 (leader, heavy)       - after the scan, before completion.  Pairs
 *                              with U1/Q1: the section's loads are done
 *                              before the caller frees anything.  A local
 *                              sk_smp_mb() on x86 (TSO), see
 *                              gp_fence_after_scan().
 *   G3 (leader, heavy)       - futex = -1 before re-reading ctrs; pairs
 *                              with U2/Q2 (store buffering), so a reader
 *                              that leaves after the re-check sees -1 and
 *                              wakes the leader.  Also before re-reading
 *                              the expedite count; pairs with E1.
 *   E1 (expedited caller,    - expedite count raised before futex is read
 *       full)                  to wake a sleeping leader: the leader sees
 *                              the count after G3 and polls instead of
 *                              sleeping, or the caller sees -1 and wakes
 *                              it.
 *   H0/H1/H2 (any GP that    - G1 by handshake instead of membarrier(2):
 *       waits for general
 *       readers)
 *                              the leader publishes a request number
 *                              (H0, release, after R1) and sets futex;
 *                              each reader that sees futex at its next
 *                              unlock or quiescent state reads the number
 *                              (acquire), runs a full barrier (H1) and
 *                              answers that number (release); the
 *                              leader's acquire of every
 *                              acknowledgement (H2) then stands for G1:
 *                              the reader's earlier ctr stores are
 *                              visible, and its later sections load the
 *                              advanced counter.  Readers that do not
 *                              answer within SK_RCU_HANDSHAKE_NS (idle
 *                              ones never do) get the real G1.
 *   QSBR-only (M)            - when every registered thread but the caller
 *                              is in QSBR mode (rcu.ngeneral, read after
 *                              R1 and a full barrier; changed between
 *                              two full fences by count_add(): store
 *                              buffering is the pair), G1, G2 and G3 are
 *                              sk_smp_mb(): QSBR threads' Q1/Q2 and
 *                              go_offline()/online fences are full.
 *                              A general section that starts after the
 *                              count was read starts in the new phase.
 * In the fallback without membarrier(2), light fences are full fences and
 * the heavy fence is sk_smp_mb(), which pair the same way.
 * Litmus tests of these pairs (litmus/, run by `make check`, see
 * docs/litmus.md; the format has no membarrier(2), so a heavy or light
 * fence is written as smp_mb(), which checks the pairing, not the
 * asymmetric fence itself):
 *   S1, G1        - rcu-gp-advance-mb.litmus (and its broken twin
 *                   rcu-gp-advance-no-mb.litmus: the barrier after the
 *                   registry lock instead, issue 11 item 7).
 *   R1/L1         - MP+rel+acq.litmus.
 *   G1/L2, G3/U2, G3/E1
 *                 - SB+mbs.litmus.
 *   G2/U1         - LB+rel+mb.litmus.
 *   all of them, end to end through sk_synchronize_rcu():
 *                   rcu-gp-before.litmus, rcu-gp-after.litmus,
 *                   rcu-deferred-free.litmus (fail with --busted).
 *   H0/H1/H2      - rcu-gp-before-exp.litmus runs the expedited grace
 *                   period end to end; H0's release/acquire is
 *                   MP+rel+acq.litmus.  Not covered: whether the
 *                   handshake or membarrier(2) served a given iteration,
 *                   and the handshake's timeout path.
 *
 * Batching.  Callers snapshot gp_seq (S1), then queue a wait node.  The
 * caller that finds the queue empty leads: under gp_lock it takes every
 * queued node and runs one grace period, which started after all their
 * snapshots and so covers them all (see sk__rcu_wait()).
 */
#define _GNU_SOURCE
#include "scalekit/rcu.h"

#include <errno.h>
#include <stdint.h>
#include <limits.h>
#include <sched.h>
#include <string.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal/rcu.h"
#include "internal/util.h"

/*
 * Polls of the blocking readers before a normal grace period sleeps on the
 * futex (normal grace periods save CPU: they hardly spin), and before an
 * expedited one starts yielding the CPU between polls.
 */
#define SK_RCU_SPIN_NORMAL 100
#define SK_RCU_SPIN_EXPEDITED 1000

/* Registry slots come in chunks of this many. */
#define SK_RCU_CHUNK_SLOTS 64

/* Most blocking readers a grace period tracks without rescanning all. */
#define SK_RCU_PEND_MAX 128

/*
 * Expedited handshake: how long the leader waits for every reader's
 * acknowledgement before it falls back to membarrier(2), and how many
 * expedited grace periods skip the handshake after one that fell back
 * (idle registered threads never answer, so keep trying only now and
 * then).  futex holds SK_RCU_FUTEX_ACK while a handshake runs.
 */
#define SK_RCU_HANDSHAKE_NS 5000
#define SK_RCU_HANDSHAKE_BACKOFF 15
#define SK_RCU_HANDSHAKE_BACKOFF_MAX 63
#define SK_RCU_FUTEX_ACK 1

struct sk_rcu__gp_state sk_rcu__gp = {
	.ctr = (1UL << SK_RCU_SEQ_SHIFT) | SK_RCU_REG | 1, .futex = 0
};

/* Scans per grace period: two where the phase wraps within reach. */
#define SK_RCU_SCANS (SK_RCU_SEQ_BITS < 40 ? 2 : 1)
#ifdef SK_TEST_HOOKS
static int rcu_test_scans; /* nonzero: scans per grace period (tests) */
#define gp_scans()                                                      \
	(sk_atomic_load_relaxed(&rcu_test_scans) ?                      \
		 sk_atomic_load_relaxed(&rcu_test_scans) : SK_RCU_SCANS)
#else
#define gp_scans() SK_RCU_SCANS
#endif

#ifdef SK_TEST_HOOKS
static void (*rcu_test_hook)(int where); /* see sk__rcu_test_set_hook() */
#define test_hook(where)                                                \
	do {                                                            \
		void (*fn_)(int) = sk_atomic_load_acquire(&rcu_test_hook); \
		if (fn_)                                                \
			fn_(where);                                     \
	} while (0)
#else
#define test_hook(where) do { } while (0)
#endif

/*
 * A cookie ahead of the completed count by more than this names a grace
 * period that completed 2^(bits-1) or more grace periods ago (it wrapped
 * around): it reads as completed.  A valid cookie is at most 2 ahead.
 */
#define SK_RCU_COOKIE_AHEAD 1024UL
__thread unsigned long sk_rcu__ctr __attribute__((tls_model("initial-exec")));
/* Last handshake (rcu.exp_seq) this thread acknowledged. */
static __thread uint64_t rcu_ack __attribute__((tls_model("initial-exec")));
/*
 * 1 while the thread is registered in QSBR mode (not counted in
 * rcu.ngeneral): from its first sk_rcu_thread_online() until it enters a
 * read section while offline or unregisters.  Written by the thread under
 * the registry write lock.
 */
static __thread int rcu_qsbr_mode __attribute__((tls_model("initial-exec")));

/*
 * Registry slot of a reader thread: where its reader word lives.  Slots
 * sit in chunks that are never freed, so a grace period can keep pointers
 * to slots across its sleeps; the reader word itself (thread-local) may
 * only be read under registry_lock held for reading, because an exiting
 * thread frees it after unregistering (write lock).
 */
struct rcu_slot {
	unsigned long *ctrp; /* &sk_rcu__ctr of the owner, NULL when free */
	uint64_t *ackp;	     /* &rcu_ack of the owner */
	long tid;	     /* kernel thread id of the owner */
};

struct rcu_chunk {
	struct rcu_slot slots[SK_RCU_CHUNK_SLOTS];
	uint64_t used;		/* bit i: slots[i] has an owner */
	struct rcu_chunk *next; /* next chunk, or NULL */
};

static struct rcu_chunk first_chunk;

struct gp_waiter; /* a caller waiting for a grace period, see "Batching" */

static struct {
	/*
	 * Guarded by registry_lock: written (slots, chunks) under the write
	 * lock by threads that register or unregister; read by grace
	 * periods under the read lock, one scan pass at a time.
	 */
	pthread_rwlock_t registry_lock;
	struct rcu_chunk *last_chunk; /* where new chunks are appended */
	unsigned long nreaders;	      /* slots with an owner */
	unsigned long ngeneral;	      /* owners not in QSBR mode */

	/* Guarded by gp_lock: one grace period at a time. */
	pthread_mutex_t gp_lock;
	unsigned long sync_calls; /* atomic counter, any thread */
	unsigned long gp_sleeps;  /* written by the leader */
	unsigned long expedite;	  /* expedited callers waiting (atomic) */
	uint64_t exp_seq;	  /* handshakes started (never wraps) */
	unsigned int exp_skip;	  /* expedited GPs left without handshake */
	unsigned int gp_skip;	  /* normal GPs left without handshake */
	unsigned int gp_backoff;  /* gp_skip after the next failure */
	int gp_general;		  /* this GP may wait for general readers */
	unsigned long exp_handshakes; /* G1 done by handshake (stat) */
	unsigned long exp_fallbacks;  /* expedited G1 by membarrier (stat) */
	struct sk__rcu_gp_kinds kinds; /* first barriers of all GPs (stat) */

	/*
	 * Grace-period numbers, full width, modular: gp_seq is the last one
	 * started, completed the last one completed (gp_seq or gp_seq - 1).
	 * Written by the leader (release), read by any caller (acquire).
	 * gp_seq never takes the value ULONG_MAX, so a cookie (gp_seq + 1)
	 * is never SK_RCU_COOKIE_COMPLETED.  ngps counts grace periods run
	 * (leader writes, stats read relaxed).
	 */
	unsigned long gp_seq;
	unsigned long ngps;
	unsigned long completed __attribute__((aligned(SK_CACHELINE)));
	/*
	 * Callers waiting for a grace period (see "Batching"): a stack of
	 * nodes, pushed by any caller (W1), taken whole by a leader (W2).
	 */
	struct gp_waiter *wq __attribute__((aligned(SK_CACHELINE)));

	pthread_key_t exit_key; /* destructor unregisters exiting threads */
	pthread_once_t key_once;
} rcu = {
	.registry_lock = PTHREAD_RWLOCK_INITIALIZER,
	.last_chunk = &first_chunk,
	.gp_lock = PTHREAD_MUTEX_INITIALIZER,
	.gp_backoff = SK_RCU_HANDSHAKE_BACKOFF,
	.gp_seq = 1,
	.completed = 1,
	.key_once = PTHREAD_ONCE_INIT,
};

static void reader_exit(void *arg);

static void key_init(void)
{
	if (pthread_key_create(&rcu.exit_key, reader_exit) != 0)
		sk__die("pthread_key_create failed: cannot track thread exit");
}

#ifdef SK_TSAN
#include <sanitizer/tsan_interface.h>
#endif

static void atfork_prepare(void);
static void atfork_parent(void);
static void atfork_child(void);

#define STALL_MS_MAX (24UL * 3600 * 1000)

/* Relaxed accesses: a setting, read once per stalled grace period. */
static unsigned long stall_ms = 21000;

__attribute__((constructor)) static void sk_rcu_init(void)
{
	pthread_once(&rcu.key_once, key_init);
	sk_rcu_set_stall_ms(sk__env_ulong("SCALEKIT_RCU_STALL_MS", 21000, 1,
					  STALL_MS_MAX));
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

int sk_rcu_set_stall_ms(unsigned long ms)
{
	if (!ms || ms > STALL_MS_MAX)
		return -EINVAL;
	__atomic_store_n(&stall_ms, ms, __ATOMIC_RELAXED);
	return 0;
}

unsigned long sk_rcu_get_stall_ms(void)
{
	return __atomic_load_n(&stall_ms, __ATOMIC_RELAXED);
}

/*
 * Change a registry count (nreaders, ngeneral) that grace periods read
 * without the registry lock.  Write lock held.  M: the full fences pair
 * with the leader's full barrier between R1 and its loads of the counts
 * (other_readers()).  Before: the thread's earlier sections (and their
 * loads) come before a leader that reads the new count (it then skips
 * the heavy fence).  After: store buffering, either the leader reads the
 * new count, or this thread's later L1 loads see the leader's R1 (its
 * sections start in the new phase and see every earlier unlink).
 */
static void count_add(unsigned long *c, long d)
{
	sk_smp_mb();
	sk_atomic_store_relaxed(c, *c + (unsigned long)d);
	sk_smp_mb();
}

/* Find a free slot, adding a chunk if all are taken.  Write lock held. */
static struct rcu_slot *slot_alloc(void)
{
	struct rcu_chunk *ch;
	int i;

	for (ch = &first_chunk; ch; ch = ch->next)
		if (ch->used != ~(uint64_t)0)
			break;
	if (!ch) {
		ch = calloc(1, sizeof(*ch));
		if (!ch)
			return NULL;
		rcu.last_chunk->next = ch;
		rcu.last_chunk = ch;
	}
	i = __builtin_ctzll(~ch->used);
	ch->used |= (uint64_t)1 << i;
	ch->slots[i].ctrp = &sk_rcu__ctr;
	ch->slots[i].ackp = &rcu_ack;
	ch->slots[i].tid = sk__gettid();
	count_add(&rcu.nreaders, 1);
	return &ch->slots[i];
}

/* Give the calling thread's slot back.  Write lock held. */
static void slot_free(void)
{
	struct rcu_chunk *ch;
	int i;

	for (ch = &first_chunk; ch; ch = ch->next) {
		for (i = 0; i < SK_RCU_CHUNK_SLOTS; i++) {
			if (ch->slots[i].ctrp == &sk_rcu__ctr) {
				ch->slots[i].ctrp = NULL;
				ch->used &= ~((uint64_t)1 << i);
				count_add(&rcu.nreaders, -1);
				return;
			}
		}
	}
}

/* Register the calling thread.  Returns 0 or -ENOMEM. */
static int reader_register(void)
{
	struct rcu_slot *s;

	pthread_once(&rcu.key_once, key_init);
	pthread_rwlock_wrlock(&rcu.registry_lock);
	s = slot_alloc();
	if (s) {
		sk_atomic_store_relaxed(&sk_rcu__ctr, SK_RCU_REG);
		/* General until sk_rcu_thread_online(). */
		count_add(&rcu.ngeneral, 1);
		rcu_qsbr_mode = 0;
	}
	pthread_rwlock_unlock(&rcu.registry_lock);
	if (!s)
		return -ENOMEM;
	/* Keys below PTHREAD_KEYS_MAX use static slots: this cannot fail. */
	pthread_setspecific(rcu.exit_key, &sk_rcu__ctr);
	return 0;
}

static void reader_unregister(void)
{
	pthread_rwlock_wrlock(&rcu.registry_lock);
	slot_free();
	if (!rcu_qsbr_mode)
		count_add(&rcu.ngeneral, -1);
	rcu_qsbr_mode = 0;
	sk_atomic_store_relaxed(&sk_rcu__ctr, 0UL);
	pthread_rwlock_unlock(&rcu.registry_lock);
	pthread_setspecific(rcu.exit_key, NULL);
}

/*
 * Enter or leave QSBR mode (counted in rcu.ngeneral or not).  Registered
 * thread outside any section; the fences of count_add() are pair M.
 */
static void set_qsbr_mode(int on)
{
	if (rcu_qsbr_mode == on)
		return;
	pthread_rwlock_wrlock(&rcu.registry_lock);
	count_add(&rcu.ngeneral, on ? -1 : 1);
	rcu_qsbr_mode = on;
	pthread_rwlock_unlock(&rcu.registry_lock);
}

/*
 * Outermost sk_rcu_read_lock() of an unregistered thread (register it) or
 * of an offline QSBR thread (SK_RCU_QOFF: count it as general again; its
 * light fences need the grace period's heavy fence).
 */
void sk_rcu__register_slow(void)
{
	if (sk_atomic_load_relaxed(&sk_rcu__ctr)) {
		set_qsbr_mode(0);
		sk_atomic_store_relaxed(&sk_rcu__ctr, SK_RCU_REG);
		return;
	}
	if (reader_register() != 0)
		sk__die("sk_rcu_read_lock(): out of memory registering the "
			"thread (call sk_rcu_register_thread() first to get "
			"an error code instead)");
}

int sk_rcu_register_thread(void)
{
	return sk_atomic_load_relaxed(&sk_rcu__ctr) ? 0 : reader_register();
}

static inline unsigned long nest_of(unsigned long v)
{
	return v & SK_RCU_NEST_MASK;
}

/* Read-section depth for messages (a QSBR thread's base is not a section). */
static inline unsigned long depth_of(unsigned long v)
{
	unsigned long n = nest_of(v);

	return n > SK_RCU_QSBR_NEST ? n - SK_RCU_QSBR_NEST : n;
}

/*
 * Leave QSBR online state: the thread no longer holds references.  Full
 * fences, not light ones: a grace period that waits only for QSBR-mode
 * threads issues full fences, not membarrier(2) (see "QSBR-only grace
 * periods").
 */
static void go_offline(void)
{
	/* Q1-like: earlier loads before the store; pairs with G2. */
	sk_smp_mb();
	SK_TSAN_RELEASE(&sk_rcu__ctr);
	sk_atomic_store_relaxed(&sk_rcu__ctr, SK_RCU_REG | SK_RCU_QOFF);
	/* Q2-like: the store before the futex load; pairs with G3. */
	sk_smp_mb();
	if (sk_atomic_load_relaxed(&sk_rcu__gp.futex))
		sk_rcu__wake_gp();
}

static const char *in_section_msg =
	"called inside an RCU read-side critical section";

int sk_rcu_unregister_thread(void)
{
	unsigned long v = sk_atomic_load_relaxed(&sk_rcu__ctr);

	if (!v)
		return -EINVAL;
	if (nest_of(v) == SK_RCU_QSBR_NEST)
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
	unsigned long v = sk_atomic_load_relaxed(&sk_rcu__ctr);

	(void)arg;
	if (nest_of(v) == SK_RCU_QSBR_NEST)
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
	unsigned long v = sk_atomic_load_relaxed(&sk_rcu__ctr);

	if (nest_of(v) == SK_RCU_QSBR_NEST)
		return 0;
	if (nest_of(v) != 0)
		sk__die("sk_rcu_thread_online() %s", in_section_msg);
	if (!v && reader_register() != 0)
		return -ENOMEM;
	set_qsbr_mode(1);
	/* L1-like: acquire pairs with the counter advance R1. */
	sk_atomic_store_relaxed(
		&sk_rcu__ctr,
		(sk_atomic_load_acquire(&sk_rcu__gp.ctr) & ~SK_RCU_NEST_MASK) |
			SK_RCU_QSBR_NEST);
	/*
	 * Q2-like: the store before the loads that follow; pairs with G1
	 * (full, not light: see go_offline()).
	 */
	sk_smp_mb();
	return 0;
}

void sk_rcu_thread_offline(void)
{
	unsigned long v = sk_atomic_load_relaxed(&sk_rcu__ctr);

	if (nest_of(v) != SK_RCU_QSBR_NEST)
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
		SK_RCU_QSBR_NEST - 1);
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

	if (nest_of(v) != SK_RCU_QSBR_NEST)
		sk_rcu__qs_misuse();
	/* L1-like: acquire pairs with the counter advance R1. */
	gp = sk_atomic_load_acquire(&sk_rcu__gp.ctr);
	/* Q1: earlier loads before the announcement; pairs with G2. */
	sk_smp_mb();
	SK_TSAN_RELEASE(&sk_rcu__ctr);
	sk_atomic_store_relaxed(&sk_rcu__ctr,
				(gp & ~SK_RCU_NEST_MASK) | SK_RCU_QSBR_NEST);
	/*
	 * Q2: announcement before the futex load and later loads; pairs
	 * with G1/G3 (a futex of 1 asks for the handshake, H0/H1).
	 */
	sk_smp_mb();
	if (SK_UNLIKELY(sk_atomic_load_relaxed(&sk_rcu__gp.futex)))
		sk_rcu__wake_gp();
}

void sk_rcu__qs_misuse(void)
{
	unsigned long n = nest_of(sk_atomic_load_relaxed(&sk_rcu__ctr));

	if (n > SK_RCU_QSBR_NEST)
		sk__die("sk_rcu_quiescent_state() %s", in_section_msg);
	sk__die("sk_rcu_quiescent_state() called by a thread that is not an "
		"online QSBR reader (call sk_rcu_thread_online() first)");
}

/* Wake a leader sleeping on readers (futex == -1). */
static void wake_leader(void)
{
	int expected = -1;

	/* Only the first waker pays for the system call. */
	if (sk_atomic_cmpxchg(&sk_rcu__gp.futex, &expected, 0))
		sk__futex_wake(&sk_rcu__gp.futex, 1);
}

/* A reader answers an expedited handshake (see H1 above). */
static void ack_handshake(void)
{
	uint64_t e;

	if (!sk_atomic_load_relaxed(&sk_rcu__ctr))
		return; /* not registered: no grace period waits for us */
	/*
	 * Acquire: pairs with H0, so the counter advance of handshake e is
	 * visible from here on.  Answer only a number read before the
	 * barrier: a later one's advance might not be visible to our next
	 * sections.
	 */
	e = sk_atomic_load_acquire(&rcu.exp_seq);
	if (sk_atomic_load_relaxed(&rcu_ack) == e)
		return; /* answered e already, with a barrier after reading it */
	/*
	 * H1: full barrier between reading the request and answering it,
	 * the reader's half of what membarrier(2)'s interrupt would do.  The
	 * acquire above and the release below already give the handshake
	 * what it needs (our ctr stores before the answer, our later
	 * sections after the request, which ordered the counter advance);
	 * the barrier makes the answer mean all that the interrupt means, at
	 * the cost of one fence per thread and request.
	 */
	sk_smp_mb();
	/* Release: pairs with the leader's acquire (H2). */
	sk_atomic_store_release(&rcu_ack, e);
}

void sk_rcu__wake_gp(void)
{
	if (sk_atomic_load_relaxed(&sk_rcu__gp.futex) == SK_RCU_FUTEX_ACK)
		ack_handshake();
	else
		wake_leader();
}

/*
 * Does reader word v belong to a section that began before the scan whose
 * counter word is c (its phase differs; see "Narrow words")?
 */
static inline int blocks_gp(unsigned long v, unsigned long c)
{
	return nest_of(v) && ((v ^ c) >> SK_RCU_SEQ_SHIFT);
}

/* Read slot s's reader word (0 when free).  Read lock held. */
static inline unsigned long slot_word(struct rcu_slot *s)
{
	unsigned long *p = s->ctrp;

	return p ? sk_atomic_load_relaxed(p) : 0;
}

/* Record that the reader of s no longer blocks (ordering for TSan). */
static inline void slot_passed(struct rcu_slot *s)
{
	/* Ordering from G2 + U1, invisible to TSan. */
	if (s->ctrp)
		SK_TSAN_ACQUIRE(s->ctrp);
}

/*
 * Readers that the first scan of a two-scan grace period found inside a
 * section of the current phase: the only ones the second scan must check
 * (see "Narrow words").  More than SK_RCU_PEND_MAX: check all.  Guarded by
 * gp_lock.
 */
static struct {
	struct rcu_slot *s[SK_RCU_PEND_MAX];
	unsigned long n;
} suspects;

/*
 * Scan every owned slot; store the first cap that block grace period c in
 * pend.  Returns how many block (possibly more than cap).  With collect,
 * also record the suspects.
 */
static unsigned long scan_all(unsigned long c, struct rcu_slot **pend,
			      unsigned long cap, int collect)
{
	struct rcu_chunk *ch;
	unsigned long n = 0;

	if (collect)
		suspects.n = 0;
	pthread_rwlock_rdlock(&rcu.registry_lock);
	for (ch = &first_chunk; ch; ch = ch->next) {
		uint64_t used = ch->used;

		while (used) {
			struct rcu_slot *s = &ch->slots[__builtin_ctzll(used)];
			unsigned long v = slot_word(s);

			used &= used - 1;
			if (blocks_gp(v, c)) {
				if (n < cap)
					pend[n] = s;
				n++;
				continue;
			}
			slot_passed(s);
			if (collect && nest_of(v)) {
				if (suspects.n < SK_RCU_PEND_MAX)
					suspects.s[suspects.n] = s;
				suspects.n++;
			}
		}
	}
	pthread_rwlock_unlock(&rcu.registry_lock);
	return n;
}

/* Keep only the slots of pend[0..n) that still block c; returns the count. */
static unsigned long rescan(unsigned long c, struct rcu_slot **pend,
			    unsigned long n)
{
	unsigned long i, k = 0;

	pthread_rwlock_rdlock(&rcu.registry_lock);
	for (i = 0; i < n; i++) {
		if (blocks_gp(slot_word(pend[i]), c))
			pend[k++] = pend[i];
		else
			slot_passed(pend[i]);
	}
	pthread_rwlock_unlock(&rcu.registry_lock);
	return k;
}

static unsigned long scan(unsigned long c, struct rcu_slot **pend,
			  unsigned long n)
{
	return n > SK_RCU_PEND_MAX ? scan_all(c, pend, SK_RCU_PEND_MAX, 0)
				   : rescan(c, pend, n);
}

/* Copy the name of thread tid (as set by pthread_setname_np) into buf. */
static void thread_name(long tid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%ld/comm", tid);
	buf[0] = '\0';
	f = fopen(path, "r");
	if (f) {
		if (fgets(buf, (int)len, f))
			buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
	if (!buf[0])
		snprintf(buf, len, "?");
}

/* Stall watchdog: name every reader that still holds the scan of c. */
static void report_stall(struct rcu_slot **pend, unsigned long n,
			 unsigned long c, uint64_t waited_ns)
{
	unsigned long i, k = 0, ms = (unsigned long)(waited_ns / 1000000u);
	unsigned long words[SK_RCU_PEND_MAX];
	long tids[SK_RCU_PEND_MAX];
	char name[32];

	/* The readers that still block, read once: header and lines agree. */
	pthread_rwlock_rdlock(&rcu.registry_lock);
	for (i = 0; i < n && i < SK_RCU_PEND_MAX; i++) {
		unsigned long v = slot_word(pend[i]);

		if (blocks_gp(v, c)) {
			words[k] = v;
			tids[k++] = pend[i]->tid;
		}
	}
	pthread_rwlock_unlock(&rcu.registry_lock);
	if (!k)
		return; /* all left since the last scan: nothing to report */
	fprintf(stderr,
		"scalekit: RCU stall: grace period %lu has waited %lu ms "
		"(threshold %lu ms: SCALEKIT_RCU_STALL_MS or "
		"sk_rcu_set_stall_ms()) for %lu reader(s)%s:\n",
		rcu.ngps + 1, ms, sk_rcu_get_stall_ms(),
		n > SK_RCU_PEND_MAX ? n : k,
		n > SK_RCU_PEND_MAX ? " (the first ones listed)" : "");
	for (i = 0; i < k; i++) {
		thread_name(tids[i], name, sizeof(name));
		fprintf(stderr,
			"scalekit:   thread %ld (\"%s\"), %s for at least %lu "
			"ms\n",
			tids[i], name,
			nest_of(words[i]) >= SK_RCU_QSBR_NEST
				? "QSBR online without a quiescent state"
				: "inside a read-side critical section",
			ms);
	}
	fflush(stderr);
}

/*
 * G3's fence: heavy while general readers may run (their U2 is light), a
 * full fence when only QSBR-mode threads are waited for (their Q2 and
 * go_offline()'s are full).  Caller holds gp_lock.
 */
static inline void gp_fence_sb(void)
{
	if (rcu.gp_general)
		sk_fence_heavy();
	else
		sk_smp_mb();
}

/*
 * Wait until no registered reader blocks the scan whose counter word is c.
 * New readers cannot block it (they snapshot the advanced counter), so
 * only the slots found blocking by the first pass are polled again.  The
 * first pass of scan 0 looks at every slot (and records the suspects when
 * a second scan follows); scan 1 looks at the suspects only.
 *
 * A normal grace period spins briefly, then sleeps on the futex; an
 * expedited one (or any while an expedited caller waits) keeps polling and
 * yields the CPU instead of sleeping.
 */
static void wait_for_readers(unsigned long c, int expedited, int scan_no,
			     int scans)
{
	struct rcu_slot *pend[SK_RCU_PEND_MAX];
	uint64_t start = 0, now, next_report = 0, interval = 0;
	unsigned int spins = 0, limit;
	unsigned long n = suspects.n;

	expedited = expedited || sk_atomic_load_relaxed(&rcu.expedite);
	limit = expedited ? SK_RCU_SPIN_EXPEDITED : SK_RCU_SPIN_NORMAL;
	if (scan_no == 0)
		n = scan_all(c, pend, SK_RCU_PEND_MAX, scans > 1);
	else if (n <= SK_RCU_PEND_MAX)
		n = rescan(c, memcpy(pend, suspects.s, n * sizeof(*pend)), n);
	else
		n = scan_all(c, pend, SK_RCU_PEND_MAX, 0);
	for (; n; n = scan(c, pend, n)) {
		if (spins++ < limit) {
			sk_cpu_relax();
			continue;
		}
		now = sk__now_ns();
		if (!start) {
			start = now;
			interval = (uint64_t)sk_rcu_get_stall_ms() * 1000000u;
			next_report = start + interval;
		}
		if (now >= next_report) {
			report_stall(pend, n, c, now - start);
			interval *= 2; /* back off: report again after 2x, 4x... */
			next_report = now + interval;
		}
		if (expedited || sk_atomic_load_relaxed(&rcu.expedite)) {
			sched_yield();
			continue;
		}
		test_hook(SK__RCU_HOOK_BEFORE_SLEEP);
		sk_atomic_store_relaxed(&sk_rcu__gp.futex, -1);
		/*
		 * G3: futex = -1 before re-reading ctrs (pairs with U2/Q2)
		 * and the expedite count (pairs with E1): a request made
		 * after the check above is seen here, or its caller sees
		 * -1 and wakes us.
		 */
		gp_fence_sb();
		if (sk_atomic_load_relaxed(&rcu.expedite)) {
			sk_atomic_store_relaxed(&sk_rcu__gp.futex, 0);
			continue; /* poll for the expedited caller */
		}
		n = scan(c, pend, n);
		if (!n) {
			sk_atomic_store_relaxed(&sk_rcu__gp.futex, 0);
			break;
		}
		sk_atomic_fetch_add_relaxed(&rcu.gp_sleeps, 1UL);
		/* Wake up for the next stall report at the latest. */
		sk__futex_wait_ns(&sk_rcu__gp.futex, -1, next_report - now);
		/*
		 * Awake, however (woken, timed out, interrupted): readers that
		 * leave now need not wake us, so they make no system call.
		 * Relaxed: before sleeping again we set -1 and re-read the
		 * reader words after G3, as above.
		 */
		sk_atomic_store_relaxed(&sk_rcu__gp.futex, 0);
	}
}

/*
 * G2.  On TSO machines (x86) a reader's loads and stores inside its section
 * are ordered before its later store of ctr by the hardware itself (loads
 * are not passed by later stores, stores stay in order), and U1/Q1 stop
 * the compiler; so once the leader has read that store, a local full
 * barrier orders its own later accesses.  Weaker machines need the
 * reader's CPU to execute a barrier: the heavy fence.
 */
static inline void gp_fence_after_scan(int general)
{
#if defined(SK__ARCH_X86)
	(void)general;
	sk_smp_mb();
#else
	/* QSBR-mode threads only: their Q1 is a full fence. */
	if (general)
		sk_fence_heavy();
	else
		sk_smp_mb();
#endif
}

/* Which registered threads besides the caller a grace period waits for. */
enum { RD_NONE, RD_QSBR, RD_GENERAL };

/*
 * Classify the other registered threads (the caller is outside any
 * section): none, QSBR-mode threads only (whose announcements carry full
 * fences), or some that may run general sections (light fences).
 * Relaxed loads after the leader's full barrier: pair M with count_add().
 */
static int other_readers(void)
{
	unsigned long n = sk_atomic_load_relaxed(&rcu.nreaders);
	unsigned long g = sk_atomic_load_relaxed(&rcu.ngeneral);

	if (sk_atomic_load_relaxed(&sk_rcu__ctr)) {
		n--;
		if (!rcu_qsbr_mode)
			g--;
	}
	return !n ? RD_NONE : g ? RD_GENERAL : RD_QSBR;
}

static int rcu_busted; /* SK__RCU_BUSTED_*, torture --busted-* only */

void sk__rcu_set_busted(int mode)
{
	sk_atomic_store_relaxed(&rcu_busted, mode);
}

static inline int busted(int mode)
{
	return sk_atomic_load_relaxed(&rcu_busted) == mode;
}

void sk__rcu_get_gp_kinds(struct sk__rcu_gp_kinds *k)
{
	k->handshake = sk_atomic_load_relaxed(&rcu.kinds.handshake);
	k->heavy = sk_atomic_load_relaxed(&rcu.kinds.heavy);
	k->qsbr_only = sk_atomic_load_relaxed(&rcu.kinds.qsbr_only);
}

/* Count a grace period's first barrier (leader only; stats read relaxed). */
static inline void count_kind(unsigned long *c)
{
	sk_atomic_store_relaxed(c, *c + 1);
}

/*
 * Modular: target is done when completed has reached it, and also when it
 * is far ahead of completed: valid cookies are at most 2 ahead (gp_seq + 1
 * with gp_seq <= completed + 1), so such a cookie is one that wrapped, taken
 * 2^(bits-1) or more grace periods ago.  Only a cookie taken a multiple of
 * 2^bits grace periods ago, give or take SK_RCU_COOKIE_AHEAD, reads as not
 * done (for at most SK_RCU_COOKIE_AHEAD more grace periods).
 */
int sk__rcu_done(unsigned long target)
{
	/* Acquire: pairs with the release of completed after G2. */
	unsigned long c = sk_atomic_load_acquire(&rcu.completed);

	return target == SK_RCU_COOKIE_COMPLETED || (long)(c - target) >= 0 ||
	       target - c > SK_RCU_COOKIE_AHEAD;
}

unsigned long sk__rcu_snap(void)
{
	/* S1: the caller's unlinks before the snapshot; pairs with G1. */
	sk_smp_mb();
	/* Acquire: pairs with the release R0 that starts a grace period. */
	return sk_atomic_load_acquire(&rcu.gp_seq) + 1;
}

/*
 * Does reader word v already stand for an answer to a handshake after the
 * advance to counter word c?  It is inside a section (or QSBR online) in
 * c's phase: it loaded c (acquire, L1) before storing v, so its section
 * and every later one see what R1 published, and v is its latest store.
 * A QSBR thread that announced between R1 and the request would
 * otherwise answer only after the next grace period began.  Only where
 * one scan suffices: with narrow phases a stale word may equal c.
 */
static inline int word_is_answer(unsigned long v, unsigned long c)
{
	return SK_RCU_SCANS == 1 && nest_of(v) &&
	       !((v ^ c) >> SK_RCU_SEQ_SHIFT);
}

/*
 * Has every registered reader but the caller answered handshake e (or
 * shown a word of counter word c, see word_is_answer())?  Registry read
 * lock held.
 */
static int all_acked(uint64_t e, unsigned long c)
{
	struct rcu_chunk *ch;

	for (ch = &first_chunk; ch; ch = ch->next) {
		uint64_t used = ch->used;

		while (used) {
			struct rcu_slot *s = &ch->slots[__builtin_ctzll(used)];

			used &= used - 1;
			/* H2: acquire; pairs with the reader's release. */
			if (s->ackp != &rcu_ack &&
			    sk_atomic_load_acquire(s->ackp) != e &&
			    !word_is_answer(slot_word(s), c))
				return 0;
		}
	}
	return 1;
}

/*
 * Ask every registered reader for a barrier (H0) and wait up to
 * SK_RCU_HANDSHAKE_NS for all answers; returns 1 when all answered.
 * Registry read lock taken here.
 */
static int handshake_round(unsigned long c)
{
	uint64_t e = rcu.exp_seq + 1, deadline;
	int all;

	/* H0: release: R1 before the request number; pairs with the
	 * readers' acquire of exp_seq. */
	sk_atomic_store_release(&rcu.exp_seq, e);
	/* Readers take their slow path and answer (after exp_seq). */
	sk_atomic_store_release(&sk_rcu__gp.futex, SK_RCU_FUTEX_ACK);
	deadline = sk__now_ns() + SK_RCU_HANDSHAKE_NS;
	pthread_rwlock_rdlock(&rcu.registry_lock);
	while (!(all = all_acked(e, c)) && sk__now_ns() < deadline)
		sk_cpu_relax();
	pthread_rwlock_unlock(&rcu.registry_lock);
	sk_atomic_store_relaxed(&sk_rcu__gp.futex, 0);
	return all;
}

/*
 * G1 by handshake (H0/H1/H2 above), tried by every grace period that
 * waits for general readers: 1 when every other registered reader
 * answered within SK_RCU_HANDSHAKE_NS, 0 when the caller must issue the
 * heavy fence.  Busy readers answer within about a microsecond, where
 * membarrier(2) costs an IPI round trip.  After a failure (an idle
 * registered thread never answers) the next SK_RCU_HANDSHAKE_BACKOFF
 * expedited grace periods go straight to membarrier(2) (exp_skip); for
 * normal ones (gp_skip) the skip doubles with every further failure (up
 * to SK_RCU_HANDSHAKE_BACKOFF_MAX) and resets after a success, so idle
 * threads cost them at most one timeout per that many grace periods.
 * Caller holds gp_lock, after R1.
 */
static int gp_handshake(int expedited, unsigned long c)
{
	unsigned int *skip = expedited ? &rcu.exp_skip : &rcu.gp_skip;
	int all;

	if (*skip && !busted(SK__RCU_BUSTED_HANDSHAKE)) {
		(*skip)--;
		all = 0;
	} else if ((all = handshake_round(c))) {
		if (!expedited)
			rcu.gp_backoff = SK_RCU_HANDSHAKE_BACKOFF;
	} else if (expedited) {
		*skip = SK_RCU_HANDSHAKE_BACKOFF;
	} else {
		*skip = rcu.gp_backoff;
		if (rcu.gp_backoff < SK_RCU_HANDSHAKE_BACKOFF_MAX)
			rcu.gp_backoff = 2 * rcu.gp_backoff + 1;
	}
	if (expedited)
		sk_atomic_fetch_add_relaxed(
			all ? &rcu.exp_handshakes : &rcu.exp_fallbacks, 1UL);
	count_kind(all ? &rcu.kinds.handshake : &rcu.kinds.heavy);
	return all;
}

/*
 * Advance the phase (R1) and return the new counter word.  Caller holds
 * gp_lock.  The phase may wrap (see "Narrow words").
 */
static unsigned long advance_phase(void)
{
	unsigned long w = sk_rcu__gp.ctr + (1UL << SK_RCU_SEQ_SHIFT);

	/* R1: advance the counter; pairs with L1 in sk_rcu_read_lock(). */
	sk_atomic_store_release(&sk_rcu__gp.ctr, w);
	return w;
}

/*
 * G1: the phase advance before reading reader words; pairs with L2/Q2.
 * With general readers: the handshake, else membarrier(2).  With QSBR-mode
 * threads only, whose Q2 is a full fence: a full fence.  Returns 0 when
 * the (busted) grace period must not scan.
 */
static int gp_fence_before_scan(int expedited, int general, unsigned long c)
{
	expedited = expedited || sk_atomic_load_relaxed(&rcu.expedite);
	if (!general) {
		count_kind(&rcu.kinds.qsbr_only);
		sk_smp_mb();
		return !busted(SK__RCU_BUSTED_QSBR_ONLY);
	}
	if (gp_handshake(expedited, c)) {
		/* After H2: the leader's own later loads, locally. */
		sk_smp_mb();
		return 1;
	}
	if (busted(SK__RCU_BUSTED_HANDSHAKE))
		return 0;
	sk_fence_heavy();
	return 1;
}

/* The grace-period number after s; skips ULONG_MAX (see rcu.gp_seq). */
static inline unsigned long gp_next(unsigned long s)
{
	return s + 1 == ULONG_MAX ? 0 : s + 1;
}

/* Run grace periods until target completed.  Caller holds gp_lock. */
static void lead(unsigned long target, int expedited)
{
	unsigned long c, w;
	int i, kind, scans = gp_scans();

	if (sk__rcu_done(target))
		return;
	c = gp_next(rcu.gp_seq);
	/* R0: release; pairs with the acquire in sk__rcu_snap(). */
	sk_atomic_store_release(&rcu.gp_seq, c);
	w = advance_phase();
	/*
	 * Full barrier (M): R0/R1 before the registry's counts are read
	 * (store buffering with a registering thread or one that changes
	 * mode, whose count store and later L1 load are ordered by the full
	 * fences of count_add()): a thread counted out here loads the
	 * advanced counter, and the updates of every caller that snapshot
	 * before R0 are visible to it.
	 */
	sk_smp_mb();
	kind = other_readers();
	rcu.gp_general = kind == RD_GENERAL;
	if (kind != RD_NONE &&
	    gp_fence_before_scan(expedited, kind == RD_GENERAL, w)) {
		for (i = 0; i < scans; i++) {
			if (i) {
				w = advance_phase();
				/* R1 before the second scan's loads. */
				sk_smp_mb();
			}
			wait_for_readers(w, expedited, i, scans);
		}
		/* G2: readers' section accesses done before completion; pairs with U1/Q1. */
		gp_fence_after_scan(rcu.gp_general);
	}
	/* Release: pairs with the acquire in sk__rcu_done(). */
	sk_atomic_store_release(&rcu.completed, c);
	sk_atomic_store_relaxed(&rcu.ngps, rcu.ngps + 1);
}

/*
 * Batching.  A caller waits on a node on its own stack, pushed on rcu.wq.
 * The caller that pushes on an empty queue leads: it takes gp_lock, then
 * takes every node off the queue at once (W2) and runs one grace period,
 * which starts after all those pushes and so covers every snapshot taken
 * before them.  It marks each node done (W3) and wakes the owners that
 * sleep.  Callers that push while a leader waits for gp_lock join its
 * batch, so concurrent callers share grace periods; the others spin for
 * SK_RCU_WAITER_SPIN polls before sleeping on their node.
 */
struct gp_waiter {
	struct gp_waiter *next; /* pushed before this one; set before W1 */
	unsigned long target;	/* cookie the caller waits for */
	int expedited;		/* 1: the caller is expedited */
	int state;		/* WQ_*, futex word */
};

/*
 * Node states: the owner moves WAITING to SLEEPING before it sleeps; the
 * leader moves either to DONE, and a SLEEPING one to RELEASED after its
 * wake-up call: the owner leaves only once the leader no longer touches
 * the node (at DONE from WAITING, at RELEASED from SLEEPING).
 */
enum { WQ_WAITING, WQ_SLEEPING, WQ_DONE, WQ_RELEASED };

/* Polls of its node by a waiter before it sleeps. */
#define SK_RCU_WAITER_SPIN 1000

/*
 * Push w on rcu.wq; returns 1 when the queue was empty (w leads).
 * W1: release, the node's fields before it can be taken; pairs with W2.
 */
static int wq_push(struct gp_waiter *w)
{
	struct gp_waiter *old = sk_atomic_load_relaxed(&rcu.wq);

	do
		w->next = old;
	while (!__atomic_compare_exchange_n(&rcu.wq, &old, w, 1,
					    __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED));
	return old == NULL;
}

/* Latest not-yet-done target of the batch (0 with need == 0). */
static unsigned long batch_target(struct gp_waiter *list, int *need,
				  int *expedited)
{
	unsigned long t = 0;

	for (*need = *expedited = 0; list; list = list->next) {
		*expedited |= list->expedited;
		if (sk__rcu_done(list->target))
			continue;
		if (!*need || (long)(list->target - t) > 0)
			t = list->target;
		*need = 1;
	}
	return t;
}

/*
 * Take gp_lock, polling briefly before blocking on it.  The polls read
 * gp_seq and completed, which differ while a leader runs a grace period,
 * and try the lock only when they agree: the lock's cache line stays
 * with its holder until it is about to be released.  Relaxed: a hint.
 */
static void gp_lock_take(void)
{
	int i;

	for (i = 0; i < SK_RCU_WAITER_SPIN; i++) {
		if (sk_atomic_load_relaxed(&rcu.gp_seq) ==
			    sk_atomic_load_relaxed(&rcu.completed) &&
		    pthread_mutex_trylock(&rcu.gp_lock) == 0)
			return;
		sk_cpu_relax();
	}
	pthread_mutex_lock(&rcu.gp_lock);
}

/*
 * Mark every node of list but self done and wake the owners that sleep.
 * W3: the exchange orders the grace period (completed, after G2) before
 * the owner's acquire of DONE; next is read before, since the owner may
 * leave as soon as it sees DONE.
 */
static void batch_release(struct gp_waiter *list, struct gp_waiter *self)
{
	struct gp_waiter *next;

	for (; list; list = next) {
		next = list->next;
		if (list == self)
			continue;
		if (sk_atomic_xchg(&list->state, WQ_DONE) == WQ_SLEEPING) {
			sk__futex_wake(&list->state, 1);
			/* Release: the owner may reuse its stack after this. */
			sk_atomic_store_release(&list->state, WQ_RELEASED);
		}
	}
}

/* Lead the batch that w opened: one grace period for all its nodes. */
static void batch_lead(struct gp_waiter *self)
{
	struct gp_waiter *list;
	unsigned long target;
	int need, expedited;

	gp_lock_take();
	/* W2: acquire; pairs with W1: every node's fields are visible. */
	list = __atomic_exchange_n(&rcu.wq, NULL, __ATOMIC_ACQUIRE);
	target = batch_target(list, &need, &expedited);
	if (SK_UNLIKELY(busted(SK__RCU_BUSTED_EARLY_WAKE)))
		batch_release(list, self);
	if (need)
		lead(target, expedited);
	if (SK_UNLIKELY(busted(SK__RCU_BUSTED_EARLY_WAKE)))
		list = self;
	pthread_mutex_unlock(&rcu.gp_lock);
	batch_release(list, self);
}

/* Broken twin SK__RCU_BUSTED_NO_BATCH: a grace period of w's own. */
static void lead_alone(struct gp_waiter *w)
{
	pthread_mutex_lock(&rcu.gp_lock);
	lead(gp_next(rcu.gp_seq), w->expedited);
	pthread_mutex_unlock(&rcu.gp_lock);
}

/* Wait until the leader has served w: spin, then sleep on w->state. */
static void batch_wait(struct gp_waiter *w)
{
	int i, s = WQ_WAITING;

	/* Acquire: pairs with W3, the grace period before the return. */
	for (i = 0; i < SK_RCU_WAITER_SPIN; i++) {
		if (sk_atomic_load_acquire(&w->state) >= WQ_DONE)
			return;
		sk_cpu_relax();
	}
	if (!sk_atomic_cmpxchg(&w->state, &s, WQ_SLEEPING))
		return; /* DONE meanwhile (seq_cst: acquire, W3) */
	while ((s = sk_atomic_load_acquire(&w->state)) != WQ_RELEASED) {
		if (s == WQ_SLEEPING)
			sk__futex_wait(&w->state, WQ_SLEEPING);
		else
			sched_yield(); /* DONE: the wake-up call is under way */
	}
}

void sk__rcu_wait(unsigned long target, int expedited)
{
	struct gp_waiter w = { NULL, target, expedited, WQ_WAITING };

	if (sk__rcu_done(target))
		return;
	if (expedited) {
		/* A sleeping leader switches to polling for us. */
		sk_atomic_fetch_add(&rcu.expedite, 1UL);
		/*
		 * E1: the count before wake_leader() reads futex; pairs with
		 * G3 (store buffering with a leader going to sleep).
		 */
		sk_smp_mb__after_atomic();
		wake_leader();
		test_hook(SK__RCU_HOOK_EXPEDITE_ASKED);
	}
	if (SK_UNLIKELY(busted(SK__RCU_BUSTED_NO_BATCH)))
		lead_alone(&w);
	else if (wq_push(&w))
		batch_lead(&w);
	else
		batch_wait(&w);
	if (expedited)
		sk_atomic_fetch_add(&rcu.expedite, -1UL);
}

int sk__rcu_enter_wait(const char *fn)
{
	unsigned long v = sk_atomic_load_relaxed(&sk_rcu__ctr);

	if (nest_of(v) == SK_RCU_QSBR_NEST) {
		go_offline();
		return 1;
	}
	if (nest_of(v) != 0)
		sk__die("%s %s (nesting depth %lu): it would wait for itself "
			"forever",
			fn, in_section_msg, depth_of(v));
	return 0;
}

void sk_synchronize_rcu(void)
{
	int was_online = sk__rcu_enter_wait("sk_synchronize_rcu()");

	sk_atomic_fetch_add_relaxed(&rcu.sync_calls, 1UL);
	sk__rcu_wait(sk__rcu_snap(), 0);
	if (was_online)
		sk_rcu_thread_online();
}

void sk_synchronize_rcu_expedited(void)
{
	int was_online = sk__rcu_enter_wait("sk_synchronize_rcu_expedited()");

	sk_atomic_fetch_add_relaxed(&rcu.sync_calls, 1UL);
	sk__rcu_wait(sk__rcu_snap(), 1);
	if (was_online)
		sk_rcu_thread_online();
}

unsigned long sk_get_state_synchronize_rcu(void)
{
	return sk__rcu_snap();
}

int sk_poll_state_synchronize_rcu(unsigned long cookie)
{
	if (!sk__rcu_done(cookie))
		return 0;
	/* Later frees after the observed completion (pairs with G2). */
	sk_smp_mb();
	return 1;
}

void sk_cond_synchronize_rcu(unsigned long cookie)
{
	int was_online;

	if (sk_poll_state_synchronize_rcu(cookie))
		return;
	was_online = sk__rcu_enter_wait("sk_cond_synchronize_rcu()");
	sk__rcu_wait(cookie, 0);
	if (was_online)
		sk_rcu_thread_online();
}

/*
 * fork(): only the forking thread exists in the child.  The registry is
 * rebuilt with that thread alone (if registered); locks are made usable;
 * a grace period that was running in the parent simply never completes in
 * the child, and the next one there covers it.
 */
#ifdef SK_TSAN
#include <sanitizer/tsan_interface.h>
#endif

static void atfork_prepare(void)
{
	sk__rcu_cb_atfork_prepare();
	pthread_rwlock_wrlock(&rcu.registry_lock);
}

static void atfork_parent(void)
{
	pthread_rwlock_unlock(&rcu.registry_lock);
	sk__rcu_cb_atfork_parent();
}

static void atfork_child(void)
{
	struct rcu_chunk *ch;
	int i;

	/*
	 * Write-locked by this thread in atfork_prepare(), but glibc knows
	 * the writer by thread id, which changed: re-create the lock.  TSan
	 * is first told that the write lock is released.
	 */
#ifdef SK_TSAN
	__tsan_mutex_pre_unlock(&rcu.registry_lock, 0);
	__tsan_mutex_post_unlock(&rcu.registry_lock, 0);
#endif
	pthread_rwlock_init(&rcu.registry_lock, NULL);
	/* gp_lock may have been held by a thread that does not exist here. */
	pthread_mutex_init(&rcu.gp_lock, NULL);
	rcu.wq = NULL;
	sk_atomic_store_relaxed(&rcu.nreaders, 0UL);
	sk_atomic_store_relaxed(&rcu.ngeneral, 0UL);
	for (ch = &first_chunk; ch; ch = ch->next) {
		for (i = 0; i < SK_RCU_CHUNK_SLOTS; i++) {
			if (ch->slots[i].ctrp == &sk_rcu__ctr) {
				ch->slots[i].tid = sk__gettid();
				sk_atomic_store_relaxed(&rcu.nreaders, 1UL);
				sk_atomic_store_relaxed(
					&rcu.ngeneral,
					(unsigned long)!rcu_qsbr_mode);
			} else {
				ch->slots[i].ctrp = NULL;
				ch->used &= ~((uint64_t)1 << i);
			}
		}
	}
	sk_rcu__gp.futex = 0;
	rcu.expedite = 0;
	rcu.exp_skip = 0;
	rcu.gp_skip = 0;
	rcu.gp_backoff = SK_RCU_HANDSHAKE_BACKOFF;
	sk__rcu_cb_atfork_child();
}

unsigned long sk__rcu_gp_count(void)
{
	/* Relaxed: a statistic, orders nothing. */
	return sk_atomic_load_relaxed(&rcu.ngps);
}

int sk_rcu_get_stats(struct sk_rcu_stats *st)
{
	if (!st)
		return -EINVAL;
	st->grace_periods = sk_atomic_load_relaxed(&rcu.ngps);
	st->sync_calls = sk_atomic_load_relaxed(&rcu.sync_calls);
	st->gp_sleeps = sk_atomic_load_relaxed(&rcu.gp_sleeps);
	st->exp_handshakes = sk_atomic_load_relaxed(&rcu.exp_handshakes);
	st->exp_fallbacks = sk_atomic_load_relaxed(&rcu.exp_fallbacks);
	pthread_rwlock_rdlock(&rcu.registry_lock);
	st->readers = sk_atomic_load_relaxed(&rcu.nreaders);
	pthread_rwlock_unlock(&rcu.registry_lock);
	return sk__rcu_cb_stats(st);
}

#ifdef SK_TEST_HOOKS
/*
 * Test hooks (the scalekit_hooks test library only, never the installed
 * one): start the grace-period numbers at gp and the phase at phase, so a
 * test crosses the wrap-around points within a few grace periods; and force
 * the scans per grace period (0: the build's SK_RCU_SCANS).  Call with no
 * grace period, callback or polled request in flight.
 */
int sk__rcu_test_set_seq(unsigned long gp, unsigned long phase)
{
	if (gp == ULONG_MAX)
		return -EINVAL; /* gp_seq never takes that value */
	pthread_mutex_lock(&rcu.gp_lock);
	rcu.gp_seq = gp;
	sk_atomic_store_relaxed(&rcu.ngps, 0UL);
	sk_atomic_store_release(&rcu.completed, gp);
	sk_atomic_store_release(&sk_rcu__gp.ctr,
				(phase << SK_RCU_SEQ_SHIFT) | SK_RCU_REG | 1);
	pthread_mutex_unlock(&rcu.gp_lock);
	return 0;
}

void sk__rcu_test_set_scans(int n)
{
	sk_atomic_store_relaxed(&rcu_test_scans, n);
}

/*
 * Call fn(where) at the points named SK__RCU_HOOK_* (NULL: none), in the
 * thread that reaches them: a leader about to sleep on readers (holding
 * gp_lock), an expedited caller that has just asked for haste.  Release:
 * fn sees what the test wrote before.
 */
void sk__rcu_test_set_hook(void (*fn)(int where))
{
	sk_atomic_store_release(&rcu_test_hook, fn);
}
#endif
