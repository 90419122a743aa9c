/* SPDX-License-Identifier: MIT */
/*
 * RCU helpers shared by the test programs of rcu.h: statistics, the
 * grace-period counter, a reader thread that holds one section until
 * released, and a busy reader of a test object.  Include after scalekit/rcu.h.
 */
#ifndef SK_TEST_RCU_H
#define SK_TEST_RCU_H

#include <sched.h>
#include <string.h>

#include "scalekit/rcu.h"
#include "sk_test_util.h"

/* sk_rcu_get_stats(), checked to succeed. */
struct sk_rcu_stats sk_test_rcu_stats(void);

/* The number of registered reader threads (sk_rcu_get_stats()). */
unsigned long sk_test_rcu_readers(void);

/* The grace-period counter: it moves when a grace period starts. */
unsigned long sk_test_gp_ctr(void);

/*
 * Wait until a grace period has started since the counter read c0, or
 * (when or_flag is given) until *or_flag is set: a broken library that
 * returns early starts none, and must fail the test, not hang it.
 */
void sk_test_wait_gp_started(unsigned long c0, int *or_flag);

/*
 * A reader thread that holds one read section (general, or QSBR online)
 * until released, and runs a hook inside it just before leaving.
 */
struct sk_test_holder {
	pthread_t t;
	int qsbr; /* hold as an online QSBR thread */
	void (*inside)(struct sk_test_holder *); /* run inside, then leave */
	void *arg;	  /* for inside() */
	int in, go, left; /* entered, released, leaving */
};

/* Thread body of struct sk_test_holder. */
void *sk_test_holder_main(void *arg);

/*
 * Start h, with the hook inside(h) (may be NULL) and its arg; returns once
 * h is inside its section.
 */
void sk_test_holder_start(struct sk_test_holder *h, int qsbr,
			  void (*inside)(struct sk_test_holder *),
			  void *arg);

/* Let h leave its section and join it. */
void sk_test_holder_release(struct sk_test_holder *h);

/*
 * An unregistered thread that calls sk_synchronize_rcu() once, for tests
 * that check whether a grace period returns while a section is open.
 */
struct sk_test_syncer {
	pthread_t t;
	int done; /* sk_synchronize_rcu() returned */
};

void sk_test_syncer_start(struct sk_test_syncer *s);

/* 1 if the syncer's call returned within ms milliseconds (polled). */
int sk_test_syncer_returned_within(struct sk_test_syncer *s, int ms);

/* Join the syncer (its call returns once the sections are released). */
void sk_test_syncer_join(struct sk_test_syncer *s);

/* An RCU-protected test object: val is the test's magic while it is live. */
struct sk_test_robj {
	unsigned long val;
	struct sk_test_robj *next; /* the test's own list (a graveyard) */
};

/* A new object with val = magic, next = NULL; aborts when out of memory. */
struct sk_test_robj *sk_test_robj_new(unsigned long magic);

/*
 * A busy general reader (sk_test_busy_reader(b), as a thread body): until
 * b->stop, sections of a few hundred nanoseconds that load the val of the
 * object b->ptr twice; a section that sees a val other than b->magic
 * counts in b->bad; b->reads counts the sections in steps of 1024.
 */
struct sk_test_busy {
	struct sk_test_robj *ptr; /* RCU-protected */
	unsigned long magic;
	int stop;
	unsigned long reads, bad;
};

void *sk_test_busy_reader(void *arg);

struct sk_tort_ops;

/*
 * Wait for a full grace period of ops (tools/torture_ops.h: the RCU ops,
 * or their busted twin, which waits for nothing) in one of four ways:
 * 0 synchronize, 1 expedited, 2 cond on a fresh cookie, 3 start a poll
 * and spin on it.
 */
void sk_test_sync_by(const struct sk_tort_ops *ops, int kind);

#endif /* SK_TEST_RCU_H */
