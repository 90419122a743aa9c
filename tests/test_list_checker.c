/* SPDX-License-Identifier: MIT */
/*
 * test_list_checker.c - every update of scalekit/list.h, run under the
 * Triplett checker (tests/rcu_checker.h): at every publication and grace
 * period inside the operation, complete readers and readers paused since
 * earlier states (when no grace period intervened) run against the
 * intermediate state.
 *
 * What is proven:
 *   - sk_list_add_rcu / add_tail_rcu / del_rcu / replace_rcu, and
 *     sk_list_splice_init_rcu with a real grace period, on lists of 0..8
 *     entries at every position: every lookup of a key present throughout
 *     finds it, every iteration terminates, returns each such key once and
 *     never reaches a freed entry or a foreign list head;
 *   - the same for sk_hlist_add_head / add_before / add_behind / del /
 *     replace, and for random sequences of updates with no grace period
 *     between them (the removed entries freed after one at the end);
 *   - broken twins MUST be caught: splice without its grace period (a
 *     reader of the source list paused on its last entry walks into the
 *     destination list and never finds its own head again), and freeing
 *     a deleted entry without a grace period.
 */
#include "internal/testing.h" /* first: list.h's trace points */
#include "scalekit/list.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rcu_checker.h"
#include "sk_test.h"

#define POOL	 64
#define MAX_LEN	 8
#define POISON_P ((void *)((unsigned long)0xdead00000000beefULL))

struct ent {
	int key;			/* key id, 0..SK_CHK_MAX_KEYS-1 */
	int orig_key;			/* key id before ent_free() */
	int freed;			/* freed by the test (quarantined) */
	struct sk_list_head list;	/* on heads[] */
	struct sk_hlist_node hnode;	/* on hheads[] */
};

static struct ent pool[POOL];
static int npool;
static struct sk_list_head heads[2];
static struct sk_hlist_head hheads[2];
static struct sk_chk chk;
static unsigned long ops_checked;

static void pool_reset(void)
{
	memset(pool, 0, sizeof(pool));
	npool = 0;
}

static struct ent *ent_new(int key)
{
	struct ent *e = &pool[npool++];

	e->key = key;
	e->orig_key = key;
	e->freed = 0;
	return e;
}

/* Free e after the caller's grace period: poison and quarantine. */
static void ent_free(struct ent *e)
{
	e->freed = 1;
	e->list.next = (struct sk_list_head *)POISON_P;
	e->hnode.next = (struct sk_hlist_node *)POISON_P;
	e->key = -1;
}

/* The entry whose member at offset off is at p, or NULL. */
static struct ent *ent_of(const void *p, size_t off)
{
	const char *b = (const char *)pool;
	size_t d;

	if ((const char *)p < b + off || (const char *)p >= b + sizeof(pool))
		return NULL;
	d = (size_t)((const char *)p - b - off);
	if (d % sizeof(struct ent))
		return NULL;
	return &pool[d / sizeof(struct ent)];
}

static int pool_freed(void *arg, const void *addr)
{
	const char *b = (const char *)pool;

	(void)arg;
	if ((const char *)addr < b || (const char *)addr >= b + sizeof(pool))
		return 0;
	return pool[((const char *)addr - b) / sizeof(struct ent)].freed;
}

/* ---- reader models: sk_list/sk_hlist_for_each_entry_rcu --------------- */

/*
 * One set of ops walks both; the checker's arg is the struct walk of the
 * list kind being checked: where a head's first pointer is, what ends a
 * walk and which member of struct ent links it.
 */
struct walk {
	size_t first;	       /* offset of the first pointer in a head */
	int null_ends;	       /* hlist: NULL ends a walk; list: the head */
	size_t link, next;     /* in struct ent: the node, its next pointer */
	const char *next_name; /* that pointer, for messages */
};

static struct walk list_walk = {
	offsetof(struct sk_list_head, next), 0, offsetof(struct ent, list),
	offsetof(struct ent, list.next), "next",
};

static struct walk hlist_walk = {
	offsetof(struct sk_hlist_head, first), 1, offsetof(struct ent, hnode),
	offsetof(struct ent, hnode.next), "hnode.next",
};

static void walk_start(void *arg, const struct sk_chk_kind *k,
		       struct sk_chk_reader *r)
{
	const struct walk *w = arg;

	r->slot = (const char *)k->root + w->first;
}

static int walk_load(void *arg, const struct sk_chk_kind *k,
		     struct sk_chk_reader *r, const void **node)
{
	const struct walk *w = arg;
	void *n = sk_rcu_dereference(*(void *const *)r->slot);

	if (w->null_ends ? !n : n == k->root)
		return SK_CHK_END;
	*node = n;
	return SK_CHK_NODE;
}

/*
 * A reader at node (the link at offset link of an entry) moves to the
 * entry's next pointer (offset next); SK_CHK_BAD when node is no entry.
 */
static int ent_enter(struct sk_chk_reader *r, const void *node, size_t link,
		     size_t next)
{
	struct ent *e = ent_of(node, link);

	if (!e)
		return SK_CHK_BAD;
	r->slot = (const char *)e + next;
	return e->key;
}

/* Name the slot when it is the next pointer (offset next) of an entry. */
static int ent_describe(const struct sk_chk_reader *r, size_t next,
			const char *field, char *buf, size_t len)
{
	struct ent *e = ent_of(r->slot, next);

	if (!e)
		return 0;
	snprintf(buf, len, "&%sentry(key %d)->%s", e->freed ? "freed " : "",
		 e->orig_key, field);
	return 1;
}

static int walk_enter(void *arg, const struct sk_chk_kind *k,
		      struct sk_chk_reader *r, const void *node)
{
	const struct walk *w = arg;

	(void)k;
	return ent_enter(r, node, w->link, w->next);
}

static void walk_describe(void *arg, const struct sk_chk_reader *r,
			  char *buf, size_t len)
{
	const struct walk *w = arg;
	int h;

	if (ent_describe(r, w->next, w->next_name, buf, len))
		return;
	for (h = 0; h < 2; h++) {
		if (r->slot == &heads[h].next) {
			snprintf(buf, len, "&heads[%d].next", h);
			return;
		}
		if (r->slot == &hheads[h].first) {
			snprintf(buf, len, "&hheads[%d].first", h);
			return;
		}
	}
	snprintf(buf, len, "%p", r->slot);
}

static const char *root_name(void *arg, const void *root)
{
	(void)arg;
	if (root == &heads[0])
		return "list heads[0]";
	if (root == &heads[1])
		return "list heads[1]";
	if (root == &hheads[0])
		return "hlist hheads[0]";
	return NULL;
}

static const struct sk_chk_ops walk_ops = {
	.start = walk_start,
	.load = walk_load,
	.enter = walk_enter,
	.freed = pool_freed,
	.describe = walk_describe,
	.root_name = root_name,
};

/* ---- helpers ----------------------------------------------------------- */

/* entries[i] of heads[h] / hheads[h] in list order (updater side). */
static struct ent *list_at[2][POOL], *hlist_at[2][POOL];

/* Build heads[h] with keys base..base+len-1 (no checker running). */
static void list_build(int h, int base, int len)
{
	int i;

	sk_list_init(&heads[h]);
	for (i = 0; i < len; i++) {
		list_at[h][i] = ent_new(base + i);
		sk_list_add_tail_rcu(&list_at[h][i]->list, &heads[h]);
	}
}

static void hlist_build(int h, int base, int len)
{
	int i;

	sk_hlist_init_head(&hheads[h]);
	for (i = len - 1; i >= 0; i--) {
		hlist_at[h][i] = ent_new(base + i);
		sk_hlist_add_head_rcu(&hlist_at[h][i]->hnode, &hheads[h]);
	}
}

/* Keys of heads[h] in order into out[]; returns the count (-1: too long). */
static int list_keys(int h, int *out)
{
	struct ent *e;
	int n = 0;

	sk_list_for_each_entry(e, &heads[h], list) {
		if (n >= POOL)
			return -1;
		SK_CHECK_EQ((uintptr_t)e->list.next->prev, (uintptr_t)&e->list);
		out[n++] = e->key;
	}
	return n;
}

static int hlist_keys(int h, int *out)
{
	struct sk_hlist_node *n;
	struct sk_hlist_node **pp = &hheads[h].first;
	int k = 0;

	for (n = hheads[h].first; n; n = n->next) {
		if (k >= POOL)
			return -1;
		SK_CHECK(n->pprev == pp);
		pp = &n->next;
		out[k++] = sk_hlist_entry(n, struct ent, hnode)->key;
	}
	return k;
}

static void check_keys(const int *got, int ngot, const int *want, int nwant,
		       const char *label)
{
	int i, same = ngot == nwant;

	for (i = 0; same && i < ngot; i++)
		same = got[i] == want[i];
	if (!same)
		SK_T_FAIL("%s: final contents differ (%d vs %d entries)",
			  label, ngot, nwant);
}

/*
 * Set up the checker's readers for root: a lookup of every key in
 * [0, nkeys) (must_find for keys in stable) and one iteration that must
 * return every stable key once.
 */
static void add_readers(const void *root, int nkeys, const uint64_t *stable)
{
	int k;

	for (k = 0; k < nkeys; k++)
		sk_chk_add_lookup(&chk, root, k, sk_chk_bit(stable, k));
	sk_chk_add_iter(&chk, root, stable, 1);
}

static void gp_event(void)
{
	/* The updater's own grace period before it frees what it removed. */
	sk_synchronize_rcu();
	SK__LIST_TRACE(GP);
}

static unsigned long expect_clean(const char *label)
{
	unsigned long v = sk_chk_end(&chk);

	ops_checked++;
	if (v)
		SK_T_FAIL("%s: %lu violation(s): %s", label, v, chk.first);
	return v;
}

/* ---- lists ------------------------------------------------------------- */

enum { OP_ADD, OP_ADD_TAIL, OP_DEL, OP_REPLACE, OP_DEL_NO_GP };

static const char *const op_names[] = { "add", "add_tail", "del", "replace",
					"del+free without a grace period" };

/*
 * One list operation at position pos (-1: the head) of a list of len
 * entries with keys 0..len-1; the new entry, if any, has key len.
 * Returns the violations found.
 */
static unsigned long list_op(int op, int len, int pos, int expect_ok)
{
	uint64_t stable[SK_CHK_WORDS] = { 0 };
	struct sk_list_head *at;
	struct ent *victim = NULL, *n = NULL;
	int want[POOL], got[POOL], nwant = 0, i;
	char label[128];
	unsigned long v;

	pool_reset();
	list_build(0, 0, len);
	at = pos < 0 ? &heads[0] : &list_at[0][pos]->list;
	for (i = 0; i < len; i++)
		sk_chk_bit_set(stable, i);
	snprintf(label, sizeof(label), "list %s at %d of %d", op_names[op], pos,
		 len);
	if (op == OP_DEL || op == OP_DEL_NO_GP) {
		victim = list_at[0][pos];
		stable[pos / 64] &= ~(1ull << (pos % 64));
	}
	if (op == OP_ADD || op == OP_ADD_TAIL)
		n = ent_new(len);
	if (op == OP_REPLACE) {
		victim = list_at[0][pos];
		n = ent_new(pos);
	}
	/* Expected final order. */
	for (i = -1; i < len; i++) {
		if (i >= 0 && !(victim && i == pos && op != OP_REPLACE))
			want[nwant++] = i;
		if (op == OP_ADD && i == pos)
			want[nwant++] = len;
		if (op == OP_ADD_TAIL && i + 1 == (pos < 0 ? len : pos))
			want[nwant++] = len;
	}

	sk_chk_clear_kinds(&chk);
	add_readers(&heads[0], len + 1, stable);
	sk_chk_begin(&chk, label);
	switch (op) {
	case OP_ADD:
		sk_list_add_rcu(&n->list, at);
		break;
	case OP_ADD_TAIL:
		sk_list_add_tail_rcu(&n->list, at);
		break;
	case OP_DEL:
		sk_list_del_rcu(&victim->list);
		SK_CHECK(victim->list.prev == SK_LIST_POISON_PREV);
		gp_event();
		ent_free(victim);
		break;
	case OP_DEL_NO_GP:
		sk_list_del_rcu(&victim->list);
		ent_free(victim);
		break;
	case OP_REPLACE:
		sk_list_replace_rcu(&victim->list, &n->list);
		SK_CHECK(victim->list.prev == SK_LIST_POISON_PREV);
		gp_event();
		ent_free(victim);
		break;
	}
	if (expect_ok) {
		v = expect_clean(label);
	} else {
		v = sk_chk_end(&chk);
		ops_checked++;
	}
	check_keys(got, list_keys(0, got), want, nwant, label);
	return v;
}

static void list_add_del_replace_at_every_position(void)
{
	int len, pos, op;

	for (len = 0; len <= MAX_LEN; len++) {
		for (pos = -1; pos < len; pos++) {
			list_op(OP_ADD, len, pos, 1);
			list_op(OP_ADD_TAIL, len, pos, 1);
			if (pos >= 0)
				for (op = OP_DEL; op <= OP_REPLACE; op++)
					list_op(op, len, pos, 1);
		}
	}
}

/*
 * A broken twin's runs: the checker prints the first violation only and
 * stops each run at its first; twin_end() checks that every one of the
 * runs configurations caught it, and restores the checker.
 */
static void twin_begin(void)
{
	chk.print_limit = chk.printed + 1;
	chk.stop_on_violation = 1;
}

static void twin_end(int runs, int missed)
{
	fprintf(stderr, "  caught in %d of %d configurations\n", runs - missed,
		runs);
	SK_CHECK_EQ(missed, 0);
	chk.print_limit = chk.printed + 20;
	chk.stop_on_violation = 0;
}

/* Freeing a deleted entry without a grace period MUST be caught. */
static void list_del_free_without_gp_is_caught(void)
{
	int len, pos, missed = 0, runs = 0;

	twin_begin();
	for (len = 1; len <= MAX_LEN; len++)
		for (pos = 0; pos < len; pos++, runs++)
			if (!list_op(OP_DEL_NO_GP, len, pos, 0))
				missed++;
	twin_end(runs, missed);
}

static int sync_calls;

static void count_sync(void)
{
	sync_calls++;
	sk_synchronize_rcu();
}

/*
 * sk_list_splice_init_rcu() performing the same writes without waiting for
 * readers of list between emptying it and linking its last entry into the
 * other list: the deliberately broken variant.
 */
static void sk_list_splice_init_rcu_BROKEN(struct sk_list_head *list,
					   struct sk_list_head *head)
{
	struct sk_list_head *first = list->next, *last = list->prev;
	struct sk_list_head *at = head, *at_next = head->next;

	if (first == list)
		return;
	SK__LIST_PUBLISH(list->next, list);
	list->prev = list;
	/* (no grace period here) */
	last->next = at_next;
	first->prev = at;
	SK__LIST_PUBLISH(at->next, first);
	at_next->prev = last;
}

/* Splice a list of a entries into one of b entries after position pos. */
static unsigned long splice_op(int a, int b, int pos, int broken)
{
	uint64_t stable_b[SK_CHK_WORDS] = { 0 }, none[SK_CHK_WORDS] = { 0 };
	int want[POOL], got[POOL], nwant = 0, i, k;
	struct sk_list_head *at;
	char label[128];
	unsigned long v;

	pool_reset();
	list_build(0, 0, b);       /* destination: keys 0..b-1 */
	list_build(1, 16, a);      /* source: keys 16..16+a-1 */
	at = pos < 0 ? &heads[0] : &list_at[0][pos]->list;
	for (i = 0; i < b; i++)
		sk_chk_bit_set(stable_b, i);
	for (i = -1; i < b; i++) {
		if (i >= 0)
			want[nwant++] = i;
		if (i == pos)
			for (k = 0; k < a; k++)
				want[nwant++] = 16 + k;
	}
	snprintf(label, sizeof(label), "list splice%s of %d entries at %d of %d",
		 broken ? "_BROKEN" : "", a, pos, b);
	sk_chk_clear_kinds(&chk);
	/* Readers of the destination, and of the source (which empties). */
	add_readers(&heads[0], 16 + a, stable_b);
	for (k = 16; k < 16 + a; k++)
		sk_chk_add_lookup(&chk, &heads[1], k, 0);
	sk_chk_add_iter(&chk, &heads[1], none, 1);
	sync_calls = 0;
	sk_chk_begin(&chk, label);
	if (broken)
		sk_list_splice_init_rcu_BROKEN(&heads[1], at);
	else
		sk_list_splice_init_rcu(&heads[1], at, count_sync);
	if (!broken) {
		v = expect_clean(label);
		SK_CHECK_EQ(sync_calls, a ? 1 : 0);
	} else {
		v = sk_chk_end(&chk);
		ops_checked++;
	}
	check_keys(got, list_keys(0, got), want, nwant, label);
	SK_CHECK(sk_list_empty(&heads[1]));
	SK_CHECK(heads[1].prev == &heads[1]);
	return v;
}

static void list_splice_init_rcu_at_every_position(void)
{
	int a, b, pos;

	for (a = 0; a <= MAX_LEN; a++)
		for (b = 0; b <= MAX_LEN; b++)
			for (pos = -1; pos < b; pos++)
				splice_op(a, b, pos, 0);
}

/* Splice without its grace period MUST be caught whenever it moves entries. */
static void list_splice_without_gp_is_caught(void)
{
	int a, b, pos, runs = 0, missed = 0;

	twin_begin();
	for (a = 0; a <= MAX_LEN; a++)
		for (b = 0; b <= MAX_LEN; b++)
			for (pos = -1; pos < b; pos++) {
				unsigned long v = splice_op(a, b, pos, 1);

				if (a == 0) {
					SK_CHECK_EQ(v, 0); /* nothing moves */
					continue;
				}
				runs++;
				if (!v)
					missed++;
			}
	twin_end(runs, missed);
}

/*
 * Apply operation op to the live entry with key (if still there) of
 * heads[0]: an entry with key *next_key (then incremented) added after it
 * (or at the head), or it deleted or replaced (into gone[*ngone]).
 */
static void seq_apply(int op, int key, int *next_key, struct ent **gone,
		      int *ngone)
{
	struct ent *e = NULL, *x;

	sk_list_for_each_entry(x, &heads[0], list)
		if (x->key == key)
			e = x;
	switch (op) {
	case OP_ADD:
	case OP_ADD_TAIL:
		x = ent_new((*next_key)++);
		if (op == OP_ADD)
			sk_list_add_rcu(&x->list, e ? &e->list : &heads[0]);
		else
			sk_list_add_tail_rcu(&x->list, e ? &e->list : &heads[0]);
		break;
	case OP_DEL:
		if (!e)
			break;
		sk_list_del_rcu(&e->list);
		gone[(*ngone)++] = e;
		break;
	case OP_REPLACE:
		if (!e)
			break;
		x = ent_new(e->key);
		sk_list_replace_rcu(&e->list, &x->list);
		gone[(*ngone)++] = e;
		break;
	}
}

/* A kind of list for random_sequences(): its operations and head 0. */
struct seq_kind {
	const char *name;
	int nops;	  /* operations 0..nops-1 to pick from */
	int del;	  /* the one that deletes its key */
	const void *root; /* head 0 */
	void (*build)(int h, int base, int len);
	/* Operation op on the entry with key (see seq_apply()). */
	void (*apply)(int op, int key, int *next_key, struct ent **gone,
		      int *ngone);
	int (*keys)(int h, int *out);
};

/*
 * Random sequences of adds, deletes and replaces with no grace period in
 * between; the deleted and replaced entries are freed after one grace
 * period at the end.  Keys untouched by the whole sequence must stay
 * visible to every reader, however it is paused, and on the list exactly
 * once at the end.
 */
static void random_sequences(const struct seq_kind *k, uint64_t salt)
{
	uint64_t rng = sk_t_seed ^ salt;
	int round, rounds = 400 / (int)sk_test_slow();

	for (round = 0; round < rounds; round++) {
		uint64_t stable[SK_CHK_WORDS] = { 0 };
		struct ent *gone[POOL];
		int len = (int)(sk_test_rand(&rng) % (MAX_LEN + 1));
		int nops = 1 + (int)(sk_test_rand(&rng) % 6), ngone = 0;
		int next_key = len, i, j, op[8], key[8], got[POOL], ngot, cnt;
		char label[64];

		pool_reset();
		k->build(0, 0, len);
		for (i = 0; i < len; i++)
			sk_chk_bit_set(stable, i);
		/* Pick the operations first to know the untouched keys. */
		for (i = 0; i < nops; i++) {
			op[i] = (int)(sk_test_rand(&rng) % (uint64_t)k->nops);
			key[i] = len ? (int)(sk_test_rand(&rng) % (uint64_t)len)
				     : -1;
			/* A replaced key stays visible; a deleted one not. */
			if (key[i] >= 0 && op[i] == k->del)
				stable[key[i] / 64] &= ~(1ull << (key[i] % 64));
		}
		snprintf(label, sizeof(label), "%s sequence %d", k->name,
			 round);
		sk_chk_clear_kinds(&chk);
		add_readers(k->root, len + nops, stable);
		sk_chk_begin(&chk, label);
		for (i = 0; i < nops; i++)
			k->apply(op[i], key[i], &next_key, gone, &ngone);
		gp_event();
		for (j = 0; j < ngone; j++)
			ent_free(gone[j]);
		expect_clean(label);
		/* Every stable key is still there exactly once. */
		ngot = k->keys(0, got);
		SK_CHECK(ngot >= 0);
		for (i = 0; i < len; i++) {
			if (!sk_chk_bit(stable, i))
				continue;
			for (cnt = 0, j = 0; j < ngot; j++)
				cnt += got[j] == i;
			SK_CHECK_EQ(cnt, 1);
		}
	}
}

static const struct seq_kind list_seq = {
	"list", OP_REPLACE + 1, OP_DEL, &heads[0], list_build, seq_apply,
	list_keys,
};

static void list_random_sequences_without_gp(void)
{
	random_sequences(&list_seq, 0x1157);
}

/* ---- hlists ------------------------------------------------------------ */

enum { H_ADD_HEAD, H_ADD_BEFORE, H_ADD_BEHIND, H_DEL, H_REPLACE };

static const char *const hop_names[] = { "add_head", "add_before",
					 "add_behind", "del", "replace" };

static void hlist_op(int op, int len, int pos)
{
	uint64_t stable[SK_CHK_WORDS] = { 0 };
	int want[POOL], got[POOL], nwant = 0, i;
	struct ent *victim = NULL, *n = NULL;
	char label[128];

	pool_reset();
	hlist_build(0, 0, len);
	for (i = 0; i < len; i++)
		sk_chk_bit_set(stable, i);
	if (op == H_DEL) {
		victim = hlist_at[0][pos];
		stable[pos / 64] &= ~(1ull << (pos % 64));
	} else if (op == H_REPLACE) {
		victim = hlist_at[0][pos];
		n = ent_new(pos);
	} else {
		n = ent_new(len);
	}
	if (op == H_ADD_HEAD)
		want[nwant++] = len;
	for (i = 0; i < len; i++) {
		if (op == H_ADD_BEFORE && i == pos)
			want[nwant++] = len;
		if (!(op == H_DEL && i == pos))
			want[nwant++] = i;
		if (op == H_ADD_BEHIND && i == pos)
			want[nwant++] = len;
	}
	snprintf(label, sizeof(label), "hlist %s at %d of %d", hop_names[op],
		 pos, len);
	sk_chk_clear_kinds(&chk);
	add_readers(&hheads[0], len + 1, stable);
	sk_chk_begin(&chk, label);
	switch (op) {
	case H_ADD_HEAD:
		sk_hlist_add_head_rcu(&n->hnode, &hheads[0]);
		break;
	case H_ADD_BEFORE:
		sk_hlist_add_before_rcu(&n->hnode, &hlist_at[0][pos]->hnode);
		break;
	case H_ADD_BEHIND:
		sk_hlist_add_behind_rcu(&n->hnode, &hlist_at[0][pos]->hnode);
		break;
	case H_DEL:
		sk_hlist_del_rcu(&victim->hnode);
		SK_CHECK(sk_hlist_unhashed(&victim->hnode));
		gp_event();
		ent_free(victim);
		break;
	case H_REPLACE:
		sk_hlist_replace_rcu(&victim->hnode, &n->hnode);
		SK_CHECK(sk_hlist_unhashed(&victim->hnode));
		gp_event();
		ent_free(victim);
		break;
	}
	expect_clean(label);
	check_keys(got, hlist_keys(0, got), want, nwant, label);
}

static void hlist_ops_at_every_position(void)
{
	int len, pos;

	for (len = 0; len <= MAX_LEN; len++) {
		hlist_op(H_ADD_HEAD, len, -1);
		for (pos = 0; pos < len; pos++) {
			hlist_op(H_ADD_BEFORE, len, pos);
			hlist_op(H_ADD_BEHIND, len, pos);
			hlist_op(H_DEL, len, pos);
			hlist_op(H_REPLACE, len, pos);
		}
	}
}

/* As seq_apply(), on hheads[0]. */
static void hlist_seq_apply(int op, int key, int *next_key, struct ent **gone,
			    int *ngone)
{
	struct sk_hlist_node *p;
	struct ent *e = NULL, *x;

	for (p = hheads[0].first; p; p = p->next)
		if (sk_hlist_entry(p, struct ent, hnode)->key == key)
			e = sk_hlist_entry(p, struct ent, hnode);
	if (op >= H_ADD_BEFORE && !e)
		return;
	switch (op) {
	case H_ADD_HEAD:
		x = ent_new((*next_key)++);
		sk_hlist_add_head_rcu(&x->hnode, &hheads[0]);
		break;
	case H_ADD_BEFORE:
		x = ent_new((*next_key)++);
		sk_hlist_add_before_rcu(&x->hnode, &e->hnode);
		break;
	case H_ADD_BEHIND:
		x = ent_new((*next_key)++);
		sk_hlist_add_behind_rcu(&x->hnode, &e->hnode);
		break;
	case H_DEL:
		sk_hlist_del_rcu(&e->hnode);
		gone[(*ngone)++] = e;
		break;
	case H_REPLACE:
		x = ent_new(e->key);
		sk_hlist_replace_rcu(&e->hnode, &x->hnode);
		gone[(*ngone)++] = e;
		break;
	}
}

static const struct seq_kind hlist_seq = {
	"hlist", H_REPLACE + 1, H_DEL, &hheads[0], hlist_build,
	hlist_seq_apply, hlist_keys,
};

static void hlist_random_sequences_without_gp(void)
{
	random_sequences(&hlist_seq, 0x4157);
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	sk_chk_init(&chk, &walk_ops, &list_walk);
	SK_RUN(list_add_del_replace_at_every_position);
	SK_RUN(list_splice_init_rcu_at_every_position);
	SK_RUN(list_random_sequences_without_gp);
	sk_chk_print_stats(&chk, "list (correct)");
	memset(&chk.st, 0, sizeof(chk.st));
	chk.violations = 0;
	SK_RUN(list_del_free_without_gp_is_caught);
	SK_RUN(list_splice_without_gp_is_caught);
	sk_chk_print_stats(&chk, "list (broken twins)");
	sk_chk_destroy(&chk);

	sk_chk_init(&chk, &walk_ops, &hlist_walk);
	SK_RUN(hlist_ops_at_every_position);
	SK_RUN(hlist_random_sequences_without_gp);
	sk_chk_print_stats(&chk, "hlist");
	sk_chk_destroy(&chk);
	fprintf(stderr, "%lu operations checked\n", ops_checked);
	return sk_test_report();
}
