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
 *	sk_chk_begin(&c, "label");  hooks sk__rcu_checker_hook
 *	  ... the operation: SK__LIST_PUBLISH / GP hooks call sk_chk_event() ...
 *	sk_chk_end(&c);		    the final state; unhooks
 *	c.violations, c.st.*
 *	sk_chk_destroy(&c);
 *
 * The hook runs in the updater thread, possibly with the structure's locks
 * held: the ops only load pointers, never lock and never call RCU.
 * Defined in tests/support/rcu_checker.c (the test support library);
 * only programs that link the testing build of the library call it.
 */
#ifndef SK_RCU_CHECKER_TESTS_H
#define SK_RCU_CHECKER_TESTS_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/testing.h" /* sk__rcu_checker_hook, SK__RCU_CHECK_* */
#include "scalekit/list.h"

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

void sk_chk_init(struct sk_chk *c, const struct sk_chk_ops *ops,
		 void *arg);

void sk_chk_destroy(struct sk_chk *c);

/* Forget the kinds (keep statistics and buffers). */
void sk_chk_clear_kinds(struct sk_chk *c);

void sk_chk_add_lookup(struct sk_chk *c, const void *root,
		       int key, int must_find);

void sk_chk_add_iter(struct sk_chk *c, const void *root,
		     const uint64_t *must_see, int no_dups);

void sk_chk_bit_set(uint64_t *set, int key);

int sk_chk_bit(const uint64_t *set, int key);

/* One hook event: the state after a publication or a grace period. */
void sk_chk_event(struct sk_chk *c, int ev);

void sk_chk_hook(int ev);

/*
 * Start a checked operation: the kinds are set; readers that began before
 * it are in flight at every position of their walks in the current state.
 */
void sk_chk_begin(struct sk_chk *c, const char *label);

/* End it: in-flight and fresh readers run in the final state. */
unsigned long sk_chk_end(struct sk_chk *c);

void sk_chk_print_stats(const struct sk_chk *c, const char *what);

#endif /* SK_RCU_CHECKER_TESTS_H */
