/* SPDX-License-Identifier: MIT */
/*
 * test_srcu_death.c - srcu.h misuse that must abort with a message, and
 * look-alike uses that must not.
 *
 * Each case runs in a child (fork + waitpid) whose stderr goes to a pipe;
 * the parent asserts how the child ended (SIGABRT, or exit 0 for allowed
 * uses) and what it printed.  The parent never touches SRCU, so every
 * child starts without the SRCU worker thread and with no thread index
 * taken (fork() keeps neither usable).  A child whose misuse is not
 * detected exits with CHILD_RETURNED instead of hanging where it can.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "scalekit/srcu.h"
#include "sk_test.h"
#include "sk_test_util.h"

/* Exit status of a child whose misuse call returned instead of aborting. */
#define CHILD_RETURNED 3

static struct sk_srcu dom_a = SK_SRCU_INITIALIZER(dom_a);
static struct sk_srcu dom_b = SK_SRCU_INITIALIZER(dom_b);

/*
 * Run fn in a child (see sk_test_fork_child()): it must exit 0 and print
 * nothing.
 */
static void expect_silent_exit(void (*fn)(void))
{
	struct sk_test_child c;

	sk_test_fork_child(fn, 0, 1, &c);
	SK_CHECK_EXIT_0(c.status);
	SK_CHECK_EQ(c.err[0], '\0');
}

/*
 * Run fn in a child; it must abort with m1 and (unless NULL) m2 on stderr.
 * A child whose misuse call returned exits with CHILD_RETURNED.
 */
static void expect_abort(void (*fn)(void), const char *m1, const char *m2)
{
	sk_test_expect_abort(fn, 0, m1, m2);
}

/* ---- children ------------------------------------------------------------ */

/* Inside a section of domain a, a wait for a: fn(&dom_a). */
static void wait_in_own_section(void (*fn)(struct sk_srcu *))
{
	int idx = sk_srcu_read_lock(&dom_a);

	fn(&dom_a);
	sk_srcu_read_unlock(&dom_a, idx);
	_exit(CHILD_RETURNED);
}

static void child_synchronize_in_own_section(void)
{
	wait_in_own_section(sk_synchronize_srcu);
}

static void child_expedited_in_own_section(void)
{
	wait_in_own_section(sk_synchronize_srcu_expedited);
}

static void child_synchronize_in_nested_own_section(void)
{
	int outer = sk_srcu_read_lock(&dom_a);
	int inner = sk_srcu_read_lock(&dom_a);

	sk_srcu_read_unlock(&dom_a, inner);
	sk_synchronize_srcu(&dom_a); /* still inside outer */
	sk_srcu_read_unlock(&dom_a, outer);
	_exit(CHILD_RETURNED);
}

static void child_synchronize_in_other_domain_section(void)
{
	int idx = sk_srcu_read_lock(&dom_b), ia;

	/* Allowed: a reader of a in b's section, then a's grace periods. */
	ia = sk_srcu_read_lock(&dom_a);
	sk_srcu_read_unlock(&dom_a, ia);
	sk_synchronize_srcu(&dom_a);
	sk_synchronize_srcu_expedited(&dom_a);
	sk_srcu_barrier(&dom_a);
	sk_srcu_read_unlock(&dom_b, idx);
	if (sk_srcu_destroy(&dom_a) != 0 || sk_srcu_destroy(&dom_b) != 0)
		_exit(4);
	_exit(0);
}

static void child_barrier_in_own_section(void)
{
	wait_in_own_section(sk_srcu_barrier);
}

/*
 * A section of domain a, then one more unlock of a: with the section's
 * idx again (bogus < 0) or with bogus.
 */
static void unlock_again_after_section(int bogus)
{
	int idx = sk_srcu_read_lock(&dom_a);

	sk_srcu_read_unlock(&dom_a, idx);
	sk_srcu_read_unlock(&dom_a, bogus < 0 ? idx : bogus);
	_exit(CHILD_RETURNED);
}

static void child_unlock_twice(void)
{
	unlock_again_after_section(-1);
}

static int handoff_idx;

static void *synchronize_a(void *arg)
{
	(void)arg;
	sk_synchronize_srcu(&dom_a);
	return NULL;
}

static void *unlock_handed_off(void *arg)
{
	(void)arg;
	sk_srcu_read_unlock(&dom_a, handoff_idx);
	return NULL;
}

/* Ended by another thread, then once more by that thread. */
static void child_remote_unlock_twice(void)
{
	pthread_t t;

	handoff_idx = sk_srcu_read_lock(&dom_a);
	sk_test_thread_start(&t, unlock_handed_off, NULL);
	pthread_join(t, NULL);
	sk_test_thread_start(&t, unlock_handed_off, NULL);
	pthread_join(t, NULL);
	_exit(CHILD_RETURNED);
}

/*
 * Ended by another thread, then once more by the locker itself, which then
 * enters another section: a grace period must not end under it (the
 * second unlock aborts).
 */
static void child_remote_then_locker_unlock(void)
{
	pthread_t t;
	int idx;

	handoff_idx = sk_srcu_read_lock(&dom_a);
	sk_test_thread_start(&t, unlock_handed_off, NULL);
	pthread_join(t, NULL);
	sk_srcu_read_unlock(&dom_a, handoff_idx);
	idx = sk_srcu_read_lock(&dom_a);
	sk_test_thread_start(&t, synchronize_a, NULL);
	pthread_join(t, NULL);
	sk_srcu_read_unlock(&dom_a, idx);
	_exit(CHILD_RETURNED);
}

static void child_bogus_idx(void)
{
	unlock_again_after_section(12345);
}

static void child_bogus_idx_fresh_domain(void)
{
	sk_srcu_read_unlock(&dom_a, 12345); /* no section ever in a */
	_exit(CHILD_RETURNED);
}

/*
 * idx 0 and 1 are never returned to a thread with its own counters (they
 * name the shared counters of threads without one).
 */
static void child_bogus_idx_zero(void)
{
	unlock_again_after_section(0);
}

/* An idx of domain a ended on domain b, where the thread never read. */
static void child_idx_of_other_domain(void)
{
	int idx = sk_srcu_read_lock(&dom_a);

	sk_srcu_read_unlock(&dom_b, idx);
	_exit(CHILD_RETURNED);
}

/* An idx of domain a ended on domain b, where the thread did read. */
static void child_idx_of_other_domain_used(void)
{
	int ib = sk_srcu_read_lock(&dom_b), idx;

	sk_srcu_read_unlock(&dom_b, ib);
	idx = sk_srcu_read_lock(&dom_a);
	sk_srcu_read_unlock(&dom_b, idx);
	_exit(CHILD_RETURNED);
}

/*
 * An idx of domain a ended on domain b while the thread has a section of
 * b open on the same index bit (fresh domains: both bits 0), which must
 * not be ended in its place.
 */
static void child_idx_of_other_domain_over_open_section(void)
{
	int ib = sk_srcu_read_lock(&dom_b);
	int ia = sk_srcu_read_lock(&dom_a);

	if ((ia ^ ib) & 1)
		_exit(4);
	sk_srcu_read_unlock(&dom_b, ia);
	_exit(CHILD_RETURNED);
}

static int foreign_idx;

static void *unlock_foreign_on_b(void *arg)
{
	(void)arg;
	sk_srcu_read_unlock(&dom_b, foreign_idx);
	return NULL;
}

/* The same, ended by another thread (a hand-off to the wrong domain). */
static void child_idx_of_other_domain_handed_off(void)
{
	int ib = sk_srcu_read_lock(&dom_b);
	pthread_t t;

	foreign_idx = sk_srcu_read_lock(&dom_a);
	if ((foreign_idx ^ ib) & 1)
		_exit(4);
	sk_test_thread_start(&t, unlock_foreign_on_b, NULL);
	pthread_join(t, NULL);
	_exit(CHILD_RETURNED);
}

/*
 * Two domains whose addresses map to the same way of the slot cache (8
 * ways of 64 bytes: 512 bytes apart), so the way caches the locker's slot
 * of the domain it read last.  way_doms[0] is d, way_doms[8] is e.
 */
static struct sk_srcu *way_doms;

static void way_doms_init(void)
{
	way_doms = aligned_alloc(SK_CACHELINE,
				 (SK__SRCU_WAYS + 1) * sizeof(*way_doms));
	if (!way_doms || sk_srcu_init(&way_doms[0]) != 0 ||
	    sk_srcu_init(&way_doms[SK__SRCU_WAYS]) != 0 ||
	    SK__SRCU_WAY(&way_doms[0]) != SK__SRCU_WAY(&way_doms[SK__SRCU_WAYS]))
		_exit(4);
}

static void unlock_real(struct sk_srcu *d, int idx)
{
	sk_srcu_read_unlock(d, idx);
}

/*
 * The busted twin of the inline unlock's fast path: it checks the key's
 * binding part but not its domain part (SK__SRCU_KEY_DOM(), which stands
 * for a load of dom on LP64), so it ends e's section when asked to end
 * one of d.  Same-way misuse must then go through unnoticed: proof that
 * the check the real unlock makes is the one that catches it.
 */
static void unlock_busted_no_key_dom(struct sk_srcu *d, int idx)
{
	struct sk_srcu_slot *s = sk_srcu__tls.slot[SK__SRCU_WAY(d)];
	unsigned long k = sk_atomic_load_relaxed(&s->key);
	unsigned long *c = &s->cnt[(unsigned int)idx & 1];

#if SK__SRCU_KEY_REMOTE_ON
	k &= (1UL << 33) - 1; /* the binding part and the remote bit */
#endif
	if (((unsigned long)(unsigned int)idx ^ k) <= 1 &&
	    (long)(sk_atomic_load_relaxed(c) - 1) >= 0) {
		sk_atomic_store_release(c, sk_atomic_load_relaxed(c) - 1);
		return;
	}
	sk_srcu_read_unlock(d, idx);
}

static void (*same_way_unlock)(struct sk_srcu *, int) = unlock_real;

/* The locker ends its idx of e on d while the shared way caches e. */
static void child_idx_of_other_domain_same_way(void)
{
	int idx;

	way_doms_init();
	sk_srcu_read_unlock(&way_doms[0], sk_srcu_read_lock(&way_doms[0]));
	idx = sk_srcu_read_lock(&way_doms[SK__SRCU_WAYS]);
	same_way_unlock(&way_doms[0], idx);
	_exit(CHILD_RETURNED);
}

/* The same with a section of d open on the same index bit. */
static void child_idx_of_other_domain_same_way_over_open(void)
{
	int id, ie;

	way_doms_init();
	id = sk_srcu_read_lock(&way_doms[0]);
	ie = sk_srcu_read_lock(&way_doms[SK__SRCU_WAYS]);
	if ((id ^ ie) & 1)
		_exit(4);
	sk_srcu_read_unlock(&way_doms[0], ie);
	_exit(CHILD_RETURNED);
}

static struct sk_rcu_head barrier_head;

static void barrier_from_callback(struct sk_rcu_head *h)
{
	(void)h;
	sk_srcu_barrier(&dom_b); /* any domain: from the worker */
	_exit(CHILD_RETURNED);
}

static void child_barrier_in_callback(void)
{
	if (sk_call_srcu(&dom_a, &barrier_head, barrier_from_callback) != 0)
		_exit(5);
	sk_srcu_barrier(&dom_a); /* the callback aborts meanwhile */
	_exit(CHILD_RETURNED);
}

/*
 * Thread X enters a section of a, hands it to thread B and exits; a new
 * thread Y reads domain b (taking X's recycled thread index) and calls
 * sk_synchronize_srcu(a) while B still holds X's section.  Y is inside
 * no section of a: the call must wait for B and return.
 */
static int recycled_idx;

static void *x_lock_and_exit(void *arg)
{
	(void)arg;
	recycled_idx = sk_srcu_read_lock(&dom_a);
	return NULL;
}

static void *b_unlock_later(void *arg)
{
	(void)arg;
	sk_test_sleep_ms(100);
	sk_srcu_read_unlock(&dom_a, recycled_idx);
	return NULL;
}

static void *y_read_b_then_synchronize_a(void *arg)
{
	int idx = sk_srcu_read_lock(&dom_b);

	(void)arg;
	sk_srcu_read_unlock(&dom_b, idx);
	sk_synchronize_srcu(&dom_a);
	return NULL;
}

static void child_synchronize_with_recycled_index(void)
{
	pthread_t x, b, y;

	sk_test_thread_start(&x, x_lock_and_exit, NULL);
	pthread_join(x, NULL);
	sk_test_thread_start(&b, b_unlock_later, NULL);
	sk_test_thread_start(&y, y_read_b_then_synchronize_a, NULL);
	pthread_join(y, NULL);
	pthread_join(b, NULL);
	_exit(0);
}

/* Seconds after which a wait that a working library ends is a hang. */
#define HANG_S 20

static struct sk_rcu_head cleanup_head, other_head;
static int cleanup_rc = 1, other_ran;

static void cleanup_own_domain_cb(struct sk_rcu_head *h)
{
	(void)h;
	STORE(cleanup_rc, sk_srcu_destroy(&dom_a));
}

static struct sk_srcu dom_c = SK_SRCU_INITIALIZER(dom_c);

/* Runs, and releases an idle domain (c) from the worker: 1, or 2. */
static void other_domain_cb(struct sk_rcu_head *h)
{
	(void)h;
	STORE(other_ran, sk_srcu_destroy(&dom_c) == 0 ? 1 : 2);
}

/* Wait until *f differs from v; 0 after HANG_S seconds (a hang). */
static int wait_change(int *f, int v)
{
	double end = sk_test_now() + HANG_S;

	while (LOAD(*f) == v) {
		if (sk_test_now() > end)
			return 0;
		sk_test_sleep_ms(1);
	}
	return 1;
}

/*
 * A callback of a calls sk_srcu_destroy(a): -EBUSY (its own batch is
 * pending), and the worker goes on: a callback of b runs (and releases
 * domain c, which is allowed), a stays usable and can be released once
 * idle.
 */
static void child_cleanup_in_own_callback(void)
{
	sk_srcu_read_unlock(&dom_c, sk_srcu_read_lock(&dom_c));
	if (sk_call_srcu(&dom_a, &cleanup_head, cleanup_own_domain_cb) != 0 ||
	    sk_call_srcu(&dom_b, &other_head, other_domain_cb) != 0)
		_exit(5);
	if (!wait_change(&other_ran, 0)) {
		fprintf(stderr, "hang: a callback of another domain did not "
				"run in %d s (the SRCU worker is stuck)\n",
			HANG_S);
		_exit(6);
	}
	if (!wait_change(&cleanup_rc, 1)) {
		fprintf(stderr, "hang: sk_srcu_destroy() in a callback of its "
				"domain did not return in %d s\n",
			HANG_S);
		_exit(6);
	}
	if (LOAD(other_ran) != 1) {
		fprintf(stderr, "sk_srcu_destroy() of an idle domain in a "
				"callback of another one failed\n");
		_exit(7);
	}
	if (LOAD(cleanup_rc) != -EBUSY) {
		fprintf(stderr, "sk_srcu_destroy() in a callback of its "
				"domain returned %d\n",
			LOAD(cleanup_rc));
		_exit(7);
	}
	sk_synchronize_srcu(&dom_a);
	sk_srcu_barrier(&dom_a);
	if (sk_srcu_destroy(&dom_a) != 0 || sk_srcu_destroy(&dom_b) != 0)
		_exit(8);
	_exit(0);
}

/*
 * A callback of a that calls sk_synchronize_srcu(a) (allowed: a callback
 * is outside every read section) while another thread's
 * sk_srcu_destroy(a) runs: the destroy must not hold a's grace-period
 * mutex while it waits for the worker to finish that callback.
 */
static struct sk_rcu_head sync_head;
static int sync_cb_in, sync_cb_go, sync_cb_done, sync_destroy_rc = 1;

static void synchronize_own_domain_cb(struct sk_rcu_head *h)
{
	(void)h;
	STORE(sync_cb_in, 1);
	(void)wait_change(&sync_cb_go, 0);
	sk_synchronize_srcu(&dom_a);
	STORE(sync_cb_done, 1);
}

static void *destroy_a(void *arg)
{
	(void)arg;
	STORE(sync_destroy_rc, sk_srcu_destroy(&dom_a));
	return NULL;
}

static void child_destroy_while_callback_synchronizes(void)
{
	pthread_t t;
	int rc;

	if (sk_call_srcu(&dom_a, &sync_head, synchronize_own_domain_cb) != 0)
		_exit(5);
	if (!wait_change(&sync_cb_in, 0))
		_exit(6);
	if (pthread_create(&t, NULL, destroy_a, NULL) != 0)
		_exit(5);
	/* Let the destroy reach its wait for the worker to leave a. */
	sk_test_sleep_ms(200);
	STORE(sync_cb_go, 1);
	if (!wait_change(&sync_cb_done, 0)) {
		fprintf(stderr, "hang: sk_synchronize_srcu() in a callback did "
				"not return in %d s while sk_srcu_destroy() of "
				"its domain ran\n",
			HANG_S);
		_exit(6);
	}
	if (!wait_change(&sync_destroy_rc, 1)) {
		fprintf(stderr, "hang: sk_srcu_destroy() did not return in "
				"%d s\n",
			HANG_S);
		_exit(6);
	}
	pthread_join(t, NULL);
	rc = LOAD(sync_destroy_rc);
	if (rc != 0 && rc != -EBUSY) {
		fprintf(stderr, "sk_srcu_destroy() returned %d\n", rc);
		_exit(7);
	}
	/* A defined domain stays usable either way. */
	sk_synchronize_srcu(&dom_a);
	sk_srcu_barrier(&dom_a);
	if (sk_srcu_destroy(&dom_a) != 0)
		_exit(8);
	_exit(0);
}

/* ---- tests --------------------------------------------------------------- */

static void synchronize_inside_own_section_aborts(void)
{
	expect_abort(child_synchronize_in_own_section,
		     "sk_synchronize_srcu()", "same SRCU domain");

	expect_abort(child_synchronize_in_nested_own_section,
		     "sk_synchronize_srcu()", "same SRCU domain");
}

static void expedited_inside_own_section_aborts(void)
{
	expect_abort(child_expedited_in_own_section,
		     "sk_synchronize_srcu_expedited()", "same SRCU domain");
}

static void synchronize_inside_other_domain_section_is_allowed(void)
{
	expect_silent_exit(child_synchronize_in_other_domain_section);
}

static void barrier_inside_own_section_aborts(void)
{
	expect_abort(child_barrier_in_own_section,
		     "sk_srcu_barrier()", "same SRCU domain");
}

static void unbalanced_unlock_aborts(void)
{
	expect_abort(child_unlock_twice,
		     "unbalanced sk_srcu_read_unlock()", NULL);

	expect_abort(child_remote_unlock_twice,
		     "unbalanced sk_srcu_read_unlock()", NULL);
}

/*
 * Library bug seen here: the locker's own check counts only its own
 * unlocks, not those done by other threads (remote[]), so this double
 * end passes silently and leaves the domain's sums unbalanced for good
 * (every later grace period of the domain hangs).
 */
static void handed_off_section_ended_again_by_locker_aborts(void)
{
	expect_abort(child_remote_then_locker_unlock,
		     "unbalanced sk_srcu_read_unlock()", NULL);
}

static void bogus_idx_aborts(void)
{
	expect_abort(child_bogus_idx, "sk_srcu_read_unlock()", "12345");

	expect_abort(child_bogus_idx_fresh_domain,
		     "sk_srcu_read_unlock()", "12345");
}

/*
 * Library bug seen here: idx 0 (owner 0, the shared counters) is taken
 * without a check; the shared unlock count then exceeds the lock count
 * and every later grace period of the domain hangs.
 */
static void bogus_idx_zero_aborts(void)
{
	expect_abort(child_bogus_idx_zero, "sk_srcu_read_unlock()", NULL);
}

/*
 * An idx from another domain.  Library bug seen here: when the thread has
 * no counters in the domain (d->dir NULL), the inline fast path indexes
 * d->dir without a check and the child dies of SIGSEGV, without a message.
 */
static void idx_of_another_domain_aborts(void)
{
	expect_abort(child_idx_of_other_domain_used,
		     "sk_srcu_read_unlock()", NULL);

	expect_abort(child_idx_of_other_domain, "sk_srcu_read_unlock()", NULL);
}

/*
 * Library bug seen here: with a section of b open on the same index bit,
 * the thread's own idx of a ended b's section (the fast path compared
 * only the thread's identity), silently: b's grace periods then no longer
 * waited for it.
 */
static void idx_of_another_domain_over_open_section_aborts(void)
{
	expect_abort(child_idx_of_other_domain_over_open_section,
		     "sk_srcu_read_unlock()", "another domain");

	expect_abort(child_idx_of_other_domain_handed_off,
		     "sk_srcu_read_unlock()", "another domain");
}

/*
 * The unlock's fast path finds the thread's slot through the way of d
 * alone; the slot's dom must tell e's binding from d's.
 */
static void idx_of_another_domain_in_the_same_way_aborts(void)
{
	expect_abort(child_idx_of_other_domain_same_way,
		     "sk_srcu_read_unlock()", "another domain");
	expect_abort(child_idx_of_other_domain_same_way_over_open,
		     "sk_srcu_read_unlock()", "another domain");
}

/*
 * The twin: an unlock without the key's domain check lets the same
 * misuse return (LP64, where the key holds it; ILP32 checks dom).
 */
static void busted_same_way_unlock_is_caught(void)
{
	struct sk_test_child c;

	if (!SK__SRCU_KEY_REMOTE_ON)
		return;
	same_way_unlock = unlock_busted_no_key_dom;
	sk_test_fork_child(child_idx_of_other_domain_same_way, 0, 1, &c);
	same_way_unlock = unlock_real;
	SK_CHECK(WIFEXITED(c.status) &&
		 WEXITSTATUS(c.status) == CHILD_RETURNED);
	SK_CHECK_EQ(c.err[0], '\0');
}

static void barrier_inside_srcu_callback_aborts(void)
{
	expect_abort(child_barrier_in_callback,
		     "sk_srcu_barrier()", "SRCU callback");
}

/*
 * Library bug seen here: sk_srcu_destroy(a) from a callback of a waited
 * for the worker to leave a, i.e. for itself: the worker hung, and with
 * it every SRCU domain of the process (b's callback never ran).
 */
static void cleanup_in_own_callback_is_ebusy(void)
{
	struct sk_test_child o;

	sk_test_fork_child(child_cleanup_in_own_callback, 3 * HANG_S, 1, &o);
	SK_CHECK_EXIT_0(o.status);
	SK_CHECK_EQ(o.err[0], '\0'); /* -EBUSY, printed nowhere */
}

/*
 * Library bug seen here: sk_srcu_destroy(a) waited for the worker to
 * leave a while holding a's gp_mutex; a callback of a in
 * sk_synchronize_srcu(a) waited for that mutex: both hung for good, and
 * with the worker every SRCU domain's callbacks.
 */
static void destroy_while_a_callback_synchronizes_returns(void)
{
	struct sk_test_child o;

	sk_test_fork_child(child_destroy_while_callback_synchronizes,
			   3 * HANG_S, 1, &o);
	SK_CHECK_EXIT_0(o.status);
	SK_CHECK_EQ(o.err[0], '\0');
}

/*
 * Library bug (or at least an undocumented consequence of the documented
 * index-recycling limit): the thread that reuses the index of an exited
 * locker whose section is still open elsewhere counts as a reader of the
 * domain, and its sk_synchronize_srcu() aborts as "inside a read-side
 * critical section of the same SRCU domain" though it entered none.
 */
static void synchronize_by_thread_with_recycled_index_is_allowed(void)
{
	expect_silent_exit(child_synchronize_with_recycled_index);
}

/*
 * Counts that no unlock check could see (here: an extra end written into
 * the thread's own slot through the ABI, as a stray write would): the
 * grace period's check must refuse to end on them.
 */
static void child_excess_end_seen_by_grace_period(void)
{
	int idx = sk_srcu_read_lock(&dom_a);
	struct sk_srcu_slot *s = sk_srcu__tls.slot[SK__SRCU_WAY(&dom_a)];

	sk_srcu_read_unlock(&dom_a, idx);
	s->cnt[idx & 1] -= 2; /* two ends by the owner */
	sk_synchronize_srcu(&dom_a);
	_exit(CHILD_RETURNED);
}

/* A released domain (its state freed) used without sk_srcu_init(). */
static void child_use_after_cleanup(void)
{
	struct sk_srcu *d = aligned_alloc(SK_CACHELINE, sizeof(*d));

	if (!d || sk_srcu_init(d) != 0 || sk_srcu_destroy(d) != 0)
		_exit(4);
	/* Allowed: a second cleanup, and polling an old cookie. */
	if (sk_srcu_destroy(d) != 0 || !sk_poll_state_synchronize_srcu(d, 5))
		_exit(5);
	sk_synchronize_srcu(d);
	_exit(CHILD_RETURNED);
}

static void use_after_cleanup_aborts(void)
{
	expect_abort(child_use_after_cleanup,
		     "sk_synchronize_srcu()", "released");
}

static void grace_period_finds_excess_ends(void)
{
	expect_abort(child_excess_end_seen_by_grace_period,
		     "unbalanced sk_srcu_read_unlock()", "found by a grace period");
}

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	SK_RUN(synchronize_inside_own_section_aborts);
	SK_RUN(expedited_inside_own_section_aborts);
	SK_RUN(synchronize_inside_other_domain_section_is_allowed);
	SK_RUN(barrier_inside_own_section_aborts);
	SK_RUN(unbalanced_unlock_aborts);
	SK_RUN(handed_off_section_ended_again_by_locker_aborts);
	SK_RUN(grace_period_finds_excess_ends);
	SK_RUN(bogus_idx_aborts);
	SK_RUN(bogus_idx_zero_aborts);
	SK_RUN(idx_of_another_domain_aborts);
	SK_RUN(idx_of_another_domain_over_open_section_aborts);
	SK_RUN(idx_of_another_domain_in_the_same_way_aborts);
	SK_RUN(busted_same_way_unlock_is_caught);
	SK_RUN(barrier_inside_srcu_callback_aborts);
	SK_RUN(cleanup_in_own_callback_is_ebusy);
	SK_RUN(destroy_while_a_callback_synchronizes_returns);
	SK_RUN(synchronize_by_thread_with_recycled_index_is_allowed);
	SK_RUN(use_after_cleanup_aborts);
	return sk_test_report();
}
