/* SPDX-License-Identifier: MIT */
/*
 * `scalekit torture`: helpers the scenarios (torture_pipe.c,
 * torture_list.c, torture_rhash.c) share: per-thread state, the pools'
 * leak check, nested sections, grace-period waits and the freeing of
 * objects after a grace period.  See torture_core.h.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "scalekit/list.h" /* sk_container_of */
#include "torture_core.h"
#include "torture_stamp.h"

/* ---- per-thread state ---------------------------------------------------- */

int sk_tort_thread_priv_init(struct sk_tort_thread *t, size_t updater_size,
			     size_t elem_size, size_t reader_size)
{
	if (t->role == SK_TORT_UPDATER) {
		struct sk_tort_pool *pool = calloc(1, updater_size);

		if (!pool)
			return -1;
		sk_tort_pool_init(pool, elem_size, t->T->ops->busted);
		t->priv = pool;
	} else if (t->role == SK_TORT_READER) {
		t->priv = calloc(1, reader_size);
		if (!t->priv)
			return -1;
	}
	return 0;
}

void sk_tort_thread_priv_fini(struct sk_tort_thread *t)
{
	/* Updaters' state stays for finish(). */
	if (t->role == SK_TORT_READER) {
		free(t->priv);
		t->priv = NULL;
	}
}

/* The pool at the head of updater thread i's state, or NULL. */
static struct sk_tort_pool *updater_pool(struct sk_tort *T, unsigned long i)
{
	struct sk_tort_thread *t = &T->threads[i];

	return t->role == SK_TORT_UPDATER ? t->priv : NULL;
}

void sk_tort_pools_count(struct sk_tort *T, const struct sk_tort_pool *pool0,
			 unsigned long *allocated, unsigned long *freed)
{
	unsigned long i;

	*allocated = sk_atomic_load_relaxed(&pool0->allocated);
	*freed = sk_atomic_load_relaxed(&pool0->freed);
	for (i = 0; i < T->nthreads; i++) {
		struct sk_tort_pool *p = updater_pool(T, i);

		if (!p)
			continue;
		*allocated += sk_atomic_load_relaxed(&p->allocated);
		*freed += sk_atomic_load_relaxed(&p->freed);
	}
}

void sk_tort_pools_destroy(struct sk_tort *T, struct sk_tort_pool *pool0)
{
	unsigned long i;

	for (i = 0; i < T->nthreads; i++) {
		struct sk_tort_pool *p = updater_pool(T, i);

		if (!p)
			continue;
		sk_tort_pool_destroy(p);
		free(p);
		T->threads[i].priv = NULL;
	}
	sk_tort_pool_destroy(pool0);
}

/* ---- read sections ------------------------------------------------------- */

unsigned long sk_tort_nest_lock(struct sk_tort_thread *t, int *nidx, int spin)
{
	const struct sk_tort_ops *ops = t->T->ops;
	unsigned long depth = sk_tort_below(&t->rng, t->T->cfg->nesting + 1);
	unsigned long k;

	for (k = 0; k < depth; k++) {
		nidx[k] = ops->readlock_nest(t->T->ctx);
		if (spin && sk_tort_one_in(&t->rng, 4))
			sk_tort_spin(&t->rng, 20);
	}
	return depth;
}

void sk_tort_nest_unlock(struct sk_tort_thread *t, const int *nidx,
			 unsigned long depth)
{
	while (depth-- > 0)
		t->T->ops->readunlock_nest(t->T->ctx, nidx[depth]);
}

/* ---- grace periods ------------------------------------------------------- */

void sk_tort_wait_gp(struct sk_tort_thread *t, int g,
		     unsigned long cond_delay_us)
{
	struct sk_tort *T = t->T;
	const struct sk_tort_ops *ops = T->ops;
	unsigned long cookie;

	switch (g) {
	case SK_TORT_GP_POLL:
		cookie = ops->start_gp_poll(T->ctx);
		while (!ops->poll_gp_state(T->ctx, cookie)) {
			if (!T->scen->plain_updaters && ops->updater_quiescent)
				ops->updater_quiescent();
			if (sk_tort_one_in(&t->rng, 2))
				sched_yield();
			else
				usleep((useconds_t)sk_tort_below(&t->rng, 50));
		}
		break;
	case SK_TORT_GP_COND:
		cookie = ops->get_gp_state(T->ctx);
		/* Sometimes let a grace period go by before asking. */
		if (cond_delay_us && sk_tort_one_in(&t->rng, 2))
			usleep((useconds_t)sk_tort_below(&t->rng,
							 cond_delay_us));
		ops->cond_sync(T->ctx, cookie);
		break;
	case SK_TORT_GP_EXP:
		ops->exp_sync(T->ctx);
		break;
	default:
		ops->sync(T->ctx);
		break;
	}
}

/* ---- objects freed after a grace period ---------------------------------- */

void *sk_tort_obj_alloc(struct sk_tort *T, struct sk_tort_pool *pool)
{
	struct sk_tort_obj *o = sk_tort_pool_alloc(pool);

	if (!o)
		return NULL;
	o->T = T;
	o->pool = pool;
	o->next_pending = NULL;
	return o;
}

/* Callback: the grace period of o is over. */
static void obj_free_cb(struct sk_rcu_head *h)
{
	struct sk_tort_obj *o = sk_container_of(h, struct sk_tort_obj, rh);
	struct sk_tort *T = o->T;

	T->scen->obj_free(T, o);
	sk_atomic_fetch_add_relaxed(&T->cb_invoked, 1UL);
	sk_tort_cb_done(T);
}

void sk_tort_obj_retire(struct sk_tort_thread *t, struct sk_tort_obj *o, int g,
			unsigned long cond_delay_us)
{
	struct sk_tort *T = t->T;
	const struct sk_tort_ops *ops = T->ops;
	struct sk_tort_updater *u = t->priv;
	int err;

	sk_tort_inc(&t->st->gp_used[g]);
	switch (g) {
	case SK_TORT_GP_CB:
		sk_tort_inc(&t->st->cb_queued);
		sk_atomic_fetch_add_relaxed(&T->cb_pending, 1UL);
		err = ops->call(T->ctx, &o->rh, obj_free_cb);
		if (err) {
			sk_tort_cb_done(T);
			sk_tort_error(T, t, "call returned %d", err);
			ops->sync(T->ctx);
			T->scen->obj_free(T, o);
		}
		break;
	case SK_TORT_GP_POLL:
		o->cookie = ops->start_gp_poll(T->ctx);
		o->next_pending = u->pending;
		u->pending = o;
		break;
	default:
		sk_tort_wait_gp(t, g, cond_delay_us);
		T->scen->obj_free(T, o);
		break;
	}
}

void sk_tort_reap_pending(struct sk_tort *T, struct sk_tort_updater *u)
{
	struct sk_tort_obj **pp = &u->pending, *o;

	while ((o = *pp) != NULL) {
		if (T->ops->poll_gp_state(T->ctx, o->cookie)) {
			*pp = o->next_pending;
			T->scen->obj_free(T, o);
		} else {
			pp = &o->next_pending;
		}
	}
}

void sk_tort_update_drain(struct sk_tort_thread *t)
{
	struct sk_tort *T = t->T;
	struct sk_tort_updater *u = t->priv;

	while (u->pending) {
		sk_tort_reap_pending(T, u);
		if (u->pending) {
			if (!T->scen->plain_updaters &&
			    T->ops->updater_quiescent)
				T->ops->updater_quiescent();
			usleep(100);
		}
	}
}

/* ---- checks -------------------------------------------------------------- */

int sk_tort_stamp_ok(struct sk_tort_thread *t, const char *what,
		     const void *obj, const struct sk_tort_stamp *st,
		     const char *when,
		     unsigned long (*check)(unsigned long key,
					    unsigned long gen),
		     unsigned long *key)
{
	struct sk_tort *T = t->T;
	unsigned long gen, c;

	if (!sk_tort_magic_ok(t, what, obj, when, SK_TORT_LOAD(T, st->magic)))
		return 0;
	*key = SK_TORT_LOAD(T, st->key);
	gen = SK_TORT_LOAD(T, st->gen);
	c = SK_TORT_LOAD(T, st->check);
	if (c != check(*key, gen)) {
		sk_tort_error(T, t, "%s %p %s: corrupted (key %lu)", what, obj,
			      when, *key);
		return 0;
	}
	return 1;
}

int sk_tort_magic_ok(struct sk_tort_thread *t, const char *what,
		     const void *obj, const char *when, unsigned long magic)
{
	if (magic == SK_TORT_MAGIC)
		return 1;
	sk_tort_error(t->T, t, "%s %p %s: magic %#lx%s", what, obj, when, magic,
		      magic == SK_TORT_POISON ? " (poisoned: freed while a "
						"reader could reach it)"
					      : "");
	return 0;
}
