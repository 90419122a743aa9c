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

void sk_rhs_key_changing(const struct sk_rhs_keys *k, unsigned long key)
{
	/*
	 * Odd: the key is changing.  Ordered before the update's
	 * publication by that store's release: a reader that sees
	 * the update sees the odd count after its acquire fence.
	 */
	__atomic_store_n(&k->seq[key], k->seq[key] + 1, __ATOMIC_RELAXED);
}

void sk_rhs_key_changed(const struct sk_rhs_keys *k, unsigned long key,
			int present)
{
	__atomic_store_n(&k->present[key], present, __ATOMIC_RELAXED);
	/* Even: done; the presence above is valid (release). */
	__atomic_store_n(&k->seq[key], k->seq[key] + 1, __ATOMIC_RELEASE);
}

void sk_rhs_key_snap(const struct sk_rhs_keys *k, unsigned long key,
		     struct sk_rhs_snap *s)
{
	/* Acquire: the presence stored before this even count. */
	s->seq = __atomic_load_n(&k->seq[key], __ATOMIC_ACQUIRE);
	s->present = __atomic_load_n(&k->present[key], __ATOMIC_RELAXED);
}

enum sk_rhs_verdict sk_rhs_key_verdict(const struct sk_rhs_keys *k,
				       unsigned long key,
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

/* ---- the thread bodies --------------------------------------------------- */

const char *const sk_rhs_fail_what[SK_RHS_F_NR] = {
	[SK_RHS_F_MISSING] = "lookup: key present and untouched, not found; "
			     "buckets:",
	[SK_RHS_F_GHOST] = "lookup: key absent and untouched, found",
	[SK_RHS_F_ITER_MISSING] = "iteration: key present and untouched, "
				  "not returned",
	[SK_RHS_F_ITER_GHOST] = "iteration: key absent and untouched, "
				"returned",
	[SK_RHS_F_RUNAWAY] = "iteration does not end: objects returned",
	[SK_RHS_F_UNKNOWN_KEY] = "object with an unknown key",
	[SK_RHS_F_UPDATE] = "update failed: returned",
	[SK_RHS_F_DUP] = "insert_unique of a present key: not -EEXIST but",
	[SK_RHS_F_OWN] = "lookup of an own key: not the model's object",
	[SK_RHS_F_BUCKETS] = "bucket count not a power of two:",
	[SK_RHS_F_FINAL] = "final table differs from the model",
};

static struct sk_rhash_node *sk_rhs_node(const struct sk_rhs_shape *sh,
					 void *obj)
{
	return (struct sk_rhash_node *)(void *)((char *)obj + sh->node_off);
}

static void sk_rhs_judge(const struct sk_rhs_shape *sh, void *t,
			 unsigned long key, enum sk_rhs_verdict v,
			 enum sk_rhs_fail missing, unsigned long *checked)
{
	if (v == SK_RHS_CHANGED)
		return;
	++*checked;
	if (v == SK_RHS_MISSING) /* inside the section: the array stays */
		sh->fail(sh->ctx, t, missing, key,
			 (long)sk_rhash_buckets(sh->ht));
	else if (v == SK_RHS_GHOST) /* the GHOST kind follows its MISSING */
		sh->fail(sh->ctx, t, missing + 1, key, 0);
}

/* One lookup of key: the object if found and intact. */
static void *sk_rhs_lookup1(const struct sk_rhs_shape *sh, void *t,
			    unsigned long key, int linger,
			    unsigned long *checked)
{
	unsigned long v = key - sh->first, k;
	int vol = key >= sh->first && v < sh->keys.n;
	struct sk_rhs_snap snap;
	void *o;

	if (vol)
		sk_rhs_key_snap(&sh->keys, v, &snap);
	o = sk_rhash_lookup(sh->ht, &key);
	if (o && !sh->check(sh->ctx, t, o, key, linger, &k))
		o = NULL; /* reported */
	/* The lookup's loads before the second read of the key's count. */
	sk_smp_rmb();
	if (vol) {
		sk_rhs_judge(sh, t, key,
			     sk_rhs_key_verdict(&sh->keys, v, &snap, o != NULL),
			     SK_RHS_F_MISSING, checked);
	} else if (key < sh->first && !o) {
		sh->fail(sh->ctx, t, SK_RHS_F_MISSING, key,
			 (long)sk_rhash_buckets(sh->ht));
	} else if (key >= sh->first && o) {
		sh->fail(sh->ctx, t, SK_RHS_F_GHOST, key, 0);
	}
	return o;
}

unsigned long sk_rhs_lookups(const struct sk_rhs_shape *sh, void *t,
			     struct sk_tort_rng *rng, unsigned long n,
			     void **found, unsigned long *fkey,
			     unsigned long *checked)
{
	unsigned long i, nf = 0;

	for (i = 0; i < n; i++) {
		unsigned long key = sk_tort_below(rng, sk_rhs_key_range(sh));
		void *o =
			sk_rhs_lookup1(sh, t, key, i < sh->spin_first, checked);

		if (o && found) {
			found[nf] = o;
			fkey[nf++] = key;
		}
	}
	return nf;
}

/* The iteration's verdicts: stable keys all seen, volatile by the model. */
static void sk_rhs_iter_judge(const struct sk_rhs_shape *sh, void *t,
			      const struct sk_rhs_snap *snap,
			      const unsigned char *seen, unsigned long *checked)
{
	unsigned long k, v;

	for (k = 0; k < sh->first; k++)
		if (!seen[k])
			sh->fail(sh->ctx, t, SK_RHS_F_ITER_MISSING, k, 0);
	for (v = 0; v < sh->keys.n; v++)
		sk_rhs_judge(sh, t, sh->first + v,
			     sk_rhs_key_verdict(&sh->keys, v, &snap[v],
						seen[sh->first + v]),
			     SK_RHS_F_ITER_MISSING, checked);
}

unsigned long sk_rhs_iterate(const struct sk_rhs_shape *sh, void *t,
			     void **held, unsigned long *checked)
{
	unsigned long k, n = 0, nkeys = sh->first + sh->keys.n;
	unsigned long limit = 4 * nkeys + 64;
	struct sk_rhs_snap *snap = malloc((sh->keys.n + 1) * sizeof(*snap));
	unsigned char *seen = calloc(nkeys + 1, 1);
	struct sk_rhash_iter it;
	void *o;

	if (!snap || !seen)
		abort();
	for (k = 0; k < sh->keys.n; k++)
		sk_rhs_key_snap(&sh->keys, k, &snap[k]);
	sk_rhash_iter_start(sh->ht, &it);
	while ((o = sk_rhash_iter_next(&it)) != NULL) {
		if (++n > limit) {
			sh->fail(sh->ctx, t, SK_RHS_F_RUNAWAY, 0, (long)n);
			break;
		}
		if (!sh->check(sh->ctx, t, o, ~0UL, n == 1, &k))
			continue; /* reported */
		if (k < nkeys)
			seen[k] = 1;
		else
			sh->fail(sh->ctx, t, SK_RHS_F_UNKNOWN_KEY, k, 0);
		if (n == 8 && held)
			*held = o;
	}
	/* The iteration's loads before the second reads of the counts. */
	sk_smp_rmb();
	if (n <= limit)
		sk_rhs_iter_judge(sh, t, snap, seen, checked);
	free(snap);
	free(seen);
	return n;
}

/* n, whose key is present, must be refused by insert_unique; n goes. */
static void sk_rhs_insert_dup(const struct sk_rhs_shape *sh, void *t, void *n,
			      unsigned long key)
{
	int r = sk_rhash_insert_unique(sh->ht, sk_rhs_node(sh, n));

	if (r != -EEXIST)
		sh->fail(sh->ctx, t, SK_RHS_F_DUP, key, r);
	if (r == 0) {
		/* Undo, so that the final check holds. */
		sk_rhash_remove(sh->ht, sk_rhs_node(sh, n));
		sh->retire(sh->ctx, t, n, 0);
	} else {
		sh->unmake(sh->ctx, t, n);
	}
}

/* The end of an update of v: e replaced by n (NULL: removed) with result r. */
static int sk_rhs_swapped(const struct sk_rhs_shape *sh, void *t,
			  unsigned long v, void *e, void *n, int r, int kind)
{
	if (r) {
		sh->fail(sh->ctx, t, SK_RHS_F_UPDATE, sh->first + v, r);
		if (n)
			sh->unmake(sh->ctx, t, n);
		return kind;
	}
	sh->model[v] = n;
	if (e)
		sh->retire(sh->ctx, t, e, n != NULL);
	return kind;
}

/* Key first+v is present in e: remove, replace, duplicate or look up. */
static int sk_rhs_update_present(const struct sk_rhs_shape *sh, void *t,
				 struct sk_tort_rng *rng, unsigned long v,
				 void *e)
{
	unsigned long key = sh->first + v;
	void *n, *o;

	switch (sk_tort_below(rng, 4)) {
	case 0:
		return sk_rhs_swapped(sh, t, v, e, NULL,
				      sk_rhash_remove(sh->ht,
						      sk_rhs_node(sh, e)),
				      SK_RHS_REMOVE);
	case 1:
		n = sh->make(sh->ctx, t, key);
		if (!n)
			return -ENOMEM;
		return sk_rhs_swapped(sh, t, v, e, n,
				      sk_rhash_replace(sh->ht,
						       sk_rhs_node(sh, e),
						       sk_rhs_node(sh, n)),
				      SK_RHS_REPLACE);
	case 2:
		n = sh->make(sh->ctx, t, key);
		if (!n)
			return -ENOMEM;
		sk_rhs_insert_dup(sh, t, n, key);
		return SK_RHS_DUP_INSERT;
	default:
		/* Only this thread changes the key: the answer is exact. */
		sk_rcu_read_lock();
		o = sk_rhash_lookup(sh->ht, &key);
		if (o != e)
			sh->fail(sh->ctx, t, SK_RHS_F_OWN, key, 0);
		sk_rcu_read_unlock();
		return SK_RHS_OWN_LOOKUP;
	}
}

/* Key first+v is absent: insert it, unique or not. */
static int sk_rhs_update_absent(const struct sk_rhs_shape *sh, void *t,
				struct sk_tort_rng *rng, unsigned long v)
{
	void *n = sh->make(sh->ctx, t, sh->first + v);
	struct sk_rhash_node *nn;

	if (!n)
		return -ENOMEM;
	nn = sk_rhs_node(sh, n);
	return sk_rhs_swapped(sh, t, v, NULL, n,
			      sk_tort_one_in(rng, 2) && !sh->plain_inserts
				      ? sk_rhash_insert_unique(sh->ht, nn)
				      : sk_rhash_insert(sh->ht, nn),
			      SK_RHS_INSERT);
}

int sk_rhs_update(const struct sk_rhs_shape *sh, void *t,
		  struct sk_tort_rng *rng, unsigned long v)
{
	void *e = sh->model[v], *n;
	int r;

	if (sh->first && sk_tort_one_in(rng, 64)) {
		/* A stable key is present: a unique insert must fail. */
		unsigned long k = sk_tort_below(rng, sh->first);

		n = sh->make(sh->ctx, t, k);
		if (n)
			sk_rhs_insert_dup(sh, t, n, k);
	}
	/* Readers check the key only if this update cannot overlap them. */
	sk_rhs_key_changing(&sh->keys, v);
	r = e ? sk_rhs_update_present(sh, t, rng, v, e)
	      : sk_rhs_update_absent(sh, t, rng, v);
	sk_rhs_key_changed(&sh->keys, v, sh->model[v] != NULL);
	return r;
}

int sk_rhs_resize(const struct sk_rhs_shape *sh, void *t,
		  struct sk_tort_rng *rng)
{
	unsigned long n = 1UL << sk_tort_below(rng, sh->max_log2 + 1), b;
	int r;

	if (sh->big_logs && sk_tort_one_in(rng, 8))
		n = 1UL << (sh->big_log + sk_tort_below(rng, sh->big_logs));
	r = sk_rhash_resize(sh->ht, n);
	/* The table array may be freed by an automatic resize. */
	sk_rcu_read_lock();
	b = sk_rhash_buckets(sh->ht);
	sk_rcu_read_unlock();
	if (!b || (b & (b - 1)))
		sh->fail(sh->ctx, t, SK_RHS_F_BUCKETS, 0, (long)b);
	return r;
}

/* The final lookups: every key's object is the model's; the keys present. */
static unsigned long sk_rhs_final_lookups(const struct sk_rhs_shape *sh)
{
	unsigned long k, want = 0;

	for (k = 0; k < sh->first + sh->keys.n; k++) {
		void *m = k < sh->first ? sh->stable[k]
					: sh->model[k - sh->first];

		if (sk_rhash_lookup(sh->ht, &k) != m)
			sh->fail(sh->ctx, NULL, SK_RHS_F_FINAL, k, 0);
		want += m != NULL;
	}
	return want;
}

unsigned long sk_rhs_final(const struct sk_rhs_shape *sh)
{
	unsigned long nkeys = sh->first + sh->keys.n, want, got = 0, k;
	unsigned char *seen = calloc(nkeys + 1, 1);
	struct sk_rhash_iter it;
	void *o;

	if (!seen)
		abort();
	/*
	 * Queued background resizes may still run: a walk during a resize
	 * may return an object twice (sk_rhash_iter_next()), so let them
	 * finish first.  From here on nothing changes the table.
	 */
	sk_rhash_barrier(sh->ht);
	sk_rcu_read_lock();
	want = sk_rhs_final_lookups(sh);
	sk_rhash_iter_start(sh->ht, &it);
	while ((o = sk_rhash_iter_next(&it)) != NULL && got <= 2 * nkeys) {
		got++;
		if (!sh->check(sh->ctx, NULL, o, ~0UL, 0, &k) || k >= nkeys ||
		    seen[k]++)
			sh->fail(sh->ctx, NULL, SK_RHS_F_FINAL, k, (long)got);
	}
	sk_rcu_read_unlock();
	if (got != want)
		sh->fail(sh->ctx, NULL, SK_RHS_F_FINAL, ~0UL, (long)got);
	if (sk_rhash_count(sh->ht) != want)
		sh->fail(sh->ctx, NULL, SK_RHS_F_FINAL, ~0UL,
			 (long)sk_rhash_count(sh->ht));
	free(seen);
	return want;
}

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
	sh->check = sk_rhs_check;
	sh->fail = sk_rhs_fail;
	sh->make = sk_rhs_new;
	sh->unmake = sk_rhs_unmake;
	sh->retire = sk_rhs_retire;
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
