/* SPDX-License-Identifier: MIT */
/*
 * SRCU domains: init, cleanup, fork, and the process-wide state.
 * The design and the barrier pairs: src/internal/srcu.h.
 */
#define _GNU_SOURCE
#include "internal/srcu.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sk__srcu_global sk__srcu = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.once = PTHREAD_ONCE_INIT,
	.work = { &sk__srcu.work, &sk__srcu.work },
	.idle_cv = PTHREAD_COND_INITIALIZER,
};

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
	d->gen = sk__srcu_gen_new();
	return 0;
}

/* Remove d from the binding lists of its slots' owners.  sk__srcu.lock held. */
static void unbind_all(struct sk_srcu *d)
{
	unsigned int k, i, j;

	for (k = 0; d->dir && k < d->nchunks; k++) {
		struct sk_srcu_slot *ch = d->dir[k];

		for (i = 0; ch && i < SK_SRCU_CHUNK_SLOTS; i++) {
			unsigned int t = k * SK_SRCU_CHUNK_SLOTS + i + 1;
			struct srcu_thr *r = sk__srcu.thr[t - 1];

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
	if (sk__srcu_poll_pending(d))
		return "a polled grace period pending";
	if (sk__srcu_drained_mask(d, 1) != 3)
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
	 * From a callback of d (the worker's own read of sk__srcu.current): its
	 * batch is pending, and waiting for the worker to leave d below
	 * would wait for ourselves, stopping every domain's callbacks.
	 */
	if (sk__srcu_in_worker && sk__srcu.current == d)
		return cleanup_refused(
			d, "called from one of its callbacks (callbacks pending)");
	pthread_mutex_lock(&d->gp_mutex);
	/*
	 * Let the worker finish with d first: a batch it detached may still
	 * be running (a barrier returns from within it).  It cannot start
	 * another while we hold gp_mutex.
	 */
	pthread_mutex_lock(&sk__srcu.lock);
	while (sk__srcu.current == d)
		pthread_cond_wait(&sk__srcu.idle_cv, &sk__srcu.lock);
	pthread_mutex_unlock(&sk__srcu.lock);
	why = cleanup_refusal(d);
	if (!why) {
		/* Wait until the worker is done with d, then unlist it. */
		pthread_mutex_lock(&sk__srcu.lock);
		while (sk__srcu.current == d)
			pthread_cond_wait(&sk__srcu.idle_cv, &sk__srcu.lock);
		if (d->in_work) {
			sk__link_del(&d->work_link);
			d->in_work = 0;
		}
		unbind_all(d);
		pthread_mutex_unlock(&sk__srcu.lock);
	}
	/*
	 * Refused: the domain stays in use, and the worker may have skipped
	 * it while we held gp_mutex; sk__srcu_gp_unlock() kicks it (released: d is
	 * unlisted, no kick).
	 */
	sk__srcu_gp_unlock(d);
	if (why)
		return cleanup_refused(d, why);
	/* Every thread's slot cache misses from now on. */
	sk_atomic_store_relaxed(&d->gen, sk__srcu_gen_new());
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
	pthread_mutex_lock(&sk__srcu.lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&sk__srcu.lock);
}

static void atfork_child(void)
{
	unsigned int t;

	for (t = 1; t <= SRCU_MAX_THREADS; t++) {
		struct srcu_thr *r = sk__srcu.thr[t - 1];

		if (r && r != &sk__srcu_my_thr)
			sk__srcu_thr_release(r);
		else if (!r && t != sk__srcu_my_thr.t)
			sk__srcu.used[(t - 1) / 64] &=
				~((uint64_t)1 << ((t - 1) % 64));
	}
	while (!sk__link_empty(&sk__srcu.work)) {
		struct sk_srcu *d = SK_CONTAINER_OF(sk__srcu.work.next,
						    struct sk_srcu, work_link);

		sk__link_del(&d->work_link);
		if (d == sk__srcu.current) /* the worker may have held it */
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
	pthread_mutex_unlock(&sk__srcu.lock);
	pthread_cond_init(&sk__srcu.idle_cv, NULL);
	sk__srcu.current = NULL;
	sk__srcu.worker_started = 0;
	sk__srcu.sleeping = 0;
	sk__srcu.poke = 0;
	sk__srcu_in_worker = 0;
}

__attribute__((constructor)) static void sk_srcu_ctor(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}
