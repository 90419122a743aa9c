/* SPDX-License-Identifier: MIT */
/*
 * SRCU domains: init, cleanup and fork, the top layer of the module (it
 * calls every other file; src/layers.txt).  The process-wide state and a
 * domain's first-use setup are srcu_state.c's.  The design and the
 * complete legend of barrier pairs: src/internal/srcu.h.
 * cleanup's drain check is SRCU-D (srcu_gp.c); its unlock is SRCU-G.
 */
#define _GNU_SOURCE
#include "internal/srcu.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* ---- domains ------------------------------------------------------------- */

int sk_srcu_init(struct sk_srcu *d)
{
	struct sk_srcu__state *st;

	if (!d || (uintptr_t)d % SK_CACHELINE)
		return -EINVAL;
	st = aligned_alloc(SK_CACHELINE, sizeof(*st));
	if (!st)
		return -ENOMEM;
	memset(st, 0, sizeof(*st));
	memset(d, 0, sizeof(*d));
	sk__srcu_state_setup(d, st);
	st->owned = 1;
	st->ready = 2;
	d->state = st;
	return 0;
}

/* Remove d from the binding lists of its slots' owners.  sk__srcu.lock held. */
static void unbind_all(struct sk_srcu *d)
{
	unsigned int k, i, j;

	for (k = 0; d->state->dir && k < d->state->nchunks; k++) {
		struct sk_srcu_slot *ch = d->state->dir[k];

		for (i = 0; ch && i < SK__SRCU_CHUNK_SLOTS; i++) {
			unsigned int t = k * SK__SRCU_CHUNK_SLOTS + i + 1;
			struct srcu_thr *r = sk__srcu.thr[t - 1];

			if (!(sk_atomic_load_relaxed(slot_tag(&ch[i], t)) >>
			      SRCU_TAG_SHIFT) ||
			    !r)
				continue;
			for (j = 0; j < r->n; j++) {
				if (r->bind[j] == d) {
					r->bind[j] = r->bind[--r->n];
					break;
				}
			}
			sk_atomic_store_relaxed(slot_tag(&ch[i], t), 0UL);
		}
	}
}

#ifdef SK_TESTING
/* sk__srcu_test_set_destroy_hook() (internal/testing.h). */
static void (*destroy_hook)(struct sk_srcu *d);

void sk__srcu_test_set_destroy_hook(void (*fn)(struct sk_srcu *d))
{
	/* Release: the test's state before the hook runs; pairs with the
	 * acquire in destroy_test_hook(). */
	sk_atomic_store_release(&destroy_hook, fn);
}

static void destroy_test_hook(struct sk_srcu *d)
{
	/* Acquire: pairs with the release that set the hook. */
	void (*fn)(struct sk_srcu *) = sk_atomic_load_acquire(&destroy_hook);

	if (fn)
		fn(d);
}
#else
/* A macro, not an empty function: no hook symbol in a release build,
 * even unoptimized (release_clean). */
#define destroy_test_hook(d) ((void)(d))
#endif

/*
 * Why d cannot be released now (NULL: it can).  gp_mutex held; the
 * worker has finished the batch of d it was running, if any.
 */
static const char *cleanup_refusal(struct sk_srcu *d)
{
	if (!sk__wfq_empty(&d->state->cbq) || d->state->b_first ||
	    sk_atomic_load_acquire(&d->state->cb_running))
		return "callbacks pending (call sk_srcu_barrier() first)";
	if (sk__srcu_poll_pending(d))
		return "a polled grace period pending";
	if (sk__srcu_drained_mask(d, 1) != 3)
		return "readers inside a read-side critical section";
	return NULL;
}

int sk_srcu_destroy(struct sk_srcu *d)
{
	const char *why = NULL;

	if (!d)
		return -EINVAL;
	if (!d->state)
		return 0; /* released already */
	sk__srcu_ready(d, "sk_srcu_destroy()");
	/*
	 * From a callback of d (the worker's own read of sk__srcu.current): its
	 * batch is pending, and waiting for the worker to leave d below
	 * would wait for ourselves, stopping every domain's callbacks.
	 */
	if (sk__srcu_in_worker && sk__srcu.current == d)
		return -EBUSY; /* its own batch is pending */
	/*
	 * Let the worker finish with d first: a batch it detached may still
	 * be running (a barrier returns from within it, before the worker
	 * clears cb_running).  Not under gp_mutex: a callback of that batch
	 * may wait for it (sk_synchronize_srcu(d) from a callback is
	 * allowed), and would wait for us while we wait for it.  The
	 * worker's release of cb_running (SRCU-J) comes before its clearing
	 * of current under sk__srcu.lock, which we take: once current is not
	 * d, that batch's cb_running = 0 is visible here.
	 */
	pthread_mutex_lock(&sk__srcu.lock);
	while (sk__srcu.current == d)
		pthread_cond_wait(&sk__srcu.idle_cv, &sk__srcu.lock);
	pthread_mutex_unlock(&sk__srcu.lock);
	/*
	 * From here the worker cannot detach a batch of d (it does so only
	 * under gp_mutex); one it detached between the wait above and this
	 * lock has set cb_running under gp_mutex, which this lock makes
	 * visible to cleanup_refusal(): refused, as its callbacks are
	 * pending.
	 */
	pthread_mutex_lock(&d->state->gp_mutex);
	destroy_test_hook(d);
	why = cleanup_refusal(d);
	if (!why) {
		/*
		 * Wait until the worker is done with d, then unlist it.  Under
		 * gp_mutex, but it runs no callback of d now (cb_running was
		 * 0 above, and it cannot detach a batch while we hold
		 * gp_mutex): it only finishes a process() step that took no
		 * batch or failed its trylock, and never waits for us there.
		 */
		pthread_mutex_lock(&sk__srcu.lock);
		while (sk__srcu.current == d)
			pthread_cond_wait(&sk__srcu.idle_cv, &sk__srcu.lock);
		if (d->state->in_work) {
			sk__link_del(&d->state->work_link);
			d->state->in_work = 0;
		}
		unbind_all(d);
		/* Type-stable: the chunks go to the pool, never to free(). */
		sk__srcu_chunks_release(d);
		pthread_mutex_unlock(&sk__srcu.lock);
	}
	/*
	 * Refused: the domain stays in use, and the worker may have skipped
	 * it while we held gp_mutex; sk__srcu_gp_unlock() kicks it (released:
	 * d is
	 * unlisted, no kick).
	 */
	sk__srcu_gp_unlock(d);
	if (why)
		return -EBUSY; /* why: see cleanup_refusal(); not printed */
	free(d->state->dir);
	d->state->dir = NULL;
	d->state->nchunks = 0;
	sk_atomic_store_relaxed(&d->state->nlive, 0UL);
	d->state->idle_valid = 0;
	d->state->idle_owner = NULL;
	if (d->state->owned) {
		pthread_mutex_destroy(&d->state->gp_mutex);
		pthread_mutex_destroy(&d->state->barrier_mutex);
		free(d->state);
		d->state = NULL;
	}
	return 0;
}

/* ---- fork ------------------------------------------------------------------ */

/*
 * fork(): only the forking thread exists in the child.  The other
 * threads' indexes are released (their slots keep their counts: a section
 * they left open blocks the child's grace periods of that domain until
 * the child ends it), and the worker is restarted on demand.  Pending
 * callbacks stay pending in the child and run in both processes, as
 * RCU's do (src/rcu_cb.c): the prepare handler waits until the worker is
 * in no step of a domain (run_lock), so each callback either ran before
 * the fork or is still queued, or in a batch waiting for its grace
 * period, which the child puts back in front of the queue.  Polled grace
 * periods stay pending until the child's next grace period of the domain.
 */
static void atfork_prepare(void)
{
	/* Lock order: the worker takes run_lock without sk__srcu.lock. */
	pthread_mutex_lock(&sk__srcu.worker.run_lock);
	pthread_mutex_lock(&sk__srcu.lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&sk__srcu.lock);
	pthread_mutex_unlock(&sk__srcu.worker.run_lock);
}

static void atfork_child(void)
{
	struct sk__link *l;
	unsigned int t;

	for (t = 1; t <= SRCU_MAX_THREADS; t++) {
		struct srcu_thr *r = sk__srcu.thr[t - 1];

		if (r && r != &sk__srcu_my_thr)
			sk__srcu_thr_release(r);
		else if (!r && t != sk__srcu_my_thr.t)
			sk__srcu.used[(t - 1) / 64] &=
				~((uint64_t)1 << ((t - 1) % 64));
	}
	for (l = sk__srcu.work.next; l != &sk__srcu.work; l = l->next) {
		struct sk_srcu__state *st = srcu_of_link(l)->state;
		unsigned long kept;

		/*
		 * A barrier's waiter does not exist here: drop its head.  Its
		 * barrier_mutex (of any domain, listed or not) is re-created
		 * by the child's first sk_srcu_barrier() of the domain
		 * (barrier_lock() in srcu_cb.c, from fork_gen below).  Then
		 * the batch waiting for its grace period, then the queue.
		 */
		kept = sk__wfq_fork_rebuild(&st->cbq, st->b_first, st->b_last,
					    &st->barrier_head);
		st->b_first = st->b_last = NULL;
		st->cb_running = 0; /* run_lock: no batch was running */
		sk_atomic_store_relaxed(&st->busy_skip, 0);
		st->cb_queued = st->cb_invoked + kept;
		st->in_work = 2; /* listed, announced: the worker looks */
	}
	/* Taken by this thread in atfork_prepare(): unlock, not re-init. */
	pthread_mutex_unlock(&sk__srcu.lock);
	pthread_mutex_unlock(&sk__srcu.worker.run_lock);
	pthread_cond_init(&sk__srcu.idle_cv, NULL);
	sk__srcu.current = NULL;
	/* The only thread: relaxed (see sk__srcu.fork_gen). */
	sk_atomic_store_relaxed(&sk__srcu.fork_gen, sk__srcu.fork_gen + 1);
	sk__worker_fork_child(&sk__srcu.worker);
	sk__srcu_in_worker = 0;
}

__attribute__((constructor)) static void sk_srcu_ctor(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}
