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
 * The misuses.
 */

static void do_synchronize_in_section(void)
{
	sk_rcu_read_lock();
	sk_synchronize_rcu();
}

static void do_synchronize_in_nested_section(void)
{
	sk_rcu_read_lock();
	sk_rcu_read_lock();
	sk_rcu_read_unlock();
	sk_synchronize_rcu();
}

static void do_synchronize_in_section_of_online_qsbr(void)
{
	sk_rcu_thread_online();
	sk_rcu_read_lock();
	sk_synchronize_rcu();
}

static void synchronize_inside_read_section_aborts(void)
{
	const char *const *msg =
		NEEDLES("sk_synchronize_rcu()", "read-side critical section");

	expect_death(do_synchronize_in_section, 1, msg);
	expect_death(do_synchronize_in_nested_section, 1, msg);
	expect_death(do_synchronize_in_section_of_online_qsbr, 1, msg);
}

static void do_unlock_without_lock(void)
{
	sk_rcu_read_unlock();
}

static void do_unlock_twice(void)
{
	sk_rcu_read_lock();
	sk_rcu_read_unlock();
	sk_rcu_read_unlock();
}

static void do_unlock_on_online_qsbr(void)
{
	sk_rcu_thread_online();
	sk_rcu_read_unlock();
}

static void unbalanced_read_unlock_aborts(void)
{
	const char *const *msg = NEEDLES("unbalanced sk_rcu_read_unlock()");

	expect_death(do_unlock_without_lock, 1, msg);
	expect_death(do_unlock_twice, 1, msg);
	expect_death(do_unlock_on_online_qsbr, 1, msg);
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

static void do_qs_unregistered(void)
{
	sk_rcu_quiescent_state();
}

static void do_qs_general_reader(void)
{
	sk_rcu_register_thread();
	sk_rcu_read_lock();
	sk_rcu_read_unlock();
	sk_rcu_quiescent_state();
}

static void do_qs_offline(void)
{
	sk_rcu_thread_online();
	sk_rcu_thread_offline();
	sk_rcu_quiescent_state();
}

static void do_qs_in_section_of_online_qsbr(void)
{
	sk_rcu_thread_online();
	sk_rcu_read_lock();
	sk_rcu_quiescent_state();
}

#if SK_DEBUG
/* SK_DEBUG: the QSBR flavor's read lock counts nesting like read_lock. */
static void do_qs_in_qsbr_read_lock(void)
{
	sk_rcu_thread_online();
	sk_rcu_qsbr_read_lock();
	sk_rcu_quiescent_state();
}
#endif

static void quiescent_state_on_non_qsbr_thread_aborts(void)
{
	const char *const *msg = NEEDLES("sk_rcu_quiescent_state()",
					 "not an online QSBR reader");

	expect_death(do_qs_unregistered, 1, msg);
	expect_death(do_qs_general_reader, 1, msg);
	expect_death(do_qs_offline, 1, msg);
	/* Online, but inside read_lock: a different message. */
	expect_death(do_qs_in_section_of_online_qsbr, 1,
		     NEEDLES("sk_rcu_quiescent_state()",
			     "read-side critical section"));
#if SK_DEBUG
	expect_death(do_qs_in_qsbr_read_lock, 1,
		     NEEDLES("sk_rcu_quiescent_state()",
			     "read-side critical section"));
#endif
}

static void do_offline_unregistered(void)
{
	sk_rcu_thread_offline();
}

static void do_offline_twice(void)
{
	sk_rcu_thread_online();
	sk_rcu_thread_offline();
	sk_rcu_thread_offline();
}

static void do_offline_in_section_of_online_qsbr(void)
{
	sk_rcu_thread_online();
	sk_rcu_read_lock();
	sk_rcu_thread_offline();
}

static void offline_by_non_online_thread_aborts(void)
{
	const char *const *msg =
		NEEDLES("sk_rcu_thread_offline()", "not an online QSBR reader");

	expect_death(do_offline_unregistered, 1, msg);
	expect_death(do_offline_twice, 1, msg);
	expect_death(do_offline_in_section_of_online_qsbr, 1, msg);
}

static void do_unregister_in_section(void)
{
	sk_rcu_register_thread();
	sk_rcu_read_lock();
	sk_rcu_unregister_thread();
}

static void do_unregister_in_section_auto(void)
{
	sk_rcu_read_lock();
	sk_rcu_unregister_thread();
}

static void do_unregister_in_section_of_online_qsbr(void)
{
	sk_rcu_thread_online();
	sk_rcu_read_lock();
	sk_rcu_unregister_thread();
}

static void unregister_inside_read_section_aborts(void)
{
	const char *const *msg = NEEDLES("sk_rcu_unregister_thread()",
					 "read-side critical section");

	expect_death(do_unregister_in_section, 1, msg);
	expect_death(do_unregister_in_section_auto, 1, msg);
	expect_death(do_unregister_in_section_of_online_qsbr, 1, msg);
}

static void do_online_in_section(void)
{
	sk_rcu_read_lock();
	sk_rcu_thread_online();
}

static void online_inside_read_section_aborts(void)
{
	expect_death(do_online_in_section, 1,
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
