/* SPDX-License-Identifier: MIT */
/*
 * The hash table's stress harness (tools/rhash_stress.h): the key model
 * and the thread bodies that the tests' run (tools/rhash_stress_run.c)
 * and `scalekit torture rhash` (tools/torture_rhash.c) both drive.
 */
#include "rhash_stress.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

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
		sh->h->fail(sh->ctx, t, missing, key,
			    (long)sk_rhash_buckets(sh->ht));
	else if (v == SK_RHS_GHOST) /* the GHOST kind follows its MISSING */
		sh->h->fail(sh->ctx, t, missing + 1, key, 0);
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
	if (o && !sh->h->check(sh->ctx, t, o, key, linger, &k))
		o = NULL; /* reported */
	/* The lookup's loads before the second read of the key's count. */
	sk_smp_rmb();
	if (vol) {
		sk_rhs_judge(sh, t, key,
			     sk_rhs_key_verdict(&sh->keys, v, &snap, o != NULL),
			     SK_RHS_F_MISSING, checked);
	} else if (key < sh->first && !o) {
		sh->h->fail(sh->ctx, t, SK_RHS_F_MISSING, key,
			    (long)sk_rhash_buckets(sh->ht));
	} else if (key >= sh->first && o) {
		sh->h->fail(sh->ctx, t, SK_RHS_F_GHOST, key, 0);
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
			sh->h->fail(sh->ctx, t, SK_RHS_F_ITER_MISSING, k, 0);
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
			sh->h->fail(sh->ctx, t, SK_RHS_F_RUNAWAY, 0, (long)n);
			break;
		}
		if (!sh->h->check(sh->ctx, t, o, ~0UL, n == 1, &k))
			continue; /* reported */
		if (k < nkeys)
			seen[k] = 1;
		else
			sh->h->fail(sh->ctx, t, SK_RHS_F_UNKNOWN_KEY, k, 0);
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
		sh->h->fail(sh->ctx, t, SK_RHS_F_DUP, key, r);
	if (r == 0) {
		/* Undo, so that the final check holds. */
		sk_rhash_remove(sh->ht, sk_rhs_node(sh, n));
		sh->h->retire(sh->ctx, t, n, 0);
	} else {
		sh->h->unmake(sh->ctx, t, n);
	}
}

/* The end of an update of v: e replaced by n (NULL: removed) with result r. */
static int sk_rhs_swapped(const struct sk_rhs_shape *sh, void *t,
			  unsigned long v, void *e, void *n, int r, int kind)
{
	if (r) {
		sh->h->fail(sh->ctx, t, SK_RHS_F_UPDATE, sh->first + v, r);
		if (n)
			sh->h->unmake(sh->ctx, t, n);
		return kind;
	}
	sh->model[v] = n;
	if (e)
		sh->h->retire(sh->ctx, t, e, n != NULL);
	return kind;
}

/* Key first+v is present in e: remove, replace, duplicate or look up. */
static int sk_rhs_update_present(const struct sk_rhs_shape *sh, void *t,
				 struct sk_tort_rng *rng, unsigned long v,
				 void *e)
{
	unsigned long key = sh->first + v, r = sk_tort_below(rng, 4);
	struct sk_rhash_node *en = sk_rhs_node(sh, e);
	void *n, *o;

	if (r == 0)
		return sk_rhs_swapped(sh, t, v, e, NULL,
				      sk_rhash_remove(sh->ht, en),
				      SK_RHS_REMOVE);
	if (r == 3) {
		/* Only this thread changes the key: the answer is exact. */
		sk_rcu_read_lock();
		o = sk_rhash_lookup(sh->ht, &key);
		if (o != e)
			sh->h->fail(sh->ctx, t, SK_RHS_F_OWN, key, 0);
		sk_rcu_read_unlock();
		return SK_RHS_OWN_LOOKUP;
	}
	n = sh->h->make(sh->ctx, t, key);
	if (!n)
		return -ENOMEM;
	if (r == 2) {
		sk_rhs_insert_dup(sh, t, n, key);
		return SK_RHS_DUP_INSERT;
	}
	return sk_rhs_swapped(sh, t, v, e, n,
			      sk_rhash_replace(sh->ht, en, sk_rhs_node(sh, n)),
			      SK_RHS_REPLACE);
}

/* Key first+v is absent: insert it, unique or not. */
static int sk_rhs_update_absent(const struct sk_rhs_shape *sh, void *t,
				struct sk_tort_rng *rng, unsigned long v)
{
	void *n = sh->h->make(sh->ctx, t, sh->first + v);
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

		n = sh->h->make(sh->ctx, t, k);
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
		sh->h->fail(sh->ctx, t, SK_RHS_F_BUCKETS, 0, (long)b);
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
			sh->h->fail(sh->ctx, NULL, SK_RHS_F_FINAL, k, 0);
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
		if (!sh->h->check(sh->ctx, NULL, o, ~0UL, 0, &k) ||
		    k >= nkeys || seen[k]++)
			sh->h->fail(sh->ctx, NULL, SK_RHS_F_FINAL, k,
				    (long)got);
	}
	sk_rcu_read_unlock();
	if (got != want)
		sh->h->fail(sh->ctx, NULL, SK_RHS_F_FINAL, ~0UL, (long)got);
	if (sk_rhash_count(sh->ht) != want)
		sh->h->fail(sh->ctx, NULL, SK_RHS_F_FINAL, ~0UL,
			    (long)sk_rhash_count(sh->ht));
	free(seen);
	return want;
}
