/* SPDX-License-Identifier: MIT */
/*
 * The elided rwlock's real (fallback) lock under oversubscription: more
 * reader threads than CPUs, whose read sections overlap (each reader
 * yields the CPU while it holds the lock, so that some reader is nearly
 * always inside), and one writer.  Checks mutual exclusion (no reader
 * inside while the writer is, and the reverse) and the writers' fairness
 * the header promises: a writer waits only for the readers already inside
 * when it sets its bit, so it gets in while the readers keep coming.  The
 * criterion counts, not times: the writer must finish its sections before
 * the readers, all together, have taken the lock RW_BUDGET times.
 *
 * The broken twin (sk__elide_rw_test_busted(), the testing build): a
 * writer that never stops new readers takes the lock only at a moment
 * with no reader inside, and the overlapping readers starve it; the same
 * run must report it.  Linked with scalekit_testing (tests/testing.cmake).
 */
#define _GNU_SOURCE
#include <sched.h>

#include "scalekit/elide.h"
#include "sk_test.h"
#include "sk_test_util.h"
#include "../src/internal/testing.h"

#define RW_READERS 4	 /* with the writer: 5 threads on 2 CPUs here */
#define RW_WRITES  50	 /* the writer's sections */
#define RW_BUDGET  500000ul /* reader acquisitions: the writer must be done */

struct rw_fair {
	struct sk_elided_rwlock rw;
	unsigned long acquired;	/* reader acquisitions (atomic) */
	int inside;		/* readers inside now (atomic) */
	int writer_in;		/* the writer is inside (atomic) */
	int stop;		/* the writer is done, or the budget spent */
	unsigned long errors;	/* mutual exclusion broken (atomic) */
	unsigned long writes;	/* sections the writer completed in time */
	unsigned long worst;	/* most reader acquisitions during one
				 * write_lock() call */
};

static void *rw_reader(void *arg)
{
	struct rw_fair *f = arg;

	while (!__atomic_load_n(&f->stop, __ATOMIC_RELAXED)) {
		sk_elided_rwlock_read_lock(&f->rw);
		__atomic_fetch_add(&f->inside, 1, __ATOMIC_RELAXED);
		if (__atomic_load_n(&f->writer_in, __ATOMIC_RELAXED))
			__atomic_fetch_add(&f->errors, 1, __ATOMIC_RELAXED);
		if (__atomic_add_fetch(&f->acquired, 1, __ATOMIC_RELAXED) >=
		    RW_BUDGET)
			__atomic_store_n(&f->stop, 1, __ATOMIC_RELAXED);
		sched_yield(); /* hold the lock while another reader runs */
		if (__atomic_load_n(&f->writer_in, __ATOMIC_RELAXED))
			__atomic_fetch_add(&f->errors, 1, __ATOMIC_RELAXED);
		__atomic_fetch_sub(&f->inside, 1, __ATOMIC_RELAXED);
		sk_elided_rwlock_read_unlock(&f->rw);
	}
	return NULL;
}

static void *rw_writer(void *arg)
{
	struct rw_fair *f = arg;
	unsigned long before, during;
	int i;

	for (i = 0; i < RW_WRITES; i++) {
		/* Come while the readers overlap: let them take it a while. */
		before = __atomic_load_n(&f->acquired, __ATOMIC_RELAXED);
		while (__atomic_load_n(&f->acquired, __ATOMIC_RELAXED) -
			       before < 4 * RW_READERS &&
		       !__atomic_load_n(&f->stop, __ATOMIC_RELAXED))
			sched_yield();
		before = __atomic_load_n(&f->acquired, __ATOMIC_RELAXED);
		sk_elided_rwlock_write_lock(&f->rw);
		during = __atomic_load_n(&f->acquired, __ATOMIC_RELAXED) -
			 before;
		if (during > f->worst)
			f->worst = during;
		/* The budget ran out while we waited: starved. */
		if (__atomic_load_n(&f->stop, __ATOMIC_RELAXED)) {
			sk_elided_rwlock_write_unlock(&f->rw);
			break;
		}
		if (__atomic_load_n(&f->inside, __ATOMIC_RELAXED))
			__atomic_fetch_add(&f->errors, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&f->writer_in, 1, __ATOMIC_RELAXED);
		sched_yield(); /* readers arrive and find the writer */
		if (__atomic_load_n(&f->inside, __ATOMIC_RELAXED))
			__atomic_fetch_add(&f->errors, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&f->writer_in, 0, __ATOMIC_RELAXED);
		sk_elided_rwlock_write_unlock(&f->rw);
		f->writes++;
	}
	__atomic_store_n(&f->stop, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* One run; busted: the library's twin.  The result is in *f. */
static void rw_fair_run(struct rw_fair *f, int busted)
{
	pthread_t th[RW_READERS + 1];
	int i;

	memset(f, 0, sizeof(*f));
	sk_elided_rwlock_init(&f->rw);
	sk__elide_rw_test_busted(busted);
	for (i = 0; i < RW_READERS; i++)
		sk_test_thread_start(&th[i], rw_reader, f);
	sk_test_thread_start(&th[RW_READERS], rw_writer, f);
	for (i = 0; i <= RW_READERS; i++)
		sk_test_thread_join(th[i]);
	sk__elide_rw_test_busted(0);
	fprintf(stderr, "    %s: %lu of %d writes before the readers' %lu "
			"acquisitions (%lu taken), at most %lu during one "
			"write_lock(); %lu exclusion errors\n",
		busted ? "twin" : "lock", f->writes, RW_WRITES, RW_BUDGET,
		f->acquired, f->worst, f->errors);
	SK_CHECK_EQ(sk_elided_rwlock_destroy(&f->rw), 0);
}

static void writer_gets_in_while_readers_overlap(void)
{
	struct rw_fair f;

	SK_CHECK_EQ(sk_elide_set_policy(SK_ELIDE_OFF), 0);
	rw_fair_run(&f, 0);
	SK_CHECK_EQ(f.errors, 0ul);
	SK_CHECK_EQ(f.writes, (unsigned long)RW_WRITES);
	SK_CHECK_EQ(sk_elide_set_policy(SK_ELIDE_AUTO), 0);
}

/* The twin's writer starves: the run must say so (exclusion still holds). */
static void twin_reader_preferring_writer_is_caught(void)
{
	struct rw_fair f;

	SK_CHECK_EQ(sk_elide_set_policy(SK_ELIDE_OFF), 0);
	rw_fair_run(&f, 1);
	SK_CHECK_EQ(f.errors, 0ul);
	SK_CHECK(f.writes < (unsigned long)RW_WRITES);
	SK_CHECK_EQ(sk_elide_set_policy(SK_ELIDE_AUTO), 0);
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	SK_RUN(writer_gets_in_while_readers_overlap);
	SK_RUN(twin_reader_preferring_writer_is_caught);
	return sk_test_report();
}
