/* SPDX-License-Identifier: MIT */
/*
 * State and helpers shared by the files of the RCU module (src/rcu.c,
 * src/rcu_reader.c, src/rcu_handshake.c, src/rcu_gp.c, src/rcu_exp.c;
 * see src/internal/rcu.h for the algorithm and all barrier pairs).  Not
 * for src/rcu_cb.c, which uses internal/rcu.h only.  Places no fence.
 */
#ifndef SCALEKIT_INTERNAL_RCU_STATE_H
#define SCALEKIT_INTERNAL_RCU_STATE_H

#include <pthread.h>
#include <stdint.h>

#include "scalekit/rcu.h"
#include "internal/rcu.h"

/*
 * Polls of the blocking readers before a normal grace period sleeps on the
 * futex (normal grace periods save CPU: they hardly spin), and before an
 * expedited one starts yielding the CPU between polls.
 */
#define SK__RCU_SPIN_NORMAL 100
#define SK__RCU_SPIN_EXPEDITED 1000

/* Registry slots come in chunks of this many. */
#define SK__RCU_CHUNK_SLOTS 64

/* Most blocking readers a grace period tracks without rescanning all. */
#define SK__RCU_PEND_MAX 128

/*
 * Expedited handshake: how long the leader waits for every reader's
 * acknowledgement before it falls back to membarrier(2), and how many
 * expedited grace periods skip the handshake after one that fell back
 * (idle registered threads never answer, so keep trying only now and
 * then).  futex holds sk__rcu_hs_word(e) while handshake e runs.
 */
#define SK__RCU_HANDSHAKE_NS 5000
/*
 * The quiet round of a normal grace period, before its handshake request:
 * the leader first waits SK__RCU_QUIET_FIRST_NS without touching any
 * reader's line, then looks at the reader words every SK__RCU_QUIET_GAP_NS
 * for at most SK__RCU_QUIET_NS in all.  Each look takes the line of every
 * busy reader's word, which that reader then misses on its next store; the
 * gaps bound how often a grace period makes it pay that.
 */
#define SK__RCU_QUIET_FIRST_NS 1000
#define SK__RCU_QUIET_GAP_NS 500
#define SK__RCU_QUIET_NS 3000
#define SK__RCU_HANDSHAKE_BACKOFF 15
#define SK__RCU_HANDSHAKE_BACKOFF_MAX 63
/*
 * Readers a failed round remembers (struct rcu_hs_miss): the next grace
 * periods skip the rounds while one of them still shows the word it
 * showed then (no section entered since: it would not answer again).
 */
#define SK__RCU_HS_MISS_MAX 8
/*
 * The futex value of handshake request e: positive (sleeping leaders use
 * -1), and different for 2^30 consecutive requests.  A reader whose
 * sk_rcu__hs_seen equals it answered e (or, after 2^30 requests, an
 * older one: it then does not answer, and the leader falls back to
 * membarrier(2) after its timeout; never unsafe).
 */
static inline int sk__rcu_hs_word(uint64_t e)
{
	return (int)(e & 0x3fffffff) + 1;
}

/* Scans per grace period: two where the phase wraps within reach. */
#define SK__RCU_SCANS (SK__RCU_SEQ_BITS < 40 ? 2 : 1)

/* The scans of this grace period: SK__RCU_SCANS, or a test's setting. */
#ifdef SK_TESTING
extern int sk__rcu_test_scans; /* sk__rcu_test_set_scans() [rcu_gp.c] */
#define sk__rcu_scans()                                                  \
	(sk_atomic_load_relaxed(&sk__rcu_test_scans) ?                   \
		 sk_atomic_load_relaxed(&sk__rcu_test_scans) : SK__RCU_SCANS)
#else
#define sk__rcu_scans() SK__RCU_SCANS
#endif

/*
 * A cookie ahead of the completed count by more than this names a grace
 * period that completed 2^(bits-1) or more grace periods ago (it wrapped
 * around): it reads as completed.  A valid cookie is at most 2 ahead.
 */
#define SK__RCU_COOKIE_AHEAD 1024UL

/*
 * Registry slot of a reader thread: where its reader word lives.  Slots
 * sit in chunks that are never freed, so a grace period can keep pointers
 * to slots across its sleeps; the reader word itself (thread-local) may
 * only be read under registry_lock held for reading, because an exiting
 * thread frees it after unregistering (write lock).
 */
struct rcu_slot {
	unsigned long *ctrp; /* &sk_rcu__ctr of the owner, NULL when free */
	uint64_t *ackp;	     /* &sk__rcu_ack of the owner */
	long tid;	     /* kernel thread id of the owner */
};

/*
 * words[i] is slots[i].ctrp, or &sk__rcu_no_word while slot i is free:
 * the first scan of a grace period loads every word of a chunk from this
 * dense array (8 pointers a cache line) without a branch between the
 * loads (see scan_chunk() in src/rcu_gp.c).  Written with the slot, under
 * the write lock.
 */
struct rcu_chunk {
	struct rcu_slot slots[SK__RCU_CHUNK_SLOTS];
	unsigned long *words[SK__RCU_CHUNK_SLOTS];
	uint64_t used;		/* bit i: slots[i] has an owner */
	struct rcu_chunk *next; /* next chunk, or NULL */
	/*
	 * The chunk's mark: the latest counter word (sk_rcu__gp.ctr) whose
	 * phase a thread of this chunk entered a section in, went online
	 * in, or announced (RCU-K1, raised before the reader word shows that
	 * phase, by sk__rcu_mark_raise()).  A scan of phase p skips a chunk
	 * whose mark is older than the phase before p (see chunk_is_quiet()
	 * in src/rcu_gp.c).  Written by readers, on a line of its own.
	 * Unused where a grace period scans twice (SK__RCU_SCANS).
	 */
	unsigned long mark __attribute__((aligned(SK_CACHELINE)));
};

/* The mark of the calling thread's chunk (NULL while unregistered). */
extern __thread unsigned long *sk__rcu_markp
	__attribute__((tls_model("initial-exec")));

/* The word of a free slot: always 0 (never in a section). */
extern unsigned long sk__rcu_no_word;

/* Give slot i of ch to the calling thread, or free it (words[i] too). */
static inline void chunk_set_slot(struct rcu_chunk *ch, int i,
				  unsigned long *ctrp)
{
	ch->slots[i].ctrp = ctrp;
	ch->words[i] = ctrp ? ctrp : &sk__rcu_no_word;
}

struct gp_waiter; /* a caller waiting for a grace period (src/rcu_gp.c) */

/*
 * A reader that did not answer the last failed handshake round: its slot,
 * the owner's word address then (a reused slot has another owner) and the
 * word it showed (src/rcu_handshake.c, misses_still_idle()).
 */
struct rcu_hs_miss {
	struct rcu_slot *slot;
	unsigned long *ctrp;
	unsigned long word;
};

/* The module's global state (defined in src/rcu.c). */
struct sk__rcu_state {
	/*
	 * Guarded by registry_lock: written (slots, chunks) under the write
	 * lock by threads that register or unregister; read by grace
	 * periods under the read lock, one scan pass at a time.
	 */
	pthread_rwlock_t registry_lock;
	struct rcu_chunk *last_chunk; /* where new chunks are appended */
	/*
	 * Counts that grace periods read without the lock (RCU-M): owners
	 * of slots, and owners not in QSBR mode.  Neither counts a thread
	 * parked in a grace-period wait (SK__RCU_PARKED).  Atomic RMWs: the
	 * write lock's holders and parking threads change them.
	 */
	unsigned long nreaders;
	unsigned long ngeneral;
	/*
	 * Slots with an owner, parked or not: written under the write lock,
	 * read relaxed as a hint by parking (and by the stats).
	 */
	unsigned long nslots;

	/* Guarded by gp_lock: one grace period at a time. */
	pthread_mutex_t gp_lock;
	unsigned long gp_sleeps;  /* written by the leader */
	unsigned long expedite;	  /* expedited callers waiting (atomic) */
	uint64_t exp_seq;	  /* handshakes started (never wraps) */
	unsigned int exp_skip;	  /* expedited GPs left without handshake */
	unsigned int gp_skip;	  /* normal GPs left without handshake */
	unsigned int gp_backoff;  /* gp_skip after the next failure */
	int gp_general;		  /* this GP may wait for general readers */
	unsigned long exp_handshakes; /* RCU-G1 done by handshake (stat) */
	unsigned long exp_fallbacks;  /* expedited RCU-G1 by membarrier */
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
	 * nodes, pushed by any caller (RCU-W1), taken whole by a leader
	 * (RCU-W2).
	 */
	struct gp_waiter *wq __attribute__((aligned(SK_CACHELINE)));

	pthread_key_t exit_key; /* destructor unregisters exiting threads */
	pthread_once_t key_once;

	/*
	 * Guarded by gp_lock: the readers the last failed handshake round
	 * remembers (src/rcu_handshake.c).  Last, so that the fields above
	 * keep their lines.
	 */
	unsigned int nmiss; /* entries of miss[] */
	struct rcu_hs_miss miss[SK__RCU_HS_MISS_MAX];
};

extern struct sk__rcu_state sk__rcu;
extern struct rcu_chunk sk__rcu_first_chunk;
/* Last handshake (sk__rcu.exp_seq) this thread acknowledged. */
extern __thread uint64_t sk__rcu_ack __attribute__((tls_model("initial-exec")));
/*
 * 1 while the thread is registered in QSBR mode (not counted in
 * sk__rcu.ngeneral): from its first sk_rcu_thread_online() until it enters
 * a read section while offline or unregisters.  Written by the thread
 * under the registry write lock.
 */
extern __thread int sk__rcu_qsbr_mode __attribute__((tls_model("initial-exec")));

/*
 * Reader word of a general thread parked in a grace-period wait (see
 * sk__rcu_park()): nonzero (registered), SK__RCU_REG clear (so that
 * sk_rcu_read_lock() takes its slow path and unparks), and not the
 * offline-QSBR word (SK__RCU_QOFF).
 */
#define SK__RCU_PARKED (2UL << SK__RCU_SEQ_SHIFT)

/* Is reader word v that of a registered general thread outside sections? */
static inline int word_is_idle_general(unsigned long v)
{
	return (v & (SK__RCU_NEST_MASK | SK__RCU_REG)) == SK__RCU_REG;
}

/*
 * Park the caller if it is a registered general thread outside sections
 * and another thread is registered: alone, a leader leaves itself out of
 * the counts anyway, and parking would only cost its next section the
 * slow path.
 */
static inline void sk__rcu_park(void)
{
	/* Relaxed: the thread's own word; a hint (a stale one only costs). */
	if (word_is_idle_general(sk_atomic_load_relaxed(&sk_rcu__ctr)) &&
	    sk_atomic_load_relaxed(&sk__rcu.nslots) > 1)
		sk__rcu_park_slow();
}

/* Nesting part of reader word v (SK__RCU_QSBR_NEST: online QSBR base). */
static inline unsigned long nest_of(unsigned long v)
{
	return v & SK__RCU_NEST_MASK;
}

/* Read-section depth for messages (a QSBR thread's base is not a section). */
static inline unsigned long depth_of(unsigned long v)
{
	unsigned long n = nest_of(v);

	return n > SK__RCU_QSBR_NEST ? n - SK__RCU_QSBR_NEST : n;
}

/*
 * Does reader word v belong to a section that began before the scan whose
 * counter word is c (its phase differs; see "Narrow words")?
 */
static inline int blocks_gp(unsigned long v, unsigned long c)
{
	return nest_of(v) && ((v ^ c) >> SK__RCU_SEQ_SHIFT);
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
	/* Ordering from RCU-G2 + RCU-U1, invisible to TSan. */
	if (s->ctrp)
		SK_TSAN_ACQUIRE(s->ctrp);
}

/* Is the broken twin mode (SK__RCU_BUSTED_*) on?  0 in a release build. */
#define busted(mode) sk__rcu_busted_is(mode)

/*
 * RCU-K1: raise the calling thread's chunk mark to counter word w, before
 * its reader word shows w's phase (never lower it: another thread of the
 * chunk may have raised it further).  Relaxed: program order puts it
 * before that word store, whose own pairing (RCU-L2/RCU-Q2 with RCU-G1,
 * or the handshake's answer) carries it to the scan, which reads the mark
 * before the words.  Only where a grace period scans once: with narrow
 * phases every scan reads every word.
 */
static inline void sk__rcu_mark_raise(unsigned long w)
{
	unsigned long *m = sk__rcu_markp, old;

	if (SK__RCU_SCANS != 1 || !m || busted(SK__RCU_BUSTED_MARK))
		return;
	old = sk_atomic_load_relaxed(m);
	/*
	 * Newer by the signed difference of counter words: a mark left more
	 * than 2^(SEQ_BITS-1) phases behind reads as ahead and stays, until
	 * a scan repairs it (chunk_is_quiet() [rcu_gp.c]).
	 */
	while ((long)(w - old) > 0 &&
	       !__atomic_compare_exchange_n(m, &old, w, 1, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
}

/* Count a grace period's first barrier (leader only; stats read relaxed). */
static inline void count_kind(unsigned long *c)
{
	sk_atomic_store_relaxed(c, *c + 1);
}

/*
 * Store counter word w (RCU-R1), its QSBR form and the read lock's form.
 * Caller holds gp_lock, and issues RCU-G1 after this.  qs_word first,
 * relaxed: the quiescent state's fast path only compares it, and a
 * thread that sees it before the new ctr takes the slow path, whose
 * acquire of ctr (RCU-Q2's side) orders the rest.  lock_word after ctr:
 * a read lock that sees the new lock_word sees the new ctr in its slow
 * path; one that sees the old lock_word read it as if before the
 * advance, which RCU-G1 (after both) covers.  With fallback fences
 * lock_word never equals a reader word and heavy stays set (rcu.h);
 * the twin SK__RCU_BUSTED_FALLBACK stores the membarrier(2) forms there.
 */
static inline void sk__rcu_set_ctr(unsigned long w)
{
	int light = sk_fence_uses_membarrier() ||
		    busted(SK__RCU_BUSTED_FALLBACK);

	sk_atomic_store_relaxed(&sk_rcu__gp.qs_word,
				w + (SK__RCU_QSBR_NEST - 1));
	/* RCU-R1: advance the counter; pairs with RCU-L1 (read lock). */
	sk_atomic_store_release(&sk_rcu__gp.ctr, w);
	/* Relaxed: constant but for the twin; read by the unlock. */
	sk_atomic_store_relaxed(&sk_rcu__gp.heavy, !light);
	/*
	 * RCU-R2: release, after ctr; pairs with the read lock's acquire
	 * of lock_word (RCU-L1), so its slow path loads ctr >= w.
	 */
	sk_atomic_store_release(&sk_rcu__gp.lock_word,
				light ? w : w ^ SK__RCU_HEAVY);
}

/* Count a synchronize call of the caller's (sk_rcu_stats.sync_calls). */
void sk__rcu_count_sync(void);

/* Create the thread-exit key (pthread_once; src/rcu_reader.c). */
void sk__rcu_key_init(void);

/* Wake a leader sleeping on readers (src/rcu_reader.c). */
void sk__rcu_wake_leader(void);

/*
 * RCU-G1 by handshake (src/rcu_handshake.c): SK_RCU_HS_NONE when the
 * caller must issue the heavy fence, SK_RCU_HS_ASKED when every reader
 * answered a request (the scan follows as usual), SK_RCU_HS_QUIET when the
 * quiet round saw every reader inside a section of counter word c: that
 * stands for RCU-G1 and for the scan, which it makes needless.  Caller
 * holds gp_lock, after RCU-R1.
 */
enum { SK_RCU_HS_NONE, SK_RCU_HS_ASKED, SK_RCU_HS_QUIET };
int sk__rcu_gp_handshake(int expedited, unsigned long c);

/* Stall watchdog: name every reader that still holds the scan of c
 * (src/rcu_handshake.c). */
void sk__rcu_report_stall(struct rcu_slot **pend, unsigned long n,
			  unsigned long c, uint64_t waited_ns);

#endif
