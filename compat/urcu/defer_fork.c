/* SPDX-License-Identifier: MIT */
/*
 * compat/urcu/defer_fork.c - liburcu's defer_rcu() and its fork hooks on
 * scalekit (docs/urcu-compat.md).
 *
 * defer_rcu(fct, p) is sk_defer_rcu(): fct(p) after a grace period, run
 * by scalekit's callback worker; no per-thread registration is needed,
 * and the barriers are sk_rcu_barrier(), which waits for every deferred
 * call (of all threads).
 *
 * Fork: scalekit keeps its own state right across fork() with
 * pthread_atfork() handlers (docs/rcu.md, "fork() and exit"), so
 * call_rcu_before_fork() and the after_fork functions only run the hooks
 * that containers registered (cds_lfht pauses and restarts its resize
 * worker), in liburcu's order.
 */
#include <errno.h>
#include <pthread.h>

#include "compat.h"

/* ---- defer_rcu ------------------------------------------------------------- */

static void defer(void (*fct)(void *p), void *p)
{
	int err = sk_defer_rcu(fct, p);

	if (err)
		sk__urcu_die("defer_rcu(%p, %p): error %d", (void *)fct, p, err);
}
SK__URCU_ALIAS3(defer_rcu, defer);

static int defer_register(void) { return 0; }
SK__URCU_ALIAS3(defer_register_thread, defer_register);

static void defer_nothing(void) {}
SK__URCU_ALIAS3(defer_unregister_thread, defer_nothing);

static void defer_barrier(void) { sk_rcu_barrier(); }
SK__URCU_ALIAS3(defer_barrier, defer_barrier);
SK__URCU_ALIAS3(defer_barrier_thread, defer_barrier);

/* ---- fork hooks of containers ---------------------------------------------- */

#define ATFORK_MAX 16

/*
 * The registered hooks, each with how many times it was registered (a
 * container registers once per table).  Guarded by: atfork_lock, which
 * call_rcu_before_fork() holds until the after_fork functions.
 */
static pthread_mutex_t atfork_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	struct urcu_atfork *af;
	unsigned long refs;
} atfork[ATFORK_MAX];

static void atfork_register(struct urcu_atfork *af)
{
	int i, free_slot = -1;

	pthread_mutex_lock(&atfork_lock);
	for (i = 0; i < ATFORK_MAX; i++) {
		if (atfork[i].af == af)
			break;
		if (!atfork[i].af && free_slot < 0)
			free_slot = i;
	}
	if (i == ATFORK_MAX && free_slot < 0)
		sk__urcu_die("urcu_register_rculfhash_atfork(): more than %d "
			     "distinct fork hooks",
			     ATFORK_MAX);
	if (i == ATFORK_MAX) {
		i = free_slot;
		atfork[i].af = af;
	}
	atfork[i].refs++;
	pthread_mutex_unlock(&atfork_lock);
}
SK__URCU_ALIAS3(register_rculfhash_atfork, atfork_register);

static void atfork_unregister(struct urcu_atfork *af)
{
	int i;

	pthread_mutex_lock(&atfork_lock);
	for (i = 0; i < ATFORK_MAX; i++)
		if (atfork[i].af == af && !--atfork[i].refs)
			atfork[i].af = NULL;
	pthread_mutex_unlock(&atfork_lock);
}
SK__URCU_ALIAS3(unregister_rculfhash_atfork, atfork_unregister);

enum fork_step { BEFORE, PARENT, CHILD };

static void run_hooks(enum fork_step step)
{
	int i;

	for (i = 0; i < ATFORK_MAX; i++) {
		struct urcu_atfork *af = atfork[i].af;

		if (!af)
			continue;
		if (step == BEFORE)
			af->before_fork(af->priv);
		else if (step == PARENT)
			af->after_fork_parent(af->priv);
		else
			af->after_fork_child(af->priv);
	}
}

static void before_fork(void)
{
	pthread_mutex_lock(&atfork_lock);
	run_hooks(BEFORE);
}
SK__URCU_ALIAS3(call_rcu_before_fork, before_fork);

static void after_fork_parent(void)
{
	run_hooks(PARENT);
	pthread_mutex_unlock(&atfork_lock);
}
SK__URCU_ALIAS3(call_rcu_after_fork_parent, after_fork_parent);

/* The child is single-threaded: the lock it inherited is made new. */
static void after_fork_child(void)
{
	run_hooks(CHILD);
	pthread_mutex_init(&atfork_lock, NULL);
}
SK__URCU_ALIAS3(call_rcu_after_fork_child, after_fork_child);
