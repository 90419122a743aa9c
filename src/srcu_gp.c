/* SPDX-License-Identifier: MIT */
/*
 * SRCU grace periods: the scan-flip-scan state machine, synchronize and
 * the polled state.  The design and the complete legend of barrier pairs:
 * src/internal/srcu.h.
 *
 * Labels placed here (partners in brackets):
 *   SRCU-D   heavy fence between the remote and the count sums [SRCU-B,
 *            SRCU-C in srcu.h and srcu_read.c]
 *   SRCU-Z   full barrier before gp_idle() reads binds/nlive [SRCU-P]
 *   SRCU-X   acquire of nlive in gp_idle() [release in srcu_read.c]
 *   SRCU-N   acquire of nchunks and dir[k] in sums() [srcu_read.c]
 *   SRCU-S1  full barrier before the grace-period snapshot [the updates]
 *   SRCU-E, SRCU-F  full barriers around the flip
 *   SRCU-K   release of gp_completed [acquire in gp_done()]
 *   SRCU-G   full fence after releasing gp_mutex [SRCU-I in srcu_cb.c]
 */
#define _GNU_SOURCE
#include "internal/srcu.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

static void __attribute__((noreturn))
die_unbalanced_gp(struct sk_srcu *d, int bit)
{
	sk__die("unbalanced sk_srcu_read_unlock() on domain %p, found by a "
		"grace period: index %d was ended more often than it was "
		"entered",
		(void *)d, bit);
}

/* ---- grace periods ------------------------------------------------------- */

/*
 * Sums of both indexes: counts, starts less the owner's ends (which = 0),
 * or ends by other threads (which = 1: remote[]); the shared counters
 * count starts in cnt[] and all their ends in remote[].  Acquire of
 * nchunks: every chunk published before (SRCU-N).
 */
static const unsigned long *slot_ctrs(struct sk_srcu_slot *s, int which)
{
	return which ? s->remote : s->cnt;
}

static void sums(struct sk_srcu *d, int which, unsigned long out[2])
{
	struct sk_srcu_slot **dir = sk_atomic_load_acquire(&d->state->dir);
	unsigned int k, n = sk_atomic_load_acquire(&d->state->nchunks);
	unsigned long s0, s1;
	int i;

	const unsigned long *c = slot_ctrs(&d->state->shared, which);

	s0 = sk_atomic_load_relaxed(&c[0]);
	s1 = sk_atomic_load_relaxed(&c[1]);
	for (k = 0; dir && k < n; k++) {
		struct sk_srcu_slot *ch = sk_atomic_load_acquire(&dir[k]);

		for (i = 0; ch && i < SK__SRCU_CHUNK_SLOTS; i++) {
			c = slot_ctrs(&ch[i], which);
			s0 += sk_atomic_load_relaxed(&c[0]);
			s1 += sk_atomic_load_relaxed(&c[1]);
		}
	}
	out[0] = s0;
	out[1] = s1;
}

/*
 * Which indexes hold no reader: bit i of the result set when index i is
 * drained.  heavy: the real check (SRCU-D between the sums); otherwise a cheap
 * estimate to decide whether the real check is worth its heavy fence.
 */
int sk__srcu_drained_mask(struct sk_srcu *d, int heavy)
{
	unsigned long u[2], l[2];

	sums(d, 1, u);
	if (heavy)
		sk_fence_heavy(); /* SRCU-D: remote sums before count sums;
				     pairs with SRCU-B and SRCU-C */
	else
		sk_smp_rmb(); /* estimate only: no pairing with readers */
	sums(d, 0, l);
	if (heavy && u[0] == l[0] && u[1] == l[1])
		SK_TSAN_ACQUIRE(
			d); /* readers' accesses before (SRCU-D + SRCU-C) */
	/*
	 * After SRCU-D every counted remote end has its start counted
	 * (SRCU-C/SRCU-D; a hand-off orders the start before the remote
	 * end), and a count holds its owner's starts and ends together: more
	 * ends elsewhere than counted is an unbalanced unlock (one that
	 * slipped past the unlock's check).
	 */
	if (heavy && ((long)(u[0] - l[0]) > 0 || (long)(u[1] - l[1]) > 0))
		die_unbalanced_gp(d, (long)(u[0] - l[0]) > 0 ? 0 : 1);
	return (u[0] == l[0]) | (u[1] == l[1]) << 1;
}

/* No reader holds a section on index bit (see the header comment). */
static int readers_gone(struct sk_srcu *d, int bit)
{
	if (!(sk__srcu_drained_mask(d, 1) >> bit & 1))
		return 0;
	/* Readers' accesses happen before (SRCU-D + SRCU-C); tell TSan. */
	SK_TSAN_ACQUIRE(d);
	return 1;
}

/* readers_gone(), with the heavy fence only when the estimate agrees. */
static int readers_gone_retry(struct sk_srcu *d, int bit)
{
	return (sk__srcu_drained_mask(d, 0) >> bit & 1) && readers_gone(d, bit);
}

/* What gp_idle() compares with the snapshot of the last idle check. */
struct idle_view {
	unsigned long nlive, shared[2];
	uint64_t binds;
	struct sk_srcu_slot *me; /* caller's slot in d, if it took one */
};

static void idle_view(struct sk_srcu *d, struct idle_view *v)
{
	/* SRCU-X: acquire, so exited threads' counts are visible. */
	v->nlive = sk_atomic_load_acquire(&d->state->nlive);
	v->binds = sk_atomic_load_acquire(&d->state->binds);
	v->shared[0] = sk_atomic_load_acquire(&d->state->shared.cnt[0]);
	v->shared[1] = sk_atomic_load_acquire(&d->state->shared.cnt[1]);
	v->me = v->nlive ? sk__srcu_my_slot(d) : NULL;
}

/* At most the caller lives among the threads with a slot in d. */
static int only_caller_lives(const struct idle_view *v)
{
	return v->nlive == (v->me ? 1UL : 0UL);
}

/*
 * The shared counters still at the snapshot, where every shared section
 * had ended (starts cnt[i] = ends remote[i] = idle_shared[i]): the ends
 * first (acquire: the sections they count are over), then the starts.
 * Equal starts alone would not do once the counters wrap (2^N more
 * sections, one of them open, restore the start count); with the ends
 * read first, both equal means no section was open then nor started
 * since (fewer than 2^N between two loads).
 */
static int shared_idle(struct sk_srcu *d)
{
	int i;

	for (i = 0; i < 2; i++)
		if (sk_atomic_load_acquire(&d->state->shared.remote[i]) !=
		    d->state->idle_shared[i])
			return 0;
	for (i = 0; i < 2; i++)
		if (sk_atomic_load_acquire(&d->state->shared.cnt[i]) !=
		    d->state->idle_shared[i])
			return 0;
	return 1;
}

/*
 * The snapshot's owner (the caller, or a thread since exited: its counts
 * are visible, program order or SRCU-X) has no section open: its ends by
 * other threads (acquire: the sections they count are over), read first,
 * and its count (starts less its own ends) both still equal to its count
 * then, when all of its sections had ended.  Count = ends elsewhere means
 * none is open (fewer than 2^N at once); sections it began and ended
 * since are over, and its own counts are visible to it, so nothing of
 * the owner is left to wait for.
 */
static int owner_idle(struct sk_srcu *d)
{
	struct sk_srcu_slot *s = d->state->idle_owner;
	unsigned long ends;

	if (!s)
		return 1;
	ends = sk_atomic_load_acquire(&s->remote[0]) +
	       sk_atomic_load_acquire(&s->remote[1]);
	return ends == d->state->idle_owner_count &&
	       slot_counts(s) == d->state->idle_owner_count;
}

/*
 * SRCU-Z: a domain with no live reader thread but the caller (outside any
 * section) and no section open or started since it was last found without
 * readers: nothing to wait for, no heavy fence.  A new section needs a new
 * thread slot (binds, 64-bit: exact), a shared counter or the one thread
 * that lived then (idle_owner; the caller, or since exited): unchanged.
 * Sections that begin after these loads see the caller's updates: the
 * caller issued a full barrier before them (the gp start), a binding
 * thread one after binds++ (SRCU-P), a shared reader an RMW and a full barrier.
 * gp_mutex held.
 */
static int gp_idle(struct sk_srcu *d)
{
	struct idle_view v;

	if (!d->state->idle_valid)
		return 0;
	idle_view(d, &v);
	if (v.binds != d->state->idle_binds || !only_caller_lives(&v) ||
	    (v.me && v.me != d->state->idle_owner) || !shared_idle(d) ||
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
 * gp_idle().  The caller does not lock meanwhile: its count is stable.
 * gp_mutex held.
 */
static int gp_first_check(struct sk_srcu *d)
{
	struct idle_view v0, v1;
	int mask;

	d->state->idle_valid = 0;
	idle_view(d, &v0);
	mask = sk__srcu_drained_mask(d, 1);
	if (mask != 3 || !only_caller_lives(&v0))
		return mask;
	/* Loads of the sums before the second view. */
	sk_smp_rmb();
	idle_view(d, &v1);
	if (v1.nlive == v0.nlive && v1.binds == v0.binds &&
	    v1.shared[0] == v0.shared[0] && v1.shared[1] == v0.shared[1] &&
	    v1.me == v0.me) {
		d->state->idle_binds = v0.binds;
		d->state->idle_shared[0] = v0.shared[0];
		d->state->idle_shared[1] = v0.shared[1];
		d->state->idle_owner = v0.me;
		d->state->idle_owner_count = v0.me ? slot_counts(v0.me) : 0;
		d->state->idle_valid = 1;
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

/*
 * The same for a cookie: compared by difference with the truncated count,
 * so that it holds across the wrap of unsigned long.  A cookie is never
 * more than 2 ahead of the completed count; one that fell more than
 * LONG_MAX grace periods behind reads as not completed (false negative).
 */
static int cookie_done(struct sk_srcu *d, unsigned long cookie)
{
	unsigned long c =
		(unsigned long)sk_atomic_load_acquire(&d->state->gp_completed);

	return cookie == SK_RCU_COOKIE_COMPLETED || (long)(c - cookie) >= 0;
}

/* Number of a grace period that starts after the call. */
uint64_t sk__srcu_gp_snap(struct sk_srcu *d)
{
	/* SRCU-S1: the caller's updates before the snapshot. */
	sk_smp_mb();
	return gp_next(sk_atomic_load_acquire(&d->state->gp_started));
}

static void gp_flip(struct sk_srcu *d)
{
	/* SRCU-E: the first drain before the flip. */
	sk_smp_mb();
	sk_atomic_store_relaxed(&d->idx, d->idx + 1);
	/* SRCU-F: the flip before draining the old index. */
	sk_smp_mb();
	d->state->gp_phase = 2;
}

static void gp_complete(struct sk_srcu *d)
{
	d->state->gp_phase = 0;
	d->state->stats_gps++;
	/* SRCU-K: release; pairs with the acquire in gp_done(). */
	sk_atomic_store_release(&d->state->gp_completed, d->state->gp_started);
}

/*
 * Advance d's grace periods until target has completed.  gp_mutex held.
 * Returns 1 when done, 0 when mode is nonblocking and readers remain.
 */
int sk__srcu_advance(struct sk_srcu *d, uint64_t target, int mode)
{
	while (!gp_done(d, target)) {
		if (d->state->gp_phase == 0) {
			int mask;

			sk_atomic_store_relaxed(&d->state->gp_started,
						gp_next(d->state->gp_started));
			d->state->gp_phase = 1;
			/*
			 * SRCU-Z: the start (and the updates) before the
			 * checks; pairs with SRCU-P (store buffering with a
			 * binding thread).
			 */
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
		if (d->state->gp_phase == 1) {
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

int sk__srcu_poll_pending(struct sk_srcu *d)
{
	return !gp_done(d, sk_atomic_load_acquire(&d->state->poll_req));
}

/* Release gp_mutex; the worker may have skipped d while we held it. */
void sk__srcu_gp_unlock(struct sk_srcu *d)
{
	pthread_mutex_unlock(&d->state->gp_mutex);
	/*
	 * SRCU-G: the unlock before the load of in_work (store buffering; the
	 * unlock is only a release, which orders no later load); pairs with
	 * SRCU-I in process(): either its trylock sees the mutex free, or we
	 * see
	 * the in_work it stored before trying and kick it.
	 */
	sk_smp_mb();
	if (__atomic_load_n(&d->state->in_work, __ATOMIC_SEQ_CST)) {
		/* Up to srcu_cb.c through its hook (src/layers.txt). */
		void (*kick)(void) = sk_atomic_load_relaxed(&sk__srcu.kick);

		if (kick)
			kick();
	}
}

static void synchronize(struct sk_srcu *d, int mode, const char *fn)
{
	uint64_t target;

	sk__srcu_ready(d, fn);
	if (sk_srcu_read_lock_held(d))
		sk__die("%s called inside a read-side critical section of the "
			"same SRCU domain %p: it would wait for itself forever",
			fn, (void *)d);
	target = sk__srcu_gp_snap(d);
	pthread_mutex_lock(&d->state->gp_mutex);
	sk__srcu_advance(d, target, mode);
	sk__srcu_gp_unlock(d);
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
	sk__srcu_ready(d, "sk_get_state_synchronize_srcu()");
	return (unsigned long)sk__srcu_gp_snap(d);
}

int sk_poll_state_synchronize_srcu(struct sk_srcu *d, unsigned long cookie)
{
	/*
	 * Released by sk_srcu_destroy(): it found no reader inside a section
	 * and none may start one since, so every grace period has elapsed.
	 */
	if (!d->state) {
		sk_smp_mb(); /* as below */
		return 1;
	}
	sk__srcu_ready(d, "sk_poll_state_synchronize_srcu()");
	if (!cookie_done(d, cookie))
		return 0;
	/* Later frees after the observed completion (SRCU-K's acquire). */
	sk_smp_mb();
	return 1;
}

#ifdef SK_TESTING
/* Test hook (internal/testing.h): number d's grace periods from seq on. */
void sk__srcu_test_set_seq(struct sk_srcu *d, uint64_t seq)
{
	sk__srcu_ready(d, "sk__srcu_test_set_seq()");
	pthread_mutex_lock(&d->state->gp_mutex);
	sk_atomic_store_relaxed(&d->state->gp_started, seq);
	sk_atomic_store_relaxed(&d->state->poll_req, seq);
	sk_atomic_store_release(&d->state->gp_completed, seq);
	sk__srcu_gp_unlock(d);
}
#endif
