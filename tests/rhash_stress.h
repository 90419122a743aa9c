/* SPDX-License-Identifier: MIT */
/*
 * rhash_stress.h - a reusable concurrent stress checker for the rhash
 * table (tests, torture tool).
 *
 * Threads:
 *  - readers: read sections of either a batch of lookups of random keys or
 *    one full iteration (sk_rhash_iter_start/next), under sk_rcu_read_lock;
 *  - updaters: updater u owns the keys [u * K, (u + 1) * K) and inserts,
 *    removes and replaces them at random, keeping a model (its objects);
 *  - resizers: sk_rhash_resize() to random powers of two, continuously;
 *  optionally automatic resizing on top.
 *
 * The readers' invariant uses a per-key sequence count written by the
 * key's updater: odd while it changes the key, even otherwise, with the
 * key's presence stored before the even value (release).  A reader reads
 * the count and the presence before its lookup (acquire) and the count
 * again after it (after an acquire fence).  Unchanged and even: the key was
 * not touched by its updater for the whole lookup, so the lookup must find
 * it if present (and return an intact object with that key) and must not
 * find it if absent.  An iteration does the same for every key at once:
 * it terminates (it returns at most a bounded number of objects), returns
 * every present untouched key, no absent untouched key, and only intact
 * objects.
 *
 * Reclamation: the correct variant frees removed objects after a grace
 * period (sk_call_rcu() with a callback that sets the poison field and then
 * frees, or SK_FREE_RCU()).  Readers check the poison field of every object
 * they reach, several times with spin delays in between, inside their
 * section.  The broken variant (cfg.broken) "frees" at once: it sets the
 * poison field and quarantines the object; quarantined objects are really
 * freed only after a later sk_synchronize_rcu(), so ASan stays quiet and
 * the readers see poison instead.  The poison field is always accessed
 * atomically (the broken variant races on it by design); the payload is
 * read with plain loads, so that TSan checks that the grace period orders
 * the readers' loads before free().
 *
 * At the end the table must equal the union of the updaters' models
 * (lookups, one iteration, sk_rhash_count()).
 */
#ifndef SK_RHASH_STRESS_H
#define SK_RHASH_STRESS_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scalekit/rcu.h"
#include "scalekit/rhash.h"
#include "sk_test.h"

#define SK_RHS_POISON	((unsigned long)0x6b6b6b6b6b6b6b6bULL) /* a freed object */
#define SK_RHS_PAYLOAD	4
#define SK_RHS_MAX_UPD	16

struct sk_rhs_obj {
	struct sk_rhash_node node;
	uint64_t key;
	uint64_t gen;			  /* creation number (updater-local) */
	uint64_t payload[SK_RHS_PAYLOAD]; /* sk_rhs_payload(key, gen, i) */
	unsigned long poison;		  /* 0 live, SK_RHS_POISON freed */
	struct sk_rcu_head rcu;
	struct sk_rhs_obj *qnext; /* quarantine (broken variant) */
};

struct sk_rhs_config {
	const char *name;	   /* for messages */
	unsigned int readers;	   /* reader threads */
	unsigned int updaters;	   /* updater threads, <= SK_RHS_MAX_UPD */
	unsigned int keys_per_updater;
	unsigned long updates;	   /* per updater */
	unsigned int resizers;	   /* threads calling sk_rhash_resize() */
	unsigned int max_log2;	   /* resizes between 1 and 1 << max_log2 */
	unsigned int iterate_every; /* 1 in N read sections iterates */
	unsigned int lookups_per_section;
	unsigned int spin;	   /* spin loops between re-checks */
	int automatic_resize;	   /* table param */
	int updates_in_section;	   /* updaters update inside read sections */
	int plain_inserts;	   /* only sk_rhash_insert() (lock-free) */
	int broken;		   /* free without a grace period */
	int stop_on_failure;	   /* end early once a failure is seen */
	uint64_t seed;
};

struct sk_rhs_result {
	unsigned long lookups, iterations, resizes, resize_errors;
	unsigned long inserts, removes, replaces;
	unsigned long checked_keys;  /* lookups whose key was untouched */
	unsigned long missing;	     /* untouched present key not found */
	unsigned long ghosts;	     /* untouched absent key found */
	unsigned long iter_missing;  /* ... not returned by an iteration */
	unsigned long iter_ghosts;   /* ... absent but returned */
	unsigned long poisoned;	     /* an object seen freed in a section */
	unsigned long corrupt;	     /* wrong key or payload */
	unsigned long runaway;	     /* an iteration that did not end */
	unsigned long final_mismatch; /* table != model at the end */
	unsigned long max_buckets_seen;
};

/* Everything the threads share. */
struct sk_rhs {
	const struct sk_rhs_config *cfg;
	struct sk_rhash *ht;
	unsigned long nkeys;
	unsigned long *seq;   /* per key: odd while its updater changes it */
	int *present;	      /* per key: valid while seq is even */
	struct sk_rhs_obj **model[SK_RHS_MAX_UPD]; /* updater's objects */
	int stop;	      /* readers and resizers end */
	int updaters_left;
	struct sk_rhs_result res; /* summed under lock */
	pthread_mutex_t res_lock;
};

struct sk_rhs_thread {
	struct sk_rhs *s;
	unsigned int id;
	uint64_t rng;
	struct sk_rhs_result r;
};

static inline uint64_t sk_rhs_payload(uint64_t key, uint64_t gen, int i)
{
	uint64_t x = key * 0x9e3779b97f4a7c15ull ^ gen * 0xbf58476d1ce4e5b9ull;

	return x + (uint64_t)i * 0x94d049bb133111ebull;
}

static inline int sk_rhs_failed(struct sk_rhs *s)
{
	return s->cfg->stop_on_failure &&
	       __atomic_load_n(&s->stop, __ATOMIC_RELAXED) == 2;
}

static inline void sk_rhs_flag_failure(struct sk_rhs *s)
{
	if (s->cfg->stop_on_failure)
		__atomic_store_n(&s->stop, 2, __ATOMIC_RELAXED);
}

/*
 * Check an object reached inside a read section: live, the key wanted
 * (when key != ~0), payload intact.  Re-checks the poison after spinning,
 * so that an object freed too early is caught while the reader holds it.
 */
static inline void sk_rhs_check_obj(struct sk_rhs_thread *t,
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

static inline void sk_rhs_lookups(struct sk_rhs_thread *t)
{
	struct sk_rhs *s = t->s;
	unsigned int i, n = s->cfg->lookups_per_section;

	sk_rcu_read_lock();
	for (i = 0; i < n; i++) {
		/* A few keys beyond the updaters' ranges: never present. */
		uint64_t k = sk_test_rand(&t->rng) %
			     (s->nkeys + s->nkeys / 16 + 1);
		unsigned long s1 = 0, s2 = 1;
		int p = 0;
		struct sk_rhs_obj *o;

		if (k < s->nkeys) {
			s1 = __atomic_load_n(&s->seq[k], __ATOMIC_ACQUIRE);
			p = __atomic_load_n(&s->present[k], __ATOMIC_RELAXED);
		}
		o = (struct sk_rhs_obj *)sk_rhash_lookup(s->ht, &k);
		if (o)
			sk_rhs_check_obj(t, o, k, i == 0);
		/* The lookup's loads before the second read of seq. */
		sk_smp_rmb();
		if (k < s->nkeys)
			s2 = __atomic_load_n(&s->seq[k], __ATOMIC_RELAXED);
		t->r.lookups++;
		if (k >= s->nkeys) {
			if (o)
				t->r.ghosts++;
			continue;
		}
		if (s1 != s2 || (s1 & 1))
			continue;
		t->r.checked_keys++;
		if (p && !o) {
			t->r.missing++;
			sk_rhs_flag_failure(s);
		} else if (!p && o) {
			t->r.ghosts++;
			sk_rhs_flag_failure(s);
		}
	}
	sk_rcu_read_unlock();
}

static inline void sk_rhs_iterate(struct sk_rhs_thread *t, unsigned long *s1,
				  int *p, unsigned int *seen)
{
	struct sk_rhs *s = t->s;
	struct sk_rhash_iter it;
	struct sk_rhs_obj *o;
	unsigned long k, n = 0, limit = 4 * s->nkeys + 64, b;

	memset(seen, 0, s->nkeys * sizeof(*seen));
	sk_rcu_read_lock();
	for (k = 0; k < s->nkeys; k++) {
		s1[k] = __atomic_load_n(&s->seq[k], __ATOMIC_ACQUIRE);
		p[k] = __atomic_load_n(&s->present[k], __ATOMIC_RELAXED);
	}
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
	for (k = 0; k < s->nkeys; k++) {
		unsigned long s2 = __atomic_load_n(&s->seq[k], __ATOMIC_RELAXED);

		if (s1[k] != s2 || (s1[k] & 1))
			continue;
		if (p[k] && !seen[k]) {
			t->r.iter_missing++;
			sk_rhs_flag_failure(s);
		} else if (!p[k] && seen[k]) {
			t->r.iter_ghosts++;
			sk_rhs_flag_failure(s);
		}
	}
	sk_rcu_read_unlock();
	t->r.iterations++;
}

static void *sk_rhs_reader(void *arg)
{
	struct sk_rhs_thread *t = (struct sk_rhs_thread *)arg;
	struct sk_rhs *s = t->s;
	unsigned long *s1 = (unsigned long *)malloc(s->nkeys * sizeof(*s1));
	int *p = (int *)malloc(s->nkeys * sizeof(*p));
	unsigned int *seen = (unsigned int *)malloc(s->nkeys * sizeof(*seen));
	unsigned long round = 0;

	if (!s1 || !p || !seen)
		abort();
	while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		if (s->cfg->iterate_every &&
		    ++round % s->cfg->iterate_every == 0)
			sk_rhs_iterate(t, s1, p, seen);
		else
			sk_rhs_lookups(t);
	}
	free(s1);
	free(p);
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
static inline void sk_rhs_retire(struct sk_rhs_thread *t, struct sk_rhs_obj *o,
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

static inline void sk_rhs_quarantine_free(struct sk_rhs_obj *q)
{
	while (q) {
		struct sk_rhs_obj *n = q->qnext;

		free(q);
		q = n;
	}
}

static inline struct sk_rhs_obj *sk_rhs_new(uint64_t key, uint64_t gen)
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
		unsigned long j = (unsigned long)(sk_test_rand(&t->rng) % K);
		uint64_t key = base + j, r = sk_test_rand(&t->rng) % 4;
		struct sk_rhs_obj *o = m[j], *n;

		/*
		 * Odd: the key is changing.  Ordered before the update's
		 * publication by that store's release: a reader that sees
		 * the update sees the odd count after its acquire fence.
		 */
		__atomic_store_n(&s->seq[key], s->seq[key] + 1,
				 __ATOMIC_RELAXED);
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
		__atomic_store_n(&s->present[key], m[j] != NULL,
				 __ATOMIC_RELAXED);
		/* Even: done; the presence above is valid. */
		__atomic_store_n(&s->seq[key], s->seq[key] + 1,
				 __ATOMIC_RELEASE);
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
		unsigned long n = 1UL << (sk_test_rand(&t->rng) %
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

static inline void sk_rhs_add(struct sk_rhs_result *a,
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
static inline unsigned long sk_rhs_verify(struct sk_rhs *s)
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
static inline struct sk_rhash *
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

/*
 * Run one stress configuration; res receives the sums.
 * Returns 0, or -errno when the table or a thread could not be created.
 */
static inline int sk_rhs_run(const struct sk_rhs_config *cfg,
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
	s->seq = (unsigned long *)calloc(s->nkeys, sizeof(*s->seq));
	s->present = (int *)calloc(s->nkeys, sizeof(*s->present));
	for (u = 0; u < cfg->updaters; u++) {
		s->model[u] = (struct sk_rhs_obj **)calloc(
			cfg->keys_per_updater, sizeof(*s->model[u]));
		if (!s->model[u])
			abort();
	}
	if (!s->seq || !s->present)
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
		th[i].rng = cfg->seed * 0x9e3779b97f4a7c15ull + i + 1;
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
	free(s->seq);
	free(s->present);
	pthread_mutex_destroy(&s->res_lock);
	free(s);
	free(th);
	free(tid);
	return err;
}

static inline void sk_rhs_print(const struct sk_rhs_config *cfg,
				const struct sk_rhs_result *r)
{
	fprintf(stderr,
		"  %s: %lu lookups (%lu on untouched keys), %lu iterations, "
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

/* Failures seen by the readers (the final comparison apart). */
static inline unsigned long sk_rhs_failures(const struct sk_rhs_result *r)
{
	return r->missing + r->ghosts + r->iter_missing + r->iter_ghosts +
	       r->poisoned + r->corrupt + r->runaway;
}

#endif /* SK_RHASH_STRESS_H */
