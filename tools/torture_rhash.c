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
	struct sk_rhs_shape sh;	 /* table, key model, thread bodies */
	void *stable[RH_STABLE]; /* never change */
	unsigned long nkeys;	 /* stable + volatile keys */
	struct sk_tort_pool pool0;
	int faults_on;			     /* atomic */
	uint64_t fault_below;		     /* rand < this: fail */
	unsigned long allocs, faults;	     /* atomic */
	unsigned long resizes, resize_nomem; /* resizer only */
};

struct rh_updater {
	struct sk_tort_updater up; /* first: pool, polled frees */
	unsigned long base;	   /* its first key in sh.model */
};

struct rh_reader {
	struct rh_obj *held[RH_HOLD];
	unsigned int nheld;
};

/*
 * x[] counters.  Each update of a run without errors is exactly one of
 * RX_INSERTS .. RX_OWN_LOOKUPS (enum sk_rhs_kind, in its order), so their
 * sum is the number of updates.
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
	return (key * ((unsigned long)0xc2b2ae3d27d4eb4fULL)) ^ (gen << 17) ^
	       0xa5a5;
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

/* ---- the harness's hooks (struct sk_rhs_shape) --------------------------- */

static int obj_ok(struct sk_tort_thread *t, struct rh_obj *o,
		  unsigned long want_key, const char *when, unsigned long *key)
{
	if (!sk_tort_stamp_ok(t, "object", o, &o->st, when, rh_check, key))
		return 0;
	if (want_key != ~0UL && *key != want_key) {
		sk_tort_error(t->T, t, "object %p %s: key %lu, looked up %lu",
			      (void *)o, when, *key, want_key);
		return 0;
	}
	return 1;
}

/* The end of the run (t NULL): the stamp only, reported by the harness. */
static int rh_check_hook(void *ctx, void *t, void *obj, unsigned long want,
			 int linger, unsigned long *key)
{
	struct rh_obj *o = obj;

	(void)ctx;
	(void)linger;
	if (!t) {
		*key = o->st.key;
		return o->st.magic == SK_TORT_MAGIC;
	}
	return obj_ok(t, o, want, "reached by a reader", key);
}

static void rh_fail_hook(void *ctx, void *t, enum sk_rhs_fail f,
			 unsigned long key, long detail)
{
	sk_tort_error(ctx, t, "%s %ld (key %lu)", sk_rhs_fail_what[f], detail,
		      key);
}

static void *rh_make_hook(void *ctx, void *tv, unsigned long key)
{
	struct sk_tort_thread *t = tv;
	struct rh_updater *u = t->priv;

	return new_obj(ctx, &u->up.pool, key, sk_tort_rand(&t->rng) >> 8);
}

static void rh_unmake_hook(void *ctx, void *tv, void *obj)
{
	struct sk_tort_thread *t = tv;
	struct rh_updater *u = t->priv;

	(void)ctx;
	sk_tort_pool_retire(&u->up.pool, obj);
}

/* Free old (unlinked by this updater) after a grace period. */
static void rh_retire_hook(void *ctx, void *tv, void *old, int replaced)
{
	struct sk_tort_thread *t = tv;
	int g = sk_tort_pick_gp(t);

	(void)ctx;
	(void)replaced;
	/* Inside a read section only what does not wait: call or poll. */
	if (t->T->cfg->in_section && g != SK_TORT_GP_CB && g != SK_TORT_GP_POLL)
		g = SK_TORT_GP_CB;
	sk_tort_obj_retire(t, &((struct rh_obj *)old)->o, g, 0);
}

/* check, fail, make, unmake, retire */
static const struct sk_rhs_hooks rh_hooks = { rh_check_hook, rh_fail_hook,
					      rh_make_hook, rh_unmake_hook,
					      rh_retire_hook };

/* The table, and the harness's view of it, its keys and objects. */
static int rh_shape_init(struct sk_tort *T, struct rh_state *S)
{
	struct sk_rhash_params p = SK_RHASH_PARAMS_DEFAULT;
	struct sk_rhs_shape *sh = &S->sh;
	unsigned long nvol = T->cfg->updaters * RH_VOL;

	sh->model = calloc(nvol ? nvol : 1, sizeof(*sh->model));
	if (!sh->model || sk_rhs_keys_init(&sh->keys, nvol))
		return -ENOMEM;
	sh->first = RH_STABLE;
	sh->stable = S->stable;
	sh->node_off = offsetof(struct rh_obj, node);
	sh->max_log2 = RH_MAX_BUCKETS_LOG;
	sh->big_log = RH_BIG_LOG;
	sh->big_logs = RH_BIG_LOGS;
	sh->ctx = T;
	sh->h = &rh_hooks;
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
	sh->ht = sk_rhash_create(&p);
	return sh->ht ? 0 : -errno;
}

static void rh_shape_fini(struct rh_state *S)
{
	sk_rhs_keys_fini(&S->sh.keys);
	free(S->sh.model);
}

static int rh_setup(struct sk_tort *T)
{
	struct rh_state *S = sk_tort_calloc(1, sizeof(*S));
	unsigned long k;
	int err;

	if (!S)
		return -ENOMEM;
	S->nkeys = RH_STABLE + T->cfg->updaters * RH_VOL;
	rh_cur = S;
	rh_fallback_rng.s = T->cfg->seed ^ 0xfa17fa17fa17fa17ULL;
	/* 2^64 * P, saturated. */
	S->fault_below = T->cfg->fault_rate >= 1.0
				 ? UINT64_MAX
				 : (uint64_t)(T->cfg->fault_rate *
					      18446744073709551616.0);
	err = rh_shape_init(T, S);
	if (err)
		goto free_state;
	sk_tort_pool_init(&S->pool0, sizeof(struct rh_obj), T->ops->busted);
	for (k = 0; k < RH_STABLE; k++) {
		struct rh_obj *o = new_obj(T, &S->pool0, k, 0);

		err = o ? sk_rhash_insert_unique(S->sh.ht, &o->node) : -ENOMEM;
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
	sk_rhash_destroy(S->sh.ht, free_obj, T);
	sk_tort_pool_destroy(&S->pool0);
free_state:
	rh_cur = NULL;
	rh_shape_fini(S);
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
		u->base = t->index * RH_VOL;
	}
	return 0;
}

/* ---- readers: sk_rhs_lookups(), sk_rhs_iterate() ------------------------- */

static void hold(struct sk_tort_thread *t, void *o)
{
	struct rh_reader *r = t->priv;

	if (o && t->qsbr && r->nheld < RH_HOLD)
		r->held[r->nheld++] = o;
}

static void rh_read_one(struct sk_tort_thread *t)
{
	struct sk_tort *T = t->T;
	const struct sk_tort_ops *ops = T->ops;
	struct rh_state *S = T->priv;
	int nidx[SK_TORT_MAX_NEST];
	void *found[8], *held = NULL;
	unsigned long fkey[8], depth, n, i, nf, checked = 0, key;
	int idx;

	idx = ops->readlock(T->ctx);
	depth = sk_tort_nest_lock(t, nidx, 0);
	n = 1 + sk_tort_below(&t->rng, 8);
	nf = sk_rhs_lookups(&S->sh, t, &t->rng, n, found, fkey, &checked);
	for (i = 0; i < nf; i++)
		hold(t, found[i]);
	sk_tort_add(&t->st->x[RX_LOOKUPS], n);
	if (sk_tort_one_in(&t->rng, 32)) {
		sk_tort_add(&t->st->x[RX_ITER_OBJS],
			    sk_rhs_iterate(&S->sh, t, &held, &checked));
		sk_tort_inc(&t->st->x[RX_ITERS]);
		hold(t, held);
	}
	/*
	 * What the section found must stay intact until it ends, however
	 * long it lasts: a grace period that ended meanwhile lets an
	 * updater poison it.
	 */
	ops->read_delay(&t->rng, T->cfg->sleep);
	for (i = 0; i < nf; i++)
		obj_ok(t, found[i], fkey[i], "at the end of the section", &key);
	sk_tort_nest_unlock(t, nidx, depth);
	ops->readunlock(T->ctx, idx);
	sk_tort_inc(&t->st->reads);
}

static void rh_before_qs(struct sk_tort_thread *t)
{
	struct rh_reader *r = t->priv;
	unsigned long key;
	unsigned int i;

	for (i = 0; i < r->nheld; i++)
		obj_ok(t, r->held[i], ~0UL, "held until a quiescent state",
		       &key);
	r->nheld = 0;
}

/* ---- updaters: sk_rhs_update() ------------------------------------------- */

/*
 * One update; with --in-section inside a read section (the table's
 * resizes never hold a bucket lock across a grace period, so an update
 * there neither fails nor hangs, also while they run).  Such a thread may
 * be a QSBR one: then the section is still a real read section.
 */
static void rh_update_one(struct sk_tort_thread *t)
{
	struct sk_tort *T = t->T;
	struct rh_state *S = T->priv;
	struct rh_updater *u = t->priv;
	int kind;

	if (T->cfg->in_section)
		sk_rcu_read_lock();
	if (u->up.pending)
		sk_tort_reap_pending(T, &u->up);
	kind = sk_rhs_update(&S->sh, t, &t->rng,
			     u->base + sk_tort_below(&t->rng, RH_VOL));
	if (T->cfg->in_section)
		sk_rcu_read_unlock();
	if (kind < 0) {
		sk_tort_error(T, t, "out of memory");
		usleep(1000);
		return;
	}
	sk_tort_inc(&t->st->x[RX_INSERTS + kind]);
	sk_tort_inc(&t->st->updates);
}

/* ---- resizer: sk_rhs_resize() -------------------------------------------- */

static unsigned int rh_nextra(struct sk_tort *T)
{
	(void)T;
	return 1;
}

static void rh_extra_one(struct sk_tort_thread *t)
{
	struct sk_tort *T = t->T;
	struct rh_state *S = T->priv;
	int r = sk_rhs_resize(&S->sh, t, &t->rng);

	if (r == 0)
		sk_tort_inc(&S->resizes);
	else if (r == -ENOMEM && T->cfg->fault_rate > 0)
		sk_tort_inc(&S->resize_nomem);
	else
		sk_tort_error(T, t, "sk_rhash_resize() returned %d", r);
	if (sk_tort_one_in(&t->rng, 2))
		usleep((useconds_t)sk_tort_below(&t->rng, 500));
}

/* ---- end of the run: sk_rhs_final() -------------------------------------- */

static void rh_finish(struct sk_tort *T)
{
	struct rh_state *S = T->priv;
	unsigned long allocated, freed;

	sk_atomic_store_relaxed(&S->faults_on, 0);
	/* Kept for the report: */
	S->nkeys = sk_rhs_final(&S->sh);
	sk_rhash_destroy(S->sh.ht, free_obj, T);
	sk_tort_pools_count(T, &S->pool0, &allocated, &freed);
	if (allocated != freed)
		sk_tort_error(T, NULL, "%lu objects allocated, %lu freed",
			      allocated, freed);
	sk_tort_pools_destroy(T, &S->pool0);
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
		 sk_rhash_buckets(S->sh.ht),
		 sk_atomic_load_relaxed(&S->resizes),
		 sk_atomic_load_relaxed(&S->faults));
}

static void rh_destroy(struct sk_tort *T)
{
	struct rh_state *S = T->priv;

	rh_cur = NULL;
	rh_shape_fini(S);
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
