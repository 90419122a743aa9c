/* SPDX-License-Identifier: MIT */
/*
 * test_rcu_cb.c - RCU callbacks: sk_call_rcu(), SK_FREE_RCU(),
 * sk_rcu_barrier() and the callback worker, under real threads.
 *
 * What is proven, one function each (see the comment above each):
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
 *   - sk_rcu_barrier() waits for the callbacks of every producer, live or
 *     exited, and of concurrent producers; a no-op barrier MUST be caught;
 *     with nothing pending it starts no grace period;
 *   - SK_FREE_RCU() frees (malloc statistics; a leaking twin MUST be
 *     caught), also with the head at offset 0;
 *   - -EINVAL and -EBUSY (already queued, every build) are returned as
 *     documented, printing nothing, and the callback then runs once; a
 *     head queued twice loses no other callback (counts agree),
 *     SK_FREE_RCU() twice frees once; a copy of a queued head is not taken
 *     for it; a double queue is no abort;
 *   - sk_rcu_barrier() inside a read section or a callback aborts with a
 *     message (death tests: this program run again as a child);
 *   - a flood of callbacks from two threads makes forward progress within
 *     bounded memory.
 * Counts shrink by sk_test_slow() under sanitizers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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

/*
 * Run this program again with --child=mode (fork + exec, so that the child
 * starts single-threaded, also under the sanitizers) and stderr on a pipe;
 * returns the wait status and the child's stderr in out.
 */
static int run_child(const char *mode, char *out, size_t len)
{
	char flag[64];
	char *argv[] = { "test_rcu_cb", flag, NULL };
	int st;

	snprintf(flag, sizeof(flag), "--child=%s", mode);
	st = sk_test_exec_self(argv, environ, out, len);
	fprintf(stderr, "child stderr: %s", out);
	return st;
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

/* ---- exactly once, per-thread FIFO -------------------------------------- */

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

/* ---- callbacks that queue callbacks ------------------------------------- */

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

/* ---- sk_rcu_barrier() ----------------------------------------------------- */

#define BAR_PRODUCERS 4

struct bnode {
	struct sk_rcu_head rcu;
	unsigned long *counter;
};

static void bnode_cb(struct sk_rcu_head *h)
{
	INC(*OF(h, struct bnode, rcu)->counter);
}

static struct {
	unsigned long m; /* callbacks per producer */
	struct bnode *nodes;
	unsigned long count[BAR_PRODUCERS];
	unsigned long call_err;
	int queued, go; /* producers done queueing; may exit */
	const struct sk_tort_ops *ops;
	unsigned long seen; /* sum of counts right after the barrier */
	int barrier_started, barrier_done;
} bar;

static void *bar_producer(void *arg)
{
	unsigned p = (unsigned)(uintptr_t)arg;
	unsigned long i;

	for (i = 0; i < bar.m; i++) {
		struct bnode *n = &bar.nodes[p * bar.m + i];

		n->counter = &bar.count[p];
		if (sk_call_rcu(&n->rcu, bnode_cb) != 0)
			INC(bar.call_err);
	}
	INC(bar.queued);
	/* Producers 0 and 1 exit now; 2 and 3 stay alive until released. */
	if (p >= 2)
		while (!LOAD(bar.go))
			sched_yield();
	return NULL;
}

static void *bar_barrier_thread(void *arg)
{
	unsigned long sum = 0;
	int p;

	(void)arg;
	STORE(bar.barrier_started, 1);
	bar.ops->cb_barrier(NULL);
	for (p = 0; p < BAR_PRODUCERS; p++)
		sum += LOAD(bar.count[p]);
	STORE(bar.seen, sum);
	STORE(bar.barrier_done, 1);
	return NULL;
}

/*
 * Returns the number of callbacks run when ops->cb_barrier() returned.  While
 * the producers queue, a reader holds a section, so no callback can run;
 * the barrier is called from another thread and the reader is released
 * once the barrier has returned, or 50 ms after it started (a loaded
 * machine may keep the barrier thread off the CPU for longer than a fixed
 * delay from its creation).
 */
static unsigned long barrier_sees(const struct sk_tort_ops *ops,
				  unsigned long m)
{
	pthread_t t[BAR_PRODUCERS], b;
	struct sk_test_holder h;
	unsigned p, i;

	memset(&bar, 0, sizeof(bar));
	bar.m = m;
	bar.ops = ops;
	bar.nodes = calloc(BAR_PRODUCERS * m, sizeof(*bar.nodes));
	if (!bar.nodes)
		abort();
	sk_test_holder_start(&h, 0, NULL, NULL);
	for (p = 0; p < BAR_PRODUCERS; p++)
		sk_test_thread_start(&t[p], bar_producer, (void *)(uintptr_t)p);
	sk_test_thread_join(t[0]);
	/* Two producers have exited before the barrier. */
	sk_test_thread_join(t[1]);
	while (LOAD(bar.queued) < BAR_PRODUCERS)
		sched_yield();
	sk_test_thread_start(&b, bar_barrier_thread, NULL);
	while (!LOAD(bar.barrier_started))
		sched_yield();
	for (i = 0; i < 50 && !LOAD(bar.barrier_done); i++)
		usleep(1000);
	sk_test_holder_release(&h);
	sk_test_thread_join(b);
	STORE(bar.go, 1);
	sk_test_thread_join(t[2]);
	sk_test_thread_join(t[3]);
	sk_rcu_barrier(); /* clean up after a broken barrier */
	SK_CHECK_EQ(LOAD(bar.call_err), 0);
	for (p = 0; p < BAR_PRODUCERS; p++)
		SK_CHECK_EQ(LOAD(bar.count[p]), m);
	free(bar.nodes);
	return LOAD(bar.seen);
}

/*
 * sk_rcu_barrier() returns only after every callback queued before it has
 * run: those of producers that have exited and of producers still alive,
 * even when the grace period they need is held up while the barrier
 * waits.  A no-op barrier must be caught.
 */
static void barrier_waits_for_every_producer(void)
{
	unsigned long m = 20000 / sk_test_slow();

	SK_CHECK_EQ(barrier_sees(real_ops, m), BAR_PRODUCERS * m);
	SK_CHECK_LE(barrier_sees(&broken_now_ops, m) + 1, BAR_PRODUCERS * m);
}

static struct {
	unsigned long rounds, k;
	unsigned long err, call_err;
} cbar;

static void *cbar_thread(void *arg)
{
	unsigned long count = 0, r, i;
	struct bnode *n = calloc(cbar.k, sizeof(*n));

	(void)arg;
	if (!n)
		abort();
	for (r = 0; r < cbar.rounds; r++) {
		for (i = 0; i < cbar.k; i++) {
			n[i].counter = &count;
			if (sk_call_rcu(&n[i].rcu, bnode_cb) != 0)
				INC(cbar.call_err);
		}
		sk_rcu_barrier();
		if (LOAD(count) != cbar.k * (r + 1))
			INC(cbar.err);
	}
	free(n);
	return NULL;
}

/*
 * Several threads each queue a round of callbacks, call sk_rcu_barrier()
 * and find all of their own callbacks run, concurrently with the others'
 * barriers and callbacks.
 */
static void concurrent_barriers_each_see_their_callbacks(void)
{
	pthread_t t[3];
	int i;

	cbar.rounds = 200 / sk_test_slow();
	cbar.k = 50;
	cbar.err = cbar.call_err = 0;
	for (i = 0; i < 3; i++)
		sk_test_thread_start(&t[i], cbar_thread, NULL);
	for (i = 0; i < 3; i++)
		sk_test_thread_join(t[i]);
	SK_CHECK_EQ(LOAD(cbar.err), 0);
	SK_CHECK_EQ(LOAD(cbar.call_err), 0);
}

/*
 * With nothing pending, sk_rcu_barrier() returns without a grace period
 * and without a worker batch (the non-timing meaning of "returns at once
 * when none is pending").
 */
static void barrier_with_nothing_pending_runs_no_grace_period(void)
{
	struct sk_rcu_stats s0, s1;
	int i;

	sk_rcu_barrier();
	s0 = sk_test_rcu_stats();
	for (i = 0; i < 1000; i++)
		sk_rcu_barrier();
	s1 = sk_test_rcu_stats();
	SK_CHECK_EQ(s1.grace_periods, s0.grace_periods);
	SK_CHECK_EQ(s1.cb_batches, s0.cb_batches);
	SK_CHECK_EQ(s1.cb_invoked, s0.cb_invoked);
}

/* ---- SK_FREE_RCU ---------------------------------------------------------- */

struct fobj {
	long pad[3];
	struct sk_rcu_head rcu; /* not first: the offset matters */
	char payload[200];
};

static void leak_cb(struct sk_rcu_head *h)
{
	(void)h; /* BROKEN twin: forgets to free */
}

static size_t heap_in_use(void)
{
	return mallinfo2().uordblks;
}

/*
 * Bytes still allocated after n objects were queued with
 * SK_FREE_RCU() (or, leak, with a callback that does not free) and
 * sk_rcu_barrier() returned, relative to before; also how many bytes the
 * n objects took (0: mallinfo2() is not meaningful, e.g. under ASan).
 */
static void free_rcu_round(unsigned long n, int leak, long *remaining,
			   long *allocated)
{
	struct fobj **o = calloc(n, sizeof(*o));
	struct sk_rcu_stats s0, s1;
	size_t b0, b1, b2;
	unsigned long i;

	SK_CHECK(o != NULL);
	sk_rcu_barrier();
	s0 = sk_test_rcu_stats();
	b0 = heap_in_use();
	for (i = 0; i < n; i++) {
		o[i] = malloc(sizeof(**o));
		SK_CHECK(o[i] != NULL);
		memset(o[i], 0, sizeof(**o));
	}
	b1 = heap_in_use();
	for (i = 0; i < n; i++)
		SK_CHECK_EQ(leak ? sk_call_rcu(&o[i]->rcu, leak_cb)
				 : SK_FREE_RCU(o[i], rcu),
			    0);
	sk_rcu_barrier();
	b2 = heap_in_use();
	s1 = sk_test_rcu_stats();
	SK_CHECK_EQ(s1.cb_invoked - s0.cb_invoked, n);
	if (leak)
		for (i = 0; i < n; i++)
			free(o[i]);
	free(o);
	*allocated = (long)(b1 - b0);
	*remaining = (long)(b2 - b0);
}

/*
 * SK_FREE_RCU() frees the object (head in the middle of it): after the
 * barrier the heap is back where it was (mallinfo2), and the callbacks
 * were counted.  A twin whose callback leaks must be caught by the same
 * measurement.  Under ASan mallinfo2() says nothing; LeakSanitizer checks
 * at exit instead.
 */
static void free_rcu_frees_the_object(void)
{
	unsigned long n = 20000 / sk_test_slow();
	long rem, alloc;

	free_rcu_round(n, 0, &rem, &alloc);
	fprintf(stderr, "SK_FREE_RCU: %ld bytes allocated, %ld remain\n", alloc,
		rem);
	if (alloc < (long)(n * sizeof(struct fobj))) {
		fprintf(stderr, "mallinfo2() not meaningful here; relying on "
				"the leak checker\n");
		return;
	}
	SK_CHECK_LE(rem, alloc / 10);
	free_rcu_round(n, 1, &rem, &alloc);
	fprintf(stderr, "leaking twin: %ld bytes allocated, %ld remain\n",
		alloc, rem);
	SK_CHECK_GT(rem, alloc / 10);
}

struct zobj {
	struct sk_rcu_head rcu; /* the usual layout: head first */
	long v;
};

/*
 * SK_FREE_RCU() with the head as the first member (offset 0), the most
 * common layout, is accepted and frees the object.
 */
static void free_rcu_with_head_at_offset_zero(void)
{
	struct zobj *z = calloc(1, sizeof(*z));
	struct sk_rcu_stats s0, s1;
	int err;

	sk_rcu_barrier();
	s0 = sk_test_rcu_stats();
	err = SK_FREE_RCU(z, rcu);
	SK_CHECK_EQ(err, 0);
	sk_rcu_barrier();
	s1 = sk_test_rcu_stats();
	SK_CHECK_EQ(s1.cb_invoked - s0.cb_invoked, 1);
	if (err)
		free(z); /* refused: still ours */
}

/* ---- double queueing -------------------------------------------------- */

static int dq_runs;
static void dq_cb(struct sk_rcu_head *h)
{
	(void)h;
	INC(dq_runs);
}

/*
 * Every build: queueing a head that is queued and has not run returns
 * -EBUSY and prints nothing (a returned error is not printed); the
 * callback runs once.  The head is held in the queue by our own read
 * section meanwhile.  Once it has run, it may be queued again.
 */
static void double_queue_returns_ebusy_and_runs_once(void)
{
	static struct sk_rcu_head h;
	struct sk_test_capture c;
	struct sk_rcu_stats s0, s1;
	char err[1024];
	int r1, r2;

	sk_rcu_barrier();
	STORE(dq_runs, 0);
	s0 = sk_test_rcu_stats();
	sk_rcu_read_lock(); /* the callback cannot run before we leave */
	r1 = sk_call_rcu(&h, dq_cb);
	sk_test_capture_begin(&c);
	r2 = sk_call_rcu(&h, dq_cb);
	sk_test_capture_end(&c, err, sizeof(err));
	sk_rcu_read_unlock();
	SK_CHECK_EQ(r1, 0);
	SK_CHECK_EQ(r2, -EBUSY);
	SK_CHECK_EQ(err[0], '\0'); /* a returned error prints nothing */
	sk_rcu_barrier();
	s1 = sk_test_rcu_stats();
	SK_CHECK_EQ(LOAD(dq_runs), 1);
	SK_CHECK_EQ(s1.cb_queued - s0.cb_queued, 1);
	SK_CHECK_EQ(s1.cb_invoked - s0.cb_invoked, 1);

	/* After it ran, the same head may be queued again. */
	SK_CHECK_EQ(sk_call_rcu(&h, dq_cb), 0);
	sk_rcu_barrier();
	SK_CHECK_EQ(LOAD(dq_runs), 2);
}

struct dq_obj {
	struct sk_rcu_head rcu;
	int runs;
};

static void dq_obj_cb(struct sk_rcu_head *h)
{
	INC(OF(h, struct dq_obj, rcu)->runs);
}

/*
 * Queueing a head a second time loses no other callback: with a, h, b, h
 * (refused), c queued by one thread, a, h, b and c each run once and the
 * queued and invoked counts agree.  (Without the check, the second push
 * of h cut b off the queue: b never ran and the counts never matched
 * again.)  The same for SK_FREE_RCU() of one object twice: the second is
 * refused (without the check: a double free).  Neither refusal prints.
 */
static void double_queue_loses_no_other_callback(void)
{
	static struct dq_obj o[4]; /* a, h, b, c */
	static const int order[] = { 0, 1, 2, 1, 3 };
	struct dq_obj *f = calloc(1, sizeof(*f));
	struct sk_test_capture cap;
	struct sk_rcu_stats s0, s1;
	char err[2048];
	int r[5], rf1, rf2, i;

	SK_CHECK(f != NULL);
	sk_rcu_barrier();
	memset(o, 0, sizeof(o));
	s0 = sk_test_rcu_stats();
	sk_rcu_read_lock(); /* nothing runs before we leave */
	sk_test_capture_begin(&cap);
	for (i = 0; i < 5; i++)
		r[i] = sk_call_rcu(&o[order[i]].rcu, dq_obj_cb);
	rf1 = SK_FREE_RCU(f, rcu);
	rf2 = SK_FREE_RCU(f, rcu);
	sk_test_capture_end(&cap, err, sizeof(err));
	sk_rcu_read_unlock();
	sk_rcu_barrier();
	s1 = sk_test_rcu_stats();
	SK_CHECK_EQ(r[0], 0);
	SK_CHECK_EQ(r[1], 0);
	SK_CHECK_EQ(r[2], 0);
	SK_CHECK_EQ(r[3], -EBUSY);
	SK_CHECK_EQ(r[4], 0);
	SK_CHECK_EQ(rf1, 0);
	SK_CHECK_EQ(rf2, -EBUSY);
	for (i = 0; i < 4; i++)
		SK_CHECK_EQ(LOAD(o[i].runs), 1);
	SK_CHECK_EQ(err[0], '\0'); /* returned errors print nothing */
	SK_CHECK_EQ(s1.cb_queued - s0.cb_queued, 5);
	SK_CHECK_EQ(s1.cb_invoked - s0.cb_invoked, 5);
	SK_CHECK_EQ(s1.cb_queued, s1.cb_invoked);
}

/*
 * The check recognises only the head it marked: a copy of a queued head
 * (a struct assignment, e.g. of an object read under RCU) and a head
 * whose memory holds leftovers are queued normally.
 */
static void copy_of_queued_head_is_not_queued(void)
{
	static struct dq_obj a, copy, junk;
	struct sk_test_capture cap;
	char err[1024];
	int r1, r2, r3;

	sk_rcu_barrier();
	memset(&a, 0, sizeof(a));
	memset(&junk, 0xa5, sizeof(junk));
	junk.runs = 0;
	sk_rcu_read_lock();
	sk_test_capture_begin(&cap);
	r1 = sk_call_rcu(&a.rcu, dq_obj_cb);
	copy = a; /* the copy carries a's queued state word */
	r2 = sk_call_rcu(&copy.rcu, dq_obj_cb);
	r3 = sk_call_rcu(&junk.rcu, dq_obj_cb);
	sk_test_capture_end(&cap, err, sizeof(err));
	sk_rcu_read_unlock();
	SK_CHECK_EQ(r1, 0);
	SK_CHECK_EQ(r2, 0);
	SK_CHECK_EQ(r3, 0);
	SK_CHECK_EQ(sk_test_count_substr(err, "scalekit: "), 0);
	sk_rcu_barrier();
	SK_CHECK_EQ(LOAD(a.runs), 1);
	SK_CHECK_EQ(LOAD(copy.runs), 1);
	SK_CHECK_EQ(LOAD(junk.runs), 1);
}

/* The child of double_queue_goes_on_and_prints_nothing. */
static void child_double_queue(void)
{
	static struct sk_rcu_head h;

	fprintf(stderr, "pid %d\n", (int)getpid());
	sk_rcu_read_lock();
	if (sk_call_rcu(&h, dq_cb) != 0)
		_exit(3);
	if (sk_call_rcu(&h, dq_cb) != -EBUSY)
		_exit(4);
	sk_rcu_read_unlock();
	sk_rcu_barrier();
	_exit(LOAD(dq_runs) == 1 ? 0 : 5);
}

/*
 * A double sk_call_rcu() in a fresh process (every build; in a child
 * process, as the death tests): the program goes on (exit 0: no abort,
 * the second request is dropped and -EBUSY returned, the callback runs
 * once), and the library prints nothing: the error is returned.
 */
static void double_queue_goes_on_and_prints_nothing(void)
{
	char out[4096];
	int st = run_child("double-queue", out, sizeof(out));

	SK_CHECK_EXIT_0(st);
	SK_CHECK_STR_CONTAINS(out, "pid "); /* the capture works */
	SK_CHECK_EQ(sk_test_count_substr(out, "scalekit"), 0);
}

/* ---- death tests ---------------------------------------------------------- */

static void child_barrier_in_section(void)
{
	sk_rcu_read_lock();
	sk_rcu_barrier();
	fprintf(stderr, "sk_rcu_barrier() returned inside a section\n");
}

static struct sk_rcu_head death_head;
static void barrier_from_callback(struct sk_rcu_head *h)
{
	(void)h;
	sk_rcu_barrier();
	fprintf(stderr, "sk_rcu_barrier() returned inside a callback\n");
}

static void child_barrier_in_callback(void)
{
	/* Our own barrier waits for the callback, which must abort. */
	if (sk_call_rcu(&death_head, barrier_from_callback) != 0)
		fprintf(stderr, "sk_call_rcu failed\n");
	sk_rcu_barrier();
}

static void check_aborted(int st, const char *out, const char *what)
{
	if (!WIFSIGNALED(st))
		fprintf(stderr, "%s: child exited with status %d\n", what,
			WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	SK_CHECK_ABORTED(st);
	SK_CHECK_STR_CONTAINS(out, "sk_rcu_barrier()");
	SK_CHECK_STR_CONTAINS(out, "scalekit: thread ");
}

/*
 * sk_rcu_barrier() inside a read section would wait for itself: message
 * and abort (in a child process).
 */
static void barrier_inside_read_section_aborts(void)
{
	char out[4096];
	int st = run_child("barrier-in-section", out, sizeof(out));

	check_aborted(st, out, "barrier in section");
	SK_CHECK_STR_CONTAINS(out, "read-side critical section");
}

/* sk_rcu_barrier() from a callback would wait for itself: message, abort. */
static void barrier_inside_callback_aborts(void)
{
	char out[4096];
	int st = run_child("barrier-in-callback", out, sizeof(out));

	check_aborted(st, out, "barrier in callback");
	SK_CHECK_STR_CONTAINS(out, "callback");
}

/* ---- flood ---------------------------------------------------------------- */

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
	if (argc == 2 && !strcmp(argv[1], "--child=barrier-in-section")) {
		child_barrier_in_section();
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "--child=double-queue"))
		child_double_queue();
	if (argc == 2 && !strcmp(argv[1], "--child=barrier-in-callback")) {
		child_barrier_in_callback();
		return 0;
	}
	sk_test_args(argc, argv);
	make_broken_ops();
	sk_test_seed_init();
	SK_RUN(call_rcu_rejects_invalid_arguments);
	SK_RUN(callback_waits_for_preexisting_reader);
	SK_RUN(callback_queued_inside_section_waits_for_it);
	SK_RUN(every_callback_runs_once_in_producer_order);
	SK_RUN(one_grace_period_serves_a_batch);
	SK_RUN(callbacks_requeue_and_barrier_waits_for_queued_links);
	SK_RUN(barrier_waits_for_every_producer);
	SK_RUN(concurrent_barriers_each_see_their_callbacks);
	SK_RUN(barrier_with_nothing_pending_runs_no_grace_period);
	SK_RUN(free_rcu_frees_the_object);
	SK_RUN(free_rcu_with_head_at_offset_zero);
	SK_RUN(double_queue_returns_ebusy_and_runs_once);
	SK_RUN(double_queue_loses_no_other_callback);
	SK_RUN(copy_of_queued_head_is_not_queued);
	SK_RUN(double_queue_goes_on_and_prints_nothing);
	SK_RUN(barrier_inside_read_section_aborts);
	SK_RUN(barrier_inside_callback_aborts);
	SK_RUN(flood_makes_progress_in_bounded_memory);
	return sk_test_report();
}
