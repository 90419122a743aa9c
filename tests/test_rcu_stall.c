/* SPDX-License-Identifier: MIT */
/*
 * test_rcu_stall.c - the RCU stall watchdog and SCALEKIT_RCU_STALL_MS.
 *
 * SCALEKIT_RCU_STALL_MS is read once when the library loads, so each case
 * checks the stderr and exit status of a run of this program (fork +
 * execve of /proc/self/exe with a --child flag and the variable in its
 * environment); the runs go at the same time, before the cases.  What is
 * proven:
 *   - a reader named "sleepy-reader" that sleeps 1.5 s inside a read
 *     section while the main thread waits in sk_synchronize_rcu() is
 *     reported ("RCU stall", its tid, its name, the threshold, a waited
 *     time not below the threshold), at least once, and with exponential
 *     backoff: no more reports than a doubling interval allows in the
 *     measured wait (a fixed 200 ms interval would exceed it);
 *   - an online QSBR thread that announces no quiescent state is reported
 *     as such ("QSBR");
 *   - a thread that sleeps outside its sections is never reported, nor is
 *     a reader whose section ends before the threshold;
 *   - sk_rcu_set_stall_ms() replaces the variable's threshold (200 ms set
 *     by the call reports a stall that 1 h from the environment would
 *     not), and rejects 0 and values above 24 h with -EINVAL;
 *   - a thread cancelled (pthread_cancel()) while its sk_synchronize_rcu()
 *     waits and reports a stall leaves the library working: a later grace
 *     period completes (the report's stdio calls are cancellation points;
 *     before the fix the thread died there holding gp_lock, and every
 *     later grace period hung: the child's alarm() caught it);
 *   - malformed values (abc, -5, 99999999999999999999, 1.5) print a warning
 *     naming SCALEKIT_RCU_STALL_MS, the program still works (exit 0), and
 *     the default (21 s) is used: a 400 ms stall is not reported.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "scalekit/rcu.h"
#include "sk_test.h"
#include "sk_test_util.h"

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* ---- child side ---------------------------------------------------------- */

struct sleeper {
	pthread_t t;
	const char *name;
	int qsbr;    /* hold as an online QSBR thread */
	int outside; /* sleep outside any section instead */
	long hold_ms;
	int in;
};

static void *sleeper_main(void *arg)
{
	struct sleeper *s = arg;

	pthread_setname_np(pthread_self(), s->name);
	sk_rcu_register_thread();
	fprintf(stderr, "%s tid=%ld\n", s->name, sk_test_gettid());
	if (s->outside) {
		STORE(s->in, 1);
		sk_test_sleep_ms(s->hold_ms);
		sk_rcu_read_lock();
		sk_rcu_read_unlock();
		return NULL;
	}
	if (s->qsbr)
		sk_rcu_thread_online();
	else
		sk_rcu_read_lock();
	STORE(s->in, 1);
	sk_test_sleep_ms(s->hold_ms);
	if (s->qsbr) {
		sk_rcu_quiescent_state();
		sk_rcu_thread_offline();
	} else {
		sk_rcu_read_unlock();
	}
	return NULL;
}

static int nop_ran;
static void nop_cb(struct sk_rcu_head *h)
{
	(void)h;
	__atomic_fetch_add(&nop_ran, 1, __ATOMIC_RELAXED);
}

static void *cancel_syncer(void *arg)
{
	(void)arg;
	sk_synchronize_rcu();
	return NULL;
}

/*
 * Mode "cancel": a reader holds its section while another thread waits in
 * sk_synchronize_rcu() and reports the stall; that thread is cancelled,
 * the reader leaves, and a grace period must still complete here (alarm:
 * a hang kills the child).
 */
static int cancel_main(void)
{
	static struct sleeper r = { .name = "held-reader", .hold_ms = 400 };
	pthread_t s;
	void *res;

	if (pthread_create(&r.t, NULL, sleeper_main, &r) != 0)
		return 2;
	while (!LOAD(r.in))
		sched_yield();
	if (pthread_create(&s, NULL, cancel_syncer, NULL) != 0)
		return 2;
	sk_test_sleep_ms(150); /* reports at 20, 60, 140 ms */
	pthread_cancel(s);
	pthread_join(s, &res);
	fprintf(stderr, "syncer %s\n",
		res == PTHREAD_CANCELED ? "cancelled" : "returned");
	pthread_join(r.t, NULL);
	alarm(10);
	sk_synchronize_rcu();
	sk_synchronize_rcu_expedited();
	fprintf(stderr, "child done\n");
	return 0;
}

/* Start the sleepers, wait in sk_synchronize_rcu(), print the wait. */
static int child_main(const char *mode)
{
	static struct sk_rcu_head h;
	static struct sleeper sl[2];
	int i, n = 1;
	long t0, t1;

	if (!strcmp(mode, "stall-reader") || !strcmp(mode, "setter")) {
		sl[0].name = "sleepy-reader";
		sl[0].hold_ms = 1500;
		if (!strcmp(mode, "setter") && sk_rcu_set_stall_ms(200))
			return 5;
	} else if (!strcmp(mode, "stall-qsbr")) {
		sl[0].name = "qsbr-sleeper";
		sl[0].qsbr = 1;
		sl[0].hold_ms = 1000;
	} else if (!strcmp(mode, "quiet")) {
		sl[0].name = "outside-sleeper";
		sl[0].outside = 1;
		sl[0].hold_ms = 600;
		sl[1].name = "brief-reader";
		sl[1].hold_ms = 100;
		n = 2;
	} else if (!strcmp(mode, "cancel")) {
		return cancel_main();
	} else if (!strcmp(mode, "plain")) {
		sl[0].name = "short-reader";
		sl[0].hold_ms = 400;
	} else {
		fprintf(stderr, "unknown child mode %s\n", mode);
		return 2;
	}
	for (i = 0; i < n; i++)
		if (pthread_create(&sl[i].t, NULL, sleeper_main, &sl[i]) != 0)
			return 2;
	for (i = 0; i < n; i++)
		while (!LOAD(sl[i].in))
			sched_yield();
	t0 = now_ms();
	sk_synchronize_rcu();
	t1 = now_ms();
	fprintf(stderr, "sync-ms=%ld\n", t1 - t0);
	for (i = 0; i < n; i++)
		pthread_join(sl[i].t, NULL);
	/* The rest of the library still works. */
	sk_synchronize_rcu();
	if (sk_call_rcu(&h, nop_cb) != 0)
		return 3;
	sk_rcu_barrier();
	if (__atomic_load_n(&nop_ran, __ATOMIC_RELAXED) != 1)
		return 4;
	fprintf(stderr, "child done\n");
	return 0;
}

/* ---- parent side ---------------------------------------------------------- */

/*
 * Every child the cases check: this program with --child=mode and
 * SCALEKIT_RCU_STALL_MS=value (unset when value is NULL).  The children
 * mostly sleep, so main() runs them all at once (sk_test_run_children())
 * before the cases read their results (6.6 s of sleeps in a row before).
 */
#define KID(mode, value) { mode, "SCALEKIT_RCU_STALL_MS", value, NULL, 0, 0 }
#define NBAD 4 /* the malformed values, first in kids[] */
static struct sk_test_run kids[] = {
	KID("plain", "abc"),	     KID("plain", "-5"),
	KID("plain", "99999999999999999999"),
	KID("plain", "1.5"),	     KID("plain", NULL),
	KID("stall-reader", "200"),  KID("setter", "3600000"),
	KID("stall-qsbr", "200"),    KID("quiet", "200"),
	KID("cancel", "20"),
};
#define NKIDS	(sizeof(kids) / sizeof(kids[0]))
#define KID_OUT (1 << 16)

static void run_all_children(void)
{
	static char out[NKIDS][KID_OUT];
	size_t i;

	for (i = 0; i < NKIDS; i++) {
		kids[i].out = out[i];
		kids[i].len = KID_OUT;
	}
	sk_test_run_children("test_rcu_stall", kids, NKIDS);
}

/*
 * The child of mode with value (NULL: the variable unset), logged; its
 * wait status in *st and its stderr returned.
 */
static const char *child_result(const char *mode, const char *value, int *st)
{
	size_t i;

	for (i = 0; i < NKIDS; i++) {
		const char *v = kids[i].value;

		if (strcmp(kids[i].mode, mode) != 0 || !v != !value ||
		    (v && strcmp(v, value) != 0))
			continue;
		fprintf(stderr, "[child %s, SCALEKIT_RCU_STALL_MS=%s]\n%s",
			mode, value ? value : "(unset)", kids[i].out);
		*st = kids[i].status;
		return kids[i].out;
	}
	fprintf(stderr, "no child %s with %s\n", mode, value ? value : "(unset)");
	exit(2);
}

/* The number after "key" in s, or -1. */
static long value_after(const char *s, const char *key)
{
	const char *p = strstr(s, key);

	return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

/*
 * Checks the reports of a child that stalled a grace period for its
 * sleeper: at least one, each naming the sleeper, the first not before
 * the threshold, and no more than exponential backoff allows in the
 * measured wait.
 */
static void check_stall_reports(const char *out, const char *name,
				const char *kind)
{
	long tid = -1, sync_ms, waited;
	char key[64], who[128];
	int reports, allowed;

	snprintf(key, sizeof(key), "%s tid=", name);
	tid = value_after(out, key);
	sync_ms = value_after(out, "sync-ms=");
	SK_CHECK_GT(tid, 0);
	SK_CHECK_GT(sync_ms, 0);
	reports = sk_test_count_substr(out, "RCU stall");
	SK_CHECK_GT(reports, 0);
	SK_CHECK_STR_CONTAINS(out, "threshold 200 ms");
	snprintf(who, sizeof(who), "thread %ld (\"%s\")", tid, name);
	SK_CHECK_STR_CONTAINS(out, who);
	SK_CHECK_EQ(sk_test_count_substr(out, who), reports);
	SK_CHECK_STR_CONTAINS(out, kind);
	waited = value_after(out, "has waited ");
	SK_CHECK_LE(200, waited); /* never before the threshold */
	/*
	 * Backoff: report k comes at least 200 * (2^k - 1) ms after the wait
	 * began, which was within the measured sync_ms.  (A fixed 200 ms
	 * interval would give sync_ms / 200 reports.)  +1 for rounding.
	 */
	for (allowed = 0; 200L * ((1L << (allowed + 1)) - 1) <= sync_ms;)
		allowed++;
	allowed++;
	fprintf(stderr, "%d stall reports in %ld ms (at most %d allowed)\n",
		reports, sync_ms, allowed);
	SK_CHECK_LE(reports, allowed);
	SK_CHECK(strstr(out, "warning") == NULL);
}

/*
 * A thread named "sleepy-reader" sleeps 1.5 s inside a read section while
 * sk_synchronize_rcu() waits, with SCALEKIT_RCU_STALL_MS=200: reported by
 * tid and name, with backoff.
 */
static void sleepy_reader_is_reported(const char *mode, const char *env)
{
	int st;
	const char *out = child_result(mode, env, &st);

	SK_CHECK_EXIT_0(st);
	check_stall_reports(out, "sleepy-reader",
			    "inside a read-side critical section");
	SK_CHECK_STR_CONTAINS(out, "child done");
}

static void stalled_reader_is_reported_with_backoff(void)
{
	sleepy_reader_is_reported("stall-reader", "200");
}

/*
 * The environment says 1 hour, the child then calls
 * sk_rcu_set_stall_ms(200): the 1.5 s stall is reported as with 200 ms.
 */
static void setter_replaces_the_env_threshold(void)
{
	sleepy_reader_is_reported("setter", "3600000");
}

/* Out-of-range thresholds: -EINVAL and the threshold is unchanged. */
static void setter_rejects_out_of_range(void)
{
	unsigned long old = sk_rcu_get_stall_ms();

	SK_CHECK_EQ(old, 21000ul); /* the variable is unset here */
	SK_CHECK_EQ(sk_rcu_set_stall_ms(0), -EINVAL);
	SK_CHECK_EQ(sk_rcu_set_stall_ms(86400001ul), -EINVAL);
	SK_CHECK_EQ(sk_rcu_get_stall_ms(), old);
	SK_CHECK_EQ(sk_rcu_set_stall_ms(86400000ul), 0);
	SK_CHECK_EQ(sk_rcu_get_stall_ms(), 86400000ul);
	SK_CHECK_EQ(sk_rcu_set_stall_ms(old), 0);
}

/* An online QSBR thread without quiescent states: the report says QSBR. */
static void stalled_qsbr_thread_is_reported(void)
{
	int st;
	const char *out = child_result("stall-qsbr", "200", &st);

	SK_CHECK_EXIT_0(st);
	check_stall_reports(out, "qsbr-sleeper", "QSBR");
	SK_CHECK_STR_CONTAINS(out, "child done");
}

/*
 * Negative controls, threshold 200 ms: a registered thread that sleeps
 * 600 ms outside its sections holds up nothing and is never named; a
 * reader that holds its section 100 ms is not reported when the grace
 * period indeed took less than the threshold (measured, so the check
 * holds on a slow machine too).
 */
static void readers_below_threshold_are_not_reported(void)
{
	int st;
	const char *out = child_result("quiet", "200", &st);
	long sync_ms = value_after(out, "sync-ms=");

	SK_CHECK_EXIT_0(st);
	SK_CHECK(strstr(out, "\"outside-sleeper\"") == NULL);
	SK_CHECK_GT(sync_ms, 0);
	if (sync_ms < 200)
		SK_CHECK_EQ(sk_test_count_substr(out, "RCU stall"), 0);
	SK_CHECK_STR_CONTAINS(out, "child done");
}

/*
 * Malformed SCALEKIT_RCU_STALL_MS values: a warning naming the variable,
 * exit 0, and the default threshold (a 400 ms stall is not reported, as it
 * would be if the value had been read as 0, 1 or another small number).
 * The variable unset: no warning either.
 */
static void bad_stall_env_warns_and_uses_default(void)
{
	const char *out;
	size_t i;
	int st;

	for (i = 0; i < NBAD; i++) {
		out = child_result("plain", kids[i].value, &st);
		SK_CHECK_EXIT_0(st);
		SK_CHECK_STR_CONTAINS(out, "SCALEKIT_RCU_STALL_MS");
		SK_CHECK_STR_CONTAINS(out, "warning");
		SK_CHECK_STR_CONTAINS(out, kids[i].value);
		SK_CHECK_STR_CONTAINS(out, "default");
		SK_CHECK_EQ(sk_test_count_substr(out, "RCU stall"), 0);
		SK_CHECK_STR_CONTAINS(out, "child done");
	}
	out = child_result("plain", NULL, &st);
	SK_CHECK_EXIT_0(st);
	SK_CHECK(strstr(out, "SCALEKIT_RCU_STALL_MS") == NULL);
	SK_CHECK_EQ(sk_test_count_substr(out, "RCU stall"), 0);
}

/*
 * pthread_cancel() of a thread waiting in sk_synchronize_rcu() while it
 * reports a stall: the later grace periods of the process complete.
 */
static void cancelled_waiter_leaves_grace_periods_working(void)
{
	int st;
	const char *out = child_result("cancel", "20", &st);

	SK_CHECK_EXIT_0(st);
	SK_CHECK_STR_CONTAINS(out, "RCU stall");
	SK_CHECK_STR_CONTAINS(out, "child done");
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strncmp(argv[1], "--child=", 8))
		return child_main(argv[1] + 8);
	sk_test_args(argc, argv);
	sk_test_seed_init();
	run_all_children();
	SK_RUN(stalled_reader_is_reported_with_backoff);
	SK_RUN(stalled_qsbr_thread_is_reported);
	SK_RUN(setter_replaces_the_env_threshold);
	SK_RUN(setter_rejects_out_of_range);
	SK_RUN(readers_below_threshold_are_not_reported);
	SK_RUN(bad_stall_env_warns_and_uses_default);
	SK_RUN(cancelled_waiter_leaves_grace_periods_working);
	return sk_test_report();
}
