/* SPDX-License-Identifier: MIT */
/*
 * `scalekit torture list`: an RCU-protected sk_list kept sorted by key.
 *
 * Keys are 0 .. LIST_KEYS-1.  Stable keys (every LIST_STABLE_EVERY-th) are
 * present from the start to the end: updaters may replace their element
 * (sk_list_replace_rcu) but never remove it.  Other keys come and go
 * (sk_list_add_tail_rcu at the sorted position, sk_list_del_rcu,
 * sk_list_replace_rcu).  Updaters serialize on one mutex and keep a model
 * (the element expected for each key); the element they take out is
 * freed after a grace period picked by --gp (SK_FREE_RCU too, for plain
 * RCU) and poisoned just before it is freed.
 *
 * Readers walk the whole list in one section (sk_list_for_each_entry_rcu)
 * and check: no element is poisoned, keys strictly increase (so no element
 * is seen twice and replace never shows both versions), every stable key
 * is seen, the walk ends.  At the end of the run the list must equal the
 * model.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scalekit/list.h"
#include "torture_core.h"
#include "torture_stamp.h"

#define LIST_KEYS 1024
#define LIST_STABLE_EVERY 8
#define LIST_NSTABLE (LIST_KEYS / LIST_STABLE_EVERY)
#define LIST_HOLD 8

struct list_elem {
	struct sk_tort_obj o; /* first: freed after a grace period */
	struct sk_list_head link;
	struct sk_tort_stamp st; /* key, gen, check: list_check(key, gen) */
};

struct list_state {
	struct sk_list_head head;	    /* RCU-protected list */
	pthread_mutex_t lock;		    /* updaters */
	struct list_elem *model[LIST_KEYS]; /* guarded by lock */
	unsigned long present;		    /* guarded by lock */
	unsigned long gen;		    /* guarded by lock */
	struct sk_tort_pool pool0;	    /* initial elements */
};

struct list_reader {
	struct list_elem *held[LIST_HOLD]; /* QSBR: kept until quiescent */
	unsigned int nheld;
};

/* x[] counters. */
enum { LX_INSERTS, LX_REMOVES, LX_REPLACES, LX_ELEMS_SEEN, LX_FREE_RCU, LX_NR };
SK_TORT_X_FITS(LX_NR);

static inline int is_stable(unsigned long key)
{
	return key % LIST_STABLE_EVERY == 0;
}

static inline unsigned long list_check(unsigned long key, unsigned long gen)
{
	return (key * ((unsigned long)0x9e3779b97f4a7c15ULL)) ^ (gen << 20) ^ 0x5a5a;
}

static struct list_elem *new_elem(struct sk_tort *T, struct sk_tort_pool *pool,
				  unsigned long key, unsigned long gen)
{
	return sk_tort_stamped_new(T, pool, offsetof(struct list_elem, st),
				   key, gen, list_check(key, gen));
}

static void poison_retire(struct sk_tort *T, struct sk_tort_obj *o)
{
	struct list_elem *e = (struct list_elem *)o;

	SK_TORT_STORE(T, e->st.key, SK_TORT_POISON);
	/* The links stay: a reader standing on e walks on (see list.h). */
	sk_tort_stamped_retire(T, o, offsetof(struct list_elem, st));
}

/* Undo a list_setup() that failed half-way: no thread has started. */
static void list_setup_undo(struct sk_tort *T, struct list_state *S)
{
	struct list_elem *e, *tmp;

	sk_list_for_each_entry_safe (e, tmp, &S->head, link)
		poison_retire(T, &e->o);
	sk_tort_pool_destroy(&S->pool0);
	pthread_mutex_destroy(&S->lock);
	free(S);
}

static int list_setup(struct sk_tort *T)
{
	struct list_state *S = sk_tort_calloc(1, sizeof(*S));
	unsigned long k;

	if (!S)
		return -ENOMEM;
	sk_list_init(&S->head);
	pthread_mutex_init(&S->lock, NULL);
	sk_tort_pool_init(&S->pool0, sizeof(struct list_elem), T->ops->busted);
	for (k = 0; k < LIST_KEYS; k++) {
		struct list_elem *e;

		/* Stable keys, and every other key at first. */
		if (!is_stable(k) && k % 2)
			continue;
		e = new_elem(T, &S->pool0, k, 0);
		if (!e) {
			list_setup_undo(T, S);
			return -ENOMEM;
		}
		sk_list_add_tail_rcu(&e->link, &S->head);
		S->model[k] = e;
		S->present++;
	}
	T->priv = S;
	return 0;
}

static int list_thread_init(struct sk_tort_thread *t)
{
	return sk_tort_thread_priv_init(t, sizeof(struct sk_tort_updater),
					sizeof(struct list_elem),
					sizeof(struct list_reader));
}

/* ---- readers ------------------------------------------------------------- */

static int elem_ok(struct sk_tort_thread *t, struct list_elem *e,
		   const char *when)
{
	unsigned long key;

	return sk_tort_stamp_ok(t, "element", e, &e->st, when, list_check,
				&key);
}

static void list_read_one(struct sk_tort_thread *t)
{
	struct sk_tort *T = t->T;
	const struct sk_tort_ops *ops = T->ops;
	struct list_state *S = T->priv;
	struct list_reader *r = t->priv;
	int nidx[SK_TORT_MAX_NEST];
	struct list_elem *seen[8];
	unsigned long depth, steps = 0, stable = 0, delay_at, nseen = 0, i;
	long prev = -1;
	struct list_elem *e;
	int idx, bad = 0;

	idx = ops->readlock(T->ctx);
	depth = sk_tort_nest_lock(t, nidx, 0);
	delay_at = sk_tort_below(&t->rng, LIST_KEYS / 2);
	sk_list_for_each_entry_rcu (e, &S->head, link) {
		unsigned long key;

		if (++steps > LIST_KEYS) {
			sk_tort_error(T, t,
				      "walk did not end after %lu elements "
				      "(%lu keys exist)",
				      steps, (unsigned long)LIST_KEYS);
			bad = 1;
			break;
		}
		if (!elem_ok(t, e, "reached by a reader")) {
			bad = 1;
			break;
		}
		key = SK_TORT_LOAD(T, e->st.key);
		if (key >= LIST_KEYS || (long)key <= prev) {
			sk_tort_error(T, t,
				      "key %lu after key %ld: the list is not "
				      "sorted (element seen twice, or both "
				      "sides of a replace)",
				      key, prev);
			bad = 1;
			break;
		}
		if (is_stable(key))
			stable++;
		prev = (long)key;
		if (steps == delay_at)
			ops->read_delay(&t->rng, T->cfg->sleep);
		if (t->qsbr && r->nheld < LIST_HOLD &&
		    sk_tort_one_in(&t->rng, 64))
			r->held[r->nheld++] = e;
		if (nseen < 8 && sk_tort_one_in(&t->rng, 64))
			seen[nseen++] = e;
	}
	if (!bad && stable != LIST_NSTABLE)
		sk_tort_error(T, t,
			      "walk saw %lu of the %d stable keys (%lu "
			      "elements)",
			      stable, LIST_NSTABLE, steps);
	/* Elements the walk reached stay intact until the section ends. */
	if (nseen && sk_tort_one_in(&t->rng, 4))
		ops->read_delay(&t->rng, T->cfg->sleep);
	for (i = 0; i < nseen; i++)
		elem_ok(t, seen[i], "at the end of the walk's section");
	sk_tort_nest_unlock(t, nidx, depth);
	ops->readunlock(T->ctx, idx);
	sk_tort_add(&t->st->x[LX_ELEMS_SEEN], steps);
	sk_tort_inc(&t->st->reads);
}

static void list_before_qs(struct sk_tort_thread *t)
{
	struct list_reader *r = t->priv;
	unsigned int i;

	for (i = 0; i < r->nheld; i++)
		elem_ok(t, r->held[i], "held until a quiescent state");
	r->nheld = 0;
}

/* ---- updaters ------------------------------------------------------------ */

/* Free old (unlinked by this updater) after a grace period. */
static void list_retire(struct sk_tort_thread *t, struct list_elem *old)
{
	struct sk_tort *T = t->T;
	struct sk_tort_updater *u = t->priv;
	int g = sk_tort_pick_gp(t), err;

	old->o.pool = &u->pool;
	if (g == SK_TORT_GP_CB && T->ops->global_rcu &&
	    sk_tort_one_in(&t->rng, 2)) {
		/* Plain free() after a grace period: no poison. */
		sk_tort_inc(&t->st->gp_used[g]);
		sk_tort_inc(&t->st->cb_queued);
		sk_atomic_fetch_add_relaxed(&u->pool.freed, 1UL);
		sk_tort_inc(&t->st->x[LX_FREE_RCU]);
		err = SK_FREE_RCU(&old->o, rh);
		if (err)
			sk_tort_error(T, t, "SK_FREE_RCU: %d", err);
	} else {
		sk_tort_obj_retire(t, &old->o, g, 100);
	}
	if (u->pending)
		sk_tort_reap_pending(T, u);
}

static void list_update_one(struct sk_tort_thread *t)
{
	struct sk_tort *T = t->T;
	struct list_state *S = T->priv;
	struct sk_tort_updater *u = t->priv;
	unsigned long key = sk_tort_below(&t->rng, LIST_KEYS);
	struct list_elem *e, *n = NULL, *old = NULL, *pos;
	struct sk_list_head *at;

	/* Allocate outside the lock; unused when the key is removed. */
	n = new_elem(T, &u->pool, key, 0);
	if (!n) {
		sk_tort_error(T, t, "out of memory");
		usleep(1000);
		return;
	}
	pthread_mutex_lock(&S->lock);
	e = S->model[key];
	SK_TORT_STORE(T, n->st.gen, ++S->gen);
	SK_TORT_STORE(T, n->st.check, list_check(key, S->gen));
	if (!e) {
		/* Insert before the first larger key (or at the end). */
		at = &S->head;
		sk_list_for_each_entry (pos, &S->head, link) {
			if (pos->st.key > key) {
				at = &pos->link;
				break;
			}
		}
		sk_list_add_tail_rcu(&n->link, at);
		S->model[key] = n;
		S->present++;
		n = NULL;
		sk_tort_inc(&t->st->x[LX_INSERTS]);
	} else if (is_stable(key) || sk_tort_one_in(&t->rng, 2)) {
		sk_list_replace_rcu(&e->link, &n->link);
		S->model[key] = n;
		old = e;
		n = NULL;
		sk_tort_inc(&t->st->x[LX_REPLACES]);
	} else {
		sk_list_del_rcu(&e->link);
		S->model[key] = NULL;
		S->present--;
		old = e;
		sk_tort_inc(&t->st->x[LX_REMOVES]);
	}
	pthread_mutex_unlock(&S->lock);
	if (n) /* never published */
		sk_tort_pool_retire(&u->pool, n);
	if (old)
		list_retire(t, old);
	else if (u->pending)
		sk_tort_reap_pending(T, u);
	sk_tort_inc(&t->st->updates);
}

/* ---- end of the run ------------------------------------------------------ */

static void list_finish(struct sk_tort *T)
{
	struct list_state *S = T->priv;
	unsigned long n = 0, allocated, freed;
	long prev = -1;
	struct list_elem *e, *tmp;

	/* No reader or updater is left: check the list against the model. */
	sk_list_for_each_entry (e, &S->head, link) {
		if (e->st.magic != SK_TORT_MAGIC || e->st.key >= LIST_KEYS ||
		    (long)e->st.key <= prev) {
			sk_tort_error(T, NULL,
				      "final list: bad element %p (key %lu "
				      "after %ld)",
				      (void *)e, e->st.key, prev);
			break;
		}
		if (S->model[e->st.key] != e)
			sk_tort_error(T, NULL,
				      "final list: key %lu is element %p, "
				      "the model says %p",
				      e->st.key, (void *)e,
				      (void *)S->model[e->st.key]);
		prev = (long)e->st.key;
		n++;
	}
	if (n != S->present)
		sk_tort_error(T, NULL,
			      "final list has %lu elements, the model %lu", n,
			      S->present);
	/* Free the list (its elements go back to the pools they came from). */
	sk_list_for_each_entry_safe (e, tmp, &S->head, link)
		poison_retire(T, &e->o);
	sk_list_init(&S->head);
	sk_tort_pools_count(T, &S->pool0, &allocated, &freed);
	if (allocated != freed)
		sk_tort_error(T, NULL, "%lu elements allocated, %lu freed",
			      allocated, freed);
	sk_tort_pools_destroy(T, &S->pool0);
}

static void list_report(struct sk_tort *T, FILE *f)
{
	struct list_state *S = T->priv;
	struct sk_tort_stats sum;

	sk_tort_sum_stats(T, &sum);
	fprintf(f,
		"%slist: %lu walks, %.1f elements per walk; %lu inserts, "
		"%lu removes, %lu replaces (%lu freed with SK_FREE_RCU); "
		"%lu keys at the end, %d stable\n",
		T->prefix, sum.reads,
		sum.reads ? (double)sum.x[LX_ELEMS_SEEN] / sum.reads : 0.0,
		sum.x[LX_INSERTS], sum.x[LX_REMOVES], sum.x[LX_REPLACES],
		sum.x[LX_FREE_RCU], S->present, LIST_NSTABLE);
}

static void list_destroy(struct sk_tort *T)
{
	struct list_state *S = T->priv;

	pthread_mutex_destroy(&S->lock);
	free(S);
	T->priv = NULL;
}

const struct sk_tort_scenario sk_tort_list_scenario = {
	.name = "sk_list",
	.setup = list_setup,
	.thread_init = list_thread_init,
	.thread_fini = sk_tort_thread_priv_fini,
	.read_one = list_read_one,
	.before_qs = list_before_qs,
	.update_one = list_update_one,
	.update_drain = sk_tort_update_drain,
	.finish = list_finish,
	.report = list_report,
	.destroy = list_destroy,
	.obj_free = poison_retire,
};
