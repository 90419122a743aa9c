/* SPDX-License-Identifier: MIT */
/*
 * test_rcu_cb.c - RCU callbacks: sk_call_rcu() and the callback worker,
 * under real threads.  sk_rcu_barrier() is tested in
 * test_rcu_cb_barrier.c, SK_FREE_RCU() and double queueing in
 * test_rcu_cb_free.c.
 *
 * What is proven, one function each (see the comment above each):
 *   - -EINVAL is returned as documented, printing nothing;
 *   - a callback never runs while a read section (general or QSBR) that
 *     began before sk_call_rcu() is still running, also when the caller
 *     itself is that reader; a broken call_rcu that runs the callback at
 *     once MUST be caught by the same checker;
 *   - every callback runs exactly once, on the worker, in per-thread FIFO
 *     order, seeing the producer's earlier writes; a LIFO, duplicating
 *     fake MUST be caught by the same checker;
 *   - one grace period serves a batch (cb_batches << callbacks);
 *   - callbacks may queue callbacks; sk_rcu_barrier() waits for every one
 *     queued before it was called;
 *   - a flood of callbacks from two threads makes forward progress within
 *     bounded memory.
 * Counts shrink by sk_test_slow() under sanitizers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "scalekit/rcu.h"
#include "sk_test.h"
#include "sk_test_rcu.h"
#include "torture_ops.h"

/*
 * Ways to queue a callback (call() and cb_barrier() of a torture ops,
 * tools/torture_ops.h): the library (the RCU ops), and broken twins of
 * it, made by main(): the ops' busted twin (runs the callback at once,
 * without a grace period; its barrier waits for nothing) and the LIFO one
 * below.
 */
static const struct sk_tort_ops *const real_ops = &sk_tort_rcu_ops;
static struct sk_tort_ops broken_now_ops, broken_lifo_ops;

/*
 * BROKEN: keeps callbacks on a stack and runs them from the barrier, last
 * queued first, and the last queued one twice.
 */
static struct {
	pthread_mutex_t lock;
	struct sk_rcu_head **h;
	void (**fn)(struct sk_rcu_head *);
	size_t n, cap;
} lifo = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int call_lifo(void *ctx, struct sk_rcu_head *h,
		     void (*fn)(struct sk_rcu_head *))
{
	(void)ctx;
	pthread_mutex_lock(&lifo.lock);
	if (lifo.n == lifo.cap) {
		lifo.cap = lifo.cap ? 2 * lifo.cap : 1024;
		lifo.h = realloc(lifo.h, lifo.cap * sizeof(*lifo.h));
		lifo.fn = realloc(lifo.fn, lifo.cap * sizeof(*lifo.fn));
		if (!lifo.h || !lifo.fn)
			abort();
	}
	lifo.h[lifo.n] = h;
	lifo.fn[lifo.n++] = fn;
	pthread_mutex_unlock(&lifo.lock);
	return 0;
}

static void barrier_lifo(void *ctx)
{
	(void)ctx;
	pthread_mutex_lock(&lifo.lock);
	if (lifo.n)
		lifo.fn[lifo.n - 1](lifo.h[lifo.n - 1]);
	while (lifo.n) {
		lifo.n--;
		lifo.fn[lifo.n](lifo.h[lifo.n]);
	}
	free(lifo.h);
	free(lifo.fn);
	lifo.h = NULL;
	lifo.fn = NULL;
	lifo.cap = 0;
	pthread_mutex_unlock(&lifo.lock);
}

/* The broken twins of the RCU ops' callbacks. */
static void make_broken_ops(void)
{
	sk_tort_make_busted(real_ops, &broken_now_ops);
	broken_lifo_ops = *real_ops;
	broken_lifo_ops.name = "LIFO + duplicate (BROKEN)";
	broken_lifo_ops.call = call_lifo;
	broken_lifo_ops.cb_barrier = barrier_lifo;
}

/* ---- tests --------------------------------------------------------------- */

static int cb_never;
static void cb_count_never(struct sk_rcu_head *h)
{
	(void)h;
	INC(cb_never);
}

/*
 * Invalid arguments are refused with -EINVAL and nothing is queued: NULL
 * head, NULL function, an SK_FREE_RCU() head beyond the first 4 KiB, and
 * NULL stats.
 */
static void call_rcu_rejects_invalid_arguments(void)
{
	struct sk_rcu_head h;
	struct big {
		char pad[5000];
		struct sk_rcu_head rcu;
	} *b = calloc(1, sizeof(*b));
	struct sk_rcu_stats s0, s1;

	memset(&h, 0, sizeof(h));
	sk_rcu_barrier();
	s0 = sk_test_rcu_stats();
	SK_CHECK_EQ(sk_call_rcu(NULL, cb_count_never), -EINVAL);
	SK_CHECK_EQ(sk_call_rcu(&h, NULL), -EINVAL);
	SK_CHECK_EQ(sk_call_rcu(NULL, NULL), -EINVAL);
	SK_CHECK(b != NULL);
	SK_CHECK_EQ(SK_FREE_RCU(b, rcu), -EINVAL);
	SK_CHECK_EQ(sk_rcu_get_stats(NULL), -EINVAL);
	sk_rcu_barrier();
	s1 = sk_test_rcu_stats();
	SK_CHECK_EQ(s1.cb_queued, s0.cb_queued);
	SK_CHECK_EQ(s1.cb_invoked, s0.cb_invoked);
	SK_CHECK_EQ(LOAD(cb_never), 0);
	/* The refused head is not marked queued: it can be queued now. */
	SK_CHECK_EQ(sk_call_rcu(&h, cb_count_never), 0);
	sk_rcu_barrier();
	SK_CHECK_EQ(LOAD(cb_never), 1);
	free(b); /* refused, so still ours */
}

/* An object whose callback marks it freed. */
struct gobj {
	struct sk_rcu_head rcu;
	int freed;
	int seen_inside; /* freed as read inside the reader's section */
};

static void gobj_free(struct sk_rcu_head *h)
{
	STORE(OF(h, struct gobj, rcu)->freed, 1);
}

static void read_freed_inside(struct sk_test_holder *h)
{
	struct gobj *o = h->arg;

	/* Last load of the section: is the object still intact? */
	STORE(o->seen_inside, LOAD(o->freed));
}

/*
 * One round: reader R enters a section (general or QSBR), then the
 * callback is queued; we wait until a grace period has started after the
 * call (or the callback ran) and give the worker 20 ms more to misbehave;
 * R then reads the flag as the last thing in its section.  Returns 1 when
 * R saw the callback run inside its section.
 */
static int reader_sees_callback_early(const struct sk_tort_ops *ops,
				      int qsbr)
{
	static struct gobj o;
	struct sk_test_holder h;
	unsigned long c0;

	memset(&o, 0, sizeof(o));
	sk_test_holder_start(&h, qsbr, read_freed_inside, &o);
	c0 = sk_test_gp_ctr();
	SK_CHECK_EQ(ops->call(NULL, &o.rcu, gobj_free), 0);
	sk_test_wait_gp_started(c0, &o.freed);
	usleep(20000);
	sk_test_holder_release(&h);
	ops->cb_barrier(NULL);
	SK_CHECK_EQ(LOAD(o.freed), 1);
	return LOAD(o.seen_inside);
}

/*
 * The grace-period guarantee of sk_call_rcu(): a reader inside a section
 * that began before the call still sees the object intact (callback not
 * run) at the end of its section.  General and QSBR readers.  The broken
 * twin (callback run at once) must be caught.
 */
static void callback_waits_for_preexisting_reader(void)
{
	int i, early = 0;

	for (i = 0; i < 6; i++)
		early += reader_sees_callback_early(real_ops, i & 1);
	SK_CHECK_EQ(early, 0);
	SK_CHECK_EQ(reader_sees_callback_early(&broken_now_ops, 0), 1);
	SK_CHECK_EQ(reader_sees_callback_early(&broken_now_ops, 1), 1);
}

/*
 * sk_call_rcu() from inside a read section: the callback waits for the
 * caller's own section (the caller sees the object intact until it
 * leaves), then runs.
 */
static void callback_queued_inside_section_waits_for_it(void)
{
	static struct gobj o;
	unsigned long c0;
	int i;

	for (i = 0; i < 4; i++) {
		memset(&o, 0, sizeof(o));
		sk_rcu_read_lock();
		c0 = sk_test_gp_ctr();
		SK_CHECK_EQ(sk_call_rcu(&o.rcu, gobj_free), 0);
		sk_test_wait_gp_started(c0, &o.freed);
		usleep(10000);
		SK_CHECK_EQ(LOAD(o.freed), 0);
		sk_rcu_read_unlock();
		sk_rcu_barrier();
		SK_CHECK_EQ(LOAD(o.freed), 1);
	}
}

/* ---- exactly once, per-thread FIFO --------------------------------------- */

#define FIFO_PRODUCERS 4

struct fnode {
	struct sk_rcu_head rcu;
	unsigned prod, seq;
	unsigned payload; /* plain write before the call, read by the callback */
	int runs;
	long prod_tid, cb_tid;
};

static struct {
	const struct sk_tort_ops *ops;
	struct fnode *nodes;
	unsigned n; /* per producer */
	unsigned next[FIFO_PRODUCERS];
	unsigned long order_err, payload_err, call_err;
} fifo;

static unsigned payload_of(unsigned seq)
{
	return seq * 2654435761u + 1;
}

static void fifo_cb(struct sk_rcu_head *h)
{
	struct fnode *n = OF(h, struct fnode, rcu);
	unsigned expect = LOAD(fifo.next[n->prod]);

	INC(n->runs);
	n->cb_tid = sk_test_gettid();
	if (n->payload != payload_of(n->seq))
		INC(fifo.payload_err);
	if (n->seq != expect)
		INC(fifo.order_err);
	STORE(fifo.next[n->prod], n->seq + 1);
}

static void *fifo_producer(void *arg)
{
	unsigned p = (unsigned)(uintptr_t)arg, i;
	long tid = sk_test_gettid();

	for (i = 0; i < fifo.n; i++) {
		struct fnode *n = &fifo.nodes[(size_t)p * fifo.n + i];
		int in_section = (i % 4) == 1;

		n->prod = p;
		n->seq = i;
		n->payload = payload_of(i);
		n->prod_tid = tid;
		/* Some calls from inside a read section (allowed). */
		if (in_section)
			sk_rcu_read_lock();
		if (fifo.ops->call(NULL, &n->rcu, fifo_cb) != 0)
			INC(fifo.call_err);
		if (in_section)
			sk_rcu_read_unlock();
	}
	return NULL;
}

struct fifo_result {
	unsigned long order_err, payload_err, call_err;
	unsigned long not_once, short_count, on_producer;
};

static struct fifo_result run_fifo(const struct sk_tort_ops *ops,
				   unsigned n)
{
	pthread_t t[FIFO_PRODUCERS];
	struct fifo_result r;
	size_t i, total = (size_t)n * FIFO_PRODUCERS;
	unsigned p;

	memset(&r, 0, sizeof(r));
	memset(&fifo, 0, sizeof(fifo));
	fifo.ops = ops;
	fifo.n = n;
	fifo.nodes = calloc(total, sizeof(*fifo.nodes));
	if (!fifo.nodes)
		abort();
	for (p = 0; p < FIFO_PRODUCERS; p++)
		sk_test_thread_start(&t[p], fifo_producer, (void *)(uintptr_t)p);
	for (p = 0; p < FIFO_PRODUCERS; p++)
		sk_test_thread_join(t[p]);
	ops->cb_barrier(NULL);
	for (i = 0; i < total; i++) {
		struct fnode *x = &fifo.nodes[i];

		if (LOAD(x->runs) != 1)
			r.not_once++;
		if (x->cb_tid == x->prod_tid)
			r.on_producer++;
	}
	for (p = 0; p < FIFO_PRODUCERS; p++)
		if (LOAD(fifo.next[p]) != n)
			r.short_count++;
	r.order_err = LOAD(fifo.order_err);
	r.payload_err = LOAD(fifo.payload_err);
	r.call_err = LOAD(fifo.call_err);
	free(fifo.nodes);
	return r;
}

/*
 * Four producer threads queue n callbacks each (a quarter of the calls
 * from inside a read section).  Every callback runs exactly once, on the
 * worker (not on its producer), in its producer's queueing order, and sees
 * the payload written before the call.  cb_queued/cb_invoked agree.  A
 * LIFO fake that runs one callback twice must be caught.
 */
static void every_callback_runs_once_in_producer_order(void)
{
	unsigned n = 100000 / sk_test_slow();
	struct sk_rcu_stats s0, s1;
	struct fifo_result r;

	sk_rcu_barrier();
	s0 = sk_test_rcu_stats();
	r = run_fifo(real_ops, n);
	s1 = sk_test_rcu_stats();
	SK_CHECK_EQ(r.call_err, 0);
	SK_CHECK_EQ(r.not_once, 0);
	SK_CHECK_EQ(r.order_err, 0);
	SK_CHECK_EQ(r.payload_err, 0);
	SK_CHECK_EQ(r.short_count, 0);
	SK_CHECK_EQ(r.on_producer, 0);
	SK_CHECK_EQ(s1.cb_queued - s0.cb_queued,
		    (unsigned long)n * FIFO_PRODUCERS);
	SK_CHECK_EQ(s1.cb_invoked - s0.cb_invoked,
		    (unsigned long)n * FIFO_PRODUCERS);

	/* The checker must catch a broken queue. */
	r = run_fifo(&broken_lifo_ops, 1000);
	SK_CHECK_GT(r.order_err, 0);
	SK_CHECK_GT(r.not_once, 0);
}

/* ---- batching ------------------------------------------------------------ */

static unsigned long batch_ran;
static void batch_cb(struct sk_rcu_head *h)
{
	(void)h;
	INC(batch_ran);
}

/*
 * One grace period serves a whole batch: 100k callbacks queued back to
 * back by one thread take far fewer than 100k worker grace periods.
 */
static void one_grace_period_serves_a_batch(void)
{
	unsigned long n = 100000 / sk_test_slow(), i;
	struct sk_rcu_head *h = calloc(n, sizeof(*h));
	struct sk_rcu_stats s0, s1;

	SK_CHECK(h != NULL);
	sk_rcu_barrier();
	s0 = sk_test_rcu_stats();
	for (i = 0; i < n; i++)
		SK_CHECK_EQ(sk_call_rcu(&h[i], batch_cb), 0);
	sk_rcu_barrier();
	s1 = sk_test_rcu_stats();
	SK_CHECK_EQ(LOAD(batch_ran), n);
	SK_CHECK_EQ(s1.cb_invoked - s0.cb_invoked, n);
	fprintf(stderr, "%lu callbacks in %lu batches (%lu grace periods)\n", n,
		s1.cb_batches - s0.cb_batches,
		s1.grace_periods - s0.grace_periods);
	SK_CHECK_GT(s1.cb_batches - s0.cb_batches, 0);
	SK_CHECK_LE((s1.cb_batches - s0.cb_batches) * 10, n);
	free(h);
}

/* ---- callbacks that queue callbacks -------------------------------------- */

struct chain {
	struct sk_rcu_head rcu;
	unsigned long len;    /* links to run in all */
	unsigned long queued; /* links queued so far (after the call) */
	unsigned long ran;    /* links run so far */
	unsigned long err;
};

static void chain_cb(struct sk_rcu_head *h)
{
	struct chain *c = OF(h, struct chain, rcu);

	if (INC(c->ran) + 1 < c->len) {
		/* Re-queue the head that is running: allowed. */
		if (sk_call_rcu(h, chain_cb) == 0)
			INC(c->queued);
		else
			INC(c->err);
	}
}

/*
 * A callback re-queues its own head until the chain has run len times
 * (two chains at once).  sk_rcu_barrier() is called until both are done;
 * each call must return only after every link queued before it ran:
 * ran >= queued-as-read-before-the-call.  Links queued by a callback after
 * the barrier began need not be waited for, and are not asserted.
 */
static void callbacks_requeue_and_barrier_waits_for_queued_links(void)
{
	static struct chain ch[2];
	unsigned long len = 2000 / sk_test_slow(), barriers = 0, violations = 0;
	int i;

	memset(ch, 0, sizeof(ch));
	for (i = 0; i < 2; i++) {
		ch[i].len = len;
		SK_CHECK_EQ(sk_call_rcu(&ch[i].rcu, chain_cb), 0);
		INC(ch[i].queued);
	}
	while (LOAD(ch[0].ran) < len || LOAD(ch[1].ran) < len) {
		unsigned long q0 = LOAD(ch[0].queued), q1 = LOAD(ch[1].queued);

		sk_rcu_barrier();
		barriers++;
		if (LOAD(ch[0].ran) < q0 || LOAD(ch[1].ran) < q1) {
			if (!violations++)
				fprintf(stderr,
					"barrier returned with ran %lu/%lu < "
					"queued-before %lu/%lu\n",
					LOAD(ch[0].ran), LOAD(ch[1].ran), q0,
					q1);
		}
	}
	sk_rcu_barrier();
	fprintf(stderr, "2 chains of %lu links, %lu barriers\n", len, barriers);
	SK_CHECK_EQ(violations, 0);
	for (i = 0; i < 2; i++) {
		SK_CHECK_EQ(LOAD(ch[i].ran), len);
		SK_CHECK_EQ(LOAD(ch[i].queued), len);
		SK_CHECK_EQ(LOAD(ch[i].err), 0);
	}
}


/* ---- flood --------------------------------------------------------------- */

struct flood_obj {
	struct sk_rcu_head rcu;
	long v;
};

static unsigned long flood_ran, flood_err;

static void flood_free(struct sk_rcu_head *h)
{
	free(OF(h, struct flood_obj, rcu));
	__atomic_fetch_add(&flood_ran, 1, __ATOMIC_RELAXED);
}

static void *flood_thread(void *arg)
{
	unsigned long n = (unsigned long)(uintptr_t)arg, i;

	for (i = 0; i < n; i++) {
		struct flood_obj *o = calloc(1, sizeof(*o));

		if (!o || sk_call_rcu(&o->rcu, flood_free) != 0) {
			INC(flood_err);
			free(o);
		}
	}
	return NULL;
}

/*
 * Forward progress under a flood: two threads queue 10 million callbacks
 * each (each frees a malloc'd object), then sk_rcu_barrier().  All run;
 * peak RSS and the peak backlog are printed.  The RSS assertion is a bound
 * on memory (the worker keeps up, the backlog does not grow without
 * limit), not on time.
 */
static void flood_makes_progress_in_bounded_memory(void)
{
	unsigned long n = 10000000 / sk_test_slow();
	struct sk_rcu_stats s0, s1;
	struct rusage ru;
	pthread_t t[2];
	int i;

	sk_rcu_barrier();
	s0 = sk_test_rcu_stats();
	for (i = 0; i < 2; i++)
		sk_test_thread_start(&t[i], flood_thread, (void *)(uintptr_t)n);
	for (i = 0; i < 2; i++)
		sk_test_thread_join(t[i]);
	sk_rcu_barrier();
	s1 = sk_test_rcu_stats();
	getrusage(RUSAGE_SELF, &ru);
	fprintf(stderr,
		"flood: 2 x %lu callbacks, %lu batches, peak RSS %ld MiB, "
		"cb_peak_backlog %lu\n",
		n, s1.cb_batches - s0.cb_batches, ru.ru_maxrss / 1024,
		s1.cb_peak_backlog);
	SK_CHECK_EQ(LOAD(flood_err), 0);
	SK_CHECK_EQ(__atomic_load_n(&flood_ran, __ATOMIC_RELAXED), 2 * n);
	SK_CHECK_EQ(s1.cb_invoked - s0.cb_invoked, 2 * n);
	/* Memory, not time: 1 GiB is far above what a keeping-up worker needs. */
	SK_CHECK_LE(ru.ru_maxrss, 1024L * 1024);
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	make_broken_ops();
	sk_test_seed_init();
	SK_RUN(call_rcu_rejects_invalid_arguments);
	SK_RUN(callback_waits_for_preexisting_reader);
	SK_RUN(callback_queued_inside_section_waits_for_it);
	SK_RUN(every_callback_runs_once_in_producer_order);
	SK_RUN(one_grace_period_serves_a_batch);
	SK_RUN(callbacks_requeue_and_barrier_waits_for_queued_links);
	SK_RUN(flood_makes_progress_in_bounded_memory);
	return sk_test_report();
}
