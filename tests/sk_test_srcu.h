/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the SRCU test programs (tests/test_srcu_*.c): flags,
 * domains on the heap, a gate, reader and synchronize threads that stay
 * put until told, a counting callback, polling without a time bound, and
 * the generation checker of concurrent grace periods.  Defined in
 * tests/support/sk_test_srcu.c, which is white box: poll_wait() reads the
 * private state of a domain (src/internal/srcu.h).
 */
#ifndef SK_TEST_SRCU_H
#define SK_TEST_SRCU_H

#include <pthread.h>
#include <stdint.h>

#include "scalekit/rcu.h"
#include "scalekit/srcu.h"
#include "torture_ops.h"

/* *f, loaded with acquire; pairs with flag_set(). */
int flag_get(int *f);

/* Set *f to 1 with release: what the caller did before is seen by flag_get(). */
void flag_set(int *f);

/* Wait (unbounded: a hang fails by the CTest timeout) until *f is set. */
void flag_wait(int *f);

/* A domain on the heap (cache-line aligned), initialized; exit(2) without memory. */
struct sk_srcu *domain_new(void);

/* Clean up (checked to return 0) and free a domain_new() domain. */
void domain_free(struct sk_srcu *d);

/* Process CPU time (all threads), in microseconds. */
long cpu_us(void);

/* A door that threads wait at until it opens (condition variable). */
struct gate {
	pthread_mutex_t m;
	pthread_cond_t c;
	int open;
};

/* Closed; gate_wait() blocks until gate_open(), which lets every waiter pass. */
void gate_init(struct gate *g);
void gate_wait(struct gate *g);
void gate_open(struct gate *g);

/*
 * A reader that enters a section of d and stays there, blocked on a
 * condition variable, until holder_finish().  Just before it leaves it
 * samples *watch (when set) into watched: what its section saw last.
 */
struct holder {
	struct sk_srcu *d;
	struct gate release;
	pthread_t tid;
	int in;	 /* inside the section */
	int out; /* about to unlock */
	int *watch;
	int watched;
};

/* Start h in a section of d and return once it is inside. */
void holder_start(struct holder *h, struct sk_srcu *d, int *watch);

/* Let h leave its section and join it. */
void holder_finish(struct holder *h);

/* A thread that runs one synchronize variant on d and records its return. */
struct syncer {
	struct sk_srcu *d;
	int expedited;
	int ready; /* about to call */
	int done;  /* returned */
	pthread_t tid;
};

/* Start s on d; returns just before s calls the synchronize. */
void syncer_start(struct syncer *s, struct sk_srcu *d, int expedited);

/* A callback that counts its runs. */
struct counted {
	struct sk_rcu_head rh;
	int runs;
	int sample; /* *watch when it ran */
	int *watch;
};

/* The callback of struct counted: sample *watch, count the run (acq_rel). */
void counted_cb(struct sk_rcu_head *h);

/*
 * sk_srcu_barrier(), then wait until the callback has run (unbounded).
 * The barrier's own promise is checked by the barrier_* tests; elsewhere
 * only the callback's runs are asserted, and nothing is left to run on a
 * dead stack frame if the barrier returns early.
 */
void barrier_settle(struct sk_srcu *d, struct counted *c);

/*
 * Wait for a polled cookie by polling only.  A request the library dropped
 * would never complete; it is recognized without a time bound: once
 * start_poll returned, the domain must stay on the worker's list
 * (d->state->in_work, private) until the cookie completes, and the worker unlists
 * it only after seeing no pending poll (so a completion it saw is visible
 * here through in_work).  Exact when one thread polls the domain; with
 * concurrent callers it may count a request another caller rescued.  A
 * dropped request is counted in *lost and re-issued so the test goes on.
 */
void poll_wait(struct sk_srcu *d, unsigned long cookie,
	       unsigned long *lost);

/*
 * Readers record, inside each section, the generation they read; every
 * updater bumps the generation to g0 + 1 and then waits.  A section that
 * read a generation <= g0 began before the wait and must have ended when
 * it returns: the updater then may not see it still open.  The domain is
 * an instance of an SRCU torture ops (tools/torture_ops.h): the readers
 * and the updaters' waits go through ops, so a checker runs as well on
 * the ops' busted twin, which it must catch.
 */
#define GEN_READERS 4

struct gen_dom {
	const struct sk_tort_ops *ops; /* sk_tort_srcu_ops or its twin */
	void *ctx;		       /* the instance: one domain */
	unsigned long gen __attribute__((aligned(SK_CACHELINE)));
	struct {
		unsigned long v; /* 2 * generation + 1 inside, else 0 */
	} rec[GEN_READERS] __attribute__((aligned(SK_CACHELINE)));
	unsigned long violations; /* atomic */
	unsigned long checks;	  /* atomic */
	unsigned long sections;	  /* atomic: sections ended */
};

/*
 * Zero g and give it a new instance of ops (NULL: sk_tort_srcu_ops);
 * fails the test when its init() fails.
 */
void gen_dom_init(struct gen_dom *g, const struct sk_tort_ops *ops);

/* Clean up g's instance (checked to return 0: no section still open). */
void gen_dom_fini(struct gen_dom *g);

/* One section of reader r in g; sleeps up to sleep_us inside. */
void gen_section(struct gen_dom *g, int r, uint64_t *rng,
		 unsigned int sleep_us_max);

/* Wait until the readers of g have ended n sections (they are running). */
void gen_wait_readers(struct gen_dom *g, unsigned long n);

/* Start of an update: the generation the grace period must cover. */
unsigned long gen_begin(struct gen_dom *g);

/* After the grace period: no section that read <= g0 is still open. */
void gen_check(struct gen_dom *g, unsigned long g0);

/*
 * The test_srcu_* programs' seed (sk_test_seed_init()) and slow-down
 * factor (sk_test_slow(): 1, or 8 under sanitizers), set by
 * sk_test_srcu_start(), which their main() calls first (after
 * sk_test_args()).
 */
extern uint64_t sk_tsrcu_seed;
extern unsigned int sk_tsrcu_slow;
void sk_test_srcu_start(int argc, char **argv);

#endif /* SK_TEST_SRCU_H */
