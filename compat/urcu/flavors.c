/* SPDX-License-Identifier: MIT */
/*
 * compat/urcu/flavors.c - liburcu's read side, registration, grace
 * periods, polling and flavor tables on scalekit (docs/urcu-compat.md).
 * The three flavors share scalekit's one RCU domain; they differ in
 * registration and in what their readers are (general or QSBR).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "compat.h"

void sk__urcu_die(const char *fmt, ...)
{
	va_list ap;

	fputs("scalekit-urcu: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

int sk__urcu_wait_enter(void)
{
	if (!sk_rcu_read_lock_held())
		return 0;
	sk_rcu_thread_offline(); /* reports a caller inside a read section */
	return 1;
}

void sk__urcu_wait_exit(int was_online)
{
	if (was_online && sk_rcu_thread_online() != 0)
		sk__urcu_die("cannot put the thread back online: out of memory");
}

/* ---- read side: general readers (memb, bp) ------------------------------ */

static void general_read_lock(void) { sk_rcu_read_lock(); }
static void general_read_unlock(void) { sk_rcu_read_unlock(); }
static int read_ongoing(void) { return sk_rcu_read_lock_held(); }
static void nothing(void) {}

void urcu_memb_read_lock(void) __attribute__((alias("general_read_lock")));
void urcu_memb_read_unlock(void) __attribute__((alias("general_read_unlock")));
int urcu_memb_read_ongoing(void) __attribute__((alias("read_ongoing")));
void urcu_bp_read_lock(void) __attribute__((alias("general_read_lock")));
void urcu_bp_read_unlock(void) __attribute__((alias("general_read_unlock")));
int urcu_bp_read_ongoing(void) __attribute__((alias("read_ongoing")));

/* ---- read side: QSBR readers ---------------------------------------------- */

/* Compiled with the library's SK_DEBUG: nothing unless it is >= 1. */
void urcu_qsbr_read_lock(void) { sk_rcu_qsbr_read_lock(); }
void urcu_qsbr_read_unlock(void) { sk_rcu_qsbr_read_unlock(); }
int urcu_qsbr_read_ongoing(void) __attribute__((alias("read_ongoing")));
void urcu_qsbr_quiescent_state(void) { sk_rcu_quiescent_state(); }

int sk__urcu_qsbr_used;

void urcu_qsbr_thread_online(void)
{
	sk__urcu_note_qsbr();
	if (sk_rcu_thread_online() != 0)
		sk__urcu_die("rcu_thread_online(): out of memory registering "
			     "the thread");
}

/* Offline already: nothing, as liburcu. Inside sk_rcu_read_lock(): abort. */
void urcu_qsbr_thread_offline(void)
{
	if (sk_rcu_read_lock_held())
		sk_rcu_thread_offline();
}

/* ---- registration --------------------------------------------------------- */

void urcu_memb_register_thread(void)
{
	if (sk_rcu_register_thread() != 0)
		sk__urcu_die("rcu_register_thread(): out of memory");
}

/* Unregistered already (scalekit may have done it): nothing. */
static void unregister_thread(void) { (void)sk_rcu_unregister_thread(); }

void urcu_memb_unregister_thread(void) __attribute__((alias("unregister_thread")));
void urcu_qsbr_unregister_thread(void) __attribute__((alias("unregister_thread")));

/* liburcu-qsbr's registration puts the thread online: so does this one. */
void urcu_qsbr_register_thread(void)
{
	sk__urcu_note_qsbr();
	if (sk_rcu_thread_online() != 0)
		sk__urcu_die("rcu_register_thread(): out of memory");
}

/* bp: scalekit registers at the first read lock and at thread exit. */
void urcu_bp_register_thread(void) __attribute__((alias("nothing")));
void urcu_memb_init(void) __attribute__((alias("nothing")));
/* bp's fork hooks: scalekit's own pthread_atfork handlers do that work. */
void urcu_bp_before_fork(void) __attribute__((alias("nothing")));
void urcu_bp_after_fork_parent(void) __attribute__((alias("nothing")));
void urcu_bp_after_fork_child(void) __attribute__((alias("nothing")));

/* ---- grace periods and polling ---------------------------------------- */

static void synchronize(void) { sk_synchronize_rcu(); }
SK__URCU_ALIAS3(synchronize_rcu, synchronize);

static struct urcu_gp_poll_state start_poll(void)
{
	struct urcu_gp_poll_state s = { sk_start_poll_synchronize_rcu() };

	return s;
}
SK__URCU_ALIAS3(start_poll_synchronize_rcu, start_poll);

static bool poll_state(struct urcu_gp_poll_state state)
{
	return sk_poll_state_synchronize_rcu(state.grace_period_id) != 0;
}
SK__URCU_ALIAS3(poll_state_synchronize_rcu, poll_state);

/* ---- the flavor tables (liburcu-cds calls through them) ----------------- */

/*
 * Flavor f's table; qs, off, on and unreg are its quiescent state,
 * offline, online and unregistration.  liburcu-cds 0.13 never passes
 * update_call_rcu an rcu_head of its own (its resize runs on its own
 * work queue), so the different rcu_head layout of this layer (see
 * urcu/call-rcu.h) never meets code compiled against liburcu's.
 */
#define SK__URCU_FLAVOR(f, qs, off, on, unreg)                              \
	const struct rcu_flavor_struct f##_flavor = {                       \
		.read_lock = f##_read_lock,                                 \
		.read_unlock = f##_read_unlock,                             \
		.read_ongoing = f##_read_ongoing,                           \
		.read_quiescent_state = qs,                                 \
		.update_call_rcu = f##_call_rcu,                            \
		.update_synchronize_rcu = f##_synchronize_rcu,              \
		.update_defer_rcu = f##_defer_rcu,                          \
		.thread_offline = off,                                      \
		.thread_online = on,                                        \
		.register_thread = f##_register_thread,                     \
		.unregister_thread = unreg,                                 \
		.barrier = f##_barrier,                                     \
		.register_rculfhash_atfork = f##_register_rculfhash_atfork, \
		.unregister_rculfhash_atfork =                              \
			f##_unregister_rculfhash_atfork,                    \
	}

SK__URCU_FLAVOR(urcu_memb, nothing, nothing, nothing,
		urcu_memb_unregister_thread);
SK__URCU_FLAVOR(urcu_qsbr, urcu_qsbr_quiescent_state, urcu_qsbr_thread_offline,
		urcu_qsbr_thread_online, urcu_qsbr_unregister_thread);
SK__URCU_FLAVOR(urcu_bp, nothing, nothing, nothing, nothing);
