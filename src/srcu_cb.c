/* SPDX-License-Identifier: MIT */
/*
 * SRCU callbacks: sk_call_srcu(), sk_srcu_barrier(), polled starts and
 * the worker thread that runs them for every domain.  The design and the
 * complete legend of barrier pairs: src/internal/srcu.h.
 *
 * Labels placed here (partners in brackets):
 *   SRCU-W1  worker: full fence after storing sleeping [producers' seq_cst
 *            RMW + load of sleeping in worker_poke()/worker_kick()]
 *   SRCU-I   worker: full fence after storing in_work [mark_work()'s
 *            seq_cst load; SRCU-G in srcu_gp.c]
 *   SRCU-J   worker: release of cb_running [acquire in sk_srcu_barrier()]
 * Grace periods are waited for through srcu_gp.c (SRCU-S1 .. SRCU-K).
 *
 * The worker section (worker_poke/kick, worker_main's sleep, worker_ensure)
 * touches only the process-wide worker state; process() is the one SRCU
 * step it runs per listed domain.  A worker shared with rcu_cb.c replaces
 * that section and calls process() through an ops pointer.
 */
#define _GNU_SOURCE
#include "internal/srcu.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>

__thread int sk__srcu_in_worker;

/* ---- worker ---------------------------------------------------------------- */

/*
 * Work was published by a seq_cst RMW (queue tail, poll_req): wake the
 * worker if asleep.  The seq_cst load after that RMW pairs with SRCU-W1 (both
 * in the single total order of seq_cst operations and fences).
 */
static void worker_poke(void)
{
	if (__atomic_load_n(&sk__srcu.sleeping, __ATOMIC_SEQ_CST)) {
		sk_atomic_fetch_add(&sk__srcu.poke, 1);
		sk__futex_wake(&sk__srcu.poke, 1);
	}
}

/*
 * A domain's gp_mutex was released: the worker may have skipped it (and
 * work_visible() hides it until now).  The unconditional increment makes
 * the worker's futex wait, whose value it read before trying the mutex,
 * return at once if it has not slept yet.  The seq_cst RMW then seq_cst
 * load pair with SRCU-W1 as in worker_poke().
 */
void sk__srcu_worker_kick(void)
{
	sk_atomic_fetch_add(&sk__srcu.poke, 1);
	if (__atomic_load_n(&sk__srcu.sleeping, __ATOMIC_SEQ_CST))
		sk__futex_wake(&sk__srcu.poke, 1);
}

/* Work the worker could do on d now, without waiting for anyone. */
static int work_visible(struct sk_srcu *d)
{
	if (d->state->busy_skip)
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
		SK_CONTAINER_OF(h, struct sk_srcu__state, barrier_head);

	sk_atomic_store_release(&st->barrier_done, 1);
	sk__futex_wake(&st->barrier_done, 1);
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
	sk_atomic_xchg(&d->state->in_work, 1);
	/*
	 * SRCU-I: in_work stored before the loads of the work and the trylock's
	 * load of the mutex (store buffering: in C11 a seq_cst RMW does not
	 * order later non-seq_cst loads).  Pairs with the producers' seq_cst
	 * RMW that publishes the work (queue tail, poll_req) followed by
	 * their seq_cst load of in_work in mark_work(): either we see the
	 * work or they see in_work == 1 and announce again; and with SRCU-G in
	 * sk__srcu_gp_unlock().
	 */
	sk_smp_mb();
	if (pthread_mutex_trylock(&d->state->gp_mutex) != 0) {
		/* Its holder kicks us on release (sk__srcu_gp_unlock()). */
		d->state->busy_skip = 1;
		return WORK_PENDING;
	}
	d->state->busy_skip = 0;
	if (!d->state->b_first &&
	    sk__wfq_take(&d->state->cbq, &d->state->b_first, &d->state->b_last))
		d->state->b_gp = sk__srcu_gp_snap(d);
	if (d->state->b_first)
		want = d->state->b_gp;
	req = sk_atomic_load_acquire(&d->state->poll_req);
	if (!gp_done(d, req) && (!want || req > want))
		want = req;
	/* Modular difference, signed: exact across the counters' wrap. */
	backlog = sk_atomic_load_relaxed(&d->state->cb_queued) -
		  d->state->cb_invoked;
	/* Blocked: readers hold want; the worker checks again after a nap. */
	d->state->blocked =
		want &&
		!sk__srcu_advance(d, want,
				  (long)backlog > (long)SRCU_CB_BACKLOG_EXPEDITE
					  ? DRAIN_NONBLOCK_EXP
					  : DRAIN_NONBLOCK);
	if (d->state->b_first && gp_done(d, d->state->b_gp)) {
		first = d->state->b_first;
		last = d->state->b_last;
		/*
		 * Detached but not yet run: sk_srcu_barrier() and cleanup
		 * see it as pending through cb_running.
		 */
		sk_atomic_store_relaxed(&d->state->cb_running, 1);
		sk_atomic_store_relaxed(&d->state->b_first,
					(struct sk_rcu_head *)NULL);
		d->state->b_last = NULL;
	}
	pending = d->state->b_first || sk__srcu_poll_pending(d) ||
		  !sk__wfq_empty(&d->state->cbq);
	pthread_mutex_unlock(&d->state->gp_mutex);

	for (h = first; h; h = next) {
		next = sk__wfq_next(h, last);
		if (h != &d->state->barrier_head)
			n++;
		sk__cb_invoke(h);
	}
	if (!first)
		return pending ? WORK_PENDING : WORK_IDLE;
	/* Release: the producers' backlog estimate after the runs. */
	sk_atomic_store_release(&d->state->cb_invoked,
				d->state->cb_invoked + n);
	/* SRCU-J: release; pairs with the acquire in sk_srcu_barrier(). */
	sk_atomic_store_release(&d->state->cb_running, 0);
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

static void *worker_main(void *arg)
{
	uint64_t ns = SRCU_NAP_MIN_NS;
	int blocked;

	(void)arg;
	sk__srcu_in_worker = 1;
	pthread_setname_np(pthread_self(), "sk-srcu-cb");
	for (;;) {
		int seq = sk_atomic_load_acquire(&sk__srcu.poke);
		int progress = 0, n = 0, len = 0;
		struct sk__link *l;

		pthread_mutex_lock(&sk__srcu.lock);
		for (l = sk__srcu.work.next; l != &sk__srcu.work; l = l->next)
			len++;
		/* Visit each listed domain once, rotating the list. */
		for (n = 0; n < len && !sk__link_empty(&sk__srcu.work); n++) {
			struct sk_srcu *d = srcu_of_link(sk__srcu.work.next);
			int st;

			sk__link_del(&d->state->work_link);
			sk__link_add_tail(&d->state->work_link, &sk__srcu.work);
			sk__srcu.current = d;
			pthread_mutex_unlock(&sk__srcu.lock);
			st = process(d);
			pthread_mutex_lock(&sk__srcu.lock);
			sk__srcu.current = NULL;
			pthread_cond_broadcast(&sk__srcu.idle_cv);
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
				if (sk_atomic_cmpxchg(&d->state->in_work, &one,
						      0))
					sk__link_del(&d->state->work_link);
			}
		}
		pthread_mutex_unlock(&sk__srcu.lock);
		if (progress) {
			ns = SRCU_NAP_MIN_NS;
			continue;
		}
		/*
		 * SRCU-W1: announce the sleep before the re-check loads the
		 * work
		 * (store buffering; the fence because in C11 a seq_cst RMW
		 * does not order later non-seq_cst loads).  Pairs with the
		 * producers' seq_cst RMW that publishes the work followed by
		 * their seq_cst load of sleeping in worker_poke(), and with
		 * sk__srcu_worker_kick()'s increment of poke, which the futex
		 * wait
		 * reads after SRCU-W1: either we see the work or they wake us.
		 */
		sk_atomic_xchg(&sk__srcu.sleeping, 1);
		sk_smp_mb();
		if (!any_work_visible(&blocked)) {
			if (!blocked) {
				sk__futex_wait(&sk__srcu.poke, seq);
			} else {
				/* Readers hold a domain: look again later. */
				sk__futex_wait_ns(&sk__srcu.poke, seq, ns);
				if (ns < SRCU_NAP_MAX_NS)
					ns *= 2;
			}
		}
		sk_atomic_store_relaxed(&sk__srcu.sleeping, 0);
	}
	return NULL;
}

static int worker_ensure(void)
{
	sigset_t all, old;
	pthread_t th;
	int err = 0;

	if (SK_LIKELY(sk_atomic_load_acquire(&sk__srcu.worker_started)))
		return 0;
	pthread_mutex_lock(&sk__srcu.lock);
	if (!sk__srcu.worker_started) {
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		err = -pthread_create(&th, NULL, worker_main, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (!err) {
			pthread_detach(th);
			sk_atomic_store_release(&sk__srcu.worker_started, 1);
		}
	}
	pthread_mutex_unlock(&sk__srcu.lock);
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
	 * SRCU-I in process().  An announcement still unconsumed (2) covers
	 * ours,
	 * as process() consumes it before looking at the work.
	 */
	if (__atomic_load_n(&d->state->in_work, __ATOMIC_SEQ_CST) != 2 &&
	    sk_atomic_xchg(&d->state->in_work, 2) == 0) {
		pthread_mutex_lock(&sk__srcu.lock);
		sk__link_add_tail(&d->state->work_link, &sk__srcu.work);
		pthread_mutex_unlock(&sk__srcu.lock);
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
	sk__srcu_ready(d, "sk_call_srcu()");
	err = worker_ensure();
	if (err)
		return err;
	err = sk__cb_prepare(head, fn, "sk_call_srcu()");
	if (err)
		return err;
	sk__wfq_push(&d->state->cbq, head);
	backlog = sk_atomic_fetch_add_relaxed(&d->state->cb_queued, 1UL) + 1 -
		  sk_atomic_load_relaxed(&d->state->cb_invoked);
	mark_work(d);
	/*
	 * Forward progress under a flood: a producer far ahead of the worker
	 * gives up its CPU once per call (bounded work, no waiting on anyone).
	 */
	if (SK_UNLIKELY((long)backlog > (long)SRCU_CB_THROTTLE) &&
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
	       !sk_atomic_cmpxchg(&d->state->poll_req, &cur, want))
		;
	if (worker_ensure() == 0)
		mark_work(d);
	return (unsigned long)want;
}

void sk_srcu_barrier(struct sk_srcu *d)
{
	int pending;

	sk__srcu_ready(d, "sk_srcu_barrier()");
	if (sk__srcu_in_worker)
		sk__die("sk_srcu_barrier() called from an SRCU callback: it "
			"would wait for itself forever");
	if (sk_srcu_read_lock_held(d))
		sk__die("sk_srcu_barrier() called inside a read-side critical "
			"section of the same SRCU domain %p: it would wait for "
			"itself forever",
			(void *)d);
	pthread_mutex_lock(&d->state->barrier_mutex);
	pthread_mutex_lock(&d->state->gp_mutex);
	/* SRCU-J: acquire of cb_running; pairs with the worker's release after a
	 * batch it detached has run. */
	pending = !sk__wfq_empty(&d->state->cbq) || d->state->b_first ||
		  sk_atomic_load_acquire(&d->state->cb_running);
	sk__srcu_gp_unlock(d);
	if (pending) {
		d->state->barrier_done = 0;
		d->state->barrier_head.state_ = SK__CB_DONE;
		/*
		 * The worker runs the batch in flight to its end before it
		 * takes the queue again, so the barrier head runs after it.
		 */
		if (worker_ensure() == 0 &&
		    sk__cb_prepare(&d->state->barrier_head, barrier_cb,
				   "sk_srcu_barrier()") == 0) {
			sk__wfq_push(&d->state->cbq, &d->state->barrier_head);
			mark_work(d);
			while (!sk_atomic_load_acquire(&d->state->barrier_done))
				sk__futex_wait(&d->state->barrier_done, 0);
		}
	}
	pthread_mutex_unlock(&d->state->barrier_mutex);
}
