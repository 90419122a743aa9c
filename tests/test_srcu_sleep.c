/* SPDX-License-Identifier: MIT */
/*
 * test_srcu_sleep.c - srcu.h: the grace-period guarantee with readers that
 * sleep inside their sections and with sections ended by another thread,
 * for every way of waiting (synchronize, expedited, poll, call_srcu,
 * get_state), and grace periods that end under continuous readers.
 *
 * No assertion bounds wall-clock time.  "test_srcu_sleep <name>" runs only
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

#include "rcu_stress.h"
#include "sk_test.h"
#include "sk_test_srcu.h"
#include "sk_test_util.h"

static unsigned int slow; /* sk_test_slow(): 1, or 8 under sanitizers */
static uint64_t seed;

/* ---- 2. the guarantee with sleeping readers ------------------------------ */

enum wait_kind { W_SYNC, W_EXPEDITED, W_POLL, W_CALL, W_COND, W_KINDS };

static const char *const wait_names[W_KINDS] = {
	"sk_synchronize_srcu", "sk_synchronize_srcu_expedited",
	"start_poll + poll", "sk_call_srcu", "get_state + poll/synchronize"
};

/* Mailbox for a section handed from one thread to another. */
struct mailbox {
	pthread_mutex_t m;
	pthread_cond_t c;
	int full;
	int idx;
};

struct sleeper {
	struct sk_srcu *d;
	struct mailbox box;
	unsigned int ms;
	int entered;
	int leaving;
	pthread_t a, b;
};

static void *sleeping_reader(void *arg)
{
	struct sleeper *s = arg;
	int idx = sk_srcu_read_lock(s->d);

	flag_set(&s->entered);
	sk_test_sleep_ms(s->ms);
	flag_set(&s->leaving);
	sk_srcu_read_unlock(s->d, idx);
	return NULL;
}

/* Thread A: enters, hands the section to B, exits. */
static void *handoff_locker(void *arg)
{
	struct sleeper *s = arg;
	int idx = sk_srcu_read_lock(s->d);

	pthread_mutex_lock(&s->box.m);
	s->box.idx = idx;
	s->box.full = 1;
	pthread_cond_signal(&s->box.c);
	pthread_mutex_unlock(&s->box.m);
	flag_set(&s->entered);
	return NULL;
}

/* Thread B: takes the section, sleeps, ends it. */
static void *handoff_unlocker(void *arg)
{
	struct sleeper *s = arg;
	int idx;

	pthread_mutex_lock(&s->box.m);
	while (!s->box.full)
		pthread_cond_wait(&s->box.c, &s->box.m);
	idx = s->box.idx;
	pthread_mutex_unlock(&s->box.m);
	sk_test_sleep_ms(s->ms);
	flag_set(&s->leaving);
	sk_srcu_read_unlock(s->d, idx);
	return NULL;
}

/*
 * Wait for a grace period of d by kind; returns what the end of the
 * grace period saw of *leaving (for W_CALL: what the callback saw).
 */
static int wait_gp_and_sample(struct sk_srcu *d, enum wait_kind k, int *leaving,
			      unsigned long *lost)
{
	struct counted c = { .runs = 0, .sample = -1, .watch = leaving };
	unsigned long cookie;

	switch (k) {
	case W_SYNC:
		sk_synchronize_srcu(d);
		break;
	case W_EXPEDITED:
		sk_synchronize_srcu_expedited(d);
		break;
	case W_POLL:
		cookie = sk_start_poll_synchronize_srcu(d);
		poll_wait(d, cookie, lost);
		break;
	case W_CALL:
		SK_CHECK_EQ(sk_call_srcu(d, &c.rh, counted_cb), 0);
		barrier_settle(d, &c);
		return c.sample;
	case W_COND:
		cookie = sk_get_state_synchronize_srcu(d);
		if (!sk_poll_state_synchronize_srcu(d, cookie))
			sk_synchronize_srcu(d);
		break;
	default:
		break;
	}
	return flag_get(leaving);
}

static void grace_period_waits_for_sleeping_reader(void)
{
	unsigned long lost = 0;
	int k, handoff;

	for (handoff = 0; handoff < 2; handoff++) {
		for (k = 0; k < W_KINDS; k++) {
			struct sleeper s;
			int seen;

			memset(&s, 0, sizeof(s));
			s.d = domain_new();
			s.ms = 100;
			pthread_mutex_init(&s.box.m, NULL);
			pthread_cond_init(&s.box.c, NULL);
			if (handoff) {
				sk_test_thread_start(&s.b, handoff_unlocker, &s);
				sk_test_thread_start(&s.a, handoff_locker, &s);
				/* A exits with the section open; B ends it. */
				sk_test_thread_join(s.a);
			} else {
				sk_test_thread_start(&s.a, sleeping_reader, &s);
			}
			flag_wait(&s.entered);
			seen = wait_gp_and_sample(s.d, (enum wait_kind)k,
						  &s.leaving, &lost);
			if (seen != 1)
				fprintf(stderr,
					"  %s returned before the %s "
					"reader left\n",
					wait_names[k],
					handoff ? "hand-off" : "sleeping");
			SK_CHECK_EQ(seen, 1);
			sk_test_thread_join(handoff ? s.b : s.a);
			domain_free(s.d);
		}
	}
	SK_CHECK_EQ(lost, 0);
}

/*
 * Readers that overlap so that some section is always open: every grace
 * period still ends (the flip sends new readers to the other index).
 */
struct overlap {
	struct sk_srcu *d;
	int stop;
	unsigned long sections;
};

static void *overlapping_reader(void *arg)
{
	struct overlap *o = arg;
	uint64_t rng = seed ^ (uintptr_t)&rng;

	while (!flag_get(&o->stop)) {
		int idx = sk_srcu_read_lock(o->d);

		if ((sk_test_rand(&rng) & 15) == 0)
			sk_test_sleep_us(50);
		else
			sk_stress_spin(&rng, 500);
		sk_srcu_read_unlock(o->d, idx);
		__atomic_fetch_add(&o->sections, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void grace_periods_end_under_continuous_readers(void)
{
	struct overlap o = { .d = domain_new() };
	unsigned long i, n = 400 / slow, before;
	pthread_t t[3];
	int k;

	for (k = 0; k < 3; k++)
		sk_test_thread_start(&t[k], overlapping_reader, &o);
	while (__atomic_load_n(&o.sections, __ATOMIC_RELAXED) < 100)
		sk_test_sleep_us(100); /* the readers are running */
	before = __atomic_load_n(&o.sections, __ATOMIC_RELAXED);
	for (i = 0; i < n; i++) {
		if (i & 1)
			sk_synchronize_srcu_expedited(o.d);
		else
			sk_synchronize_srcu(o.d);
	}
	flag_set(&o.stop);
	for (k = 0; k < 3; k++)
		sk_test_thread_join(t[k]);
	fprintf(stderr, "  %lu grace periods during %lu sections\n", n,
		__atomic_load_n(&o.sections, __ATOMIC_RELAXED) - before);
	domain_free(o.d);
}

#define RUN(fn) SK_RUN_SELECTED(fn)

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	seed = sk_test_seed_init();
	slow = sk_test_slow();

	RUN(grace_period_waits_for_sleeping_reader);
	RUN(grace_periods_end_under_continuous_readers);
	return sk_test_report();
}
