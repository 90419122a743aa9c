/* SPDX-License-Identifier: MIT */
/*
 * rcu_checker.h - a Triplett checker for RCU-protected linked structures
 * (scalekit/list.h lists and hlists, the rhash table), for tests.
 *
 * Triplett's rule: take a reader that runs atomically between two writes
 * of the updater.  A reader that reads in the opposite order of two writes
 * needs only publication ordering between them; a reader that reads in the
 * same order needs a grace period.  Running a complete reader at every
 * intermediate state cannot catch a missing grace period, because each
 * state alone is consistent.  So the checker also keeps readers that SPAN
 * several writes while no grace period separates them.
 *
 * The model.  A reader is a deterministic walk of loads.  Its state before
 * a load is a struct sk_chk_reader: what it reads (its "kind": a lookup of
 * one key, or a full iteration, of one root structure) and its position,
 * the address of the next pointer it will load (&bucket[i] of the bucket
 * array it started in, &node->next, ...), plus two structure-specific
 * words (ctx, aux: e.g. the array and bucket of an rhash iteration).  The
 * checker keeps the set of IN-FLIGHT readers: every state at which a
 * reader may be paused.  Identical states are merged.
 *
 * At every hook event (the state S right after a write):
 *  1. every in-flight reader runs to completion in S and is checked;
 *  2. fresh complete readers (every kind) run in S and are checked;
 *  3. PUBLISH event: the new in-flight set is every state along the walks
 *     of 1 and 2 (a reader may pause at any of them until the next write).
 *     GP event: a grace period waits for every reader that started before
 *     it, so readers of 1 are done; the new in-flight set is the states of
 *     the walks of 2 only (readers that start after the grace period, in S,
 *     may still span the writes that follow).
 *
 * Checks: a lookup of a key marked must_find (present before and after the
 * checked operation and not inserted or removed by it) finds it; a full
 * iteration terminates (a cycle is a failure) and returns every key of its
 * must_see set; optionally no key twice; no reader loads a pointer from
 * freed memory nor reaches a freed node (ops->freed(): the test frees only
 * after waiting for a grace period itself, and keeps freed memory in a
 * quarantine so that addresses stay unique); no reader reaches a node that
 * is not a node of its structure (ops->enter() returns SK_CHK_BAD).
 *
 * Merging states exactly.  An iteration's verdict depends on the keys it
 * returned before the pause, which differ between the histories that reach
 * the same state.  The checker keeps, per state, the intersection ("all")
 * and the union ("any") of the returned-key sets of every history reaching
 * it.  "Some history misses key K" is exactly "K is missing from all ∪
 * future"; "some history returns K twice" is exactly "K in any ∩ future".
 * Within one event the walks form a graph in which every state has one
 * successor; the sets flow along it in topological order, so each state is
 * examined once per event however many histories reach it.
 *
 * Usage:
 *	struct sk_chk c;
 *	sk_chk_init(&c, &my_ops, my_arg);
 *	sk_chk_add_lookup(&c, root, key, must_find);	   per key
 *	sk_chk_add_iter(&c, root, must_see, no_dups);	   per root
 *	sk_chk_begin(&c, "label");  hooks sk_rcu_checker_hook
 *	  ... the operation: SK__PUBLISH / GP hooks call sk_chk_event() ...
 *	sk_chk_end(&c);		    the final state; unhooks
 *	c.violations, c.st.*
 *	sk_chk_destroy(&c);
 *
 * The hook runs in the updater thread, possibly with the structure's locks
 * held: the ops only load pointers, never lock and never call RCU.
 * Header-only (static functions); include it in one file per program.
 */
#ifndef SK_RCU_CHECKER_TESTS_H
#define SK_RCU_CHECKER_TESTS_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scalekit/list.h" /* SK_RCU_CHECK_* */

/*
 * The hook of the checker build of the library (tests/checker.cmake), also
 * declared by list.h when SK_RCU_CHECKER is defined.
 */
extern void (*sk_rcu_checker_hook)(int event);

#define SK_CHK_MAX_KEYS 256 /* key ids 0..255 */
#define SK_CHK_WORDS	(SK_CHK_MAX_KEYS / 64)
#define SK_CHK_ITER	(-1) /* kind.key of a full iteration */
#define SK_CHK_BAD	(-2) /* ops->enter(): not a node of this structure */
#define SK_CHK_MAX_STATES (1 << 22) /* per event: a runaway walk */

/* ops->load() results. */
enum { SK_CHK_END, SK_CHK_NODE, SK_CHK_MOVED };

/* What a reader reads: a lookup of key in root, or a full iteration. */
struct sk_chk_kind {
	const void *root;		 /* the structure (list head, table) */
	int key;			 /* key id, or SK_CHK_ITER */
	int must_find;			 /* lookup: present throughout */
	uint64_t must_see[SK_CHK_WORDS]; /* iteration: present throughout */
	int no_dups;			 /* iteration: a key twice is a failure */
};

/* A reader paused before a load. */
struct sk_chk_reader {
	int kind;	   /* index in the checker's kinds */
	const void *slot;  /* address of the pointer it loads next */
	const void *ctx;   /* structure-specific (rhash: bucket array) */
	unsigned long aux; /* structure-specific (rhash iteration: bucket) */
};

/*
 * How to read one kind of structure.  All of them run inside the hook:
 * loads only, no locks, no RCU calls.
 */
struct sk_chk_ops {
	/* Position a fresh reader of r->kind (k) in the current state. */
	void (*start)(void *arg, const struct sk_chk_kind *k,
		      struct sk_chk_reader *r);
	/*
	 * Load the pointer at r->slot: SK_CHK_NODE with *node set, SK_CHK_END
	 * when the walk is over, SK_CHK_MOVED when r moved without reaching a
	 * node (rhash iteration: next bucket).  Must not dereference *node.
	 */
	int (*load)(void *arg, const struct sk_chk_kind *k,
		    struct sk_chk_reader *r, const void **node);
	/*
	 * Step onto node (not freed): set r->slot (and ctx, aux) to node's
	 * next pointer; return the key id the reader sees there, -1 when it
	 * ignores the node (rhash: another bucket), SK_CHK_BAD when node is
	 * no node of the structure.
	 */
	int (*enter)(void *arg, const struct sk_chk_kind *k,
		     struct sk_chk_reader *r, const void *node);
	/* Nonzero when addr lies in memory the test has freed. */
	int (*freed)(void *arg, const void *addr);
	/* Optional: describe a position for messages. */
	void (*describe)(void *arg, const struct sk_chk_reader *r, char *buf,
			 size_t len);
	/* Optional: name a root for messages. */
	const char *(*root_name)(void *arg, const void *root);
};

/* Terminal successors. */
enum {
	SK_CHK_T_UNSET = -1, /* not expanded yet */
	SK_CHK_T_END = -2,   /* walk over, not found */
	SK_CHK_T_FOUND = -3, /* lookup found its key */
	SK_CHK_T_BAD = -4,   /* violation already reported */
};

struct sk_chk_state {
	struct sk_chk_reader r;
	uint64_t all[SK_CHK_WORDS]; /* keys every history here returned */
	uint64_t any[SK_CHK_WORDS]; /* keys some history here returned */
	long born;		    /* earliest event a history here paused */
	int succ;		    /* successor index or SK_CHK_T_* */
	int emit;		    /* key returned on the edge to succ, or -1 */
	int indeg;		    /* edges into this state */
	int walk;		    /* walk that expanded it (cycle check) */
	int has_hist;		    /* all/any hold at least one history */
};

struct sk_chk_stats {
	unsigned long events;	     /* states S examined (hooks, begin, end) */
	unsigned long gp_events;     /* of which grace periods */
	unsigned long ops;	     /* checked operations (begin..end) */
	unsigned long readers_run;   /* reader walks started (in-flight+fresh) */
	unsigned long states;	     /* reader states examined (graph nodes) */
	unsigned long max_inflight;  /* largest in-flight set */
	unsigned long dups;	     /* keys returned twice (no_dups == 0) */
};

struct sk_chk {
	const struct sk_chk_ops *ops;
	void *arg;
	struct sk_chk_kind *kinds; /* what readers read */
	int nkinds, capkinds;
	struct sk_chk_state *fly; /* in-flight readers */
	size_t nfly, capfly;
	struct sk_chk_state *g; /* this event's graph */
	size_t ng, capg;
	int *idx; /* open-addressing index into g */
	size_t capidx;
	int *queue; /* topological order */
	size_t capqueue;
	int walk;
	long event;	  /* current event number (0: begin) */
	int event_type;	  /* SK_RCU_CHECK_* or 0 */
	const char *label; /* operation under check, for messages */
	unsigned long violations; /* failures found (all operations) */
	unsigned long op_violations; /* failures of the current operation */
	unsigned long print_limit; /* messages printed at most (total) */
	int stop_on_violation;	   /* skip the rest of an operation once failed */
	unsigned long printed;
	char first[1024]; /* first message of the current operation */
	struct sk_chk_stats st;
};

static struct sk_chk *sk_chk_current;

static inline void *sk_chk__grow(void *p, size_t *cap, size_t need,
				 size_t elem)
{
	size_t n = *cap ? *cap : 64;

	if (need <= *cap)
		return p;
	while (n < need)
		n *= 2;
	p = realloc(p, n * elem);
	if (!p) {
		fprintf(stderr, "rcu_checker: out of memory\n");
		abort();
	}
	*cap = n;
	return p;
}

static inline void sk_chk_init(struct sk_chk *c, const struct sk_chk_ops *ops,
			       void *arg)
{
	memset(c, 0, sizeof(*c));
	c->ops = ops;
	c->arg = arg;
	c->print_limit = 20;
}

static inline void sk_chk_destroy(struct sk_chk *c)
{
	free(c->kinds);
	free(c->fly);
	free(c->g);
	free(c->idx);
	free(c->queue);
	memset(c, 0, sizeof(*c));
}

/* Forget the kinds (keep statistics and buffers). */
static inline void sk_chk_clear_kinds(struct sk_chk *c)
{
	c->nkinds = 0;
}

static inline struct sk_chk_kind *sk_chk__add_kind(struct sk_chk *c)
{
	size_t cap = (size_t)c->capkinds;
	struct sk_chk_kind *k;

	c->kinds = (struct sk_chk_kind *)sk_chk__grow(
		c->kinds, &cap, (size_t)c->nkinds + 1, sizeof(*c->kinds));
	c->capkinds = (int)cap;
	k = &c->kinds[c->nkinds++];
	memset(k, 0, sizeof(*k));
	return k;
}

static inline void sk_chk_add_lookup(struct sk_chk *c, const void *root,
				     int key, int must_find)
{
	struct sk_chk_kind *k = sk_chk__add_kind(c);

	k->root = root;
	k->key = key;
	k->must_find = must_find;
}

static inline void sk_chk_add_iter(struct sk_chk *c, const void *root,
				   const uint64_t *must_see, int no_dups)
{
	struct sk_chk_kind *k = sk_chk__add_kind(c);

	k->root = root;
	k->key = SK_CHK_ITER;
	if (must_see)
		memcpy(k->must_see, must_see, sizeof(k->must_see));
	k->no_dups = no_dups;
}

static inline void sk_chk_bit_set(uint64_t *set, int key)
{
	set[key / 64] |= 1ull << (key % 64);
}

static inline int sk_chk_bit(const uint64_t *set, int key)
{
	return (int)((set[key / 64] >> (key % 64)) & 1);
}

static inline void sk_chk__describe(struct sk_chk *c,
				    const struct sk_chk_reader *r, char *buf,
				    size_t len)
{
	const struct sk_chk_kind *k = &c->kinds[r->kind];
	char pos[160] = "", rootbuf[32];
	const char *root = NULL;
	int n;

	if (c->ops->describe)
		c->ops->describe(c->arg, r, pos, sizeof(pos));
	else
		snprintf(pos, sizeof(pos), "slot %p", r->slot);
	if (c->ops->root_name)
		root = c->ops->root_name(c->arg, k->root);
	if (!root) {
		snprintf(rootbuf, sizeof(rootbuf), "%p", k->root);
		root = rootbuf;
	}
	if (k->key == SK_CHK_ITER)
		n = snprintf(buf, len, "iteration of %s", root);
	else
		n = snprintf(buf, len, "lookup of key %d in %s", k->key, root);
	if (n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " paused at %s", pos);
}

static inline const char *sk_chk__evname(int ev)
{
	return ev == SK_RCU_CHECK_GP	    ? "after a grace period"
	       : ev == SK_RCU_CHECK_PUBLISH ? "after a publication"
					    : "begin/end of the operation";
}

/* Report one failure of state i (a reader that may pause there). */
static inline void sk_chk__fail(struct sk_chk *c, int i, const char *fmt, ...)
{
	char what[256], who[320], msg[sizeof(c->first)];
	const struct sk_chk_state *s = &c->g[i];
	va_list ap;

	c->violations++;
	c->op_violations++;
	if (c->op_violations > 1 && c->printed >= c->print_limit)
		return;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	sk_chk__describe(c, &s->r, who, sizeof(who));
	snprintf(msg, sizeof(msg),
		 "%s: state %ld (%s): a reader (%s; %s %ld) %s",
		 c->label ? c->label : "?", c->event,
		 sk_chk__evname(c->event_type), who,
		 s->born < c->event ? "in flight since state" : "fresh in state",
		 s->born, what);
	if (c->op_violations == 1)
		snprintf(c->first, sizeof(c->first), "%s", msg);
	if (c->printed < c->print_limit) {
		c->printed++;
		fprintf(stderr, "rcu_checker: %s\n", msg);
	}
}

static inline size_t sk_chk__hash(const struct sk_chk_reader *r)
{
	uint64_t h = (uint64_t)(uintptr_t)r->slot * 0x9e3779b97f4a7c15ull;

	h ^= (uint64_t)(uintptr_t)r->ctx * 0xc2b2ae3d27d4eb4full;
	h ^= (uint64_t)r->aux * 0x165667b19e3779f9ull;
	h ^= (uint64_t)(unsigned)r->kind * 0x27d4eb2f165667c5ull;
	h ^= h >> 29;
	return (size_t)h;
}

static inline int sk_chk__same(const struct sk_chk_reader *a,
			       const struct sk_chk_reader *b)
{
	return a->kind == b->kind && a->slot == b->slot && a->ctx == b->ctx &&
	       a->aux == b->aux;
}

static inline void sk_chk__rehash(struct sk_chk *c, size_t cap)
{
	size_t i;

	free(c->idx);
	c->idx = (int *)malloc(cap * sizeof(*c->idx));
	if (!c->idx)
		abort();
	c->capidx = cap;
	for (i = 0; i < cap; i++)
		c->idx[i] = -1;
	for (i = 0; i < c->ng; i++) {
		size_t h = sk_chk__hash(&c->g[i].r) & (cap - 1);

		while (c->idx[h] >= 0)
			h = (h + 1) & (cap - 1);
		c->idx[h] = (int)i;
	}
}

/* The graph index of state r, created (without history) if new. */
static inline int sk_chk__intern(struct sk_chk *c,
				 const struct sk_chk_reader *r)
{
	size_t h;
	struct sk_chk_state *s;

	if (2 * (c->ng + 1) > c->capidx)
		sk_chk__rehash(c, c->capidx ? 2 * c->capidx : 1024);
	for (h = sk_chk__hash(r) & (c->capidx - 1); c->idx[h] >= 0;
	     h = (h + 1) & (c->capidx - 1))
		if (sk_chk__same(&c->g[c->idx[h]].r, r))
			return c->idx[h];
	c->g = (struct sk_chk_state *)sk_chk__grow(c->g, &c->capg, c->ng + 1,
						   sizeof(*c->g));
	s = &c->g[c->ng];
	memset(s, 0, sizeof(*s));
	s->r = *r;
	s->born = c->event;
	s->succ = SK_CHK_T_UNSET;
	s->emit = -1;
	c->idx[h] = (int)c->ng;
	return (int)c->ng++;
}

/* Merge one history (sets all/any, first paused at born) into state i. */
static inline void sk_chk__merge(struct sk_chk_state *s, const uint64_t *all,
				 const uint64_t *any, long born)
{
	int w;

	if (!s->has_hist) {
		memcpy(s->all, all, sizeof(s->all));
		memcpy(s->any, any, sizeof(s->any));
		s->born = born;
		s->has_hist = 1;
		return;
	}
	for (w = 0; w < SK_CHK_WORDS; w++) {
		s->all[w] &= all[w];
		s->any[w] |= any[w];
	}
	if (born < s->born)
		s->born = born;
}

/* Compute the successor of state i (one load of its reader). */
static inline void sk_chk__expand(struct sk_chk *c, int i)
{
	const struct sk_chk_ops *o = c->ops;
	struct sk_chk_reader r = c->g[i].r;
	const struct sk_chk_kind *k = &c->kinds[r.kind];
	const void *node = NULL;
	int res, key, j;

	if (o->freed(c->arg, r.slot)) {
		c->g[i].succ = SK_CHK_T_BAD;
		sk_chk__fail(c, i, "loads a pointer from freed memory (%p)",
			     r.slot);
		return;
	}
	res = o->load(c->arg, k, &r, &node);
	if (res == SK_CHK_END) {
		c->g[i].succ = SK_CHK_T_END;
		return;
	}
	key = -1;
	if (res == SK_CHK_NODE) {
		if (o->freed(c->arg, node)) {
			c->g[i].succ = SK_CHK_T_BAD;
			sk_chk__fail(c, i, "reaches a freed node (%p)", node);
			return;
		}
		key = o->enter(c->arg, k, &r, node);
		if (key == SK_CHK_BAD) {
			const char *name =
				o->root_name ? o->root_name(c->arg, node) : NULL;

			c->g[i].succ = SK_CHK_T_BAD;
			if (name)
				sk_chk__fail(c, i,
					     "reaches %s, which is no node "
					     "of its structure",
					     name);
			else
				sk_chk__fail(c, i,
					     "reaches %p, which is no node "
					     "of its structure",
					     node);
			return;
		}
		if (k->key != SK_CHK_ITER) {
			if (key == k->key) {
				c->g[i].succ = SK_CHK_T_FOUND;
				return;
			}
			key = -1;
		}
	}
	j = sk_chk__intern(c, &r);
	c->g[i].succ = j;
	c->g[i].emit = key;
}

/*
 * Run the readers of starts[] (in-flight states, with their sets) and, when
 * fresh, a fresh reader of every kind, to completion in the current state;
 * check them; when take, the graph's states become the in-flight set.
 */
static inline void sk_chk__run(struct sk_chk *c, const struct sk_chk_state *starts,
			       size_t nstarts, int fresh, int take)
{
	static const uint64_t none[SK_CHK_WORDS];
	size_t i, head, tail;
	int kk, j;

	c->ng = 0;
	if (c->capidx)
		for (i = 0; i < c->capidx; i++)
			c->idx[i] = -1;
	for (i = 0; i < nstarts; i++) {
		j = sk_chk__intern(c, &starts[i].r);
		sk_chk__merge(&c->g[j], starts[i].all, starts[i].any,
			      starts[i].born);
	}
	if (fresh) {
		for (kk = 0; kk < c->nkinds; kk++) {
			struct sk_chk_reader r;

			memset(&r, 0, sizeof(r));
			r.kind = kk;
			c->ops->start(c->arg, &c->kinds[kk], &r);
			j = sk_chk__intern(c, &r);
			sk_chk__merge(&c->g[j], none, none, c->event);
		}
	}
	c->st.readers_run += c->ng;
	/* Walk: every start state, until a state expanded before. */
	for (i = 0; i < c->ng; i++) {
		int cur = (int)i;

		if (!c->g[cur].has_hist || c->g[cur].succ != SK_CHK_T_UNSET)
			continue;
		c->walk++;
		while (c->g[cur].succ == SK_CHK_T_UNSET) {
			int next;

			c->g[cur].walk = c->walk;
			if (c->ng >= SK_CHK_MAX_STATES) {
				c->g[cur].succ = SK_CHK_T_BAD;
				sk_chk__fail(c, cur, "walks more than %d states",
					     SK_CHK_MAX_STATES);
				break;
			}
			sk_chk__expand(c, cur);
			next = c->g[cur].succ;
			if (next < 0)
				break;
			if (c->g[next].walk == c->walk) {
				c->g[cur].succ = SK_CHK_T_BAD;
				sk_chk__fail(c, cur,
					     "never terminates: its walk "
					     "runs in a cycle");
				break;
			}
			cur = next;
		}
	}
	c->st.states += c->ng;
	/* Let the histories flow in topological order and check the ends. */
	for (i = 0; i < c->ng; i++)
		c->g[i].indeg = 0;
	for (i = 0; i < c->ng; i++)
		if (c->g[i].succ >= 0)
			c->g[c->g[i].succ].indeg++;
	c->queue = (int *)sk_chk__grow(c->queue, &c->capqueue, c->ng + 1,
				       sizeof(*c->queue));
	head = tail = 0;
	for (i = 0; i < c->ng; i++)
		if (!c->g[i].indeg)
			c->queue[tail++] = (int)i;
	while (head < tail) {
		int z = c->queue[head++], y = c->g[z].succ, e = c->g[z].emit;
		const struct sk_chk_kind *k = &c->kinds[c->g[z].r.kind];
		uint64_t all[SK_CHK_WORDS], any[SK_CHK_WORDS];

		if (y == SK_CHK_T_END) {
			if (k->key != SK_CHK_ITER && k->must_find) {
				sk_chk__fail(c, z,
					     "misses key %d, present "
					     "throughout",
					     k->key);
			} else if (k->key == SK_CHK_ITER) {
				int w, first = -1, n = 0;

				for (w = 0; w < SK_CHK_MAX_KEYS; w++)
					if (sk_chk_bit(k->must_see, w) &&
					    !sk_chk_bit(c->g[z].all, w)) {
						if (first < 0)
							first = w;
						n++;
					}
				if (n)
					sk_chk__fail(c, z,
						     "ends without returning "
						     "%d key(s) present "
						     "throughout (first: key %d)",
						     n, first);
			}
			continue;
		}
		if (y < 0)
			continue;
		memcpy(all, c->g[z].all, sizeof(all));
		memcpy(any, c->g[z].any, sizeof(any));
		if (e >= 0) {
			if (sk_chk_bit(any, e)) {
				if (k->no_dups)
					sk_chk__fail(c, z,
						     "returns key %d twice", e);
				else
					c->st.dups++;
			}
			sk_chk_bit_set(all, e);
			sk_chk_bit_set(any, e);
		}
		sk_chk__merge(&c->g[y], all, any, c->g[z].born);
		if (--c->g[y].indeg == 0)
			c->queue[tail++] = y;
	}
	if (take) {
		c->fly = (struct sk_chk_state *)sk_chk__grow(
			c->fly, &c->capfly, c->ng + 1, sizeof(*c->fly));
		memcpy(c->fly, c->g, c->ng * sizeof(*c->g));
		c->nfly = c->ng;
		if (c->nfly > c->st.max_inflight)
			c->st.max_inflight = c->nfly;
	}
}

/* One hook event: the state after a publication or a grace period. */
static inline void sk_chk_event(struct sk_chk *c, int ev)
{
	struct sk_chk_state *old = c->fly;
	size_t nold = c->nfly;

	c->event++;
	c->event_type = ev;
	if (c->stop_on_violation && c->op_violations)
		return;
	c->st.events++;
	/* sk_chk__run() refills c->fly: hand it a private copy of the old set. */
	c->fly = NULL;
	c->capfly = 0;
	c->nfly = 0;
	if (ev == SK_RCU_CHECK_GP) {
		c->st.gp_events++;
		sk_chk__run(c, old, nold, 0, 0);
		sk_chk__run(c, NULL, 0, 1, 1);
	} else {
		sk_chk__run(c, old, nold, 1, 1);
	}
	free(old);
}

static inline void sk_chk_hook(int ev)
{
	if (sk_chk_current)
		sk_chk_event(sk_chk_current, ev);
}

/*
 * Start a checked operation: the kinds are set; readers that began before
 * it are in flight at every position of their walks in the current state.
 */
static inline void sk_chk_begin(struct sk_chk *c, const char *label)
{
	c->label = label;
	c->event = 0;
	c->event_type = 0;
	c->op_violations = 0;
	c->first[0] = '\0';
	c->nfly = 0;
	c->st.ops++;
	c->st.events++;
	sk_chk__run(c, NULL, 0, 1, 1);
	sk_chk_current = c;
	sk_rcu_checker_hook = sk_chk_hook;
}

/* End it: in-flight and fresh readers run in the final state. */
static inline unsigned long sk_chk_end(struct sk_chk *c)
{
	struct sk_chk_state *old = c->fly;
	size_t nold = c->nfly;

	sk_rcu_checker_hook = NULL;
	sk_chk_current = NULL;
	c->event++;
	c->event_type = 0;
	if (c->stop_on_violation && c->op_violations) {
		free(old);
		c->fly = NULL;
		c->capfly = 0;
		c->nfly = 0;
		return c->op_violations;
	}
	c->st.events++;
	c->fly = NULL;
	c->capfly = 0;
	c->nfly = 0;
	sk_chk__run(c, old, nold, 1, 0);
	free(old);
	return c->op_violations;
}

static inline void sk_chk_print_stats(const struct sk_chk *c, const char *what)
{
	fprintf(stderr,
		"  checker %s: %lu operations, %lu states S (%lu after a grace "
		"period), %lu readers run (in flight + fresh), %lu reader "
		"states examined, "
		"in-flight set up to %lu, %lu keys returned twice, %lu "
		"violations\n",
		what, c->st.ops, c->st.events, c->st.gp_events,
		c->st.readers_run, c->st.states, c->st.max_inflight, c->st.dups,
		c->violations);
}

#endif /* SK_RCU_CHECKER_TESTS_H */
