/* SPDX-License-Identifier: MIT */
/*
 * `scalekit torture` modes rcu, qsbr, mixed, srcu: the pipe test of the
 * kernel's rcutorture.
 *
 * Readers follow one global pointer to an element.  Updaters allocate a
 * new element, publish it (exchange of the global pointer), and age the
 * old one: its pipe count becomes 1 at removal and grows by one at every
 * grace period that completes after that (sync, expedited, polled or
 * conditional: the updater ages every element it removed; callback: the
 * callback ages the element and queues itself again), until it reaches
 * SK_TORT_PIPE_LEN, when the element is poisoned and freed.
 *
 * A reader reads an element it found through the global pointer inside a
 * section, so that element was removed after the section began: every
 * grace period that completes after the removal began after the section
 * did, and must wait for it.  The pipe count may reach 1 inside the
 * section, never 2.  A reader that sees 2 or more at the end of its
 * section (or a poisoned element) caught a grace period that ended too
 * early: an error.  QSBR readers hold what they read until their next
 * quiescent state and re-check it then.  SRCU readers hand some sections
 * to a helper thread, which re-checks the element and ends the section.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "torture_core.h"

#define PIPE_PAYLOAD 4
/* QSBR readers: references held at most between quiescent states. */
#define PIPE_HOLD 16
/* Sections waiting for the hand-off helper. */
#define PIPE_HANDOFF_CAP 256

struct pipe_elem {
	struct sk_rcu_head rh;	   /* callback aging */
	struct sk_tort *T;	   /* for the callback */
	struct sk_tort_pool *pool; /* where it goes when freed (remover's) */
	struct pipe_elem *next_removed;	     /* remover's list, sync aging */
	unsigned long pipe;		     /* stage, relaxed atomic */
	unsigned long magic;		     /* SK_TORT_MAGIC, or poison */
	unsigned long seq;		     /* publication number */
	unsigned long payload[PIPE_PAYLOAD]; /* pipe_payload(seq, i) */
};

struct pipe_handoff {
	int idx;	     /* from readlock() */
	struct pipe_elem *p; /* read in the section */
	unsigned long pipe0; /* pipe count at its start */
};

struct pipe_state {
	struct pipe_elem *current; /* RCU-protected */
	unsigned long seq;	   /* atomic: publications */
	struct sk_tort_pool pool0; /* the first element */

	/* Hand-off of sections to the helper (srcu). */
	pthread_mutex_t ho_lock;
	struct pipe_handoff ho[PIPE_HANDOFF_CAP];
	unsigned int ho_len;
	int ho_closed; /* the helper is gone: readers unlock themselves */
};

/* Updater's state; kept until finish() (its pool holds elements). */
struct pipe_updater {
	struct sk_tort_pool pool;  /* first (sk_tort_thread_priv_init()) */
	struct pipe_elem *removed; /* removed, aged by its grace periods */
};

/* Reader's state: references held by a QSBR reader. */
struct pipe_reader {
	struct pipe_elem *held[PIPE_HOLD];
	unsigned long held_pipe0[PIPE_HOLD];
	unsigned int nheld;
};

/* x[] counters of struct sk_tort_stats. */
enum { PX_HANDOFFS, PX_HELD_CHECKS, PX_NR };
SK_TORT_X_FITS(PX_NR);

static inline unsigned long pipe_payload(unsigned long seq, unsigned int i)
{
	/* The index in the top byte, whatever the width of unsigned long. */
	return (seq * (unsigned long)0x9e3779b97f4a7c15ULL) ^
	       ((unsigned long)i << (8 * sizeof(unsigned long) - 8)) ^ i;
}

static int pipe_setup(struct sk_tort *T)
{
	struct pipe_state *S = sk_tort_calloc(1, sizeof(*S));
	struct pipe_elem *e;
	unsigned int i;

	if (!S)
		return -ENOMEM;
	pthread_mutex_init(&S->ho_lock, NULL);
	sk_tort_pool_init(&S->pool0, sizeof(struct pipe_elem), T->ops->busted);
	e = sk_tort_pool_alloc(&S->pool0);
	if (!e) {
		pthread_mutex_destroy(&S->ho_lock);
		free(S);
		return -ENOMEM;
	}
	e->T = T;
	e->pool = &S->pool0;
	e->magic = SK_TORT_MAGIC;
	e->seq = ++S->seq;
	for (i = 0; i < PIPE_PAYLOAD; i++)
		e->payload[i] = pipe_payload(e->seq, i);
	sk_rcu_assign_pointer(S->current, e);
	T->priv = S;
	return 0;
}

static int pipe_thread_init(struct sk_tort_thread *t)
{
	return sk_tort_thread_priv_init(t, sizeof(struct pipe_updater),
					sizeof(struct pipe_elem),
					sizeof(struct pipe_reader));
}

/* ---- checks -------------------------------------------------------------- */

/* Is *p a live element?  Counts an error and returns 0 if not. */
static int check_elem(struct sk_tort_thread *t, struct pipe_elem *p,
		      const char *when)
{
	struct sk_tort *T = t->T;
	unsigned long magic = SK_TORT_LOAD(T, p->magic), seq, v;
	unsigned int i;

	if (magic != SK_TORT_MAGIC) {
		sk_tort_error(T, t, "element %p %s: magic %#lx%s", (void *)p,
			      when, magic,
			      magic == SK_TORT_POISON
				      ? " (poisoned: freed while a read "
					"section held it)"
				      : " (not an element)");
		return 0;
	}
	seq = SK_TORT_LOAD(T, p->seq);
	for (i = 0; i < PIPE_PAYLOAD; i++) {
		v = SK_TORT_LOAD(T, p->payload[i]);
		if (v != pipe_payload(seq, i)) {
			sk_tort_error(T, t,
				      "element %p %s: payload[%u] %#lx, "
				      "expected %#lx for seq %lu",
				      (void *)p, when, i, v,
				      pipe_payload(seq, i), seq);
			return 0;
		}
	}
	return 1;
}

/* The pipe count at the end of a section: 2 or more is an error. */
static void check_pipe(struct sk_tort_thread *t, struct pipe_elem *p,
		       unsigned long pipe0, unsigned long pipe1,
		       const char *where)
{
	if (pipe1 >= 2)
		sk_tort_error(t->T, t,
			      "element %p (seq %lu): pipe count %lu at the "
			      "end of %s, %lu at its start: a grace period "
			      "ended while the section held the element",
			      (void *)p, SK_TORT_LOAD(t->T, p->seq), pipe1,
			      where, pipe0);
}

/* ---- hand-off (sections ended by another thread) ------------------------- */

static int handoff_post(struct pipe_state *S, int idx, struct pipe_elem *p,
			unsigned long pipe0)
{
	int ok = 0;

	pthread_mutex_lock(&S->ho_lock);
	if (!S->ho_closed && S->ho_len < PIPE_HANDOFF_CAP) {
		S->ho[S->ho_len].idx = idx;
		S->ho[S->ho_len].p = p;
		S->ho[S->ho_len].pipe0 = pipe0;
		S->ho_len++;
		ok = 1;
	}
	pthread_mutex_unlock(&S->ho_lock);
	return ok;
}

/* End every handed-off section; close the queue when closing. */
static unsigned int handoff_run(struct sk_tort_thread *t, int closing)
{
	struct sk_tort *T = t->T;
	struct pipe_state *S = T->priv;
	struct pipe_handoff batch[PIPE_HANDOFF_CAP];
	unsigned int n, i;

	pthread_mutex_lock(&S->ho_lock);
	n = S->ho_len;
	memcpy(batch, S->ho, n * sizeof(batch[0]));
	S->ho_len = 0;
	if (closing)
		S->ho_closed = 1;
	pthread_mutex_unlock(&S->ho_lock);
	for (i = 0; i < n; i++) {
		struct pipe_elem *p = batch[i].p;

		/* The section is still open: the element must be intact. */
		if (check_elem(t, p, "in a handed-off section"))
			check_pipe(t, p, batch[i].pipe0,
				   sk_atomic_load_relaxed(&p->pipe),
				   "a handed-off section");
		T->ops->readunlock(T->ctx, batch[i].idx);
		sk_tort_inc(&t->st->x[PX_HANDOFFS]);
	}
	return n;
}

static unsigned int pipe_nextra(struct sk_tort *T)
{
	return T->ops->can_handoff ? 1 : 0;
}

static void pipe_extra_one(struct sk_tort_thread *t)
{
	if (!handoff_run(t, 0))
		usleep((useconds_t)(50 + sk_tort_below(&t->rng, 200)));
}

static void pipe_extra_drain(struct sk_tort_thread *t)
{
	handoff_run(t, 1);
}

/* ---- readers ------------------------------------------------------------- */

static void pipe_read_one(struct sk_tort_thread *t)
{
	struct sk_tort *T = t->T;
	const struct sk_tort_ops *ops = T->ops;
	struct pipe_state *S = T->priv;
	struct pipe_reader *r = t->priv;
	int nidx[SK_TORT_MAX_NEST];
	unsigned long pipe0, pipe1, seq0, batch, depth;
	struct pipe_elem *p;
	int idx, live;

	idx = ops->readlock(T->ctx);
	p = ops->deref((void *const *)&S->current);
	if (!p) {
		sk_tort_error(T, t, "the global pointer is NULL");
		ops->readunlock(T->ctx, idx);
		return;
	}
	pipe0 = sk_atomic_load_relaxed(&p->pipe);
	seq0 = ops->gp_seq(T->ctx);
	live = check_elem(t, p, "at the start of a section");
	depth = sk_tort_nest_lock(t, nidx, 1);
	ops->read_delay(&t->rng, T->cfg->sleep);
	sk_tort_nest_unlock(t, nidx, depth);
	pipe1 = sk_atomic_load_relaxed(&p->pipe);
	if (live)
		live = check_elem(t, p, "at the end of a section");
	batch = ops->gp_seq(T->ctx) - seq0;
	if (live)
		check_pipe(t, p, pipe0, pipe1, "a read section");
	sk_tort_inc(&t->st->pipe[pipe1 < SK_TORT_PIPE_LEN ? pipe1
							  : SK_TORT_PIPE_LEN]);
	sk_tort_inc(&t->st->batch[batch < SK_TORT_PIPE_LEN ? batch
							   : SK_TORT_PIPE_LEN]);
	sk_tort_max(&t->st->max_pipe, pipe1);
	sk_tort_inc(&t->st->reads);
	/* One section in 16 ends on the helper thread. */
	if (ops->can_handoff && sk_tort_one_in(&t->rng, 16) &&
	    handoff_post(S, idx, p, pipe0))
		return;
	ops->readunlock(T->ctx, idx);
	/* A QSBR reader keeps the element until its quiescent state. */
	if (t->qsbr && r->nheld < PIPE_HOLD) {
		r->held[r->nheld] = p;
		r->held_pipe0[r->nheld] = pipe0;
		r->nheld++;
	}
}

static void pipe_before_qs(struct sk_tort_thread *t)
{
	struct pipe_reader *r = t->priv;
	unsigned int i;

	for (i = 0; i < r->nheld; i++) {
		struct pipe_elem *p = r->held[i];
		unsigned long pipe1 = sk_atomic_load_relaxed(&p->pipe);

		if (check_elem(t, p, "held until a quiescent state"))
			check_pipe(t, p, r->held_pipe0[i], pipe1,
				   "a QSBR reader's span between quiescent "
				   "states");
		sk_tort_inc(&t->st->x[PX_HELD_CHECKS]);
	}
	r->nheld = 0;
}

/* ---- updaters ------------------------------------------------------------ */

static void retire(struct sk_tort *T, struct pipe_elem *e)
{
	unsigned int i;

	/* Poison first, so a reader that still holds it sees the poison. */
	SK_TORT_STORE(T, e->magic, SK_TORT_POISON);
	SK_TORT_STORE(T, e->seq, SK_TORT_POISON);
	for (i = 0; i < PIPE_PAYLOAD; i++)
		SK_TORT_STORE(T, e->payload[i], SK_TORT_POISON);
	sk_tort_pool_retire(e->pool, e);
}

/* One more grace period for e; 1 when it reached the end and is freed. */
static int age_one(struct sk_tort *T, struct pipe_elem *e)
{
	unsigned long i = sk_atomic_load_relaxed(&e->pipe);

	if (i > SK_TORT_PIPE_LEN)
		i = SK_TORT_PIPE_LEN;
	sk_atomic_fetch_add_relaxed(&T->wcount[i], 1UL);
	sk_atomic_store_relaxed(&e->pipe, i + 1);
	if (i + 1 >= SK_TORT_PIPE_LEN) {
		retire(T, e);
		return 1;
	}
	return 0;
}

/* After a grace period: age every element the updater removed. */
static void age_removed(struct sk_tort *T, struct pipe_updater *u)
{
	struct pipe_elem **pp = &u->removed, *e;

	while ((e = *pp) != NULL) {
		struct pipe_elem *next = e->next_removed;

		if (age_one(T, e))
			*pp = next;
		else
			pp = &e->next_removed;
	}
}

static void pipe_cb(struct sk_rcu_head *h)
{
	struct pipe_elem *e = (struct pipe_elem *)(void *)h;
	struct sk_tort *T = e->T;
	int err;

	sk_atomic_fetch_add_relaxed(&T->cb_invoked, 1UL);
	if (age_one(T, e)) {
		sk_tort_cb_done(T);
		return;
	}
	sk_atomic_fetch_add_relaxed(&T->cb_requeued, 1UL);
	err = T->ops->call(T->ctx, &e->rh, pipe_cb);
	if (err) {
		/* Cannot age it any more: leak it rather than free early. */
		sk_tort_cb_done(T);
		sk_tort_error(T, NULL, "call from a callback returned %d", err);
	}
}

/*
 * Modes whose ops set updater_reads (rcu): half the updates first read
 * the current element in a section of their own, so that the updaters
 * are registered readers too and park in their grace-period waits
 * (docs/rcu.md, "Parking"); the next such section counts the thread
 * again.  The element must be live at both ends of the section, and no
 * two grace periods may end while it is held (pipe count below 2), as
 * for the readers.
 */
static void pipe_updater_read(struct sk_tort_thread *t)
{
	struct sk_tort *T = t->T;
	const struct sk_tort_ops *ops = T->ops;
	struct pipe_state *S = T->priv;
	unsigned long pipe0, pipe1;
	struct pipe_elem *p;
	int idx;

	if (!ops->updater_reads || !sk_tort_one_in(&t->rng, 2))
		return;
	idx = ops->readlock(T->ctx);
	p = ops->deref((void *const *)&S->current);
	pipe0 = sk_atomic_load_relaxed(&p->pipe);
	if (check_elem(t, p, "at the start of an updater's section")) {
		sk_tort_spin(&t->rng, 100);
		pipe1 = sk_atomic_load_relaxed(&p->pipe);
		if (check_elem(t, p, "at the end of an updater's section"))
			check_pipe(t, p, pipe0, pipe1,
				   "an updater's read section");
	}
	ops->readunlock(T->ctx, idx);
}

static void pipe_update_one(struct sk_tort_thread *t)
{
	struct sk_tort *T = t->T;
	const struct sk_tort_ops *ops = T->ops;
	struct pipe_state *S = T->priv;
	struct pipe_updater *u = t->priv;
	struct pipe_elem *e, *old;
	unsigned long seq;
	unsigned int i;
	int g, err;

	pipe_updater_read(t);
	e = sk_tort_pool_alloc(&u->pool);
	if (!e) {
		sk_tort_error(T, t, "out of memory");
		usleep(1000);
		return;
	}
	seq = sk_atomic_fetch_add_relaxed(&S->seq, 1UL) + 1;
	e->T = T;
	e->pool = &u->pool;
	e->next_removed = NULL;
	sk_atomic_store_relaxed(&e->pipe, 0UL);
	SK_TORT_STORE(T, e->seq, seq);
	for (i = 0; i < PIPE_PAYLOAD; i++)
		SK_TORT_STORE(T, e->payload[i], pipe_payload(seq, i));
	SK_TORT_STORE(T, e->magic, SK_TORT_MAGIC);
	/*
	 * Publish e and take the old element: release orders e's fields
	 * before the pointer (pairs with the readers' dereference), acquire
	 * orders the old element's initialization before our use of it.
	 */
	old = __atomic_exchange_n(&S->current, e, __ATOMIC_ACQ_REL);
	/* From now on old belongs to this updater. */
	old->pool = &u->pool;
	old->T = T;
	sk_atomic_store_relaxed(&old->pipe, 1UL);
	sk_atomic_fetch_add_relaxed(&T->wcount[0], 1UL);

	g = sk_tort_pick_gp(t);
	sk_tort_inc(&t->st->gp_used[g]);
	if (g == SK_TORT_GP_CB) {
		sk_atomic_fetch_add_relaxed(&T->cb_pending, 1UL);
		sk_tort_inc(&t->st->cb_queued);
		err = ops->call(T->ctx, &old->rh, pipe_cb);
		if (err) {
			sk_tort_cb_done(T);
			sk_tort_error(T, t, "call returned %d", err);
			/* Age it synchronously instead. */
			g = SK_TORT_GP_SYNC;
		}
	}
	if (g != SK_TORT_GP_CB) {
		old->next_removed = u->removed;
		u->removed = old;
		sk_tort_wait_gp(t, g, 200);
		age_removed(T, u);
	}
	sk_tort_inc(&t->st->updates);
}

/* ---- end of the run ------------------------------------------------------ */

static void pipe_finish(struct sk_tort *T)
{
	struct pipe_state *S = T->priv;
	unsigned long i, allocated, freed;
	struct pipe_elem *e;

	/* Every reader is gone: the removed elements may go at once. */
	if (T->ops->sync)
		T->ops->sync(T->ctx);
	for (i = 0; i < T->nthreads; i++) {
		struct sk_tort_thread *t = &T->threads[i];
		struct pipe_updater *u = t->priv;

		if (t->role != SK_TORT_UPDATER || !u)
			continue;
		while ((e = u->removed) != NULL) {
			u->removed = e->next_removed;
			retire(T, e);
		}
	}
	e = S->current;
	S->current = NULL;
	if (e)
		retire(T, e); /* to the pool it came from */
	sk_tort_pools_count(T, &S->pool0, &allocated, &freed);
	if (allocated != freed)
		sk_tort_error(T, NULL,
			      "%lu elements allocated, %lu freed: %ld lost "
			      "(a callback never ran?)",
			      allocated, freed, (long)(allocated - freed));
	sk_tort_pools_destroy(T, &S->pool0);
}

static void pipe_report(struct sk_tort *T, FILE *f)
{
	struct sk_tort_stats sum;
	unsigned long wc[SK_TORT_HIST];
	int k;

	sk_tort_sum_stats(T, &sum);
	for (k = 0; k < SK_TORT_HIST; k++)
		wc[k] = sk_atomic_load_relaxed(&T->wcount[k]);
	fprintf(f, "%s", T->prefix);
	sk_tort_print_hist(f, "Reader Pipe: ", sum.pipe);
	fprintf(f, "%s", T->prefix);
	sk_tort_print_hist(f, "Reader Batch:", sum.batch);
	fprintf(f, "%s", T->prefix);
	sk_tort_print_hist(f, "Free-Block Circulation:", wc);
	if (T->ops->can_handoff)
		fprintf(f, "%ssections ended by another thread: %lu\n",
			T->prefix, sum.x[PX_HANDOFFS]);
	if (sum.x[PX_HELD_CHECKS])
		fprintf(f,
			"%sQSBR references re-checked at quiescent "
			"states: %lu\n",
			T->prefix, sum.x[PX_HELD_CHECKS]);
}

static void pipe_destroy(struct sk_tort *T)
{
	struct pipe_state *S = T->priv;

	pthread_mutex_destroy(&S->ho_lock);
	free(S);
	T->priv = NULL;
}

const struct sk_tort_scenario sk_tort_pipe_scenario = {
	.name = "pipe test",
	.setup = pipe_setup,
	.thread_init = pipe_thread_init,
	.thread_fini = sk_tort_thread_priv_fini,
	.read_one = pipe_read_one,
	.before_qs = pipe_before_qs,
	.update_one = pipe_update_one,
	.nextra = pipe_nextra,
	.extra_one = pipe_extra_one,
	.extra_drain = pipe_extra_drain,
	.finish = pipe_finish,
	.report = pipe_report,
	.destroy = pipe_destroy,
};
