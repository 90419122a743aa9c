/* SPDX-License-Identifier: MIT */
/*
 * Internals shared by the modules of libscalekit.  Never installed; every
 * function here has hidden visibility (the library is built with
 * -fvisibility=hidden and these carry no SK_API).
 */
#ifndef SCALEKIT_INTERNAL_UTIL_H
#define SCALEKIT_INTERNAL_UTIL_H

#include <limits.h>
#include <linux/futex.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "scalekit/rcu.h"

/* Doubly linked list node used inside library structures. */
struct sk__link {
	struct sk__link *next, *prev;
};

#define SK__CONTAINER_OF(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/*
 * Choose the fences' mode (sk_barrier__fence_sys) if not done yet
 * (src/barrier.c).  For constructors only: single-threaded, at load time.
 */
void sk__barrier_init(void);

/* 1 when the environment variable is set to something other than "" or "0". */
int sk__env_flag(const char *name);

/*
 * Read a positive integer tunable from the environment.  A missing value
 * yields def silently; a malformed one yields def with a warning on stderr.
 */
unsigned long sk__env_ulong(const char *name, unsigned long def,
			    unsigned long min, unsigned long max);

/* Report API misuse by the calling thread on stderr, then abort(). */
__attribute__((noreturn, format(printf, 1, 2))) void sk__die(const char *fmt,
							      ...);

/* The kernel's id for the calling thread. */
static inline long sk__gettid(void)
{
	return syscall(SYS_gettid);
}

/* Monotonic time in nanoseconds. */
static inline uint64_t sk__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Sleep while *addr == val (or until woken); private futex. */
static inline void sk__futex_wait(int *addr, int val)
{
	syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

/* Same with a relative timeout in nanoseconds. */
static inline void sk__futex_wait_ns(int *addr, int val, uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u),
			       (long)(ns % 1000000000u) };

	syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
}

/* Wake up to n sleepers on addr. */
static inline void sk__futex_wake(int *addr, int n)
{
	syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

/*
 * Minimal intrusive circular doubly linked list for library internals
 * (the public, RCU-safe list lives in scalekit/list.h).
 */

static inline void sk__link_init(struct sk__link *h)
{
	h->next = h->prev = h;
}

static inline int sk__link_empty(const struct sk__link *h)
{
	return h->next == h;
}

static inline void sk__link_add_tail(struct sk__link *n, struct sk__link *h)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}

static inline void sk__link_del(struct sk__link *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}

/* Move every node of from to the tail of to; from becomes empty. */
static inline void sk__link_splice_tail(struct sk__link *from,
					struct sk__link *to)
{
	if (sk__link_empty(from))
		return;
	from->next->prev = to->prev;
	to->prev->next = from->next;
	from->prev->next = to;
	to->prev = from->prev;
	sk__link_init(from);
}

#endif /* SCALEKIT_INTERNAL_UTIL_H */
