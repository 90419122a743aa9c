/* SPDX-License-Identifier: MIT */
/*
 * SRCU internals shared by src/srcu_*.c (never installed).
 *
 * Files: srcu_read.c (thread indexes, slots, read-side slow paths),
 * srcu_gp.c (the grace-period state machine, synchronize, polled state),
 * srcu_cb.c (callbacks, the worker thread, barrier, start_poll),
 * srcu_domain.c (init, cleanup, fork, the process-wide state).
 *
 * SRCU: sleepable RCU domains.
 *
 * Counters.  Every thread that reads gets a small index (thread index,
 * shared by all domains, recycled when the thread exits).  In each domain
 * the index owns one slot, which the thread takes (binds) on its first
 * section there, with a binding incarnation from one process-wide 15-bit
 * counter (new for every binding): cnt[2], written only by the owner
 * with a plain load and store, and remote[2], to which other threads add
 * (atomic) when they end one of its sections.  A reader increments cnt[i]
 * where i is the low bit of d->idx; the owner's unlock decrements the
 * counter of the same i, another thread's increments remote[i].  So
 * cnt[i] - remote[i] sections of the slot are open on i.  Only sums over
 * all slots matter, so a recycled slot simply keeps counting.  Threads
 * without a slot (index space exhausted, out of memory) use
 * d->state->shared with atomic adds: starts in cnt[], ends in remote[].
 *
 * The idx a section returns is (binding incarnation << 16 | index << 1 |
 * i), kept in the slot as its key, so an unlock tells the owner's own
 * sections from those of an exited thread that had the same index, and
 * from an idx the same thread got from another domain (whose slot has
 * another incarnation); 0 and 1 name the shared counters.  Each thread
 * caches its slot per domain in sk_srcu__tls (one way per domain
 * address), so the fast paths never walk d->state->dir.  Slots are
 * type-stable (struct srcu_chunk: never freed, pooled by directory
 * position, so a slot always serves the same thread index): a way may
 * point at a slot that is no longer the thread's binding in d, and the
 * fast paths tell by the slot's dom, which only the slot's owner sets
 * (to the domain it binds) and which sk_srcu_destroy() and the owner's
 * exit clear.  A remote end ORs SK__SRCU_KEY_REMOTE into the locker's
 * key, so that the owner's inline unlock loads remote[i] only then.
 *
 * Grace period (kernel SRCU's scan-flip-scan):
 *   1. drain index i' = !(idx & 1): stale readers that picked up i' before
 *      the previous flip;
 *   2. flip idx, so new readers use i';
 *   3. drain the old index.
 * Draining index i: sum remote[i], heavy fence SRCU-D, sum cnt[i]; equal
 * sums mean no reader holds a section on i.  Why: a counted remote end
 * has its start counted (the hand-off orders the start before the end,
 * and the cnt sum is read after SRCU-D); an owner's start and its own
 * end are in one location, cnt[i], whose value read is the owner's
 * starts less its ends up to some point of its program order, so a
 * counted own end always has its start counted; a start not counted is
 * ordered after SRCU-D (SRCU-B), a new reader.  So the cnt sum less the
 * remote sum counts counted sections not yet ended, each at least 0:
 * equal sums, none.  The first check
 * of a grace period covers both indexes at once: when both are balanced no
 * reader holds any section and the grace period ends without the flip (one
 * heavy fence); when only i' is, step 1 is done.  A domain with no live
 * reader thread is recognized without any heavy fence (see gp_idle()).
 *
 * Barrier pairs, the legend of the SRCU-* labels (unique in the library;
 * the file that places each fence is named in brackets):
 *   SRCU-B  reader, light fence after cnt[i]++ [srcu.h, srcu_read.c];
 *           pairs with SRCU-D: if the cnt sum missed the increment, the
 *           section's loads come after SRCU-D and see every update made
 *           before the grace period started.
 *   SRCU-C  reader, cnt[i] - 1 stored with release, or a remote end's
 *           seq_cst RMW [srcu.h, srcu_read.c]; pairs with SRCU-D: a
 *           counted end means the section's accesses are done (and its
 *           start is counted, as the cnt sum is read after SRCU-D).  No
 *           fence: nothing after the unlock needs ordering, as readers
 *           never wake updaters (they poll).
 *   SRCU-D  grace period, heavy fence between the remote sums and the
 *           cnt sums [srcu_gp.c]; pairs with SRCU-B and SRCU-C.
 *   SRCU-N  reader, nchunks raised before the release CAS that publishes
 *           a chunk [srcu_read.c]; pairs with the acquire of dir[k] by
 *           every user of the chunk and with the scans' acquire of
 *           nchunks after SRCU-D [srcu_gp.c]: a lock counted in a chunk is
 *           never outside the scanned range.
 *   SRCU-P  binding thread, full barrier after binds++/nlive++
 *           [srcu_read.c]; pairs with SRCU-Z.
 *   SRCU-Z  updater, the full barrier before reading binds/nlive in
 *           gp_idle() [srcu_gp.c]; store buffering with SRCU-P: either
 *           the updater sees the new thread, or the new thread's sections
 *           see the updates.
 *   SRCU-X  exiting thread, nlive-- with release [srcu_read.c]; pairs
 *           with the acquire of nlive in gp_idle() [srcu_gp.c]: an exited
 *           thread's counts are all visible.
 *   SRCU-S1 caller, full barrier before the cookie [srcu_gp.c]: the
 *           caller's updates before the grace period it waits for.
 *   SRCU-E, SRCU-F  full barriers before and after the flip [srcu_gp.c]:
 *           the first drain, the flip and the second drain in order.
 *   The worker's sleep and the kicks that end it (producers in
 *           mark_work(), the gp_mutex holder in sk__srcu_worker_kick())
 *           are the shared protocol of internal/worker.h: WK-W1/WK-W2
 *           against WK-K1/WK-K2 [src/worker.c].
 *   SRCU-I  worker, full fence after its seq_cst store of in_work
 *           [srcu_cb.c]; store buffering with the producers' publishing
 *           RMW followed by their seq_cst load of in_work (mark_work()),
 *           and with SRCU-G.
 *   SRCU-G  gp_mutex holder, full fence after the unlock [srcu_gp.c];
 *           pairs with SRCU-I.
 *   SRCU-K  gp_completed stored with release by gp_complete() [srcu_gp.c];
 *           pairs with the acquire in gp_done() (callers then free).
 *   SRCU-J  the worker's release of cb_running after a batch ran
 *           [srcu_cb.c]; pairs with the acquire in sk_srcu_barrier().
 *   SRCU-R  release of state->ready after the setup of a defined domain's
 *           state [srcu_domain.c]; pairs with the acquire in
 *           sk__srcu_ready() before any use of the state.
 *   Why SRCU-I and SRCU-G are explicit fences: in C11 a seq_cst RMW
 *   orders no later non-seq_cst load, so the RMW alone is not enough on
 *   weakly ordered CPUs (ARMv8.0 without LSE, POWER).
 *   Litmus tests (litmus/, see docs/litmus.md; smp_mb() stands for the
 *   light and heavy fences, which the format cannot write):
 *     SRCU-B/SRCU-D, SRCU-P/SRCU-Z  SB+mbs.litmus
 *     SRCU-C/SRCU-D                 LB+rel+mb.litmus
 *     SRCU-N, SRCU-X                MP+rel+acq.litmus
 *     SRCU-I, SRCU-G                SB+xchg+mb.litmus
 *     SRCU-S1, SRCU-E/SRCU-F and all of the above end to end through the
 *     real grace period: srcu-gp-before.litmus, srcu-gp-after.litmus,
 *     srcu-deferred-free.litmus (fail with --busted),
 *     srcu-two-domains.litmus, srcu-two-domains-both.litmus.
 *
 * Why a reader that picked up a stale idx cannot end a grace period early:
 * it increments cnt[i'] for an index being drained.  If the drain's cnt
 * sum counted it, the sums differ and the drain waits.  If not, the
 * increment came after SRCU-D (the SRCU-B/SRCU-D pairing), so its section
 * sees all updates from before the grace period: it is a new reader, not
 * one the grace period must wait for.  It will be waited for by the next
 * grace period's first drain, which scans exactly the index it used.  Each
 * thread adds at most one such stale count before it reads the new idx,
 * so the sums cannot be kept equal by stale counts.
 *
 * The worker thread runs callbacks and polled grace periods for every
 * domain without blocking on any one of them: it advances each domain's
 * state machine as far as the readers allow and moves on.  Readers never
 * wake anyone (their fast paths would pay a fence and a load for it):
 * updaters and the worker waiting for readers poll, with naps that double
 * from SRCU_NAP_MIN_NS to SRCU_NAP_MAX_NS, so a grace period ends at most
 * about as late again after the last reader left as it had already
 * waited (capped at SRCU_NAP_MAX_NS).  A thread that held a domain's
 * gp_mutex while the worker wanted it kicks the worker after.
 *
 * Counters on 32-bit (ILP32) targets, where unsigned long has 32 bits;
 * every counter either compares correctly when it wraps or is 64-bit:
 *   cnt[], remote[] (per slot, and shared): unsigned long, on
 *       the read fast path.  Only sums compared for equality and
 *       differences read as signed (balance checks, drained_mask()): exact
 *       modulo 2^N while fewer than 2^(N-1) sections are open at once.
 *   idle snapshot (idle_shared[], idle_owner_count): equality of start
 *       counts alone would be fooled by 2^N sections between two grace
 *       periods with one still open; gp_idle() also requires the ends
 *       equal, read before the starts (shared_idle(), owner_idle()).
 *   tag: incarnation in the top 16 bits, count below (16 bits on ILP32):
 *       incremented inside its field (tag_count_add()), read modulo
 *       2^SRCU_TAG_SHIFT as signed (sk_srcu_read_lock_held(): exact while
 *       a thread has fewer than 2^15 sections of a domain open on ILP32).
 *   binding incarnations, 15 bits on every target: wrap by design; a
 *       reused one only blurs diagnostics (held tracking, unbalance and
 *       foreign-idx detection), never the grace-period sums.
 *   slot caches: no generation number (a stale way is told by the
 *       slot's dom, type-stable slots), so nothing there can wrap.
 *   gp_started, gp_completed, poll_req, b_gp: 64-bit grace-period numbers,
 *       never wrap; cookies are their truncation to unsigned long, compared
 *       by difference (cookie_done()); the numbers skip those that
 *       truncate to SK_RCU_COOKIE_COMPLETED.  On ILP32 a cookie kept
 *       across 2^31 grace periods reads as not completed.
 *   binds: 64-bit (the idle snapshot compares it for equality).
 *   nlive, nchunks, thread indexes: bounded by SRCU_MAX_THREADS.
 *   cb_queued, cb_invoked: only their difference (the backlog) is used,
 *       read as signed.
 *   idx: only its low bit is used.  stats_gps: a statistic, may wrap.
 *
 * Unbalanced unlocks: the unlock fast path compares the ends of the
 * locker's sections (its own and those others ended for it) with its
 * starts; as a second line, the heavy check of a grace period aborts on
 * more ends than starts on an index, which correct use cannot show after
 * SRCU-D.
 */
#ifndef SCALEKIT_INTERNAL_SRCU_H
#define SCALEKIT_INTERNAL_SRCU_H

#include <pthread.h>
#include <stdint.h>

#include "scalekit/srcu.h"
#include "internal/cbq.h"
#include "internal/util.h"
#include "internal/worker.h"

#define SRCU_MAX_THREADS (SK__SRCU_MAX_CHUNKS * SK__SRCU_CHUNK_SLOTS)

/* idx layout: binding incarnation (15 bits) << 16 | thread index << 1 | i. */
#define SRCU_T_BITS 15
#define SRCU_T_MASK ((1u << SRCU_T_BITS) - 1)
#define SRCU_INC_MAX 0x7fffu
/*
 * A slot's tag (struct srcu_chunk): binding incarnation in the top 16
 * bits | count (see slot_take()): 48 bits of count on LP64, 16 on ILP32.
 */
#define SRCU_TAG_SHIFT (__SIZEOF_LONG__ * 8 - 16)
#define SRCU_TAG_COUNT ((1UL << SRCU_TAG_SHIFT) - 1)
_Static_assert(SRCU_INC_MAX < 1UL << 16, "incarnation fits the tag");

/* Drain checks (each cheap; a heavy fence only to confirm) before
 * sleeping or yielding. */
#define SRCU_SPIN_CHECKS 8
/* Yields of an expedited worker drain before it comes back later. */
#define SRCU_NONBLOCK_YIELDS 16
/* Yields of sk_synchronize_srcu_expedited() before it naps as well. */
#define SRCU_EXPEDITE_YIELDS 256
/* Naps while readers hold a grace period: doubling between these. */
#define SRCU_NAP_MIN_NS 20000ULL
#define SRCU_NAP_MAX_NS 1000000ULL

enum { DRAIN_NONBLOCK, DRAIN_NONBLOCK_EXP, DRAIN_SLEEP, DRAIN_EXPEDITE };
enum { WORK_IDLE, WORK_PENDING, WORK_PROGRESS };

/*
 * The private state of a domain (d->state): allocated by sk_srcu_init(),
 * or zeroed static storage of SK_SRCU_DEFINE() / SK_SRCU_INITIALIZER()
 * that sk__srcu_state() initializes on first use.
 */
struct sk_srcu__state {
	struct sk_srcu *dom; /* the domain this is the state of */
	int ready;	     /* 0 zeroed, 1 being initialized, 2 ready
				   (release/acquire) */
	int owned;	     /* allocated by sk_srcu_init(): freed by
				   sk_srcu_destroy() */
	/* Slots: read side slow paths and grace-period scans. */
	struct sk_srcu_slot **dir; /* chunks of slots by thread index */
	unsigned int nchunks;	   /* dir entries that may be set (raised
				      before a chunk is published) */
	unsigned long nlive;	   /* threads with a slot, alive (atomic) */
	sk_srcu__u64 binds;	   /* slots ever taken by a thread (atomic) */

	/* Readers without a slot of their own (atomic). */
	struct sk_srcu_slot shared;

	/* Grace periods (guarded by gp_mutex). */
	pthread_mutex_t gp_mutex;
	int gp_phase;		 /* 0 idle, 1 draining old readers, 2 flipped */
	int idle_valid;		 /* the idle_* snapshot describes an idle
				     domain */
	sk_srcu__u64 gp_started; /* number of the last grace period started */
	sk_srcu__u64 gp_completed;    /* ... and completed (release) */
	sk_srcu__u64 poll_req;	      /* highest number asked by start_poll */
	sk_srcu__u64 idle_binds;      /* binds when last found idle */
	unsigned long idle_shared[2]; /* shared.cnt[] (= remote[]) then */
	struct sk_srcu_slot *idle_owner; /* the one live thread's slot then */
	unsigned long idle_owner_count;	 /* its cnt[0] + cnt[1] then (= its
					    remote[0] + remote[1]: all had
					    ended) */
	unsigned long stats_gps;	 /* grace periods completed (stat) */

	/* Callbacks: producers. */
	struct sk__wfq cbq __attribute__((aligned(SK_CACHELINE)));
	unsigned long cb_queued; /* sk_call_srcu() calls (atomic) */

	/* Callbacks: the worker. */
	unsigned long cb_invoked __attribute__((aligned(SK_CACHELINE)));
	struct sk_rcu_head *b_first, *b_last; /* batch waiting for gp b_gp */
	sk_srcu__u64 b_gp;
	int cb_running;		       /* a batch is being invoked */
	int in_work;		       /* on the worker's list */
	int busy_skip;		       /* gp_mutex was busy: wait for a kick */
	int blocked;		       /* readers hold its grace period */
	struct sk__link work_link;     /* worker's list, under its lock */
	pthread_mutex_t barrier_mutex; /* one sk_srcu_barrier() at a time */
	/*
	 * The fork generation (sk__srcu.fork_gen) barrier_mutex was created
	 * in: written under sk__srcu.lock with release, read with acquire
	 * (barrier_lock() in srcu_cb.c).
	 */
	unsigned long barrier_gen;
	struct sk_rcu_head barrier_head;
	int barrier_done;
} __attribute__((aligned(SK_CACHELINE)));

/*
 * Make d->state usable: initializes zeroed static storage on first use
 * (SRCU-R: acquire of st->ready, pairs with the release ending the setup).
 * Every public entry point calls it before touching d->state.  Prints a
 * message naming fn and aborts when d has no state (released by
 * sk_srcu_destroy() and not initialized again).
 */
void sk__srcu_ready(struct sk_srcu *d, const char *fn);
/* The domain on the worker's list at link l (st->work_link). */
static inline struct sk_srcu *srcu_of_link(struct sk__link *l)
{
	return SK__CONTAINER_OF(l, struct sk_srcu__state, work_link)->dom;
}

/* Set up st (zeroed) as the state of d (srcu_domain.c). */
void sk__srcu_state_setup(struct sk_srcu *d, struct sk_srcu__state *st);

/* A thread with an index: the domains where it took its slot. */
struct srcu_thr {
	unsigned int t;	       /* thread index, 1-based (0: none) */
	unsigned int n, cap;   /* bind[] entries used, allocated */
	struct sk_srcu **bind; /* domains whose slot t it owns */
};

/*
 * Process-wide SRCU state (srcu_domain.c).  The thread registry part is
 * used by srcu_read.c, the worker part by srcu_cb.c; one lock guards both.
 */
struct sk__srcu_global {
	pthread_mutex_t lock; /* indexes, bindings, work list, worker start */
	/* Thread registry. */
	uint64_t used[SRCU_MAX_THREADS / 64];	/* thread indexes taken */
	struct srcu_thr *thr[SRCU_MAX_THREADS]; /* owner of each index */
	unsigned int next_inc; /* last binding incarnation given */
	pthread_key_t key;     /* frees the index at exit */
	pthread_once_t once;
	/* Chunks of destroyed domains, by directory position (type-stable). */
	struct srcu_chunk *chunk_pool[SK__SRCU_MAX_CHUNKS];
	/* The worker. */
	struct sk__link work;	 /* domains with work (state->work_link) */
	struct sk_srcu *current; /* domain the worker is processing */
	pthread_cond_t idle_cv;	 /* signalled when current changes */
	struct sk__worker worker; /* started under lock (internal/worker.h) */
	/*
	 * fork() children this process is down from: raised by the child's
	 * fork handler while it is the only thread, so read relaxed (a later
	 * thread of the child is created after it).  A domain's barrier_mutex
	 * of an older generation may be held by a thread that does not exist
	 * here (state->barrier_gen).
	 */
	unsigned long fork_gen;
	/*
	 * srcu_cb.c's kick of the worker, registered by its constructor:
	 * srcu_gp.c, a lower layer, calls up only through it (src/layers.txt).
	 * Set before main() and before any thread: read relaxed.
	 */
	void (*kick)(void);
};
extern struct sk__srcu_global sk__srcu;

/* The calling thread's index and bindings (srcu_read.c). */
extern __thread struct srcu_thr sk__srcu_my_thr
	__attribute__((tls_model("initial-exec")));
/* Nonzero on the worker thread (srcu_cb.c). */
extern __thread int sk__srcu_in_worker __attribute__((tls_model("initial-exec")));

/* ---- srcu_read.c ---- */

/* The existing slot of thread index t in d, or NULL. */
struct sk_srcu_slot *sk__srcu_slot_find(struct sk_srcu *d, unsigned int t);
/* The calling thread's slot in d if it took it, else NULL. */
struct sk_srcu_slot *sk__srcu_my_slot(struct sk_srcu *d);
/* Give up thread r's slots and index.  sk__srcu.lock held. */
void sk__srcu_thr_release(struct srcu_thr *r);
/*
 * Put the chunks of d's directory back in the pool, their slots unbound
 * and their counters zeroed (sk_srcu_destroy(); no section of d open).
 * sk__srcu.lock held.
 */
void sk__srcu_chunks_release(struct sk_srcu *d);

/*
 * A chunk of slots: the slots of SK__SRCU_CHUNK_SLOTS consecutive thread
 * indexes (d->state->dir[k] points at slot[0]), and beside them their
 * tags, which only the slow paths use: binding incarnation in the top 16
 * bits (<< SRCU_TAG_SHIFT) | open count at binding + own sections ended
 * elsewhere (atomic); 0: no live owner.  Type-stable: a chunk is never
 * freed; sk_srcu_destroy() puts it back in a pool for its directory
 * position k (sk__srcu_chunk_pool), from which the next chunk at k of any
 * domain is taken, so a slot always belongs to the same thread index.
 */
struct srcu_chunk {
	struct sk_srcu_slot slot[SK__SRCU_CHUNK_SLOTS];
	unsigned long tag[SK__SRCU_CHUNK_SLOTS];
	struct srcu_chunk *pool_next; /* in the pool: under sk__srcu.lock */
};

/* The tag of slot s, the slot of thread index t (1-based). */
static inline unsigned long *slot_tag(struct sk_srcu_slot *s, unsigned int t)
{
	unsigned int i = (t - 1) % SK__SRCU_CHUNK_SLOTS;

	return &((struct srcu_chunk *)(void *)(s - i))->tag[i];
}

/*
 * Sections entered on slot s less those its owner ended, both indexes
 * (owner's stores: relaxed).
 */
static inline unsigned long slot_counts(struct sk_srcu_slot *s)
{
	return sk_atomic_load_relaxed(&s->cnt[0]) +
	       sk_atomic_load_relaxed(&s->cnt[1]);
}

/* ---- srcu_gp.c ---- */

/* Which indexes hold no reader (bit i: index i drained); see srcu_gp.c. */
int sk__srcu_drained_mask(struct sk_srcu *d, int heavy);
/* Number of a grace period that starts after the call (SRCU-S1 first). */
uint64_t sk__srcu_gp_snap(struct sk_srcu *d);
/*
 * Advance d's grace periods until target has completed.  gp_mutex held.
 * Returns 1 when done, 0 when mode is nonblocking and readers remain.
 */
int sk__srcu_advance(struct sk_srcu *d, uint64_t target, int mode);
/* Release gp_mutex; kicks the worker if it may have skipped d. */
void sk__srcu_gp_unlock(struct sk_srcu *d);
/* A polled grace period of d is pending. */
int sk__srcu_poll_pending(struct sk_srcu *d);

/* Grace period number target has completed (SRCU-K acquire: pairs with
 * gp_complete()'s release). */
static inline int gp_done(struct sk_srcu *d, uint64_t target)
{
	return sk_atomic_load_acquire(&d->state->gp_completed) >= target;
}

/* ---- srcu_cb.c ---- */

/*
 * A domain's gp_mutex was released: wake the worker (see srcu_cb.c).
 * Lower files call it through sk__srcu.kick.
 */
void sk__srcu_worker_kick(void);

#endif /* SCALEKIT_INTERNAL_SRCU_H */
