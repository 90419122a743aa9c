/* SPDX-License-Identifier: MIT */
/*
 * RCU: the registry of reader threads and the grace-period machinery.
 *
 * Algorithm.  A global counter sk_rcu__gp.ctr (starting at 1) numbers the
 * grace periods.  A reader entering its outermost section copies the
 * counter into its own ctr; leaving, it stores 0.  A QSBR thread keeps a
 * copy of the counter while online and refreshes it at each quiescent
 * state.  A grace period advances the counter to c and waits until every
 * registered reader either has ctr == 0 (outside a section) or ctr >= c (it
 * entered, or announced a quiescent state, after the advance).  Counters
 * are 64 bits and never wrap in practice, so one pass suffices (no phase
 * flipping as with 32-bit counters).
 *
 * Barrier pairs (names used in the comments below and in rcu.h):
 *   S1 (caller, sk_smp_mb)   - caller's unlinks before its counter snapshot.
 *   R1 (leader, release)     - counter advance; pairs with L1 in read_lock.
 *   G1 (leader, heavy)       - after the advance, before reading any reader
 *                              ctr.  Pairs with L2/Q2: a reader either has
 *                              made its ctr store visible (and is waited
 *                              for), or its section's loads come after G1
 *                              and see every unlink made before it.
 *   G2 (leader, heavy)       - after the scan, before completion.  Pairs
 *                              with U1/Q1: the section's loads are done
 *                              before the caller frees anything.  A local
 *                              sk_smp_mb() on x86 (TSO), see
 *                              gp_fence_after_scan().
 *   G3 (leader, heavy)       - futex = -1 before re-reading ctrs; pairs
 *                              with U2/Q2 (store buffering), so a reader
 *                              that leaves after the re-check sees -1 and
 *                              wakes the leader.
 * In the fallback without membarrier(2), light fences are full fences and
 * the heavy fence is sk_smp_mb(), which pair the same way.
 *
 * Batching.  Callers snapshot the counter (s), then take gp_lock.  Any grace
 * period that advanced the counter past s started after the snapshot and
 * so covers the caller; if one completed while the caller waited for the
 * lock, the caller returns without starting another.
 */
#define _GNU_SOURCE
#include "scalekit/rcu.h"

#include <errno.h>
#include <stdint.h>
#include <sched.h>
#include <string.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal/rcu.h"
#include "internal/util.h"

/* Spins on the reader scan before sleeping on the futex. */
#define SK_RCU_SPIN_LIMIT 1000

/* Registry slots come in chunks of this many (4 KiB of slots). */
#define SK_RCU_CHUNK_SLOTS 64

/* Most blocking readers a grace period tracks without rescanning all. */
#define SK_RCU_PEND_MAX 128

struct sk_rcu__gp_state sk_rcu__gp = { .ctr = 1, .futex = 0 };
__thread struct sk_rcu_reader sk_rcu__reader
	__attribute__((tls_model("initial-exec")));

/*
 * A chunk of registry slots.  Chunks are never freed, so a grace period
 * may scan them without a lock: a slot that changes owner meanwhile holds
 * 0 or a snapshot taken after the scan began, and never blocks it.
 */
struct rcu_chunk {
	struct sk_rcu_slot slots[SK_RCU_CHUNK_SLOTS];
	uint64_t used;		/* bit i: slots[i] has an owner (release) */
	struct rcu_chunk *next; /* next chunk (release), or NULL */
};

static struct rcu_chunk first_chunk;

static struct {
	/* Guarded by registry_lock: slot allocation. */
	pthread_mutex_t registry_lock;
	struct rcu_chunk *last_chunk; /* where new chunks are appended */
	unsigned long nreaders;	      /* slots with an owner */

	/* Guarded by gp_lock: one grace period at a time. */
	pthread_mutex_t gp_lock;
	unsigned long sync_calls; /* atomic counter, any thread */
	unsigned long gp_sleeps;  /* written by the leader */
	unsigned long expedite;	  /* expedited callers waiting (atomic) */

	/* Written by the leader (release), read by any caller (acquire). */
	unsigned long completed __attribute__((aligned(SK_CACHELINE)));

	pthread_key_t exit_key; /* destructor unregisters exiting threads */
	pthread_once_t key_once;
} rcu = {
	.registry_lock = PTHREAD_MUTEX_INITIALIZER,
	.last_chunk = &first_chunk,
	.gp_lock = PTHREAD_MUTEX_INITIALIZER,
	.completed = 1,
	.key_once = PTHREAD_ONCE_INIT,
};

static void reader_exit(void *arg);

static void key_init(void)
{
	if (pthread_key_create(&rcu.exit_key, reader_exit) != 0)
		sk__die("pthread_key_create failed: cannot track thread exit");
}

static void atfork_prepare(void);
static void atfork_parent(void);
static void atfork_child(void);

unsigned long sk__rcu_stall_ms = 21000;

__attribute__((constructor)) static void sk_rcu_init(void)
{
	pthread_once(&rcu.key_once, key_init);
	sk__rcu_stall_ms = sk__env_ulong("SCALEKIT_RCU_STALL_MS", 21000, 1,
					 24UL * 3600 * 1000);
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* Find a free slot, adding a chunk if all are taken.  registry_lock held. */
static struct sk_rcu_slot *slot_alloc(void)
{
	struct rcu_chunk *ch, *nch;
	int i;

	for (ch = &first_chunk; ch; ch = ch->next) {
		if (ch->used == ~(uint64_t)0)
			continue;
		i = __builtin_ctzll(~ch->used);
		goto found;
	}
	nch = aligned_alloc(SK_CACHELINE, sizeof(*nch));
	if (!nch)
		return NULL;
	memset(nch, 0, sizeof(*nch));
	/* Release: a scanner that sees the link sees a zeroed chunk. */
	sk_atomic_store_release(&rcu.last_chunk->next, nch);
	rcu.last_chunk = nch;
	ch = nch;
	i = 0;
found:
	sk_atomic_store_relaxed(&ch->slots[i].ctr, 0UL);
	sk_atomic_store_relaxed(&ch->slots[i].tid, sk__gettid());
	sk_atomic_store_relaxed(&ch->slots[i].qsbr, 0);
	/* Release: scanners see the slot's fields before its used bit. */
	sk_atomic_store_release(&ch->used, ch->used | ((uint64_t)1 << i));
	rcu.nreaders++;
	return &ch->slots[i];
}

static struct rcu_chunk *chunk_of(struct sk_rcu_slot *s)
{
	struct rcu_chunk *ch;

	for (ch = &first_chunk; ch; ch = ch->next)
		if (s >= ch->slots && s < ch->slots + SK_RCU_CHUNK_SLOTS)
			return ch;
	return NULL;
}

/* Give the slot back.  Its ctr is 0.  registry_lock held. */
static void slot_free(struct sk_rcu_slot *s)
{
	struct rcu_chunk *ch = chunk_of(s);

	sk_atomic_store_release(&ch->used,
				ch->used & ~((uint64_t)1 << (s - ch->slots)));
	rcu.nreaders--;
}

/* Give the calling thread a slot.  Returns 0 or -ENOMEM. */
static int reader_register(struct sk_rcu_reader *r)
{
	struct sk_rcu_slot *s;

	pthread_once(&rcu.key_once, key_init);
	pthread_mutex_lock(&rcu.registry_lock);
	s = slot_alloc();
	pthread_mutex_unlock(&rcu.registry_lock);
	if (!s)
		return -ENOMEM;
	r->slot = s;
	/* Keys below PTHREAD_KEYS_MAX use static slots: this cannot fail. */
	pthread_setspecific(rcu.exit_key, r);
	return 0;
}

static void reader_unregister(struct sk_rcu_reader *r)
{
	pthread_mutex_lock(&rcu.registry_lock);
	slot_free(r->slot);
	pthread_mutex_unlock(&rcu.registry_lock);
	r->slot = NULL;
	pthread_setspecific(rcu.exit_key, NULL);
}

struct sk_rcu_slot *sk_rcu__register_slow(void)
{
	struct sk_rcu_reader *r = &sk_rcu__reader;

	if (reader_register(r) != 0)
		sk__die("sk_rcu_read_lock(): out of memory registering the "
			"thread (call sk_rcu_register_thread() first to get "
			"an error code instead)");
	return r->slot;
}

int sk_rcu_register_thread(void)
{
	struct sk_rcu_reader *r = &sk_rcu__reader;

	return r->slot ? 0 : reader_register(r);
}

/* Leave QSBR online state: the thread no longer holds references. */
static void go_offline(struct sk_rcu_reader *r)
{
	/* Q1-like: earlier loads before ctr = 0; pairs with G2. */
	sk_fence_light();
	SK_TSAN_RELEASE(&r->slot->ctr);
	sk_atomic_store_relaxed(&r->slot->ctr, 0UL);
	sk_atomic_store_relaxed(&r->slot->qsbr, 0);
	r->nest = 0;
	/* U2-like: ctr = 0 before the futex load; pairs with G3. */
	sk_fence_light();
	if (sk_atomic_load_relaxed(&sk_rcu__gp.futex))
		sk_rcu__wake_gp();
}

static const char *in_section_msg =
	"called inside an RCU read-side critical section";

int sk_rcu_unregister_thread(void)
{
	struct sk_rcu_reader *r = &sk_rcu__reader;

	if (!r->slot)
		return -EINVAL;
	if (r->nest == SK_RCU_QSBR_ONLINE)
		go_offline(r);
	else if (r->nest != 0)
		sk__die("sk_rcu_unregister_thread() %s (nesting depth %lu)",
			in_section_msg, r->nest);
	reader_unregister(r);
	return 0;
}

/* Thread-exit destructor of registered threads. */
static void reader_exit(void *arg)
{
	struct sk_rcu_reader *r = arg;

	if (r->nest == SK_RCU_QSBR_ONLINE)
		go_offline(r);
	else if (r->nest != 0)
		sk__die("thread exited inside an RCU read-side critical section "
			"(nesting depth %lu): missing sk_rcu_read_unlock()",
			r->nest);
	if (r->slot)
		reader_unregister(r);
}

int sk_rcu_thread_online(void)
{
	struct sk_rcu_reader *r = &sk_rcu__reader;

	if (r->nest == SK_RCU_QSBR_ONLINE)
		return 0;
	if (r->nest != 0)
		sk__die("sk_rcu_thread_online() %s", in_section_msg);
	if (!r->slot && reader_register(r) != 0)
		return -ENOMEM;
	sk_atomic_store_relaxed(&r->slot->qsbr, 1);
	/* L1-like: acquire pairs with the counter advance R1. */
	sk_atomic_store_relaxed(&r->slot->ctr,
				sk_atomic_load_acquire(&sk_rcu__gp.ctr));
	/* L2-like: ctr store before the loads that follow; pairs with G1. */
	sk_fence_light();
	r->nest = SK_RCU_QSBR_ONLINE;
	return 0;
}

void sk_rcu_thread_offline(void)
{
	struct sk_rcu_reader *r = &sk_rcu__reader;

	if (r->nest != SK_RCU_QSBR_ONLINE)
		sk__die("sk_rcu_thread_offline() called by a thread that is not "
			"an online QSBR reader outside sk_rcu_read_lock() "
			"(nesting depth %lu)",
			r->nest);
	go_offline(r);
}

void sk_rcu__unlock_misuse(void)
{
	sk__die("unbalanced sk_rcu_read_unlock(): the thread is not inside an "
		"RCU read-side critical section");
}

void sk_rcu__qs_misuse(void)
{
	unsigned long n = sk_rcu__reader.nest;

	if (n > SK_RCU_QSBR_ONLINE)
		sk__die("sk_rcu_quiescent_state() %s", in_section_msg);
	sk__die("sk_rcu_quiescent_state() called by a thread that is not an "
		"online QSBR reader (call sk_rcu_thread_online() first)");
}

void sk_rcu__wake_gp(void)
{
	int expected = -1;

	/* Only the first waker pays for the system call. */
	if (sk_atomic_cmpxchg(&sk_rcu__gp.futex, &expected, 0))
		sk__futex_wake(&sk_rcu__gp.futex, 1);
}

/* Is slot s inside a section that began before grace period c? */
static inline int blocks_gp(struct sk_rcu_slot *s, unsigned long c)
{
	unsigned long v = sk_atomic_load_relaxed(&s->ctr);

	if (v != 0 && (long)(v - c) < 0)
		return 1;
	/* Ordering from G2 + U1, invisible to TSan. */
	SK_TSAN_ACQUIRE(&s->ctr);
	return 0;
}

/*
 * Scan every owned slot; store the first cap that block grace period c in
 * pend.  Returns how many block (possibly more than cap).  Lock-free:
 * chunks are never freed and a slot's used bit is published after its
 * fields.
 */
static unsigned long scan_all(unsigned long c, struct sk_rcu_slot **pend,
			      unsigned long cap)
{
	struct rcu_chunk *ch;
	unsigned long n = 0;

	for (ch = &first_chunk; ch; ch = sk_atomic_load_acquire(&ch->next)) {
		uint64_t used = sk_atomic_load_acquire(&ch->used);

		while (used) {
			int i = __builtin_ctzll(used);

			used &= used - 1;
			if (blocks_gp(&ch->slots[i], c)) {
				if (n < cap)
					pend[n] = &ch->slots[i];
				n++;
			}
		}
	}
	return n;
}

/* Keep only the slots of pend[0..n) that still block c; returns the count. */
static unsigned long rescan(unsigned long c, struct sk_rcu_slot **pend,
			    unsigned long n)
{
	unsigned long i, k = 0;

	for (i = 0; i < n; i++)
		if (blocks_gp(pend[i], c))
			pend[k++] = pend[i];
	return k;
}

static unsigned long scan(unsigned long c, struct sk_rcu_slot **pend,
			  unsigned long n)
{
	return n > SK_RCU_PEND_MAX ? scan_all(c, pend, SK_RCU_PEND_MAX)
				   : rescan(c, pend, n);
}

/* Copy the name of thread tid (as set by pthread_setname_np) into buf. */
static void thread_name(long tid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%ld/comm", tid);
	buf[0] = '\0';
	f = fopen(path, "r");
	if (f) {
		if (fgets(buf, (int)len, f))
			buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
	if (!buf[0])
		snprintf(buf, len, "?");
}

/* Stall watchdog: name every reader that still holds grace period c. */
static void report_stall(struct sk_rcu_slot **pend, unsigned long n,
			 unsigned long c, uint64_t waited_ns)
{
	unsigned long i, ms = (unsigned long)(waited_ns / 1000000u);
	char name[32];

	fprintf(stderr,
		"scalekit: RCU stall: grace period %lu has waited %lu ms "
		"(SCALEKIT_RCU_STALL_MS=%lu) for %lu reader(s):\n",
		c, ms, sk__rcu_stall_ms, n);
	for (i = 0; i < n && i < SK_RCU_PEND_MAX; i++) {
		long tid = sk_atomic_load_relaxed(&pend[i]->tid);

		thread_name(tid, name, sizeof(name));
		fprintf(stderr,
			"scalekit:   thread %ld (\"%s\"), %s for at least %lu "
			"ms\n",
			tid, name,
			sk_atomic_load_relaxed(&pend[i]->qsbr)
				? "QSBR online without a quiescent state"
				: "inside a read-side critical section",
			ms);
	}
	fflush(stderr);
}

/*
 * Wait until no registered reader blocks grace period c.  New readers
 * cannot block c (they snapshot the advanced counter), so only the slots
 * found blocking by the first scan are polled again.
 *
 * A normal grace period spins briefly, then sleeps on the futex; an
 * expedited one (or any while an expedited caller waits) keeps polling and
 * yields the CPU instead of sleeping.
 */
static void wait_for_readers(unsigned long c, int expedited)
{
	struct sk_rcu_slot *pend[SK_RCU_PEND_MAX];
	uint64_t start = 0, now, next_report = 0, interval = 0;
	unsigned int spins = 0;
	unsigned long n;

	for (n = scan_all(c, pend, SK_RCU_PEND_MAX); n; n = scan(c, pend, n)) {
		if (spins++ < SK_RCU_SPIN_LIMIT) {
			sk_cpu_relax();
			continue;
		}
		now = sk__now_ns();
		if (!start) {
			start = now;
			interval = (uint64_t)sk__rcu_stall_ms * 1000000u;
			next_report = start + interval;
		}
		if (now >= next_report) {
			report_stall(pend, n, c, now - start);
			interval *= 2; /* back off: report again after 2x, 4x... */
			next_report = now + interval;
		}
		if (expedited || sk_atomic_load_relaxed(&rcu.expedite)) {
			sched_yield();
			continue;
		}
		sk_atomic_store_relaxed(&sk_rcu__gp.futex, -1);
		/* G3: futex = -1 before re-reading ctrs; pairs with U2/Q2. */
		sk_fence_heavy();
		n = scan(c, pend, n);
		if (!n) {
			sk_atomic_store_relaxed(&sk_rcu__gp.futex, 0);
			break;
		}
		sk_atomic_fetch_add_relaxed(&rcu.gp_sleeps, 1UL);
		/* Wake up for the next stall report at the latest. */
		sk__futex_wait_ns(&sk_rcu__gp.futex, -1, next_report - now);
	}
}

/*
 * G2.  On TSO machines (x86) a reader's loads and stores inside its section
 * are ordered before its later store of ctr by the hardware itself (loads
 * are not passed by later stores, stores stay in order), and U1/Q1 stop
 * the compiler; so once the leader has read that store, a local full
 * barrier orders its own later accesses.  Weaker machines need the
 * reader's CPU to execute a barrier: the heavy fence.
 */
static inline void gp_fence_after_scan(void)
{
#if defined(__x86_64__) || defined(__i386__)
	sk_smp_mb();
#else
	sk_fence_heavy();
#endif
}

int sk__rcu_done(unsigned long target)
{
	return (long)(sk_atomic_load_acquire(&rcu.completed) - target) >= 0;
}

unsigned long sk__rcu_snap(void)
{
	/* S1: the caller's unlinks before the snapshot; pairs with G1. */
	sk_smp_mb();
	return sk_atomic_load_acquire(&sk_rcu__gp.ctr) + 1;
}

void sk__rcu_wait(unsigned long target, int expedited)
{
	if (expedited) {
		/* A sleeping leader switches to polling for us. */
		sk_atomic_fetch_add(&rcu.expedite, 1UL);
		sk_rcu__wake_gp();
	}
	pthread_mutex_lock(&rcu.gp_lock);
	if (!sk__rcu_done(target)) {
		unsigned long c = sk_rcu__gp.ctr + 1;

		/* R1: advance the counter; pairs with L1 in sk_rcu_read_lock(). */
		sk_atomic_store_release(&sk_rcu__gp.ctr, c);
		/* G1: advance before reading reader ctrs; pairs with L2/Q2. */
		sk_fence_heavy();
		wait_for_readers(c, expedited);
		/* G2: readers' section accesses done before completion; pairs with U1/Q1. */
		gp_fence_after_scan();
		sk_atomic_store_release(&rcu.completed, c);
	}
	pthread_mutex_unlock(&rcu.gp_lock);
	/* The acquire of completed orders the caller's frees after G2. */
	if (expedited)
		sk_atomic_fetch_add(&rcu.expedite, -1UL);
}

int sk__rcu_enter_wait(const char *fn)
{
	struct sk_rcu_reader *r = &sk_rcu__reader;

	if (r->nest == SK_RCU_QSBR_ONLINE) {
		go_offline(r);
		return 1;
	}
	if (r->nest != 0)
		sk__die("%s %s (nesting depth %lu): it would wait for itself "
			"forever",
			fn, in_section_msg, r->nest);
	return 0;
}

void sk_synchronize_rcu(void)
{
	int was_online = sk__rcu_enter_wait("sk_synchronize_rcu()");

	sk_atomic_fetch_add_relaxed(&rcu.sync_calls, 1UL);
	sk__rcu_wait(sk__rcu_snap(), 0);
	if (was_online)
		sk_rcu_thread_online();
}

void sk_synchronize_rcu_expedited(void)
{
	int was_online = sk__rcu_enter_wait("sk_synchronize_rcu_expedited()");

	sk_atomic_fetch_add_relaxed(&rcu.sync_calls, 1UL);
	sk__rcu_wait(sk__rcu_snap(), 1);
	if (was_online)
		sk_rcu_thread_online();
}

unsigned long sk_get_state_synchronize_rcu(void)
{
	return sk__rcu_snap();
}

int sk_poll_state_synchronize_rcu(unsigned long cookie)
{
	if (!sk__rcu_done(cookie))
		return 0;
	/* Later frees after the observed completion (pairs with G2). */
	sk_smp_mb();
	return 1;
}

void sk_cond_synchronize_rcu(unsigned long cookie)
{
	int was_online;

	if (sk_poll_state_synchronize_rcu(cookie))
		return;
	was_online = sk__rcu_enter_wait("sk_cond_synchronize_rcu()");
	sk__rcu_wait(cookie, 0);
	if (was_online)
		sk_rcu_thread_online();
}

/*
 * fork(): only the forking thread exists in the child.  The registry is
 * rebuilt with that thread alone (if registered); locks are made usable;
 * a grace period that was running in the parent simply never completes in
 * the child, and the next one there covers it.
 */
static void atfork_prepare(void)
{
	sk__rcu_cb_atfork_prepare();
	pthread_mutex_lock(&rcu.registry_lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&rcu.registry_lock);
	sk__rcu_cb_atfork_parent();
}

static void atfork_child(void)
{
	struct sk_rcu_reader *r = &sk_rcu__reader;
	struct rcu_chunk *ch;

	pthread_mutex_init(&rcu.registry_lock, NULL);
	pthread_mutex_init(&rcu.gp_lock, NULL);
	for (ch = &first_chunk; ch; ch = ch->next)
		ch->used = 0;
	rcu.nreaders = 0;
	if (r->slot) {
		ch = chunk_of(r->slot);
		ch->used = (uint64_t)1 << (r->slot - ch->slots);
		rcu.nreaders = 1;
	}
	sk_rcu__gp.futex = 0;
	rcu.expedite = 0;
	sk__rcu_cb_atfork_child();
}

int sk_rcu_get_stats(struct sk_rcu_stats *st)
{
	if (!st)
		return -EINVAL;
	st->grace_periods = sk_atomic_load_acquire(&rcu.completed) - 1;
	st->sync_calls = sk_atomic_load_relaxed(&rcu.sync_calls);
	st->gp_sleeps = sk_atomic_load_relaxed(&rcu.gp_sleeps);
	pthread_mutex_lock(&rcu.registry_lock);
	st->readers = rcu.nreaders;
	pthread_mutex_unlock(&rcu.registry_lock);
	return sk__rcu_cb_stats(st);
}
