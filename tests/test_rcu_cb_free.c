/* SPDX-License-Identifier: MIT */
/*
 * test_rcu_cb_free.c - SK_FREE_RCU() and double queueing of a callback,
 * under real threads.
 *
 * What is proven, one function each (see the comment above each):
 *   - SK_FREE_RCU() frees (malloc statistics; a leaking twin MUST be
 *     caught), also with the head at offset 0;
 *   - -EBUSY (already queued, every build) is returned as documented,
 *     printing nothing, and the callback then runs once; a head queued
 *     twice loses no other callback (counts agree), SK_FREE_RCU() twice
 *     frees once; a copy of a queued head is not taken for it; a double
 *     queue is no abort (this program run again as a child).
 * Counts shrink by sk_test_slow() under sanitizers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scalekit/rcu.h"
#include "sk_test.h"
#include "sk_test_rcu.h"

/* ---- SK_FREE_RCU --------------------------------------------------------- */

struct fobj {
	long pad[3];
	struct sk_rcu_head rcu; /* not first: the offset matters */
	char payload[200];
};

static void leak_cb(struct sk_rcu_head *h)
{
	(void)h; /* BROKEN twin: forgets to free */
}

static size_t heap_in_use(void)
{
	return mallinfo2().uordblks;
}

/*
 * Bytes still allocated after n objects were queued with
 * SK_FREE_RCU() (or, leak, with a callback that does not free) and
 * sk_rcu_barrier() returned, relative to before; also how many bytes the
 * n objects took (0: mallinfo2() is not meaningful, e.g. under ASan).
 */
static void free_rcu_round(unsigned long n, int leak, long *remaining,
			   long *allocated)
{
	struct fobj **o = calloc(n, sizeof(*o));
	struct sk_rcu_stats s0, s1;
	size_t b0, b1, b2;
	unsigned long i;

	SK_CHECK(o != NULL);
	sk_rcu_barrier();
	s0 = sk_test_rcu_stats();
	b0 = heap_in_use();
	for (i = 0; i < n; i++) {
		o[i] = malloc(sizeof(**o));
		SK_CHECK(o[i] != NULL);
		memset(o[i], 0, sizeof(**o));
	}
	b1 = heap_in_use();
	for (i = 0; i < n; i++)
		SK_CHECK_EQ(leak ? sk_call_rcu(&o[i]->rcu, leak_cb)
				 : SK_FREE_RCU(o[i], rcu),
			    0);
	sk_rcu_barrier();
	b2 = heap_in_use();
	s1 = sk_test_rcu_stats();
	SK_CHECK_EQ(s1.cb_invoked - s0.cb_invoked, n);
	if (leak)
		for (i = 0; i < n; i++)
			free(o[i]);
	free(o);
	*allocated = (long)(b1 - b0);
	*remaining = (long)(b2 - b0);
}

/*
 * SK_FREE_RCU() frees the object (head in the middle of it): after the
 * barrier the heap is back where it was (mallinfo2), and the callbacks
 * were counted.  A twin whose callback leaks must be caught by the same
 * measurement.  Under ASan mallinfo2() says nothing; LeakSanitizer checks
 * at exit instead.
 */
static void free_rcu_frees_the_object(void)
{
	unsigned long n = 20000 / sk_test_slow();
	long rem, alloc;

	free_rcu_round(n, 0, &rem, &alloc);
	fprintf(stderr, "SK_FREE_RCU: %ld bytes allocated, %ld remain\n", alloc,
		rem);
	if (alloc < (long)(n * sizeof(struct fobj))) {
		fprintf(stderr, "mallinfo2() not meaningful here; relying on "
				"the leak checker\n");
		return;
	}
	SK_CHECK_LE(rem, alloc / 10);
	free_rcu_round(n, 1, &rem, &alloc);
	fprintf(stderr, "leaking twin: %ld bytes allocated, %ld remain\n",
		alloc, rem);
	SK_CHECK_GT(rem, alloc / 10);
}

struct zobj {
	struct sk_rcu_head rcu; /* the usual layout: head first */
	long v;
};

/*
 * SK_FREE_RCU() with the head as the first member (offset 0), the most
 * common layout, is accepted and frees the object.
 */
static void free_rcu_with_head_at_offset_zero(void)
{
	struct zobj *z = calloc(1, sizeof(*z));
	struct sk_rcu_stats s0, s1;
	int err;

	sk_rcu_barrier();
	s0 = sk_test_rcu_stats();
	err = SK_FREE_RCU(z, rcu);
	SK_CHECK_EQ(err, 0);
	sk_rcu_barrier();
	s1 = sk_test_rcu_stats();
	SK_CHECK_EQ(s1.cb_invoked - s0.cb_invoked, 1);
	if (err)
		free(z); /* refused: still ours */
}

/* ---- double queueing -------------------------------------------------- */

static int dq_runs;
static void dq_cb(struct sk_rcu_head *h)
{
	(void)h;
	INC(dq_runs);
}

/*
 * Every build: queueing a head that is queued and has not run returns
 * -EBUSY and prints nothing (a returned error is not printed); the
 * callback runs once.  The head is held in the queue by our own read
 * section meanwhile.  Once it has run, it may be queued again.
 */
static void double_queue_returns_ebusy_and_runs_once(void)
{
	static struct sk_rcu_head h;
	struct sk_test_capture c;
	struct sk_rcu_stats s0, s1;
	char err[1024];
	int r1, r2;

	sk_rcu_barrier();
	STORE(dq_runs, 0);
	s0 = sk_test_rcu_stats();
	sk_rcu_read_lock(); /* the callback cannot run before we leave */
	r1 = sk_call_rcu(&h, dq_cb);
	sk_test_capture_begin(&c);
	r2 = sk_call_rcu(&h, dq_cb);
	sk_test_capture_end(&c, err, sizeof(err));
	sk_rcu_read_unlock();
	SK_CHECK_EQ(r1, 0);
	SK_CHECK_EQ(r2, -EBUSY);
	SK_CHECK_EQ(err[0], '\0'); /* a returned error prints nothing */
	sk_rcu_barrier();
	s1 = sk_test_rcu_stats();
	SK_CHECK_EQ(LOAD(dq_runs), 1);
	SK_CHECK_EQ(s1.cb_queued - s0.cb_queued, 1);
	SK_CHECK_EQ(s1.cb_invoked - s0.cb_invoked, 1);

	/* After it ran, the same head may be queued again. */
	SK_CHECK_EQ(sk_call_rcu(&h, dq_cb), 0);
	sk_rcu_barrier();
	SK_CHECK_EQ(LOAD(dq_runs), 2);
}

struct dq_obj {
	struct sk_rcu_head rcu;
	int runs;
};

static void dq_obj_cb(struct sk_rcu_head *h)
{
	INC(OF(h, struct dq_obj, rcu)->runs);
}

/*
 * Queueing a head a second time loses no other callback: with a, h, b, h
 * (refused), c queued by one thread, a, h, b and c each run once and the
 * queued and invoked counts agree.  (Without the check, the second push
 * of h cut b off the queue: b never ran and the counts never matched
 * again.)  The same for SK_FREE_RCU() of one object twice: the second is
 * refused (without the check: a double free).  Neither refusal prints.
 */
static void double_queue_loses_no_other_callback(void)
{
	static struct dq_obj o[4]; /* a, h, b, c */
	static const int order[] = { 0, 1, 2, 1, 3 };
	struct dq_obj *f = calloc(1, sizeof(*f));
	struct sk_test_capture cap;
	struct sk_rcu_stats s0, s1;
	char err[2048];
	int r[5], rf1, rf2, i;

	SK_CHECK(f != NULL);
	sk_rcu_barrier();
	memset(o, 0, sizeof(o));
	s0 = sk_test_rcu_stats();
	sk_rcu_read_lock(); /* nothing runs before we leave */
	sk_test_capture_begin(&cap);
	for (i = 0; i < 5; i++)
		r[i] = sk_call_rcu(&o[order[i]].rcu, dq_obj_cb);
	rf1 = SK_FREE_RCU(f, rcu);
	rf2 = SK_FREE_RCU(f, rcu);
	sk_test_capture_end(&cap, err, sizeof(err));
	sk_rcu_read_unlock();
	sk_rcu_barrier();
	s1 = sk_test_rcu_stats();
	SK_CHECK_EQ(r[0], 0);
	SK_CHECK_EQ(r[1], 0);
	SK_CHECK_EQ(r[2], 0);
	SK_CHECK_EQ(r[3], -EBUSY);
	SK_CHECK_EQ(r[4], 0);
	SK_CHECK_EQ(rf1, 0);
	SK_CHECK_EQ(rf2, -EBUSY);
	for (i = 0; i < 4; i++)
		SK_CHECK_EQ(LOAD(o[i].runs), 1);
	SK_CHECK_EQ(err[0], '\0'); /* returned errors print nothing */
	SK_CHECK_EQ(s1.cb_queued - s0.cb_queued, 5);
	SK_CHECK_EQ(s1.cb_invoked - s0.cb_invoked, 5);
	SK_CHECK_EQ(s1.cb_queued, s1.cb_invoked);
}

/*
 * The check recognises only the head it marked: a copy of a queued head
 * (a struct assignment, e.g. of an object read under RCU) and a head
 * whose memory holds leftovers are queued normally.
 */
static void copy_of_queued_head_is_not_queued(void)
{
	static struct dq_obj a, copy, junk;
	struct sk_test_capture cap;
	char err[1024];
	int r1, r2, r3;

	sk_rcu_barrier();
	memset(&a, 0, sizeof(a));
	memset(&junk, 0xa5, sizeof(junk));
	junk.runs = 0;
	sk_rcu_read_lock();
	sk_test_capture_begin(&cap);
	r1 = sk_call_rcu(&a.rcu, dq_obj_cb);
	copy = a; /* the copy carries a's queued state word */
	r2 = sk_call_rcu(&copy.rcu, dq_obj_cb);
	r3 = sk_call_rcu(&junk.rcu, dq_obj_cb);
	sk_test_capture_end(&cap, err, sizeof(err));
	sk_rcu_read_unlock();
	SK_CHECK_EQ(r1, 0);
	SK_CHECK_EQ(r2, 0);
	SK_CHECK_EQ(r3, 0);
	SK_CHECK_EQ(sk_test_count_substr(err, "scalekit: "), 0);
	sk_rcu_barrier();
	SK_CHECK_EQ(LOAD(a.runs), 1);
	SK_CHECK_EQ(LOAD(copy.runs), 1);
	SK_CHECK_EQ(LOAD(junk.runs), 1);
}

/* The child of double_queue_goes_on_and_prints_nothing. */
static void child_double_queue(void)
{
	static struct sk_rcu_head h;

	fprintf(stderr, "pid %d\n", (int)getpid());
	sk_rcu_read_lock();
	if (sk_call_rcu(&h, dq_cb) != 0)
		_exit(3);
	if (sk_call_rcu(&h, dq_cb) != -EBUSY)
		_exit(4);
	sk_rcu_read_unlock();
	sk_rcu_barrier();
	_exit(LOAD(dq_runs) == 1 ? 0 : 5);
}

/*
 * A double sk_call_rcu() in a fresh process (every build; in a child
 * process, as the death tests): the program goes on (exit 0: no abort,
 * the second request is dropped and -EBUSY returned, the callback runs
 * once), and the library prints nothing: the error is returned.
 */
static void double_queue_goes_on_and_prints_nothing(void)
{
	char out[4096];
	int st = sk_test_run_child("test_rcu_cb_free", "double-queue", NULL,
				   NULL, out, sizeof(out));

	fprintf(stderr, "child stderr: %s", out);
	SK_CHECK_EXIT_0(st);
	SK_CHECK_STR_CONTAINS(out, "pid "); /* the capture works */
	SK_CHECK_EQ(sk_test_count_substr(out, "scalekit"), 0);
}


int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--child=double-queue"))
		child_double_queue();
	sk_test_args(argc, argv);
	sk_test_seed_init();
	SK_RUN(free_rcu_frees_the_object);
	SK_RUN(free_rcu_with_head_at_offset_zero);
	SK_RUN(double_queue_returns_ebusy_and_runs_once);
	SK_RUN(double_queue_loses_no_other_callback);
	SK_RUN(copy_of_queued_head_is_not_queued);
	SK_RUN(double_queue_goes_on_and_prints_nothing);
	return sk_test_report();
}
