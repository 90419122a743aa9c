/* SPDX-License-Identifier: MIT */
/* The locks' stress loop (lock_stress.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lock_stress.h"
#include "torture_ops.h"

struct sk_lks_thread {
	struct sk_lks *s;
	pthread_t tid;
	struct sk_tort_rng rng;
	unsigned long id;    /* 1.. : the owner field's value */
	unsigned long one_in; /* writes: one section in; 1 writer, 0 reader */
	unsigned long reads, writes, retries, overlaps, torn; /* relaxed */
} __attribute__((aligned(SK_CACHELINE)));

struct sk_lks {
	const struct sk_lks_cfg *cfg;
	void *lock; /* cfg->lock, or own */
	struct sk_lks_thread *th;
	unsigned long n, started;
	int stop;	 /* atomic */
	int left;	 /* atomic: writers and mixed threads still running */
	int at_line;	 /* atomic: threads at the start line */
	unsigned long printed; /* atomic: error lines printed */
	double end;	 /* readers' deadline (iters), or 0 */
	union sk_tort_lock own;
	/* The guarded data, on its own line. */
	unsigned long owner __attribute__((aligned(SK_CACHELINE)));
	unsigned long shadow;
	unsigned long w[SK_LKS_WORDS];
};

static double lks_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void lks_inc(unsigned long *c)
{
	sk_atomic_store_relaxed(c, sk_atomic_load_relaxed(c) + 1);
}

static void lks_error(struct sk_lks_thread *t, unsigned long *count,
		      const char *what, unsigned long a, unsigned long b)
{
	struct sk_lks *s = t->s;

	lks_inc(count);
	if (__atomic_fetch_add(&s->printed, 1, __ATOMIC_RELAXED) <
	    s->cfg->print_errors)
		fprintf(stderr, "ERROR: %s thread %lu: %s (%lu vs %lu)\n",
			s->cfg->label ? s->cfg->label : s->cfg->ops->name,
			t->id, what, a, b);
	if (s->cfg->stop_on_error)
		sk_atomic_store_release(&s->stop, 1);
}

/* The shadow counter: plain with a working lock, relaxed when busted. */
static unsigned long lks_shadow_get(struct sk_lks *s)
{
	return s->cfg->busted ? SK_READ_ONCE(s->shadow)
			      : *(volatile unsigned long *)&s->shadow;
}

static void lks_shadow_set(struct sk_lks *s, unsigned long v)
{
	if (s->cfg->busted)
		SK_WRITE_ONCE(s->shadow, v);
	else
		*(volatile unsigned long *)&s->shadow = v;
}

static void lks_write_lock(struct sk_lks *s)
{
	const struct sk_tort_lock_ops *o = s->cfg->ops;

	if (s->cfg->nolock)
		return;
	if (!s->cfg->try)
		o->write_lock(s->lock);
	else
		while (o->write_trylock(s->lock) != 0)
			sched_yield();
}

static void lks_write_section(struct sk_lks_thread *t)
{
	struct sk_lks *s = t->s;
	unsigned long v, o, yield_in = s->cfg->busted ? 4 : 256;
	int k;

	lks_write_lock(s);
	o = SK_READ_ONCE(s->owner);
	if (o != 0)
		lks_error(t, &t->overlaps, "lock taken while another thread "
			  "owns it", o, 0);
	SK_WRITE_ONCE(s->owner, t->id);
	v = lks_shadow_get(s) + 1;
	sk_tort_spin(&t->rng, 8);
	if (sk_tort_one_in(&t->rng, 16))
		sched_yield(); /* a second writer inside loses an update */
	lks_shadow_set(s, v);
	for (k = 0; k < SK_LKS_WORDS; k++) {
		SK_WRITE_ONCE(s->w[k], v);
		sk_tort_spin(&t->rng, 16);
		/* Preempted inside the section (the twins' readers see it). */
		if (sk_tort_one_in(&t->rng, yield_in))
			sched_yield();
	}
	o = SK_READ_ONCE(s->owner);
	if (o != t->id)
		lks_error(t, &t->overlaps, "owner changed inside a write "
			  "section", o, t->id);
	SK_WRITE_ONCE(s->owner, 0);
	if (!s->cfg->nolock)
		s->cfg->ops->write_unlock(s->lock);
	lks_inc(&t->writes);
}

static unsigned int lks_read_lock(struct sk_lks *s)
{
	const struct sk_tort_lock_ops *o = s->cfg->ops;

	if (s->cfg->nolock)
		return 0;
	if (!s->cfg->try)
		return o->read_lock(s->lock);
	while (o->read_trylock(s->lock) != 0)
		sched_yield();
	return 0;
}

/* Copy owner, shadow and words (*sh: only where readers exclude writers). */
static void lks_read_copy(struct sk_lks_thread *t, unsigned long *o,
			  unsigned long *sh, unsigned long *w)
{
	struct sk_lks *s = t->s;
	int k;

	*o = SK_READ_ONCE(s->owner);
	/* A seqlock reader races with writers by design: no plain load. */
	*sh = s->cfg->ops->seqlock ? 0 : lks_shadow_get(s);
	for (k = 0; k < SK_LKS_WORDS; k++) {
		w[k] = SK_READ_ONCE(s->w[k]);
		sk_tort_spin(&t->rng, 16);
		/* Preempted mid-read: a writer may run meanwhile. */
		if (sk_tort_one_in(&t->rng, s->cfg->busted ? 4 : 256))
			sched_yield();
	}
}

static void lks_read_section(struct sk_lks_thread *t)
{
	struct sk_lks *s = t->s;
	unsigned long o, sh, w[SK_LKS_WORDS];
	unsigned int tok;
	int k, retry;

	do {
		/* Twins: readers take no lock (the seqlock's: no retry). */
		tok = lks_read_lock(s);
		lks_read_copy(t, &o, &sh, w);
		retry = s->cfg->nolock ? 0 : s->cfg->ops->read_unlock(s->lock,
								     tok);
		if (retry)
			lks_inc(&t->retries);
	} while (retry);
	if (o != 0)
		lks_error(t, &t->overlaps, "read section overlapped a writer",
			  o, 0);
	for (k = 1; k < SK_LKS_WORDS; k++)
		if (w[k] != w[0])
			break;
	if (k < SK_LKS_WORDS)
		lks_error(t, &t->torn, "torn snapshot", w[0], w[k]);
	else if (!s->cfg->ops->seqlock && sh != w[0])
		lks_error(t, &t->torn, "shadow counter and snapshot differ",
			  sh, w[0]);
	lks_inc(&t->reads);
}

/* Wait until all threads of the run have started. */
static void lks_start_line(struct sk_lks *s)
{
	__atomic_fetch_add(&s->at_line, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&s->at_line, __ATOMIC_ACQUIRE) < (int)s->n &&
	       !sk_atomic_load_acquire(&s->stop))
		sched_yield();
}

/* Is reader t done (iters: the others are done, and it read enough)? */
static int lks_reader_done(struct sk_lks_thread *t)
{
	struct sk_lks *s = t->s;

	if (!s->cfg->iters)
		return 0;
	if ((t->reads & 255) == 0 && s->end && lks_now() > s->end)
		return 1;
	return sk_atomic_load_acquire(&s->left) == 0 &&
	       t->reads >= s->cfg->iters;
}

static void *lks_main(void *arg)
{
	struct sk_lks_thread *t = arg;
	struct sk_lks *s = t->s;
	int reader = t->one_in == 0;
	unsigned long i;

	lks_start_line(s);
	for (i = 0; !sk_atomic_load_acquire(&s->stop); i++) {
		if (reader ? lks_reader_done(t)
			   : s->cfg->iters && i >= s->cfg->iters)
			break;
		if (!reader && sk_tort_one_in(&t->rng, t->one_in))
			lks_write_section(t);
		else
			lks_read_section(t);
		if (sk_tort_one_in(&t->rng, 64))
			sched_yield();
	}
	if (!reader)
		__atomic_fetch_sub(&s->left, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Thread i's kind: the writers, then the readers, then the mixed. */
static void lks_thread_init(struct sk_lks *s, unsigned long i)
{
	const struct sk_lks_cfg *c = s->cfg;
	struct sk_lks_thread *t = &s->th[i];

	t->s = s;
	t->id = i + 1;
	t->rng.s = c->seed ^ (0x9e3779b97f4a7c15ULL * (i + 1));
	if (i < (unsigned long)c->writers)
		t->one_in = 1;
	else if (i < (unsigned long)(c->writers + c->readers))
		t->one_in = 0;
	else
		t->one_in = c->write_one_in ? c->write_one_in : 4;
	if (!c->ops->read_lock)
		t->one_in = 1; /* no read side: write sections only */
	if (t->one_in)
		s->left++;
}

struct sk_lks *sk_lks_start(const struct sk_lks_cfg *cfg)
{
	struct sk_lks *s = aligned_alloc(SK_CACHELINE, sizeof(*s));
	unsigned long i;

	if (!s)
		return NULL;
	memset(s, 0, sizeof(*s));
	s->cfg = cfg;
	s->n = (unsigned long)(cfg->writers + cfg->readers + cfg->mixed);
	s->lock = cfg->lock ? cfg->lock : &s->own;
	s->end = cfg->iters && cfg->max_s > 0 ? lks_now() + cfg->max_s : 0;
	s->th = aligned_alloc(SK_CACHELINE, (s->n ? s->n : 1) * sizeof(*s->th));
	if (!s->th || (!cfg->lock && cfg->ops->init(&s->own) != 0)) {
		free(s->th);
		free(s);
		return NULL;
	}
	memset(s->th, 0, s->n * sizeof(*s->th));
	for (i = 0; i < s->n; i++)
		lks_thread_init(s, i);
	for (i = 0; i < s->n; i++) {
		if (pthread_create(&s->th[i].tid, NULL, lks_main, &s->th[i]))
			break;
		s->started++;
	}
	if (s->started < s->n) {
		sk_lks_stop(s);
		(void)sk_lks_join(s, 0);
		if (!cfg->lock)
			(void)cfg->ops->destroy(&s->own);
		free(s->th);
		free(s);
		return NULL;
	}
	return s;
}

/* The sum over the threads of two of their counters (at offsets a, b). */
static unsigned long lks_sum(const struct sk_lks *s, size_t a, size_t b)
{
	unsigned long i, n = 0;

	for (i = 0; i < s->n; i++) {
		const char *t = (const char *)&s->th[i];

		n += sk_atomic_load_relaxed((const unsigned long *)(t + a)) +
		     sk_atomic_load_relaxed((const unsigned long *)(t + b));
	}
	return n;
}

#define LKS_AT(f) offsetof(struct sk_lks_thread, f)

unsigned long sk_lks_sections(const struct sk_lks *s)
{
	return lks_sum(s, LKS_AT(reads), LKS_AT(writes));
}

unsigned long sk_lks_idle(const struct sk_lks *s)
{
	unsigned long i, n = 0;

	for (i = 0; i < s->n; i++)
		n += sk_atomic_load_relaxed(&s->th[i].reads) +
			     sk_atomic_load_relaxed(&s->th[i].writes) ==
		     0;
	return n;
}

unsigned long sk_lks_errors(const struct sk_lks *s)
{
	return lks_sum(s, LKS_AT(overlaps), LKS_AT(torn));
}

void sk_lks_stop(struct sk_lks *s)
{
	sk_atomic_store_release(&s->stop, 1);
}

int sk_lks_join(struct sk_lks *s, double timeout_s)
{
	struct timespec dl;
	unsigned long i;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += (time_t)timeout_s;
	for (i = 0; i < s->started; i++)
		if (timeout_s <= 0)
			pthread_join(s->th[i].tid, NULL);
		else if (pthread_timedjoin_np(s->th[i].tid, NULL, &dl) != 0)
			return -1;
	return 0;
}

void sk_lks_finish(struct sk_lks *s, struct sk_lks_result *res)
{
	const char *label = s->cfg->label ? s->cfg->label : s->cfg->ops->name;
	unsigned long i;

	memset(res, 0, sizeof(*res));
	for (i = 0; i < s->n; i++) {
		struct sk_lks_thread *t = &s->th[i];

		res->reads += t->reads;
		res->writes += t->writes;
		res->retries += t->retries;
		res->overlaps += t->overlaps;
		res->torn += t->torn;
		if (t->reads + t->writes == 0 && !s->cfg->stop_on_error) {
			fprintf(stderr, "ERROR: %s thread %lu made no "
					"progress\n", label, t->id);
			res->idle++;
		}
	}
	res->shadow = s->shadow;
	res->lost = res->writes > s->shadow ? res->writes - s->shadow : 0;
	if (s->shadow != res->writes)
		fprintf(stderr, "ERROR: %s: shadow counter %lu, but %lu write "
				"sections (lost updates)\n",
			label, s->shadow, res->writes);
	res->errors = res->overlaps + res->torn + res->idle +
		      (s->shadow != res->writes);
	if (!s->cfg->lock && s->cfg->ops->destroy(&s->own) != 0)
		res->errors++;
	free(s->th);
	free(s);
}

int sk_lks_run(const struct sk_lks_cfg *cfg, struct sk_lks_result *res)
{
	struct sk_lks *s = sk_lks_start(cfg);
	struct timespec ts = { 0, 10000000 };
	double end = lks_now() + cfg->max_s;

	if (!s)
		return -1;
	if (!cfg->iters) {
		while (lks_now() < end)
			nanosleep(&ts, NULL);
		sk_lks_stop(s);
	}
	(void)sk_lks_join(s, 0); /* iters: the threads stop by themselves */
	sk_lks_finish(s, res);
	return 0;
}
