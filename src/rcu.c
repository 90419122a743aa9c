/* SPDX-License-Identifier: MIT */
/*
 * RCU, lowest layer: the module's global state, its initialization, the
 * statistics and the fork handlers.  The callbacks (rcu_cb.c,
 * rcu_cb_pcpu.c), listed above, take part in the last two through the
 * handlers they register (struct sk__rcu_part).  The algorithm, the files
 * of the module and all its barrier pairs: src/internal/rcu.h.  This file
 * places no fence.
 */
#define _GNU_SOURCE
#include "scalekit/rcu.h"

#include <errno.h>
#include <stdint.h>
#include <limits.h>
#include <sched.h>
#include <string.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal/rcu.h"
#include "internal/rcu_state.h"
#include "internal/util.h"

#ifdef SK__TSAN
#include <sanitizer/tsan_interface.h>
#endif

/*
 * Until sk_rcu_init() knows membarrier(2) works, the state of fallback
 * fences (heavy, lock_word that no reader word equals): always safe.
 */
#define RCU_CTR_INIT ((1UL << SK__RCU_SEQ_SHIFT) | SK__RCU_REG | 1)

struct sk_rcu__gp_state sk_rcu__gp = {
	.ctr = RCU_CTR_INIT,
	.qs_word = (1UL << SK__RCU_SEQ_SHIFT) | SK__RCU_REG | SK__RCU_QSBR_NEST,
	.futex = 0,
	.heavy = 1,
	.lock_word = RCU_CTR_INIT ^ SK__RCU_HEAVY,
};

__thread unsigned long sk_rcu__ctr __attribute__((tls_model("initial-exec")));
__thread uint64_t sk__rcu_ack __attribute__((tls_model("initial-exec")));
__thread int sk_rcu__hs_seen __attribute__((tls_model("initial-exec")));
__thread int sk__rcu_qsbr_mode __attribute__((tls_model("initial-exec")));

unsigned long sk__rcu_no_word;

struct rcu_chunk sk__rcu_first_chunk = {
	.words = { [0 ... SK__RCU_CHUNK_SLOTS - 1] = &sk__rcu_no_word },
};

struct sk__rcu_state sk__rcu = {
	.registry_lock = PTHREAD_RWLOCK_INITIALIZER,
	.last_chunk = &sk__rcu_first_chunk,
	.gp_lock = PTHREAD_MUTEX_INITIALIZER,
	.gp_backoff = SK__RCU_HANDSHAKE_BACKOFF,
	.gp_seq = 1,
	.completed = 1,
	.key_once = PTHREAD_ONCE_INIT,
};

static void atfork_prepare(void);
static void atfork_parent(void);
static void atfork_child(void);

#define STALL_MS_MAX (24UL * 3600 * 1000)

/* Relaxed accesses: a setting, read once per stalled grace period. */
static unsigned long stall_ms = 21000;

/*
 * The registered parts (internal/rcu.h).  Written by the parts'
 * constructors, at load time, before any thread can fork or ask for the
 * statistics; relaxed accesses.
 */
static const struct sk__rcu_part *parts[SK__RCU_NPARTS];

void sk__rcu_register_part(int which, const struct sk__rcu_part *p)
{
	sk_atomic_store_relaxed(&parts[which], p);
}

/* Part i, or NULL when it is not linked. */
static const struct sk__rcu_part *part(int i)
{
	return sk_atomic_load_relaxed(&parts[i]);
}

/*
 * With membarrier(2), let the fast paths skip the fallback's slow paths
 * (heavy, lock_word).  A compare-and-swap: if a grace period already
 * advanced the counter (another constructor's), it stored lock_word in
 * fallback form, as heavy was still set; the next advance sets it right.
 * heavy is cleared after lock_word: a reader that still sees heavy set
 * only takes the unlock's slow path once more.
 */
static void fences_init(void)
{
	unsigned long w = RCU_CTR_INIT ^ SK__RCU_HEAVY;

	sk__barrier_init();
	if (!sk_fence_uses_membarrier())
		return;
	__atomic_compare_exchange_n(&sk_rcu__gp.lock_word, &w, RCU_CTR_INIT,
				    0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	sk_atomic_store_relaxed(&sk_rcu__gp.heavy, 0);
}

__attribute__((constructor)) static void sk_rcu_init(void)
{
	fences_init();
	sk_rcu_set_stall_ms(sk__env_ulong("SCALEKIT_RCU_STALL_MS", 21000, 1,
					  STALL_MS_MAX));
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

int sk_rcu_set_stall_ms(unsigned long ms)
{
	if (!ms || ms > STALL_MS_MAX)
		return -EINVAL;
	__atomic_store_n(&stall_ms, ms, __ATOMIC_RELAXED);
	return 0;
}

unsigned long sk_rcu_get_stall_ms(void)
{
	return __atomic_load_n(&stall_ms, __ATOMIC_RELAXED);
}

#ifdef SK_TESTING
/* Test machinery (internal/testing.h): the testing build only. */
int sk__rcu_busted; /* SK__RCU_BUSTED_*, torture --busted-* only */

void sk__rcu_set_busted(int mode)
{
	sk_atomic_store_relaxed(&sk__rcu_busted, mode);
}

void sk__rcu_get_gp_kinds(struct sk__rcu_gp_kinds *k)
{
	k->handshake = sk_atomic_load_relaxed(&sk__rcu.kinds.handshake);
	k->heavy = sk_atomic_load_relaxed(&sk__rcu.kinds.heavy);
	k->qsbr_only = sk_atomic_load_relaxed(&sk__rcu.kinds.qsbr_only);
	k->quiet = sk_atomic_load_relaxed(&sk__rcu.kinds.quiet);
	k->timeouts = sk_atomic_load_relaxed(&sk__rcu.kinds.timeouts);
	k->chunks_scanned = sk_atomic_load_relaxed(&sk__rcu.kinds.chunks_scanned);
	k->chunks_skipped = sk_atomic_load_relaxed(&sk__rcu.kinds.chunks_skipped);
}
#endif

/*
 * Counts of synchronize calls (sk_rcu_stats.sync_calls), one per calling
 * thread: a shared atomic counter cost every call a locked instruction
 * (about a sixth of an uncontended call without readers).  A thread's
 * first call links its thread-local count into sync_counts; its exit adds
 * the count to sync_exited and unlinks it.  Guarded by sync_lock, except
 * n, which only its thread writes (relaxed) and the stats read (relaxed).
 */
struct sync_count {
	unsigned long n;
	struct sync_count *next, **pprev;
};

static __thread struct sync_count my_sync
	__attribute__((tls_model("initial-exec")));
/* my_sync is linked (read and written by its thread only: other threads
 * write my_sync.pprev, under sync_lock). */
static __thread int my_sync_on __attribute__((tls_model("initial-exec")));
static pthread_mutex_t sync_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sync_count *sync_counts;
static unsigned long sync_exited;
static pthread_key_t sync_key;
static pthread_once_t sync_once = PTHREAD_ONCE_INIT;

static void sync_count_unlink(struct sync_count *c)
{
	if (c->next)
		c->next->pprev = c->pprev;
	*c->pprev = c->next;
	c->pprev = NULL;
}

/* Thread-exit destructor of sync_key: keep the exiting thread's count. */
static void sync_count_exit(void *arg)
{
	struct sync_count *c = arg;

	pthread_mutex_lock(&sync_lock);
	sync_exited += sk_atomic_load_relaxed(&c->n);
	sync_count_unlink(c);
	pthread_mutex_unlock(&sync_lock);
	/* The exiting thread itself: a later call (another destructor's)
	 * links it again, with a count from 0. */
	c->n = 0;
	my_sync_on = 0;
}

static void sync_key_init(void)
{
	if (pthread_key_create(&sync_key, sync_count_exit) != 0)
		sk__die("pthread_key_create failed: cannot track thread exit");
}

/* The first call of a thread links its count. */
static void sync_count_link(void)
{
	pthread_once(&sync_once, sync_key_init);
	pthread_mutex_lock(&sync_lock);
	my_sync.next = sync_counts;
	if (sync_counts)
		sync_counts->pprev = &my_sync.next;
	my_sync.pprev = &sync_counts;
	sync_counts = &my_sync;
	pthread_mutex_unlock(&sync_lock);
	my_sync_on = 1;
	if (pthread_setspecific(sync_key, &my_sync) != 0)
		sk__die("pthread_setspecific failed: cannot track thread exit");
}

void sk__rcu_count_sync(void)
{
	if (SK_UNLIKELY(!my_sync_on))
		sync_count_link();
	/* Relaxed: only this thread writes n; the stats read it. */
	sk_atomic_store_relaxed(&my_sync.n, my_sync.n + 1);
}

/* All calls so far: exited threads' and the live ones'. */
static unsigned long sync_count_sum(void)
{
	struct sync_count *c;
	unsigned long sum;

	pthread_mutex_lock(&sync_lock);
	sum = sync_exited;
	for (c = sync_counts; c; c = c->next)
		sum += sk_atomic_load_relaxed(&c->n);
	pthread_mutex_unlock(&sync_lock);
	return sum;
}

/*
 * The child of a fork keeps only its own thread's count in the list: the
 * other threads' counts are summed in the parent, under sync_lock, into
 * fork_base, which becomes the child's sync_exited (their memory may be
 * reused by the child's threads).
 */
static unsigned long fork_base;

static void sync_count_fork_prepare(void)
{
	struct sync_count *c;

	pthread_mutex_lock(&sync_lock);
	fork_base = sync_exited;
	for (c = sync_counts; c; c = c->next)
		if (c != &my_sync)
			fork_base += sk_atomic_load_relaxed(&c->n);
}

static void sync_count_fork_parent(void)
{
	pthread_mutex_unlock(&sync_lock);
}

static void sync_count_fork_child(void)
{
	sync_exited = fork_base;
	sync_counts = NULL;
	if (my_sync_on) {
		my_sync.next = NULL;
		my_sync.pprev = &sync_counts;
		sync_counts = &my_sync;
	}
	/* Held by this thread since the prepare handler, as in the parent. */
	pthread_mutex_unlock(&sync_lock);
}

/*
 * fork(): only the forking thread exists in the child.  The registry is
 * rebuilt with that thread alone (if registered); locks are made usable;
 * a grace period that was running in the parent simply never completes in
 * the child, and the next one there covers it.  Lock order of the prepare
 * handler (the parent handler releases in the reverse order): the sync
 * counts' lock; the registered parts' locks, from the highest part down
 * (the per-CPU callback workers' run_locks, then the default worker's
 * run_lock and the list of queues); the registry, last.
 */
static void atfork_prepare(void)
{
	int i;

	sync_count_fork_prepare();
	/* The parts' locks, from the highest part down (internal/rcu.h). */
	for (i = SK__RCU_NPARTS - 1; i >= 0; i--)
		if (part(i) && part(i)->fork_prepare)
			part(i)->fork_prepare();
	pthread_rwlock_wrlock(&sk__rcu.registry_lock);
}

static void atfork_parent(void)
{
	int i;

	pthread_rwlock_unlock(&sk__rcu.registry_lock);
	for (i = 0; i < SK__RCU_NPARTS; i++)
		if (part(i) && part(i)->fork_parent)
			part(i)->fork_parent();
	sync_count_fork_parent();
}

static void atfork_child(void)
{
	struct rcu_chunk *ch;
	int i;

	/*
	 * Write-locked by this thread in atfork_prepare(), but glibc knows
	 * the writer by thread id, which changed: re-create the lock.  TSan
	 * is first told that the write lock is released.
	 */
#ifdef SK__TSAN
	__tsan_mutex_pre_unlock(&sk__rcu.registry_lock, 0);
	__tsan_mutex_post_unlock(&sk__rcu.registry_lock, 0);
#endif
	pthread_rwlock_init(&sk__rcu.registry_lock, NULL);
	/* gp_lock may have been held by a thread that does not exist here. */
	pthread_mutex_init(&sk__rcu.gp_lock, NULL);
	sk__rcu.wq = NULL;
	sk_atomic_store_relaxed(&sk__rcu.nreaders, 0UL);
	sk_atomic_store_relaxed(&sk__rcu.ngeneral, 0UL);
	sk_atomic_store_relaxed(&sk__rcu.nslots, 0UL);
	/* Counted below: no longer parked (sk__rcu_park()). */
	if (sk_atomic_load_relaxed(&sk_rcu__ctr) == SK__RCU_PARKED)
		sk_atomic_store_relaxed(&sk_rcu__ctr, SK__RCU_REG);
	for (ch = &sk__rcu_first_chunk; ch; ch = ch->next) {
		for (i = 0; i < SK__RCU_CHUNK_SLOTS; i++) {
			if (ch->slots[i].ctrp == &sk_rcu__ctr) {
				ch->slots[i].tid = sk__gettid();
				sk_atomic_store_relaxed(&sk__rcu.nreaders, 1UL);
				sk_atomic_store_relaxed(&sk__rcu.nslots, 1UL);
				sk_atomic_store_relaxed(
					&sk__rcu.ngeneral,
					(unsigned long)!sk__rcu_qsbr_mode);
			} else {
				chunk_set_slot(ch, i, NULL);
				ch->used &= ~((uint64_t)1 << i);
			}
		}
	}
	sk_rcu__gp.futex = 0;
	sk__rcu.expedite = 0;
	sk__rcu.exp_skip = 0;
	sk__rcu.gp_skip = 0;
	sk__rcu.gp_backoff = SK__RCU_HANDSHAKE_BACKOFF;
	sk__rcu.nmiss = 0; /* the parent's readers are gone */
	for (i = 0; i < SK__RCU_NPARTS; i++)
		if (part(i) && part(i)->fork_child)
			part(i)->fork_child();
	sync_count_fork_child();
}

unsigned long sk__rcu_gp_count(void)
{
	/* Relaxed: a statistic, orders nothing. */
	return sk_atomic_load_relaxed(&sk__rcu.ngps);
}

int sk_rcu_get_stats(struct sk_rcu_stats *st)
{
	int i;

	if (!st)
		return -EINVAL;
	st->grace_periods = sk_atomic_load_relaxed(&sk__rcu.ngps);
	st->sync_calls = sync_count_sum();
	st->gp_sleeps = sk_atomic_load_relaxed(&sk__rcu.gp_sleeps);
	st->exp_handshakes = sk_atomic_load_relaxed(&sk__rcu.exp_handshakes);
	st->exp_fallbacks = sk_atomic_load_relaxed(&sk__rcu.exp_fallbacks);
	/* Slots with an owner (the counts leave out parked threads). */
	pthread_rwlock_rdlock(&sk__rcu.registry_lock);
	st->readers = sk_atomic_load_relaxed(&sk__rcu.nslots);
	pthread_rwlock_unlock(&sk__rcu.registry_lock);
	/* The callbacks' counters: 0 unless their part is linked. */
	st->cb_queued = st->cb_invoked = 0;
	st->cb_batches = st->cb_peak_backlog = 0;
	for (i = 0; i < SK__RCU_NPARTS; i++)
		if (part(i) && part(i)->stats)
			part(i)->stats(st);
	return 0;
}

