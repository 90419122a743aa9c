/* SPDX-License-Identifier: MIT */
/*
 * Stress harness shared by the lock tests (test_rwlock_rb.c,
 * test_seqlock.c): writer threads bump a non-atomic counter and write a
 * multi-word snapshot (every word the same value, written one at a time
 * with spins in between); reader threads read the snapshot and count the
 * torn ones.  The lock under test is given as two functions: one write
 * section and one read.
 *
 * Checks a caller makes from struct lk_result: the counter ends exact
 * (writers excluded each other), no torn snapshot (readers excluded
 * writers, or retried), both sides made progress.  A broken twin makes
 * the same run and must show torn snapshots.
 */
#ifndef SK_TEST_LOCKS_H
#define SK_TEST_LOCKS_H

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "scalekit/barrier.h"
#include "sk_test.h"
#include "sk_test_util.h"

#define LK_WORDS 4

/* The data the locks guard. */
struct lk_data {
	unsigned long counter;	       /* writers only: plain, non-atomic */
	unsigned long w[LK_WORDS];     /* snapshot: relaxed atomics */
};

struct lk_spec {
	void *lock;
	/* One write section: lock, lk_write(d), unlock. */
	void (*write)(void *lock, struct lk_data *d);
	/* One read: copy the snapshot into out[] (consistently, if it can). */
	void (*read)(void *lock, struct lk_data *d, unsigned long *out);
	int readers, writers;
	unsigned long writes_each; /* write sections per writer */
	double max_s;		   /* readers stop after this at the latest */
	int stop_on_torn;	   /* twins: stop once a torn read is seen */
};

struct lk_result {
	unsigned long counter, expected;
	unsigned long reads, torn;
};

struct lk_run {
	const struct lk_spec *spec;
	struct lk_data d;
	int writers_left; /* atomic */
	int stop;	  /* atomic */
	unsigned long reads, torn; /* atomic sums */
};

/* Spin a few iterations (widens the windows a broken lock leaves open). */
static inline void lk_spin(unsigned n)
{
	while (n--)
		sk_cpu_relax();
}

/* The body of a write section: counter + 1, then the words one by one. */
static inline void lk_write(struct lk_data *d)
{
	unsigned long c = d->counter + 1;
	int k;

	for (k = 0; k < LK_WORDS; k++) {
		SK_WRITE_ONCE(d->w[k], c);
		lk_spin(20);
	}
	d->counter = c;
}

/* The body of a read: the words one by one. */
static inline void lk_read(struct lk_data *d, unsigned long *out)
{
	int k;

	for (k = 0; k < LK_WORDS; k++) {
		out[k] = SK_READ_ONCE(d->w[k]);
		lk_spin(10);
	}
}

static void *lk_writer(void *arg)
{
	struct lk_run *r = arg;
	unsigned long i;

	for (i = 0; i < r->spec->writes_each && !LOAD(r->stop); i++) {
		r->spec->write(r->spec->lock, &r->d);
		if (i % 64 == 0)
			sched_yield();
	}
	__atomic_fetch_sub(&r->writers_left, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *lk_reader(void *arg)
{
	struct lk_run *r = arg;
	unsigned long out[LK_WORDS], reads = 0, torn = 0;
	double end = sk_test_now() + r->spec->max_s;
	int k;

	/* Read while writers write (and at least a few times). */
	while (!LOAD(r->stop) &&
	       (LOAD(r->writers_left) > 0 || reads < 1000)) {
		r->spec->read(r->spec->lock, &r->d, out);
		reads++;
		for (k = 1; k < LK_WORDS; k++)
			if (out[k] != out[0]) {
				torn++;
				break;
			}
		if (torn && r->spec->stop_on_torn)
			STORE(r->stop, 1);
		if ((reads & 255) == 0 && sk_test_now() > end)
			break;
	}
	__atomic_fetch_add(&r->reads, reads, __ATOMIC_RELAXED);
	__atomic_fetch_add(&r->torn, torn, __ATOMIC_RELAXED);
	return NULL;
}

/* Run spec with real threads; the figures in *res. */
static inline void lk_stress(const struct lk_spec *spec, struct lk_result *res)
{
	static struct lk_run r; /* large enough to keep off small stacks */
	pthread_t t[64];
	int i, n = 0;

	memset(&r, 0, sizeof(r));
	r.spec = spec;
	r.writers_left = spec->writers;
	for (i = 0; i < spec->writers; i++)
		sk_test_thread_start(&t[n++], lk_writer, &r);
	for (i = 0; i < spec->readers; i++)
		sk_test_thread_start(&t[n++], lk_reader, &r);
	for (i = 0; i < n; i++)
		sk_test_thread_join(t[i]);
	res->counter = r.d.counter;
	res->expected = (unsigned long)spec->writers * spec->writes_each;
	res->reads = r.reads;
	res->torn = r.torn;
	fprintf(stderr, "    counter %lu (expected %lu), %lu reads, %lu torn\n",
		res->counter, res->expected, res->reads, res->torn);
}

/* Run spec; writers excluded each other and no reader saw a torn copy. */
static inline void lk_check_clean(struct lk_spec spec)
{
	struct lk_result r;

	lk_stress(&spec, &r);
	SK_CHECK_EQ(r.counter, r.expected);
	SK_CHECK_EQ(r.torn, 0);
	SK_CHECK_GT(r.reads, 0);
}

/* Run a broken twin until a torn read (20 s at most): it must show one. */
static inline void lk_check_twin_caught(struct lk_spec spec)
{
	struct lk_result r;

	spec.writes_each = 1000000;
	spec.max_s = 20;
	spec.stop_on_torn = 1;
	lk_stress(&spec, &r);
	SK_CHECK_GT(r.torn, 0);
}

/* fn, in a forked child, must abort with a message containing m1 and m2. */
static inline void lk_check_aborts(void (*fn)(void), const char *m1,
				   const char *m2)
{
	static struct sk_test_child c;

	sk_test_fork_child(fn, 30, 1, &c);
	SK_CHECK_ABORTED(c.status);
	SK_CHECK_STR_CONTAINS(c.err, m1);
	SK_CHECK_STR_CONTAINS(c.err, m2);
}

/* A wait that never ends fails the test program with a message. */
static inline void lk_on_alarm(int sig)
{
	static const char msg[] = "lock test: hang: still running after the "
				  "alarm (a lock wait that never ended)\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

static inline void lk_arm_alarm(unsigned s)
{
	signal(SIGALRM, lk_on_alarm);
	alarm(s);
}

#endif /* SK_TEST_LOCKS_H */
