/* SPDX-License-Identifier: MIT */
/*
 * tests/urcu/urcu_double_call.c - the layer's double-call_rcu() check
 * (docs/urcu-compat.md, "Misuse aborts"), written against liburcu's API
 * only (memb).  A reader thread holds a read section open so that no
 * callback runs; then a head is queued twice through the default
 * call_rcu_data:
 *   urcu_double_call pending   the head is the last one pushed (the top
 *                              of the pending list);
 *   urcu_double_call batch     the head is the batch of the carrier in
 *                              flight (the call_rcu_data was idle).
 * Both must abort with "is queued already" (in a child process, which the
 * test waits for: killed by SIGABRT).  A head with others pushed after it
 * is not checked (docs/urcu-compat.md).
 */
#define _GNU_SOURCE
#include "urcu_test.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static struct rcu_head a, b;
static int reader_in;

static void nothing(struct rcu_head *h) { (void)h; }

static void *reader(void *arg)
{
	(void)arg;
	rcu_register_thread();
	rcu_read_lock();
	__atomic_store_n(&reader_in, 1, __ATOMIC_RELEASE);
	for (;;)
		pause(); /* the process ends inside the section */
	return NULL;
}

static void double_call(const char *mode)
{
	pthread_t rd;

	URCU_CHECK(!pthread_create(&rd, NULL, reader, NULL));
	while (!__atomic_load_n(&reader_in, __ATOMIC_ACQUIRE))
		usleep(1000);
	call_rcu(&a, nothing); /* the batch of the carrier in flight */
	if (!strcmp(mode, "batch")) {
		call_rcu(&a, nothing);
	} else {
		call_rcu(&b, nothing); /* the top of the pending list */
		call_rcu(&b, nothing);
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "pending";
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	URCU_CHECK(pid >= 0);
	if (pid == 0) {
		double_call(mode);
		printf("ERROR: the second call_rcu() returned\n");
		_exit(1);
	}
	URCU_CHECK(waitpid(pid, &status, 0) == pid);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT) {
		printf("ERROR: the child was not aborted\n");
		return 1;
	}
	printf("%s: the child aborted\n", mode);
	return 0;
}
