/* SPDX-License-Identifier: MIT */
/*
 * test_rcu_death.c - misuse of the RCU API that would deadlock or corrupt
 * memory prints one message naming the call and the thread, then aborts.
 *
 * Each case runs in a child (fork()); the child's stderr goes through a
 * pipe to the parent, which asserts that the child died by SIGABRT and
 * that the message says what it should.  A negative control (correct use
 * of the same calls) must exit 0 and print nothing, so the harness itself
 * can tell a death from a life.
 *
 * The parent never starts a thread: ThreadSanitizer refuses new threads
 * in the child of a multi-threaded fork, and one case needs a thread.
 * ASan and TSan leave abort() alone (handle_abort=0 by default): the child
 * still dies by SIGABRT and the library's message is all it prints.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "scalekit/rcu.h"
#include "sk_test.h"
#include "sk_test_util.h"

/*
 * A child that neither dies nor exits within this many seconds is killed
 * by SIGALRM and reported as such: a missing check would make most of
 * these cases deadlock (synchronize inside a section waits for itself).
 * It is a hang guard, not a performance bound: the children do microseconds
 * of work.
 */
#define CHILD_HANG_GUARD_S 120

/*
 * Run fn in a child and check it died by SIGABRT printing exactly one
 * library message that contains every string of needles (NULL-ended).
 * main_thread: the misuse happens on the child's main thread, so the
 * message must name it ("thread <pid>").
 */
static void expect_death(void (*fn)(void), int main_thread,
			 const char *const *needles)
{
	struct sk_test_child c;
	char tid[64];

	sk_test_fork_child(fn, CHILD_HANG_GUARD_S, 0, &c);
	if (!WIFSIGNALED(c.status) || WTERMSIG(c.status) != SIGABRT)
		SK_T_FAIL("child %d did not die by SIGABRT (status %#x)",
			  (int)c.pid, c.status);
	for (; *needles; needles++)
		SK_CHECK_STR_CONTAINS(c.err, *needles);
	SK_CHECK_EQ(sk_test_count_substr(c.err, "scalekit: "), 1);
	if (main_thread) {
		snprintf(tid, sizeof(tid), "scalekit: thread %d: ", (int)c.pid);
		SK_CHECK_STR_CONTAINS(c.err, tid);
	} else {
		SK_CHECK_STR_CONTAINS(c.err, "scalekit: thread ");
	}
}

#define NEEDLES(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* ------------------------------------------------------------------------
 * The misuses: most are a few calls on the child's main thread, the last
 * one the misuse, made by do_calls().
 */

enum call {
	LOCK,	    /* sk_rcu_read_lock() */
	UNLOCK,	    /* sk_rcu_read_unlock() */
	QSBR_LOCK,  /* sk_rcu_qsbr_read_lock() */
	ONLINE,	    /* sk_rcu_thread_online() */
	OFFLINE,    /* sk_rcu_thread_offline() */
	QS,	    /* sk_rcu_quiescent_state() */
	REGISTER,   /* sk_rcu_register_thread() */
	UNREGISTER, /* sk_rcu_unregister_thread() */
	SYNC,	    /* sk_synchronize_rcu() */
	CALLS_END
};

#define CALLS(...) ((const enum call[]){ __VA_ARGS__, CALLS_END })

/* The calls of the next child, set by expect_calls_die() before the fork. */
static const enum call *child_calls;

static void do_calls(void)
{
	const enum call *c;

	for (c = child_calls; *c != CALLS_END; c++) {
		switch (*c) {
		case LOCK:
			sk_rcu_read_lock();
			break;
		case UNLOCK:
			sk_rcu_read_unlock();
			break;
		case QSBR_LOCK:
			sk_rcu_qsbr_read_lock();
			break;
		case ONLINE:
			(void)sk_rcu_thread_online();
			break;
		case OFFLINE:
			sk_rcu_thread_offline();
			break;
		case QS:
			sk_rcu_quiescent_state();
			break;
		case REGISTER:
			(void)sk_rcu_register_thread();
			break;
		case UNREGISTER:
			(void)sk_rcu_unregister_thread();
			break;
		default:
			sk_synchronize_rcu();
			break;
		}
	}
}

/* A child makes calls on its main thread and must die with needles. */
static void expect_calls_die(const enum call *calls,
			     const char *const *needles)
{
	child_calls = calls;
	expect_death(do_calls, 1, needles);
}

static void synchronize_inside_read_section_aborts(void)
{
	const char *const *msg =
		NEEDLES("sk_synchronize_rcu()", "read-side critical section");

	expect_calls_die(CALLS(LOCK, SYNC), msg);
	expect_calls_die(CALLS(LOCK, LOCK, UNLOCK, SYNC), msg); /* nested */
	expect_calls_die(CALLS(ONLINE, LOCK, SYNC), msg); /* online QSBR */
}

static void unbalanced_read_unlock_aborts(void)
{
	const char *const *msg = NEEDLES("unbalanced sk_rcu_read_unlock()");

	expect_calls_die(CALLS(UNLOCK), msg);
	expect_calls_die(CALLS(LOCK, UNLOCK, UNLOCK), msg);
	expect_calls_die(CALLS(ONLINE, UNLOCK), msg);
}

static void *exit_in_section_fn(void *arg)
{
	(void)arg;
	sk_rcu_read_lock();
	return NULL;
}

static void do_thread_exit_in_section(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, exit_in_section_fn, NULL) != 0)
		_exit(3);
	pthread_join(t, NULL);
}

static void *exit_in_nested_section_fn(void *arg)
{
	(void)arg;
	sk_rcu_register_thread();
	sk_rcu_read_lock();
	sk_rcu_read_lock();
	sk_rcu_read_unlock();
	pthread_exit(NULL);
}

static void do_thread_exit_in_nested_section(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, exit_in_nested_section_fn, NULL) != 0)
		_exit(3);
	pthread_join(t, NULL);
}

static void thread_exit_inside_read_section_aborts(void)
{
	const char *const *msg =
		NEEDLES("exited inside an RCU read-side critical section");

	expect_death(do_thread_exit_in_section, 0, msg);
	expect_death(do_thread_exit_in_nested_section, 0, msg);
}

static void quiescent_state_on_non_qsbr_thread_aborts(void)
{
	const char *const *msg = NEEDLES("sk_rcu_quiescent_state()",
					 "not an online QSBR reader");
	const char *const *in_section = NEEDLES("sk_rcu_quiescent_state()",
						"read-side critical section");

	expect_calls_die(CALLS(QS), msg); /* unregistered */
	expect_calls_die(CALLS(REGISTER, LOCK, UNLOCK, QS), msg); /* general */
	expect_calls_die(CALLS(ONLINE, OFFLINE, QS), msg);
	/* Online, but inside read_lock: a different message. */
	expect_calls_die(CALLS(ONLINE, LOCK, QS), in_section);
#if SK_DEBUG
	/* SK_DEBUG: the QSBR flavor's read lock counts nesting like read_lock. */
	expect_calls_die(CALLS(ONLINE, QSBR_LOCK, QS), in_section);
#endif
}

static void offline_by_non_online_thread_aborts(void)
{
	const char *const *msg =
		NEEDLES("sk_rcu_thread_offline()", "not an online QSBR reader");

	expect_calls_die(CALLS(OFFLINE), msg); /* unregistered */
	expect_calls_die(CALLS(ONLINE, OFFLINE, OFFLINE), msg);
	expect_calls_die(CALLS(ONLINE, LOCK, OFFLINE), msg);
}

static void unregister_inside_read_section_aborts(void)
{
	const char *const *msg = NEEDLES("sk_rcu_unregister_thread()",
					 "read-side critical section");

	expect_calls_die(CALLS(REGISTER, LOCK, UNREGISTER), msg);
	expect_calls_die(CALLS(LOCK, UNREGISTER), msg); /* registered by it */
	expect_calls_die(CALLS(ONLINE, LOCK, UNREGISTER), msg);
}

static void online_inside_read_section_aborts(void)
{
	expect_calls_die(CALLS(LOCK, ONLINE),
			 NEEDLES("sk_rcu_thread_online()",
				 "read-side critical section"));
}

/* ------------------------------------------------------------------------
 * Negative control: the same calls used correctly; the child exits 0.
 */

static void *correct_thread_fn(void *arg)
{
	(void)arg;
	sk_rcu_read_lock();
	sk_rcu_read_lock();
	sk_rcu_read_unlock();
	sk_rcu_read_unlock();
	sk_rcu_thread_online();
	sk_rcu_quiescent_state();
	sk_synchronize_rcu(); /* from an online QSBR thread: goes offline */
	sk_rcu_quiescent_state();
	/* Exits online: the exit handler puts it offline. */
	return NULL;
}

static void do_correct_usage(void)
{
	pthread_t t;

	sk_synchronize_rcu();
	sk_rcu_read_lock();
	sk_rcu_read_unlock();
	sk_rcu_register_thread();
	sk_rcu_register_thread();
	sk_rcu_thread_online();
	sk_rcu_read_lock();
	sk_rcu_read_unlock();
	sk_rcu_quiescent_state();
	sk_rcu_thread_offline();
	sk_rcu_read_lock();
	sk_rcu_read_unlock();
	sk_synchronize_rcu();
	if (pthread_create(&t, NULL, correct_thread_fn, NULL) != 0)
		_exit(3);
	pthread_join(t, NULL);
	sk_synchronize_rcu();
	if (sk_rcu_unregister_thread() != 0)
		_exit(4);
	if (sk_rcu_unregister_thread() != -EINVAL)
		_exit(5);
}

static void negative_control_correct_usage_exits_zero(void)
{
	struct sk_test_child c;

	sk_test_fork_child(do_correct_usage, CHILD_HANG_GUARD_S, 0, &c);
	SK_CHECK_EXIT_0(c.status);
	SK_CHECK_EQ(sk_test_count_substr(c.err, "scalekit: "), 0);
}

/* The harness's own twin: a child that aborts silently is not a pass. */
static void do_silent_abort(void)
{
	abort();
}

static void harness_rejects_silent_abort(void)
{
	struct sk_test_child c;

	sk_test_fork_child(do_silent_abort, CHILD_HANG_GUARD_S, 0, &c);
	SK_CHECK(WIFSIGNALED(c.status) && WTERMSIG(c.status) == SIGABRT);
	SK_CHECK_EQ(sk_test_count_substr(c.err, "scalekit: "), 0);
	SK_CHECK(strstr(c.err, "read-side critical section") == NULL);
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	SK_RUN(negative_control_correct_usage_exits_zero);
	SK_RUN(harness_rejects_silent_abort);
	SK_RUN(synchronize_inside_read_section_aborts);
	SK_RUN(unbalanced_read_unlock_aborts);
	SK_RUN(thread_exit_inside_read_section_aborts);
	SK_RUN(quiescent_state_on_non_qsbr_thread_aborts);
	SK_RUN(offline_by_non_online_thread_aborts);
	SK_RUN(unregister_inside_read_section_aborts);
	SK_RUN(online_inside_read_section_aborts);
	return sk_test_report();
}
