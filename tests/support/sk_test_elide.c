/* SPDX-License-Identifier: MIT */
/* sk_test_elide.h: the elided locks behind one ops table, the stress. */
#define _GNU_SOURCE
#include <sched.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "sk_test_elide.h"

#define EL_AT(m) offsetof(struct elide_lock, m)

/* The exclusive locks; the rwlock's read side is elide_read_ops. */
const struct elide_ops elide_ops[3] = {
	{ "mutex", &sk_tort_lock_elided_mutex, EL_AT(m), 0 },
	{ "spinlock", &sk_tort_lock_elided_spinlock, EL_AT(s), 0 },
	{ "rwlock", &sk_tort_lock_elided_rwlock, EL_AT(rw), 0 },
};
const struct elide_ops elide_read_ops = { "rwlock-read",
					  &sk_tort_lock_elided_rwlock,
					  EL_AT(rw), 1 };

static void *el_of(const struct elide_ops *o, struct elide_lock *l)
{
	return (char *)l + o->off;
}

void el_lock(const struct elide_ops *o, struct elide_lock *l)
{
	if (o->read)
		(void)o->ops->read_lock(el_of(o, l));
	else
		o->ops->write_lock(el_of(o, l));
}

void el_unlock(const struct elide_ops *o, struct elide_lock *l)
{
	if (o->read)
		(void)o->ops->read_unlock(el_of(o, l), 0);
	else
		o->ops->write_unlock(el_of(o, l));
}

int el_trylock(const struct elide_ops *o, struct elide_lock *l)
{
	return o->read ? o->ops->read_trylock(el_of(o, l))
		       : o->ops->write_trylock(el_of(o, l));
}

void el_attach(const struct elide_ops *o, struct elide_lock *l,
	       struct sk_elide_stats *s)
{
	o->ops->attach_stats(el_of(o, l), s);
}

void elide_lock_init(struct elide_lock *l)
{
	int k;

	for (k = 0; k < ELIDE_NOPS; k++)
		(void)elide_ops[k].ops->init(el_of(&elide_ops[k], l));
}

/* ---- hang detection ------------------------------------------------------- */

void elide_deadline(const char *what, unsigned int s)
{
	sk_test_deadline(what, s);
}

/* ---- mutual exclusion with a non-atomic counter -------------------------- */

/*
 * Plain accesses (volatile: each one happens, in order) for the locks
 * under test, so TSan checks that the lock orders them; relaxed atomics
 * for the twins, whose races are the point.
 */
static unsigned long elide_get(struct elide_stress *st, unsigned long *p)
{
	return st->racy ? __atomic_load_n(p, __ATOMIC_RELAXED)
			: *(volatile unsigned long *)p;
}

static void elide_set(struct elide_stress *st, unsigned long *p,
		      unsigned long v)
{
	if (st->racy)
		__atomic_store_n(p, v, __ATOMIC_RELAXED);
	else
		*(volatile unsigned long *)p = v;
}

/* Wait until all n threads of the run have started. */
static void elide_start_line(struct elide_stress *st, int n)
{
	__atomic_fetch_add(&st->started, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&st->started, __ATOMIC_ACQUIRE) < n)
		sched_yield();
}

/*
 * The read-modify-write of counter is split by sched_yield(), so two
 * threads inside at once lose an update even on one CPU.
 */
static void *elide_stress_thread(void *arg)
{
	struct elide_stress *st = arg;
	unsigned long i, c;

	elide_start_line(st, st->nthreads);
	for (i = 0; i < st->iters; i++) {
		if (!st->nolock)
			el_lock(st->ops, st->lock);
		c = elide_get(st, &st->counter);
		if (i % 16 == 0)
			sched_yield();
		elide_set(st, &st->counter, c + 1);
		elide_set(st, &st->shadow, c + 1);
		if (!st->nolock)
			el_unlock(st->ops, st->lock);
	}
	return NULL;
}

/* A reader: counter and shadow must agree inside the read section. */
static void *elide_reader_thread(void *arg)
{
	struct elide_stress *st = arg;
	unsigned long i;

	elide_start_line(st, st->nthreads);
	for (i = 0; i < st->iters; i++) {
		el_lock(st->rd_ops, st->lock);
		if (elide_get(st, &st->counter) != elide_get(st, &st->shadow))
			__atomic_fetch_add(&st->torn, 1, __ATOMIC_RELAXED);
		if (i % 16 == 0)
			sched_yield();
		if (elide_get(st, &st->counter) != elide_get(st, &st->shadow))
			__atomic_fetch_add(&st->torn, 1, __ATOMIC_RELAXED);
		el_unlock(st->rd_ops, st->lock);
	}
	return NULL;
}

unsigned long elide_stress_run(struct elide_stress *st, int nthreads,
			       int nreaders)
{
	pthread_t t[16];
	int i;

	st->counter = st->shadow = 0;
	st->torn = 0;
	st->started = 0;
	st->nthreads = nthreads + nreaders < 16 ? nthreads + nreaders : 16;
	for (i = 0; i < st->nthreads; i++)
		sk_test_thread_start(&t[i], i < nthreads ? elide_stress_thread
							  : elide_reader_thread,
				     st);
	for (i = 0; i < st->nthreads; i++)
		sk_test_thread_join(t[i]);
	return (unsigned long)nthreads * st->iters - st->counter;
}
