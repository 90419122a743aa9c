/* SPDX-License-Identifier: MIT */
/*
 * The three elided locks: their real (fallback) locks and the glue that
 * runs the elision state machine of src/elide.c around them.
 *
 * The lock words' layouts are in src/internal/elide.h (SK__M_*, SK__RW_*,
 * SK__SPIN_FREE), with sk__elide_lock_free(), which reads them for the
 * state machine (src/elide.c, a lower layer), and where the tests that
 * start the mutex's handoff tickets near their wrap can see them.
 */
#define _GNU_SOURCE
#include "scalekit/elide.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>

#include "internal/elide.h"
#include "internal/util.h"

#define M_LOCKED  ((unsigned)SK__ELIDED_MUTEX_LOCKED)
#define M_WAITERS ((unsigned)SK__ELIDED_MUTEX_WAITERS)
#define M_SIM	  ((unsigned)SK__ELIDED_MUTEX_SIM)
#define M_HELD	  (M_LOCKED | M_SIM)
#define M_SPINS	  100
/*
 * A waiter for the mutex backs off M_POLLS times before it sleeps,
 * looking at the word before the first wait and after each; the waits
 * double from 1 pause (127 pauses in all, about the time of M_SPINS).
 * Each look pulls the word's line out of the holder's cache, and the
 * holder's unlock and next lock then wait to take it back: a waiter
 * looking after every pause slows the holder it waits for
 * (docs/elision.md, "Where the line is").
 */
#define M_POLLS	  7

_Static_assert(SK__M_NEXT_SHIFT + 14 == 32 && SK__M_TMASK == 0x3fffu,
	       "the ticket carry must leave the word, not enter another bit");
_Static_assert(SK__M_SERVE_SHIFT + 14 <= SK__M_NEXT_SHIFT,
	       "serving and next overlap");

/* The rwlock and spinlock words' layouts: internal/elide.h. */
#define RW_WRITER SK__RW_WRITER
#define RW_SIM	  SK__RW_SIM
#define RW_WSLEEP SK__RW_WSLEEP
#define RW_ONE	  SK__RW_ONE
#define SPIN_FREE SK__SPIN_FREE

/* Free for a plain acquirer: not held, not in handoff mode. */
static inline int m_free(unsigned int v)
{
	return !(v & M_HELD) && sk__m_serving(v) == sk__m_next(v);
}

static inline unsigned int load_relaxed(unsigned int *w)
{
	return __atomic_load_n(w, __ATOMIC_RELAXED);
}

/* EL-M1: acquire on success; pairs with the release of EL-M2, EL-U1 or
 * EL-SU1. */
static inline int cas_acquire(unsigned int *w, unsigned int old,
			      unsigned int new_)
{
	return __atomic_compare_exchange_n(w, &old, new_, 0, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

/*
 * The futex bitsets the mutex's sleepers wait with: the holder of ticket
 * t on bit t % 31, a waiter without a ticket on bit 31.  An unlock in
 * handoff mode wakes the bit of the serving ticket (its holder is the only
 * thread that can take the lock next) and bit 31 (the waiters without a
 * ticket, who count the wakeup as lost and so come to take tickets), not
 * the holders of later tickets, who could only sleep again; an unlock in
 * plain mode (FUTEX_WAKE, every bit) wakes the oldest sleeper, which has
 * no ticket then: every ticket taken has been served.
 */
#define M_PLAIN_BIT (1u << 31)

static inline unsigned int m_ticket_bit(unsigned int t)
{
	return 1u << (t % 31);
}

/*
 * Sleep until *w changes from v, after making sure WAITERS is set in it
 * (so the next unlock wakes us).  Returns 0 when w changed before WAITERS
 * was set, else 1 (the futex call was made: the lock changed hands at
 * least once while we waited, a lost round).
 */
static int m_sleep(unsigned int *w, unsigned int v, unsigned int bits)
{
	if (!(v & M_WAITERS) &&
	    !__atomic_compare_exchange_n(w, &v, v | M_WAITERS, 0,
					 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return 0;
	/* The kernel compares *w with v | WAITERS: no lost wakeup. */
	syscall(SYS_futex, w, FUTEX_WAIT_BITSET_PRIVATE, (int)(v | M_WAITERS),
		NULL, NULL, bits);
	return 1;
}

/*
 * fork(): the ticket holders.  A ticket belongs to a waiting thread, and
 * the child of a fork has none of the forking thread's peers: a ticket
 * of theirs left in a word would be served in the child to no one, and
 * every later lock there would wait for it forever (the atfork pattern:
 * a prepare handler locks the mutex, the parent and the child unlock it,
 * while other threads wait for it).  So a waiter links a record of its
 * word to the list of one of TICKET_SHARDS shards (by the word's address)
 * and takes its ticket under that shard's lock, and unlinks the record
 * once it holds the lock (its ticket served).  The prepare handler takes
 * every shard's lock; the child handler finds every word that may hold
 * tickets in the lists, and drops them all: each was taken by a thread
 * the child does not have (the forking thread was not waiting).  Only
 * waiters that have lost handoff_wakeups rounds come here, each after
 * sleeping: the two short sections under a shard's lock add little to a
 * hand-off, and the shards keep the waiters of unrelated mutexes apart.
 */
struct m_ticket_rec {
	struct sk__link link; /* in its shard's list */
	unsigned int *w;      /* the lock word of the ticket */
};

#define TICKET_SHARDS 16

static struct ticket_shard {
	pthread_mutex_t lock;
	struct sk__link list; /* set up at its first use (next NULL before) */
} __attribute__((aligned(SK_CACHELINE))) tickets[TICKET_SHARDS] = {
	[0 ... TICKET_SHARDS - 1] = { .lock = PTHREAD_MUTEX_INITIALIZER },
};

static struct ticket_shard *ticket_shard(const unsigned int *w)
{
	return &tickets[((uintptr_t)w / SK_CACHELINE) % TICKET_SHARDS];
}

#ifdef SK_TESTING
/* Test hook (internal/testing.h): the child keeps the parent's tickets. */
static int tickets_busted;

void sk__elide_mutex_test_fork_busted(int on)
{
	__atomic_store_n(&tickets_busted, on, __ATOMIC_RELAXED);
}
#define TICKETS_BUSTED() __atomic_load_n(&tickets_busted, __ATOMIC_RELAXED)
#else
#define TICKETS_BUSTED() 0
#endif

static void tickets_fork_prepare(void)
{
	int i;

	for (i = 0; i < TICKET_SHARDS; i++)
		pthread_mutex_lock(&tickets[i].lock);
}

static void tickets_fork_parent(void)
{
	int i;

	for (i = TICKET_SHARDS - 1; i >= 0; i--)
		pthread_mutex_unlock(&tickets[i].lock);
}

/*
 * In a fork child, the only thread: every ticket of w was taken by a
 * thread the child does not have.  Relaxed: no other thread.  Both
 * ticket fields 0, as the last ticket's holder leaves them: plain mode,
 * no ticket out.  The held bit stays (a lock held by a thread gone stays
 * held, as a pthread mutex's does), and so does WAITERS (at worst one
 * wakeup finds no sleeper).
 */
static void drop_tickets(unsigned int *w)
{
	__atomic_store_n(w, load_relaxed(w) & ~SK__M_TICKETS, __ATOMIC_RELAXED);
}

static void tickets_fork_child(void)
{
	struct sk__link *l, *h;
	int i;

	for (i = 0; i < TICKET_SHARDS; i++) {
		h = &tickets[i].list;
		for (l = h->next; l && l != h && !TICKETS_BUSTED(); l = l->next)
			drop_tickets(SK__CONTAINER_OF(l, struct m_ticket_rec,
						      link)->w);
		/* The records are on the stacks of threads the child lacks. */
		sk__link_init(h);
	}
	/* Taken by this thread in the prepare handler: release them. */
	tickets_fork_parent();
}

__attribute__((constructor)) static void tickets_init(void)
{
	pthread_atfork(tickets_fork_prepare, tickets_fork_parent,
		       tickets_fork_child);
}

/*
 * A starving waiter: take a ticket, get the lock in ticket order.  While
 * its ticket is served and the lock is still held, the section running
 * is the last before ours (nobody else can take the lock in handoff
 * mode): spin M_SPINS times for it before sleeping, so that a hand-off
 * between running threads costs no context switch.
 */
static void m_lock_handoff(unsigned int *w)
{
	struct m_ticket_rec rec = { .w = w };
	struct ticket_shard *sh = ticket_shard(w);
	unsigned int t, v, s, nv, spins = M_SPINS;

	pthread_mutex_lock(&sh->lock);
	if (!sh->list.next)
		sk__link_init(&sh->list);
	sk__link_add_tail(&rec.link, &sh->list);
	/* Relaxed: the ticket only orders waiters; EL-M1 orders the data. */
	t = sk__m_next(__atomic_fetch_add(w, SK__M_NEXT_ONE, __ATOMIC_RELAXED));
	pthread_mutex_unlock(&sh->lock);
	for (;;) {
		v = load_relaxed(w);
		if (sk__m_serving(v) == t && !(v & M_HELD)) {
			s = (t + 1) & SK__M_TMASK;
			nv = (v & ~SK__M_TICKETS) | M_LOCKED | M_WAITERS;
			if (s != sk__m_next(v)) /* more tickets: stay in handoff */
				nv |= SK__M_TICKETS_AT(s, sk__m_next(v));
			if (cas_acquire(w, v, nv)) {
				pthread_mutex_lock(&sh->lock);
				sk__link_del(&rec.link);
				pthread_mutex_unlock(&sh->lock);
				return;
			}
			continue;
		}
		if (sk__m_serving(v) == t && spins) {
			spins--;
			sk_cpu_relax();
			continue;
		}
		m_sleep(w, v, m_ticket_bit(t));
		spins = M_SPINS;
	}
}

/* Pause 2^n times: the n-th wait of a waiter's backoff. */
static void m_backoff(unsigned int n)
{
	unsigned int i;

	for (i = 1u << n; i; i--)
		sk_cpu_relax();
}

/*
 * The real lock: look for the holder to leave, backing off M_POLLS times
 * between looks, then sleep; after each wakeup look again (the thread is
 * running now, and the holder's section is short), so that the lock
 * usually changes hands between running threads.  A waiter that has
 * slept (or tried to) handoff_wakeups times and still found the lock
 * taken takes a ticket.
 */
void sk__mutex_lock_real(int *word)
{
	unsigned int *w = (unsigned int *)word;
	unsigned int v, losses = 0, polls = 0;
	unsigned int limit = __atomic_load_n(
		&sk__elide_tuning.handoff_wakeups, __ATOMIC_RELAXED);

	for (;;) {
		v = load_relaxed(w);
		if (m_free(v)) {
			/*
			 * After sleeping, others may sleep too (the unlock that
			 * woke us cleared WAITERS): keep WAITERS.
			 */
			if (cas_acquire(w, v, v | M_LOCKED |
						      (losses ? M_WAITERS : 0)))
				return;
			continue;
		}
		if (polls < M_POLLS) {
			m_backoff(polls++);
			continue;
		}
		if (losses >= limit) {
			m_lock_handoff(w);
			return;
		}
		if (m_sleep(w, v, M_PLAIN_BIT)) {
			losses++;
			polls = 0;
		}
	}
}

int sk__mutex_trylock_real(int *word)
{
	unsigned int *w = (unsigned int *)word;
	unsigned int v = load_relaxed(w);

	return m_free(v) && cas_acquire(w, v, v | M_LOCKED) ? 0 : -EBUSY;
}

/*
 * Clear the held bit (LOCKED or SIM) and WAITERS; if WAITERS was set,
 * wake the oldest sleeper, or in handoff mode the serving ticket's holder
 * and the sleepers without a ticket (the serving holder's acquisition
 * sets WAITERS again for the later ticket holders).
 */
void sk__mutex_unlock_real(int *word, unsigned int held)
{
	unsigned int *w = (unsigned int *)word;
	unsigned int v = load_relaxed(w);

	/* EL-M2: release; pairs with EL-M1/EL-L1 of the next holder. */
	while (!__atomic_compare_exchange_n(w, &v, v & ~(held | M_WAITERS), 0,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
	if (!(v & M_WAITERS))
		return;
	if (sk__m_serving(v) == sk__m_next(v)) /* plain mode: the oldest */
		sk__futex_wake(word, 1);
	else /* handoff mode: the serving ticket's holder, and no ticket */
		syscall(SYS_futex, w, FUTEX_WAKE_BITSET_PRIVATE, INT_MAX, NULL,
			NULL, m_ticket_bit(sk__m_serving(v)) | M_PLAIN_BIT);
}

/* ---- sk_elided_mutex ----------------------------------------------------- */

void sk_elided_mutex_init(struct sk_elided_mutex *m)
{
	m->word = 0;
	m->policy = 0;
	m->stats = NULL;
}

int sk_elided_mutex_destroy(struct sk_elided_mutex *m)
{
	return __atomic_load_n(&m->word, __ATOMIC_RELAXED) ? -EBUSY : 0;
}

void sk_elided_mutex_attach_stats(struct sk_elided_mutex *m,
				  struct sk_elide_stats *s)
{
	/* Relaxed: a pointer to counters that are updated relaxed. */
	__atomic_store_n(&m->stats, s, __ATOMIC_RELAXED);
}

void sk_elided_mutex__lock_slow(int *word, unsigned int *policy,
				struct sk_elide_stats *stats)
{
	if (sk__elide_enter(SK__ELIDE_MUTEX, word, policy, stats))
		return;
	sk__mutex_lock_real(word);
}

int sk_elided_mutex_trylock(struct sk_elided_mutex *m)
{
	sk__elide_trylock_check();
	return sk__mutex_trylock_real(&m->word);
}

static int mutex_exit(struct sk_elided_mutex *m)
{
	return sk__elide_exit(SK__ELIDE_MUTEX, &m->word, &m->policy,
			      &m->stats);
}

void sk_elided_mutex__unlock_slow(int *word)
{
	struct sk_elided_mutex *m =
		SK__CONTAINER_OF(word, struct sk_elided_mutex, word);

	/* Elided first: a busted simulated mark may share LOCKED. */
	if (mutex_exit(m))
		return;
	/* Relaxed: this thread set LOCKED itself, if anyone did. */
	if (__atomic_load_n((unsigned int *)word, __ATOMIC_RELAXED) & M_LOCKED) {
		/* Held for real, with waiters or tickets. */
		sk__mutex_unlock_real(word, M_LOCKED);
		return;
	}
	sk__die("sk_elided_mutex_unlock(%p): the mutex is not locked",
		(void *)m);
}

/* ---- sk_elided_spinlock -------------------------------------------------- */

void sk_elided_spinlock_init(struct sk_elided_spinlock *l)
{
	l->word = 0;
	l->policy = 0;
	l->stats = NULL;
}

int sk_elided_spinlock_destroy(struct sk_elided_spinlock *l)
{
	return SPIN_FREE(load_relaxed(&l->word)) ? 0 : -EBUSY;
}

void sk_elided_spinlock_attach_stats(struct sk_elided_spinlock *l,
				     struct sk_elide_stats *s)
{
	__atomic_store_n(&l->stats, s, __ATOMIC_RELAXED); /* as the mutex */
}

void sk_elided_spinlock__wait(unsigned int *word, unsigned int old)
{
	unsigned int t = (old >> 16) & SK__ELIDED_SPIN_OWNER_MASK, w, n = 0;

	for (;;) {
		/* EL-SL2: acquire; pairs with EL-SU1 of the previous holder. */
		w = __atomic_load_n(word, __ATOMIC_ACQUIRE);
		if ((w & SK__ELIDED_SPIN_OWNER_MASK) == t &&
		    !(w & SK__ELIDED_SPIN_SIM))
			return;
		/*
		 * More threads than CPUs: a FIFO lock waits for preempted
		 * holders and waiters in turn, so give the CPU away now and
		 * then instead of spinning out whole time slices.
		 */
		if (++n % M_SPINS == 0)
			sched_yield();
		else
			sk_cpu_relax();
	}
}

void sk__spin_lock_real(unsigned int *word)
{
	/* EL-SL1 of the inline path: take a ticket. */
	unsigned int old = __atomic_fetch_add(word, SK__ELIDED_SPIN_NEXT_ONE,
					      __ATOMIC_ACQUIRE);

	if (!SPIN_FREE(old))
		sk_elided_spinlock__wait(word, old);
}

void sk_elided_spinlock__lock_slow(unsigned int *word, unsigned int *policy,
				   struct sk_elide_stats *stats)
{
	if (sk__elide_enter(SK__ELIDE_SPIN, word, policy, stats))
		return;
	sk__spin_lock_real(word);
}

int sk_elided_spinlock_trylock(struct sk_elided_spinlock *l)
{
	unsigned int w;

	sk__elide_trylock_check();
	w = load_relaxed(&l->word);
	return SPIN_FREE(w) && cas_acquire(&l->word, w,
					   w + SK__ELIDED_SPIN_NEXT_ONE)
		       ? 0
		       : -EBUSY;
}

void sk_elided_spinlock__unlock_slow(unsigned int *word)
{
	struct sk_elided_spinlock *l =
		SK__CONTAINER_OF(word, struct sk_elided_spinlock, word);

	unsigned int w;

	if (sk__elide_exit(SK__ELIDE_SPIN, word, &l->policy, &l->stats))
		return;
	w = load_relaxed(word);
	if (!SPIN_FREE(w & ~SK__ELIDED_SPIN_SIM)) {
		/* Held for real beside a (busted) simulated section. */
		__atomic_fetch_add(word, sk_elided_spinlock__step(
						 w & SK__ELIDED_SPIN_OWNER_MASK),
				   __ATOMIC_RELEASE); /* EL-SU1 */
		return;
	}
	sk__die("sk_elided_spinlock_unlock(%p): the lock is not locked",
		(void *)l);
}

/* ---- sk_elided_rwlock ---------------------------------------------------- */

void sk_elided_rwlock_init(struct sk_elided_rwlock *rw)
{
	rw->word = 0;
	rw->wlock = 0;
	rw->policy = 0;
	rw->stats = NULL;
}

int sk_elided_rwlock_destroy(struct sk_elided_rwlock *rw)
{
	return load_relaxed(&rw->word) || __atomic_load_n(&rw->wlock,
							  __ATOMIC_RELAXED)
		       ? -EBUSY
		       : 0;
}

void sk_elided_rwlock_attach_stats(struct sk_elided_rwlock *rw,
				   struct sk_elide_stats *s)
{
	__atomic_store_n(&rw->stats, s, __ATOMIC_RELAXED); /* as the mutex */
}

static struct sk_elide_stats *rw_stats(struct sk_elided_rwlock *rw)
{
	return __atomic_load_n(&rw->stats, __ATOMIC_RELAXED);
}

/* Add a reader unless a writer (real or simulated) is there. */
int sk__rw_read_trylock_real(unsigned int *word)
{
	unsigned int v = load_relaxed(word);

	while (!(v & (RW_WRITER | RW_SIM)))
		/* EL-R1: acquire; pairs with EL-W2 of the last writer. */
		if (__atomic_compare_exchange_n(word, &v, v + RW_ONE, 0,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return 0;
	return -EBUSY;
}

/* v is the word after a reader (or a simulated claim) left it. */
static inline void rw_wake_writer(unsigned int *word, unsigned int v)
{
	/* The last one out, and the draining writer sleeps: wake it. */
	if (v == (RW_WRITER | RW_WSLEEP))
		sk__futex_wake((int *)word, 1);
}

void sk__rw_read_unlock_real(unsigned int *word)
{
	/* EL-R2: release; pairs with EL-W1's acquire in the waiting writer. */
	rw_wake_writer(word, __atomic_sub_fetch(word, RW_ONE, __ATOMIC_RELEASE));
}

void sk_elided_rwlock_read_lock(struct sk_elided_rwlock *rw)
{
	unsigned int spins;

	/* Relaxed: as the inline mutex lock; no call when elision is off. */
	if (__atomic_load_n(&sk_elide__enabled, __ATOMIC_RELAXED) &&
	    sk__elide_enter(SK__ELIDE_RW_READ, rw, &rw->policy, rw_stats(rw)))
		return;
	/* EL-R1 again: the optimistic reader; undone if a writer is there. */
	if (!(__atomic_fetch_add(&rw->word, RW_ONE, __ATOMIC_ACQUIRE) &
	      (RW_WRITER | RW_SIM)))
		return;
	sk__rw_read_unlock_real(&rw->word);
	/*
	 * The writer's section is short: give it M_SPINS pauses to leave,
	 * then try once to join the readers (EL-R1 in the trylock).  A
	 * reader that finds the writer still there queues with the writers,
	 * so its wait stays bounded as below; the writers' stays bounded
	 * too: a writer that sets WRITER waits only for the readers already
	 * inside.
	 *
	 * The reader does not look at the word while it waits: every load
	 * pulls the word's line out of the writer's cache, and the writer's
	 * unlock and the next readers' adds then wait to take it back.  A
	 * driver of hash-under-lock's mix, 4 threads on 2 CPUs, Mops/s:
	 * about 38 looking after every pause, 47 every 32nd, 48 once at the
	 * end (docs/elision.md, "Where the line is").
	 */
	for (spins = M_SPINS; spins; spins--)
		sk_cpu_relax();
	if (!(load_relaxed(&rw->word) & (RW_WRITER | RW_SIM)) &&
	    !sk__rw_read_trylock_real(&rw->word))
		return;
	/* Queue with the writers; none can set WRITER while we hold wlock. */
	sk__mutex_lock_real(&rw->wlock);
	while (sk__rw_read_trylock_real(&rw->word))
		sk_cpu_relax(); /* only a simulated writer can be there */
	sk__mutex_unlock_real(&rw->wlock, M_LOCKED);
}

int sk_elided_rwlock_read_trylock(struct sk_elided_rwlock *rw)
{
	sk__elide_trylock_check();
	return sk__rw_read_trylock_real(&rw->word);
}

void sk_elided_rwlock_read_unlock(struct sk_elided_rwlock *rw)
{
	unsigned int v;

	if (sk__elide_exit(SK__ELIDE_RW_READ, rw, &rw->policy, &rw->stats))
		return;
	/*
	 * EL-R2: release; pairs with EL-W1's acquire in the waiting writer.
	 * The misuse check reads the count this sub returns, not a load of
	 * its own: under contention every access to the word moves its
	 * cache line, and a load before the sub would move it twice.
	 */
	v = __atomic_sub_fetch(&rw->word, RW_ONE, __ATOMIC_RELEASE);
	if (!((v + RW_ONE) / RW_ONE)) { /* the count was 0: undo, stop */
		__atomic_fetch_add(&rw->word, RW_ONE, __ATOMIC_RELAXED);
		sk__die("sk_elided_rwlock_read_unlock(%p): not read-locked",
			(void *)rw);
	}
	rw_wake_writer(&rw->word, v);
}

#ifdef SK_TESTING
/* Test hook (internal/testing.h): writers let new readers in. */
static int rw_busted;

void sk__elide_rw_test_busted(int on)
{
	__atomic_store_n(&rw_busted, on, __ATOMIC_RELAXED);
}
#define RW_BUSTED() __atomic_load_n(&rw_busted, __ATOMIC_RELAXED)
#else
#define RW_BUSTED() 0
#endif

/* With wlock held: set WRITER, then wait until the readers are gone. */
static void rw_write_drain(struct sk_elided_rwlock *rw)
{
	unsigned int v = load_relaxed(&rw->word), spins = M_SPINS;

	/* The twin: wait for a moment with no reader (EL-W1 as below). */
	while (RW_BUSTED() && !cas_acquire(&rw->word, 0, RW_WRITER))
		sched_yield();
	if (RW_BUSTED())
		return;

	/* Relaxed: the acquire is EL-W1 below, when the readers are gone. */
	do {
		while (v & RW_SIM) {
			sk_cpu_relax();
			v = load_relaxed(&rw->word);
		}
	} while (!__atomic_compare_exchange_n(&rw->word, &v, v | RW_WRITER, 0,
					      __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	/*
	 * EL-W1: acquire; pairs with EL-R2 of every reader that leaves.  The
	 * readers inside run short sections: spin for them M_SPINS times
	 * before sleeping; WSLEEP (set only by us, while WRITER is set) asks
	 * the last reader out for the futex wake, which a spinning writer
	 * does not need.
	 */
	while (((v = __atomic_load_n(&rw->word, __ATOMIC_ACQUIRE)) &
		~RW_WSLEEP) != RW_WRITER) {
		if (spins) {
			spins--;
			sk_cpu_relax();
			continue;
		}
		/* Relaxed: the futex compares the word; EL-W1 orders. */
		if ((v & RW_WSLEEP) ||
		    __atomic_compare_exchange_n(&rw->word, &v, v | RW_WSLEEP, 0,
						__ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			sk__futex_wait((int *)&rw->word, (int)(v | RW_WSLEEP));
	}
	/* Relaxed: a flag for the readers' wake, no data behind it. */
	if (v & RW_WSLEEP)
		__atomic_fetch_and(&rw->word, ~RW_WSLEEP, __ATOMIC_RELAXED);
}

void sk_elided_rwlock_write_lock(struct sk_elided_rwlock *rw)
{
	if (__atomic_load_n(&sk_elide__enabled, __ATOMIC_RELAXED) &&
	    sk__elide_enter(SK__ELIDE_RW_WRITE, rw, &rw->policy,
			    rw_stats(rw)))
		return;
	/* EL-M1, one CAS first (as the inline mutex): the line moves once. */
	if (!cas_acquire((unsigned int *)&rw->wlock, 0, M_LOCKED))
		sk__mutex_lock_real(&rw->wlock);
	rw_write_drain(rw);
}

int sk_elided_rwlock_write_trylock(struct sk_elided_rwlock *rw)
{
	sk__elide_trylock_check();
	if (sk__mutex_trylock_real(&rw->wlock))
		return -EBUSY;
	if (cas_acquire(&rw->word, 0, RW_WRITER))
		return 0;
	sk__mutex_unlock_real(&rw->wlock, M_LOCKED);
	return -EBUSY;
}

void sk_elided_rwlock_write_unlock(struct sk_elided_rwlock *rw)
{
	if (sk__elide_exit(SK__ELIDE_RW_WRITE, rw, &rw->policy, &rw->stats))
		return;
	/*
	 * EL-W2: release; pairs with EL-R1 of the next readers.  The misuse
	 * check reads the word this fetch_and returns (see read_unlock); on
	 * a word without WRITER the fetch_and changed nothing.
	 */
	if (!(__atomic_fetch_and(&rw->word, ~RW_WRITER, __ATOMIC_RELEASE) &
	      RW_WRITER))
		sk__die("sk_elided_rwlock_write_unlock(%p): not write-locked",
			(void *)rw);
	sk__mutex_unlock_real(&rw->wlock, M_LOCKED);
}

#ifdef SK_ELIDE_SIM
void sk__rw_unclaim_sim(unsigned int *word)
{
	/* Release; pairs with EL-R1/EL-W1 of whoever waited for it. */
	/* A writer may drain behind a busted twin's mark. */
	rw_wake_writer(word, __atomic_fetch_and(word, ~RW_SIM,
						__ATOMIC_RELEASE) & ~RW_SIM);
}
#endif
