/* SPDX-License-Identifier: MIT */
/*
 * The hash table's stress harness (tools/rhash_stress.h): the key model,
 * and the self-contained run of the tests.
 */
#include "rhash_stress.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torture_ops.h" /* sk_tort_rand() */

/* ---- the key model ------------------------------------------------------ */

int sk_rhs_keys_init(struct sk_rhs_keys *k, unsigned long n)
{
	k->n = n;
	k->seq = calloc(n ? n : 1, sizeof(*k->seq));
	k->present = calloc(n ? n : 1, sizeof(*k->present));
	if (k->seq && k->present)
		return 0;
	sk_rhs_keys_fini(k);
	return -ENOMEM;
}

void sk_rhs_keys_fini(struct sk_rhs_keys *k)
{
	free(k->seq);
	free(k->present);
	k->seq = NULL;
	k->present = NULL;
}

void sk_rhs_key_changing(struct sk_rhs_keys *k, unsigned long key)
{
	/*
	 * Odd: the key is changing.  Ordered before the update's
	 * publication by that store's release: a reader that sees
	 * the update sees the odd count after its acquire fence.
	 */
	__atomic_store_n(&k->seq[key], k->seq[key] + 1, __ATOMIC_RELAXED);
}

void sk_rhs_key_changed(struct sk_rhs_keys *k, unsigned long key, int present)
{
	__atomic_store_n(&k->present[key], present, __ATOMIC_RELAXED);
	/* Even: done; the presence above is valid (release). */
	__atomic_store_n(&k->seq[key], k->seq[key] + 1, __ATOMIC_RELEASE);
}

void sk_rhs_key_snap(struct sk_rhs_keys *k, unsigned long key,
		     struct sk_rhs_snap *s)
{
	/* Acquire: the presence stored before this even count. */
	s->seq = __atomic_load_n(&k->seq[key], __ATOMIC_ACQUIRE);
	s->present = __atomic_load_n(&k->present[key], __ATOMIC_RELAXED);
}

enum sk_rhs_verdict sk_rhs_key_verdict(struct sk_rhs_keys *k, unsigned long key,
				       const struct sk_rhs_snap *s, int found)
{
	/* After the caller's sk_smp_rmb(): its lookup's loads came first. */
	unsigned long s2 = __atomic_load_n(&k->seq[key], __ATOMIC_RELAXED);

	if (s->seq != s2 || (s->seq & 1))
		return SK_RHS_CHANGED;
	if (s->present && !found)
		return SK_RHS_MISSING;
	if (!s->present && found)
		return SK_RHS_GHOST;
	return SK_RHS_OK;
}

/* ---- the self-contained run ---------------------------------------------- */

/* Everything the threads share. */
struct sk_rhs {
	const struct sk_rhs_config *cfg;
	struct sk_rhash *ht;
	unsigned long nkeys;
	struct sk_rhs_keys keys;
	struct sk_rhs_obj **model[SK_RHS_MAX_UPD]; /* updater's objects */
	int stop;	      /* readers and resizers end */
	int updaters_left;
	struct sk_rhs_result res; /* summed under lock */
	pthread_mutex_t res_lock;
};

struct sk_rhs_thread {
	struct sk_rhs *s;
	unsigned int id;
	struct sk_tort_rng rng;
	struct sk_rhs_result r;
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

static void sk_rhs_flag_failure(struct sk_rhs *s)
{
	if (s->cfg->stop_on_failure)
		__atomic_store_n(&s->stop, 2, __ATOMIC_RELAXED);
}

/* Count a verdict of the key model (checked_keys, then a failure kind). */
static void sk_rhs_count_verdict(struct sk_rhs_thread *t, enum sk_rhs_verdict v,
				 unsigned long *missing, unsigned long *ghosts)
{
	if (v == SK_RHS_CHANGED)
		return;
	t->r.checked_keys++;
	if (v == SK_RHS_MISSING)
		++*missing;
	else if (v == SK_RHS_GHOST)
		++*ghosts;
	else
		return;
	sk_rhs_flag_failure(t->s);
}

/*
 * Check an object reached inside a read section: live, the key wanted
 * (when key != ~0), payload intact.  Re-checks the poison after spinning,
 * so that an object freed too early is caught while the reader holds it.
 */
static void sk_rhs_check_obj(struct sk_rhs_thread *t,
				    struct sk_rhs_obj *o, uint64_t key,
				    int linger)
{
	unsigned int i, spin = linger ? t->s->cfg->spin : 0;
	int j;

	if (__atomic_load_n(&o->poison, __ATOMIC_RELAXED)) {
		t->r.poisoned++;
		sk_rhs_flag_failure(t->s);
		return;
	}
	if (key != ~0ull && o->key != key)
		t->r.corrupt++;
	for (j = 0; j < SK_RHS_PAYLOAD; j++)
		if (o->payload[j] != sk_rhs_payload(o->key, o->gen, j)) {
			t->r.corrupt++;
			sk_rhs_flag_failure(t->s);
			break;
		}
	for (i = 0; i < spin; i++)
		sk_cpu_relax();
	if (__atomic_load_n(&o->poison, __ATOMIC_RELAXED)) {
		t->r.poisoned++;
		sk_rhs_flag_failure(t->s);
	}
}

static void sk_rhs_lookups(struct sk_rhs_thread *t)
{
	struct sk_rhs *s = t->s;
	unsigned int i, n = s->cfg->lookups_per_section;

	sk_rcu_read_lock();
	for (i = 0; i < n; i++) {
		/* A few keys beyond the updaters' ranges: never present. */
		uint64_t k = sk_tort_rand(&t->rng) %
			     (s->nkeys + s->nkeys / 16 + 1);
		struct sk_rhs_snap snap;
		struct sk_rhs_obj *o;

		if (k < s->nkeys)
			sk_rhs_key_snap(&s->keys, k, &snap);
		o = (struct sk_rhs_obj *)sk_rhash_lookup(s->ht, &k);
		if (o)
			sk_rhs_check_obj(t, o, k, i == 0);
		/* The lookup's loads before the second read of seq. */
		sk_smp_rmb();
		t->r.lookups++;
		if (k >= s->nkeys) {
			if (o)
				t->r.ghosts++;
			continue;
		}
		sk_rhs_count_verdict(t, sk_rhs_key_verdict(&s->keys, k, &snap,
							   o != NULL),
				     &t->r.missing, &t->r.ghosts);
	}
	sk_rcu_read_unlock();
}

static void sk_rhs_iterate(struct sk_rhs_thread *t, struct sk_rhs_snap *snap,
			   unsigned int *seen)
{
	struct sk_rhs *s = t->s;
	struct sk_rhash_iter it;
	struct sk_rhs_obj *o;
	unsigned long k, n = 0, limit = 4 * s->nkeys + 64, b;

	memset(seen, 0, s->nkeys * sizeof(*seen));
	sk_rcu_read_lock();
	for (k = 0; k < s->nkeys; k++)
		sk_rhs_key_snap(&s->keys, k, &snap[k]);
	/* Inside the section: the array cannot be freed under us. */
	b = sk_rhash_buckets(s->ht);
	if (b > t->r.max_buckets_seen)
		t->r.max_buckets_seen = b;
	sk_rhash_iter_start(s->ht, &it);
	while ((o = (struct sk_rhs_obj *)sk_rhash_iter_next(&it)) != NULL) {
		sk_rhs_check_obj(t, o, ~0ull, n == 0);
		if (o->key < s->nkeys)
			seen[o->key]++;
		else
			t->r.corrupt++;
		if (++n > limit) {
			t->r.runaway++;
			sk_rhs_flag_failure(s);
			break;
		}
	}
	sk_smp_rmb();
	for (k = 0; k < s->nkeys; k++)
		sk_rhs_count_verdict(t, sk_rhs_key_verdict(&s->keys, k, &snap[k],
							   seen[k] != 0),
				     &t->r.iter_missing, &t->r.iter_ghosts);
	sk_rcu_read_unlock();
	t->r.iterations++;
}

static void *sk_rhs_reader(void *arg)
{
	struct sk_rhs_thread *t = (struct sk_rhs_thread *)arg;
	struct sk_rhs *s = t->s;
	struct sk_rhs_snap *snap = malloc(s->nkeys * sizeof(*snap));
	unsigned int *seen = malloc(s->nkeys * sizeof(*seen));
	unsigned long round = 0;

	if (!snap || !seen)
		abort();
	while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		if (s->cfg->iterate_every &&
		    ++round % s->cfg->iterate_every == 0)
			sk_rhs_iterate(t, snap, seen);
		else
			sk_rhs_lookups(t);
	}
	free(snap);
	free(seen);
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

/* Dispose of a removed object: after a grace period, or (broken) not. */
static void sk_rhs_retire(struct sk_rhs_thread *t, struct sk_rhs_obj *o,
				 struct sk_rhs_obj **quarantine, int use_free_rcu)
{
	if (t->s->cfg->broken) {
		__atomic_store_n(&o->poison, SK_RHS_POISON, __ATOMIC_RELAXED);
		o->qnext = *quarantine;
		*quarantine = o;
	} else if (use_free_rcu) {
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

static struct sk_rhs_obj *sk_rhs_new(uint64_t key, uint64_t gen)
{
	struct sk_rhs_obj *o = (struct sk_rhs_obj *)calloc(1, sizeof(*o));
	int i;

	if (!o)
		abort();
	o->key = key;
	o->gen = gen;
	for (i = 0; i < SK_RHS_PAYLOAD; i++)
		o->payload[i] = sk_rhs_payload(key, gen, i);
	return o;
}

static void *sk_rhs_updater(void *arg)
{
	struct sk_rhs_thread *t = (struct sk_rhs_thread *)arg;
	struct sk_rhs *s = t->s;
	const struct sk_rhs_config *cfg = s->cfg;
	unsigned long K = cfg->keys_per_updater, i;
	uint64_t base = (uint64_t)t->id * K, gen = 0;
	struct sk_rhs_obj **m = s->model[t->id];
	struct sk_rhs_obj *quarantine = NULL, *q_old = NULL;

	for (i = 0; i < cfg->updates && !sk_rhs_failed(s); i++) {
		unsigned long j = (unsigned long)(sk_tort_rand(&t->rng) % K);
		uint64_t key = base + j, r = sk_tort_rand(&t->rng) % 4;
		struct sk_rhs_obj *o = m[j], *n;

		sk_rhs_key_changing(&s->keys, key);
		if (cfg->updates_in_section)
			sk_rcu_read_lock();
		if (!o) {
			n = sk_rhs_new(key, ++gen);
			if ((r & 1) && !cfg->plain_inserts) {
				if (sk_rhash_insert_unique(s->ht, &n->node))
					abort();
			} else if (sk_rhash_insert(s->ht, &n->node)) {
				abort();
			}
			m[j] = n;
			t->r.inserts++;
		} else if (r == 0) {
			n = sk_rhs_new(key, ++gen);
			if (sk_rhash_replace(s->ht, &o->node, &n->node))
				abort();
			m[j] = n;
			sk_rhs_retire(t, o, &quarantine, 1);
			t->r.replaces++;
		} else {
			if (sk_rhash_remove(s->ht, &o->node))
				abort();
			m[j] = NULL;
			sk_rhs_retire(t, o, &quarantine, 0);
			t->r.removes++;
		}
		if (cfg->updates_in_section)
			sk_rcu_read_unlock();
		sk_rhs_key_changed(&s->keys, key, m[j] != NULL);
		if (cfg->broken && i % 64 == 63) {
			/* Objects poisoned before this grace period have no
			 * reader left: really free them now. */
			sk_synchronize_rcu();
			sk_rhs_quarantine_free(q_old);
			q_old = quarantine;
			quarantine = NULL;
		}
	}
	sk_synchronize_rcu();
	sk_rhs_quarantine_free(q_old);
	sk_rhs_quarantine_free(quarantine);
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
		unsigned long n = 1UL << (sk_tort_rand(&t->rng) %
					  (s->cfg->max_log2 + 1));
		int err = sk_rhash_resize(s->ht, n);

		if (err)
			t->r.resize_errors++;
		t->r.resizes++;
		if (t->r.resizes % 8 == 0)
			sched_yield();
	} while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED));
	return NULL;
}

static void sk_rhs_add(struct sk_rhs_result *a,
			      const struct sk_rhs_result *b)
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

/* Compare the quiescent table with the models. */
static unsigned long sk_rhs_verify(struct sk_rhs *s)
{
	unsigned long k, bad = 0, want = 0, got = 0;
	unsigned int *seen = (unsigned int *)calloc(s->nkeys, sizeof(*seen));
	const struct sk_rhs_config *cfg = s->cfg;
	struct sk_rhash_iter it;
	struct sk_rhs_obj *o;

	if (!seen)
		abort();
	sk_rcu_read_lock();
	for (k = 0; k < s->nkeys; k++) {
		struct sk_rhs_obj *m = s->model[k / cfg->keys_per_updater]
					       [k % cfg->keys_per_updater];
		uint64_t key = k;

		o = (struct sk_rhs_obj *)sk_rhash_lookup(s->ht, &key);
		if (o != m)
			bad++;
		want += m != NULL;
	}
	sk_rhash_iter_start(s->ht, &it);
	while ((o = (struct sk_rhs_obj *)sk_rhash_iter_next(&it)) != NULL) {
		if (o->key >= s->nkeys || ++got > s->nkeys) {
			bad++;
			break;
		}
		seen[o->key]++;
	}
	sk_rcu_read_unlock();
	for (k = 0; k < s->nkeys; k++) {
		struct sk_rhs_obj *m = s->model[k / cfg->keys_per_updater]
					       [k % cfg->keys_per_updater];

		if (seen[k] != (m != NULL))
			bad++;
	}
	if (got != want || sk_rhash_count(s->ht) != want)
		bad++;
	free(seen);
	return bad;
}

/* The run's table: one bucket to start with, up to 2^max_log2. */
static struct sk_rhash *
sk_rhs_table_create(const struct sk_rhs_config *cfg)
{
	struct sk_rhash_params p = SK_RHASH_PARAMS_DEFAULT;

	p.head_offset = offsetof(struct sk_rhs_obj, node);
	p.key_offset = offsetof(struct sk_rhs_obj, key);
	p.key_len = sizeof(uint64_t);
	p.seed = (unsigned long)cfg->seed;
	p.initial_buckets = 1;
	p.min_buckets = 1;
	p.max_buckets = 1UL << (cfg->max_log2 ? cfg->max_log2 : 10);
	p.automatic_resize = cfg->automatic_resize;
	return sk_rhash_create(&p);
}

int sk_rhs_run(const struct sk_rhs_config *cfg,
			     struct sk_rhs_result *res)
{
	unsigned int nthreads = cfg->readers + cfg->updaters + cfg->resizers;
	struct sk_rhs_thread *th;
	pthread_t *tid;
	struct sk_rhs *s;
	unsigned int i, u;
	int err;

	memset(res, 0, sizeof(*res));
	if (cfg->updaters > SK_RHS_MAX_UPD || !cfg->updaters ||
	    !cfg->keys_per_updater)
		return -EINVAL;
	s = (struct sk_rhs *)calloc(1, sizeof(*s));
	th = (struct sk_rhs_thread *)calloc(nthreads, sizeof(*th));
	tid = (pthread_t *)calloc(nthreads, sizeof(*tid));
	if (!s || !th || !tid)
		abort();
	s->cfg = cfg;
	s->nkeys = (unsigned long)cfg->updaters * cfg->keys_per_updater;
	for (u = 0; u < cfg->updaters; u++) {
		s->model[u] = (struct sk_rhs_obj **)calloc(
			cfg->keys_per_updater, sizeof(*s->model[u]));
		if (!s->model[u])
			abort();
	}
	if (sk_rhs_keys_init(&s->keys, s->nkeys))
		abort();
	pthread_mutex_init(&s->res_lock, NULL);
	s->updaters_left = (int)cfg->updaters;
	s->ht = sk_rhs_table_create(cfg);
	err = s->ht ? 0 : -errno;
	if (err)
		goto out;
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
		err = -pthread_create(&tid[i], NULL, fn, &th[i]);
		if (err) {
			fprintf(stderr, "%s: pthread_create failed\n", cfg->name);
			abort();
		}
	}
	for (i = 0; i < nthreads; i++) {
		pthread_join(tid[i], NULL);
		sk_rhs_add(res, &th[i].r);
	}
	/* Every callback (poisoning and freeing) has run. */
	sk_rcu_barrier();
	res->final_mismatch = sk_rhs_verify(s);
	sk_rhash_destroy(s->ht, sk_rhs_free_obj, NULL);
out:
	for (u = 0; u < cfg->updaters; u++)
		free(s->model[u]);
	sk_rhs_keys_fini(&s->keys);
	pthread_mutex_destroy(&s->res_lock);
	free(s);
	free(th);
	free(tid);
	return err;
}

void sk_rhs_print(const struct sk_rhs_config *cfg,
				const struct sk_rhs_result *r)
{
	fprintf(stderr,
		"  %s: %lu lookups, %lu untouched keys checked, %lu iterations, "
		"%lu inserts, %lu removes, %lu replaces, %lu resizes (up to "
		"%lu buckets seen); failures: %lu missing, %lu ghosts, %lu "
		"iteration missing, %lu iteration ghosts, %lu poisoned, %lu "
		"corrupt, %lu runaway, final mismatch %lu\n",
		cfg->name, r->lookups, r->checked_keys, r->iterations,
		r->inserts, r->removes, r->replaces, r->resizes,
		r->max_buckets_seen, r->missing, r->ghosts, r->iter_missing,
		r->iter_ghosts, r->poisoned, r->corrupt, r->runaway,
		r->final_mismatch);
}

unsigned long sk_rhs_failures(const struct sk_rhs_result *r)
{
	return r->missing + r->ghosts + r->iter_missing + r->iter_ghosts +
	       r->poisoned + r->corrupt + r->runaway;
}

