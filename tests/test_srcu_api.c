/* SPDX-License-Identifier: MIT */
/*
 * test_srcu_api.c - srcu.h: every function of the SRCU API, one behaviour
 * per test (init and cleanup, static and defined domains, nesting, the
 * held tracking, dereference, call_srcu's errors, the barrier, the polled
 * grace-period cookies).  Misuse that aborts is covered by
 * test_srcu_death.c, wrap-around by test_srcu_wrap.c.
 *
 * White box (src/internal/srcu.h): start_poll_request_is_never_dropped
 * reads the private field in_work of the domain's state, as poll_wait()
 * of sk_test_srcu.h does; the type-stable slot tests read the calling
 * thread's slot and slot cache.
 *
 * No assertion bounds wall-clock time.  "test_srcu_api <name>" runs only
 * the tests whose name contains <name>.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "scalekit/rcu.h"
#include "scalekit/srcu.h"

/* White box: the private state of a domain (d->state). */
#include "internal/srcu.h"
#include "internal/testing.h" /* sk__srcu_test_set_destroy_hook() */

#include "sk_test.h"
#include "sk_test_srcu.h"
#include "sk_test_util.h"

/* ---- unit tests ---------------------------------------------------------- */

static void init_and_cleanup_reject_null(void)
{
	SK_CHECK_EQ(sk_srcu_init(NULL), -EINVAL);
	SK_CHECK_EQ(sk_srcu_destroy(NULL), -EINVAL);
}

static void cleanup_of_idle_domain_returns_0_and_init_reuses(void)
{
	struct sk_srcu *d = domain_new();
	int round, idx;

	/* Never read: nothing allocated. */
	SK_CHECK_EQ(sk_srcu_destroy(d), 0);
	for (round = 0; round < 3; round++) {
		SK_CHECK_EQ(sk_srcu_init(d), 0);
		idx = sk_srcu_read_lock(d);
		SK_CHECK(idx >= 0);
		sk_srcu_read_unlock(d, idx);
		sk_synchronize_srcu(d);
		SK_CHECK_EQ(sk_srcu_destroy(d), 0);
	}
	free(d);
}

static void *lock_and_exit(void *arg)
{
	struct sk_srcu *d = arg;

	return (void *)(intptr_t)sk_srcu_read_lock(d);
}

static void cleanup_with_reader_is_ebusy_and_domain_stays_usable(void)
{
	struct sk_srcu *d = domain_new();
	struct counted c = { .runs = 0 };
	struct sk_test_capture cap;
	struct holder h;
	struct syncer s;
	char msg[1024];
	pthread_t t;
	void *ret;
	int idx, rc;

	holder_start(&h, d, NULL);
	sk_test_capture_begin(&cap);
	rc = sk_srcu_destroy(d);
	sk_test_capture_end(&cap, msg, sizeof(msg));
	SK_CHECK_EQ(rc, -EBUSY);
	SK_CHECK_EQ(msg[0], '\0'); /* a returned error prints nothing */

	/* Still usable: sections, held tracking, grace periods, callbacks. */
	idx = sk_srcu_read_lock(d);
	SK_CHECK(sk_srcu_read_lock_held(d));
	sk_srcu_read_unlock(d, idx);
	SK_CHECK(!sk_srcu_read_lock_held(d));
	syncer_start(&s, d, 0);
	SK_CHECK_EQ(sk_call_srcu(d, &c.rh, counted_cb), 0);
	sk_test_sleep_ms(20);
	SK_CHECK_EQ(flag_get(&s.done), 0); /* still waits for the holder */
	holder_finish(&h);
	sk_test_thread_join(s.tid);
	SK_CHECK_EQ(flag_get(&s.done), 1);
	barrier_settle(d, &c);
	SK_CHECK_EQ(__atomic_load_n(&c.runs, __ATOMIC_ACQUIRE), 1);
	sk_synchronize_srcu(d);
	SK_CHECK_EQ(sk_srcu_destroy(d), 0);

	/* Same with a section whose locker exited: it ends on this thread. */
	SK_CHECK_EQ(sk_srcu_init(d), 0);
	sk_test_thread_start(&t, lock_and_exit, d);
	pthread_join(t, &ret);
	sk_test_capture_begin(&cap);
	rc = sk_srcu_destroy(d);
	sk_test_capture_end(&cap, msg, sizeof(msg));
	SK_CHECK_EQ(rc, -EBUSY);
	SK_CHECK_EQ(msg[0], '\0');
	sk_srcu_read_unlock(d, (int)(intptr_t)ret);
	sk_synchronize_srcu(d);
	domain_free(d);
}

static void cleanup_with_pending_callback_or_poll_is_ebusy(void)
{
	struct sk_srcu *d = domain_new();
	struct counted c = { .runs = 0 };
	unsigned long cookie, lost = 0;
	struct sk_test_capture cap;
	struct holder h;
	char msg[1024];
	int rc;

	/* A pre-existing reader keeps the callback pending. */
	holder_start(&h, d, NULL);
	SK_CHECK_EQ(sk_call_srcu(d, &c.rh, counted_cb), 0);
	sk_test_capture_begin(&cap);
	rc = sk_srcu_destroy(d);
	sk_test_capture_end(&cap, msg, sizeof(msg));
	SK_CHECK_EQ(rc, -EBUSY);
	SK_CHECK_EQ(msg[0], '\0'); /* a returned error prints nothing */
	SK_CHECK_EQ(__atomic_load_n(&c.runs, __ATOMIC_ACQUIRE), 0);
	holder_finish(&h);
	barrier_settle(d, &c);
	SK_CHECK_EQ(__atomic_load_n(&c.runs, __ATOMIC_ACQUIRE), 1);

	/* And a polled grace period. */
	holder_start(&h, d, NULL);
	cookie = sk_start_poll_synchronize_srcu(d);
	sk_test_capture_begin(&cap);
	rc = sk_srcu_destroy(d);
	sk_test_capture_end(&cap, msg, sizeof(msg));
	SK_CHECK_EQ(rc, -EBUSY);
	SK_CHECK_EQ(msg[0], '\0'); /* a returned error prints nothing */
	holder_finish(&h);
	poll_wait(d, cookie, &lost);
	SK_CHECK_EQ(lost, 0);
	domain_free(d);
}

/* Seconds after which a wait that a working library ends is a hang. */
#define HANG_S 20

/*
 * A refused sk_srcu_destroy() held the domain's grace-period mutex; a
 * worker that tried the domain meanwhile skipped it (busy_skip) and
 * waits, with no timeout, for the holder's kick.  Library bug seen here
 * once: the refusal released the mutex without the kick, and the
 * domain's callbacks never ran.  A test hook runs inside the destroy,
 * with gp_mutex held: it queues a callback (which wakes the worker) and
 * waits until the worker has skipped the domain; the destroy is then
 * refused (a callback pending), and the callback must run without any
 * other call that would wake the worker.  A round whose callback does
 * not run is reported as a hang, then ended by a barrier.
 */
struct kick_round {
	struct sk_rcu_head rh;
	int ran;     /* the callback ran */
	int skipped; /* the hook saw the worker skip the domain */
};

static struct kick_round *kick_cur;

static void kick_cb(struct sk_rcu_head *h)
{
	flag_set(&((struct kick_round *)((char *)h - offsetof(struct kick_round,
							       rh)))->ran);
}

/* Inside sk_srcu_destroy(d), gp_mutex held. */
static void kick_hook(struct sk_srcu *d)
{
	struct kick_round *k = kick_cur;
	double end = sk_test_now() + HANG_S;

	SK_CHECK_EQ(sk_call_srcu(d, &k->rh, kick_cb), 0);
	/* Relaxed: the worker's flag, polled; nothing else read after it. */
	while (!sk_atomic_load_relaxed(&d->state->busy_skip) &&
	       sk_test_now() < end)
		sk_test_sleep_us(50);
	k->skipped = sk_atomic_load_relaxed(&d->state->busy_skip);
}

static void refused_cleanup_kicks_the_worker_that_skipped(void)
{
	unsigned long r, rounds = 20, hung = 0, skipped = 0;
	struct sk_srcu *d = domain_new();
	struct kick_round k;
	double end;

	for (r = 0; r < rounds && !hung; r++) {
		memset(&k, 0, sizeof(k));
		kick_cur = &k;
		sk__srcu_test_set_destroy_hook(kick_hook);
		SK_CHECK_EQ(sk_srcu_destroy(d), -EBUSY); /* the callback */
		sk__srcu_test_set_destroy_hook(NULL);
		skipped += (unsigned long)k.skipped;
		end = sk_test_now() + HANG_S;
		while (!__atomic_load_n(&k.ran, __ATOMIC_ACQUIRE)) {
			if (sk_test_now() > end) {
				hung = r + 1;
				break;
			}
			sk_test_sleep_us(100);
		}
		sk_srcu_barrier(d); /* ends a hung round too */
	}
	fprintf(stderr, "  %lu rounds, the worker skipped the domain in %lu\n",
		r, skipped);
	if (hung)
		fprintf(stderr,
			"  hang: round %lu: the callback of a domain whose "
			"sk_srcu_destroy() was refused did not run in %d s\n",
			hung, HANG_S);
	SK_CHECK_EQ(hung, 0);
	SK_CHECK_EQ(skipped, r);
	domain_free(d);
}

static struct sk_srcu static_dom = SK_SRCU_INITIALIZER(static_dom);

static struct {
	int before;
	struct sk_srcu d;
} static_member = { .d = SK_SRCU_INITIALIZER(static_member.d) };

SK_SRCU_DEFINE_STATIC(defined_dom);
SK_SRCU_DEFINE_STATIC(raced_dom);

static void static_domain_exercise(struct sk_srcu *d)
{
	struct counted c = { .runs = 0 };
	unsigned long cookie;
	int idx;

	idx = sk_srcu_read_lock(d);
	SK_CHECK(sk_srcu_read_lock_held(d));
	sk_srcu_read_unlock(d, idx);
	SK_CHECK(!sk_srcu_read_lock_held(d));
	cookie = sk_get_state_synchronize_srcu(d);
	SK_CHECK_EQ(sk_poll_state_synchronize_srcu(d, cookie), 0);
	sk_synchronize_srcu(d);
	SK_CHECK_EQ(sk_poll_state_synchronize_srcu(d, cookie), 1);
	sk_synchronize_srcu_expedited(d);
	SK_CHECK_EQ(sk_call_srcu(d, &c.rh, counted_cb), 0);
	barrier_settle(d, &c);
	SK_CHECK_EQ(__atomic_load_n(&c.runs, __ATOMIC_ACQUIRE), 1);
}

static void static_initializer_gives_a_working_domain(void)
{
	/* Used before any sk_srcu_init(): the initializer is enough. */
	static_domain_exercise(&static_dom);
	static_domain_exercise(&static_member.d);
	SK_CHECK_EQ(sk_srcu_destroy(&static_dom), 0);
	SK_CHECK_EQ(sk_srcu_destroy(&static_member.d), 0);
	/* A released static domain comes back with sk_srcu_init(). */
	SK_CHECK_EQ(sk_srcu_init(&static_dom), 0);
	static_domain_exercise(&static_dom);
	SK_CHECK_EQ(sk_srcu_destroy(&static_dom), 0);
}

static void defined_domain_works_before_and_after_cleanup(void)
{
	static_domain_exercise(&defined_dom);
	SK_CHECK_EQ(sk_srcu_destroy(&defined_dom), 0);
	/* Its state is the program's: still usable without sk_srcu_init(). */
	static_domain_exercise(&defined_dom);
	SK_CHECK_EQ(sk_srcu_destroy(&defined_dom), 0);
}

/* Threads that meet at a start flag, then use a fresh defined domain. */
struct first_use {
	int *go;
	int held;	/* sk_srcu_read_lock_held() inside the section */
};

static void *first_use_fn(void *arg)
{
	struct first_use *u = arg;
	int idx;

	while (!__atomic_load_n(u->go, __ATOMIC_ACQUIRE))
		sk_cpu_relax();
	idx = sk_srcu_read_lock(&raced_dom);
	u->held = sk_srcu_read_lock_held(&raced_dom);
	sk_srcu_read_unlock(&raced_dom, idx);
	sk_synchronize_srcu(&raced_dom);
	return NULL;
}

/*
 * The first uses of a defined domain race to set up its zeroed state:
 * exactly one does, the others wait for it (a second setup would
 * re-initialize a mutex another thread holds, or lose a queued callback).
 */
static void defined_domain_first_use_races_are_safe(void)
{
	enum { N = 4 };
	struct first_use u[N];
	pthread_t th[N];
	int go = 0, i;

	for (i = 0; i < N; i++) {
		u[i].go = &go;
		u[i].held = 0;
		SK_CHECK_EQ(pthread_create(&th[i], NULL, first_use_fn, &u[i]), 0);
	}
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	for (i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		SK_CHECK_EQ(u[i].held, 1);
	}
	static_domain_exercise(&raced_dom);
	SK_CHECK_EQ(sk_srcu_destroy(&raced_dom), 0);
}

static void *held_elsewhere(void *arg)
{
	return (void *)(intptr_t)sk_srcu_read_lock_held(arg);
}

/*
 * As holder_main() (sk_test_srcu.h's struct holder), but with a nested
 * section opened and closed first: h->in is set once the inner one ended.
 */
static void *nested_reader(void *arg)
{
	struct holder *h = arg;
	int outer = sk_srcu_read_lock(h->d);

	sk_srcu_read_unlock(h->d, sk_srcu_read_lock(h->d));
	flag_set(&h->in);
	gate_wait(&h->release);
	sk_srcu_read_unlock(h->d, outer);
	return NULL;
}

static void nesting_and_held_tracking(void)
{
	struct sk_srcu *d = domain_new(), *e = domain_new();
	struct holder na;
	struct syncer s;
	int idx[100], i;
	pthread_t t;
	void *ret;

	SK_CHECK_EQ(sk_srcu_read_lock_held(NULL), 0);
	SK_CHECK(!sk_srcu_read_lock_held(d));
	idx[0] = sk_srcu_read_lock(d);
	SK_CHECK(sk_srcu_read_lock_held(d));
	idx[1] = sk_srcu_read_lock(d);
	SK_CHECK(sk_srcu_read_lock_held(d));
	SK_CHECK(!sk_srcu_read_lock_held(e)); /* another domain */
	sk_test_thread_start(&t, held_elsewhere, d);  /* another thread */
	pthread_join(t, &ret);
	SK_CHECK_EQ((intptr_t)ret, 0);
	sk_srcu_read_unlock(d, idx[1]);
	SK_CHECK(sk_srcu_read_lock_held(d)); /* outer still open */
	sk_srcu_read_unlock(d, idx[0]);
	SK_CHECK(!sk_srcu_read_lock_held(d));

	/* Deep nesting, unwound one level at a time. */
	for (i = 0; i < 100; i++)
		idx[i] = sk_srcu_read_lock(d);
	for (i = 99; i >= 0; i--) {
		SK_CHECK(sk_srcu_read_lock_held(d));
		sk_srcu_read_unlock(d, idx[i]);
	}
	SK_CHECK(!sk_srcu_read_lock_held(d));

	/* The outer section still holds back grace periods after the inner. */
	memset(&na, 0, sizeof(na));
	na.d = d;
	gate_init(&na.release);
	sk_test_thread_start(&na.tid, nested_reader, &na);
	flag_wait(&na.in);
	syncer_start(&s, d, 0);
	sk_test_sleep_ms(20);
	SK_CHECK_EQ(flag_get(&s.done), 0);
	holder_finish(&na);
	sk_test_thread_join(s.tid);
	SK_CHECK_EQ(flag_get(&s.done), 1);
	domain_free(d);
	domain_free(e);
}

struct mp_obj {
	unsigned long a, b;
};

static struct mp_obj *mp_ptr;
static int mp_stop;

static int mp_reading, mp_seen;

static void *mp_publisher(void *arg)
{
	unsigned long i, n = (unsigned long)(uintptr_t)arg;
	struct mp_obj *objs = calloc(n, sizeof(*objs));

	/*
	 * Publish only once the reader has finished a read section, and
	 * stop halfway until it has seen one of these objects: however the
	 * two threads are scheduled (qemu runs them in long slices), the
	 * reader's sections overlap the publishing.
	 */
	flag_wait(&mp_reading);
	for (i = 0; i < n; i++) {
		if (i == n / 2)
			flag_wait(&mp_seen);
		objs[i].a = i + 1;
		objs[i].b = (i + 1) * 3;
		sk_rcu_assign_pointer(mp_ptr, &objs[i]);
	}
	flag_set(&mp_stop);
	return objs;
}

static void dereference_reads_the_published_object(void)
{
	struct sk_srcu *d = domain_new();
	struct mp_obj first = { 0, 0 }, *p;
	unsigned long n = 200000 / sk_tsrcu_slow, bad = 0, last = 0, reads = 0;
	unsigned long seen = 0;
	pthread_t t;
	void *objs;
	int idx;

	sk_rcu_assign_pointer(mp_ptr, &first);
	idx = sk_srcu_read_lock(d);
	p = sk_srcu_dereference(mp_ptr, d);
	SK_CHECK(p == &first);
	sk_srcu_read_unlock(d, idx);

	/* Message passing: a dereferenced object is seen initialized. */
	mp_stop = 0;
	mp_reading = 0;
	mp_seen = 0;
	sk_test_thread_start(&t, mp_publisher, (void *)(uintptr_t)n);
	while (!flag_get(&mp_stop)) {
		idx = sk_srcu_read_lock(d);
		p = sk_srcu_dereference(mp_ptr, d);
		if (p->b != p->a * 3 || p->a < last)
			bad++;
		last = p->a;
		reads++;
		sk_srcu_read_unlock(d, idx);
		if (reads == 1)
			flag_set(&mp_reading);
		if (last > 0 && !seen++)
			flag_set(&mp_seen);
	}
	pthread_join(t, &objs);
	SK_CHECK_EQ(bad, 0);
	/* The reader saw published objects, not only the first one. */
	SK_CHECK_GT(seen, 0);
	free(objs);
	domain_free(d);
}

static void call_srcu_rejects_null_arguments(void)
{
	struct sk_srcu *d = domain_new();
	struct counted c = { .runs = 0 };

	SK_CHECK_EQ(sk_call_srcu(NULL, &c.rh, counted_cb), -EINVAL);
	SK_CHECK_EQ(sk_call_srcu(d, NULL, counted_cb), -EINVAL);
	SK_CHECK_EQ(sk_call_srcu(d, &c.rh, NULL), -EINVAL);
	sk_srcu_barrier(d);
	SK_CHECK_EQ(__atomic_load_n(&c.runs, __ATOMIC_ACQUIRE), 0);
	/* Nothing was queued: the head is free for a valid request. */
	SK_CHECK_EQ(sk_call_srcu(d, &c.rh, counted_cb), 0);
	barrier_settle(d, &c);
	SK_CHECK_EQ(__atomic_load_n(&c.runs, __ATOMIC_ACQUIRE), 1);
	domain_free(d);
}

#if SK_DEBUG
/*
 * SK_DEBUG builds only: the double-queue check of internal/cbq.h (as for
 * sk_call_rcu(), test_rcu_cb.c) is compiled out of release builds.
 */
static void call_srcu_twice_on_a_queued_head_is_ebusy(void)
{
	struct sk_srcu *d = domain_new();
	struct counted c = { .runs = 0 };
	struct sk_test_capture cap;
	struct holder h;
	char msg[1024];
	int rc;

	holder_start(&h, d, NULL); /* keeps the first request pending */
	SK_CHECK_EQ(sk_call_srcu(d, &c.rh, counted_cb), 0);
	sk_test_capture_begin(&cap);
	rc = sk_call_srcu(d, &c.rh, counted_cb);
	sk_test_capture_end(&cap, msg, sizeof(msg));
	SK_CHECK_EQ(rc, -EBUSY);
	SK_CHECK_EQ(msg[0], '\0'); /* a returned error prints nothing */
	holder_finish(&h);
	barrier_settle(d, &c);
	SK_CHECK_EQ(__atomic_load_n(&c.runs, __ATOMIC_ACQUIRE), 1);
	/* Once it ran, the head may be queued again. */
	SK_CHECK_EQ(sk_call_srcu(d, &c.rh, counted_cb), 0);
	sk_srcu_barrier(d);
	while (__atomic_load_n(&c.runs, __ATOMIC_ACQUIRE) < 2)
		sk_test_sleep_us(100);
	SK_CHECK_EQ(__atomic_load_n(&c.runs, __ATOMIC_ACQUIRE), 2);
	domain_free(d);
}
#endif /* SK_DEBUG */

static void barrier_with_nothing_pending_returns(void)
{
	struct sk_srcu *d = domain_new();
	struct holder h;

	sk_srcu_barrier(d); /* never used */
	sk_srcu_barrier(d);
	/*
	 * A reader blocked in d: with no callback pending the barrier must not
	 * wait for a grace period (it would never return).
	 */
	holder_start(&h, d, NULL);
	sk_srcu_barrier(d);
	holder_finish(&h);
	domain_free(d);
}

static void completed_cookie_polls_as_1(void)
{
	struct sk_srcu *d = domain_new();
	struct holder h;

	SK_CHECK_EQ(sk_poll_state_synchronize_srcu(d, SK_RCU_COOKIE_COMPLETED),
		    1);
	holder_start(&h, d, NULL);
	SK_CHECK_EQ(sk_poll_state_synchronize_srcu(d, SK_RCU_COOKIE_COMPLETED),
		    1);
	holder_finish(&h);
	domain_free(d);
}

static void get_state_cookie_waits_for_preexisting_reader(void)
{
	struct sk_srcu *d = domain_new();
	unsigned long c1, c2;
	struct holder h;
	struct syncer s;

	holder_start(&h, d, NULL);
	c1 = sk_get_state_synchronize_srcu(d);
	SK_CHECK_EQ(sk_poll_state_synchronize_srcu(d, c1), 0);
	syncer_start(&s, d, 0); /* drives a grace period, which blocks */
	sk_test_sleep_ms(50);
	SK_CHECK_EQ(sk_poll_state_synchronize_srcu(d, c1), 0);
	SK_CHECK_EQ(flag_get(&s.done), 0);
	holder_finish(&h);
	sk_test_thread_join(s.tid);
	SK_CHECK_EQ(sk_poll_state_synchronize_srcu(d, c1), 1);

	/* get_state starts nothing: with no caller the cookie stays open. */
	c2 = sk_get_state_synchronize_srcu(d);
	SK_CHECK(c2 != SK_RCU_COOKIE_COMPLETED);
	SK_CHECK_GT(c2, c1); /* monotonic */
	sk_test_sleep_ms(20);
	SK_CHECK_EQ(sk_poll_state_synchronize_srcu(d, c2), 0);
	sk_synchronize_srcu_expedited(d);
	SK_CHECK_EQ(sk_poll_state_synchronize_srcu(d, c2), 1);
	domain_free(d);
}

static void start_poll_completes_without_a_synchronize_caller(void)
{
	struct sk_srcu *d = domain_new();
	unsigned long c, lost = 0;
	struct holder h;

	c = sk_start_poll_synchronize_srcu(d);
	SK_CHECK(c != SK_RCU_COOKIE_COMPLETED);
	poll_wait(d, c, &lost);

	holder_start(&h, d, NULL);
	c = sk_start_poll_synchronize_srcu(d);
	sk_test_sleep_ms(50);
	SK_CHECK_EQ(sk_poll_state_synchronize_srcu(d, c), 0);
	holder_finish(&h);
	poll_wait(d, c, &lost);
	SK_CHECK_EQ(lost, 0);
	domain_free(d);
}

/*
 * Back-to-back polled grace periods by one thread that polls in a tight
 * loop: each request must be driven to completion by the worker.  (Library
 * bug seen here: a request made while the worker is between finishing the
 * previous one and unlisting the domain is dropped and never completes.)
 * The drop is recognized exactly as in poll_wait().
 */
static void start_poll_request_is_never_dropped(void)
{
	struct sk_srcu *d = domain_new();
	unsigned long i, k, lost = 0;
	unsigned long n = sk_tsrcu_slow > 1 ? 12500 : 50000;
	uint64_t rng = sk_tsrcu_seed | 1;

	for (i = 0; i < n && !lost; i++) {
		unsigned long c;

		/*
		 * No pause, then short random pauses, in turns: they sweep
		 * the request across the worker's step from "done" to
		 * "unlisted" (one fixed timing can lock in phase and miss).
		 */
		if ((i / 500) % 3)
			for (k = sk_test_rand(&rng) % ((i / 500) % 3 * 16); k;
			     k--)
				sk_cpu_relax();
		c = sk_start_poll_synchronize_srcu(d);
		while (!sk_poll_state_synchronize_srcu(d, c)) {
			if (!__atomic_load_n(&d->state->in_work, __ATOMIC_SEQ_CST) &&
			    !sk_poll_state_synchronize_srcu(d, c)) {
				fprintf(stderr,
					"  request %lu of %lu dropped: "
					"domain unlisted with its polled "
					"grace period pending\n",
					i, n);
				lost++;
				sk_synchronize_srcu(d); /* completes c */
			}
			sk_cpu_relax();
		}
	}
	SK_CHECK_EQ(lost, 0);
	domain_free(d);
}

/* ---- type-stable slots (white box) ---------------------------------- */

/* The calling thread's slot cache way of d (the fast paths' view). */
static struct sk_srcu_slot *cached_slot(struct sk_srcu *d)
{
	return sk_srcu__tls.slot[SK__SRCU_WAY(d)];
}

/*
 * sk_srcu_destroy() puts a domain's slots in the pool instead of freeing
 * them: a thread's cache way keeps pointing at its old slot, which no fast
 * path takes as a binding any more (dom NULL), and the next domain (here
 * the same address initialized again) gets the same slot back.  Sections
 * and grace periods work on every life; nothing is counted twice.
 */
static void destroyed_domain_slots_are_pooled_and_stale_ways_miss(void)
{
	struct sk_srcu *d = domain_new(), *e;
	struct sk_srcu_slot *s;
	int cached = sk_barrier__fence_sys_get(), round, idx;

	sk_srcu_read_unlock(d, sk_srcu_read_lock(d));
	s = sk__srcu_my_slot(d);
	SK_CHECK(s != NULL);
	if (cached)
		SK_CHECK(cached_slot(d) == s);
	for (round = 0; round < 3; round++) {
		SK_CHECK_EQ(sk_srcu_destroy(d), 0);
		/* Stale way: still there, but not a binding of anyone's. */
		if (cached)
			SK_CHECK(cached_slot(d) == s);
		SK_CHECK(sk_atomic_load_relaxed(&s->dom) == NULL);
		SK_CHECK_EQ(sk_srcu_init(d), 0);
		SK_CHECK(!sk_srcu_read_lock_held(d));
		idx = sk_srcu_read_lock(d);
		SK_CHECK(sk_srcu_read_lock_held(d));
		/* Same thread index, same pool position: the same slot. */
		SK_CHECK(sk__srcu_my_slot(d) == s);
		SK_CHECK(sk_atomic_load_relaxed(&s->dom) == d);
		SK_CHECK_EQ(slot_counts(s), 1UL);
		sk_srcu_read_unlock(d, idx);
		SK_CHECK(!sk_srcu_read_lock_held(d));
		sk_synchronize_srcu(d);
	}
	/* Another domain takes the pooled slot; d's stale way misses. */
	SK_CHECK_EQ(sk_srcu_destroy(d), 0);
	e = domain_new();
	idx = sk_srcu_read_lock(e);
	SK_CHECK(sk__srcu_my_slot(e) == s);
	SK_CHECK_EQ(sk_srcu_init(d), 0);
	sk_srcu_read_unlock(d, sk_srcu_read_lock(d));
	SK_CHECK(sk__srcu_my_slot(d) != s);
	sk_synchronize_srcu(d);
	sk_srcu_read_unlock(e, idx);
	sk_synchronize_srcu(e);
	domain_free(e);
	domain_free(d);
}

/* idx names the current binding of the caller's slot in d. */
static int idx_is_the_slots(struct sk_srcu *d, int idx)
{
	struct sk_srcu_slot *s = sk__srcu_my_slot(d);

	return s && ((unsigned int)idx & ~1u) ==
			    ((unsigned int)sk_atomic_load_relaxed(&s->key) & ~1u);
}

/*
 * The lock takes the key from the thread's copy beside the cached slot
 * pointer (struct sk_srcu__tls): after each rebinding of the same slot (the
 * domain destroyed and initialized again) a fast-path lock must still
 * return the new binding's idx.  The twin makes the copy stale by hand, as
 * a library that forgot to refresh it would, and the check must see it.
 */
static void fast_lock_returns_the_current_binding_key(void)
{
	struct sk_srcu *d = domain_new();
	unsigned int w = SK__SRCU_WAY(d), old;
	int round, idx, bit;

	if (!sk_barrier__fence_sys_get()) {
		domain_free(d);
		return; /* nothing is cached: no copy to check */
	}
	for (round = 0; round < 3; round++) {
		sk_srcu_read_unlock(d, sk_srcu_read_lock(d)); /* (re)binds */
		idx = sk_srcu_read_lock(d);		      /* fast path */
		SK_CHECK(idx_is_the_slots(d, idx));
		sk_srcu_read_unlock(d, idx);
		old = sk_srcu__tls.key[w];
		SK_CHECK_EQ(sk_srcu_destroy(d), 0);
		SK_CHECK_EQ(sk_srcu_init(d), 0);
		sk_srcu_read_unlock(d, sk_srcu_read_lock(d));
		SK_CHECK(sk_srcu__tls.key[w] != old); /* a new incarnation */
		/* The busted twin: the previous binding's copy. */
		sk_srcu__tls.key[w] = old;
		idx = sk_srcu_read_lock(d);
		SK_CHECK(!idx_is_the_slots(d, idx)); /* caught */
		bit = idx & 1;
		sk_srcu__tls.key[w] = (unsigned int)sk_atomic_load_relaxed(
			&sk__srcu_my_slot(d)->key);
		sk_srcu_read_unlock(d, (int)(sk_srcu__tls.key[w] | bit));
		SK_CHECK(!sk_srcu_read_lock_held(d));
	}
	sk_synchronize_srcu(d);
	domain_free(d);
}

struct handoff {
	struct sk_srcu *d;
	int idx;
};

static void *end_handed_off(void *arg)
{
	struct handoff *h = arg;

	sk_srcu_read_unlock(h->d, h->idx);
	return NULL;
}

/*
 * A section ended by another thread marks the locker's key
 * (SK__SRCU_KEY_REMOTE, LP64): its later unlocks add remote[] in the
 * balance check, its idx values do not change, its sections balance.
 */
static void remote_end_marks_the_key_and_sections_balance(void)
{
	struct sk_srcu *d = domain_new();
	struct handoff h = { d, sk_srcu_read_lock(d) };
	struct sk_srcu_slot *s = sk__srcu_my_slot(d);
	int round, i0, i1;
	pthread_t t;

	SK_CHECK_EQ(sk_atomic_load_relaxed(&s->key) & SK__SRCU_KEY_REMOTE,
		    0UL);
	sk_test_thread_start(&t, end_handed_off, &h);
	pthread_join(t, NULL);
	SK_CHECK_EQ(sk_atomic_load_relaxed(&s->key) & SK__SRCU_KEY_REMOTE,
		    SK__SRCU_KEY_REMOTE);
	SK_CHECK(!sk_srcu_read_lock_held(d));
	for (round = 0; round < 4; round++) {
		i0 = sk_srcu_read_lock(d);
		i1 = sk_srcu_read_lock(d);
		SK_CHECK_EQ(i0 & ~1, h.idx & ~1);
		SK_CHECK_EQ(i0, i1);
		sk_srcu_read_unlock(d, i1);
		SK_CHECK(sk_srcu_read_lock_held(d));
		sk_srcu_read_unlock(d, i0);
		SK_CHECK(!sk_srcu_read_lock_held(d));
		sk_synchronize_srcu(d);
	}
	domain_free(d);
}

int main(int argc, char **argv)
{
	sk_test_srcu_start(argc, argv);

	/* every function */
	SK_RUN(init_and_cleanup_reject_null);
	SK_RUN(cleanup_of_idle_domain_returns_0_and_init_reuses);
	SK_RUN(cleanup_with_reader_is_ebusy_and_domain_stays_usable);
	SK_RUN(cleanup_with_pending_callback_or_poll_is_ebusy);
	SK_RUN(refused_cleanup_kicks_the_worker_that_skipped);
	SK_RUN(static_initializer_gives_a_working_domain);
	SK_RUN(defined_domain_works_before_and_after_cleanup);
	SK_RUN(defined_domain_first_use_races_are_safe);
	SK_RUN(nesting_and_held_tracking);
	SK_RUN(dereference_reads_the_published_object);
	SK_RUN(call_srcu_rejects_null_arguments);
#if SK_DEBUG
	SK_RUN(call_srcu_twice_on_a_queued_head_is_ebusy);
#endif
	SK_RUN(barrier_with_nothing_pending_returns);
	SK_RUN(completed_cookie_polls_as_1);
	SK_RUN(get_state_cookie_waits_for_preexisting_reader);
	SK_RUN(start_poll_completes_without_a_synchronize_caller);
	SK_RUN(start_poll_request_is_never_dropped);
	SK_RUN(destroyed_domain_slots_are_pooled_and_stale_ways_miss);
	SK_RUN(fast_lock_returns_the_current_binding_key);
	SK_RUN(remote_end_marks_the_key_and_sections_balance);
	return sk_test_report();
}
