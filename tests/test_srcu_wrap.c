/* SPDX-License-Identifier: MIT */
/*
 * test_srcu_wrap.c - srcu.h across counter wrap: grace periods, cookies,
 * callbacks and reader counters near the 2^16, 2^31 and 2^32 boundaries,
 * on 64-bit and on 32-bit (ILP32, -m32) builds, where unsigned long wraps
 * at 2^32.
 *
 * White box: the hidden test hooks of src/srcu_*.c (declared here, in no
 * header) start a domain's grace-period numbers near a boundary; the reader-counter tests move the calling thread's own
 * slot counters (ABI fields of struct sk_srcu_slot, reached through the
 * private d->state->dir and the idx) by the same amount a long run of sections
 * would, in a domain no other thread uses meanwhile.
 *
 * No assertion bounds wall-clock time; a sleep only gives a broken library
 * the chance to end a grace period early before a "not yet" check.  A wait
 * that a working library ends is reported as a hang after HANG_S seconds,
 * and SIGALRM ends the program with a message as a last resort.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal/testing.h" /* the testing build: tests/testing.cmake */
#include "scalekit/rcu.h"
#include "scalekit/srcu.h"

/* White box: the private state of a domain (d->state). */
#include "internal/srcu.h"
#include "sk_test.h"
#include "sk_test_srcu.h"
#include "sk_test_util.h"

/* Seconds after which a wait that a working library ends is a hang. */
#define HANG_S 20

/* ---- helpers ------------------------------------------------------------- */

/* Wait until *f is nonzero; 0 after HANG_S seconds (reported as a hang). */
static int wait_flag(int *f, const char *what)
{
	double end = sk_test_now() + HANG_S;

	while (!LOAD(*f)) {
		if (sk_test_now() > end) {
			fprintf(stderr, "  hang: %s did not happen in %d s\n",
				what, HANG_S);
			return 0;
		}
		sk_test_sleep_us(100);
	}
	return 1;
}

/* Poll cookie until it completes; 0 after HANG_S seconds (a hang). */
static int poll_until(struct sk_srcu *d, unsigned long cookie)
{
	double end = sk_test_now() + HANG_S;

	while (!sk_poll_state_synchronize_srcu(d, cookie)) {
		if (sk_test_now() > end) {
			fprintf(stderr, "  hang: cookie %lu did not complete "
					"in %d s\n",
				cookie, HANG_S);
			SK_CHECK(0);
			return 0;
		}
		sk_test_sleep_us(100);
	}
	return 1;
}

/*
 * A grace period of d must wait for a section that is open now: start
 * one, check it has not ended after a pause, call release(arg) (which
 * ends the section) and check it ends.  Returns 1 when it waited.
 */
static int gp_waits_for_open_section(struct sk_srcu *d,
				     void (*release)(void *), void *arg)
{
	struct syncer s;
	int early;

	syncer_start(&s, d, 0);
	sk_test_sleep_ms(30);
	early = LOAD(s.done);
	if (early)
		fprintf(stderr, "  a grace period of %p ended while a "
				"pre-existing section was open\n",
			(void *)d);
	release(arg);
	if (wait_flag(&s.done, "the grace period after the section ended"))
		sk_test_thread_join(s.tid);
	return !early;
}

static void holder_release(void *arg)
{
	holder_finish(arg);
}

/* The slot of the caller's own section idx in d (private: d->state->dir). */
static struct sk_srcu_slot *slot_of(struct sk_srcu *d, int idx)
{
	unsigned int t = ((unsigned int)idx >> 1) & 0x7fffu;

	return &d->state->dir[(t - 1) / SK__SRCU_CHUNK_SLOTS]
		      [(t - 1) % SK__SRCU_CHUNK_SLOTS];
}

/* ---- grace-period numbers and cookies ------------------------------------ */

/*
 * Rounds of d's grace periods starting just below boundary b: each takes
 * a cookie while a reader holds the domain, checks it and a polled one
 * stay open with a callback queued, releases the reader and checks that
 * both complete, the callback runs and the cookies grow.
 */
static void rounds_across(uint64_t b)
{
	struct sk_srcu *d = domain_new();
	unsigned long prev = 0, c, p;
	struct counted cb;
	struct holder h;
	int i;

	sk__srcu_test_set_seq(d, b - 3);
	for (i = 0; i < 6; i++) {
		holder_start(&h, d, NULL);
		c = sk_get_state_synchronize_srcu(d);
		p = sk_start_poll_synchronize_srcu(d);
		memset(&cb, 0, sizeof(cb));
		SK_CHECK_EQ(sk_call_srcu(d, &cb.rh, counted_cb), 0);
		SK_CHECK(c != SK_RCU_COOKIE_COMPLETED);
		SK_CHECK(p != SK_RCU_COOKIE_COMPLETED);
		if (i)
			SK_CHECK_GT((long)(c - prev), 0); /* grows, modulo */
		prev = c;
		sk_test_sleep_ms(5);
		SK_CHECK_EQ(sk_poll_state_synchronize_srcu(d, c), 0);
		SK_CHECK_EQ(sk_poll_state_synchronize_srcu(d, p), 0);
		SK_CHECK_EQ(LOAD(cb.runs), 0);
		holder_finish(&h);
		sk_srcu_barrier(d);
		SK_CHECK_EQ(LOAD(cb.runs), 1);
		sk_synchronize_srcu(d);
		SK_CHECK_EQ(sk_poll_state_synchronize_srcu(d, c), 1);
		SK_CHECK_EQ(sk_poll_state_synchronize_srcu(d, p), 1);
		SK_CHECK_EQ(sk_poll_state_synchronize_srcu(
				    d, SK_RCU_COOKIE_COMPLETED),
			    1);
	}
	/* A synchronize across the boundary waits for a reader too. */
	holder_start(&h, d, NULL);
	SK_CHECK(gp_waits_for_open_section(d, holder_release, &h));
	domain_free(d);
}

static void grace_periods_cookies_callbacks_across_2_16(void)
{
	rounds_across(1ULL << 16);
}

static void grace_periods_cookies_callbacks_across_2_31(void)
{
	rounds_across(1ULL << 31);
}

/* On ILP32 targets the cookie (unsigned long) wraps here. */
static void grace_periods_cookies_callbacks_across_2_32(void)
{
	rounds_across(1ULL << 32);
}

/*
 * The cookie of the grace period whose number truncates to 0 would read as
 * SK_RCU_COOKIE_COMPLETED: the numbers step over it.  One grace period at
 * a time, each named by get_state and driven by start_poll only, so that
 * every number is seen.  Only where unsigned long is narrower than the
 * 64-bit numbers (ILP32): elsewhere no number gets there.
 */
static void no_cookie_reads_as_completed_across_ulong_wrap(void)
{
	uint64_t b = (uint64_t)ULONG_MAX + 1;
	unsigned long c, p;
	struct sk_srcu *d;
	struct holder h;
	int i;

	if (b == 0) {
		fprintf(stderr, "  skipped: unsigned long has 64 bits\n");
		return;
	}
	d = domain_new();
	sk__srcu_test_set_seq(d, b - 3);
	for (i = 0; i < 5; i++) {
		holder_start(&h, d, NULL);
		c = sk_get_state_synchronize_srcu(d);
		p = sk_start_poll_synchronize_srcu(d);
		SK_CHECK(c != SK_RCU_COOKIE_COMPLETED);
		SK_CHECK_EQ(p, c);
		sk_test_sleep_ms(5);
		SK_CHECK_EQ(sk_poll_state_synchronize_srcu(d, c), 0);
		holder_finish(&h);
		if (!poll_until(d, c))
			break;
	}
	domain_free(d);
}

/* ---- reader counters ------------------------------------------------------ */

/*
 * n more sections on index bit of s, all ended by other threads (the
 * only way its count moves: the owner's own ends take back what its
 * starts added): cnt[] and remote[] move by n, the key says remote[]
 * counts, and the live owner's tag count (its sections ended elsewhere)
 * moves by n too, as remote_unlock() does.
 */
static void slot_advance(struct sk_srcu_slot *s, int bit, unsigned long n)
{
	unsigned int t = ((unsigned int)s->key >> 1) & 0x7fffu;
	unsigned long *tag = slot_tag(s, t);

	s->cnt[bit] += n;
	s->remote[bit] += n;
	s->key |= SK__SRCU_KEY_REMOTE;
	*tag = (*tag & ~SRCU_TAG_COUNT) | ((*tag + n) & SRCU_TAG_COUNT);
}

static int handoff_idx;
static struct sk_srcu *handoff_d;

static void *unlock_handed_off(void *arg)
{
	(void)arg;
	sk_srcu_read_unlock(handoff_d, handoff_idx);
	return NULL;
}

static void end_on_another_thread(void *arg)
{
	pthread_t t;

	(void)arg;
	sk_test_thread_start(&t, unlock_handed_off, NULL);
	sk_test_thread_join(t);
}

/*
 * The caller's own counters just below ULONG_MAX: sections (nested, and
 * one ended by another thread) cross the wrap without a false "unbalanced"
 * abort, held tracking stays right and grace periods still wait.
 * Library bug seen here: the unlock's balance check compared the counters
 * as unsigned numbers, so the first unlock after the count wrapped
 * aborted.
 */
static void reader_counters_cross_ulong_wrap(void)
{
	struct sk_srcu *d = domain_new();
	struct sk_srcu_slot *s;
	int i, bit, b0, idx[8];

	idx[0] = sk_srcu_read_lock(d);
	sk_srcu_read_unlock(d, idx[0]);
	s = slot_of(d, idx[0]);
	for (bit = 0; bit < 2; bit++)
		slot_advance(s, bit, ULONG_MAX - 3 - s->cnt[bit]);
	for (i = 0; i < 8; i++) {
		idx[i] = sk_srcu_read_lock(d);
		SK_CHECK(sk_srcu_read_lock_held(d));
	}
	b0 = idx[0] & 1;
	SK_CHECK_GT(8UL, s->cnt[b0]); /* wrapped */
	for (i = 7; i >= 0; i--)
		sk_srcu_read_unlock(d, idx[i]);
	SK_CHECK(!sk_srcu_read_lock_held(d));
	sk_synchronize_srcu(d);
	/* Both index bits, a section ended elsewhere, grace periods wait. */
	for (i = 0; i < 4; i++) {
		handoff_d = d;
		handoff_idx = sk_srcu_read_lock(d);
		SK_CHECK(gp_waits_for_open_section(d, end_on_another_thread,
						   NULL));
		SK_CHECK(!sk_srcu_read_lock_held(d));
	}
	domain_free(d);
}

/*
 * The idle fast path (no grace-period scan when nothing changed since the
 * domain was last found idle) after its one reader thread made exactly
 * 2^N - 1 more sections (N: bits of unsigned long; the lock count is back
 * where it was) and handed the last one, still open, to another thread
 * before exiting.  Library bug seen here: the fast path compared the lock
 * count only, took the domain for idle and ended the grace period under
 * the open section.
 */
static struct sk_srcu *idle_d;

static void *owner_main(void *arg)
{
	struct sk_srcu_slot *s;
	int idx, bit;

	(void)arg;
	sk_srcu_read_unlock(idle_d, sk_srcu_read_lock(idle_d));
	sk_synchronize_srcu(idle_d); /* records the idle snapshot */
	idx = sk_srcu_read_lock(idle_d);
	s = slot_of(idle_d, idx);
	bit = idx & 1;
	/*
	 * 2^N - 1 more sections on bit, all ended elsewhere: the count
	 * wraps back to where it was (the ends elsewhere do not).
	 */
	slot_advance(s, bit, ULONG_MAX);
	handoff_d = idle_d;
	handoff_idx = idx;
	return NULL; /* exits with the section open */
}

static void idle_fast_path_not_fooled_by_lock_count_wrap(void)
{
	pthread_t t;

	idle_d = domain_new();
	sk_test_thread_start(&t, owner_main, NULL);
	sk_test_thread_join(t);
	SK_CHECK(gp_waits_for_open_section(idle_d, end_on_another_thread,
					   NULL));
	sk_synchronize_srcu(idle_d);
	domain_free(idle_d);
}

/*
 * The idle fast path with one count per index: the one reader thread's
 * own balanced sections since the snapshot bring its count back (the
 * fast path holds, with no heavy fence: none of its sections is open);
 * a section of it ended by another thread moves its ends elsewhere (the
 * fast path does not hold: the scan and its heavy fence run).  Both with
 * the count just below the wrap.
 */
/* Hidden in every build of the library (src/barrier.c). */
unsigned long sk__fence_heavy_count(void);

static void idle_fast_path_after_own_sections(void)
{
	struct sk_srcu *d = domain_new();
	int mb = sk_fence_uses_membarrier(); /* else nothing is counted */
	struct sk_srcu_slot *s;
	unsigned long heavy;
	int i, idx;

	idx = sk_srcu_read_lock(d);
	sk_srcu_read_unlock(d, idx);
	s = slot_of(d, idx);
	slot_advance(s, idx & 1, ULONG_MAX - 1 - s->cnt[idx & 1]);
	sk_synchronize_srcu(d); /* records the idle snapshot */
	for (i = 0; i < 4; i++)
		sk_srcu_read_unlock(d, sk_srcu_read_lock(d));
	heavy = sk__fence_heavy_count();
	sk_synchronize_srcu(d);
	SK_CHECK_EQ(sk__fence_heavy_count(), heavy);
	handoff_d = d;
	handoff_idx = sk_srcu_read_lock(d);
	end_on_another_thread(NULL);
	heavy = sk__fence_heavy_count();
	sk_synchronize_srcu(d);
	if (mb)
		SK_CHECK_GT(sk__fence_heavy_count(), heavy);
	domain_free(d);
}

/* ---- slot caches ----------------------------------------------------------- */

/*
 * A thread's slot cache keeps its way pointing at the slot of a released
 * domain (type-stable: the slot is pooled, not freed); a new domain at the
 * same address must not take it as the thread's binding until the thread
 * bound it anew, and its sections must count where grace periods look.
 * Library bug seen here on 32-bit targets (when caches were tagged with
 * domain gens): gens were unsigned long, the new gen equalled the cached
 * one, the fast path counted the section in the freed slot and grace
 * periods did not wait for it.
 */
static void stale_slot_cache_counts_in_the_new_life(void)
{
	struct sk_srcu *d = domain_new();
	int round, idx;

	for (round = 0; round < 4; round++) {
		sk_srcu_read_unlock(d, sk_srcu_read_lock(d)); /* caches */
		SK_CHECK_EQ(sk_srcu_destroy(d), 0);
		SK_CHECK_EQ(sk_srcu_init(d), 0);
		idx = sk_srcu_read_lock(d);
		handoff_d = d;
		handoff_idx = idx;
		SK_CHECK(gp_waits_for_open_section(d, end_on_another_thread,
						   NULL));
	}
	domain_free(d);
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_deadline("test_srcu_wrap (a wait that never ended?)",
			 10 * HANG_S);
	sk_test_seed_init();
	fprintf(stderr, "unsigned long: %u bits; slot caches %s\n",
		(unsigned int)(sizeof(unsigned long) * 8),
		sk_fence_uses_membarrier() ? "on (membarrier)"
					   : "off (no membarrier)");
	SK_RUN(grace_periods_cookies_callbacks_across_2_16);
	SK_RUN(grace_periods_cookies_callbacks_across_2_31);
	SK_RUN(grace_periods_cookies_callbacks_across_2_32);
	SK_RUN(no_cookie_reads_as_completed_across_ulong_wrap);
	SK_RUN(reader_counters_cross_ulong_wrap);
	SK_RUN(idle_fast_path_not_fooled_by_lock_count_wrap);
	SK_RUN(idle_fast_path_after_own_sections);
	SK_RUN(stale_slot_cache_counts_in_the_new_life);
	return sk_test_report();
}
