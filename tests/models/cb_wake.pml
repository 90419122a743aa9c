/* SPDX-License-Identifier: MIT */
/*
 * cb_wake.pml - the sleep/wake protocol of the callback workers (the RCU
 * worker's loop in src/rcu_cb.c on sk__worker_sleep(), sk__worker_wake()
 * and sk__worker_take_kicks() of src/worker.c, which the SRCU worker
 * shares), checked with spin under a weak memory model.  Labels: W1 is
 * WK-W1 in the code, K2 is WK-K2, C1 is CB-C1, and so on.
 *
 * What is checked: the worker never blocks for good in a futex sleep while
 * work it must not sleep through is pending.  Spin reports such a state as
 * an "invalid end state" (the producers have finished, the worker waits).
 * With -DALL_URGENT every producer kicks urgently (like sk_rcu_barrier() and
 * sk_start_poll_synchronize_rcu()), and the lazy sleep has no timeout: an
 * urgent kick must end it.  Without, producers kick like an ordinary
 * sk_call_rcu() and the lazy sleep may time out at any moment; only the
 * idle sleep (no timeout) must not miss a callback.
 *
 * Memory model.  Every thread has a store buffer: a store (also the store
 * half of a read-modify-write) is pending until the memory process commits
 * it, in any order across addresses (weaker than x86's FIFO order, like
 * POWER and ARM), and the thread's own loads see its pending stores.  A
 * read-modify-write reads memory and leaves its store pending like any
 * other; it is atomic (no other store to its address commits between its
 * read and its store) and its store commits only after the thread's
 * earlier stores (release), but the thread's later loads may read memory
 * before it commits: as in C11, where a seq_cst RMW is no full fence for
 * a later relaxed load, and on ARMv8.0 (LDAXR/STLXR, then LDR).  Loads
 * are performed in program order.  A fence waits until the thread's store
 * buffer is empty.  A futex system call starts
 * with a fence; FUTEX_WAIT compares and blocks atomically.
 *
 * The protocol (names as in src/worker.c and src/rcu_cb.c):
 *   producer: C1 push (RMW on the queue); K1 urgent = 1 (RMW, urgent
 *             kicks only); K2 fence; load sleeping; if the worker sleeps
 *             in a state this kick must end (idle: any kick; lazy: an
 *             urgent one), CAS it to AWAKE and futex-wake.
 *   worker:   queue empty?  idle sleep.  Else, urgent not set?  lazy
 *             sleep.  K3 urgent = 0 (RMW); take the queue (RMW).
 *   sleep:    W1 sleeping = state (RMW); W2 fence; re-check (queue for an
 *             idle sleep, urgent for a lazy one); futex-wait while
 *             sleeping == state; sleeping = AWAKE.
 * Each producer has its own queue, abstracted to a count of callbacks
 * pushed and not taken; the worker takes the queues one by one.
 * Poll requests (a CAS on poll_req, then an urgent kick) and barriers (a
 * push of the barrier head, then an urgent kick) make the same moves as an
 * urgent producer.  The backlog kick of a producer far ahead of the worker
 * (a relaxed hint store to urgent, and a wake from a lazy sleep it
 * happens to see) promises no more than an ordinary kick and is not
 * modelled beyond it.
 *
 * Broken twins (each must fail):
 *   -DNO_FENCE   drops K2 and W2 (the code before issue 11 item 6 relied on
 *                the RMW before the load being a full barrier);
 *   -DLATE_URGENT loads sleeping before storing urgent (the order before
 *                issue 11 item 9): with -DALL_URGENT the worker sleeps
 *                lazily through the kick;
 *   -DPLAIN_RESET resets urgent with a plain store (as before issue 11):
 *                with -DALL_URGENT a kick that lands just before the reset
 *                is wiped out, the take misses its callback, and the worker
 *                sleeps lazily with it queued.
 * Run by tests/models/check_cb_wake.sh.
 */

#define NP 2			/* producers */
#define NT (NP + 1)		/* threads: 0 is the worker */
#define NA 4			/* addresses: */
#define Q1 0			/*   producer 1's queue (a count) */
#define Q2 1			/*   producer 2's queue */
#define SLEEPING 2		/*   cb.sleeping */
#define URGENT 3		/*   cb.urgent */

#define AWAKE 0			/* cb.sleeping states */
#define IDLE 1
#define LAZY 2

int mem[NA];			/* committed values */
bool pend[NT * NA];		/* store buffer: one slot per thread */
int pval[NT * NA];		/* and address */
byte after[NT * NA];		/* RMW store: bit b while the thread's
				   earlier store to b is pending */
byte owner[NA];			/* thread + 1 whose RMW store is pending */
bool waiting;			/* the worker is blocked in FUTEX_WAIT */
byte taken;			/* ghost: callbacks the worker took */

#define SLOT(t, a) ((t) * NA + (a))
#define BUF_EMPTY(t) (!pend[SLOT(t, 0)] && !pend[SLOT(t, 1)] && \
		      !pend[SLOT(t, 2)] && !pend[SLOT(t, 3)])
#define PEND_MASK(t) ((pend[SLOT(t, 0)] -> 1 : 0) | \
		      (pend[SLOT(t, 1)] -> 2 : 0) | \
		      (pend[SLOT(t, 2)] -> 4 : 0) | \
		      (pend[SLOT(t, 3)] -> 8 : 0))

/* Load with store forwarding. */
inline load(t, a, r)
{
	atomic {
		if
		:: pend[SLOT(t, a)] -> r = pval[SLOT(t, a)]
		:: else -> r = mem[a]
		fi
	}
}

/* Plain store: into the buffer (after an earlier one to a commits). */
inline store(t, a, v)
{
	atomic {
		!pend[SLOT(t, a)] ->
		pend[SLOT(t, a)] = 1;
		pval[SLOT(t, a)] = v;
		after[SLOT(t, a)] = 0
	}
}

/*
 * The store half of a read-modify-write (the read half, of mem[a], came
 * just before, in the same atomic step): pending, a owned by the thread
 * until it commits, and committed only after the thread's earlier stores
 * (release).
 */
inline rmw_store(t, a, v)
{
	after[SLOT(t, a)] = PEND_MASK(t);
	owner[a] = t + 1;
	pend[SLOT(t, a)] = 1;
	pval[SLOT(t, a)] = v
}

/* An RMW may start when no other RMW owns a and no own store to a waits. */
#define RMW_READY(t, a) (owner[a] == 0 && !pend[SLOT(t, a)])

inline rmw_xchg(t, a, v, r)
{
	atomic {
		RMW_READY(t, a) ->
		r = mem[a];
		rmw_store(t, a, v)
	}
}

inline rmw_add(t, a, r)
{
	atomic {
		RMW_READY(t, a) ->
		r = mem[a];
		rmw_store(t, a, r + 1)
	}
}

/* Compare-and-swap: ok = 1 and v stored when *a == e, else only a load. */
inline rmw_cas(t, a, e, v, ok)
{
	atomic {
		RMW_READY(t, a) ->
		if
		:: mem[a] == e ->
			ok = 1;
			rmw_store(t, a, v)
		:: else -> ok = 0
		fi
	}
}

/* A full fence: wait until every store of the thread is committed. */
inline fence(t)
{
	BUF_EMPTY(t)
}

/*
 * The memory system commits a pending store: not into an address that
 * another thread's RMW owns, and an RMW's store not before the thread's
 * earlier stores.
 */
inline commit(t, a)
{
	atomic {
		pend[SLOT(t, a)] && after[SLOT(t, a)] == 0 &&
		(owner[a] == 0 || owner[a] == t + 1) ->
		mem[a] = pval[SLOT(t, a)];
		pend[SLOT(t, a)] = 0;
		after[SLOT(t, 0)] = after[SLOT(t, 0)] & ~(1 << a);
		after[SLOT(t, 1)] = after[SLOT(t, 1)] & ~(1 << a);
		after[SLOT(t, 2)] = after[SLOT(t, 2)] & ~(1 << a);
		after[SLOT(t, 3)] = after[SLOT(t, 3)] & ~(1 << a);
		if
		:: owner[a] == t + 1 -> owner[a] = 0
		:: else -> skip
		fi
	}
}

active proctype memory()
{
end:	do
	:: commit(0, 0) :: commit(0, 1) :: commit(0, 2) :: commit(0, 3)
	:: commit(1, 0) :: commit(1, 1) :: commit(1, 2) :: commit(1, 3)
	:: commit(2, 0) :: commit(2, 1) :: commit(2, 2) :: commit(2, 3)
	od
}

/* queues_empty() of thread 0: e = 1 when both queues read empty. */
inline queues_empty(e)
{
	load(0, Q1, r);
	e = (r == 0);
	if
	:: e -> load(0, Q2, r); e = (r == 0)
	:: else -> skip
	fi
}

/* The take of one queue: sk__wfq_take() (an RMW only when not empty). */
inline take(q)
{
	load(0, q, r);
	if
	:: r != 0 ->
		rmw_xchg(0, q, 0, r);
		taken = taken + r
	:: else -> skip
	fi
}

/* worker_sleep(st) of thread 0. */
inline worker_sleep(st)
{
	rmw_xchg(0, SLEEPING, st, r);		/* W1 */
#ifndef NO_FENCE
	fence(0);				/* W2 */
#endif
	if
	:: st == LAZY -> load(0, URGENT, r); must = (r == 0)
	:: else -> queues_empty(must)
	fi;
	if
	:: must ->
		fence(0);			/* futex(2) */
		atomic {
			if
			:: mem[SLEEPING] == st -> waiting = 1
			:: else -> skip
			fi
		}
		if
		:: !waiting -> skip		/* woken (or never slept) */
#ifndef ALL_URGENT
		:: st == LAZY -> waiting = 0	/* the lazy timeout */
#endif
		fi
	:: else -> skip
	fi;
	store(0, SLEEPING, AWAKE)
}

/* worker_main(): runs until it has taken every callback. */
active proctype worker()
{
	int r;
	bool must;

	do
	:: taken == NP -> break
	:: else ->
		queues_empty(must);
		if
		:: must -> worker_sleep(IDLE)
		:: else ->
			load(0, URGENT, r);
			if
			:: r == 0 -> worker_sleep(LAZY)
			:: else -> skip
			fi;
#ifdef PLAIN_RESET
			store(0, URGENT, 0);
#else
			rmw_xchg(0, URGENT, 0, r);	/* K3 */
#endif
			take(Q1);
			take(Q2)
		fi
	od
}

/* enqueue() + worker_wake(u) of thread t. */
proctype producer(byte t; bool u)
{
	int r, st;
	bool ok;

	rmw_add(t, t - 1, r);			/* C1: push on queue t */
#ifdef LATE_URGENT
	fence(t);				/* K2 */
	load(t, SLEEPING, st);
	if
	:: u -> rmw_xchg(t, URGENT, 1, r)	/* K1, too late */
	:: else -> skip
	fi;
#else
	if
	:: u -> rmw_xchg(t, URGENT, 1, r)	/* K1 */
	:: else -> skip
	fi;
#ifndef NO_FENCE
	fence(t);				/* K2 */
#endif
	load(t, SLEEPING, st);
#endif
	if
	:: st == AWAKE || (st == LAZY && !u) -> skip
	:: else ->
		rmw_cas(t, SLEEPING, st, AWAKE, ok);
		if
		:: ok ->
			fence(t);		/* futex(2) */
			atomic {		/* FUTEX_WAKE */
				if
				:: waiting -> waiting = 0
				:: else -> skip
				fi
			}
		:: else -> skip
		fi
	fi
}

init
{
#ifdef ALL_URGENT
	run producer(1, 1);
	run producer(2, 1)
#else
	run producer(1, 0);
	run producer(2, 0)
#endif
}
