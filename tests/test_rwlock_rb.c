/* SPDX-License-Identifier: MIT */
/*
 * test_rwlock_rb.c - the read-biased reader-writer lock with real threads.
 *
 * Mutual exclusion of writers (a non-atomic counter ends exact), readers
 * never see a torn snapshot while writers write, both sides progress,
 * the bias is revoked by a writer and comes back, trylock answers, and
 * misuse is reported.  Broken twin: with the test hook of the
 * scalekit_testing build, writers revoke the bias but do not wait for the
 * readers announced in the table; the torn-snapshot checker must catch
 * readers inside a write section.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "internal/testing.h" /* the testing build: tests/testing.cmake */
#include "scalekit/rwlock_rb.h"
#include "sk_test.h"
#include "sk_test_locks.h"
#include "sk_test_util.h"

static struct sk_rwlock_rb lock_a = SK_RWLOCK_RB_INITIALIZER;

/* try: readers and writers take the lock with the trylocks. */
static struct lk_spec rb_spec(int try)
{
	struct lk_spec s = { &sk_tort_lock_rwlock_rb, &lock_a, try, 3, 2,
			     2000 / sk_test_slow(), 60.0 };
	return s;
}

static void static_initializer_is_unlocked_and_biased(void)
{
	struct sk_rwlock_rb l = SK_RWLOCK_RB_INITIALIZER, m;

	SK_CHECK_EQ(sk_rwlock_rb_is_biased(&l), 1);
	SK_CHECK_EQ(sk_rwlock_rb_write_trylock(&l), 0);
	sk_rwlock_rb_write_unlock(&l);
	sk_rwlock_rb_init(&m);
	SK_CHECK_EQ(sk_rwlock_rb_is_biased(&m), 1);
	SK_CHECK_EQ(sk_rwlock_rb_destroy(&m), 0);
	SK_CHECK_EQ(sizeof(struct sk_rwlock_rb), 24);
}

static void writers_exclude_and_readers_see_no_torn_snapshot(void)
{
	lk_check_clean(rb_spec(0));
}

static void trylock_users_exclude_too(void)
{
	struct lk_spec s = rb_spec(1);

	s.writes_each /= 8;
	lk_check_clean(s);
}

/* With the bias off (a writer just ran), readers use the underlying lock. */
static void writer_revokes_bias_and_it_comes_back(void)
{
	struct sk_rwlock_rb l = SK_RWLOCK_RB_INITIALIZER;
	double end;

	sk_rwlock_rb_write_lock(&l);
	SK_CHECK_EQ(sk_rwlock_rb_is_biased(&l), 0);
	sk_rwlock_rb_write_unlock(&l);
	/* Slow-path readers turn it on again once the delay passed. */
	end = sk_test_now() + 10;
	while (!sk_rwlock_rb_is_biased(&l) && sk_test_now() < end) {
		sk_rwlock_rb_read_lock(&l);
		sk_rwlock_rb_read_unlock(&l);
	}
	SK_CHECK_EQ(sk_rwlock_rb_is_biased(&l), 1);
	SK_CHECK_EQ(sk_rwlock_rb_destroy(&l), 0);
}

static struct sk_rwlock_rb try_l = SK_RWLOCK_RB_INITIALIZER;
static int try_got; /* what another thread's trylock returned */

/* A trylock and its unlock, tried on try_l from another thread. */
struct try_op {
	int (*trylock)(struct sk_rwlock_rb *l);
	void (*unlock)(struct sk_rwlock_rb *l);
};

static struct try_op try_rd = { sk_rwlock_rb_read_trylock,
				sk_rwlock_rb_read_unlock };
static struct try_op try_wr = { sk_rwlock_rb_write_trylock,
				sk_rwlock_rb_write_unlock };

static void *try_thread(void *arg)
{
	struct try_op *op = (struct try_op *)arg;

	try_got = op->trylock(&try_l);
	if (try_got == 0)
		op->unlock(&try_l);
	return NULL;
}

static int try_from_thread(struct try_op *op)
{
	pthread_t t;

	sk_test_thread_start(&t, try_thread, op);
	sk_test_thread_join(t);
	return try_got;
}

static void trylock_semantics(void)
{
	/* A biased reader (in the table) keeps writers out, not readers. */
	sk_rwlock_rb_read_lock(&try_l);
	SK_CHECK_EQ(sk_rwlock_rb_is_biased(&try_l), 1);
	SK_CHECK_EQ(try_from_thread(&try_wr), -EBUSY);
	SK_CHECK_EQ(sk_rwlock_rb_is_biased(&try_l), 1); /* given back */
	SK_CHECK_EQ(try_from_thread(&try_rd), 0);
	SK_CHECK_EQ(sk_rwlock_rb_destroy(&try_l), -EBUSY);
	sk_rwlock_rb_read_unlock(&try_l);
	/* A writer keeps both out. */
	SK_CHECK_EQ(sk_rwlock_rb_write_trylock(&try_l), 0);
	SK_CHECK_EQ(try_from_thread(&try_wr), -EBUSY);
	SK_CHECK_EQ(try_from_thread(&try_rd), -EBUSY);
	SK_CHECK_EQ(sk_rwlock_rb_destroy(&try_l), -EBUSY);
	sk_rwlock_rb_write_unlock(&try_l);
	/* The writer revoked the bias: this reader takes the real lock. */
	SK_CHECK_EQ(sk_rwlock_rb_is_biased(&try_l), 0);
	sk_rwlock_rb_read_lock(&try_l);
	SK_CHECK_EQ(try_from_thread(&try_wr), -EBUSY);
	SK_CHECK_EQ(try_from_thread(&try_rd), 0);
	sk_rwlock_rb_read_unlock(&try_l);
	SK_CHECK_EQ(try_from_thread(&try_wr), 0);
	SK_CHECK_EQ(sk_rwlock_rb_destroy(&try_l), 0);
}

/* Two locks on one thread: each acquisition is released on its own. */
static void nested_different_locks(void)
{
	struct sk_rwlock_rb a = SK_RWLOCK_RB_INITIALIZER;
	struct sk_rwlock_rb b = SK_RWLOCK_RB_INITIALIZER;

	sk_rwlock_rb_read_lock(&a);
	sk_rwlock_rb_read_lock(&b);
	sk_rwlock_rb_read_unlock(&a);
	SK_CHECK_EQ(sk_rwlock_rb_destroy(&a), 0);
	SK_CHECK_EQ(sk_rwlock_rb_destroy(&b), -EBUSY);
	sk_rwlock_rb_read_unlock(&b);
	SK_CHECK_EQ(sk_rwlock_rb_destroy(&b), 0);
}

static void read_unlock_unheld(void)
{
	struct sk_rwlock_rb l = SK_RWLOCK_RB_INITIALIZER;

	sk_rwlock_rb_read_unlock(&l);
}

static void write_unlock_unheld(void)
{
	struct sk_rwlock_rb l = SK_RWLOCK_RB_INITIALIZER;

	sk_rwlock_rb_write_unlock(&l);
}

static void misuse_is_reported(void)
{
	lk_check_aborts(read_unlock_unheld, "sk_rwlock_rb_read_unlock",
			"not held for reading");
	lk_check_aborts(write_unlock_unheld, "sk_rwlock_rb_write_unlock",
			"not held for writing");
}

/* Broken twin: writers that do not wait for announced readers. */
static void busted_writer_twin_is_caught(void)
{
	sk__rwlock_rb_test_busted(1);
	lk_check_twin_caught(rb_spec(0));
	sk__rwlock_rb_test_busted(0);
}

/* The table's twin (tools/torture_lock_ops.c): readers that take no lock. */
static void reader_without_lock_twin_is_caught(void)
{
	struct lk_spec s = rb_spec(0);

	s.ops = sk_tort_lock_rwlock_rb.broken;
	lk_check_twin_caught(s);
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	/* Forks first, while the process is single-threaded (TSan). */
	SK_RUN(misuse_is_reported);
	lk_arm_alarm(240);
	SK_RUN(static_initializer_is_unlocked_and_biased);
	SK_RUN(trylock_semantics);
	SK_RUN(nested_different_locks);
	SK_RUN(writer_revokes_bias_and_it_comes_back);
	SK_RUN(writers_exclude_and_readers_see_no_torn_snapshot);
	SK_RUN(trylock_users_exclude_too);
	SK_RUN(busted_writer_twin_is_caught);
	SK_RUN(reader_without_lock_twin_is_caught);
	return sk_test_report();
}
