/* SPDX-License-Identifier: MIT */
/*
 * SRCU callbacks: sk_call_srcu(), sk_srcu_barrier(), polled starts and
 * the worker thread that runs them for every domain.  The design and the
 * complete legend of barrier pairs: src/internal/srcu.h.
 *
 * Labels placed here (partners in brackets):
 *   SRCU-I   worker: full fence after storing in_work [mark_work()'s
 *            seq_cst load; SRCU-G in srcu_gp.c]
 *   SRCU-J   worker: release of cb_running [acquire in sk_srcu_barrier()]
 * Used from elsewhere: grace periods through srcu_gp.c (SRCU-S1 ..
 * SRCU-K); the worker's sleep and kicks are src/worker.c's (WK-W1/WK-W2
 * in sk__worker_sleep() against WK-K1/WK-K2 in sk__worker_wake(), WK-K3
 * at the start of each round).
 *
 * The worker is a struct sk__worker (internal/worker.h) whose loop visits
 * each listed domain once per round; process() is the one SRCU step it
 * runs per domain.
 */
#define _GNU_SOURCE
#include "internal/srcu.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>

__thread int sk__srcu_in_worker __attribute__((tls_model("initial-exec")));

/* ---- worker -------------------------------------------------------------- */

/*
 * A domain's gp_mutex was released: the worker may have skipped it (and
 * work_visible() hides it until now).  An urgent kick: the worker's
 * re-check before it sleeps reads urgent (WK-K1 .. WK-W2 in
 * src/worker.c), so a kick during its round makes it look again.
 */
void sk__srcu_worker_kick(void)
{
	sk__worker_wake(&sk__srcu.worker, SK__WK_KICK_URGENT);
}

/* Register the kick for srcu_gp.c, before any domain can be used. */
__attribute__((constructor)) static void srcu_cb_init(void)
{
	sk_atomic_store_relaxed(&sk__srcu.kick, sk__srcu_worker_kick);
}

/* Work the worker could do on d now, without waiting for anyone. */
static int work_visible(struct sk_srcu *d)
{
	/* Relaxed: the worker's own flag (a test reads it too). */
	if (sk_atomic_load_relaxed(&d->state->busy_skip))
		return 0; /* the gp_mutex holder kicks us on release */
	if (!sk__wfq_empty(&d->state->cbq))
		return 1;
	if (!d->state->b_first && !sk__srcu_poll_pending(d))
		return 0;
	/* Blocked on readers: the worker's next timed check. */
	return !d->state->blocked;
}

static void barrier_cb(struct sk_rcu_head *h)
{
	struct sk_srcu__state *st =
		SK__CONTAINER_OF(h, struct sk_srcu__state, barrier_head);

	sk_atomic_store_release(&st->barrier_done, 1);
	sk__futex_wake(&st->barrier_done, 1);
}

/*
 * Take d's queue as the batch (when none waits) and advance d's grace
 * periods toward the batch's and the polled ones, as far as the readers
 * allow without blocking.  gp_mutex held.
 */
static void advance(struct sk_srcu *d)
{
	struct sk_srcu__state *st = d->state;
	uint64_t want = 0, req;
	unsigned long backlog;
	int mode;

	if (!st->b_first && sk__wfq_take(&st->cbq, &st->b_first, &st->b_last))
		st->b_gp = sk__srcu_gp_snap(d);
	if (st->b_first)
		want = st->b_gp;
	req = sk_atomic_load_acquire(&st->poll_req);
	if (!gp_done(d, req) && (!want || req > want))
		want = req;
	/* Modular difference, signed: exact across the counters' wrap. */
	backlog = sk_atomic_load_relaxed(&st->cb_queued) - st->cb_invoked;
	mode = (long)backlog > (long)SK__CB_BACKLOG_EXPEDITE
		       ? DRAIN_NONBLOCK_EXP
		       : DRAIN_NONBLOCK;
	/* Blocked: readers hold want; the worker checks again after a nap. */
	st->blocked = want && !sk__srcu_advance(d, want, mode);
}

/* Run a batch detached by process(), first..last; then it is done. */
static void run_detached(struct sk_srcu *d, struct sk_rcu_head *first,
			 struct sk_rcu_head *last)
{
	struct sk_rcu_head *h, *next;
	unsigned long n = 0;

	for (h = first; h; h = next) {
		next = sk__wfq_next(h, last);
		if (h != &d->state->barrier_head)
			n++;
		sk__cb_invoke(h);
	}
	/* Release: the producers' backlog estimate after the runs. */
	sk_atomic_store_release(&d->state->cb_invoked,
				d->state->cb_invoked + n);
	/* SRCU-J: release; pairs with the acquire in sk_srcu_barrier(). */
	sk_atomic_store_release(&d->state->cb_running, 0);
}

/* One step of the worker on d. */
static int process(struct sk_srcu *d)
{
	struct sk_srcu__state *st = d->state;
	struct sk_rcu_head *first = NULL, *last = NULL;
	int pending;

	/*
	 * Consume the announcements (in_work 2 -> 1) before looking at the
	 * work: work announced later makes the unlisting CAS fail.
	 */
	sk_atomic_xchg_seq_cst(&st->in_work, 1);
	/*
	 * SRCU-I: in_work stored before the loads of the work and the
	 * trylock's load of the mutex (store buffering: in C11 a seq_cst RMW
	 * does not order later non-seq_cst loads).  Pairs with the
	 * producers' seq_cst RMW that publishes the work (queue tail,
	 * poll_req) followed by their seq_cst load of in_work in
	 * mark_work(): either we see the work or they see in_work == 1 and
	 * announce again; and with SRCU-G in sk__srcu_gp_unlock().
	 */
	sk_smp_mb();
	if (pthread_mutex_trylock(&st->gp_mutex) != 0) {
		/* Its holder kicks us on release (sk__srcu_gp_unlock()). */
		/* Relaxed: the worker's own flag (a test reads it too). */
		sk_atomic_store_relaxed(&st->busy_skip, 1);
		return WORK_PENDING;
	}
	sk_atomic_store_relaxed(&st->busy_skip, 0);
	advance(d);
	if (st->b_first && gp_done(d, st->b_gp)) {
		first = st->b_first;
		last = st->b_last;
		/*
		 * Detached but not yet run: sk_srcu_barrier() and cleanup
		 * see it as pending through cb_running.
		 */
		sk_atomic_store_relaxed(&st->cb_running, 1);
		sk_atomic_store_relaxed(&st->b_first, (struct sk_rcu_head *)NULL);
		st->b_last = NULL;
	}
	pending = st->b_first || sk__srcu_poll_pending(d) ||
		  !sk__wfq_empty(&st->cbq);
	pthread_mutex_unlock(&st->gp_mutex);
	if (!first)
		return pending ? WORK_PENDING : WORK_IDLE;
	run_detached(d, first, last);
	return WORK_PROGRESS;
}

/* Work the worker can do now; *blocked: some domain waits for readers. */
static int any_work_visible(int *blocked)
{
	struct sk__link *l;
	int vis = 0;

	*blocked = 0;
	pthread_mutex_lock(&sk__srcu.lock);
	for (l = sk__srcu.work.next; l != &sk__srcu.work && !vis; l = l->next) {
		struct sk_srcu *d = srcu_of_link(l);

		vis = work_visible(d);
		*blocked |= d->state->blocked;
	}
	pthread_mutex_unlock(&sk__srcu.lock);
	return vis;
}

/* Naps while readers hold a domain: doubling (worker thread only). */
static uint64_t nap_ns = SRCU_NAP_MIN_NS;

/*
 * The re-check of sk__worker_sleep(): nothing to do unless kicked (the
 * urgent flag, read after WK-W2) or work is visible.  When readers hold
 * a domain, sleep one nap only and double the next one.
 */
static int worker_idle(struct sk__worker *w, uint64_t *timeout_ns)
{
	int blocked;

	if (sk_atomic_load_relaxed(&w->urgent) || any_work_visible(&blocked))
		return 0;
	if (blocked) {
		*timeout_ns = nap_ns;
		if (nap_ns < SRCU_NAP_MAX_NS)
			nap_ns *= 2;
	}
	return 1;
}

/* Unlist d after process() found it idle.  sk__srcu.lock held. */
static void unlist_idle(struct sk_srcu *d)
{
	int one = 1;

	/*
	 * Unlist only if nothing was announced since process() consumed the
	 * announcements (no window where a request is pending and in_work
	 * reads 0).
	 */
	if (sk_atomic_cmpxchg_seq_cst(&d->state->in_work, &one, 0))
		sk__link_del(&d->state->work_link);
}

/* Visit each listed domain once, rotating the list; 1 on progress. */
static int worker_round(void)
{
	int progress = 0, n, len = 0;
	struct sk__link *l;

	pthread_mutex_lock(&sk__srcu.lock);
	for (l = sk__srcu.work.next; l != &sk__srcu.work; l = l->next)
		len++;
	for (n = 0; n < len && !sk__link_empty(&sk__srcu.work); n++) {
		struct sk_srcu *d = srcu_of_link(sk__srcu.work.next);
		int st;

		sk__link_del(&d->state->work_link);
		sk__link_add_tail(&d->state->work_link, &sk__srcu.work);
		sk__srcu.current = d;
		pthread_mutex_unlock(&sk__srcu.lock);
		/* No fork() in the middle of a step (a batch detached). */
		pthread_mutex_lock(&sk__srcu.worker.run_lock);
		st = process(d);
		pthread_mutex_unlock(&sk__srcu.worker.run_lock);
		pthread_mutex_lock(&sk__srcu.lock);
		sk__srcu.current = NULL;
		pthread_cond_broadcast(&sk__srcu.idle_cv);
		if (st == WORK_PROGRESS)
			progress = 1;
		if (st == WORK_IDLE)
			unlist_idle(d);
	}
	pthread_mutex_unlock(&sk__srcu.lock);
	return progress;
}

static void worker_loop(struct sk__worker *w)
{
	sk__srcu_in_worker = 1;
	while (!sk_atomic_load_relaxed(&w->stop)) {
		/* WK-K3: the kicks before the round's look at the domains. */
		sk__worker_take_kicks(w);
		if (worker_round()) {
			nap_ns = SRCU_NAP_MIN_NS;
			continue;
		}
		/*
		 * WK-W1/WK-W2 in it: the sleep announced before the re-check
		 * loads the work; pairs with WK-K2 of the producers
		 * (mark_work()) and of sk__srcu_worker_kick().
		 */
		sk__worker_sleep(w, SK__WK_IDLE, 0, worker_idle);
	}
}

static int worker_ensure(void)
{
	return sk__worker_ensure(&sk__srcu.worker, &sk__srcu.lock,
				 "sk-srcu-cb", worker_loop);
}

/* No attempt to start the worker from sk_call_srcu() before (relaxed). */
static uint64_t retry_ns;

/*
 * sk_call_srcu()'s start of the worker: after a failed start, the next
 * attempt waits 1 ms (as RCU's, sk__rcu_cb_start_worker()).  What is
 * queued meanwhile waits for a later start, or for sk_srcu_barrier(),
 * which does the worker's rounds itself when it cannot start it.
 */
static void worker_start_retry(void)
{
	uint64_t now;

	/* Acquire pairs with WK-S: the fast path, a load. */
	if (SK_LIKELY(sk_atomic_load_acquire(&sk__srcu.worker.started)))
		return;
	now = sk__now_ns();
	if ((int64_t)(now - sk_atomic_load_relaxed(&retry_ns)) < 0)
		return;
	if (worker_ensure() != 0)
		sk_atomic_store_relaxed(&retry_ns, now + 1000000u);
}

/*
 * sk_srcu_barrier() when the worker cannot start: do its rounds on the
 * calling thread (in callback context) until *done, napping while readers
 * hold a domain.
 */
static void rounds_until(int *done)
{
	int was = sk__srcu_in_worker;

	sk__srcu_in_worker = 1;
	/* Acquire: SRCU-J's partner, as in the barrier's own wait. */
	while (!sk_atomic_load_acquire(done))
		if (!worker_round())
			sk__futex_wait_ns(done, 0, SRCU_NAP_MIN_NS);
	sk__srcu_in_worker = was;
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
	 * SRCU-I in process().  An announcement still unconsumed (2) covers
	 * ours,
	 * as process() consumes it before looking at the work.
	 */
	if (__atomic_load_n(&d->state->in_work, __ATOMIC_SEQ_CST) != 2 &&
	    sk_atomic_xchg_seq_cst(&d->state->in_work, 2) == 0) {
		pthread_mutex_lock(&sk__srcu.lock);
		sk__link_add_tail(&d->state->work_link, &sk__srcu.work);
		pthread_mutex_unlock(&sk__srcu.lock);
	}
	/* WK-K2 in it: the publishing RMW before the load of sleeping. */
	sk__worker_wake(&sk__srcu.worker, SK__WK_KICK_IDLE);
}

int sk_call_srcu(struct sk_srcu *d, struct sk_rcu_head *head,
		 void (*fn)(struct sk_rcu_head *))
{
	unsigned long backlog;
	int err;

	if (!d)
		return -EINVAL;
	sk__srcu_ready(d, "sk_call_srcu()");
	err = sk__cb_prepare(head, fn);
	if (err)
		return err;
	/* Queued even when the worker cannot start now: never lost. */
	worker_start_retry();
	sk__wfq_push(&d->state->cbq, head);
	backlog = sk_atomic_fetch_add_relaxed(&d->state->cb_queued, 1UL) + 1 -
		  sk_atomic_load_relaxed(&d->state->cb_invoked);
	mark_work(d);
	/*
	 * Forward progress under a flood: a producer far ahead of the worker
	 * gives up its CPU once per call (bounded work, no waiting on anyone).
	 */
	if (SK_UNLIKELY((long)backlog > (long)SK__CB_THROTTLE) &&
	    !sk__srcu_in_worker)
		sched_yield();
	return 0;
}

unsigned long sk_start_poll_synchronize_srcu(struct sk_srcu *d)
{
	uint64_t want, cur;

	sk__srcu_ready(d, "sk_start_poll_synchronize_srcu()");
	want = sk__srcu_gp_snap(d);
	cur = sk_atomic_load_relaxed(&d->state->poll_req);

	while (want > cur &&
	       !sk_atomic_cmpxchg_seq_cst(&d->state->poll_req, &cur, want))
		;
	/*
	 * Listed even when the worker cannot start now: the request stays on
	 * the worker's list, and the worker drives it once a later call has
	 * started it (a grace period of d run by anyone completes it sooner).
	 */
	(void)worker_ensure();
	mark_work(d);
	return (unsigned long)want;
}

#ifdef SK_TESTING
/* sk__srcu_test_set_barrier_hook() (internal/testing.h). */
static void (*barrier_hook)(struct sk_srcu *d);

void sk__srcu_test_set_barrier_hook(void (*fn)(struct sk_srcu *d))
{
	/* Release: the test's state before the hook runs; pairs with the
	 * acquire in sk_srcu_barrier(). */
	sk_atomic_store_release(&barrier_hook, fn);
}

static void barrier_test_hook(struct sk_srcu *d)
{
	/* Acquire: pairs with the release that set the hook. */
	void (*fn)(struct sk_srcu *) = sk_atomic_load_acquire(&barrier_hook);

	if (fn)
		fn(d);
}
#else
/* A macro, not an empty function: no hook symbol in a release build,
 * even unoptimized (release_clean). */
#define barrier_test_hook(d) ((void)(d))
#endif

/*
 * Take d's barrier_mutex, which a fork child first re-creates.  Another
 * thread of the parent may have held it at fork() (its sk_srcu_barrier()
 * of d in progress) and does not exist in the child; whether d was on the
 * worker's list then or not (an idle domain's barrier holds it too), so
 * the child's fork handler, which reaches only the listed domains, cannot
 * do it.  The first barrier of d in a child does it, under sk__srcu.lock
 * (held across fork(): no thread of the parent was inside), when d's
 * mutex is of an older fork generation (a domain set up in a child, at 0,
 * is re-created once: harmless).  A process that never forked pays two
 * loads.  Every other lock of barrier_mutex passes here after the
 * re-creation, so nobody holds it while it is re-created.
 */
static void barrier_lock(struct sk_srcu__state *st)
{
	/* Relaxed: see sk__srcu.fork_gen. */
	unsigned long gen = sk_atomic_load_relaxed(&sk__srcu.fork_gen);

	/* Acquire: pairs with the release below (the new mutex first). */
	if (SK_UNLIKELY(sk_atomic_load_acquire(&st->barrier_gen) != gen)) {
		pthread_mutex_lock(&sk__srcu.lock);
		/* Relaxed: written only under sk__srcu.lock, which we hold. */
		if (sk_atomic_load_relaxed(&st->barrier_gen) != gen) {
			pthread_mutex_init(&st->barrier_mutex, NULL);
			/* Release: the mutex's re-creation before the new
			 * generation; pairs with the acquire above. */
			sk_atomic_store_release(&st->barrier_gen, gen);
		}
		pthread_mutex_unlock(&sk__srcu.lock);
	}
	pthread_mutex_lock(&st->barrier_mutex);
}

void sk_srcu_barrier(struct sk_srcu *d)
{
	struct sk_rcu_head *h;
	int pending;

	sk__srcu_ready(d, "sk_srcu_barrier()");
	h = &d->state->barrier_head;
	if (sk__srcu_in_worker)
		sk__die("sk_srcu_barrier() called from an SRCU callback: it "
			"would wait for itself forever");
	if (sk_srcu_read_lock_held(d))
		sk__die("sk_srcu_barrier() called inside a read-side critical "
			"section of the same SRCU domain %p: it would wait for "
			"itself forever",
			(void *)d);
	barrier_lock(d->state);
	pthread_mutex_lock(&d->state->gp_mutex);
	/* SRCU-J: acquire of cb_running; pairs with the worker's release after a
	 * batch it detached has run. */
	pending = !sk__wfq_empty(&d->state->cbq) || d->state->b_first ||
		  sk_atomic_load_acquire(&d->state->cb_running);
	sk__srcu_gp_unlock(d);
	barrier_test_hook(d);
	if (pending) {
		/*
		 * The worker runs the batch in flight to its end before it
		 * takes the queue again, so the barrier head runs after it.
		 * barrier_mutex serializes the barriers: the head is not
		 * queued.  The worker may not run (its start failed, or a
		 * fork child inherited the callbacks): start it, or do its
		 * work here.
		 */
		d->state->barrier_done = 0;
		h->func_ = barrier_cb;
		h->state_ = sk__cb_queued_mark(h);
		sk__wfq_push(&d->state->cbq, h);
		mark_work(d);
		if (worker_ensure() != 0)
			rounds_until(&d->state->barrier_done);
		while (!sk_atomic_load_acquire(&d->state->barrier_done))
			sk__futex_wait(&d->state->barrier_done, 0);
	}
	pthread_mutex_unlock(&d->state->barrier_mutex);
}
