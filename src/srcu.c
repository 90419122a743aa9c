/* SPDX-License-Identifier: MIT */
/*
 * SRCU: sleepable RCU domains.
 *
 * Counters.  Every thread that reads gets a small index (thread index,
 * shared by all domains, recycled when the thread exits).  In each domain
 * it owns one slot: lock[2] and unlock[2], written only by itself with a
 * plain load and store, and remote[2], to which other threads add (atomic)
 * when they end one of its sections.  A reader increments lock[i] where i
 * is the low bit of d->idx; the unlock increments the counter of the same
 * i.  Only sums over all slots matter, so a recycled slot simply keeps
 * counting.  Threads without a slot (index space exhausted, out of memory)
 * use d->shared with atomic adds.
 *
 * Grace period (kernel SRCU's scan-flip-scan):
 *   1. drain index i' = !(idx & 1): stale readers that picked up i' before
 *      the previous flip;
 *   2. flip idx, so new readers use i';
 *   3. drain the old index.
 * Draining index i: sum the unlock counts, heavy fence D, sum the lock
 * counts; equal sums mean no reader holds a section on i.
 *
 * Barrier pairs:
 *   B (reader, light, after lock[i]++)  - pairs with D: if the lock sum
 *       missed the increment, the section's loads come after D and see
 *       every update made before the grace period started.
 *   C (reader, light, before unlock++)  - pairs with D: a counted unlock
 *       means the section's accesses are done (and its lock is counted,
 *       as the lock sum is read after D).
 *   C2 (reader, light) / W (updater, heavy after waiters = 1) - store
 *       buffering: either the updater sees the unlock, or the reader sees
 *       waiters and wakes it.
 *   S1 (caller, sk_smp_mb before the cookie) and E/F (full barriers around
 *       the flip) order the updates, the scans and the flip.
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
 * state machine as far as the readers allow and moves on; the readers of
 * a domain it waits for wake it through d->waiters.
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

/* Drain checks (each a heavy fence) before sleeping or yielding. */
#define SRCU_SPIN_CHECKS 8

enum { DRAIN_NONBLOCK, DRAIN_SLEEP, DRAIN_EXPEDITE };
enum { WORK_IDLE, WORK_PENDING, WORK_PROGRESS };

__thread unsigned int sk_srcu__tidx __attribute__((tls_model("initial-exec")));
static __thread int in_srcu_worker;

static struct {
	pthread_mutex_t lock; /* thread indexes, work list, worker start */
	uint64_t used[SRCU_MAX_THREADS / 64]; /* thread indexes taken */
	pthread_key_t key;		      /* frees the index at exit */
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

/* ---- thread indexes ----------------------------------------------------- */

static void tidx_exit(void *arg)
{
	unsigned int i = (unsigned int)(uintptr_t)arg - 1;

	pthread_mutex_lock(&srcu.lock);
	srcu.used[i / 64] &= ~((uint64_t)1 << (i % 64));
	pthread_mutex_unlock(&srcu.lock);
	sk_srcu__tidx = 0;
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
	pthread_mutex_unlock(&srcu.lock);
	if (t) {
		pthread_setspecific(srcu.key, (void *)(uintptr_t)t);
		sk_srcu__tidx = t;
	}
	return t;
}

/* ---- slots ---------------------------------------------------------------- */

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

		if (!nc)
			return NULL;
		memset(nc, 0, SK_SRCU_CHUNK_SLOTS * sizeof(*nc));
		/* Release: the zeroed slots before the pointer. */
		if (!__atomic_compare_exchange_n(&dir[k], &ch, nc, 0,
						 __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE)) {
			free(nc);
		} else {
			unsigned int n = sk_atomic_load_relaxed(&d->nchunks);

			ch = nc;
			/* Scanners look at dir[0..nchunks); raise it (max). */
			while (n < k + 1 &&
			       !sk_atomic_cmpxchg(&d->nchunks, &n, k + 1))
				;
		}
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

int sk_srcu__read_lock_slow(struct sk_srcu *d)
{
	unsigned int t = sk_srcu__tidx;
	struct sk_srcu_slot *s;
	int bit;

	if (!t)
		t = tidx_get();
	s = t ? slot_get(d, t) : NULL;
	bit = (int)(sk_atomic_load_relaxed(&d->idx) & 1);
	if (!s) {
		/* Shared counters; the RMW is a full barrier (B). */
		sk_atomic_fetch_add(&d->shared.lock[bit], 1UL);
		return bit;
	}
	sk_atomic_store_relaxed(&s->lock[bit],
				sk_atomic_load_relaxed(&s->lock[bit]) + 1);
	/* B: lock count before the section; pairs with D. */
	sk_fence_light();
	return (int)(t << 1) | bit;
}

void sk_srcu__read_unlock_slow(struct sk_srcu *d, int idx)
{
	unsigned int owner = (unsigned int)idx >> 1;
	int bit = idx & 1;
	struct sk_srcu_slot *s;

	if (idx < 0)
		sk__die("unbalanced sk_srcu_read_unlock() on domain %p: more "
			"unlocks than locks by this thread",
			(void *)d);
	if (owner == 0) {
		/* C: the RMW is a full barrier. */
		sk_atomic_fetch_add(&d->shared.unlock[bit], 1UL);
		return;
	}
	s = slot_find(d, owner);
	if (!s)
		sk__die("sk_srcu_read_unlock(): index %d was not returned by "
			"sk_srcu_read_lock() on domain %p",
			idx, (void *)d);
	/* Another thread's section: count it in its remote[] (C: RMW). */
	sk_atomic_fetch_add(&s->remote[bit], 1UL);
	if (sk_atomic_load_relaxed(&s->unlock[bit]) +
		    sk_atomic_load_relaxed(&s->remote[bit]) >
	    sk_atomic_load_relaxed(&s->lock[bit]))
		sk__die("unbalanced sk_srcu_read_unlock() on domain %p: index "
			"%d ended more often than it was entered",
			(void *)d, idx);
}

int sk_srcu_read_lock_held(struct sk_srcu *d)
{
	struct sk_srcu_slot *s;
	long held;

	if (!d)
		return 0;
	s = slot_find(d, sk_srcu__tidx);
	if (!s)
		return 0;
	held = (long)(sk_atomic_load_relaxed(&s->lock[0]) +
		      sk_atomic_load_relaxed(&s->lock[1]) -
		      sk_atomic_load_relaxed(&s->unlock[0]) -
		      sk_atomic_load_relaxed(&s->unlock[1]) -
		      sk_atomic_load_relaxed(&s->remote[0]) -
		      sk_atomic_load_relaxed(&s->remote[1]));
	return held > 0;
}

/* ---- grace periods ------------------------------------------------------- */

/* Sum of lock (which = 0) or unlock (which = 1) counts of index bit. */
static unsigned long sum_counts(struct sk_srcu *d, int bit, int which)
{
	struct sk_srcu_slot **dir = sk_atomic_load_acquire(&d->dir);
	unsigned int k, n = sk_atomic_load_acquire(&d->nchunks);
	unsigned long sum;
	int i;

	sum = which ? sk_atomic_load_relaxed(&d->shared.unlock[bit])
		    : sk_atomic_load_relaxed(&d->shared.lock[bit]);
	for (k = 0; dir && k < n; k++) {
		struct sk_srcu_slot *ch = sk_atomic_load_acquire(&dir[k]);

		for (i = 0; ch && i < SK_SRCU_CHUNK_SLOTS; i++) {
			if (which)
				sum += sk_atomic_load_relaxed(&ch[i].unlock[bit]) +
				       sk_atomic_load_relaxed(&ch[i].remote[bit]);
			else
				sum += sk_atomic_load_relaxed(&ch[i].lock[bit]);
		}
	}
	return sum;
}

/* No reader holds a section on index bit (see the header comment). */
static int readers_gone(struct sk_srcu *d, int bit)
{
	unsigned long unlocks = sum_counts(d, bit, 1);

	/* D: unlock sum before lock sum; pairs with B and C. */
	sk_fence_heavy();
	if (sum_counts(d, bit, 0) != unlocks)
		return 0;
	/* The readers' accesses happen before (D + C), invisible to TSan. */
	SK_TSAN_ACQUIRE(d);
	return 1;
}

/* Wait until index bit is drained.  Returns 0 only for DRAIN_NONBLOCK. */
static int drain(struct sk_srcu *d, int bit, int mode)
{
	int tries;

	for (tries = 0;; tries++) {
		if (readers_gone(d, bit))
			return 1;
		if (tries < SRCU_SPIN_CHECKS) {
			sk_cpu_relax();
			continue;
		}
		if (mode == DRAIN_EXPEDITE) {
			sched_yield();
			continue;
		}
		sk_atomic_xchg(&d->waiters, 1);
		/* W: waiters = 1 before the sums; pairs with C2. */
		sk_fence_heavy();
		if (readers_gone(d, bit)) {
			sk_atomic_store_relaxed(&d->waiters, 0);
			return 1;
		}
		if (mode == DRAIN_NONBLOCK)
			return 0; /* waiters stays set: a reader pokes the worker */
		sk__futex_wait(&d->waiters, 1);
	}
}

static int gp_done(struct sk_srcu *d, unsigned long target)
{
	return (long)(sk_atomic_load_acquire(&d->gp_completed) - target) >= 0;
}

static unsigned long gp_snap(struct sk_srcu *d)
{
	/* S1: the caller's updates before the snapshot. */
	sk_smp_mb();
	return sk_atomic_load_acquire(&d->gp_started) + 1;
}

/*
 * Advance d's grace periods until target has completed.  gp_mutex held.
 * Returns 1 when done, 0 when mode is DRAIN_NONBLOCK and readers remain.
 */
static int advance(struct sk_srcu *d, unsigned long target, int mode)
{
	while (!gp_done(d, target)) {
		if (d->gp_phase == 0) {
			sk_atomic_store_relaxed(&d->gp_started,
						d->gp_started + 1);
			d->gp_phase = 1;
			/* Orders the start before the first drain's sums. */
			sk_smp_mb();
		}
		if (d->gp_phase == 1) {
			if (!drain(d, (int)(d->idx & 1) ^ 1, mode))
				return 0;
			/* E: the first drain before the flip. */
			sk_smp_mb();
			sk_atomic_store_relaxed(&d->idx, d->idx + 1);
			/* F: the flip before draining the old index. */
			sk_smp_mb();
			d->gp_phase = 2;
		}
		if (!drain(d, (int)(d->idx & 1) ^ 1, mode))
			return 0;
		d->gp_phase = 0;
		d->stats_gps++;
		/* Release: pairs with the acquire in gp_done(). */
		sk_atomic_store_release(&d->gp_completed, d->gp_started);
	}
	return 1;
}

static void worker_poke(void);

static void synchronize(struct sk_srcu *d, int mode, const char *fn)
{
	unsigned long target;

	if (sk_srcu_read_lock_held(d))
		sk__die("%s called inside a read-side critical section of the "
			"same SRCU domain %p: it would wait for itself forever",
			fn, (void *)d);
	target = gp_snap(d);
	pthread_mutex_lock(&d->gp_mutex);
	advance(d, target, mode);
	pthread_mutex_unlock(&d->gp_mutex);
	/* The worker may have skipped d while we held gp_mutex. */
	if (sk_atomic_load_relaxed(&d->in_work))
		worker_poke();
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
	return gp_snap(d);
}

int sk_poll_state_synchronize_srcu(struct sk_srcu *d, unsigned long cookie)
{
	if (!gp_done(d, cookie))
		return 0;
	/* Later frees after the observed completion. */
	sk_smp_mb();
	return 1;
}

/* ---- worker ---------------------------------------------------------------- */

static void worker_poke(void)
{
	/* Callers issued a full barrier (an RMW) since publishing work. */
	if (__atomic_load_n(&srcu.sleeping, __ATOMIC_SEQ_CST)) {
		sk_atomic_fetch_add(&srcu.poke, 1);
		sk__futex_wake(&srcu.poke, 1);
	}
}

void sk_srcu__wake(struct sk_srcu *d)
{
	if (sk_atomic_xchg(&d->waiters, 0)) {
		sk__futex_wake(&d->waiters, 0x7fffffff);
		worker_poke();
	}
}

static int poll_pending(struct sk_srcu *d)
{
	return !gp_done(d, sk_atomic_load_acquire(&d->poll_req));
}

/* Work the worker could do on d now, without waiting for readers. */
static int work_visible(struct sk_srcu *d)
{
	if (!sk__wfq_empty(&d->cbq))
		return 1;
	if (!d->b_first && !poll_pending(d))
		return 0;
	/* Blocked on readers: visible once one of them cleared waiters. */
	return !__atomic_load_n(&d->waiters, __ATOMIC_SEQ_CST);
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
	unsigned long want = 0, req;
	int pending;

	if (pthread_mutex_trylock(&d->gp_mutex) != 0)
		return WORK_PENDING; /* a synchronize caller pokes us after */
	if (!d->b_first && sk__wfq_take(&d->cbq, &d->b_first, &d->b_last))
		d->b_gp = gp_snap(d);
	if (d->b_first)
		want = d->b_gp;
	req = sk_atomic_load_acquire(&d->poll_req);
	if (!gp_done(d, req) && (!want || (long)(req - want) > 0))
		want = req;
	if (want)
		advance(d, want, DRAIN_NONBLOCK);
	if (d->b_first && gp_done(d, d->b_gp)) {
		first = d->b_first;
		last = d->b_last;
		sk_atomic_store_relaxed(&d->b_first,
					(struct sk_rcu_head *)NULL);
		d->b_last = NULL;
	}
	pending = d->b_first || poll_pending(d) || !sk__wfq_empty(&d->cbq);
	pthread_mutex_unlock(&d->gp_mutex);

	for (h = first; h; h = next) {
		next = sk__wfq_next(h, last);
		sk__cb_invoke(h);
	}
	if (first)
		return WORK_PROGRESS;
	return pending ? WORK_PENDING : WORK_IDLE;
}

static int any_work_visible(void)
{
	struct sk__link *l;
	int vis = 0;

	pthread_mutex_lock(&srcu.lock);
	for (l = srcu.work.next; l != &srcu.work && !vis; l = l->next)
		vis = work_visible(SK_CONTAINER_OF(l, struct sk_srcu,
						   work_link));
	pthread_mutex_unlock(&srcu.lock);
	return vis;
}

static void *worker_main(void *arg)
{
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
				sk__link_del(&d->work_link);
				sk_atomic_xchg(&d->in_work, 0);
				/* Work queued meanwhile: keep the domain listed. */
				if (!sk__wfq_empty(&d->cbq) &&
				    !sk_atomic_xchg(&d->in_work, 1))
					sk__link_add_tail(&d->work_link,
							  &srcu.work);
			}
		}
		pthread_mutex_unlock(&srcu.lock);
		if (progress)
			continue;
		sk_atomic_xchg(&srcu.sleeping, 1);
		if (!any_work_visible())
			sk__futex_wait(&srcu.poke, seq);
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

/* Put d on the worker's list (if not there) and wake the worker. */
static void mark_work(struct sk_srcu *d)
{
	if (!sk_atomic_load_relaxed(&d->in_work) &&
	    !sk_atomic_xchg(&d->in_work, 1)) {
		pthread_mutex_lock(&srcu.lock);
		sk__link_add_tail(&d->work_link, &srcu.work);
		pthread_mutex_unlock(&srcu.lock);
	}
	worker_poke();
}

int sk_call_srcu(struct sk_srcu *d, struct sk_rcu_head *head,
		 void (*fn)(struct sk_rcu_head *))
{
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
	mark_work(d);
	return 0;
}

unsigned long sk_start_poll_synchronize_srcu(struct sk_srcu *d)
{
	unsigned long cookie = gp_snap(d);
	unsigned long cur = sk_atomic_load_relaxed(&d->poll_req);

	while ((long)(cookie - cur) > 0 &&
	       !sk_atomic_cmpxchg(&d->poll_req, &cur, cookie))
		;
	if (worker_ensure() == 0)
		mark_work(d);
	return cookie;
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
	pending = !sk__wfq_empty(&d->cbq) || d->b_first;
	pthread_mutex_unlock(&d->gp_mutex);
	if (pending) {
		d->barrier_done = 0;
		d->barrier_head.state_ = SK__CB_DONE;
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
	if (!d)
		return -EINVAL;
	memset(d, 0, sizeof(*d));
	pthread_mutex_init(&d->gp_mutex, NULL);
	pthread_mutex_init(&d->barrier_mutex, NULL);
	sk__wfq_init(&d->cbq);
	sk__link_init(&d->work_link);
	return 0;
}

int sk_srcu_cleanup(struct sk_srcu *d)
{
	const char *why = NULL;
	unsigned int k;

	if (!d)
		return -EINVAL;
	pthread_mutex_lock(&d->gp_mutex);
	if (!sk__wfq_empty(&d->cbq) || d->b_first)
		why = "callbacks pending (call sk_srcu_barrier() first)";
	else if (poll_pending(d))
		why = "a polled grace period pending";
	else if (!readers_gone(d, 0) || !readers_gone(d, 1))
		why = "readers inside a read-side critical section";
	if (!why) {
		/* Wait until the worker is done with d, then unlist it. */
		pthread_mutex_lock(&srcu.lock);
		while (srcu.current == d)
			pthread_cond_wait(&srcu.idle_cv, &srcu.lock);
		if (d->in_work) {
			sk__link_del(&d->work_link);
			d->in_work = 0;
		}
		pthread_mutex_unlock(&srcu.lock);
	}
	pthread_mutex_unlock(&d->gp_mutex);
	if (why) {
		fprintf(stderr,
			"scalekit: thread %ld: sk_srcu_cleanup() on domain %p "
			"refused: %s; the domain is unchanged\n",
			sk__gettid(), (void *)d, why);
		return -EBUSY;
	}
	for (k = 0; d->dir && k < SK_SRCU_MAX_CHUNKS; k++)
		free(d->dir[k]);
	free(d->dir);
	d->dir = NULL;
	d->nchunks = 0;
	return 0;
}
