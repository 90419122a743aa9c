/* SPDX-License-Identifier: MIT */
/*
 * The tests' self-contained run of the hash table's stress harness
 * (tools/rhash_stress.h, sk_rhs_run()): its objects (a poisoned payload),
 * their hooks, its threads around the shared thread bodies of
 * tools/rhash_stress.c, and its broken twin that frees without a grace
 * period.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rhash_stress.h"
#include "torture_ops.h" /* sk_tort_rand() */

/* ---- the self-contained run ---------------------------------------------- */

/* Everything the threads share. */
struct sk_rhs {
	const struct sk_rhs_config *cfg;
	struct sk_rhs_shape sh;
	int stop; /* readers and resizers end */
	int updaters_left;
	struct sk_rhs_result end; /* the final comparison's failures */
	pthread_mutex_t res_lock;
};

struct sk_rhs_thread {
	struct sk_rhs *s;
	unsigned int id;
	struct sk_tort_rng rng;
	struct sk_rhs_result r;
	uint64_t gen;
	struct sk_rhs_obj *quarantine; /* broken variant */
};

/* Where each failure kind is counted. */
static const size_t sk_rhs_fail_field[SK_RHS_F_NR] = {
	[SK_RHS_F_MISSING] = offsetof(struct sk_rhs_result, missing),
	[SK_RHS_F_GHOST] = offsetof(struct sk_rhs_result, ghosts),
	[SK_RHS_F_ITER_MISSING] = offsetof(struct sk_rhs_result, iter_missing),
	[SK_RHS_F_ITER_GHOST] = offsetof(struct sk_rhs_result, iter_ghosts),
	[SK_RHS_F_RUNAWAY] = offsetof(struct sk_rhs_result, runaway),
	[SK_RHS_F_UNKNOWN_KEY] = offsetof(struct sk_rhs_result, corrupt),
	[SK_RHS_F_UPDATE] = offsetof(struct sk_rhs_result, update_errors),
	[SK_RHS_F_DUP] = offsetof(struct sk_rhs_result, update_errors),
	[SK_RHS_F_OWN] = offsetof(struct sk_rhs_result, update_errors),
	[SK_RHS_F_BUCKETS] = offsetof(struct sk_rhs_result, corrupt),
	[SK_RHS_F_FINAL] = offsetof(struct sk_rhs_result, final_mismatch),
};

static uint64_t sk_rhs_payload(uint64_t key, uint64_t gen, int i)
{
	uint64_t x = key * 0x9e3779b97f4a7c15ull ^ gen * 0xbf58476d1ce4e5b9ull;

	return x + (uint64_t)i * 0x94d049bb133111ebull;
}

static int sk_rhs_failed(struct sk_rhs *s)
{
	return s->cfg->stop_on_failure &&
	       __atomic_load_n(&s->stop, __ATOMIC_RELAXED) == 2;
}

static void sk_rhs_count(struct sk_rhs *s, struct sk_rhs_result *r,
			 size_t field)
{
	++*(unsigned long *)(void *)((char *)r + field);
	if (s->cfg->stop_on_failure)
		__atomic_store_n(&s->stop, 2, __ATOMIC_RELAXED);
}

/* The fail hook: counted in the thread's result (the run's at the end). */
static void sk_rhs_fail(void *ctx, void *tv, enum sk_rhs_fail f,
			unsigned long key, long detail)
{
	struct sk_rhs_thread *t = tv;
	struct sk_rhs *s = ctx;

	(void)key;
	(void)detail;
	sk_rhs_count(s, t ? &t->r : &s->end, sk_rhs_fail_field[f]);
}

/* Poisoned, or its payload not the one its key and gen give? */
static int sk_rhs_bad(struct sk_rhs_obj *o, int *poisoned)
{
	int j;

	*poisoned = __atomic_load_n(&o->poison, __ATOMIC_RELAXED) != 0;
	if (*poisoned)
		return 1;
	for (j = 0; j < SK_RHS_PAYLOAD; j++)
		if (o->payload[j] != sk_rhs_payload(o->key, o->gen, j))
			return 1;
	return 0;
}

/*
 * The check hook: an object reached inside a read section is live, has
 * the key wanted, its payload intact; lingering, the poison is checked
 * again after spinning, so that an object freed too early is caught while
 * the reader holds it.
 */
static int sk_rhs_check(void *ctx, void *tv, void *obj, unsigned long want,
			int linger, unsigned long *key)
{
	struct sk_rhs_thread *t = tv;
	struct sk_rhs *s = ctx;
	struct sk_rhs_obj *o = obj;
	unsigned int i, spin = linger ? s->cfg->spin : 0;
	int poisoned;

	*key = o->key;
	if (!t) /* the end: the final comparison counts it */
		return !sk_rhs_bad(o, &poisoned);
	if (sk_rhs_bad(o, &poisoned) || (want != ~0UL && o->key != want)) {
		sk_rhs_count(s, &t->r,
			     poisoned
				     ? offsetof(struct sk_rhs_result, poisoned)
				     : offsetof(struct sk_rhs_result, corrupt));
		return 0;
	}
	for (i = 0; i < spin; i++)
		sk_cpu_relax();
	if (__atomic_load_n(&o->poison, __ATOMIC_RELAXED)) {
		sk_rhs_count(s, &t->r,
			     offsetof(struct sk_rhs_result, poisoned));
		return 0;
	}
	return 1;
}

static void *sk_rhs_reader(void *arg)
{
	struct sk_rhs_thread *t = (struct sk_rhs_thread *)arg;
	struct sk_rhs *s = t->s;
	unsigned long round = 0, b;

	while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		sk_rcu_read_lock();
		if (s->cfg->iterate_every &&
		    ++round % s->cfg->iterate_every == 0) {
			/* Inside the section: the array cannot go. */
			b = sk_rhash_buckets(s->sh.ht);
			if (b > t->r.max_buckets_seen)
				t->r.max_buckets_seen = b;
			sk_rhs_iterate(&s->sh, t, NULL, &t->r.checked_keys);
			t->r.iterations++;
		} else {
			sk_rhs_lookups(&s->sh, t, &t->rng,
				       s->cfg->lookups_per_section, NULL, NULL,
				       &t->r.checked_keys);
			t->r.lookups += s->cfg->lookups_per_section;
		}
		sk_rcu_read_unlock();
	}
	return NULL;
}

static void sk_rhs_poison_free(struct sk_rcu_head *h)
{
	struct sk_rhs_obj *o =
		(struct sk_rhs_obj *)(void *)((char *)h -
					      offsetof(struct sk_rhs_obj, rcu));

	__atomic_store_n(&o->poison, SK_RHS_POISON, __ATOMIC_RELAXED);
	free(o);
}

/*
 * The retire hook: a removed object goes after a grace period (replaced:
 * SK_FREE_RCU(), else a poisoning callback), or (broken) at once.
 */
static void sk_rhs_retire(void *ctx, void *tv, void *obj, int replaced)
{
	struct sk_rhs_thread *t = tv;
	struct sk_rhs_obj *o = obj;

	if (((struct sk_rhs *)ctx)->cfg->broken) {
		__atomic_store_n(&o->poison, SK_RHS_POISON, __ATOMIC_RELAXED);
		o->qnext = t->quarantine;
		t->quarantine = o;
	} else if (replaced) {
		if (SK_FREE_RCU(o, rcu))
			abort();
	} else {
		if (sk_call_rcu(&o->rcu, sk_rhs_poison_free))
			abort();
	}
}

static void sk_rhs_quarantine_free(struct sk_rhs_obj *q)
{
	while (q) {
		struct sk_rhs_obj *n = q->qnext;

		free(q);
		q = n;
	}
}

/* The make hook. */
static void *sk_rhs_new(void *ctx, void *tv, unsigned long key)
{
	struct sk_rhs_obj *o = (struct sk_rhs_obj *)calloc(1, sizeof(*o));
	struct sk_rhs_thread *t = tv;
	int i;

	(void)ctx;
	if (!o)
		abort();
	o->key = key;
	o->gen = ++t->gen;
	for (i = 0; i < SK_RHS_PAYLOAD; i++)
		o->payload[i] = sk_rhs_payload(key, o->gen, i);
	return o;
}

static void sk_rhs_unmake(void *ctx, void *t, void *obj)
{
	(void)ctx;
	(void)t;
	free(obj);
}

static void *sk_rhs_updater(void *arg)
{
	struct sk_rhs_thread *t = (struct sk_rhs_thread *)arg;
	struct sk_rhs *s = t->s;
	const struct sk_rhs_config *cfg = s->cfg;
	unsigned long K = cfg->keys_per_updater, i;
	struct sk_rhs_obj *q_old = NULL;
	int kind;

	for (i = 0; i < cfg->updates && !sk_rhs_failed(s); i++) {
		if (cfg->updates_in_section)
			sk_rcu_read_lock();
		kind = sk_rhs_update(&s->sh, t, &t->rng,
				     t->id * K + sk_tort_below(&t->rng, K));
		if (cfg->updates_in_section)
			sk_rcu_read_unlock();
		if (kind < 0)
			abort();
		t->r.kinds[kind]++;
		if (cfg->broken && i % 64 == 63) {
			/* Objects poisoned before this grace period have no
			 * reader left: really free them now. */
			sk_synchronize_rcu();
			sk_rhs_quarantine_free(q_old);
			q_old = t->quarantine;
			t->quarantine = NULL;
		}
	}
	sk_synchronize_rcu();
	sk_rhs_quarantine_free(q_old);
	sk_rhs_quarantine_free(t->quarantine);
	pthread_mutex_lock(&s->res_lock);
	if (--s->updaters_left == 0 &&
	    __atomic_load_n(&s->stop, __ATOMIC_RELAXED) == 0)
		__atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&s->res_lock);
	return NULL;
}

static void *sk_rhs_resizer(void *arg)
{
	struct sk_rhs_thread *t = (struct sk_rhs_thread *)arg;
	struct sk_rhs *s = t->s;

	/*
	 * At least one resize, however soon the updaters end (a loaded or
	 * emulated machine may give this thread no CPU before they do).
	 */
	do {
		if (sk_rhs_resize(&s->sh, t, &t->rng))
			t->r.resize_errors++;
		t->r.resizes++;
		if (t->r.resizes % 8 == 0)
			sched_yield();
	} while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED));
	return NULL;
}

static void sk_rhs_add(struct sk_rhs_result *a, const struct sk_rhs_result *b)
{
	const unsigned long *src = (const unsigned long *)(const void *)b;
	unsigned long *dst = (unsigned long *)(void *)a;
	size_t i, n = sizeof(*a) / sizeof(unsigned long);

	for (i = 0; i < n; i++) {
		if (i == offsetof(struct sk_rhs_result, max_buckets_seen) /
				 sizeof(unsigned long))
			dst[i] = dst[i] > src[i] ? dst[i] : src[i];
		else
			dst[i] += src[i];
	}
}

static void sk_rhs_free_obj(void *obj, void *arg)
{
	(void)arg;
	free(obj);
}

/* check, fail, make, unmake, retire */
static const struct sk_rhs_hooks sk_rhs_hooks = { sk_rhs_check, sk_rhs_fail,
						  sk_rhs_new, sk_rhs_unmake,
						  sk_rhs_retire };

/* The run's table (one bucket to start with, up to 2^max_log2), its model. */
static int sk_rhs_shape_init(struct sk_rhs *s)
{
	const struct sk_rhs_config *cfg = s->cfg;
	struct sk_rhash_params p = SK_RHASH_PARAMS_DEFAULT;
	struct sk_rhs_shape *sh = &s->sh;
	unsigned long n = (unsigned long)cfg->updaters * cfg->keys_per_updater;

	sh->model = calloc(n, sizeof(*sh->model));
	if (!sh->model || sk_rhs_keys_init(&sh->keys, n))
		abort();
	sh->node_off = offsetof(struct sk_rhs_obj, node);
	sh->max_log2 = cfg->max_log2;
	sh->spin_first = 1;
	sh->plain_inserts = cfg->plain_inserts;
	sh->ctx = s;
	sh->h = &sk_rhs_hooks;
	p.head_offset = offsetof(struct sk_rhs_obj, node);
	p.key_offset = offsetof(struct sk_rhs_obj, key);
	p.key_len = sizeof(unsigned long);
	p.seed = (unsigned long)cfg->seed;
	p.initial_buckets = 1;
	p.min_buckets = 1;
	p.max_buckets = 1UL << (cfg->max_log2 ? cfg->max_log2 : 10);
	p.automatic_resize = cfg->automatic_resize;
	sh->ht = sk_rhash_create(&p);
	return sh->ht ? 0 : -errno;
}

/* Start the threads: updaters, readers, resizers; wait for them. */
static void sk_rhs_threads(struct sk_rhs *s, struct sk_rhs_thread *th,
			   unsigned int nthreads, struct sk_rhs_result *res)
{
	const struct sk_rhs_config *cfg = s->cfg;
	pthread_t *tid = (pthread_t *)calloc(nthreads, sizeof(*tid));
	unsigned int i;

	if (!tid)
		abort();
	for (i = 0; i < nthreads; i++) {
		void *(*fn)(void *);

		th[i].s = s;
		th[i].rng.s = cfg->seed * 0x9e3779b97f4a7c15ull + i + 1;
		if (i < cfg->updaters) {
			th[i].id = i;
			fn = sk_rhs_updater;
		} else if (i < cfg->updaters + cfg->readers) {
			fn = sk_rhs_reader;
		} else {
			fn = sk_rhs_resizer;
		}
		if (pthread_create(&tid[i], NULL, fn, &th[i])) {
			fprintf(stderr, "%s: pthread_create failed\n",
				cfg->name);
			abort();
		}
	}
	for (i = 0; i < nthreads; i++) {
		pthread_join(tid[i], NULL);
		sk_rhs_add(res, &th[i].r);
	}
	free(tid);
}

int sk_rhs_run(const struct sk_rhs_config *cfg, struct sk_rhs_result *res)
{
	unsigned int nthreads = cfg->readers + cfg->updaters + cfg->resizers;
	struct sk_rhs_thread *th;
	struct sk_rhs *s;
	int err;

	memset(res, 0, sizeof(*res));
	if (cfg->updaters > SK_RHS_MAX_UPD || !cfg->updaters ||
	    !cfg->keys_per_updater)
		return -EINVAL;
	s = (struct sk_rhs *)calloc(1, sizeof(*s));
	th = (struct sk_rhs_thread *)calloc(nthreads, sizeof(*th));
	if (!s || !th)
		abort();
	s->cfg = cfg;
	pthread_mutex_init(&s->res_lock, NULL);
	s->updaters_left = (int)cfg->updaters;
	err = sk_rhs_shape_init(s);
	if (!err) {
		sk_rhs_threads(s, th, nthreads, res);
		/* Every callback (poisoning and freeing) has run. */
		sk_rcu_barrier();
		sk_rhs_final(&s->sh);
		res->final_mismatch = s->end.final_mismatch;
		sk_rhash_destroy(s->sh.ht, sk_rhs_free_obj, NULL);
	}
	free(s->sh.model);
	sk_rhs_keys_fini(&s->sh.keys);
	pthread_mutex_destroy(&s->res_lock);
	free(s);
	free(th);
	return err;
}

void sk_rhs_print(const struct sk_rhs_config *cfg,
		  const struct sk_rhs_result *r)
{
	fprintf(stderr,
		"  %s: %lu lookups, %lu untouched keys checked, %lu iterations, "
		"%lu inserts, %lu removes, %lu replaces, %lu duplicate "
		"inserts, %lu own-key lookups, %lu resizes (up to "
		"%lu buckets seen); failures: %lu missing, %lu ghosts, %lu "
		"iteration missing, %lu iteration ghosts, %lu poisoned, %lu "
		"corrupt, %lu runaway, %lu update errors, final mismatch %lu\n",
		cfg->name, r->lookups, r->checked_keys, r->iterations,
		r->kinds[SK_RHS_INSERT], r->kinds[SK_RHS_REMOVE],
		r->kinds[SK_RHS_REPLACE], r->kinds[SK_RHS_DUP_INSERT],
		r->kinds[SK_RHS_OWN_LOOKUP], r->resizes, r->max_buckets_seen,
		r->missing, r->ghosts, r->iter_missing, r->iter_ghosts,
		r->poisoned, r->corrupt, r->runaway, r->update_errors,
		r->final_mismatch);
}

unsigned long sk_rhs_failures(const struct sk_rhs_result *r)
{
	return r->missing + r->ghosts + r->iter_missing + r->iter_ghosts +
	       r->poisoned + r->corrupt + r->runaway + r->update_errors;
}
