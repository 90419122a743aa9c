/* SPDX-License-Identifier: MIT */
/* rcu_checker.h: the Triplett checker for RCU-protected linked structures. */
#define _GNU_SOURCE
#include "rcu_checker.h"

/* The checker that the hook (sk_chk_begin() .. sk_chk_end()) feeds. */
static struct sk_chk *sk_chk_current;

static void *sk_chk__grow(void *p, size_t *cap, size_t need,
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

void sk_chk_init(struct sk_chk *c, const struct sk_chk_ops *ops,
		 void *arg)
{
	memset(c, 0, sizeof(*c));
	c->ops = ops;
	c->arg = arg;
	c->print_limit = 20;
}

void sk_chk_destroy(struct sk_chk *c)
{
	free(c->kinds);
	free(c->fly);
	free(c->g);
	free(c->idx);
	free(c->queue);
	memset(c, 0, sizeof(*c));
}

void sk_chk_clear_kinds(struct sk_chk *c)
{
	c->nkinds = 0;
}

static struct sk_chk_kind *sk_chk__add_kind(struct sk_chk *c)
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

void sk_chk_add_lookup(struct sk_chk *c, const void *root,
		       int key, int must_find)
{
	struct sk_chk_kind *k = sk_chk__add_kind(c);

	k->root = root;
	k->key = key;
	k->must_find = must_find;
}

void sk_chk_add_iter(struct sk_chk *c, const void *root,
		     const uint64_t *must_see, int no_dups)
{
	struct sk_chk_kind *k = sk_chk__add_kind(c);

	k->root = root;
	k->key = SK_CHK_ITER;
	if (must_see)
		memcpy(k->must_see, must_see, sizeof(k->must_see));
	k->no_dups = no_dups;
}

void sk_chk_bit_set(uint64_t *set, int key)
{
	set[key / 64] |= 1ull << (key % 64);
}

int sk_chk_bit(const uint64_t *set, int key)
{
	return (int)((set[key / 64] >> (key % 64)) & 1);
}

static void sk_chk__describe(struct sk_chk *c,
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

static const char *sk_chk__evname(int ev)
{
	return ev == SK__RCU_CHECK_GP	    ? "after a grace period"
	       : ev == SK__RCU_CHECK_PUBLISH ? "after a publication"
					    : "begin/end of the operation";
}

/* Report one failure of state i (a reader that may pause there). */
static void sk_chk__fail(struct sk_chk *c, int i, const char *fmt, ...)
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

static size_t sk_chk__hash(const struct sk_chk_reader *r)
{
	uint64_t h = (uint64_t)(uintptr_t)r->slot * 0x9e3779b97f4a7c15ull;

	h ^= (uint64_t)(uintptr_t)r->ctx * 0xc2b2ae3d27d4eb4full;
	h ^= (uint64_t)r->aux * 0x165667b19e3779f9ull;
	h ^= (uint64_t)(unsigned)r->kind * 0x27d4eb2f165667c5ull;
	h ^= h >> 29;
	return (size_t)h;
}

static int sk_chk__same(const struct sk_chk_reader *a,
			const struct sk_chk_reader *b)
{
	return a->kind == b->kind && a->slot == b->slot && a->ctx == b->ctx &&
	       a->aux == b->aux;
}

static void sk_chk__rehash(struct sk_chk *c, size_t cap)
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
static int sk_chk__intern(struct sk_chk *c,
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
static void sk_chk__merge(struct sk_chk_state *s, const uint64_t *all,
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
static void sk_chk__expand(struct sk_chk *c, int i)
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
static void sk_chk__run(struct sk_chk *c, const struct sk_chk_state *starts,
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

void sk_chk_event(struct sk_chk *c, int ev)
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
	if (ev == SK__RCU_CHECK_GP) {
		c->st.gp_events++;
		sk_chk__run(c, old, nold, 0, 0);
		sk_chk__run(c, NULL, 0, 1, 1);
	} else {
		sk_chk__run(c, old, nold, 1, 1);
	}
	free(old);
}

void sk_chk_hook(int ev)
{
	if (sk_chk_current)
		sk_chk_event(sk_chk_current, ev);
}

void sk_chk_begin(struct sk_chk *c, const char *label)
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
	sk__rcu_checker_hook = sk_chk_hook;
}

unsigned long sk_chk_end(struct sk_chk *c)
{
	struct sk_chk_state *old = c->fly;
	size_t nold = c->nfly;

	sk__rcu_checker_hook = NULL;
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

void sk_chk_print_stats(const struct sk_chk *c, const char *what)
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
