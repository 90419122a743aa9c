/* SPDX-License-Identifier: MIT */
/*
 * test_srcu_callbacks.c - srcu.h: sk_call_srcu() and sk_srcu_barrier():
 * callbacks wait for pre-existing readers, run in FIFO order exactly once,
 * may requeue themselves; the barrier waits for callbacks queued before it
 * and for a running one; many threads on many domains, checked by the
 * generation checker of sk_test_srcu.h, whose broken twin (a "call_srcu"
 * that runs the callback at once: the busted twin of the torture tool's
 * SRCU ops, through which that check calls every domain) MUST be caught.
 *
 * No assertion bounds wall-clock time.  "test_srcu_callbacks <name>" runs only
 * the tests whose name contains <name>.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "scalekit/rcu.h"
#include "scalekit/srcu.h"

#include "rcu_stress.h"
#include "sk_test.h"
#include "sk_test_srcu.h"
#include "sk_test_util.h"

/* ---- callbacks ----------------------------------------------------------- */

static void call_srcu_waits_for_preexisting_reader(void)
{
	struct sk_srcu *d = domain_new();
	struct counted c = { .runs = 0 };
	struct holder h;
	int idx;

	holder_start(&h, d, &c.runs); /* samples runs just before leaving */
	idx = sk_srcu_read_lock(d);   /* queued from inside a section */
	SK_CHECK_EQ(sk_call_srcu(d, &c.rh, counted_cb), 0);
	sk_srcu_read_unlock(d, idx);
	sk_test_sleep_ms(50);
	SK_CHECK_EQ(__atomic_load_n(&c.runs, __ATOMIC_ACQUIRE), 0);
	holder_finish(&h);
	SK_CHECK_EQ(h.watched, 0); /* not run while the reader was inside */
	barrier_settle(d, &c);
	SK_CHECK_EQ(__atomic_load_n(&c.runs, __ATOMIC_ACQUIRE), 1);
	domain_free(d);
}

struct ordered {
	struct sk_rcu_head rh;
	unsigned int thread, dom;
	unsigned long seq;
	int runs;
};

static unsigned long fifo_pos;
static unsigned long *fifo_order;

static void fifo_cb(struct sk_rcu_head *h)
{
	struct ordered *o = (struct ordered *)h;
	unsigned long pos = __atomic_fetch_add(&fifo_pos, 1, __ATOMIC_RELAXED);

	__atomic_store_n(&fifo_order[pos], o->seq, __ATOMIC_RELAXED);
	__atomic_fetch_add(&o->runs, 1, __ATOMIC_RELEASE);
}

static void callbacks_run_in_fifo_order_exactly_once(void)
{
	struct sk_srcu *d = domain_new();
	unsigned long i, n = 20000 / sk_tsrcu_slow, bad = 0, twice = 0;
	struct ordered *o = calloc(n, sizeof(*o));
	struct holder h;

	fifo_pos = 0;
	fifo_order = calloc(n, sizeof(*fifo_order));
	for (i = 0; i < n; i++) {
		if (i == n / 3)
			holder_start(&h, d, NULL); /* batches form */
		if (i == 2 * n / 3)
			holder_finish(&h);
		o[i].seq = i;
		SK_CHECK_EQ(sk_call_srcu(d, &o[i].rh, fifo_cb), 0);
	}
	sk_srcu_barrier(d);
	while (__atomic_load_n(&fifo_pos, __ATOMIC_ACQUIRE) < n)
		sk_test_sleep_us(100);
	sk_srcu_barrier(d);
	for (i = 0; i < n; i++) {
		if (__atomic_load_n(&fifo_order[i], __ATOMIC_RELAXED) != i)
			bad++;
		if (__atomic_load_n(&o[i].runs, __ATOMIC_ACQUIRE) != 1)
			twice++;
	}
	SK_CHECK_EQ(__atomic_load_n(&fifo_pos, __ATOMIC_ACQUIRE), n);
	SK_CHECK_EQ(bad, 0);
	SK_CHECK_EQ(twice, 0);
	free(fifo_order);
	free(o);
	domain_free(d);
}

struct slow_cb {
	struct sk_rcu_head rh;
	int started;
	int done;
	unsigned int ms;
};

static void slow_cb_fn(struct sk_rcu_head *h)
{
	struct slow_cb *s = (struct slow_cb *)h;

	flag_set(&s->started);
	sk_test_sleep_ms(s->ms);
	flag_set(&s->done);
}

static void barrier_waits_for_callbacks_queued_before(void)
{
	struct sk_srcu *d = domain_new();
	struct slow_cb s[50];
	struct holder h;
	int i, done = 0;

	memset(s, 0, sizeof(s));
	holder_start(&h, d, NULL);
	for (i = 0; i < 50; i++) {
		s[i].ms = 1;
		SK_CHECK_EQ(sk_call_srcu(d, &s[i].rh, slow_cb_fn), 0);
	}
	holder_finish(&h);
	sk_srcu_barrier(d);
	for (i = 0; i < 50; i++)
		done += flag_get(&s[i].done);
	SK_CHECK_EQ(done, 50);
	for (i = 0; i < 50; i++)
		while (!flag_get(&s[i].done))
			sk_test_sleep_us(100);
	domain_free(d);
}

/*
 * A callback already running when sk_srcu_barrier() is called was queued
 * before it: the barrier must wait for it and for the ones behind it.
 * (Library bug seen here: the worker detaches the batch before running
 * it, and the barrier then finds nothing pending.)
 */
static void barrier_waits_for_a_running_callback(void)
{
	struct sk_srcu *d = domain_new();
	struct slow_cb s = { .ms = 100 };
	int done;

	SK_CHECK_EQ(sk_call_srcu(d, &s.rh, slow_cb_fn), 0);
	flag_wait(&s.started);
	sk_srcu_barrier(d);
	done = flag_get(&s.done);
	SK_CHECK_EQ(done, 1);
	/* Whatever the barrier did, let it finish before the stack goes. */
	flag_wait(&s.done);
	domain_free(d);
}

struct requeue {
	struct sk_rcu_head rh;
	struct sk_srcu *d;
	int runs;
	int limit;
	int err;
};

static void requeue_cb(struct sk_rcu_head *h)
{
	struct requeue *r = (struct requeue *)h;
	int n = __atomic_add_fetch(&r->runs, 1, __ATOMIC_ACQ_REL);

	/* A callback may queue its own head again (and not a barrier). */
	if (n < r->limit && sk_call_srcu(r->d, &r->rh, requeue_cb) != 0)
		__atomic_store_n(&r->err, 1, __ATOMIC_RELEASE);
}

static void callback_may_requeue_itself(void)
{
	struct sk_srcu *d = domain_new();
	struct requeue r = { .d = d, .limit = 50 };
	int i;

	SK_CHECK_EQ(sk_call_srcu(d, &r.rh, requeue_cb), 0);
	for (i = 0;
	     i < 1000 && __atomic_load_n(&r.runs, __ATOMIC_ACQUIRE) < r.limit;
	     i++)
		sk_srcu_barrier(d);
	while (__atomic_load_n(&r.runs, __ATOMIC_ACQUIRE) < r.limit)
		sk_test_sleep_us(100);
	sk_srcu_barrier(d);
	SK_CHECK_EQ(__atomic_load_n(&r.runs, __ATOMIC_ACQUIRE), r.limit);
	SK_CHECK_EQ(__atomic_load_n(&r.err, __ATOMIC_ACQUIRE), 0);
	domain_free(d);
}

/*
 * Several threads queue callbacks on several domains at once while
 * readers come and go (some sleeping).  Every callback runs exactly once,
 * in queue order per (thread, domain), and after every section of its
 * domain that began before it was queued (generation checker).  Twin: a
 * "call_srcu" that runs the callback at once must be caught by the same
 * checker.
 */
#define MD_DOMS 4
#define MD_THREADS 4

struct md_cb {
	struct sk_rcu_head rh;
	struct gen_dom *g;
	unsigned long g0;
	unsigned int thread, dom;
	unsigned long seq;
	int runs;
};

struct md_run {
	struct gen_dom g[MD_DOMS];
	long last[MD_THREADS][MD_DOMS]; /* atomic: last seq run */
	unsigned long order_bad;	/* atomic */
	unsigned long run_count;	/* atomic */
	int stop;
	int broken;		    /* the domains are the busted twin's */
	struct sk_tort_ops busted; /* the SRCU ops' busted twin */
	unsigned long per_thread;
	struct md_cb *cbs[MD_THREADS];
};

static struct md_run *md;

static void md_cb_fn(struct sk_rcu_head *h)
{
	struct md_cb *c = (struct md_cb *)h;
	long *last = &md->last[c->thread][c->dom];

	gen_check(c->g, c->g0);
	if ((long)c->seq <= __atomic_load_n(last, __ATOMIC_RELAXED))
		__atomic_fetch_add(&md->order_bad, 1, __ATOMIC_RELAXED);
	__atomic_store_n(last, (long)c->seq, __ATOMIC_RELAXED);
	__atomic_fetch_add(&c->runs, 1, __ATOMIC_RELEASE);
	__atomic_fetch_add(&md->run_count, 1, __ATOMIC_RELEASE);
}

struct md_thread {
	unsigned int i;
	pthread_t tid;
};

static void *md_reader(void *arg)
{
	struct md_thread *me = arg;
	uint64_t rng = sk_tsrcu_seed * 131 + me->i + 1;

	while (!flag_get(&md->stop)) {
		unsigned int k = (unsigned int)(sk_test_rand(&rng) % MD_DOMS);

		gen_section(&md->g[k], (int)me->i, &rng, 300);
	}
	return NULL;
}

static void *md_queuer(void *arg)
{
	struct md_thread *me = arg;
	uint64_t rng = sk_tsrcu_seed * 977 + me->i + 1;
	unsigned long k;

	for (k = 0; k < md->per_thread; k++) {
		struct md_cb *c = &md->cbs[me->i][k];
		uint64_t x = sk_test_rand(&rng);
		unsigned int dom = (unsigned int)(x % MD_DOMS);
		int idx = 0, inside = ((x >> 8) & 3) == 0;

		c->thread = me->i;
		c->dom = dom;
		c->seq = k;
		c->g = &md->g[dom];
		if (inside) /* queued from inside a section of dom */
			idx = c->g->ops->readlock(c->g->ctx);
		c->g0 = gen_begin(c->g);
		/* Busted twin: runs md_cb_fn() at once, no grace period. */
		if (c->g->ops->call(c->g->ctx, &c->rh, md_cb_fn) != 0)
			SK_T_FAIL("%s", "call failed");
		if (inside)
			c->g->ops->readunlock(c->g->ctx, idx);
		if (md->broken)
			sk_test_sleep_us(20); /* let the readers overlap */
		else if (((x >> 12) & 63) == 0)
			sched_yield();
	}
	return NULL;
}

static unsigned long md_run_once(int broken)
{
	struct md_thread rd[GEN_READERS], q[MD_THREADS];
	unsigned long k, viol = 0, not_once = 0, total;
	unsigned int i, j;

	md = calloc(1, sizeof(*md));
	md->broken = broken;
	md->per_thread = (broken ? 2000 : 10000) / sk_tsrcu_slow;
	total = md->per_thread * MD_THREADS;
	sk_tort_make_busted(&sk_tort_srcu_ops, &md->busted);
	for (j = 0; j < MD_DOMS; j++) /* one ops, MD_DOMS instances */
		gen_dom_init(&md->g[j], broken ? &md->busted : NULL);
	for (i = 0; i < MD_THREADS; i++) {
		md->cbs[i] = calloc(md->per_thread, sizeof(struct md_cb));
		for (j = 0; j < MD_DOMS; j++)
			md->last[i][j] = -1;
	}
	for (i = 0; i < GEN_READERS; i++) {
		rd[i].i = i;
		sk_test_thread_start(&rd[i].tid, md_reader, &rd[i]);
	}
	for (j = 0; j < MD_DOMS; j++)
		gen_wait_readers(&md->g[j], 4);
	for (i = 0; i < MD_THREADS; i++) {
		q[i].i = i;
		sk_test_thread_start(&q[i].tid, md_queuer, &q[i]);
	}
	for (i = 0; i < MD_THREADS; i++)
		sk_test_thread_join(q[i].tid);
	for (j = 0; j < MD_DOMS; j++)
		md->g[j].ops->cb_barrier(md->g[j].ctx);
	while (__atomic_load_n(&md->run_count, __ATOMIC_ACQUIRE) < total)
		sk_test_sleep_us(100);
	flag_set(&md->stop);
	for (i = 0; i < GEN_READERS; i++)
		sk_test_thread_join(rd[i].tid);
	for (i = 0; i < MD_THREADS; i++)
		for (k = 0; k < md->per_thread; k++)
			if (__atomic_load_n(&md->cbs[i][k].runs,
					    __ATOMIC_ACQUIRE) != 1)
				not_once++;
	for (j = 0; j < MD_DOMS; j++) {
		viol += md->g[j].violations;
		gen_dom_fini(&md->g[j]);
	}
	fprintf(stderr,
		"  %s: %lu callbacks on %d domains from %d threads, "
		"%lu grace-period violations, %lu out of order, %lu "
		"not run once\n",
		broken ? "BROKEN (run at once)" : "sk_call_srcu", total,
		MD_DOMS, MD_THREADS, viol, md->order_bad, not_once);
	SK_CHECK_EQ(not_once, 0);
	SK_CHECK_EQ(md->order_bad, 0);
	SK_CHECK_EQ(__atomic_load_n(&md->run_count, __ATOMIC_ACQUIRE), total);
	for (i = 0; i < MD_THREADS; i++)
		free(md->cbs[i]);
	free(md);
	md = NULL;
	return viol;
}

static void callbacks_from_many_threads_and_domains(void)
{
	SK_CHECK_EQ(md_run_once(0), 0);
	SK_CHECK_GT(md_run_once(1), 0); /* the checker MUST catch it */
}

int main(int argc, char **argv)
{
	sk_test_srcu_start(argc, argv);

	/* callbacks */
	SK_RUN(call_srcu_waits_for_preexisting_reader);
	SK_RUN(callbacks_run_in_fifo_order_exactly_once);
	SK_RUN(barrier_waits_for_callbacks_queued_before);
	SK_RUN(barrier_waits_for_a_running_callback);
	SK_RUN(callback_may_requeue_itself);
	SK_RUN(callbacks_from_many_threads_and_domains);
	return sk_test_report();
}
