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
#include <time.h>

#include "scalekit/rcu.h"
#include "internal/rcu.h"
#include "internal/rcu_cb.h"

/* The prepare handler's nap while an own worker runs a batch. */
#define OWN_FORK_NAP_NS 50000L

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
} own = { PTHREAD_MUTEX_INITIALIZER, { &own.workers, &own.workers } };

/*
 * fork(): no own worker may be in the middle of a batch (rcu_cb.c's child
 * handler puts a taken batch back only when no one ran part of it).
 * rcu_cb.c's handlers call these (sk__rcu_cb_register_upper()) after they
 * took every other worker's run_lock and before the list of queues' lock:
 * a callback of any worker may call sk_rcu_cb_worker_create() or
 * sk_rcu_cb_worker_pthread(), which take own.lock while the callback's
 * batch holds its worker's run_lock.  For the same reason own.lock is
 * never held while an own worker's run_lock is waited for: the prepare
 * handler only tries them, and on a busy one lets go of everything,
 * naps and tries again (the worker finishes its batch meanwhile: nothing
 * it needs is held then).
 */
static void atfork_prepare(void)
{
	const struct timespec nap = { 0, OWN_FORK_NAP_NS };
	struct sk__link *l, *busy;

	for (;;) {
		pthread_mutex_lock(&own.lock);
		for (l = own.workers.next; l != &own.workers; l = l->next)
			if (pthread_mutex_trylock(&SK__CONTAINER_OF(
				    l, struct sk_rcu_cb_worker, link)
							   ->w.run_lock))
				break;
		if (l == &own.workers)
			return; /* own.lock and every run_lock held */
		busy = l;
		for (l = own.workers.next; l != busy; l = l->next)
			pthread_mutex_unlock(&SK__CONTAINER_OF(
				l, struct sk_rcu_cb_worker, link)->w.run_lock);
		pthread_mutex_unlock(&own.lock);
		nanosleep(&nap, NULL);
	}
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
 * The child has none of the threads; rcu_cb.c's child handler, which
 * calls this one last, handed every queue to the default worker.
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

static const struct sk__rcu_part own_part = {
	.fork_prepare = atfork_prepare,
	.fork_parent = atfork_parent,
	.fork_child = atfork_child,
};

__attribute__((constructor)) static void own_init(void)
{
	sk__rcu_cb_register_upper(SK__RCU_CB_UPPER_OWN, &own_part);
}

struct sk_rcu_cb_worker *sk_rcu_cb_worker_create(unsigned flags, int cpu)
{
	struct sk_rcu_cb_worker *x;
	int err;

	if (flags != 0 || cpu < -1) {
		errno = EINVAL;
		return NULL;
	}
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
	int running, was_online;

	if (!x)
		return -EINVAL;
	/*
	 * From a callback it could wait for its own batch; inside a read
	 * section for the grace period of x's batch, which waits for this
	 * thread.  An online QSBR thread goes offline for the wait.
	 */
	if (sk__rcu_cb_in_worker)
		return -EDEADLK;
	was_online = sk__rcu_try_enter_wait();
	if (was_online < 0)
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
	if (was_online)
		sk_rcu_thread_online();
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
