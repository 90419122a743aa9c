/* SPDX-License-Identifier: MIT */
/*
 * `scalekit torture rhash`: the relativistic resizable hash table under
 * lookups, iterations, updates and continuous resizing.
 *
 * Keys 0 .. RH_STABLE-1 are stable: inserted before the threads start,
 * never touched until the end.  A lookup of a stable key must find it,
 * whatever resize runs meanwhile; a full iteration (one read section) must
 * end and return every stable key.  Each updater owns RH_VOL volatile keys
 * and keeps a model of them (which object holds each key): it inserts,
 * removes, replaces, tries duplicate inserts (which must fail with
 * -EEXIST) and checks its own keys by lookup; removed objects are freed
 * after a grace period picked by --gp, poisoned just before.  Readers
 * check the volatile keys with the key model of the hash table's stress
 * harness (tools/rhash_stress.h, which the tests run too): a lookup of a
 * key that its updater left untouched throughout must find it if present
 * and must not find it if absent.  A resizer
 * thread resizes the table continuously to random sizes, and the table
 * also resizes itself on its load factor.
 *
 * --in-section runs every update inside a read section (also its lookups
 * and the frees it queues), while the resizer and the background resizes
 * run; a resize that held bucket locks across its grace period would hang
 * it (the monitor reports the stall).
 *
 * --fault-rate P makes the table's allocations (params.alloc) fail with
 * probability P: resizes then fail with -ENOMEM half-way, and nothing may
 * be lost.  At the end the table must equal the model: every key found,
 * an iteration returns each object exactly once, sk_rhash_count() agrees.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scalekit/list.h" /* sk_container_of */
#include "rhash_stress.h"
#include "scalekit/rhash.h"
#include "torture_core.h"
#include "torture_stamp.h"

#define RH_STABLE 256
#define RH_VOL 256 /* volatile keys per updater */
#define RH_HOLD 8
#define RH_MAX_BUCKETS_LOG 11
/*
 * Now and then the resizer goes to 2^14..2^16 buckets: arrays of 128 KiB
 * and more come from mmap() and go back to the kernel when freed, so an
 * access to a freed array faults even without a sanitizer.
 */
#define RH_BIG_LOG 14
#define RH_BIG_LOGS 3
struct rh_obj {
	struct sk_tort_obj o; /* first: freed after a grace period */
	struct sk_rhash_node node;
	struct sk_tort_stamp st; /* key, gen, check: rh_check(key, gen) */
};

struct rh_state {
	struct sk_rhash *ht;
	unsigned long nkeys;		  /* stable + volatile keys */
	struct rh_obj *stable[RH_STABLE]; /* never change */
	struct sk_rhs_keys vol;		  /* key RH_STABLE + i: vol's i */
	struct sk_tort_pool pool0;
	int faults_on;			     /* atomic */
	uint64_t fault_below;		     /* rand < this: fail */
	unsigned long allocs, faults;	     /* atomic */
	unsigned long resizes, resize_nomem; /* resizer only */
};

struct rh_updater {
	struct sk_tort_updater up;    /* first: pool, polled frees */
	unsigned long base;	      /* first key it owns */
	struct rh_obj *model[RH_VOL]; /* object of each key, or NULL */
};

struct rh_reader {
	struct rh_obj *held[RH_HOLD];
	unsigned int nheld;
};

/*
 * x[] counters.  Each update of a run without errors is exactly one of
 * RX_INSERTS .. RX_OWN_LOOKUPS, so their sum is the number of updates.
 */
enum {
	RX_LOOKUPS,
	RX_ITERS,
	RX_ITER_OBJS,
	RX_INSERTS,
	RX_REMOVES,
	RX_REPLACES,
	RX_DUP_INSERTS, /* of a present volatile key, refused */
	RX_OWN_LOOKUPS,
	RX_NR
};
SK_TORT_X_FITS(RX_NR);

/* The table's allocator has no context argument: the run's state. */
static struct rh_state *rh_cur;
static __thread struct sk_tort_rng rh_fallback_rng;

static inline unsigned long rh_check(unsigned long key, unsigned long gen)
{
	return (key * ((unsigned long)0xc2b2ae3d27d4eb4fULL)) ^ (gen << 17) ^ 0xa5a5;
}

static void *rh_alloc(size_t size)
{
	struct rh_state *S = rh_cur;

	if (sk_tort_setup_fault())
		return NULL;
	if (S && sk_atomic_load_relaxed(&S->faults_on)) {
		struct sk_tort_rng *r = sk_tort_self ? &sk_tort_self->rng
						     : &rh_fallback_rng;

		if (sk_tort_rand(r) < S->fault_below) {
			sk_atomic_fetch_add_relaxed(&S->faults, 1UL);
			return NULL;
		}
	}
	if (S)
		sk_atomic_fetch_add_relaxed(&S->allocs, 1UL);
	return malloc(size);
}

static struct rh_obj *new_obj(struct sk_tort *T, struct sk_tort_pool *pool,
			      unsigned long key, unsigned long gen)
{
	return sk_tort_stamped_new(T, pool, offsetof(struct rh_obj, st), key,
				   gen, rh_check(key, gen));
}

static void poison_retire(struct sk_tort *T, struct sk_tort_obj *head)
{
	sk_tort_stamped_retire(T, head, offsetof(struct rh_obj, st));
}

static void free_obj(void *obj, void *arg)
{
	poison_retire(arg, obj);
}

static int rh_setup(struct sk_tort *T)
{
	struct sk_rhash_params p = SK_RHASH_PARAMS_DEFAULT;
	struct rh_state *S = sk_tort_calloc(1, sizeof(*S));
	unsigned long k;
	int err;

	if (!S)
		return -ENOMEM;
	S->nkeys = RH_STABLE + T->cfg->updaters * RH_VOL;
	if (sk_rhs_keys_init(&S->vol, S->nkeys - RH_STABLE)) {
		free(S);
		return -ENOMEM;
	}
	p.head_offset = offsetof(struct rh_obj, node);
	p.key_offset = offsetof(struct rh_obj, st.key);
	p.key_len = sizeof(unsigned long);
	p.seed = (unsigned long)T->cfg->seed;
	/*
	 * Room for the stable keys: setup queues no background grow, so a
	 * setup that fails leaves no callback queue behind.
	 */
	p.initial_buckets = RH_STABLE;
	p.min_buckets = 1;
	p.max_buckets = 1UL << (RH_BIG_LOG + RH_BIG_LOGS);
	p.alloc = rh_alloc;
	p.free = free;
	rh_cur = S;
	rh_fallback_rng.s = T->cfg->seed ^ 0xfa17fa17fa17fa17ULL;
	/* 2^64 * P, saturated. */
	S->fault_below = T->cfg->fault_rate >= 1.0
				 ? UINT64_MAX
				 : (uint64_t)(T->cfg->fault_rate *
					      18446744073709551616.0);
	S->ht = sk_rhash_create(&p);
	err = S->ht ? 0 : -errno;
	if (err)
		goto free_state;
	sk_tort_pool_init(&S->pool0, sizeof(struct rh_obj), T->ops->busted);
	for (k = 0; k < RH_STABLE; k++) {
		struct rh_obj *o = new_obj(T, &S->pool0, k, 0);

		err = o ? sk_rhash_insert_unique(S->ht, &o->node) : -ENOMEM;
		if (err) {
			if (o)
				poison_retire(T, &o->o);
			goto destroy_table;
		}
		S->stable[k] = o;
	}
	T->priv = S;
	/* Faults from now on: the threads start. */
	sk_atomic_store_relaxed(&S->faults_on, T->cfg->fault_rate > 0);
	return 0;

destroy_table:
	/* No thread has started: the objects go back to pool0 at once. */
	sk_rhash_destroy(S->ht, free_obj, T);
	sk_tort_pool_destroy(&S->pool0);
free_state:
	rh_cur = NULL;
	sk_rhs_keys_fini(&S->vol);
	free(S);
	return err;
}

static int rh_thread_init(struct sk_tort_thread *t)
{
	struct rh_updater *u;

	if (sk_tort_thread_priv_init(t, sizeof(struct rh_updater),
				     sizeof(struct rh_obj),
				     sizeof(struct rh_reader)) != 0)
		return -1;
	if (t->role == SK_TORT_UPDATER) {
		u = t->priv;
		u->base = RH_STABLE + t->index * RH_VOL;
	}
	return 0;
}

/* ---- readers ------------------------------------------------------------- */

static int obj_ok(struct sk_tort_thread *t, struct rh_obj *o,
		  unsigned long want_key, const char *when)
{
	unsigned long key;

	if (!sk_tort_stamp_ok(t, "object", o, &o->st, when, rh_check, &key))
		return 0;
	if (want_key != ~0UL && key != want_key) {
		sk_tort_error(t->T, t, "object %p %s: key %lu, looked up %lu",
			      (void *)o, when, key, want_key);
		return 0;
	}
	return 1;
}

static void hold(struct sk_tort_thread *t, struct rh_obj *o)
{
	struct rh_reader *r = t->priv;

	if (t->qsbr && r->nheld < RH_HOLD)
		r->held[r->nheld++] = o;
}

static void rh_iterate(struct sk_tort_thread *t, struct rh_state *S)
{
	unsigned long seen[RH_STABLE / 64] = { 0 };
	unsigned long steps = 0, limit = 4 * S->nkeys + 64, k, missing = 0;
	struct sk_rhash_iter it;
	struct rh_obj *o;

	sk_rhash_iter_start(S->ht, &it);
	while ((o = sk_rhash_iter_next(&it)) != NULL) {
		unsigned long key;

		if (++steps > limit) {
			sk_tort_error(t->T, t,
				      "iteration returned more than %lu "
				      "objects (%lu keys exist): it does not "
				      "end",
				      limit, S->nkeys);
			return;
		}
		if (!obj_ok(t, o, ~0UL, "returned by an iteration"))
			return;
		key = SK_TORT_LOAD(t->T, o->st.key);
		if (key >= S->nkeys) {
			sk_tort_error(t->T, t, "iteration: unknown key %lu",
				      key);
			return;
		}
		if (key < RH_STABLE)
			seen[key / 64] |= 1UL << (key % 64);
		if (steps == 8)
			hold(t, o);
	}
	for (k = 0; k < RH_STABLE; k++)
		if (!(seen[k / 64] & (1UL << (k % 64))))
			missing++;
	if (missing)
		sk_tort_error(t->T, t,
			      "iteration missed %lu of the %d stable keys "
			      "(%lu objects returned)",
			      missing, RH_STABLE, steps);
	sk_tort_inc(&t->st->x[RX_ITERS]);
	sk_tort_add(&t->st->x[RX_ITER_OBJS], steps);
}

/*
 * A lookup of key inside a read section; a volatile key its updater left
 * untouched throughout must be found if present, not found if absent.
 */
static struct rh_obj *rh_lookup(struct sk_tort_thread *t, struct rh_state *S,
				unsigned long key)
{
	unsigned long v = key - RH_STABLE;
	struct sk_rhs_snap snap;
	struct rh_obj *o;

	if (key < RH_STABLE)
		return sk_rhash_lookup(S->ht, &key);
	sk_rhs_key_snap(&S->vol, v, &snap);
	o = sk_rhash_lookup(S->ht, &key);
	/* The lookup's loads before the second read of the key's count. */
	sk_smp_rmb();
	switch (sk_rhs_key_verdict(&S->vol, v, &snap, o != NULL)) {
	case SK_RHS_MISSING:
		sk_tort_error(t->T, t,
			      "volatile key %lu, present and untouched, not "
			      "found (%lu buckets)",
			      key, sk_rhash_buckets(S->ht));
		break;
	case SK_RHS_GHOST:
		sk_tort_error(t->T, t,
			      "volatile key %lu, absent and untouched, found",
			      key);
		break;
	default:
		break;
	}
	return o;
}

static void rh_read_one(struct sk_tort_thread *t)
{
	struct sk_tort *T = t->T;
	const struct sk_tort_ops *ops = T->ops;
	struct rh_state *S = T->priv;
	int nidx[SK_TORT_MAX_NEST];
	struct rh_obj *found[8];
	unsigned long fkey[8];
	unsigned long depth, n, i, nf = 0, key;
	struct rh_obj *o;
	int idx;

	idx = ops->readlock(T->ctx);
	depth = sk_tort_nest_lock(t, nidx, 0);
	n = 1 + sk_tort_below(&t->rng, 8);
	for (i = 0; i < n; i++) {
		int stable = sk_tort_one_in(&t->rng, 2);

		key = stable ? sk_tort_below(&t->rng, RH_STABLE)
			     : RH_STABLE + sk_tort_below(&t->rng,
							 S->nkeys - RH_STABLE);
		o = rh_lookup(t, S, key);
		if (!o) {
			if (stable)
				sk_tort_error(T, t,
					      "stable key %lu not found (%lu "
					      "buckets)",
					      key, sk_rhash_buckets(S->ht));
		} else if (obj_ok(t, o, key, "found by a lookup")) {
			found[nf] = o;
			fkey[nf++] = key;
			hold(t, o);
		}
	}
	sk_tort_add(&t->st->x[RX_LOOKUPS], n);
	if (sk_tort_one_in(&t->rng, 32))
		rh_iterate(t, S);
	/*
	 * What the section found must stay intact until it ends, however
	 * long it lasts: a grace period that ended meanwhile lets an
	 * updater poison it.
	 */
	ops->read_delay(&t->rng, T->cfg->sleep);
	for (i = 0; i < nf; i++)
		obj_ok(t, found[i], fkey[i], "at the end of the section");
	sk_tort_nest_unlock(t, nidx, depth);
	ops->readunlock(T->ctx, idx);
	sk_tort_inc(&t->st->reads);
}

static void rh_before_qs(struct sk_tort_thread *t)
{
	struct rh_reader *r = t->priv;
	unsigned int i;

	for (i = 0; i < r->nheld; i++)
		obj_ok(t, r->held[i], ~0UL, "held until a quiescent state");
	r->nheld = 0;
}

/* ---- updaters ------------------------------------------------------------ */

/* Free old (unlinked by this updater) after a grace period. */
static void rh_retire(struct sk_tort_thread *t, struct rh_obj *old)
{
	int g = sk_tort_pick_gp(t);

	/* Inside a read section only what does not wait: call or poll. */
	if (t->T->cfg->in_section && g != SK_TORT_GP_CB &&
	    g != SK_TORT_GP_POLL)
		g = SK_TORT_GP_CB;
	sk_tort_obj_retire(t, &old->o, g, 0);
}

/*
 * Insert n, whose key (a which key) is present: insert_unique must fail
 * with -EEXIST.  n is freed either way.
 */
static void rh_insert_dup(struct sk_tort_thread *t, struct rh_obj *n,
			  unsigned long key, const char *which)
{
	struct rh_state *S = t->T->priv;
	struct rh_updater *u = t->priv;
	int r = sk_rhash_insert_unique(S->ht, &n->node);

	if (r != -EEXIST)
		sk_tort_error(t->T, t,
			      "insert_unique of %s key %lu returned %d, not "
			      "-EEXIST",
			      which, key, r);
	if (r == 0) {
		/* Undo, so that the final check holds. */
		sk_rhash_remove(S->ht, &n->node);
		rh_retire(t, n);
	} else {
		sk_tort_pool_retire(&u->up.pool, n);
	}
}

static void rh_update_body(struct sk_tort_thread *t);

/*
 * One update; with --in-section inside a read section (the table's
 * resizes never hold a bucket lock across a grace period, so an update
 * there neither fails nor hangs, also while they run).  Such a thread may
 * be a QSBR one: then the section is still a real read section.
 */
static void rh_update_one(struct sk_tort_thread *t)
{
	if (!t->T->cfg->in_section) {
		rh_update_body(t);
		return;
	}
	sk_rcu_read_lock();
	rh_update_body(t);
	sk_rcu_read_unlock();
}

/*
 * The end of an update of key i that replaced e by n (NULL: removed it):
 * r is its result; the model follows, e is retired, counter counted.
 * Returns r.
 */
static int rh_swapped(struct sk_tort_thread *t, unsigned long i,
		      struct rh_obj *e, struct rh_obj *n, int r,
		      const char *what, int counter)
{
	struct rh_updater *u = t->priv;

	if (r) {
		sk_tort_error(t->T, t, "%s of key %lu returned %d", what,
			      u->base + i, r);
		if (n)
			sk_tort_pool_retire(&u->up.pool, n);
		return r;
	}
	u->model[i] = n;
	if (e)
		rh_retire(t, e);
	sk_tort_inc(&t->st->x[counter]);
	return 0;
}

/* Key i (u->base + i) is absent: insert it, unique or not. */
static int rh_update_absent(struct sk_tort_thread *t, unsigned long i)
{
	struct rh_state *S = t->T->priv;
	struct rh_updater *u = t->priv;
	struct rh_obj *n = new_obj(t->T, &u->up.pool, u->base + i,
				   sk_tort_rand(&t->rng) >> 8);

	if (!n)
		return -ENOMEM;
	rh_swapped(t, i, NULL, n,
		   sk_tort_one_in(&t->rng, 2)
			   ? sk_rhash_insert_unique(S->ht, &n->node)
			   : sk_rhash_insert(S->ht, &n->node),
		   "insert", RX_INSERTS);
	return 0;
}

/* Only this thread changes key i: the lookup's answer is exact. */
static void rh_own_lookup(struct sk_tort_thread *t, unsigned long key,
			  struct rh_obj *e)
{
	struct rh_state *S = t->T->priv;
	struct rh_obj *o;

	sk_rcu_read_lock();
	o = sk_rhash_lookup(S->ht, &key);
	if (o != e)
		sk_tort_error(t->T, t,
			      "lookup of own key %lu found %p, the model says "
			      "%p",
			      key, (void *)o, (void *)e);
	sk_rcu_read_unlock();
	sk_tort_inc(&t->st->x[RX_OWN_LOOKUPS]);
}

/* Key i is present in e: remove, replace, duplicate insert or lookup. */
static int rh_update_present(struct sk_tort_thread *t, unsigned long i,
			     struct rh_obj *e)
{
	struct rh_state *S = t->T->priv;
	struct rh_updater *u = t->priv;
	unsigned long key = u->base + i;
	struct rh_obj *n;

	switch (sk_tort_below(&t->rng, 4)) {
	case 0:
		rh_swapped(t, i, e, NULL, sk_rhash_remove(S->ht, &e->node),
			   "remove", RX_REMOVES);
		return 0;
	case 1:
		n = new_obj(t->T, &u->up.pool, key, sk_tort_rand(&t->rng) >> 8);
		if (!n)
			return -ENOMEM;
		rh_swapped(t, i, e, n,
			   sk_rhash_replace(S->ht, &e->node, &n->node),
			   "replace", RX_REPLACES);
		return 0;
	case 2:
		n = new_obj(t->T, &u->up.pool, key, 7);
		if (!n)
			return -ENOMEM;
		rh_insert_dup(t, n, key, "present");
		sk_tort_inc(&t->st->x[RX_DUP_INSERTS]);
		return 0;
	default:
		rh_own_lookup(t, key, e);
		return 0;
	}
}

static void rh_update_body(struct sk_tort_thread *t)
{
	struct sk_tort *T = t->T;
	struct rh_state *S = T->priv;
	struct rh_updater *u = t->priv;
	unsigned long i = sk_tort_below(&t->rng, RH_VOL);
	unsigned long v = u->base + i - RH_STABLE; /* in S->vol */
	struct rh_obj *e = u->model[i], *n;
	int r;

	if (u->up.pending)
		sk_tort_reap_pending(T, &u->up);
	if (sk_tort_one_in(&t->rng, 64)) {
		/* A stable key is present: a unique insert must fail. */
		unsigned long sk = sk_tort_below(&t->rng, RH_STABLE);

		n = new_obj(T, &u->up.pool, sk, 1);
		if (n)
			rh_insert_dup(t, n, sk, "stable");
	}
	/* Readers check the key only if this update cannot overlap them. */
	sk_rhs_key_changing(&S->vol, v);
	r = e ? rh_update_present(t, i, e) : rh_update_absent(t, i);
	sk_rhs_key_changed(&S->vol, v, u->model[i] != NULL);
	if (r) {
		sk_tort_error(T, t, "out of memory");
		usleep(1000);
		return;
	}
	sk_tort_inc(&t->st->updates);
}

/* ---- resizer ------------------------------------------------------------- */

static unsigned int rh_nextra(struct sk_tort *T)
{
	(void)T;
	return 1;
}

static void rh_extra_one(struct sk_tort_thread *t)
{
	struct sk_tort *T = t->T;
	struct rh_state *S = T->priv;
	unsigned long n = 1UL << sk_tort_below(&t->rng, RH_MAX_BUCKETS_LOG + 1);
	unsigned long b;
	int r;

	if (sk_tort_one_in(&t->rng, 8))
		n = 1UL << (RH_BIG_LOG + sk_tort_below(&t->rng, RH_BIG_LOGS));
	r = sk_rhash_resize(S->ht, n);
	if (r == 0) {
		sk_tort_inc(&S->resizes);
	} else if (r == -ENOMEM && T->cfg->fault_rate > 0) {
		sk_tort_inc(&S->resize_nomem);
	} else {
		sk_tort_error(T, t, "sk_rhash_resize(%lu) returned %d", n, r);
	}
	/* The table array may be freed by an automatic resize. */
	sk_rcu_read_lock();
	b = sk_rhash_buckets(S->ht);
	sk_rcu_read_unlock();
	if (!b || (b & (b - 1)))
		sk_tort_error(T, t, "%lu buckets: not a power of two", b);
	if (sk_tort_one_in(&t->rng, 2))
		usleep((useconds_t)sk_tort_below(&t->rng, 500));
}

/* ---- end of the run ------------------------------------------------------ */

static void rh_finish(struct sk_tort *T)
{
	struct rh_state *S = T->priv;
	unsigned long *seen, expect = RH_STABLE, n = 0, i, k, c;
	unsigned long allocated, freed;
	struct sk_rhash_iter it;
	struct rh_obj *o;

	sk_atomic_store_relaxed(&S->faults_on, 0);
	/*
	 * The updates queued background resizes that may still run: a walk
	 * during a resize may return an object twice (sk_rhash_iter_next()),
	 * so let them finish first.  From here on nothing changes the table.
	 */
	sk_rhash_barrier(S->ht);
	seen = calloc(S->nkeys, sizeof(*seen));
	sk_rcu_read_lock();
	for (k = 0; k < RH_STABLE; k++)
		if (sk_rhash_lookup(S->ht, &k) != S->stable[k])
			sk_tort_error(T, NULL,
				      "final table: stable key %lu "
				      "lost",
				      k);
	for (i = 0; i < T->nthreads; i++) {
		struct sk_tort_thread *t = &T->threads[i];
		struct rh_updater *u = t->priv;

		if (t->role != SK_TORT_UPDATER || !u)
			continue;
		for (k = 0; k < RH_VOL; k++) {
			unsigned long key = u->base + k;

			o = sk_rhash_lookup(S->ht, &key);
			if (o != u->model[k])
				sk_tort_error(T, NULL,
					      "final table: key %lu is %p, the "
					      "model says %p",
					      key, (void *)o,
					      (void *)u->model[k]);
			if (u->model[k])
				expect++;
		}
	}
	sk_rhash_iter_start(S->ht, &it);
	while ((o = sk_rhash_iter_next(&it)) != NULL && n <= 2 * S->nkeys) {
		n++;
		if (o->st.key >= S->nkeys || o->st.magic != SK_TORT_MAGIC) {
			sk_tort_error(T, NULL, "final table: bad object %p",
				      (void *)o);
		} else if (seen && seen[o->st.key]++) {
			sk_tort_error(T, NULL,
				      "final iteration: key %lu returned "
				      "twice",
				      o->st.key);
		}
	}
	sk_rcu_read_unlock();
	if (n != expect)
		sk_tort_error(T, NULL,
			      "final iteration returned %lu objects, the "
			      "model has %lu",
			      n, expect);
	c = sk_rhash_count(S->ht);
	if (c != expect)
		sk_tort_error(T, NULL,
			      "sk_rhash_count() is %lu, the model has %lu", c,
			      expect);
	free(seen);
	sk_rhash_destroy(S->ht, free_obj, T);
	sk_tort_pools_count(T, &S->pool0, &allocated, &freed);
	if (allocated != freed)
		sk_tort_error(T, NULL, "%lu objects allocated, %lu freed",
			      allocated, freed);
	sk_tort_pools_destroy(T, &S->pool0);
	/* Kept for the report: */
	S->nkeys = expect;
}

static void rh_report(struct sk_tort *T, FILE *f)
{
	struct rh_state *S = T->priv;
	struct sk_tort_stats sum;

	sk_tort_sum_stats(T, &sum);
	fprintf(f,
		"%srhash: %lu lookups, %lu iterations (%.1f objects each); "
		"%lu inserts, %lu removes, %lu replaces, %lu duplicate "
		"inserts, %lu own-key lookups; %lu resizes (%lu "
		"failed for lack of memory); %lu of %lu table allocations "
		"failed on purpose; %lu keys at the end, %d stable\n",
		T->prefix, sum.x[RX_LOOKUPS], sum.x[RX_ITERS],
		sum.x[RX_ITERS] ? (double)sum.x[RX_ITER_OBJS] / sum.x[RX_ITERS]
				: 0.0,
		sum.x[RX_INSERTS], sum.x[RX_REMOVES], sum.x[RX_REPLACES],
		sum.x[RX_DUP_INSERTS], sum.x[RX_OWN_LOOKUPS], S->resizes,
		S->resize_nomem, S->faults, S->faults + S->allocs, S->nkeys,
		RH_STABLE);
}

static void rh_progress(struct sk_tort *T, char *buf, size_t len)
{
	struct rh_state *S = T->priv;

	snprintf(buf, len, "%lu buckets, %lu resizes, %lu faults",
		 sk_rhash_buckets(S->ht), sk_atomic_load_relaxed(&S->resizes),
		 sk_atomic_load_relaxed(&S->faults));
}

static void rh_destroy(struct sk_tort *T)
{
	struct rh_state *S = T->priv;

	rh_cur = NULL;
	sk_rhs_keys_fini(&S->vol);
	free(T->priv);
	T->priv = NULL;
}

const struct sk_tort_scenario sk_tort_rhash_scenario = {
	.name = "sk_rhash",
	.needs_global_rcu = 1,
	.plain_updaters = 1,
	.setup = rh_setup,
	.thread_init = rh_thread_init,
	.thread_fini = sk_tort_thread_priv_fini,
	.read_one = rh_read_one,
	.before_qs = rh_before_qs,
	.update_one = rh_update_one,
	.update_drain = sk_tort_update_drain,
	.nextra = rh_nextra,
	.extra_one = rh_extra_one,
	.extra_drain = NULL,
	.finish = rh_finish,
	.report = rh_report,
	.progress = rh_progress,
	.destroy = rh_destroy,
	.obj_free = poison_retire,
};
