/* SPDX-License-Identifier: MIT */
/*
 * SRCU: sleepable RCU domains.
 *
 * Counters.  Every thread that reads gets a small index (thread index,
 * shared by all domains, recycled when the thread exits).  In each domain
 * the index owns one slot, which the thread takes (binds) on its first
 * section there, with a binding incarnation from one process-wide 15-bit
 * counter (new for every binding): lock[2] and unlock[2], written only by
 * the owner with a plain load and store, and remote[2], to which other
 * threads add (atomic) when they end one of its sections.  A reader
 * increments lock[i] where i is the low bit of d->idx; the unlock
 * increments the counter of the same i.  Only sums over all slots matter,
 * so a recycled slot simply keeps counting.  Threads without a slot
 * (index space exhausted, out of memory) use d->shared with atomic adds.
 *
 * The idx a section returns is (binding incarnation << 16 | index << 1 |
 * i), kept in the slot as its key, so an unlock tells the owner's own
 * sections from those of an exited thread that had the same index, and
 * from an idx the same thread got from another domain (whose slot has
 * another incarnation); 0 and 1 name the shared counters.  Each thread
 * caches its slot per domain in sk_srcu__tls (keyed by d->gen, which
 * changes whenever the domain's slots are freed), so the fast paths never
 * walk d->dir.
 *
 * Grace period (kernel SRCU's scan-flip-scan):
 *   1. drain index i' = !(idx & 1): stale readers that picked up i' before
 *      the previous flip;
 *   2. flip idx, so new readers use i';
 *   3. drain the old index.
 * Draining index i: sum the unlock counts, heavy fence D, sum the lock
 * counts; equal sums mean no reader holds a section on i.  The first check
 * of a grace period covers both indexes at once: when both are balanced no
 * reader holds any section and the grace period ends without the flip (one
 * heavy fence); when only i' is, step 1 is done.  A domain with no live
 * reader thread is recognized without any heavy fence (see gp_idle()).
 *
 * Barrier pairs:
 *   B (reader, light, after lock[i]++)  - pairs with D: if the lock sum
 *       missed the increment, the section's loads come after D and see
 *       every update made before the grace period started.
 *   C (reader, unlock[i] stored with release; remote ends a seq_cst
 *       RMW) - pairs with D: a counted unlock means the section's
 *       accesses are done (and its lock is counted, as the lock sum is
 *       read after D).  No fence: nothing after the unlock needs
 *       ordering, as readers never wake updaters (they poll).
 *   N (reader, nchunks raised before the release CAS that publishes a
 *       chunk) - pairs with the acquire of dir[k] by every user of the
 *       chunk and with the scans' acquire of nchunks after D: a lock
 *       counted in a chunk is never outside the scanned range.
 *   P (binding thread, full barrier after binds++/nlive++) / Z (updater,
 *       the full barrier before reading binds/nlive in gp_idle()) - store
 *       buffering: either the updater sees the new thread, or the new
 *       thread's sections see the updates.
 *   X (exiting thread, nlive-- with release) - pairs with the acquire of
 *       nlive in gp_idle(): an exited thread's counts are all visible.
 *   S1 (caller, sk_smp_mb before the cookie) and E/F (full barriers around
 *       the flip) order the updates, the scans and the flip.
 *   W1, I (worker, full fences after its seq_cst stores of sleeping and
 *       in_work) - store buffering with the producers' seq_cst RMW that
 *       publishes work followed by their seq_cst load of sleeping or
 *       in_work; G (gp_mutex holder, full fence after the unlock) pairs
 *       with I.  Explicit fences: in C11 a seq_cst RMW orders no later
 *       non-seq_cst load, so the RMW alone is not enough on weakly
 *       ordered CPUs (ARMv8.0 without LSE, POWER).
 *   Litmus tests (litmus/, see docs/litmus.md; smp_mb() stands for the
 *   light and heavy fences, which the format cannot write):
 *     B/D, P/Z      - SB+mbs.litmus.
 *     C/D           - LB+rel+mb.litmus.
 *     N, X          - MP+rel+acq.litmus.
 *     W1, I, G      - SB+xchg+mb.litmus.
 *     S1, E/F and all of the above end to end through the real grace
 *     period: srcu-gp-before.litmus, srcu-gp-after.litmus,
 *     srcu-deferred-free.litmus (fail with --busted),
 *     srcu-two-domains.litmus, srcu-two-domains-both.litmus.
 *
 * Why a reader that picked up a stale idx cannot end a grace period early:
 * it increments lock[i'] for an index being drained.  If the drain's lock
 * sum counted it, the sums differ and the drain waits.  If not, the
 * increment came after D (B/D pairing), so its section sees all updates
 * from before the grace period: it is a new reader, not one the grace
 * period must wait for.  It will be waited for by the next grace period's
 * first drain, which scans exactly the index it used.  Each thread adds at
 * most one such stale count before it reads the new idx, so the sums
 * cannot be kept equal by stale counts.
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
 *   lock[], unlock[], remote[] (per slot, and shared): unsigned long, on
 *       the read fast path.  Only sums compared for equality and
 *       differences read as signed (balance checks, drained_mask()): exact
 *       modulo 2^N while fewer than 2^(N-1) sections are open at once.
 *   idle snapshot (idle_shared[], idle_owner_locks): equality of lock
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
 *   gen, gen_next: 64-bit (a reused gen would let a stale slot cache hit
 *       freed memory); on the fast path an 8-byte atomic load on ILP32.
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
 *   srcu.poke: a futex value compared for equality within one worker
 *       round; 2^32 pokes in one round are not possible.
 *
 * Unbalanced unlocks: the unlock fast path compares the ends of the
 * locker's sections (its own and those others ended for it) with its
 * starts; as a second line, the heavy check of a grace period aborts on
 * more ends than starts on an index, which correct use cannot show after
 * D.
 */
#define _GNU_SOURCE
#include "scalekit/srcu.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/cbq.h"
#include "internal/util.h"

#define SRCU_MAX_THREADS (SK_SRCU_MAX_CHUNKS * SK_SRCU_CHUNK_SLOTS)

/* idx layout: binding incarnation (15 bits) << 16 | thread index << 1 | i. */
#define SRCU_T_BITS   15
#define SRCU_T_MASK   ((1u << SRCU_T_BITS) - 1)
#define SRCU_INC_MAX  0x7fffu
/*
 * slot->tag: binding incarnation in the top 16 bits | count (see
 * slot_take()): 48 bits of count on LP64, 16 on ILP32.
 */
#define SRCU_TAG_SHIFT (__SIZEOF_LONG__ * 8 - 16)
#define SRCU_TAG_COUNT ((1UL << SRCU_TAG_SHIFT) - 1)
_Static_assert(SRCU_INC_MAX < 1UL << 16, "incarnation fits the tag");

/* Tag w with its count incremented, in the count's modulus. */
static inline unsigned long tag_count_add(unsigned long w)
{
	return (w & ~SRCU_TAG_COUNT) | ((w + 1) & SRCU_TAG_COUNT);
}

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

/* Backlog (callbacks of a domain) beyond which the worker expedites. */
#define SRCU_CB_BACKLOG_EXPEDITE 10000UL
/* Backlog beyond which a producer yields the CPU to the worker. */
#define SRCU_CB_THROTTLE (1UL << 18)

enum { DRAIN_NONBLOCK, DRAIN_NONBLOCK_EXP, DRAIN_SLEEP, DRAIN_EXPEDITE };
enum { WORK_IDLE, WORK_PENDING, WORK_PROGRESS };

/* Every way empty: ~0 is never a domain's gen. */
#define TLS_EMPTY { ~(uint64_t)0, NULL }
__thread struct sk_srcu__tls sk_srcu__tls
	__attribute__((tls_model("initial-exec"))) = {
		.ent = { TLS_EMPTY, TLS_EMPTY, TLS_EMPTY, TLS_EMPTY,
			 TLS_EMPTY, TLS_EMPTY, TLS_EMPTY, TLS_EMPTY },
	};
_Static_assert(SK_SRCU__WAYS == 8, "TLS initializer has 8 ways");

/* A thread with an index: the domains where it took its slot. */
struct srcu_thr {
	unsigned int t;		/* thread index, 1-based (0: none) */
	unsigned int n, cap;	/* bind[] entries used, allocated */
	struct sk_srcu **bind;	/* domains whose slot t it owns */
};

static __thread struct srcu_thr my_thr;
static __thread int in_srcu_worker;

/* Source of d->gen values (atomic; 64-bit: never 0 nor ~0, never reused). */
static sk_srcu__u64 gen_next;

static struct {
	pthread_mutex_t lock; /* indexes, bindings, work list, worker start */
	uint64_t used[SRCU_MAX_THREADS / 64]; /* thread indexes taken */
	struct srcu_thr *thr[SRCU_MAX_THREADS]; /* owner of each index */
	unsigned int next_inc;	/* last binding incarnation given */
	pthread_key_t key;			/* frees the index at exit */
	pthread_once_t once;
	struct sk__link work;	  /* domains with work (d->work_link) */
	struct sk_srcu *current;  /* domain the worker is processing */
	pthread_cond_t idle_cv;	  /* signalled when current changes */
	int worker_started;
	int sleeping __attribute__((aligned(SK_CACHELINE))); /* worker */
	int poke;					     /* futex */
} srcu = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.once = PTHREAD_ONCE_INIT,
	.work = { &srcu.work, &srcu.work },
	.idle_cv = PTHREAD_COND_INITIALIZER,
};

static struct sk_srcu_slot *slot_find(struct sk_srcu *d, unsigned int t);

/* ---- thread indexes ----------------------------------------------------- */

static void tls_forget(void)
{
	unsigned int w;

	for (w = 0; w < SK_SRCU__WAYS; w++) {
		sk_srcu__tls.ent[w].gen = ~(uint64_t)0;
		sk_srcu__tls.ent[w].slot = NULL;
	}
}

/* Give up thread r's slots and index.  srcu.lock held. */
static void thr_release(struct srcu_thr *r)
{
	unsigned int i, t = r->t;

	for (i = 0; i < r->n; i++) {
		struct sk_srcu *d = r->bind[i];
		struct sk_srcu_slot *s = slot_find(d, t);

		if (s)
			sk_atomic_store_relaxed(&s->tag, 0UL);
		/*
		 * X: this thread's counter stores before the decrement;
		 * pairs with the acquire of nlive in gp_idle().
		 */
		__atomic_fetch_sub(&d->nlive, 1UL, __ATOMIC_RELEASE);
	}
	free(r->bind);
	r->bind = NULL;
	r->n = r->cap = 0;
	srcu.thr[t - 1] = NULL;
	srcu.used[(t - 1) / 64] &= ~((uint64_t)1 << ((t - 1) % 64));
	r->t = 0;
}

static void tidx_exit(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&srcu.lock);
	if (my_thr.t)
		thr_release(&my_thr);
	pthread_mutex_unlock(&srcu.lock);
	tls_forget();
}

static void srcu_once(void)
{
	if (pthread_key_create(&srcu.key, tidx_exit) != 0)
		sk__die("pthread_key_create failed: cannot track thread exit");
}

/* Give the calling thread an index (1-based); 0 when none is left. */
static unsigned int tidx_get(void)
{
	unsigned int w, t = 0;

	pthread_once(&srcu.once, srcu_once);
	pthread_mutex_lock(&srcu.lock);
	for (w = 0; w < SRCU_MAX_THREADS / 64; w++) {
		if (srcu.used[w] != ~(uint64_t)0) {
			int b = __builtin_ctzll(~srcu.used[w]);

			srcu.used[w] |= (uint64_t)1 << b;
			t = w * 64 + (unsigned int)b + 1;
			break;
		}
	}
	if (t) {
		my_thr.t = t;
		srcu.thr[t - 1] = &my_thr;
	}
	pthread_mutex_unlock(&srcu.lock);
	if (t)
		pthread_setspecific(srcu.key, (void *)(uintptr_t)t);
	return t;
}

/* ---- slots ---------------------------------------------------------------- */

/* A new d->gen value. */
static uint64_t gen_new(void)
{
	return __atomic_add_fetch(&gen_next, 1, __ATOMIC_RELAXED);
}

/* d->gen, assigned on first use for a statically initialized domain. */
static uint64_t domain_gen(struct sk_srcu *d)
{
	uint64_t g = sk_atomic_load_acquire(&d->gen), ng;

	if (SK_LIKELY(g != 0))
		return g;
	ng = gen_new();
	if (sk_atomic_cmpxchg(&d->gen, &g, ng))
		return ng;
	return g; /* another thread assigned it */
}

/* The slot of thread index t in d, allocating it; NULL on ENOMEM. */
static struct sk_srcu_slot *slot_get(struct sk_srcu *d, unsigned int t)
{
	unsigned int k = (t - 1) / SK_SRCU_CHUNK_SLOTS;
	struct sk_srcu_slot **dir = sk_atomic_load_acquire(&d->dir);
	struct sk_srcu_slot *ch;

	if (!dir) {
		struct sk_srcu_slot **nd = calloc(SK_SRCU_MAX_CHUNKS,
						  sizeof(*nd));

		if (!nd)
			return NULL;
		/* Release: readers that load dir see it zeroed. */
		if (!__atomic_compare_exchange_n(&d->dir, &dir, nd, 0,
						 __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE))
			free(nd); /* another thread won; dir holds its copy */
		else
			dir = nd;
	}
	ch = sk_atomic_load_acquire(&dir[k]);
	if (!ch) {
		struct sk_srcu_slot *nc = aligned_alloc(
			SK_CACHELINE, SK_SRCU_CHUNK_SLOTS * sizeof(*nc));
		unsigned int n = sk_atomic_load_relaxed(&d->nchunks);

		if (!nc)
			return NULL;
		memset(nc, 0, SK_SRCU_CHUNK_SLOTS * sizeof(*nc));
		/*
		 * N: scanners look at dir[0..nchunks); raise it (max) before
		 * the chunk can be used by anyone, winner or loser of the
		 * publication race.  Pairs with the release CAS below / the
		 * acquire of dir[k], and the acquire of nchunks in sums().
		 */
		while (n < k + 1 && !sk_atomic_cmpxchg(&d->nchunks, &n, k + 1))
			;
		/* Release: the zeroed slots (and N) before the pointer. */
		if (!__atomic_compare_exchange_n(&dir[k], &ch, nc, 0,
						 __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE))
			free(nc); /* ch: the winner's chunk (acquire) */
		else
			ch = nc;
	}
	return &ch[(t - 1) % SK_SRCU_CHUNK_SLOTS];
}

/* The existing slot of thread index t in d, or NULL. */
static struct sk_srcu_slot *slot_find(struct sk_srcu *d, unsigned int t)
{
	struct sk_srcu_slot **dir = sk_atomic_load_acquire(&d->dir);
	struct sk_srcu_slot *ch;

	if (t == 0 || t > SRCU_MAX_THREADS || !dir)
		return NULL;
	ch = sk_atomic_load_acquire(&dir[(t - 1) / SK_SRCU_CHUNK_SLOTS]);
	return ch ? &ch[(t - 1) % SK_SRCU_CHUNK_SLOTS] : NULL;
}

static unsigned long slot_locks(struct sk_srcu_slot *s)
{
	return sk_atomic_load_relaxed(&s->lock[0]) +
	       sk_atomic_load_relaxed(&s->lock[1]);
}

/*
 * The calling thread's slot in d if it took it.  A slot's tag is nonzero
 * exactly while the current holder of its thread index has it bound
 * (zeroed when a holder exits, under srcu.lock, before the index is
 * given again), so for our own index a nonzero tag means ours.
 */
static struct sk_srcu_slot *my_slot(struct sk_srcu *d)
{
	struct sk_srcu_slot *s = slot_find(d, my_thr.t);

	if (!s || !(sk_atomic_load_relaxed(&s->tag) >> SRCU_TAG_SHIFT))
		return NULL;
	return s;
}

/*
 * Bind slot s (thread index t) to the calling thread: a new binding
 * incarnation, the key its sections return, and the tag.  The count part
 * of the tag starts at the slot's open count (locks - own unlocks), so
 * that sections left open by earlier owners of the index are not ours
 * (sk_srcu_read_lock_held()); their counts are visible here through
 * srcu.lock, taken by their owner's exit.  srcu.lock held.
 */
static void slot_take(struct sk_srcu_slot *s, unsigned int t)
{
	unsigned long open;
	unsigned int inc;

	if (++srcu.next_inc > SRCU_INC_MAX)
		srcu.next_inc = 1;
	inc = srcu.next_inc;
	open = slot_locks(s) - sk_atomic_load_relaxed(&s->unlock[0]) -
	       sk_atomic_load_relaxed(&s->unlock[1]);
	s->key = (unsigned long)inc << (SRCU_T_BITS + 1) |
		 (unsigned long)t << 1;
	sk_atomic_xchg(&s->tag, (unsigned long)inc << SRCU_TAG_SHIFT |
					(open & SRCU_TAG_COUNT));
}

/*
 * Cache s as the calling thread's slot in d (life gen) for the fast paths,
 * which then pair their compiler barriers with membarrier(2): so only when
 * the fence mode is membarrier.  Without it nothing is cached and every
 * section takes the slow paths, whose light fences are full fences.
 */
static void cache_slot(struct sk_srcu *d, struct sk_srcu_slot *s,
		       uint64_t gen)
{
	if (!sk__fence_sys_get())
		return;
	sk_srcu__tls.ent[SK_SRCU__WAY(d)].slot = s;
	sk_srcu__tls.ent[SK_SRCU__WAY(d)].gen = gen;
}

/*
 * The calling thread's slot in d, taking it (and an index) if needed, and
 * cached in sk_srcu__tls (see cache_slot()).  NULL when no index or memory
 * is left.
 */
static struct sk_srcu_slot *slot_bind(struct sk_srcu *d)
{
	uint64_t gen = domain_gen(d);
	struct srcu_thr *r = &my_thr;
	struct sk_srcu_slot *s;

	if (!r->t && !tidx_get())
		return NULL;
	s = slot_get(d, r->t);
	if (!s)
		return NULL;
	if (!(sk_atomic_load_relaxed(&s->tag) >> SRCU_TAG_SHIFT)) {
		pthread_mutex_lock(&srcu.lock);
		if (r->n == r->cap) {
			unsigned int cap = r->cap ? 2 * r->cap : 8;
			struct sk_srcu **nb =
				realloc(r->bind, cap * sizeof(*nb));

			if (!nb) {
				pthread_mutex_unlock(&srcu.lock);
				return NULL;
			}
			r->bind = nb;
			r->cap = cap;
		}
		r->bind[r->n++] = d;
		slot_take(s, r->t);
		sk_atomic_fetch_add(&d->nlive, 1UL);
		sk_atomic_fetch_add(&d->binds, (uint64_t)1);
		pthread_mutex_unlock(&srcu.lock);
		/* P: binds++ before our first section; pairs with Z. */
		sk_smp_mb();
	}
	cache_slot(d, s, gen);
	return s;
}

int sk_srcu__read_lock_slow(struct sk_srcu *d)
{
	struct sk_srcu_slot *s = slot_bind(d);
	int bit = (int)(sk_atomic_load_relaxed(&d->idx) & 1);

	if (!s) {
		sk_atomic_fetch_add(&d->shared.lock[bit], 1UL);
		/* B: lock count before the section (full barrier). */
		sk_smp_mb__after_atomic();
		return bit;
	}
	sk_atomic_store_relaxed(&s->lock[bit],
				sk_atomic_load_relaxed(&s->lock[bit]) + 1);
	/* B: lock count before the section; pairs with D. */
	sk_fence_light();
	return (int)s->key | bit;
}

static void __attribute__((noreturn)) die_unbalanced(struct sk_srcu *d,
						     int idx)
{
	sk__die("unbalanced sk_srcu_read_unlock() on domain %p: index %d "
		"ended more often than it was entered",
		(void *)d, idx);
}

static void __attribute__((noreturn)) die_unbalanced_gp(struct sk_srcu *d,
							int bit)
{
	sk__die("unbalanced sk_srcu_read_unlock() on domain %p, found by a "
		"grace period: index %d was ended more often than it was "
		"entered",
		(void *)d, bit);
}

static void __attribute__((noreturn)) die_bogus(struct sk_srcu *d, int idx)
{
	sk__die("sk_srcu_read_unlock(): index %d was not returned by "
		"sk_srcu_read_lock() on domain %p",
		idx, (void *)d);
}

static void __attribute__((noreturn)) die_foreign(struct sk_srcu *d, int idx)
{
	sk__die("sk_srcu_read_unlock(): index %d was returned by "
		"sk_srcu_read_lock() on another domain than %p",
		idx, (void *)d);
}

/*
 * (t, inc) is a live binding of thread index t in a domain other than d:
 * an idx of that domain.  Its holder's bindings all have distinct
 * incarnations (one process-wide counter, unless it wrapped meanwhile),
 * and an earlier holder of t, whose section in d may legitimately still
 * be open, had its incarnations before the holder's.
 */
static int foreign_idx(struct sk_srcu *d, unsigned int t, unsigned int inc)
{
	struct srcu_thr *r;
	unsigned int i;
	int found = 0;

	pthread_mutex_lock(&srcu.lock);
	r = srcu.thr[t - 1];
	for (i = 0; r && i < r->n && !found; i++) {
		struct sk_srcu_slot *o = slot_find(r->bind[i], t);

		found = r->bind[i] != d && o &&
			sk_atomic_load_relaxed(&o->tag) >> SRCU_TAG_SHIFT ==
				inc;
	}
	pthread_mutex_unlock(&srcu.lock);
	return found;
}

/* Our own section of d, ended on the slow path (a cache miss). */
static void own_unlock(struct sk_srcu *d, struct sk_srcu_slot *s, int idx)
{
	int bit = idx & 1;
	unsigned long u = sk_atomic_load_relaxed(&s->unlock[bit]);

	if ((long)(u + sk_atomic_load_relaxed(&s->remote[bit]) -
		   sk_atomic_load_relaxed(&s->lock[bit])) >= 0)
		die_unbalanced(d, idx);
	/* C: release, as in the fast path; pairs with D. */
	sk_atomic_store_release(&s->unlock[bit], u + 1);
	cache_slot(d, s, domain_gen(d));
}

/*
 * Another thread's section (or one of an earlier holder of index t): count
 * it in the slot's remote[] (C: a seq_cst RMW), and in its live owner's
 * tag count when the binding incarnation is the owner's (live).
 */
static void remote_unlock(struct sk_srcu *d, struct sk_srcu_slot *s,
			  int idx, int live)
{
	int bit = idx & 1;
	unsigned long r = sk_atomic_fetch_add(&s->remote[bit], 1UL) + 1;
	unsigned long u, w = sk_atomic_load_relaxed(&s->tag);

	while (live && w >> SRCU_TAG_SHIFT == (unsigned int)idx >> 16 &&
	       !sk_atomic_cmpxchg(&s->tag, &w, tag_count_add(w)))
		;
	u = sk_atomic_load_relaxed(&s->unlock[bit]);
	if ((long)(u + r - sk_atomic_load_relaxed(&s->lock[bit])) > 0) {
		/*
		 * Confirm before dying: the owner's lock store may be
		 * reordered after its unlock store as seen from here; after
		 * the heavy fence every lock preceding a counted unlock is
		 * visible (as C/D).
		 */
		sk_fence_heavy();
		if ((long)(u + r - sk_atomic_load_relaxed(&s->lock[bit])) > 0)
			die_unbalanced(d, idx);
	}
}

void sk_srcu__read_unlock_slow(struct sk_srcu *d, int idx)
{
	unsigned int tag = (unsigned int)idx >> 1, t, inc;
	int bit = idx & 1;
	struct sk_srcu_slot *s;
	unsigned long u;

	if (idx < 0)
		die_bogus(d, idx);
	if (tag == 0) {
		/* Shared counters.  C: the RMW is a full barrier. */
		u = sk_atomic_fetch_add(&d->shared.unlock[bit], 1UL) + 1;
		/* Every lock before a counted unlock is visible (RMW chain). */
		if ((long)(u - sk_atomic_load_acquire(&d->shared.lock[bit])) >
		    0)
			die_bogus(d, idx);
		return;
	}
	t = tag & SRCU_T_MASK;
	inc = tag >> SRCU_T_BITS;
	if (!t || !inc || t > SRCU_MAX_THREADS)
		die_bogus(d, idx);
	s = slot_find(d, t);
	if (!s)
		die_bogus(d, idx);
	if (sk_atomic_load_relaxed(&s->tag) >> SRCU_TAG_SHIFT == inc) {
		/* The slot's live binding made it: its owner's section. */
		if (t == my_thr.t)
			own_unlock(d, s, idx); /* cache miss, or unbalanced */
		else
			remote_unlock(d, s, idx, 1);
		return;
	}
	if (foreign_idx(d, t, inc))
		die_foreign(d, idx);
	remote_unlock(d, s, idx, 0); /* an earlier holder's section */
}

int sk_srcu_read_lock_held(struct sk_srcu *d)
{
	struct sk_srcu_slot *s;
	unsigned long open;

	if (!d)
		return 0;
	s = my_slot(d);
	if (!s)
		return 0;
	/*
	 * Ours: entered, minus ended here, minus (in the tag's count) the
	 * open count when we took the slot and those ended elsewhere; in the
	 * count's modulus, read as signed.
	 */
	open = (slot_locks(s) - sk_atomic_load_relaxed(&s->unlock[0]) -
		sk_atomic_load_relaxed(&s->unlock[1]) -
		sk_atomic_load_relaxed(&s->tag)) &
	       SRCU_TAG_COUNT;
	return open != 0 && open <= SRCU_TAG_COUNT >> 1;
}

/* ---- grace periods ------------------------------------------------------- */

/*
 * Sums of both indexes: lock counts (which = 0) or unlock + remote counts
 * (which = 1).  Acquire of nchunks: every chunk published before (N).
 */
static void sums(struct sk_srcu *d, int which, unsigned long out[2])
{
	struct sk_srcu_slot **dir = sk_atomic_load_acquire(&d->dir);
	unsigned int k, n = sk_atomic_load_acquire(&d->nchunks);
	unsigned long s0, s1;
	int i;

	if (which) {
		s0 = sk_atomic_load_relaxed(&d->shared.unlock[0]);
		s1 = sk_atomic_load_relaxed(&d->shared.unlock[1]);
	} else {
		s0 = sk_atomic_load_relaxed(&d->shared.lock[0]);
		s1 = sk_atomic_load_relaxed(&d->shared.lock[1]);
	}
	for (k = 0; dir && k < n; k++) {
		struct sk_srcu_slot *ch = sk_atomic_load_acquire(&dir[k]);

		for (i = 0; ch && i < SK_SRCU_CHUNK_SLOTS; i++) {
			if (which) {
				s0 += sk_atomic_load_relaxed(&ch[i].unlock[0]) +
				      sk_atomic_load_relaxed(&ch[i].remote[0]);
				s1 += sk_atomic_load_relaxed(&ch[i].unlock[1]) +
				      sk_atomic_load_relaxed(&ch[i].remote[1]);
			} else {
				s0 += sk_atomic_load_relaxed(&ch[i].lock[0]);
				s1 += sk_atomic_load_relaxed(&ch[i].lock[1]);
			}
		}
	}
	out[0] = s0;
	out[1] = s1;
}

/*
 * Which indexes hold no reader: bit i of the result set when index i is
 * drained.  heavy: the real check (D between the sums); otherwise a cheap
 * estimate to decide whether the real check is worth its heavy fence.
 */
static int drained_mask(struct sk_srcu *d, int heavy)
{
	unsigned long u[2], l[2];

	sums(d, 1, u);
	if (heavy)
		sk_fence_heavy(); /* D: unlock sums before lock sums; pairs
				     with B and C */
	else
		sk_smp_rmb(); /* estimate only: no pairing with readers */
	sums(d, 0, l);
	if (heavy && u[0] == l[0] && u[1] == l[1])
		SK_TSAN_ACQUIRE(d); /* readers' accesses before (D + C) */
	/*
	 * After D every counted end has its start counted (C/D; a hand-off
	 * orders the start before the remote end): more ends than starts is
	 * an unbalanced unlock (one that slipped past the unlock's check).
	 */
	if (heavy && ((long)(u[0] - l[0]) > 0 || (long)(u[1] - l[1]) > 0))
		die_unbalanced_gp(d, (long)(u[0] - l[0]) > 0 ? 0 : 1);
	return (u[0] == l[0]) | (u[1] == l[1]) << 1;
}

/* No reader holds a section on index bit (see the header comment). */
static int readers_gone(struct sk_srcu *d, int bit)
{
	if (!(drained_mask(d, 1) >> bit & 1))
		return 0;
	/* The readers' accesses happen before (D + C), invisible to TSan. */
	SK_TSAN_ACQUIRE(d);
	return 1;
}

/* readers_gone(), with the heavy fence only when the estimate agrees. */
static int readers_gone_retry(struct sk_srcu *d, int bit)
{
	return (drained_mask(d, 0) >> bit & 1) && readers_gone(d, bit);
}

/* What gp_idle() compares with the snapshot of the last idle check. */
struct idle_view {
	unsigned long nlive, shared[2];
	uint64_t binds;
	struct sk_srcu_slot *me; /* caller's slot in d, if it took one */
};

static void idle_view(struct sk_srcu *d, struct idle_view *v)
{
	/* X: acquire, so exited threads' counts are visible. */
	v->nlive = sk_atomic_load_acquire(&d->nlive);
	v->binds = sk_atomic_load_acquire(&d->binds);
	v->shared[0] = sk_atomic_load_acquire(&d->shared.lock[0]);
	v->shared[1] = sk_atomic_load_acquire(&d->shared.lock[1]);
	v->me = v->nlive ? my_slot(d) : NULL;
}

/* At most the caller lives among the threads with a slot in d. */
static int only_caller_lives(const struct idle_view *v)
{
	return v->nlive == (v->me ? 1UL : 0UL);
}

/*
 * The shared counters still at the snapshot, where every shared section
 * had ended (lock[i] = unlock[i] = idle_shared[i]): the ends first
 * (acquire: the sections they count are over), then the starts.  Equal
 * starts alone would not do once the counters wrap (2^N more sections,
 * one of them open, restore the lock count); with the ends read first,
 * both equal means no section was open then nor started since (fewer than
 * 2^N between two loads).
 */
static int shared_idle(struct sk_srcu *d)
{
	int i;

	for (i = 0; i < 2; i++)
		if (sk_atomic_load_acquire(&d->shared.unlock[i]) !=
		    d->idle_shared[i])
			return 0;
	for (i = 0; i < 2; i++)
		if (sk_atomic_load_acquire(&d->shared.lock[i]) !=
		    d->idle_shared[i])
			return 0;
	return 1;
}

/*
 * The snapshot's owner (the caller, or a thread since exited: its starts
 * and own ends are visible, program order or X) neither started nor ended
 * a section since, and all of them ended: starts and ends still equal to
 * its lock sum then (remote ends with acquire).  Both, for the reason of
 * shared_idle().
 */
static int owner_idle(struct sk_srcu *d)
{
	struct sk_srcu_slot *s = d->idle_owner;

	if (!s)
		return 1;
	return slot_locks(s) == d->idle_owner_locks &&
	       sk_atomic_load_relaxed(&s->unlock[0]) +
			       sk_atomic_load_relaxed(&s->unlock[1]) +
			       sk_atomic_load_acquire(&s->remote[0]) +
			       sk_atomic_load_acquire(&s->remote[1]) ==
		       d->idle_owner_locks;
}

/*
 * Z: a domain with no live reader thread but the caller (outside any
 * section) and no section open or started since it was last found without
 * readers: nothing to wait for, no heavy fence.  A new section needs a new
 * thread slot (binds, 64-bit: exact), a shared counter or the one thread
 * that lived then (idle_owner; the caller, or since exited): unchanged.
 * Sections that begin after these loads see the caller's updates: the
 * caller issued a full barrier before them (the gp start), a binding
 * thread one after binds++ (P), a shared reader an RMW and a full barrier.
 * gp_mutex held.
 */
static int gp_idle(struct sk_srcu *d)
{
	struct idle_view v;

	if (!d->idle_valid)
		return 0;
	idle_view(d, &v);
	if (v.binds != d->idle_binds || !only_caller_lives(&v) ||
	    (v.me && v.me != d->idle_owner) || !shared_idle(d) ||
	    !owner_idle(d))
		return 0;
	SK_TSAN_ACQUIRE(d);
	return 1;
}

/*
 * First check of a grace period: both indexes at once (one heavy fence).
 * Returns the drained mask; when both are drained and no other thread
 * could have started a section meanwhile (the view did not change around
 * the sums and only the caller lives), records the idle snapshot for
 * gp_idle().  The caller does not lock meanwhile: its lock sum is stable.
 * gp_mutex held.
 */
static int gp_first_check(struct sk_srcu *d)
{
	struct idle_view v0, v1;
	int mask;

	d->idle_valid = 0;
	idle_view(d, &v0);
	mask = drained_mask(d, 1);
	if (mask != 3 || !only_caller_lives(&v0))
		return mask;
	/* Loads of the sums before the second view. */
	sk_smp_rmb();
	idle_view(d, &v1);
	if (v1.nlive == v0.nlive && v1.binds == v0.binds &&
	    v1.shared[0] == v0.shared[0] && v1.shared[1] == v0.shared[1] &&
	    v1.me == v0.me) {
		d->idle_binds = v0.binds;
		d->idle_shared[0] = v0.shared[0];
		d->idle_shared[1] = v0.shared[1];
		d->idle_owner = v0.me;
		d->idle_owner_locks = v0.me ? slot_locks(v0.me) : 0;
		d->idle_valid = 1;
	}
	return mask;
}

static void nap(uint64_t ns)
{
	struct timespec ts = { 0, (long)ns };

	nanosleep(&ts, NULL);
}

/*
 * Wait until index bit is drained: check (spinning, then yielding when
 * expedited), then nap with doubling naps.  Returns 0 only for the
 * nonblocking modes, which give up instead of napping (the worker comes
 * back later).
 */
static int drain(struct sk_srcu *d, int bit, int mode)
{
	uint64_t ns = SRCU_NAP_MIN_NS;
	int tries;

	for (tries = 0;; tries++) {
		/*
		 * Estimate first, even on the first try: right after a flip
		 * a busy reader is often inside a section of the old index,
		 * and the heavy fence is worth paying only once it left.
		 */
		if (readers_gone_retry(d, bit))
			return 1;
		if (tries < SRCU_SPIN_CHECKS) {
			sk_cpu_relax();
			continue;
		}
		if ((mode == DRAIN_EXPEDITE &&
		     tries < SRCU_SPIN_CHECKS + SRCU_EXPEDITE_YIELDS) ||
		    (mode == DRAIN_NONBLOCK_EXP &&
		     tries < SRCU_SPIN_CHECKS + SRCU_NONBLOCK_YIELDS)) {
			sched_yield();
			continue;
		}
		if (mode == DRAIN_NONBLOCK || mode == DRAIN_NONBLOCK_EXP)
			return 0;
		nap(ns);
		if (ns < SRCU_NAP_MAX_NS)
			ns *= 2;
	}
}

/*
 * Grace-period numbers are 64-bit, also on 32-bit targets, and never wrap.
 * A cookie is a number truncated to unsigned long; the sequence steps over
 * the numbers whose truncation is SK_RCU_COOKIE_COMPLETED.
 */
static uint64_t gp_next(uint64_t n)
{
	return (unsigned long)(n + 1) == SK_RCU_COOKIE_COMPLETED ? n + 2
								 : n + 1;
}

/* Grace period number target has completed (acquire: pairs with
 * gp_complete()'s release). */
static int gp_done(struct sk_srcu *d, uint64_t target)
{
	return sk_atomic_load_acquire(&d->gp_completed) >= target;
}

/*
 * The same for a cookie: compared by difference with the truncated count,
 * so that it holds across the wrap of unsigned long.  A cookie is never
 * more than 2 ahead of the completed count; one that fell more than
 * LONG_MAX grace periods behind reads as not completed (false negative).
 */
static int cookie_done(struct sk_srcu *d, unsigned long cookie)
{
	unsigned long c = (unsigned long)sk_atomic_load_acquire(
		&d->gp_completed);

	return cookie == SK_RCU_COOKIE_COMPLETED || (long)(c - cookie) >= 0;
}

/* Number of a grace period that starts after the call. */
static uint64_t gp_snap(struct sk_srcu *d)
{
	/* S1: the caller's updates before the snapshot. */
	sk_smp_mb();
	return gp_next(sk_atomic_load_acquire(&d->gp_started));
}

static void gp_flip(struct sk_srcu *d)
{
	/* E: the first drain before the flip. */
	sk_smp_mb();
	sk_atomic_store_relaxed(&d->idx, d->idx + 1);
	/* F: the flip before draining the old index. */
	sk_smp_mb();
	d->gp_phase = 2;
}

static void gp_complete(struct sk_srcu *d)
{
	d->gp_phase = 0;
	d->stats_gps++;
	/* Release: pairs with the acquire in gp_done(). */
	sk_atomic_store_release(&d->gp_completed, d->gp_started);
}

/*
 * Advance d's grace periods until target has completed.  gp_mutex held.
 * Returns 1 when done, 0 when mode is nonblocking and readers remain.
 */
static int advance(struct sk_srcu *d, uint64_t target, int mode)
{
	while (!gp_done(d, target)) {
		if (d->gp_phase == 0) {
			int mask;

			sk_atomic_store_relaxed(&d->gp_started,
						gp_next(d->gp_started));
			d->gp_phase = 1;
			/* Orders the start (and updates) before the checks. */
			sk_smp_mb();
			if (gp_idle(d)) {
				gp_complete(d);
				continue;
			}
			mask = gp_first_check(d);
			if (mask == 3) {
				/* No reader at all: nothing to flip for. */
				gp_complete(d);
				continue;
			}
			if (mask >> ((d->idx & 1) ^ 1) & 1)
				gp_flip(d); /* step 1 done */
		}
		if (d->gp_phase == 1) {
			if (!drain(d, (int)(d->idx & 1) ^ 1, mode))
				return 0;
			gp_flip(d);
		}
		if (!drain(d, (int)(d->idx & 1) ^ 1, mode))
			return 0;
		gp_complete(d);
	}
	return 1;
}

static void worker_kick(void);

/* Release gp_mutex; the worker may have skipped d while we held it. */
static void gp_unlock(struct sk_srcu *d)
{
	pthread_mutex_unlock(&d->gp_mutex);
	/*
	 * G: the unlock before the load of in_work (store buffering; the
	 * unlock is only a release, which orders no later load); pairs with
	 * I in process(): either its trylock sees the mutex free, or we see
	 * the in_work it stored before trying and kick it.
	 */
	sk_smp_mb();
	if (__atomic_load_n(&d->in_work, __ATOMIC_SEQ_CST))
		worker_kick();
}

static void synchronize(struct sk_srcu *d, int mode, const char *fn)
{
	uint64_t target;

	if (sk_srcu_read_lock_held(d))
		sk__die("%s called inside a read-side critical section of the "
			"same SRCU domain %p: it would wait for itself forever",
			fn, (void *)d);
	target = gp_snap(d);
	pthread_mutex_lock(&d->gp_mutex);
	advance(d, target, mode);
	gp_unlock(d);
}

void sk_synchronize_srcu(struct sk_srcu *d)
{
	synchronize(d, DRAIN_SLEEP, "sk_synchronize_srcu()");
}

void sk_synchronize_srcu_expedited(struct sk_srcu *d)
{
	synchronize(d, DRAIN_EXPEDITE, "sk_synchronize_srcu_expedited()");
}

unsigned long sk_get_state_synchronize_srcu(struct sk_srcu *d)
{
	return (unsigned long)gp_snap(d);
}

int sk_poll_state_synchronize_srcu(struct sk_srcu *d, unsigned long cookie)
{
	if (!cookie_done(d, cookie))
		return 0;
	/* Later frees after the observed completion. */
	sk_smp_mb();
	return 1;
}

#ifdef SK_TEST_HOOKS
/*
 * Test hooks (the scalekit_hooks test library only, see tests/hooks.cmake;
 * declared by the tests, never in a header):
 * number d's grace periods from seq on (d idle: no grace period, callback
 * or poll pending), and take the next domain gens after next, so that a
 * test can run across the 2^16 and 2^32 boundaries.
 */
void sk__srcu_test_set_seq(struct sk_srcu *d, uint64_t seq);
void sk__srcu_test_set_gen_next(uint64_t next);

void sk__srcu_test_set_seq(struct sk_srcu *d, uint64_t seq)
{
	pthread_mutex_lock(&d->gp_mutex);
	sk_atomic_store_relaxed(&d->gp_started, seq);
	sk_atomic_store_relaxed(&d->poll_req, seq);
	sk_atomic_store_release(&d->gp_completed, seq);
	gp_unlock(d);
}

void sk__srcu_test_set_gen_next(uint64_t next)
{
	__atomic_store_n(&gen_next, next, __ATOMIC_RELAXED);
}
#endif

/* ---- worker ---------------------------------------------------------------- */

/*
 * Work was published by a seq_cst RMW (queue tail, poll_req): wake the
 * worker if asleep.  The seq_cst load after that RMW pairs with W1 (both
 * in the single total order of seq_cst operations and fences).
 */
static void worker_poke(void)
{
	if (__atomic_load_n(&srcu.sleeping, __ATOMIC_SEQ_CST)) {
		sk_atomic_fetch_add(&srcu.poke, 1);
		sk__futex_wake(&srcu.poke, 1);
	}
}

/*
 * A domain's gp_mutex was released: the worker may have skipped it (and
 * work_visible() hides it until now).  The unconditional increment makes
 * the worker's futex wait, whose value it read before trying the mutex,
 * return at once if it has not slept yet.  The seq_cst RMW then seq_cst
 * load pair with W1 as in worker_poke().
 */
static void worker_kick(void)
{
	sk_atomic_fetch_add(&srcu.poke, 1);
	if (__atomic_load_n(&srcu.sleeping, __ATOMIC_SEQ_CST))
		sk__futex_wake(&srcu.poke, 1);
}

static int poll_pending(struct sk_srcu *d)
{
	return !gp_done(d, sk_atomic_load_acquire(&d->poll_req));
}

/* Work the worker could do on d now, without waiting for anyone. */
static int work_visible(struct sk_srcu *d)
{
	if (d->busy_skip)
		return 0; /* the gp_mutex holder kicks us (gp_unlock()) */
	if (!sk__wfq_empty(&d->cbq))
		return 1;
	if (!d->b_first && !poll_pending(d))
		return 0;
	/* Blocked on readers: the worker's next timed check. */
	return !d->blocked;
}

static void barrier_cb(struct sk_rcu_head *h)
{
	struct sk_srcu *d = SK_CONTAINER_OF(h, struct sk_srcu, barrier_head);

	sk_atomic_store_release(&d->barrier_done, 1);
	sk__futex_wake(&d->barrier_done, 1);
}

/* One step of the worker on d. */
static int process(struct sk_srcu *d)
{
	struct sk_rcu_head *first = NULL, *last = NULL, *h, *next;
	uint64_t want = 0, req;
	unsigned long backlog, n = 0;
	int pending;

	/*
	 * Consume the announcements (in_work 2 -> 1) before looking at the
	 * work: work announced later makes the unlisting CAS fail.
	 */
	sk_atomic_xchg(&d->in_work, 1);
	/*
	 * I: in_work stored before the loads of the work and the trylock's
	 * load of the mutex (store buffering: in C11 a seq_cst RMW does not
	 * order later non-seq_cst loads).  Pairs with the producers' seq_cst
	 * RMW that publishes the work (queue tail, poll_req) followed by
	 * their seq_cst load of in_work in mark_work(): either we see the
	 * work or they see in_work == 1 and announce again; and with G in
	 * gp_unlock().
	 */
	sk_smp_mb();
	if (pthread_mutex_trylock(&d->gp_mutex) != 0) {
		/* Its holder kicks us on release (gp_unlock()). */
		d->busy_skip = 1;
		return WORK_PENDING;
	}
	d->busy_skip = 0;
	if (!d->b_first && sk__wfq_take(&d->cbq, &d->b_first, &d->b_last))
		d->b_gp = gp_snap(d);
	if (d->b_first)
		want = d->b_gp;
	req = sk_atomic_load_acquire(&d->poll_req);
	if (!gp_done(d, req) && (!want || req > want))
		want = req;
	/* Modular difference, signed: exact across the counters' wrap. */
	backlog = sk_atomic_load_relaxed(&d->cb_queued) - d->cb_invoked;
	/* Blocked: readers hold want; the worker checks again after a nap. */
	d->blocked = want &&
		     !advance(d, want,
			      (long)backlog > (long)SRCU_CB_BACKLOG_EXPEDITE
				      ? DRAIN_NONBLOCK_EXP
				      : DRAIN_NONBLOCK);
	if (d->b_first && gp_done(d, d->b_gp)) {
		first = d->b_first;
		last = d->b_last;
		/* sk_srcu_barrier() waits for this batch too (bug: it used
		 * to see nothing pending while the batch ran). */
		sk_atomic_store_relaxed(&d->cb_running, 1);
		sk_atomic_store_relaxed(&d->b_first,
					(struct sk_rcu_head *)NULL);
		d->b_last = NULL;
	}
	pending = d->b_first || poll_pending(d) || !sk__wfq_empty(&d->cbq);
	pthread_mutex_unlock(&d->gp_mutex);

	for (h = first; h; h = next) {
		next = sk__wfq_next(h, last);
		if (h != &d->barrier_head)
			n++;
		sk__cb_invoke(h);
	}
	if (!first)
		return pending ? WORK_PENDING : WORK_IDLE;
	/* Release: the producers' backlog estimate after the runs. */
	sk_atomic_store_release(&d->cb_invoked, d->cb_invoked + n);
	/* Release: pairs with the acquire in sk_srcu_barrier(). */
	sk_atomic_store_release(&d->cb_running, 0);
	return WORK_PROGRESS;
}

/* Work the worker can do now; *blocked: some domain waits for readers. */
static int any_work_visible(int *blocked)
{
	struct sk__link *l;
	int vis = 0;

	*blocked = 0;
	pthread_mutex_lock(&srcu.lock);
	for (l = srcu.work.next; l != &srcu.work && !vis; l = l->next) {
		struct sk_srcu *d = SK_CONTAINER_OF(l, struct sk_srcu,
						    work_link);

		vis = work_visible(d);
		*blocked |= d->blocked;
	}
	pthread_mutex_unlock(&srcu.lock);
	return vis;
}

static void *worker_main(void *arg)
{
	uint64_t ns = SRCU_NAP_MIN_NS;
	int blocked;

	(void)arg;
	in_srcu_worker = 1;
	pthread_setname_np(pthread_self(), "sk-srcu-cb");
	for (;;) {
		int seq = sk_atomic_load_acquire(&srcu.poke);
		int progress = 0, n = 0, len = 0;
		struct sk__link *l;

		pthread_mutex_lock(&srcu.lock);
		for (l = srcu.work.next; l != &srcu.work; l = l->next)
			len++;
		/* Visit each listed domain once, rotating the list. */
		for (n = 0; n < len && !sk__link_empty(&srcu.work); n++) {
			struct sk_srcu *d = SK_CONTAINER_OF(
				srcu.work.next, struct sk_srcu, work_link);
			int st;

			sk__link_del(&d->work_link);
			sk__link_add_tail(&d->work_link, &srcu.work);
			srcu.current = d;
			pthread_mutex_unlock(&srcu.lock);
			st = process(d);
			pthread_mutex_lock(&srcu.lock);
			srcu.current = NULL;
			pthread_cond_broadcast(&srcu.idle_cv);
			if (st == WORK_PROGRESS)
				progress = 1;
			if (st == WORK_IDLE) {
				int one = 1;

				/*
				 * Unlist only if nothing was announced since
				 * process() consumed the announcements (no
				 * window where a request is pending and
				 * in_work reads 0).
				 */
				if (sk_atomic_cmpxchg(&d->in_work, &one, 0))
					sk__link_del(&d->work_link);
			}
		}
		pthread_mutex_unlock(&srcu.lock);
		if (progress) {
			ns = SRCU_NAP_MIN_NS;
			continue;
		}
		/*
		 * W1: announce the sleep before the re-check loads the work
		 * (store buffering; the fence because in C11 a seq_cst RMW
		 * does not order later non-seq_cst loads).  Pairs with the
		 * producers' seq_cst RMW that publishes the work followed by
		 * their seq_cst load of sleeping in worker_poke(), and with
		 * worker_kick()'s increment of poke, which the futex wait
		 * reads after W1: either we see the work or they wake us.
		 */
		sk_atomic_xchg(&srcu.sleeping, 1);
		sk_smp_mb();
		if (!any_work_visible(&blocked)) {
			if (!blocked) {
				sk__futex_wait(&srcu.poke, seq);
			} else {
				/* Readers hold a domain: look again later. */
				sk__futex_wait_ns(&srcu.poke, seq, ns);
				if (ns < SRCU_NAP_MAX_NS)
					ns *= 2;
			}
		}
		sk_atomic_store_relaxed(&srcu.sleeping, 0);
	}
	return NULL;
}

static int worker_ensure(void)
{
	sigset_t all, old;
	pthread_t th;
	int err = 0;

	if (SK_LIKELY(sk_atomic_load_acquire(&srcu.worker_started)))
		return 0;
	pthread_mutex_lock(&srcu.lock);
	if (!srcu.worker_started) {
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		err = -pthread_create(&th, NULL, worker_main, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (!err) {
			pthread_detach(th);
			sk_atomic_store_release(&srcu.worker_started, 1);
		}
	}
	pthread_mutex_unlock(&srcu.lock);
	return err ? -EAGAIN : 0;
}

/*
 * Announce work on d (in_work = 2), list d if it was not, wake the worker.
 * in_work: 0 unlisted, 1 listed, 2 listed with work announced since the
 * worker last looked at d.
 */
static void mark_work(struct sk_srcu *d)
{
	/*
	 * seq_cst, after the seq_cst RMW that published the work: pairs with
	 * I in process().  An announcement still unconsumed (2) covers ours,
	 * as process() consumes it before looking at the work.
	 */
	if (__atomic_load_n(&d->in_work, __ATOMIC_SEQ_CST) != 2 &&
	    sk_atomic_xchg(&d->in_work, 2) == 0) {
		pthread_mutex_lock(&srcu.lock);
		sk__link_add_tail(&d->work_link, &srcu.work);
		pthread_mutex_unlock(&srcu.lock);
	}
	worker_poke();
}

int sk_call_srcu(struct sk_srcu *d, struct sk_rcu_head *head,
		 void (*fn)(struct sk_rcu_head *))
{
	unsigned long backlog;
	int err;

	if (!d)
		return -EINVAL;
	err = worker_ensure();
	if (err)
		return err;
	err = sk__cb_prepare(head, fn, "sk_call_srcu()");
	if (err)
		return err;
	sk__wfq_push(&d->cbq, head);
	backlog = sk_atomic_fetch_add_relaxed(&d->cb_queued, 1UL) + 1 -
		  sk_atomic_load_relaxed(&d->cb_invoked);
	mark_work(d);
	/*
	 * Forward progress under a flood: a producer far ahead of the worker
	 * gives up its CPU once per call (bounded work, no waiting on anyone).
	 */
	if (SK_UNLIKELY((long)backlog > (long)SRCU_CB_THROTTLE) &&
	    !in_srcu_worker)
		sched_yield();
	return 0;
}

unsigned long sk_start_poll_synchronize_srcu(struct sk_srcu *d)
{
	uint64_t want = gp_snap(d);
	uint64_t cur = sk_atomic_load_relaxed(&d->poll_req);

	while (want > cur && !sk_atomic_cmpxchg(&d->poll_req, &cur, want))
		;
	if (worker_ensure() == 0)
		mark_work(d);
	return (unsigned long)want;
}

void sk_srcu_barrier(struct sk_srcu *d)
{
	int pending;

	if (in_srcu_worker)
		sk__die("sk_srcu_barrier() called from an SRCU callback: it "
			"would wait for itself forever");
	if (sk_srcu_read_lock_held(d))
		sk__die("sk_srcu_barrier() called inside a read-side critical "
			"section of the same SRCU domain %p: it would wait for "
			"itself forever",
			(void *)d);
	pthread_mutex_lock(&d->barrier_mutex);
	pthread_mutex_lock(&d->gp_mutex);
	/* Acquire of cb_running: pairs with the worker's release after a
	 * batch it detached has run. */
	pending = !sk__wfq_empty(&d->cbq) || d->b_first ||
		  sk_atomic_load_acquire(&d->cb_running);
	gp_unlock(d);
	if (pending) {
		d->barrier_done = 0;
		d->barrier_head.state_ = SK__CB_DONE;
		/*
		 * The worker runs the batch in flight to its end before it
		 * takes the queue again, so the barrier head runs after it.
		 */
		if (worker_ensure() == 0 &&
		    sk__cb_prepare(&d->barrier_head, barrier_cb,
				   "sk_srcu_barrier()") == 0) {
			sk__wfq_push(&d->cbq, &d->barrier_head);
			mark_work(d);
			while (!sk_atomic_load_acquire(&d->barrier_done))
				sk__futex_wait(&d->barrier_done, 0);
		}
	}
	pthread_mutex_unlock(&d->barrier_mutex);
}

/* ---- domains ------------------------------------------------------------- */

int sk_srcu_init(struct sk_srcu *d)
{
	if (!d || (uintptr_t)d % SK_CACHELINE)
		return -EINVAL;
	memset(d, 0, sizeof(*d));
	pthread_mutex_init(&d->gp_mutex, NULL);
	pthread_mutex_init(&d->barrier_mutex, NULL);
	sk__wfq_init(&d->cbq);
	sk__link_init(&d->work_link);
	/* A new key: slot caches of an earlier life at this address miss. */
	d->gen = gen_new();
	return 0;
}

/* Remove d from the binding lists of its slots' owners.  srcu.lock held. */
static void unbind_all(struct sk_srcu *d)
{
	unsigned int k, i, j;

	for (k = 0; d->dir && k < d->nchunks; k++) {
		struct sk_srcu_slot *ch = d->dir[k];

		for (i = 0; ch && i < SK_SRCU_CHUNK_SLOTS; i++) {
			unsigned int t = k * SK_SRCU_CHUNK_SLOTS + i + 1;
			struct srcu_thr *r = srcu.thr[t - 1];

			if (!(sk_atomic_load_relaxed(&ch[i].tag) >>
			      SRCU_TAG_SHIFT) ||
			    !r)
				continue;
			for (j = 0; j < r->n; j++) {
				if (r->bind[j] == d) {
					r->bind[j] = r->bind[--r->n];
					break;
				}
			}
			sk_atomic_store_relaxed(&ch[i].tag, 0UL);
		}
	}
}

/*
 * Why d cannot be released now (NULL: it can).  gp_mutex held; the
 * worker has finished the batch of d it was running, if any.
 */
static const char *cleanup_refusal(struct sk_srcu *d)
{
	if (!sk__wfq_empty(&d->cbq) || d->b_first ||
	    sk_atomic_load_acquire(&d->cb_running))
		return "callbacks pending (call sk_srcu_barrier() first)";
	if (poll_pending(d))
		return "a polled grace period pending";
	if (drained_mask(d, 1) != 3)
		return "readers inside a read-side critical section";
	return NULL;
}

static int cleanup_refused(struct sk_srcu *d, const char *why)
{
	fprintf(stderr,
		"scalekit: thread %ld: sk_srcu_cleanup() on domain %p refused: "
		"%s; the domain is unchanged\n",
		sk__gettid(), (void *)d, why);
	return -EBUSY;
}

int sk_srcu_cleanup(struct sk_srcu *d)
{
	const char *why = NULL;
	unsigned int k;

	if (!d)
		return -EINVAL;
	/*
	 * From a callback of d (the worker's own read of srcu.current): its
	 * batch is pending, and waiting for the worker to leave d below
	 * would wait for ourselves, stopping every domain's callbacks.
	 */
	if (in_srcu_worker && srcu.current == d)
		return cleanup_refused(
			d, "called from one of its callbacks (callbacks pending)");
	pthread_mutex_lock(&d->gp_mutex);
	/*
	 * Let the worker finish with d first: a batch it detached may still
	 * be running (a barrier returns from within it).  It cannot start
	 * another while we hold gp_mutex.
	 */
	pthread_mutex_lock(&srcu.lock);
	while (srcu.current == d)
		pthread_cond_wait(&srcu.idle_cv, &srcu.lock);
	pthread_mutex_unlock(&srcu.lock);
	why = cleanup_refusal(d);
	if (!why) {
		/* Wait until the worker is done with d, then unlist it. */
		pthread_mutex_lock(&srcu.lock);
		while (srcu.current == d)
			pthread_cond_wait(&srcu.idle_cv, &srcu.lock);
		if (d->in_work) {
			sk__link_del(&d->work_link);
			d->in_work = 0;
		}
		unbind_all(d);
		pthread_mutex_unlock(&srcu.lock);
	}
	/*
	 * Refused: the domain stays in use, and the worker may have skipped
	 * it while we held gp_mutex; gp_unlock() kicks it (released: d is
	 * unlisted, no kick).
	 */
	gp_unlock(d);
	if (why)
		return cleanup_refused(d, why);
	/* Every thread's slot cache misses from now on. */
	sk_atomic_store_relaxed(&d->gen, gen_new());
	for (k = 0; d->dir && k < SK_SRCU_MAX_CHUNKS; k++)
		free(d->dir[k]);
	free(d->dir);
	d->dir = NULL;
	d->nchunks = 0;
	sk_atomic_store_relaxed(&d->nlive, 0UL);
	d->idle_valid = 0;
	d->idle_owner = NULL;
	return 0;
}

/* ---- fork ------------------------------------------------------------------ */

/*
 * fork(): only the forking thread exists in the child.  The other
 * threads' indexes are released (their slots keep their counts: a section
 * they left open blocks the child's grace periods of that domain until
 * the child ends it), the worker is restarted on demand, and pending
 * callbacks are dropped in the child (the parent runs them); their heads
 * read as not queued there (the fork generation of internal/cbq.h).  Polled grace periods stay pending until the child's next
 * grace period of the domain.
 */
static void atfork_prepare(void)
{
	pthread_mutex_lock(&srcu.lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&srcu.lock);
}

static void atfork_child(void)
{
	unsigned int t;

	for (t = 1; t <= SRCU_MAX_THREADS; t++) {
		struct srcu_thr *r = srcu.thr[t - 1];

		if (r && r != &my_thr)
			thr_release(r);
		else if (!r && t != my_thr.t)
			srcu.used[(t - 1) / 64] &=
				~((uint64_t)1 << ((t - 1) % 64));
	}
	while (!sk__link_empty(&srcu.work)) {
		struct sk_srcu *d = SK_CONTAINER_OF(srcu.work.next,
						    struct sk_srcu, work_link);

		sk__link_del(&d->work_link);
		if (d == srcu.current) /* the worker may have held it */
			pthread_mutex_init(&d->gp_mutex, NULL);
		pthread_mutex_init(&d->barrier_mutex, NULL);
		/* Dropped; they read as not queued here (sk__cb_fork_gen). */
		sk__wfq_init(&d->cbq);
		d->b_first = d->b_last = NULL;
		d->cb_running = 0;
		d->busy_skip = 0;
		d->cb_queued = d->cb_invoked = 0;
		d->in_work = 0;
	}
	/* Taken by this thread in atfork_prepare(): unlock, not re-init. */
	pthread_mutex_unlock(&srcu.lock);
	pthread_cond_init(&srcu.idle_cv, NULL);
	srcu.current = NULL;
	srcu.worker_started = 0;
	srcu.sleeping = 0;
	srcu.poke = 0;
	in_srcu_worker = 0;
}

__attribute__((constructor)) static void sk_srcu_ctor(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}
