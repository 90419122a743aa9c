/* SPDX-License-Identifier: MIT */
/*
 * RCU, grace periods: scanning the registry, waiting for readers, the
 * leader's state machine and the batching of concurrent callers.  The
 * algorithm and the module's overview: src/internal/rcu.h.
 *
 * Barrier pairs placed here [partner's file]:
 *   RCU-S1  caller of a cookie: full barrier before its snapshot of gp_seq;
 *           pairs with RCU-G1.  sk_synchronize_rcu() takes no snapshot:
 *           its unlinks reach the leader through RCU-W1/RCU-W2.
 *   RCU-R0  leader: release store of gp_seq; pairs with the snapshot's
 *           acquire.
 *   RCU-R1  leader: release store of the counter advance; pairs with
 *           RCU-L1 [rcu.h, rcu_reader.c].
 *   RCU-M   leader: full barrier between RCU-R1 and its loads of the
 *           registry counts; pairs with count_add() [rcu_reader.c].
 *   RCU-G1  leader: the handshake [rcu_handshake.c], else the heavy fence (full
 *           for QSBR-only grace periods), before reading reader words;
 *           pairs with RCU-L2 [rcu.h] and RCU-Q2 [rcu_reader.c].
 *   RCU-G2  leader: heavy fence after the scan (local full fence on x86
 *           and for QSBR-only grace periods); pairs with RCU-U1 [rcu.h]
 *           and RCU-Q1 [rcu_reader.c].
 *   RCU-G3  leader: heavy (or full) fence after futex = -1; pairs with
 *           RCU-U2 [rcu.h], RCU-Q2 [rcu_reader.c] and RCU-E1.
 *   RCU-E1  expedited caller: full fence after raising the expedite count;
 *           pairs with RCU-G3.
 *   RCU-W1  caller: release push of its wait node; pairs with RCU-W2.
 *   RCU-W2  leader: acquire exchange that takes every queued node.
 *   RCU-W3  leader: exchange that marks a node done after the grace
 *           period; pairs with the owner's acquire load.
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
#include "internal/rcu_state.h"
#include "internal/util.h"

#ifdef SK_TESTING
int sk__rcu_test_scans; /* nonzero: scans per grace period (tests) */
#else
#endif

#ifdef SK_TESTING
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
 * Readers that the first scan of a two-scan grace period found inside a
 * section of the current phase: the only ones the second scan must check
 * (see "Narrow words").  More than SK__RCU_PEND_MAX: check all.  Guarded by
 * gp_lock.
 */
static struct {
	struct rcu_slot *s[SK__RCU_PEND_MAX];
	unsigned long n;
} suspects;

/* The counter word of the phase before c's (advance_phase() skips 0). */
static inline unsigned long prev_phase(unsigned long c)
{
	unsigned long p = c - (1UL << SK__RCU_SEQ_SHIFT);

	return p >> SK__RCU_SEQ_SHIFT ? p : p - (1UL << SK__RCU_SEQ_SHIFT);
}

/*
 * May the scan of counter word c skip chunk ch?  Yes when its mark is
 * older than the phase before c's (prev_phase()): then no thread of the
 * chunk entered a section (went online, announced) in that phase or later, every
 * such event having raised the mark first (RCU-K1); and the scan of that
 * previous phase waited for every section of an older phase, and no
 * section that began before this scan's RCU-G1 can carry an older phase
 * without having been read by that scan: a reader checks the counter
 * after storing its word (RCU-L2/RCU-L1), and one that found a phase
 * older than the current one raised the mark and took it instead.  So
 * every section of the chunk that this scan must wait for shows c's
 * previous phase, and raised the mark to it.  Relaxed: RCU-G1 orders it,
 * as it orders the words.  Only where one scan suffices (wide phases).
 */
static inline int chunk_is_quiet(struct rcu_chunk *ch, unsigned long c)
{
	unsigned long m;

	if (sk__rcu_scans() != 1)
		return 0;
	m = sk_atomic_load_relaxed(&ch->mark);
	if ((long)(m - c) > 0) {
		/*
		 * A mark ahead of the counter: left 2^(SEQ_BITS-1) phases
		 * behind (or by a test's jump of the counter), so readers
		 * saw it ahead and did not raise it.  Raise it to c and scan:
		 * the readers that entered meanwhile are read now, and
		 * those of c's phase raise it from c on.
		 */
		__atomic_compare_exchange_n(&ch->mark, &m, c, 0,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		return 0;
	}
	return (long)(m - prev_phase(c)) < 0;
}

/*
 * Scan the owned slots of ch for scan_all(): n slots found blocking so
 * far, returns the new count.  Every word below the highest owned slot is
 * loaded first, from the dense words[] (a free slot's is
 * sk__rcu_no_word): independent loads with no branch between them, which
 * the CPU keeps in flight together.  Only a chunk where some word has a
 * nesting depth (a section, or a QSBR thread online) is then looked at
 * slot by slot; a chunk of idle threads costs nothing more (7.4
 * instructions per idle slot, 15.2 before).  Each word is thread-local
 * storage at the same offset of its owner's page, so every word of the
 * registry maps to one set of the L1 data cache: the fills into that one
 * set, not the instructions, set the scan's pace (about 3 ns per thread
 * up to 1,024 threads on the development machine, more past the TLB's
 * reach), and software prefetching does not speed them up (docs/rcu.md,
 * "Many registered threads").  Registry read lock held.
 */
static unsigned long scan_chunk(struct rcu_chunk *ch, unsigned long c,
				struct rcu_slot **pend, unsigned long cap,
				int collect, unsigned long n)
{
	unsigned long v[SK__RCU_CHUNK_SLOTS], any = 0, n0 = n;
	uint64_t used = ch->used;
	int i, top;

	if (!used)
		return n;
	if (chunk_is_quiet(ch, c)) {
		count_kind(&sk__rcu.kinds.chunks_skipped);
		return n;
	}
	count_kind(&sk__rcu.kinds.chunks_scanned);
	top = SK__RCU_CHUNK_SLOTS - __builtin_clzll(used);
	for (i = 0; i < top; i++) {
		/* Relaxed: ordered by RCU-G1 before, RCU-G2 after. */
		v[i] = sk_atomic_load_relaxed(ch->words[i]);
		any |= v[i];
	}
#ifndef SK__TSAN
	if (!nest_of(any))
		return n; /* nobody in a section: none blocks, no suspect */
#endif
	for (; used; used &= used - 1) {
		struct rcu_slot *s;

		i = __builtin_ctzll(used);
		s = &ch->slots[i];
		if (blocks_gp(v[i], c)) {
			if (n < cap)
				pend[n] = s;
			n++;
			continue;
		}
		slot_passed(s);
		if (collect && nest_of(v[i])) {
			if (suspects.n < SK__RCU_PEND_MAX)
				suspects.s[suspects.n] = s;
			suspects.n++;
		}
	}
	/* Broken twin: the chunk's highest blocking slot is left out. */
	if (busted(SK__RCU_BUSTED_SCAN_SKIP) && n > n0)
		n--;
	return n;
}

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
	pthread_rwlock_rdlock(&sk__rcu.registry_lock);
	for (ch = &sk__rcu_first_chunk; ch; ch = ch->next)
		n = scan_chunk(ch, c, pend, cap, collect, n);
	pthread_rwlock_unlock(&sk__rcu.registry_lock);
	return n;
}

/* Keep only the slots of pend[0..n) that still block c; returns the count. */
static unsigned long rescan(unsigned long c, struct rcu_slot **pend,
			    unsigned long n)
{
	unsigned long i, k = 0;

	pthread_rwlock_rdlock(&sk__rcu.registry_lock);
	for (i = 0; i < n; i++) {
		if (blocks_gp(slot_word(pend[i]), c))
			pend[k++] = pend[i];
		else
			slot_passed(pend[i]);
	}
	pthread_rwlock_unlock(&sk__rcu.registry_lock);
	return k;
}

static unsigned long scan(unsigned long c, struct rcu_slot **pend,
			  unsigned long n)
{
	return n > SK__RCU_PEND_MAX ? scan_all(c, pend, SK__RCU_PEND_MAX, 0)
				   : rescan(c, pend, n);
}

/*
 * RCU-G3's fence: heavy while general readers may run (their RCU-U2 is
 * light), a full fence when only QSBR-mode threads are waited for (their
 * RCU-Q2 and go_offline()'s are full).  Caller holds gp_lock.
 */
static inline void gp_fence_sb(void)
{
	if (sk__rcu.gp_general)
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
	struct rcu_slot *pend[SK__RCU_PEND_MAX];
	uint64_t start = 0, now, next_report = 0, interval = 0;
	unsigned int spins = 0, limit;
	unsigned long n = suspects.n;

	expedited = expedited || sk_atomic_load_relaxed(&sk__rcu.expedite);
	limit = expedited ? SK__RCU_SPIN_EXPEDITED : SK__RCU_SPIN_NORMAL;
	if (scan_no == 0)
		n = scan_all(c, pend, SK__RCU_PEND_MAX, scans > 1);
	else if (n <= SK__RCU_PEND_MAX)
		n = rescan(c, memcpy(pend, suspects.s, n * sizeof(*pend)), n);
	else
		n = scan_all(c, pend, SK__RCU_PEND_MAX, 0);
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
			sk__rcu_report_stall(pend, n, c, now - start);
			interval *= 2; /* back off: report again after 2x, 4x... */
			next_report = now + interval;
		}
		if (expedited || sk_atomic_load_relaxed(&sk__rcu.expedite)) {
			sched_yield();
			continue;
		}
		test_hook(SK__RCU_HOOK_BEFORE_SLEEP);
		/*
		 * RCU-G4: release: the counter word c (RCU-R1, stored before)
		 * is visible to a reader whose acquire reads this -1 (RCU-U3),
		 * which compares its section's phase with c's to decide
		 * whether to wake us.
		 */
		sk_atomic_store_release(&sk_rcu__gp.futex, -1);
		/*
		 * RCU-G3: futex = -1 before re-reading ctrs (pairs with
		 * RCU-U2/RCU-Q2) and the expedite count (pairs with RCU-E1):
		 * a request made after the check above is seen here, or its
		 * caller sees -1 and wakes us.
		 */
		gp_fence_sb();
		if (sk_atomic_load_relaxed(&sk__rcu.expedite)) {
			sk_atomic_store_relaxed(&sk_rcu__gp.futex, 0);
			continue; /* poll for the expedited caller */
		}
		n = scan(c, pend, n);
		if (!n) {
			sk_atomic_store_relaxed(&sk_rcu__gp.futex, 0);
			break;
		}
		sk_atomic_fetch_add_relaxed(&sk__rcu.gp_sleeps, 1UL);
		/* Wake up for the next stall report at the latest. */
		sk__futex_wait_ns(&sk_rcu__gp.futex, -1, next_report - now);
		/*
		 * Awake, however (woken, timed out, interrupted): readers that
		 * leave now need not wake us, so they make no system call.
		 * Relaxed: before sleeping again we set -1 and re-read the
		 * reader words after RCU-G3, as above.
		 */
		sk_atomic_store_relaxed(&sk_rcu__gp.futex, 0);
	}
}

/*
 * RCU-G2.  On TSO machines (x86) a reader's loads and stores inside its section
 * are ordered before its later store of ctr by the hardware itself (loads
 * are not passed by later stores, stores stay in order), and RCU-U1/RCU-Q1 stop
 * the compiler; so once the leader has read that store, a local full
 * barrier orders its own later accesses.  Weaker machines need the
 * reader's CPU to execute a barrier: the heavy fence.
 */
static inline void gp_fence_after_scan(int general)
{
#if defined(SK__BARRIER_ARCH_X86)
	(void)general;
	sk_smp_mb();
#else
	/* QSBR-mode threads only: their RCU-Q1 is a full fence. */
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
 * Loads after the leader's full barrier: pair RCU-M with count_add() and
 * park_counts() [rcu_reader.c].
 */
static int other_readers(void)
{
	/*
	 * Acquire: a thread that parked (release RMW after its full fence)
	 * did its sections before; the order is RCU-M's, this makes it
	 * visible to TSan too.
	 */
	unsigned long n = sk_atomic_load_acquire(&sk__rcu.nreaders);
	unsigned long g = sk_atomic_load_acquire(&sk__rcu.ngeneral);
	unsigned long v = sk_atomic_load_relaxed(&sk_rcu__ctr);

	/* A parked caller already left the counts (sk__rcu_park()). */
	if (v == SK__RCU_PARKED && busted(SK__RCU_BUSTED_PARK_SELF) && n && g) {
		n--; /* broken twin: leaves itself out twice */
		g--;
	} else if (v && v != SK__RCU_PARKED) {
		n--;
		if (!sk__rcu_qsbr_mode)
			g--;
	}
	return !n ? RD_NONE : g ? RD_GENERAL : RD_QSBR;
}

/*
 * Modular: target is done when completed has reached it, and also when it
 * is far ahead of completed: valid cookies are at most 2 ahead (gp_seq + 1
 * with gp_seq <= completed + 1), so such a cookie is one that wrapped, taken
 * 2^(bits-1) or more grace periods ago.  Only a cookie taken a multiple of
 * 2^bits grace periods ago, give or take SK__RCU_COOKIE_AHEAD, reads as not
 * done (for at most SK__RCU_COOKIE_AHEAD more grace periods).
 */
int sk__rcu_done(unsigned long target)
{
	/* Acquire: pairs with the release of completed after RCU-G2. */
	unsigned long c = sk_atomic_load_acquire(&sk__rcu.completed);

	return target == SK_RCU_COOKIE_COMPLETED || (long)(c - target) >= 0 ||
	       target - c > SK__RCU_COOKIE_AHEAD;
}

unsigned long sk__rcu_snap(void)
{
	/* RCU-S1: the unlinks before the snapshot; pairs with RCU-G1. */
	sk_smp_mb();
	/* Acquire: pairs with the release RCU-R0 that starts a grace period. */
	return sk_atomic_load_acquire(&sk__rcu.gp_seq) + 1;
}

/*
 * Advance the phase (RCU-R1) and return the new counter word.  Caller holds
 * gp_lock.  The phase may wrap (see "Narrow words"), but skips 0: the
 * word of a thread that has not entered a section since it registered (or
 * unparked) shows phase 0, and must never pass for the current phase, so
 * that the thread's first entry raises its chunk's mark (enter()
 * [rcu_reader.c]).
 */
static unsigned long advance_phase(void)
{
	unsigned long w = sk_rcu__gp.ctr + (1UL << SK__RCU_SEQ_SHIFT);

	if (!(w >> SK__RCU_SEQ_SHIFT))
		w += 1UL << SK__RCU_SEQ_SHIFT;
	sk__rcu_set_ctr(w);
	return w;
}

/* What a grace period does after RCU-G1 (gp_fence_before_scan()). */
enum {
	GP_SKIP, /* nothing: a busted twin's grace period that does not wait */
	GP_SCAN, /* wait for the readers (scan), then RCU-G2 */
	GP_SEEN, /* the quiet round saw every reader pass: RCU-G2 only */
};

/*
 * RCU-G1: the phase advance before reading reader words; pairs with
 * RCU-L2/RCU-Q2.  With general readers: the handshake, else membarrier(2).
 * With QSBR-mode threads only, whose RCU-Q2 is a full fence: a full fence.
 * Returns what follows (GP_*).
 */
static int gp_fence_before_scan(int expedited, int general, unsigned long c)
{
	int hs;

	expedited = expedited || sk_atomic_load_relaxed(&sk__rcu.expedite);
	if (!general) {
		count_kind(&sk__rcu.kinds.qsbr_only);
		sk_smp_mb();
		return busted(SK__RCU_BUSTED_QSBR_ONLY) ? GP_SKIP : GP_SCAN;
	}
	hs = sk__rcu_gp_handshake(expedited, c);
	if (hs != SK_RCU_HS_NONE) {
		/* After RCU-H2 or the quiet round's loads: the leader's own
		 * later loads, locally. */
		sk_smp_mb();
		return hs == SK_RCU_HS_QUIET ? GP_SEEN : GP_SCAN;
	}
	if (busted(SK__RCU_BUSTED_HANDSHAKE))
		return GP_SKIP;
	sk_fence_heavy();
	return GP_SCAN;
}

/* The grace-period number after s; skips ULONG_MAX (see sk__rcu.gp_seq). */
static inline unsigned long gp_next(unsigned long s)
{
	return s + 1 == ULONG_MAX ? 0 : s + 1;
}

/* Run grace periods until target completed.  Caller holds gp_lock. */
static void lead(unsigned long target, int expedited)
{
	unsigned long c, w;
	int i, kind, next, scans = sk__rcu_scans();

	if (sk__rcu_done(target))
		return;
	c = gp_next(sk__rcu.gp_seq);
	/* RCU-R0: release; pairs with the acquire in sk__rcu_snap(). */
	sk_atomic_store_release(&sk__rcu.gp_seq, c);
	w = advance_phase();
	/*
	 * Full barrier (RCU-M): RCU-R0/RCU-R1 before the registry's counts
	 * are read (store buffering with a registering thread or one that changes
	 * mode, whose count store and later RCU-L1 load are ordered by the full
	 * fences of count_add()): a thread counted out here loads the
	 * advanced counter, and the updates of every caller that snapshot
	 * before RCU-R0 are visible to it.
	 */
	sk_smp_mb();
	kind = other_readers();
	sk__rcu.gp_general = kind == RD_GENERAL;
	next = kind == RD_NONE ? GP_SKIP
			       : gp_fence_before_scan(expedited,
						      kind == RD_GENERAL, w);
	if (next != GP_SKIP) {
		for (i = 0; next == GP_SCAN && i < scans; i++) {
			if (i) {
				w = advance_phase();
				/* RCU-R1 before the second scan's loads. */
				sk_smp_mb();
			}
			wait_for_readers(w, expedited, i, scans);
		}
		/*
		 * RCU-G2: readers' section accesses done before completion;
		 * pairs with RCU-U1/RCU-Q1.
		 */
		gp_fence_after_scan(sk__rcu.gp_general);
	}
	/* Release: pairs with the acquire in sk__rcu_done(). */
	sk_atomic_store_release(&sk__rcu.completed, c);
	sk_atomic_store_relaxed(&sk__rcu.ngps, sk__rcu.ngps + 1);
}

/*
 * Batching.  A caller waits on a node on its own stack, pushed on sk__rcu.wq.
 * The caller that pushes on an empty queue leads: it takes gp_lock, then
 * takes every node off the queue at once (RCU-W2) and runs one grace period,
 * which starts after all those pushes and so covers every snapshot taken
 * before them.  It marks each node done (RCU-W3) and wakes the owners that
 * sleep.  Callers that push while a leader waits for gp_lock join its
 * batch, so concurrent callers share grace periods; the others spin for
 * SK__RCU_WAITER_SPIN polls before sleeping on their node.
 */
struct gp_waiter {
	struct gp_waiter *next; /* pushed before this one; set before RCU-W1 */
	unsigned long target;	/* cookie the caller waits for, unless fresh */
	int expedited;		/* 1: the caller is expedited */
	int fresh;		/* 1: any grace period started after RCU-W2 */
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
#define SK__RCU_WAITER_SPIN 1000

/*
 * Push w on sk__rcu.wq; returns 1 when the queue was empty (w leads).
 * RCU-W1: release, the node's fields before it can be taken; pairs with RCU-W2.
 */
static int wq_push(struct gp_waiter *w)
{
	struct gp_waiter *old = sk_atomic_load_relaxed(&sk__rcu.wq);

	do
		w->next = old;
	while (!__atomic_compare_exchange_n(&sk__rcu.wq, &old, w, 1,
					    __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED));
	return old == NULL;
}

/*
 * Latest not-yet-done target of the batch (0 with need == 0).  Caller
 * holds gp_lock (gp_seq is stable).
 */
static unsigned long batch_target(struct gp_waiter *list, int *need,
				  int *expedited)
{
	unsigned long t = 0;

	for (*need = *expedited = 0; list; list = list->next) {
		unsigned long nt = list->target;

		*expedited |= list->expedited;
		if (list->fresh) /* the next one, which the leader starts */
			nt = sk__rcu.gp_seq + 1; /* as a cookie: never 0 */
		else if (sk__rcu_done(nt))
			continue;
		if (!*need || (long)(nt - t) > 0)
			t = nt;
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

	for (i = 0; i < SK__RCU_WAITER_SPIN; i++) {
		if (sk_atomic_load_relaxed(&sk__rcu.gp_seq) ==
			    sk_atomic_load_relaxed(&sk__rcu.completed) &&
		    pthread_mutex_trylock(&sk__rcu.gp_lock) == 0)
			return;
		sk_cpu_relax();
	}
	pthread_mutex_lock(&sk__rcu.gp_lock);
}

/*
 * Mark every node of list but self done and wake the owners that sleep.
 * RCU-W3: the exchange orders the grace period (completed, after RCU-G2) before
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
		if (sk_atomic_xchg_seq_cst(&list->state, WQ_DONE) == WQ_SLEEPING) {
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
	/* RCU-W2: acquire; pairs with RCU-W1: the nodes' fields are visible. */
	list = __atomic_exchange_n(&sk__rcu.wq, NULL, __ATOMIC_ACQUIRE);
	target = batch_target(list, &need, &expedited);
	if (SK_UNLIKELY(busted(SK__RCU_BUSTED_EARLY_WAKE)))
		batch_release(list, self);
	if (need)
		lead(target, expedited);
	if (SK_UNLIKELY(busted(SK__RCU_BUSTED_EARLY_WAKE)))
		list = self;
	pthread_mutex_unlock(&sk__rcu.gp_lock);
	batch_release(list, self);
}

/* Broken twin SK__RCU_BUSTED_NO_BATCH: a grace period of w's own. */
static void lead_alone(struct gp_waiter *w)
{
	pthread_mutex_lock(&sk__rcu.gp_lock);
	lead(gp_next(sk__rcu.gp_seq), w->expedited);
	pthread_mutex_unlock(&sk__rcu.gp_lock);
}

/* Wait until the leader has served w: spin, then sleep on w->state. */
static void batch_wait(struct gp_waiter *w)
{
	int i, s = WQ_WAITING;

	/* Acquire: pairs with RCU-W3, the grace period before the return. */
	for (i = 0; i < SK__RCU_WAITER_SPIN; i++) {
		if (sk_atomic_load_acquire(&w->state) >= WQ_DONE)
			return;
		sk_cpu_relax();
	}
	if (!sk_atomic_cmpxchg_seq_cst(&w->state, &s, WQ_SLEEPING))
		return; /* DONE meanwhile (seq_cst: acquire, RCU-W3) */
	while ((s = sk_atomic_load_acquire(&w->state)) != WQ_RELEASED) {
		if (s == WQ_SLEEPING)
			sk__futex_wait(&w->state, WQ_SLEEPING);
		else
			sched_yield(); /* DONE: the wake-up call is under way */
	}
}

/* Wait on node w until a leader has served it (see "Batching" above). */
static void wait_node(struct gp_waiter *w)
{
	int expedited = w->expedited;

	/*
	 * Out of the counts from here until the thread's next read section
	 * (or sk_rcu_thread_online(), sk_rcu_unregister_thread(), exit),
	 * which counts it again: see sk__rcu_park().
	 */
	sk__rcu_park();

	if (expedited) {
		/* A sleeping leader switches to polling for us. */
		sk_atomic_fetch_add_seq_cst(&sk__rcu.expedite, 1UL);
		/*
		 * RCU-E1: the count before sk__rcu_wake_leader() reads futex;
		 * pairs with RCU-G3 (store buffering with a leader going to
		 * sleep).
		 */
		sk_smp_mb__after_atomic();
		sk__rcu_wake_leader();
		test_hook(SK__RCU_HOOK_EXPEDITE_ASKED);
	}
	if (SK_UNLIKELY(busted(SK__RCU_BUSTED_NO_BATCH)))
		lead_alone(w);
	else if (wq_push(w))
		batch_lead(w);
	else
		batch_wait(w);
	if (expedited)
		sk_atomic_fetch_add_seq_cst(&sk__rcu.expedite, -1UL);
}

void sk__rcu_wait(unsigned long target, int expedited)
{
	struct gp_waiter w = { NULL, target, expedited, 0, WQ_WAITING };

	if (!sk__rcu_done(target))
		wait_node(&w);
}

/*
 * sk_synchronize_rcu() and its expedited form; fn names it in messages.
 * No snapshot, so no RCU-S1: the node is fresh, served by a grace period
 * that its leader starts after taking it, and the caller's unlinks reach
 * that leader through RCU-W1/RCU-W2 (release, acquire) before its RCU-R1
 * and RCU-G1.
 */
static void synchronize(const char *fn, int expedited)
{
	struct gp_waiter w = { NULL, 0, expedited, 1, WQ_WAITING };
	int was_online = sk__rcu_enter_wait(fn);

	sk__rcu_count_sync();
	wait_node(&w);
	if (was_online)
		sk_rcu_thread_online();
}

void sk_synchronize_rcu(void)
{
	synchronize("sk_synchronize_rcu()", 0);
}

void sk_synchronize_rcu_expedited(void)
{
	synchronize("sk_synchronize_rcu_expedited()", 1);
}

#ifdef SK_TESTING
/* Test hooks (internal/testing.h): the testing build only. */
int sk__rcu_test_set_seq(unsigned long gp, unsigned long phase)
{
	if (gp == ULONG_MAX || !(phase & ((1UL << SK__RCU_SEQ_BITS) - 1)))
		return -EINVAL; /* gp_seq and the phase never take those */
	pthread_mutex_lock(&sk__rcu.gp_lock);
	sk__rcu.gp_seq = gp;
	sk_atomic_store_relaxed(&sk__rcu.ngps, 0UL);
	sk_atomic_store_release(&sk__rcu.completed, gp);
	sk__rcu_set_ctr((phase << SK__RCU_SEQ_SHIFT) | SK__RCU_REG | 1);
	pthread_mutex_unlock(&sk__rcu.gp_lock);
	return 0;
}

void sk__rcu_test_set_scans(int n)
{
	sk_atomic_store_relaxed(&sk__rcu_test_scans, n);
}

/* Release: fn sees what the test wrote before. */
void sk__rcu_test_set_hook(void (*fn)(int where))
{
	sk_atomic_store_release(&rcu_test_hook, fn);
}
#endif
