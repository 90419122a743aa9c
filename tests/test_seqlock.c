/* SPDX-License-Identifier: MIT */
/*
 * test_seqlock.c - the sequence lock with real threads.
 *
 * Writers exclude each other (a non-atomic counter ends exact), readers
 * that retry never accept a torn snapshot, both sides progress, the
 * count is odd exactly inside a write section, destroy refuses a held
 * lock and an unheld unlock is reported.  Broken twin: a reader that
 * skips the retry check must see torn snapshots.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "scalekit/seqlock.h"
#include "sk_test.h"
#include "sk_test_locks.h"
#include "sk_test_util.h"

static struct sk_seqlock seq_a = SK_SEQLOCK_INITIALIZER;

/* ops: sk_tort_lock_seqlock, or its twin (one attempt, no retry check). */
static struct lk_spec sl_spec(const struct sk_tort_lock_ops *ops)
{
	struct lk_spec s = { ops, &seq_a, 0, 3, 2, 2000 / sk_test_slow(),
			     60.0 };
	return s;
}

static void count_is_odd_inside_a_write_section(void)
{
	struct sk_seqlock l = SK_SEQLOCK_INITIALIZER;
	unsigned int s = sk_seqlock_read_begin(&l);

	SK_CHECK_EQ(s, 0);
	SK_CHECK_EQ(sk_seqlock_read_retry(&l, s), 0);
	sk_seqlock_write_lock(&l);
	SK_CHECK_EQ(l.seq & 1, 1);
	SK_CHECK_EQ(sk_seqlock_destroy(&l), -EBUSY);
	sk_seqlock_write_unlock(&l);
	SK_CHECK_EQ(l.seq, 2);
	SK_CHECK_EQ(sk_seqlock_read_retry(&l, s), 1);
	SK_CHECK_EQ(sk_seqlock_destroy(&l), 0);
	sk_seqlock_init(&l);
	SK_CHECK_EQ(l.seq, 0);
}

static void writers_exclude_and_readers_see_no_torn_snapshot(void)
{
	lk_check_clean(sl_spec(&sk_tort_lock_seqlock));
}

/* Many writers, one reader: the writer lock's futex path is exercised. */
static void contended_writers_sleep_and_wake(void)
{
	struct lk_spec s = sl_spec(&sk_tort_lock_seqlock);

	s.writers = 6;
	s.readers = 1;
	lk_check_clean(s);
}

static void reader_without_retry_twin_is_caught(void)
{
	lk_check_twin_caught(sl_spec(sk_tort_lock_seqlock.broken));
}

static void unlock_unheld(void)
{
	struct sk_seqlock l = SK_SEQLOCK_INITIALIZER;

	sk_seqlock_write_unlock(&l);
}

static void misuse_is_reported(void)
{
	lk_check_aborts(unlock_unheld, "sk_seqlock_write_unlock",
			"not held for writing");
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	/* Forks first, while the process is single-threaded (TSan). */
	SK_RUN(misuse_is_reported);
	lk_arm_alarm(240);
	SK_RUN(count_is_odd_inside_a_write_section);
	SK_RUN(writers_exclude_and_readers_see_no_torn_snapshot);
	SK_RUN(contended_writers_sleep_and_wake);
	SK_RUN(reader_without_retry_twin_is_caught);
	return sk_test_report();
}
