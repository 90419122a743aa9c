/* SPDX-License-Identifier: MIT */
/* sk_test_srcu.h: the helpers of the SRCU test programs (white box). */
#define _GNU_SOURCE
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* White box: the private state of a domain (d->state), for poll_wait(). */
#include "internal/srcu.h"

#include "rcu_stress.h"
#include "sk_test.h"
#include "sk_test_srcu.h"
#include "sk_test_util.h"

int flag_get(int *f)
{
	return __atomic_load_n(f, __ATOMIC_ACQUIRE);
}

void flag_set(int *f)
{
	__atomic_store_n(f, 1, __ATOMIC_RELEASE);
}

void flag_wait(int *f)
{
	while (!flag_get(f))
		sk_test_sleep_us(100);
}

struct sk_srcu *domain_new(void)
{
	/* struct sk_srcu is cache-line aligned: malloc() is not enough. */
	struct sk_srcu *d = aligned_alloc(SK_CACHELINE, sizeof(*d));

	if (!d) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	if (sk_srcu_init(d) != 0)
		SK_T_FAIL("%s", "sk_srcu_init failed");
	return d;
}

void domain_free(struct sk_srcu *d)
{
	SK_CHECK_EQ(sk_srcu_destroy(d), 0);
	free(d);
}

long cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000L +
	       ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

void gate_init(struct gate *g)
{
	pthread_mutex_init(&g->m, NULL);
	pthread_cond_init(&g->c, NULL);
	g->open = 0;
}

void gate_wait(struct gate *g)
{
	pthread_mutex_lock(&g->m);
	while (!g->open)
		pthread_cond_wait(&g->c, &g->m);
	pthread_mutex_unlock(&g->m);
}

void gate_open(struct gate *g)
{
	pthread_mutex_lock(&g->m);
	g->open = 1;
	pthread_cond_broadcast(&g->c);
	pthread_mutex_unlock(&g->m);
}

static void *holder_main(void *arg)
{
	struct holder *h = arg;
	int idx = sk_srcu_read_lock(h->d);

	flag_set(&h->in);
	gate_wait(&h->release);
	if (h->watch)
		h->watched = __atomic_load_n(h->watch, __ATOMIC_ACQUIRE);
	flag_set(&h->out);
	sk_srcu_read_unlock(h->d, idx);
	return NULL;
}

void holder_start(struct holder *h, struct sk_srcu *d, int *watch)
{
	memset(h, 0, sizeof(*h));
	h->d = d;
	h->watch = watch;
	gate_init(&h->release);
	sk_test_thread_start(&h->tid, holder_main, h);
	flag_wait(&h->in);
}

void holder_finish(struct holder *h)
{
	gate_open(&h->release);
	sk_test_thread_join(h->tid);
}

static void *syncer_main(void *arg)
{
	struct syncer *s = arg;

	flag_set(&s->ready);
	if (s->expedited)
		sk_synchronize_srcu_expedited(s->d);
	else
		sk_synchronize_srcu(s->d);
	flag_set(&s->done);
	return NULL;
}

void syncer_start(struct syncer *s, struct sk_srcu *d, int expedited)
{
	memset(s, 0, sizeof(*s));
	s->d = d;
	s->expedited = expedited;
	sk_test_thread_start(&s->tid, syncer_main, s);
	flag_wait(&s->ready);
}

void counted_cb(struct sk_rcu_head *h)
{
	struct counted *c =
		(struct counted *)((char *)h - offsetof(struct counted, rh));

	if (c->watch)
		c->sample = __atomic_load_n(c->watch, __ATOMIC_ACQUIRE);
	__atomic_fetch_add(&c->runs, 1, __ATOMIC_ACQ_REL);
}

void barrier_settle(struct sk_srcu *d, struct counted *c)
{
	sk_srcu_barrier(d);
	while (!__atomic_load_n(&c->runs, __ATOMIC_ACQUIRE))
		sk_test_sleep_us(100);
}

void poll_wait(struct sk_srcu *d, unsigned long cookie,
	       unsigned long *lost)
{
	while (!sk_poll_state_synchronize_srcu(d, cookie)) {
		if (!__atomic_load_n(&d->state->in_work, __ATOMIC_SEQ_CST) &&
		    !sk_poll_state_synchronize_srcu(d, cookie)) {
			(*lost)++;
			sk_start_poll_synchronize_srcu(d);
		}
		sched_yield();
	}
}

void gen_dom_init(struct gen_dom *g, const struct sk_tort_ops *ops)
{
	memset(g, 0, sizeof(*g));
	g->ops = ops ? ops : &sk_tort_srcu_ops;
	if (g->ops->init(&g->ctx) != 0)
		SK_T_FAIL("%s", "the SRCU ops' init failed");
}

void gen_dom_fini(struct gen_dom *g)
{
	SK_CHECK_EQ(g->ops->cleanup(g->ctx), 0);
	g->ctx = NULL;
}

void gen_section(struct gen_dom *g, int r, uint64_t *rng,
		 unsigned int sleep_us_max)
{
	int idx = g->ops->readlock(g->ctx);
	unsigned long gen = SK_READ_ONCE(g->gen);
	uint64_t x = sk_test_rand(rng);

	SK_WRITE_ONCE(g->rec[r].v, 2 * gen + 1);
	if (sleep_us_max && (x & 3) == 0)
		sk_test_sleep_us(1 + (x >> 8) % sleep_us_max);
	else
		sk_stress_spin(rng, 300);
	SK_WRITE_ONCE(g->rec[r].v, 0UL);
	g->ops->readunlock(g->ctx, idx);
	__atomic_fetch_add(&g->sections, 1, __ATOMIC_RELAXED);
}

void gen_wait_readers(struct gen_dom *g, unsigned long n)
{
	while (__atomic_load_n(&g->sections, __ATOMIC_RELAXED) < n)
		sk_test_sleep_us(100);
}

unsigned long gen_begin(struct gen_dom *g)
{
	/* seq_cst: the bump precedes the grace period the caller starts next. */
	return __atomic_fetch_add(&g->gen, 1, __ATOMIC_SEQ_CST);
}

void gen_check(struct gen_dom *g, unsigned long g0)
{
	int r;

	for (r = 0; r < GEN_READERS; r++) {
		unsigned long v = SK_READ_ONCE(g->rec[r].v);

		__atomic_fetch_add(&g->checks, 1, __ATOMIC_RELAXED);
		if ((v & 1) && (v >> 1) <= g0)
			__atomic_fetch_add(&g->violations, 1, __ATOMIC_RELAXED);
	}
}

uint64_t sk_tsrcu_seed;
unsigned int sk_tsrcu_slow = 1;

void sk_test_srcu_start(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_tsrcu_seed = sk_test_seed_init();
	sk_tsrcu_slow = sk_test_slow();
}
