/* SPDX-License-Identifier: MIT */
/*
 * test_rcu.c - rcu.h: the reader API, registration and QSBR.  Grace-period
 * semantics are in test_rcu_sync.c, the stress with poison checks, the
 * batching of synchronize callers and the registry churn in
 * test_rcu_stress.c; misuse that aborts is covered by test_rcu_death.c.
 *
 * CTest runs this program twice: as is, and with SCALEKIT_NO_MEMBARRIER=1.
 *
 * Lost wake-ups: the library's stall watchdog re-scans the readers every
 * stall threshold (default 21 s), which would turn a lost futex wake-up
 * into a slow pass.  main() sets the threshold to a day with
 * sk_rcu_set_stall_ms(), so a lost wake-up hangs and fails by the CTest
 * timeout instead.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scalekit/rcu.h"
#include "sk_test.h"
#include "sk_test_rcu.h"

/* First test to run: nothing is registered yet in this process. */
static void synchronize_with_zero_registered_readers(void)
{
	struct sk_rcu_stats a = sk_test_rcu_stats(), b;

	SK_CHECK_EQ(a.readers, 0);
	sk_synchronize_rcu();
	sk_synchronize_rcu();
	sk_synchronize_rcu();
	b = sk_test_rcu_stats();
	/* Serial callers share nothing: one grace period each. */
	SK_CHECK_EQ(b.grace_periods - a.grace_periods, 3);
	SK_CHECK_EQ(b.sync_calls - a.sync_calls, 3);
	SK_CHECK_EQ(b.gp_sleeps, a.gp_sleeps);
	/* Still nobody registered: synchronize does not register the caller. */
	SK_CHECK_EQ(b.readers, 0);
}

static void *sync_and_exit(void *arg)
{
	int i;

	for (i = 0; i < 25; i++)
		sk_synchronize_rcu();
	return arg;
}

/*
 * sync_calls counts per thread: the calls of threads that have exited
 * still count, exactly.
 */
static void sync_calls_of_exited_threads_count(void)
{
	struct sk_rcu_stats a = sk_test_rcu_stats(), b;
	pthread_t t[4];
	int i;

	for (i = 0; i < 4; i++)
		sk_test_thread_start(&t[i], sync_and_exit, NULL);
	for (i = 0; i < 4; i++)
		sk_test_thread_join(t[i]);
	sk_synchronize_rcu();
	b = sk_test_rcu_stats();
	SK_CHECK_EQ(b.sync_calls - a.sync_calls, 4 * 25 + 1);
}

static void get_stats_null_is_einval(void)
{
	struct sk_rcu_stats st;

	SK_CHECK_EQ(sk_rcu_get_stats(NULL), -EINVAL);
	memset(&st, 0xff, sizeof(st));
	SK_CHECK_EQ(sk_rcu_get_stats(&st), 0);
	SK_CHECK(st.readers < 1000000);
	SK_CHECK_LE(st.grace_periods, st.sync_calls);
}

static void *nesting_thread(void *arg)
{
	int depth;

	(void)arg;
	SK_CHECK_EQ(sk_rcu_read_lock_held(), 0);
	sk_rcu_read_lock();
	SK_CHECK(sk_rcu_read_lock_held());
	sk_rcu_read_lock();
	SK_CHECK(sk_rcu_read_lock_held());
	sk_rcu_read_unlock();
	/* The inner unlock does not end the outer section. */
	SK_CHECK(sk_rcu_read_lock_held());
	sk_rcu_read_unlock();
	SK_CHECK_EQ(sk_rcu_read_lock_held(), 0);
	/* Deep nesting (recursive code). */
	for (depth = 0; depth < 1000; depth++)
		sk_rcu_read_lock();
	for (depth = 0; depth < 999; depth++) {
		sk_rcu_read_unlock();
		if (!sk_rcu_read_lock_held())
			break;
	}
	SK_CHECK_EQ(depth, 999);
	SK_CHECK(sk_rcu_read_lock_held());
	sk_rcu_read_unlock();
	SK_CHECK_EQ(sk_rcu_read_lock_held(), 0);
	/* Sections may follow one another; synchronize works in between. */
	sk_rcu_read_lock();
	sk_rcu_read_unlock();
	sk_synchronize_rcu();
	sk_rcu_read_lock();
	SK_CHECK(sk_rcu_read_lock_held());
	sk_rcu_read_unlock();
	return NULL;
}

static void read_lock_nesting_and_ongoing(void)
{
	pthread_t t;

	sk_test_thread_start(&t, nesting_thread, NULL);
	sk_test_thread_join(t);
}

struct pub {
	unsigned long a, b;
	char name[16];
};

static struct pub *pub_ptr;

static void *pub_writer(void *arg)
{
	unsigned long i, n = (unsigned long)(uintptr_t)arg;

	for (i = 1; i <= n; i++) {
		struct pub *p = malloc(sizeof(*p)), *old;

		if (!p)
			abort();
		p->a = i;
		p->b = ~i;
		snprintf(p->name, sizeof(p->name), "v%lu", i % 10);
		old = pub_ptr;
		sk_rcu_assign_pointer(pub_ptr, p);
		sk_synchronize_rcu();
		free(old);
	}
	return NULL;
}

static void *pub_reader(void *arg)
{
	unsigned long bad = 0, last = 0;

	(void)arg;
	for (;;) {
		struct pub *p;

		sk_rcu_read_lock();
		p = sk_rcu_dereference(pub_ptr);
		/* The initialization is visible through the pointer. */
		if (p && (p->b != ~p->a || p->name[0] != 'v' ||
			  p->name[1] - '0' != (int)(p->a % 10) || p->a < last))
			bad++;
		if (p)
			last = p->a;
		sk_rcu_read_unlock();
		if (last == (unsigned long)(uintptr_t)arg)
			break;
	}
	return (void *)(uintptr_t)bad;
}

static void dereference_and_assign_pointer(void)
{
	int x = 1, y = 2, *ip = NULL, *got;
	struct pub *null_pub = NULL;
	unsigned long n = 3000 / sk_test_slow();
	pthread_t w, r;

	/* Types and values survive the round trip. */
	sk_rcu_assign_pointer(ip, &x);
	got = sk_rcu_dereference(ip);
	SK_CHECK(got == &x);
	SK_CHECK(_Generic(sk_rcu_dereference(ip), int * : 1, default : 0));
	sk_rcu_assign_pointer(ip, &y);
	SK_CHECK_EQ(*sk_rcu_dereference(ip), 2);
	sk_rcu_assign_pointer(ip, NULL);
	SK_CHECK(sk_rcu_dereference(ip) == NULL);
	SK_CHECK(sk_rcu_dereference(null_pub) == NULL);

	/* Publication: a reader never sees an uninitialized object. */
	pub_ptr = NULL;
	sk_test_thread_start(&r, pub_reader, (void *)(uintptr_t)n);
	sk_test_thread_start(&w, pub_writer, (void *)(uintptr_t)n);
	sk_test_thread_join(w);
	SK_CHECK_EQ((uintptr_t)sk_test_thread_join(r), 0);
	free(pub_ptr);
	pub_ptr = NULL;
}

static void *register_thread_fn(void *arg)
{
	unsigned long base = sk_test_rcu_readers();

	(void)arg;
	/* Unregistering a thread that never registered. */
	SK_CHECK_EQ(sk_rcu_unregister_thread(), -EINVAL);
	SK_CHECK_EQ(sk_test_rcu_readers(), base);

	SK_CHECK_EQ(sk_rcu_register_thread(), 0);
	SK_CHECK_EQ(sk_test_rcu_readers(), base + 1);
	/* Idempotent. */
	SK_CHECK_EQ(sk_rcu_register_thread(), 0);
	SK_CHECK_EQ(sk_test_rcu_readers(), base + 1);
	/* A read section does not register again. */
	sk_rcu_read_lock();
	sk_rcu_read_unlock();
	SK_CHECK_EQ(sk_test_rcu_readers(), base + 1);

	SK_CHECK_EQ(sk_rcu_unregister_thread(), 0);
	SK_CHECK_EQ(sk_test_rcu_readers(), base);
	SK_CHECK_EQ(sk_rcu_unregister_thread(), -EINVAL);
	SK_CHECK_EQ(sk_test_rcu_readers(), base);

	/* Register again after unregistering; then exit registered. */
	SK_CHECK_EQ(sk_rcu_register_thread(), 0);
	SK_CHECK_EQ(sk_test_rcu_readers(), base + 1);
	return NULL;
}

/*
 * Run fn in a thread of its own; once it exited, the registry is as before
 * (the exit handler unregistered it) and nothing is left behind that a
 * grace period would wait for.
 */
static void run_thread_leaving_no_reader(void *(*fn)(void *))
{
	unsigned long base = sk_test_rcu_readers();
	pthread_t t;

	sk_test_thread_start(&t, fn, NULL);
	sk_test_thread_join(t);
	SK_CHECK_EQ(sk_test_rcu_readers(), base);
	sk_synchronize_rcu();
}

static void register_and_unregister(void)
{
	run_thread_leaving_no_reader(register_thread_fn);
}

struct auto_reg {
	int kind; /* 0: read_lock, 1: QSBR online at exit, 2: QSBR offline */
	unsigned long before, seen; /* registry size before and after */
	int go;
};

static void *auto_reg_fn(void *arg)
{
	struct auto_reg *a = arg;

	a->before = sk_test_rcu_readers();
	if (a->kind == 0) {
		sk_rcu_read_lock();
		sk_rcu_read_unlock();
	} else {
		sk_rcu_thread_online();
		sk_rcu_quiescent_state();
		if (a->kind == 2)
			sk_rcu_thread_offline();
	}
	sk_atomic_store_release(&a->seen, sk_test_rcu_readers());
	/* Stay alive until the main thread has looked at the registry. */
	sk_test_wait_flag(&a->go);
	return NULL;
}

/*
 * The first read_lock (or going online) registers the thread, and its
 * exit unregisters it, also when it exits online as a QSBR reader (a later
 * grace period must not wait for it).
 */
static void auto_registration_and_exit(void)
{
	int kind;

	for (kind = 0; kind < 3; kind++) {
		struct auto_reg a = { .kind = kind };
		unsigned long base = sk_test_rcu_readers();
		pthread_t t;

		sk_test_thread_start(&t, auto_reg_fn, &a);
		while (!sk_atomic_load_acquire(&a.seen))
			sk_test_sleep_ms(1);
		SK_CHECK_EQ(sk_test_rcu_readers(), base + 1);
		sk_atomic_store_release(&a.go, 1);
		sk_test_thread_join(t);
		SK_CHECK_EQ(a.before, base);
		SK_CHECK_EQ(a.seen, base + 1);
		SK_CHECK_EQ(sk_test_rcu_readers(), base);
		sk_synchronize_rcu();
	}
}

static void *qsbr_unit_fn(void *arg)
{
	unsigned long base = sk_test_rcu_readers();

	(void)arg;
	SK_CHECK_EQ(sk_rcu_read_lock_held(), 0);
	sk_rcu_thread_online();
	SK_CHECK_EQ(sk_test_rcu_readers(), base + 1);
	SK_CHECK(sk_rcu_read_lock_held());
	/* Online is idempotent. */
	SK_CHECK_EQ(sk_rcu_thread_online(), 0);
	SK_CHECK(sk_rcu_read_lock_held());
	SK_CHECK_EQ(sk_test_rcu_readers(), base + 1);
	sk_rcu_quiescent_state();
	sk_rcu_quiescent_state();
	SK_CHECK(sk_rcu_read_lock_held());
	/* read_lock nests inside online. */
	sk_rcu_read_lock();
	SK_CHECK(sk_rcu_read_lock_held());
	sk_rcu_read_unlock();
	/* Still online: quiescent_state is allowed (it aborts otherwise). */
	SK_CHECK(sk_rcu_read_lock_held());
	sk_rcu_quiescent_state();
	/* The QSBR flavor's markers nest and balance (SK_DEBUG: counted). */
	sk_rcu_qsbr_read_lock();
	sk_rcu_qsbr_read_lock();
	SK_CHECK(sk_rcu_read_lock_held());
	sk_rcu_qsbr_read_unlock();
	sk_rcu_qsbr_read_unlock();
	sk_rcu_quiescent_state();
	/* Offline: no longer a reader, but may use read_lock. */
	sk_rcu_thread_offline();
	SK_CHECK_EQ(sk_rcu_read_lock_held(), 0);
	SK_CHECK_EQ(sk_test_rcu_readers(), base + 1);
	sk_rcu_read_lock();
	SK_CHECK(sk_rcu_read_lock_held());
	sk_rcu_read_unlock();
	SK_CHECK_EQ(sk_rcu_read_lock_held(), 0);
	/* A grace period does not wait for an offline thread. */
	sk_synchronize_rcu();
	sk_rcu_thread_online();
	SK_CHECK(sk_rcu_read_lock_held());
	/* Unregistering an online thread puts it offline first. */
	SK_CHECK_EQ(sk_rcu_unregister_thread(), 0);
	SK_CHECK_EQ(sk_rcu_read_lock_held(), 0);
	SK_CHECK_EQ(sk_test_rcu_readers(), base);
	SK_CHECK_EQ(sk_rcu_unregister_thread(), -EINVAL);
	return NULL;
}

static void qsbr_online_offline_quiescent_state(void)
{
	run_thread_leaving_no_reader(qsbr_unit_fn);
}

struct qs_peer {
	int stop;
	unsigned long qs;
};

/* Another online QSBR thread, announcing quiescent states until stopped. */
static void *qs_peer_fn(void *arg)
{
	struct qs_peer *p = arg;

	sk_rcu_thread_online();
	while (!sk_atomic_load_acquire(&p->stop)) {
		sk_rcu_quiescent_state();
		p->qs++;
		sched_yield();
	}
	sk_rcu_thread_offline();
	return NULL;
}

static void *sync_from_online_fn(void *arg)
{
	struct sk_rcu_stats a, b;
	int i;

	(void)arg;
	sk_rcu_thread_online();
	a = sk_test_rcu_stats();
	for (i = 0; i < 20; i++) {
		/* Would wait for itself forever unless it goes offline. */
		sk_synchronize_rcu();
		/* ... and back online after (else quiescent_state aborts). */
		SK_CHECK(sk_rcu_read_lock_held());
		sk_rcu_quiescent_state();
	}
	b = sk_test_rcu_stats();
	SK_CHECK_GT(b.grace_periods - a.grace_periods, 0);
	sk_rcu_thread_offline();
	return NULL;
}

static void synchronize_from_online_qsbr_thread(void)
{
	struct qs_peer peer = { 0 };
	pthread_t t, p;

	/* Alone first, then with another online QSBR reader. */
	sk_test_thread_start(&t, sync_from_online_fn, NULL);
	sk_test_thread_join(t);
	sk_test_thread_start(&p, qs_peer_fn, &peer);
	sk_test_thread_start(&t, sync_from_online_fn, NULL);
	sk_test_thread_join(t);
	sk_atomic_store_release(&peer.stop, 1);
	sk_test_thread_join(p);
}


int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	/* See the top of the file: a lost wake-up must hang. */
	SK_CHECK_EQ(sk_rcu_set_stall_ms(86400000ul), 0);
	fprintf(stderr, "fence mode: %s\n",
		sk_fence_uses_membarrier() ? "membarrier" : "fallback");

	SK_RUN(synchronize_with_zero_registered_readers);
	SK_RUN(sync_calls_of_exited_threads_count);
	SK_RUN(get_stats_null_is_einval);
	SK_RUN(read_lock_nesting_and_ongoing);
	SK_RUN(dereference_and_assign_pointer);
	SK_RUN(register_and_unregister);
	SK_RUN(auto_registration_and_exit);
	SK_RUN(qsbr_online_offline_quiescent_state);
	SK_RUN(synchronize_from_online_qsbr_thread);
	return sk_test_report();
}
