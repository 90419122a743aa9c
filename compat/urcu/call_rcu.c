/* SPDX-License-Identifier: MIT */
/*
 * compat/urcu/call_rcu.c - liburcu's call_rcu(), rcu_barrier() and
 * call_rcu_data API on scalekit's callback workers (docs/urcu-compat.md).
 *
 * struct rcu_head has liburcu's two words (link, func), too small for a
 * struct sk_rcu_head (three words), so call_rcu() cannot hand a head to
 * sk_call_rcu().  Each struct call_rcu_data keeps a queue of its own
 * instead, as liburcu's do, and one "carrier", a struct sk_rcu_head of the
 * layer's, takes the queue's heads through scalekit's grace periods a
 * batch at a time:
 *
 *  - call_rcu() pushes the head onto the call_rcu_data's pending list, a
 *    LIFO whose word also holds CRD_INFLIGHT, set while the carrier is
 *    queued or running (one compare-and-swap; no allocation, no failure);
 *  - the push that finds the call_rcu_data idle (word 0) sets CRD_INFLIGHT
 *    with an empty list, makes its head the batch and queues the carrier;
 *  - the carrier's callback runs its batch in call_rcu() order (the LIFO
 *    reversed), then detaches the pending list (exchange) as the next
 *    batch and queues itself again, or, when the list is empty, clears
 *    the word (compare-and-swap: a push that saw CRD_INFLIGHT in between
 *    makes it fail, and the carrier takes that head after all).
 *
 * A batch is always detached before the carrier that runs it is queued,
 * so each callback runs after a grace period that began after its
 * call_rcu(); heads pushed while a carrier is in flight wait for the next
 * one.  Batches of one call_rcu_data run one after the other, so its
 * callbacks run in call_rcu() order.
 *
 * Where the carrier goes (the three kinds of call_rcu_data):
 *  - the default one: sk_call_rcu() (which itself uses the per-CPU
 *    workers while they run);
 *  - one per CPU, which create_all_cpu_call_rcu_data() sets after it
 *    started scalekit's per-CPU workers (sk_rcu_cb_workers_create()):
 *    sk_call_rcu() again, which picks the queue of the CPU it runs on;
 *  - a worker of its own, create_call_rcu_data(): sk_call_rcu_on().
 * call_rcu() routes as liburcu does: the thread's call_rcu_data if set,
 * else the one set for the caller's CPU, else the default.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"

enum crd_kind {
	CRD_DEFAULT, /* carrier: sk_call_rcu() */
	CRD_PER_CPU, /* carrier: sk_call_rcu(), per-CPU workers running */
	CRD_OWN,     /* carrier: sk_call_rcu_on(w) */
};

/* Bit 0 of call_rcu_data.pending: a carrier is queued or running. */
#define CRD_INFLIGHT ((uintptr_t)1)

/*
 * Flood control.  The carrier is one scalekit callback, so scalekit's
 * worker sees no backlog behind it: it may wait up to its lazy delay
 * before it starts the carrier's grace period, and it never throttles the
 * producers.  So, where it helps (crd_flood_control()), the push that
 * makes CRD_BACKLOG heads pending since the last detach asks for a grace
 * period at once
 * (sk_start_poll_synchronize_rcu(), which cuts the worker's wait short),
 * and every push beyond it yields the CPU once (not in a callback: there
 * its CPU time is what runs the batches).  A producer that keeps close to
 * the carrier keeps the batches small: the carrier finds them in cache,
 * and the producer's malloc() reuses what the callbacks freed.  Measured
 * (docs/urcu-compat.md): an unthrottled flood made batches of 10^4..10^5
 * heads and was 1.4..2.3 times slower per callback than sk_call_rcu();
 * yielding only while the carrier runs its batch (sk_call_rcu()'s rule)
 * did not help, yielding beyond CRD_BACKLOG did.
 */
#define CRD_BACKLOG 4096UL

struct crd_carrier {
	struct sk_rcu_head sk;	    /* queued with sk_call_rcu() or _on() */
	struct call_rcu_data *crdp; /* whose batches it runs; immutable */
	int stale;		    /* replaced in a fork child: does nothing */
};

/*
 * Invariant: pending is 0 (idle: nothing pending, no carrier) or has
 * CRD_INFLIGHT set, with the heads pushed since the last detach above it.
 */
struct call_rcu_data {
	/* Written by call_rcu() (any thread) and the carrier: atomics. */
	uintptr_t pending;	/* LIFO of rcu_heads | CRD_INFLIGHT */
	struct rcu_head *batch; /* LIFO the queued carrier runs; NULL once
				   it took it */
	unsigned long starting; /* pushes between finding the word 0 and
				   having queued the carrier (fork child) */
	unsigned long backlog;	/* pushes since the last detach (relaxed:
				   a count for the flood control) */
	/* Changed only in a fork child (one thread) and by crd_kick(). */
	struct crd_carrier *carrier; /* the carrier queue_carrier() queues */
	int kick;		     /* the carrier waits for crd_kick() */
	int abandoned;		     /* carrier0 is stale: never free this */
	/* Immutable. */
	enum crd_kind kind;
	struct sk_rcu_cb_worker *w; /* CRD_OWN: the worker */
	/* Guarded by: crd_lock. */
	struct call_rcu_data *own_next; /* CRD_OWN: the list of live ones */
	/* Written by the queue_carrier() and the scalekit worker in turn. */
	struct crd_carrier carrier0;	/* the carrier, unless a fork child
					   replaced it */
};

static struct call_rcu_data crd_default = {
	.carrier = &crd_default.carrier0,
	.kind = CRD_DEFAULT,
	.carrier0 = { .crdp = &crd_default },
};

/* The calling thread's call_rcu_data (set_thread_call_rcu_data()). */
static __thread struct call_rcu_data *crd_thread;

/* Nonzero while the thread runs call_rcu() callbacks (a carrier). */
static __thread int crd_in_cb;

/*
 * Per-CPU assignments (set_cpu_call_rcu_data()).  Guarded by: crd_lock
 * for writers; call_rcu() reads an entry inside a read section, and the
 * caller of set_cpu_call_rcu_data() waits for a grace period before it
 * frees what it replaced (liburcu's rule).  The array is allocated once,
 * on the first assignment, and never freed; crd_ncpu is set before
 * crd_cpu is published (release/acquire).
 */
static pthread_mutex_t crd_lock = PTHREAD_MUTEX_INITIALIZER;
static struct call_rcu_data **crd_cpu;
static int crd_ncpu;

/*
 * The call_rcu_data of each CPU that create_all_cpu_call_rcu_data() sets
 * (crd_ncpu of them), allocated by its first call and never freed (a
 * carrier may still be in flight after free_all_cpu_call_rcu_data()).
 * The own ones (create_call_rcu_data()) that call_rcu_data_free() has
 * not freed yet, and how many.  Guarded by: crd_lock.
 */
static struct call_rcu_data *crd_pcpu;
static struct call_rcu_data *crd_own;
static size_t crd_nown;

/* Set in a fork child that replaced a carrier; see crd_fork_child(). */
static int crd_fork_kick;

static void carrier_cb(struct sk_rcu_head *sk);

static void crd_init(struct call_rcu_data *crdp, enum crd_kind kind,
		     struct sk_rcu_cb_worker *w)
{
	memset(crdp, 0, sizeof(*crdp));
	crdp->kind = kind;
	crdp->w = w;
	crdp->carrier0.crdp = crdp;
	crdp->carrier = &crdp->carrier0;
}

/* Queue crdp's carrier, which runs crdp->batch after a grace period. */
static void queue_carrier(struct call_rcu_data *crdp)
{
	struct crd_carrier *c = sk_atomic_load_relaxed(&crdp->carrier);
	int err;

	/*
	 * URCU-Q3: sk_call_rcu()'s ordering: the detach and the batch store
	 * before it happen before carrier_cb() runs, and the grace period
	 * that carrier_cb() waits for begins after this call (so after every
	 * call_rcu() of the batch).
	 */
	if (crdp->kind == CRD_OWN)
		err = sk_call_rcu_on(crdp->w, &c->sk, carrier_cb);
	else
		err = sk_call_rcu(&c->sk, carrier_cb);
	if (err)
		sk__urcu_die("call_rcu(): the queue of call_rcu_data %p could "
			     "not be queued (error %d)",
			     (void *)crdp, err);
}

static void die_double(struct rcu_head *head)
{
	sk__urcu_die("call_rcu(): rcu_head %p is queued already (a second "
		     "call_rcu() before its callback ran)",
		     (void *)head);
}

/*
 * Test builds only (tests/urcu/CMakeLists.txt, urcu_fork_window): between
 * setting CRD_INFLIGHT and queuing the carrier, call the test's hook (it
 * holds this thread there until the test's main thread has forked, so
 * that every fork of the test lands in the window), or spin, so that a
 * fork() lands there often.
 */
#ifdef SK__URCU_TEST_WIDE_START
extern void (*sk__urcu_test_window_hook)(void);
void (*sk__urcu_test_window_hook)(void);
#endif

static inline void test_wide_start(void)
{
#ifdef SK__URCU_TEST_WIDE_START
	void (*hook)(void) = __atomic_load_n(&sk__urcu_test_window_hook,
					     __ATOMIC_ACQUIRE);
	int i;

	if (hook) {
		hook();
		return;
	}
	for (i = 0; i < 4000; i++)
		sk_cpu_relax();
#endif
}

/*
 * Whether the flood control applies: only where the poll request reaches
 * the worker that runs the carrier, scalekit's default worker (the
 * default call_rcu_data while no per-CPU worker runs).  A worker of its
 * own and the per-CPU workers wait out their lazy delay whatever is
 * polled, so yielding there would only slow the producer down.
 */
static int crd_flood_control(struct call_rcu_data *crdp)
{
	return crdp->kind == CRD_DEFAULT && !sk_rcu_cb_workers_running();
}

/* Push head (func set) onto crdp's queue.  Any thread; never blocks. */
static void crd_push(struct call_rcu_data *crdp, struct rcu_head *head)
{
	uintptr_t old = sk_atomic_load_relaxed(&crdp->pending);

	for (;;) {
		if (old & CRD_INFLIGHT) {
			struct rcu_head *top =
				(struct rcu_head *)(old & ~CRD_INFLIGHT);

			/* The double-call_rcu() check (docs/urcu-compat.md). */
			if (SK_UNLIKELY(top == head ||
					sk_atomic_load_relaxed(&crdp->batch) ==
						head))
				die_double(head);
			sk_atomic_store_relaxed(&head->next_, top);
			/*
			 * URCU-Q1: full barrier (release is what counts):
			 * head's link and func, and the caller's accesses
			 * before call_rcu(), before the head is on the list;
			 * pairs with URCU-Q2 (the carrier's detach).
			 */
			if (sk_atomic_cmpxchg_seq_cst(&crdp->pending, &old,
						      (uintptr_t)head |
							      CRD_INFLIGHT))
				break;
			continue;
		}
		/*
		 * Idle: this push starts a carrier.  URCU-Q4: starting is
		 * raised before the word is set and lowered after the
		 * carrier is queued (full barriers), so a fork child that
		 * sees the word set by this push and the carrier perhaps not
		 * queued sees starting raised; pairs with URCU-Q5 in
		 * crd_fork_child_one().
		 */
		sk_atomic_fetch_add_seq_cst(&crdp->starting, 1UL);
		if (sk_atomic_cmpxchg_seq_cst(&crdp->pending, &old,
					      CRD_INFLIGHT))
			break;
		sk_atomic_fetch_add_seq_cst(&crdp->starting, ~0UL);
	}
	if (old & CRD_INFLIGHT) {
		/* Relaxed: a count for the throttle, nothing is published. */
		unsigned long n =
			sk_atomic_fetch_add_relaxed(&crdp->backlog, 1UL);

		if (SK_UNLIKELY(n >= CRD_BACKLOG) && crd_flood_control(crdp)) {
			if (n == CRD_BACKLOG)
				(void)sk_start_poll_synchronize_rcu();
			else if (!crd_in_cb)
				sched_yield();
		}
		return;
	}
	test_wide_start();
	sk_atomic_store_relaxed(&head->next_, (struct rcu_head *)NULL);
	sk_atomic_store_relaxed(&crdp->batch, head);
	test_wide_start();
	queue_carrier(crdp); /* URCU-Q3 orders the batch store */
	sk_atomic_fetch_add_seq_cst(&crdp->starting, ~0UL); /* URCU-Q4 */
}

/*
 * liburcu runs call_rcu() callbacks on a registered thread; with QSBR
 * that thread is online while it runs them (it goes offline only to
 * wait), so a callback may read RCU-protected data between
 * rcu_read_lock() and rcu_read_unlock(), which are nothing in QSBR, and a
 * synchronize_rcu() waits for it.  scalekit's workers are not QSBR
 * readers: once the program used the QSBR flavor, the thread that runs a
 * batch goes online for it (sk_rcu_thread_online(): its full fence orders
 * the going online before the callbacks' loads, pairing with the grace
 * period's fence) and offline after (sk_rcu_thread_offline(): its full
 * fence orders the callbacks' loads before going offline).  A thread that
 * is online or inside a read section already runs the batch as it is.
 * memb and bp callbacks need nothing: their rcu_read_lock() is a general
 * reader's, good on any thread.  Returns whether it went online.
 */
static int crd_batch_online(void)
{
	/*
	 * Relaxed: urcu_qsbr_call_rcu() sets the flag before its push
	 * (URCU-Q1), which happens before the detach of its batch (URCU-Q2)
	 * and so before this call (URCU-Q3); a flag set by a registration
	 * only is seen here soon enough, as any program order is.
	 */
	if (!sk_atomic_load_relaxed(&sk__urcu_qsbr_used) ||
	    sk_rcu_read_lock_held())
		return 0;
	if (sk_rcu_thread_online() != 0)
		sk__urcu_die("call_rcu(): out of memory registering the thread "
			     "that runs the callbacks");
	return 1;
}

static void crd_batch_offline(int online)
{
	/* A callback may have put the thread offline itself. */
	if (online && sk_rcu_read_lock_held())
		sk_rcu_thread_offline(); /* inside a read section: message, abort */
}

/*
 * The carrier's callback: a grace period has passed since its batch was
 * detached.  Runs the batch in call_rcu() order, then takes the next one
 * or makes crdp idle.
 */
static void carrier_cb(struct sk_rcu_head *sk)
{
	struct crd_carrier *c =
		(struct crd_carrier *)((char *)sk -
				       offsetof(struct crd_carrier, sk));
	struct call_rcu_data *crdp;
	struct rcu_head *b, *h, *next, *fifo = NULL;
	uintptr_t p;
	int online;

	/* Written in a fork child before any thread could run this. */
	if (sk_atomic_load_relaxed(&c->stale))
		return; /* its successor runs the batch */
	crdp = c->crdp;
	/* Ordered by URCU-Q3 (the store before this carrier was queued). */
	b = sk_atomic_xchg_seq_cst(&crdp->batch, (struct rcu_head *)NULL);
#ifdef SK__URCU_BROKEN_CARRIER_EARLY
	/*
	 * Broken twin (tests/urcu/CMakeLists.txt): the batch is detached
	 * when the carrier runs, not before it was queued, so heads pushed
	 * during its grace period run without one.
	 */
	p = sk_atomic_xchg_seq_cst(&crdp->pending, CRD_INFLIGHT);
	h = (struct rcu_head *)(p & ~CRD_INFLIGHT);
	if (h) { /* the newer heads in front of the batch */
		for (next = h; next->next_; next = next->next_)
			;
		next->next_ = b;
		b = h;
	}
#endif
	for (h = b; h; h = next) { /* LIFO to call_rcu() order */
		next = h->next_;
		h->next_ = fifo;
		fifo = h;
	}
	online = crd_batch_online();
	crd_in_cb++;
	for (h = fifo; h; h = next) {
		next = h->next_; /* func may free h */
		h->func(h);
	}
	crd_in_cb--;
	crd_batch_offline(online);
	p = CRD_INFLIGHT;
	/*
	 * URCU-Q6: nothing pushed since the last detach: idle (full
	 * barrier: the callbacks above happen before a rcu_barrier() or
	 * call_rcu_data_free() that reads the 0, URCU-Q8).  A push that saw
	 * CRD_INFLIGHT changed the word and makes this fail.
	 */
	if (sk_atomic_cmpxchg_seq_cst(&crdp->pending, &p, 0))
		return;
	/*
	 * URCU-Q2: detach the heads pushed since, as the next batch, before
	 * the carrier is queued again (URCU-Q3); full barrier, the acquire
	 * pairs with URCU-Q1.
	 */
	p = sk_atomic_xchg_seq_cst(&crdp->pending, CRD_INFLIGHT);
	sk_atomic_store_relaxed(&crdp->backlog, 0UL);
	sk_atomic_store_relaxed(&crdp->batch,
				(struct rcu_head *)(p & ~CRD_INFLIGHT));
	queue_carrier(crdp);
}

/*
 * fork() child (one thread).  A call_rcu() of another thread may have
 * been between setting CRD_INFLIGHT and queuing the carrier (starting
 * raised): the carrier may then be lost to the child (scalekit loses a
 * push that was half done at the fork), and nothing would ever clear the
 * word.  So the carrier is replaced by a new one, which crd_kick() queues
 * at the child's next call_rcu(), rcu_barrier() or call_rcu_data_free();
 * the old one, if it was queued after all, does nothing when it runs.
 * The batch is what the carrier in flight had not run: NULL when the
 * other thread had not stored it yet (its head is lost to the child, as
 * scalekit's half-done push is; the parent runs it).
 */
static void crd_fork_child_one(struct call_rcu_data *crdp)
{
	struct crd_carrier *c;

#ifdef SK__URCU_BROKEN_FORK_NO_REPLACE
	/* Broken twin (urcu_fork_window_broken): the carrier is kept. */
	return;
#endif
	/* URCU-Q5: the child's view of the words URCU-Q4 ordered. */
	if (!sk_atomic_load_relaxed(&crdp->starting))
		return; /* idle, or the carrier queued: it runs here too */
	sk_atomic_store_relaxed(&crdp->starting, 0UL);
	if (!(sk_atomic_load_relaxed(&crdp->pending) & CRD_INFLIGHT))
		return;
	c = malloc(sizeof(*c));
	if (!c)
		sk__urcu_die("fork() child: out of memory replacing the "
			     "carrier of call_rcu_data %p",
			     (void *)crdp);
	memset(c, 0, sizeof(*c));
	c->crdp = crdp;
	crdp->carrier->stale = 1;
	if (crdp->carrier == &crdp->carrier0)
		crdp->abandoned = 1;
	crdp->carrier = c; /* leaked if a later child replaces it too */
	crdp->kick = 1;
	crd_fork_kick = 1;
}

static void crd_fork_child(void)
{
	struct call_rcu_data *crdp;
	int i;

	/* A thread that held it does not exist here (its update is short). */
	pthread_mutex_init(&crd_lock, NULL);
	crd_fork_child_one(&crd_default);
	for (i = 0; crd_pcpu && i < crd_ncpu; i++)
		crd_fork_child_one(&crd_pcpu[i]);
	for (crdp = crd_own; crdp; crdp = crdp->own_next)
		crd_fork_child_one(crdp);
}

__attribute__((constructor)) static void crd_init_fork(void)
{
	/* Child only: nothing runs concurrently with it. */
	pthread_atfork(NULL, NULL, crd_fork_child);
}

static void crd_kick_one(struct call_rcu_data *crdp)
{
	if (sk_atomic_xchg_seq_cst(&crdp->kick, 0))
		queue_carrier(crdp);
}

/* Queue the carriers that a fork child replaced (crd_fork_child_one()). */
static void crd_kick_slow(void)
{
	struct call_rcu_data *crdp;
	int i;

	if (!sk_atomic_xchg_seq_cst(&crd_fork_kick, 0))
		return;
	pthread_mutex_lock(&crd_lock);
	crd_kick_one(&crd_default);
	for (i = 0; crd_pcpu && i < crd_ncpu; i++)
		crd_kick_one(&crd_pcpu[i]);
	for (crdp = crd_own; crdp; crdp = crdp->own_next)
		crd_kick_one(crdp);
	pthread_mutex_unlock(&crd_lock);
}

static inline void crd_kick(void)
{
	/* Relaxed: set only in a fork child, before it had other threads. */
	if (SK_UNLIKELY(sk_atomic_load_relaxed(&crd_fork_kick)))
		crd_kick_slow();
}

/* The CPU's assignment; NULL when none.  Inside a read section. */
static struct call_rcu_data *cpu_crdp(int cpu)
{
	/* URCU-C1: acquire pairs with URCU-C2: crd_ncpu is set. */
	struct call_rcu_data **a = sk_atomic_load_acquire(&crd_cpu);

	if (!a || cpu < 0 || cpu >= crd_ncpu)
		return NULL;
	/* URCU-C3: acquire pairs with URCU-C4: *crdp is initialised. */
	return sk_atomic_load_acquire(&a[cpu]);
}

static void call_rcu(struct rcu_head *head, void (*func)(struct rcu_head *))
{
	struct call_rcu_data *crdp = crd_thread;

	if (!func)
		sk__urcu_die("call_rcu(%p, NULL): no callback", (void *)head);
	crd_kick();
	head->func = func;
	/* Relaxed: only whether assignments exist; cpu_crdp() orders. */
	if (crdp || !sk_atomic_load_relaxed(&crd_cpu)) {
		/* The thread's own (it outlives its use here), or the default. */
		crd_push(crdp ? crdp : &crd_default, head);
	} else {
		sk_rcu_read_lock();
		crdp = cpu_crdp(sched_getcpu());
		crd_push(crdp ? crdp : &crd_default, head);
		sk_rcu_read_unlock();
	}
}
void urcu_memb_call_rcu(struct rcu_head *head,
			void (*func)(struct rcu_head *head))
	__attribute__((alias("call_rcu")));
void urcu_bp_call_rcu(struct rcu_head *head,
		      void (*func)(struct rcu_head *head))
	__attribute__((alias("call_rcu")));

/* QSBR: its batch runs on an online thread (crd_batch_online()). */
void urcu_qsbr_call_rcu(struct rcu_head *head,
			void (*func)(struct rcu_head *head))
{
	sk__urcu_note_qsbr(); /* before the push: see crd_batch_online() */
	call_rcu(head, func);
}

/* ---- rcu_barrier ------------------------------------------------------------ */

/*
 * One rcu_barrier(): a marker head for each call_rcu_data that was not
 * idle, and how many have not run.  On the heap, not the stack: a fork
 * child inherits the markers of a barrier another thread was in, runs
 * them, and leaks the block.
 */
struct crd_barrier {
	unsigned long left; /* markers not run yet */
	struct crd_marker {
		struct rcu_head head;
		struct crd_barrier *b;
	} m[];
};

static void marker_cb(struct rcu_head *head)
{
	struct crd_marker *m =
		(struct crd_marker *)((char *)head -
				      offsetof(struct crd_marker, head));

	/*
	 * URCU-Q7: full barrier: the callbacks that ran before this marker
	 * (earlier batches of its call_rcu_data, earlier heads of this one)
	 * happen before rcu_barrier() returns; pairs with URCU-Q8.
	 */
	sk_atomic_fetch_add_seq_cst(&m->b->left, ~0UL);
}

/* Mark crdp unless it is idle; under crd_lock.  Returns 1 if marked. */
static int barrier_mark(struct call_rcu_data *crdp, struct crd_barrier *b,
			size_t i)
{
	/*
	 * URCU-Q8: acquire, pairs with URCU-Q6: a 0 means every callback
	 * pushed before this load ran, and their accesses happen before.
	 */
	if (!sk_atomic_load_acquire(&crdp->pending))
		return 0;
	b->m[i].b = b;
	b->m[i].head.func = marker_cb;
	sk_atomic_fetch_add_seq_cst(&b->left, 1UL); /* before it can run */
	crd_push(crdp, &b->m[i].head);
	return 1;
}

/*
 * Waits for every callback queued through any call_rcu_data before the
 * call: a marker goes through each call_rcu_data that is not idle, and
 * runs after every head pushed there before it (batches run in order);
 * sk_rcu_barrier() until each ran, which also waits for the deferred
 * calls (defer_rcu()) and for every other scalekit callback.
 */
static void barrier(void)
{
	struct call_rcu_data *crdp;
	struct crd_barrier *b;
	size_t n, i = 0;
	int c;

	if (crd_in_cb)
		sk__urcu_die("rcu_barrier() called from a call_rcu() callback: "
			     "it would wait for itself");
#ifdef SK__URCU_BROKEN_BARRIER_SK_ONLY
	/*
	 * Broken twin (tests/urcu/CMakeLists.txt): sk_rcu_barrier() alone
	 * misses the heads still pending and the carriers that queue
	 * themselves again after it began.
	 */
	sk_rcu_barrier();
	return;
#endif
	crd_kick();
	pthread_mutex_lock(&crd_lock);
	n = 1 + (crd_pcpu ? (size_t)crd_ncpu : 0) + crd_nown;
	b = malloc(sizeof(*b) + n * sizeof(b->m[0]));
	if (!b)
		sk__urcu_die("rcu_barrier(): out of memory");
	b->left = 0;
	i += barrier_mark(&crd_default, b, i);
	for (c = 0; crd_pcpu && c < crd_ncpu; c++)
		i += barrier_mark(&crd_pcpu[c], b, i);
	for (crdp = crd_own; crdp && i < n; crdp = crdp->own_next)
		i += barrier_mark(crdp, b, i);
	pthread_mutex_unlock(&crd_lock);
	/*
	 * A carrier queues itself again from its callback, after
	 * sk_rcu_barrier() began: one more round per batch still to run.
	 */
	do
		sk_rcu_barrier();
	while (sk_atomic_load_acquire(&b->left)); /* URCU-Q8': pairs with URCU-Q7 */
	free(b);
}
SK__URCU_ALIAS3(barrier, barrier);

/* ---- call_rcu_data ---------------------------------------------------------- */

static struct call_rcu_data *get_default(void) { return &crd_default; }
SK__URCU_ALIAS3(get_default_call_rcu_data, get_default);

static struct call_rcu_data *get_thread(void) { return crd_thread; }
SK__URCU_ALIAS3(get_thread_call_rcu_data, get_thread);

static void set_thread(struct call_rcu_data *crdp) { crd_thread = crdp; }
SK__URCU_ALIAS3(set_thread_call_rcu_data, set_thread);

static struct call_rcu_data *get_cpu(int cpu) { return cpu_crdp(cpu); }
SK__URCU_ALIAS3(get_cpu_call_rcu_data, get_cpu);

static struct call_rcu_data *get_current(void)
{
	struct call_rcu_data *crdp = crd_thread;

	if (!crdp)
		crdp = cpu_crdp(sched_getcpu());
	return crdp ? crdp : &crd_default;
}
SK__URCU_ALIAS3(get_call_rcu_data, get_current);

/* The array of assignments, allocated on first use.  Under crd_lock. */
static struct call_rcu_data **cpu_array(void)
{
	long n;

	if (crd_cpu)
		return crd_cpu;
	n = sysconf(_SC_NPROCESSORS_CONF);
	if (n < 1)
		n = 1;
	crd_ncpu = (int)n;
	/* URCU-C2: crd_ncpu before the array; pairs with URCU-C1. */
	sk_atomic_store_release(&crd_cpu,
				(struct call_rcu_data **)calloc((size_t)n,
								sizeof(*crd_cpu)));
	return crd_cpu;
}

static int set_cpu(int cpu, struct call_rcu_data *crdp)
{
	struct call_rcu_data **a;
	int err = 0;

	pthread_mutex_lock(&crd_lock);
	a = cpu_array();
	if (!a)
		err = ENOMEM;
	else if (cpu < 0 || cpu >= crd_ncpu)
		err = EINVAL;
	else if (crdp && a[cpu])
		err = EEXIST;
	else /* URCU-C4: *crdp before the pointer; pairs with URCU-C3. */
		sk_atomic_store_release(&a[cpu], crdp);
	pthread_mutex_unlock(&crd_lock);
	if (err)
		errno = err;
	return -err;
}
SK__URCU_ALIAS3(set_cpu_call_rcu_data, set_cpu);

static pthread_t get_thread_of(struct call_rcu_data *crdp)
{
	pthread_t t = 0;

	/* The default and per-CPU workers have no call that names them. */
	if (crdp && crdp->kind == CRD_OWN &&
	    sk_rcu_cb_worker_pthread(crdp->w, &t) != 0)
		t = 0; /* -ESRCH: a fork() child, where it has no thread */
	return t;
}
SK__URCU_ALIAS3(get_call_rcu_thread, get_thread_of);

static struct call_rcu_data *create(unsigned long flags, int cpu_affinity)
{
	struct call_rcu_data *crdp = malloc(sizeof(*crdp));
	struct sk_rcu_cb_worker *w;

	(void)flags; /* URCU_CALL_RCU_RT: accepted, ignored */
	if (!crdp)
		return NULL;
	w = sk_rcu_cb_worker_create(0, cpu_affinity < 0 ? -1 : cpu_affinity);
	/*
	 * A CPU the process cannot run on (offline, outside its cpuset, or
	 * none such): liburcu's worker ignores the EINVAL of its affinity
	 * and runs unpinned; so does this one.
	 */
	if (!w && errno == EINVAL && cpu_affinity >= 0)
		w = sk_rcu_cb_worker_create(0, -1);
	if (!w) {
		free(crdp);
		return NULL; /* errno set by sk_rcu_cb_worker_create() */
	}
	crd_init(crdp, CRD_OWN, w);
	pthread_mutex_lock(&crd_lock);
	crdp->own_next = crd_own;
	crd_own = crdp;
	crd_nown++;
	pthread_mutex_unlock(&crd_lock);
	return crdp;
}
SK__URCU_ALIAS3(create_call_rcu_data, create);

/*
 * Pending callbacks go to the default call_rcu_data (as liburcu); the
 * batch in flight runs on crdp's worker first.
 */
static void crdp_free(struct call_rcu_data *crdp)
{
	struct call_rcu_data **pp;
	struct rcu_head *h, *next, *fifo = NULL;
	uintptr_t p;
	int was_online;

	if (!crdp || crdp->kind != CRD_OWN)
		return; /* the default and per-CPU ones are never freed */
	if (crd_in_cb)
		sk__urcu_die("call_rcu_data_free() called from a callback: it "
			     "would wait for itself");
	crd_kick();
	pthread_mutex_lock(&crd_lock);
	for (pp = &crd_own; *pp && *pp != crdp; pp = &(*pp)->own_next)
		;
	if (*pp) {
		*pp = crdp->own_next;
		crd_nown--;
	}
	pthread_mutex_unlock(&crd_lock);
	/*
	 * URCU-Q2 (the same detach as the carrier's, full barrier): take
	 * what is pending.  A compare-and-swap, not an exchange: the
	 * carrier may have taken the list and gone idle since the load, and
	 * CRD_INFLIGHT must not be set again with no carrier to clear it.
	 */
	p = sk_atomic_load_relaxed(&crdp->pending);
	while ((p & ~CRD_INFLIGHT) &&
	       !sk_atomic_cmpxchg_seq_cst(&crdp->pending, &p, CRD_INFLIGHT))
		;
	for (h = (struct rcu_head *)(p & ~CRD_INFLIGHT); h; h = next) {
		next = h->next_;
		h->next_ = fifo;
		fifo = h;
	}
	for (h = fifo; h; h = next) {
		next = h->next_;
		crd_push(&crd_default, h);
	}
	was_online = sk__urcu_wait_enter();
	/* The carrier in flight finds the list empty and makes crdp idle. */
	while (sk_atomic_load_acquire(&crdp->pending)) /* URCU-Q8 */
		sk_rcu_barrier();
	if (sk_rcu_cb_worker_destroy(crdp->w) != 0)
		sk__urcu_die("call_rcu_data_free() called from a callback: it "
			     "would wait for itself");
	sk__urcu_wait_exit(was_online);
	if (crdp->carrier != &crdp->carrier0)
		free(crdp->carrier);
	if (!crdp->abandoned)
		free(crdp); /* else a stale carrier may still be queued in it */
}
SK__URCU_ALIAS3(call_rcu_data_free, crdp_free);

static int create_all(unsigned long flags)
{
	struct call_rcu_data **a;
	int err, i;

	(void)flags; /* URCU_CALL_RCU_RT: accepted, ignored */
	err = sk_rcu_cb_workers_create(0);
	if (err && err != -EEXIST) {
		errno = -err;
		return err;
	}
	pthread_mutex_lock(&crd_lock);
	a = cpu_array();
	if (a && !crd_pcpu) {
		crd_pcpu = calloc((size_t)crd_ncpu, sizeof(*crd_pcpu));
		for (i = 0; crd_pcpu && i < crd_ncpu; i++)
			crd_init(&crd_pcpu[i], CRD_PER_CPU, NULL);
	}
	for (i = 0; a && crd_pcpu && i < crd_ncpu; i++)
		if (!a[i])
			sk_atomic_store_release(&a[i], &crd_pcpu[i]); /* URCU-C4 */
	pthread_mutex_unlock(&crd_lock);
	if (!a || !crd_pcpu) {
		errno = ENOMEM;
		return -ENOMEM;
	}
	return 0;
}
SK__URCU_ALIAS3(create_all_cpu_call_rcu_data, create_all);

/*
 * Like liburcu: every CPU's assignment is cleared, and after a grace
 * period the workers are freed (the per-CPU ones stopped, own ones set
 * for a CPU freed, each once).  The per-CPU call_rcu_data stay allocated
 * (their carriers may be in flight; the default worker runs them after
 * sk_rcu_cb_workers_destroy()) for a later create_all_cpu_call_rcu_data().
 */
static void free_all(void)
{
	struct call_rcu_data **a, **gone;
	int i, j, n = 0;

	pthread_mutex_lock(&crd_lock);
	a = crd_cpu;
	gone = a ? calloc((size_t)crd_ncpu, sizeof(*gone)) : NULL;
	for (i = 0; a && i < crd_ncpu; i++) {
		if (a[i] && a[i]->kind == CRD_OWN && gone) {
			for (j = 0; j < n && gone[j] != a[i]; j++)
				;
			if (j == n)
				gone[n++] = a[i];
		}
		sk_atomic_store_relaxed(&a[i], NULL); /* freed after a GP */
	}
	pthread_mutex_unlock(&crd_lock);
	sk_synchronize_rcu(); /* no call_rcu() uses them any more */
	for (i = 0; i < n; i++)
		crdp_free(gone[i]);
	free(gone);
	i = sk__urcu_wait_enter();
	(void)sk_rcu_cb_workers_destroy(); /* -ENOENT: none ran */
	sk__urcu_wait_exit(i);
}
SK__URCU_ALIAS3(free_all_cpu_call_rcu_data, free_all);
