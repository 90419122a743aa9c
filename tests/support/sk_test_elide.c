/* SPDX-License-Identifier: MIT */
/* sk_test_elide.h: the elided locks behind one ops table, the stress. */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "sk_test_elide.h"

static void el_m_lock(struct elide_lock *l) { sk_elided_mutex_lock(&l->m); }
static void el_m_unlock(struct elide_lock *l) { sk_elided_mutex_unlock(&l->m); }
static int el_m_try(struct elide_lock *l) { return sk_elided_mutex_trylock(&l->m); }
static void el_m_attach(struct elide_lock *l, struct sk_elide_stats *s)
{
	sk_elided_mutex_attach_stats(&l->m, s);
}
static void el_s_lock(struct elide_lock *l) { sk_elided_spinlock_lock(&l->s); }
static void el_s_unlock(struct elide_lock *l) { sk_elided_spinlock_unlock(&l->s); }
static int el_s_try(struct elide_lock *l) { return sk_elided_spinlock_trylock(&l->s); }
static void el_s_attach(struct elide_lock *l, struct sk_elide_stats *s)
{
	sk_elided_spinlock_attach_stats(&l->s, s);
}
static void el_w_lock(struct elide_lock *l) { sk_elided_rwlock_write_lock(&l->rw); }
static void el_w_unlock(struct elide_lock *l) { sk_elided_rwlock_write_unlock(&l->rw); }
static int el_w_try(struct elide_lock *l) { return sk_elided_rwlock_write_trylock(&l->rw); }
static void el_r_lock(struct elide_lock *l) { sk_elided_rwlock_read_lock(&l->rw); }
static void el_r_unlock(struct elide_lock *l) { sk_elided_rwlock_read_unlock(&l->rw); }
static int el_r_try(struct elide_lock *l) { return sk_elided_rwlock_read_trylock(&l->rw); }
static void el_rw_attach(struct elide_lock *l, struct sk_elide_stats *s)
{
	sk_elided_rwlock_attach_stats(&l->rw, s);
}

/* The exclusive locks; the rwlock's read side is elide_read_ops. */
const struct elide_ops elide_ops[3] = {
	{ "mutex", el_m_lock, el_m_unlock, el_m_try, el_m_attach },
	{ "spinlock", el_s_lock, el_s_unlock, el_s_try, el_s_attach },
	{ "rwlock", el_w_lock, el_w_unlock, el_w_try, el_rw_attach },
};
const struct elide_ops elide_read_ops = {
	"rwlock-read", el_r_lock, el_r_unlock, el_r_try, el_rw_attach
};

void elide_lock_init(struct elide_lock *l)
{
	sk_elided_mutex_init(&l->m);
	sk_elided_spinlock_init(&l->s);
	sk_elided_rwlock_init(&l->rw);
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
			st->ops->lock(st->lock);
		c = elide_get(st, &st->counter);
		if (i % 16 == 0)
			sched_yield();
		elide_set(st, &st->counter, c + 1);
		elide_set(st, &st->shadow, c + 1);
		if (!st->nolock)
			st->ops->unlock(st->lock);
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
		st->rd_ops->lock(st->lock);
		if (elide_get(st, &st->counter) != elide_get(st, &st->shadow))
			__atomic_fetch_add(&st->torn, 1, __ATOMIC_RELAXED);
		if (i % 16 == 0)
			sched_yield();
		if (elide_get(st, &st->counter) != elide_get(st, &st->shadow))
			__atomic_fetch_add(&st->torn, 1, __ATOMIC_RELAXED);
		st->rd_ops->unlock(st->lock);
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
