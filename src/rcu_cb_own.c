/* SPDX-License-Identifier: MIT */
/*
 * RCU callback workers that the program creates itself (liburcu's
 * create_call_rcu_data()): sk_rcu_cb_worker_create(), _destroy(),
 * sk_call_rcu_on() and sk_rcu_cb_worker_pthread().  Each has one queue,
 * with several producers, in rcu_cb.c's list of queues, and a thread that
 * runs rcu_cb.c's worker loop over it, as a per-CPU worker does
 * (src/rcu_cb_pcpu.c).  Destroy hands the queue to the default worker,
 * stops the thread, and leaves the queue as an orphan, which the default
 * worker frees once it has run what was left (the queue is the first
 * member of the object, so freeing it frees the worker too).
 *
 * Labels placed here: CB-D1 (as in rcu_cb_pcpu.c; legend in
 * internal/rcu_cb.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "scalekit/rcu.h"
#include "internal/rcu_cb.h"

struct sk_rcu_cb_worker {
	struct sk__rcu_cb_queue q; /* first: see the file comment */
	struct sk__worker w;
	int running;	      /* w's thread exists (own.lock) */
	struct sk__link link; /* in own.workers until destroyed */
};

/*
 * The workers, for the fork handlers.  own.lock is never held across a
 * wait: a destroy stops its worker without it (the worker may be waiting
 * for a grace period that waits for a thread that forks).
 */
static struct {
	pthread_mutex_t lock;
	struct sk__link workers;
	pthread_once_t once;
} own = { PTHREAD_MUTEX_INITIALIZER, { &own.workers, &own.workers },
	  PTHREAD_ONCE_INIT };

/*
 * fork(): no own worker may be in the middle of a batch (rcu_cb.c's child
 * handler puts a taken batch back only when no one ran part of it).
 * Registered at the first create, after the library's own handlers, so
 * that this prepare handler runs before theirs: the lock order is own
 * run_lock, then the default worker's, then the list of queues (a worker
 * holds its run_lock when it takes that list's lock).
 */
static void atfork_prepare(void)
{
	struct sk__link *l;

	pthread_mutex_lock(&own.lock);
	for (l = own.workers.next; l != &own.workers; l = l->next)
		pthread_mutex_lock(&SK__CONTAINER_OF(l, struct sk_rcu_cb_worker,
						     link)->w.run_lock);
}

static void atfork_parent(void)
{
	struct sk__link *l;

	for (l = own.workers.next; l != &own.workers; l = l->next)
		pthread_mutex_unlock(&SK__CONTAINER_OF(
			l, struct sk_rcu_cb_worker, link)->w.run_lock);
	pthread_mutex_unlock(&own.lock);
}

/*
 * The child has none of the threads; rcu_cb.c's child handler, which ran
 * before this one, handed every queue to the default worker.
 */
static void atfork_child(void)
{
	struct sk__link *l;

	for (l = own.workers.next; l != &own.workers; l = l->next) {
		struct sk_rcu_cb_worker *x =
			SK__CONTAINER_OF(l, struct sk_rcu_cb_worker, link);

		pthread_mutex_init(&x->w.run_lock, NULL);
		sk__worker_fork_child(&x->w);
		x->running = 0;
	}
	pthread_mutex_init(&own.lock, NULL);
}

static void register_fork_handlers(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

struct sk_rcu_cb_worker *sk_rcu_cb_worker_create(unsigned flags, int cpu)
{
	struct sk_rcu_cb_worker *x;
	int err;

	if (flags != 0 || cpu < -1) {
		errno = EINVAL;
		return NULL;
	}
	pthread_once(&own.once, register_fork_handlers);
	/* The default worker runs first: it takes over at the destroy. */
	err = sk__rcu_cb_worker_ensure();
	x = err ? NULL : aligned_alloc(SK_CACHELINE, sizeof(*x));
	if (!x) {
		errno = err ? -err : ENOMEM;
		return NULL;
	}
	memset(x, 0, sizeof(*x));
	err = sk__rcu_cb_worker_start(&x->w, cpu, cpu >= 0 ? SK__WK_PIN : 0,
				      "sk-rcu-cb");
	if (err) {
		free(x);
		errno = -err;
		return NULL;
	}
	sk__rcu_cb_lock();
	sk__rcu_cb_add_cpu_queue(&x->q); /* a queue whose worker may change */
	/*
	 * Relaxed, under the list lock: workers read it under that lock;
	 * a producer reaches x only through the return below, which its
	 * own synchronization with this thread orders after the store.
	 */
	sk_atomic_store_relaxed(&x->q.w, &x->w);
	sk__rcu_cb_unlock();
	pthread_mutex_lock(&own.lock);
	x->running = 1;
	sk__link_add_tail(&x->link, &own.workers);
	pthread_mutex_unlock(&own.lock);
	return x;
}

int sk_rcu_cb_worker_destroy(struct sk_rcu_cb_worker *x)
{
	struct sk__worker *w0 = sk__rcu_cb_default_worker();
	int running;

	if (!x)
		return -EINVAL;
	if (sk__rcu_cb_in_worker)
		return -EDEADLK;
	sk__rcu_cb_lock();
	sk_atomic_store_relaxed(&x->q.w, w0);
	sk__rcu_cb_unlock();
	/* CB-D1: the queue handed over before the kick; pairs with CB-P1. */
	sk_smp_mb();
	pthread_mutex_lock(&own.lock);
	running = x->running;
	x->running = 0;
	pthread_mutex_unlock(&own.lock);
	if (running)
		sk__worker_stop(&x->w); /* waits for the batch it runs */
	pthread_mutex_lock(&own.lock);
	sk__link_del(&x->link);
	pthread_mutex_unlock(&own.lock);
	/* From here the default worker may free x once the queue drained. */
	sk__rcu_cb_lock();
	x->q.orphan = 1;
	sk__rcu_cb_unlock();
	sk__worker_wake(w0, SK__WK_KICK_URGENT);
	return 0;
}

int sk_call_rcu_on(struct sk_rcu_cb_worker *x, struct sk_rcu_head *head,
		   void (*fn)(struct sk_rcu_head *))
{
	if (!x || (fn && sk__cb_is_free_fn(fn)))
		return -EINVAL;
	return sk__rcu_cb_enqueue(&x->q, head, fn);
}

int sk_rcu_cb_worker_pthread(struct sk_rcu_cb_worker *x, pthread_t *out)
{
	int running;

	if (!x || !out)
		return -EINVAL;
	pthread_mutex_lock(&own.lock);
	running = x->running;
	if (running)
		*out = x->w.thread;
	pthread_mutex_unlock(&own.lock);
	return running ? 0 : -ESRCH;
}
