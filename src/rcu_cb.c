/* SPDX-License-Identifier: MIT */
/*
 * RCU callbacks: sk_call_rcu(), sk_rcu_barrier(), SK_FREE_RCU() and the
 * worker thread that runs them; also the worker's part of polled grace
 * periods (sk_start_poll_synchronize_rcu()).
 *
 * Queues.  Each thread that queues callbacks gets its own queue (allocated
 * on first use, kept after the thread exits until the worker has drained
 * it), so producers never share a cache line: an enqueue is one atomic
 * exchange on the thread's own queue tail plus one release store.  The
 * queue is a wait-free multi-producer single-consumer list with a sentinel
 * (the consumer is the worker; the second producer is sk_rcu_barrier()).
 * When a queue cannot be allocated, the thread uses a static shared queue,
 * and keeps using it until its callbacks there have run (queue_get()).
 *
 * Worker loop.  Take every queued callback from every queue; take a cookie
 * for a grace period that starts after the take; wait for it (one grace
 * period per batch, however large); run the batch, queue by queue, in
 * queue order.  Callbacks that arrive meanwhile form the next batch.
 * When the backlog grows, grace periods are expedited.
 *
 * Per-CPU workers (sk_rcu_cb_workers_create(), src/rcu_cb_pcpu.c): one
 * more queue per CPU in the same list, drained by that CPU's worker; each
 * queue names its worker (q->w), and every worker runs the loop above
 * over its own queues.  What the two files share: internal/rcu_cb.h.
 *
 * Labels placed here: CB-P1, CB-I1, CB-B1; their legend, with the
 * partners and litmus tests, is in internal/rcu_cb.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scalekit/rcu.h"
#include "internal/rcu.h"
#include "internal/rcu_cb.h"

/*
 * Laziness: with few callbacks pending the worker waits up to CB_LAZY_NS
 * for more before starting a grace period, so that one grace period serves
 * a large batch; a producer whose own backlog exceeds CB_LAZY_MAX, a
 * barrier and a poll request cut the wait short.
 */
#define CB_LAZY_NS  1000000u
#define CB_LAZY_MAX 4096UL

/*
 * Producers yield the CPU to the worker: beyond SK__CB_THROTTLE callbacks
 * of their own pending, always (internal/worker.h); beyond
 * CB_THROTTLE_BUSY, while the worker is running callbacks,
 * which is when our CPU time helps it: a producer that keeps close to a
 * busy worker finds the objects it freed still in cache.  While the worker
 * waits for a grace period, yielding would not make it any sooner.
 */
#define CB_THROTTLE_BUSY 4096UL

/*
 * When the default worker's thread cannot be started (pthread_create()
 * fails: RLIMIT_NPROC, a pids cgroup, no memory), sk_call_rcu() queues
 * anyway and a later call tries again, at most once per CB_RETRY_NS, so
 * that a flood of calls does not make a failing thread creation each.
 */
#define CB_RETRY_NS 1000000u

/*
 * Automatic per-CPU workers (src/rcu_cb_auto.c): a thread's queue whose
 * backlog exceeds CB_AUTO_MIN moves to the worker of the CPU the thread
 * runs on; a flowing producer looks at its CPU once per CB_AUTO_EVERY
 * calls (a power of two), so that it follows when the scheduler moves it.
 */
#define CB_AUTO_MIN   256UL
#define CB_AUTO_EVERY 64UL

struct sk_rcu_barrier_state {
	unsigned long count; /* heads not yet run, + 1 for the caller */
	int done;	     /* futex: 1 when count reached 0 */
};

static struct {
	pthread_mutex_t lock; /* queues list, worker start, busy flags, q->w */
	struct sk__link queues;
	struct sk__rcu_cb_queue fallback; /* shared queue when malloc fails */
	pthread_mutex_t barrier_lock; /* one sk_rcu_barrier() at a time */
	pthread_key_t key;	      /* thread exit: orphan the queue */
	pthread_once_t key_once;      /* creates key (see cb_init()) */

	struct sk__worker w0; /* the default worker (also polled grace periods),
				 started under lock */
	/*
	 * Latest cookie sk_start_poll asked for (0, SK_RCU_COOKIE_COMPLETED,
	 * before the first).  Only meaningful while not completed: a
	 * completed request may lie 2^(bits-1) or more grace periods behind
	 * the counters, where a signed difference reads it as ahead.
	 */
	unsigned long poll_req;
	uint64_t retry_ns; /* no start attempt by sk_call_rcu() before (relaxed) */

	/* Statistics (workers write, anyone reads). */
	unsigned long batches, peak_backlog;
	unsigned long retired_queued, retired_invoked; /* of freed queues */
#ifdef SK_TESTING
	int busted; /* SK__CB_BUSTED_* (sk__rcu_cb_set_busted, testing.h) */
	int fail_allocs; /* sk__rcu_cb_test_fail_queue_allocs() */
#endif
} cb = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	/*
	 * The list holds the fallback queue from the start, statically:
	 * nothing is added at run time that a fork could catch half done.
	 * The rest of the fallback is as queue_init(&cb.fallback, 1) leaves it.
	 */
	.queues = { &cb.fallback.link, &cb.fallback.link },
	.fallback = {
		.wfq = { .tail = &cb.fallback.wfq.head },
		.w = &cb.w0,
		.acpu = -1,
		.link = { &cb.queues, &cb.queues },
		.shared = 1,
	},
	.barrier_lock = PTHREAD_MUTEX_INITIALIZER,
	.key_once = PTHREAD_ONCE_INIT,
	.w0 = { .cpu = -1, .run_lock = PTHREAD_MUTEX_INITIALIZER },
};

int sk__cb_on_valgrind;

/*
 * The per-CPU workers' state (src/rcu_cb_pcpu.c), defined here, below
 * them, because sk_call_rcu() reads its mode word (sk__rcu_cb_cpu_queue()).
 */
struct sk__rcu_cb_pcpu sk__rcu_cb_pcpu = { .lock = PTHREAD_MUTEX_INITIALIZER };

/*
 * The fork handlers of the files above (sk__rcu_cb_register_upper()), or
 * NULL when the program does not link them.  Set by their constructors,
 * before any thread can fork: read relaxed.
 */
static const struct sk__rcu_part *upper[SK__RCU_CB_NUPPER];

void sk__rcu_cb_register_upper(int which, const struct sk__rcu_part *p)
{
	sk_atomic_store_relaxed(&upper[which], p);
}

static const struct sk__rcu_part *upper_part(int i)
{
	return sk_atomic_load_relaxed(&upper[i]);
}

static __thread struct sk__rcu_cb_queue *my_q
	__attribute__((tls_model("initial-exec")));
/* The thread has callbacks on cb.fallback that may not have run. */
static __thread int on_fallback __attribute__((tls_model("initial-exec")));
__thread int sk__rcu_cb_in_worker __attribute__((tls_model("initial-exec")));

/* The queue at link l of cb.queues. */
static struct sk__rcu_cb_queue *queue_of(struct sk__link *l)
{
	return SK__CONTAINER_OF(l, struct sk__rcu_cb_queue, link);
}

static void queue_init(struct sk__rcu_cb_queue *q, int shared,
		       struct sk__worker *w)
{
	sk__wfq_init(&q->wfq);
	q->w = w;
	q->pcpu = 0;
	q->acpu = -1;
	q->queued = q->invoked = 0;
	q->b_first = q->b_last = NULL;
	q->b_next = NULL;
	q->busy = q->orphan = 0;
	q->shared = shared;
	q->barrier = NULL;
}

static void queue_exit(void *arg)
{
	struct sk__rcu_cb_queue *q = arg;

	pthread_mutex_lock(&cb.lock);
	q->orphan = 1; /* the worker frees it once drained */
	pthread_mutex_unlock(&cb.lock);
	my_q = NULL;
}

static void key_create(void)
{
	if (pthread_key_create(&cb.key, queue_exit) != 0)
		sk__die("pthread_key_create failed: cannot track thread exit");
}

static void cb_fork_prepare(void);
static void cb_fork_parent(void);
static void cb_fork_child(void);
static void cb_stats(struct sk_rcu_stats *st);

/* What src/rcu.c's fork handlers and sk_rcu_get_stats() call here. */
static const struct sk__rcu_part cb_part = {
	.fork_prepare = cb_fork_prepare,
	.fork_parent = cb_fork_parent,
	.fork_child = cb_fork_child,
	.stats = cb_stats,
};

/*
 * The only run-time initialization (the queue list is static; and whether
 * valgrind runs us, see internal/cbq.h), with the registration of cb_part:
 * at load time, before any thread can queue a callback or fork.
 * queue_get() runs the same once, in case another constructor queues a
 * callback before this one ran.  A fork while the once is in progress (it cannot happen after
 * this constructor) would make the child create the key again: harmless.
 */
__attribute__((constructor)) static void cb_init(void)
{
	sk__rcu_register_part(SK__RCU_PART_CB, &cb_part);
	pthread_once(&cb.key_once, key_create);
#ifdef SK__CB_VALGRIND
	sk__cb_on_valgrind = RUNNING_ON_VALGRIND;
#endif
}

/* The broken modes on (SK__CB_BUSTED_*); 0 in a release build. */
#ifdef SK_TESTING
#define cb_busted() sk_atomic_load_relaxed(&cb.busted)
#else
#define cb_busted() 0
#endif

#ifdef SK_TESTING
void sk__rcu_cb_test_fail_queue_allocs(int n)
{
	/* A test's count: orders nothing, pairs with nothing. */
	sk_atomic_store_relaxed(&cb.fail_allocs, n);
}

/* A failure asked for by the test: consume it. */
static int queue_alloc_fails(void)
{
	/* A test's count: orders nothing, pairs with nothing. */
	int n = sk_atomic_load_relaxed(&cb.fail_allocs);

	/* Consume one failure (the count only; orders nothing). */
	while (n > 0 && !sk_atomic_cmpxchg_seq_cst(&cb.fail_allocs, &n, n - 1))
		;
	return n > 0;
}
#else
static inline int queue_alloc_fails(void)
{
	return 0;
}
#endif

/*
 * Every callback queued on cb.fallback so far has run: none is left in
 * the queue, and no batch taken from it is still running.  A thread that
 * put callbacks there and then sees this has seen its own ones run.
 */
static int fallback_drained(void)
{
	int drained;

	/*
	 * Lock-free first: the acquire load of the tail (sk__wfq_empty())
	 * reads our own CB-C1 exchange or a later one (coherence, one
	 * location), so it reads the sentinel only after a take (its exchange
	 * in sk__wfq_take(), under cb.lock) took our callbacks.  Then the
	 * lock: the take sets busy in the same critical section, and
	 * worker_run() clears it under cb.lock after the batch ran, so seeing
	 * both under cb.lock orders those runs before our later pushes.
	 */
	if (!sk__wfq_empty(&cb.fallback.wfq))
		return 0;
	pthread_mutex_lock(&cb.lock);
	drained = sk__wfq_empty(&cb.fallback.wfq) && !cb.fallback.busy;
	pthread_mutex_unlock(&cb.lock);
	return drained;
}

/*
 * The calling thread's queue, created on first use.  When it cannot be
 * allocated the thread uses cb.fallback, and keeps using it until its
 * callbacks there have run: the worker takes each queue separately (and
 * a thread's own queue may go to an automatic worker), so callbacks on
 * its own queue could run before, or in a batch before, the ones it put
 * on the fallback, against "callbacks queued by one thread run in the
 * order queued".  Waiting until the whole fallback is drained (not only
 * our callbacks on it) costs the sticky thread a look at the fallback's
 * tail per call, and cb.lock only when that looks drained; the fallback
 * has no per-producer count to tell ours apart (its queued and invoked
 * counts may differ in order from its pushes), and being there longer
 * only costs speed, never order.  The thread that never hits ENOMEM pays
 * nothing: it returns my_q above.
 */
static struct sk__rcu_cb_queue *queue_get(void)
{
	struct sk__rcu_cb_queue *q = my_q;

	if (SK_LIKELY(q != NULL))
		return q;
	pthread_once(&cb.key_once, key_create);
	if (on_fallback && !(cb_busted() & SK__CB_BUSTED_FALLBACK_LEAVE) &&
	    !fallback_drained())
		return &cb.fallback;
	q = queue_alloc_fails() ? NULL
				: aligned_alloc(SK_CACHELINE, sizeof(*q));
	if (!q) {
		on_fallback = 1;
		return &cb.fallback;
	}
	on_fallback = 0;
	queue_init(q, 0, &cb.w0);
	pthread_mutex_lock(&cb.lock);
	sk__link_add_tail(&q->link, &cb.queues);
	pthread_mutex_unlock(&cb.lock);
	pthread_setspecific(cb.key, q);
	my_q = q;
	return q;
}

/*
 * Move q's callbacks to its batch; 1 if any.  Worker only, cb.lock held.
 * A queue whose batch another worker still runs (a per-CPU queue handed
 * over between workers) is left alone until that batch has run, so the
 * queue keeps one consumer at a time and its order.
 */
static int queue_take(struct sk__rcu_cb_queue *q)
{
	if (q->busy || !sk__wfq_take(&q->wfq, &q->b_first, &q->b_last))
		return 0;
	q->busy = 1;
	return 1;
}

static void barrier_cb(struct sk_rcu_head *h);

/*
 * Run q's batch in order.  q->invoked counts user callbacks as they run and
 * is published (release) before each barrier head, so sk_rcu_barrier()
 * and the statistics never see it lag behind a barrier.
 */
static void run_batch(struct sk__rcu_cb_queue *q)
{
	struct sk_rcu_head *h = q->b_first, *last = q->b_last, *next;
	unsigned long n = q->invoked;

	for (; h; h = next) {
		next = sk__wfq_next(h, last);
		/*
		 * The next heads are likely cache misses (another CPU wrote
		 * them, long ago), and a list walk loads them one after the
		 * other.  Heads queued in a row often lie at a fixed stride
		 * (objects malloc()ed in a row): prefetch along it too.  A
		 * prefetch never faults, so a wrong guess costs nothing.
		 */
		if (next) {
			/* In integers: the guess may lie outside any
			 * object, where pointer arithmetic is undefined. */
			uintptr_t stride = (uintptr_t)next - (uintptr_t)h;

			__builtin_prefetch(next, 1);
			__builtin_prefetch(
				(const void *)((uintptr_t)next + 8 * stride), 1);
		}
		if (h->func_ == barrier_cb) {
			/* CB-I1: the barrier's caller sees the runs before. */
			sk_atomic_store_release(&q->invoked, n);
		} else {
			n++;
		}
		sk__cb_invoke(h);
	}
	q->b_first = q->b_last = NULL;
	/* CB-I1: barrier/reaper/stats see invoked after the runs. */
	sk_atomic_store_release(&q->invoked, n);
}

/* The worker that drains q (cb.lock held, or after CB-P1: queue_kick()). */
static struct sk__worker *queue_worker(struct sk__rcu_cb_queue *q)
{
	return sk_atomic_load_relaxed(&q->w);
}

/* No callback waits in a queue that w drains. */
static int queues_empty(struct sk__worker *w)
{
	struct sk__link *l;
	int empty = 1;

	pthread_mutex_lock(&cb.lock);
	for (l = cb.queues.next; l != &cb.queues && empty; l = l->next) {
		struct sk__rcu_cb_queue *q = queue_of(l);

		empty = queue_worker(q) != w || sk__wfq_empty(&q->wfq);
	}
	pthread_mutex_unlock(&cb.lock);
	return empty;
}

/* Free drained queues of exited threads.  cb.lock held. */
static void reap_orphans(void)
{
	struct sk__link *l, *next;

	for (l = cb.queues.next; l != &cb.queues; l = next) {
		struct sk__rcu_cb_queue *q = queue_of(l);

		next = l->next;
		if (!q->orphan || q->busy ||
		    !sk__wfq_empty(&q->wfq) ||
		    sk_atomic_load_acquire(&q->queued) != q->invoked)
			continue;
		sk__link_del(&q->link);
		cb.retired_queued += q->queued;
		cb.retired_invoked += q->invoked;
		free(q);
	}
}

/* Polled grace periods are cb.w0's work. */
static int poll_pending(struct sk__worker *w)
{
	return w == &cb.w0 &&
	       !sk__rcu_done(sk_atomic_load_acquire(&cb.poll_req));
}

/* w has nothing to do: no callback, no poll request, no stop request. */
static int worker_idle(struct sk__worker *w, uint64_t *timeout_ns)
{
	(void)timeout_ns;
	return queues_empty(w) && !poll_pending(w) &&
	       !sk_atomic_load_relaxed(&w->stop);
}

/* The lazy sleep's re-check: no urgent kick yet. */
static int worker_unkicked(struct sk__worker *w, uint64_t *timeout_ns)
{
	(void)timeout_ns;
	return !sk_atomic_load_relaxed(&w->urgent);
}

/*
 * Take a batch from every queue w drains: *todo lists the queues in
 * cb.queues order.  Returns the backlog (callbacks pending in them).
 */
static unsigned long worker_take(struct sk__worker *w,
				 struct sk__rcu_cb_queue **todo)
{
	struct sk__rcu_cb_queue **tailp = todo;
	unsigned long backlog = 0;
	struct sk__link *l;

	pthread_mutex_lock(&cb.lock);
	for (l = cb.queues.next; l != &cb.queues; l = l->next) {
		struct sk__rcu_cb_queue *q = queue_of(l);

		if (queue_worker(q) == w && queue_take(q)) {
			backlog += sk_atomic_load_relaxed(&q->queued) -
				   q->invoked;
			*tailp = q;
			tailp = &q->b_next;
		}
	}
	*tailp = NULL;
	pthread_mutex_unlock(&cb.lock);
	/* A statistic: two workers may race and keep the smaller one. */
	if (backlog > sk_atomic_load_relaxed(&cb.peak_backlog))
		sk_atomic_store_relaxed(&cb.peak_backlog, backlog);
	return backlog;
}

/* Wait for one grace period that started after the take (and polls). */
static void worker_wait_gp(struct sk__worker *w, unsigned long backlog)
{
	unsigned long req, target;

	if (w != &cb.w0 &&
	    (cb_busted() & SK__CB_BUSTED_NO_GP))
		return; /* BROKEN on purpose (torture --busted --cb-pcpu) */
	req = sk_atomic_load_acquire(&cb.poll_req);
	target = sk__rcu_snap();
	/*
	 * A pending request newer than the snapshot: wait for it instead.
	 * Only a pending one (sk__rcu_done(), acquire of completed, orders
	 * nothing here: it only classifies req): a completed request may be
	 * 2^(bits-1) grace periods old, which the signed difference reads as
	 * ahead of target; waiting for it, completed, skipped the batch's
	 * grace period (32-bit targets after 2^31 grace periods).
	 */
	if (w == &cb.w0 && !sk__rcu_done(req) && (long)(req - target) > 0)
		target = req;
	/*
	 * The grace period the batch waits for: the full barrier that starts
	 * sk__rcu_snap() orders the take (and so every CB-C1 push it saw)
	 * before it starts.
	 */
	sk__rcu_wait(target, backlog > SK__CB_BACKLOG_EXPEDITE);
	sk_atomic_fetch_add_relaxed(&cb.batches, 1UL);
}

/*
 * Run the batches of todo, then let other workers take those queues.  A
 * queue handed to another worker meanwhile (an automatic or per-CPU
 * hand-over) may have that worker waiting for it (SK__WK_HANDOVER in
 * worker_loop()): kick it urgently after busy = 0 (the request, under
 * cb.lock, before WK-K1/WK-K2 in the kick; pairs with WK-W2 before the
 * re-check worker_handover_wait()).
 */
static void worker_run(struct sk__worker *w, struct sk__rcu_cb_queue *todo)
{
	struct sk__rcu_cb_queue *q;

	/* No fork() until the batches have run and are marked so. */
	pthread_mutex_lock(&w->run_lock);
	sk_atomic_store_relaxed(&w->invoking, 1);
	for (q = todo; q; q = q->b_next)
		run_batch(q);
	sk_atomic_store_relaxed(&w->invoking, 0);
	pthread_mutex_lock(&cb.lock);
	for (q = todo; q; q = q->b_next) {
		q->busy = 0;
		if (queue_worker(q) != w && !sk__wfq_empty(&q->wfq))
			sk__worker_wake(queue_worker(q), SK__WK_KICK_URGENT);
	}
	reap_orphans();
	pthread_mutex_unlock(&cb.lock);
	pthread_mutex_unlock(&w->run_lock);
}

/*
 * The hand-over sleep's re-check: w has no queue it can take now, but one
 * with callbacks whose batch another worker still runs (busy), which
 * kicks w when done (worker_run()); and no poll or stop request.
 */
static int worker_handover_wait(struct sk__worker *w, uint64_t *timeout_ns)
{
	struct sk__link *l;
	int wait = 0;

	(void)timeout_ns;
	if (sk_atomic_load_relaxed(&w->stop) || poll_pending(w))
		return 0;
	pthread_mutex_lock(&cb.lock);
	for (l = cb.queues.next; l != &cb.queues; l = l->next) {
		struct sk__rcu_cb_queue *q = queue_of(l);

		if (queue_worker(q) != w || sk__wfq_empty(&q->wfq))
			continue;
		if (!q->busy) {
			wait = 0; /* one to take */
			break;
		}
		wait = 1;
	}
	pthread_mutex_unlock(&cb.lock);
	return wait;
}

static void worker_loop(struct sk__worker *w)
{
	sk__rcu_cb_in_worker = 1;
	/* A per-CPU worker stops between batches (sk_rcu_cb_workers_destroy). */
	while (!sk_atomic_load_relaxed(&w->stop)) {
		struct sk__rcu_cb_queue *todo;
		unsigned long backlog;

		if (worker_idle(w, NULL)) {
			sk__worker_sleep(w, SK__WK_IDLE, 0, worker_idle);
			continue;
		}
		if (!sk_atomic_load_relaxed(&w->urgent))
			sk__worker_sleep(w, SK__WK_LAZY, CB_LAZY_NS,
					 worker_unkicked);
		/* WK-K3: consume the kicks before the take. */
		sk__worker_take_kicks(w);
		backlog = worker_take(w, &todo);
		if (!todo && !poll_pending(w)) {
			/*
			 * Nothing taken: perhaps a queue handed over whose
			 * batch another worker still runs.  Wait for its kick
			 * (at most CB_LAZY_NS) rather than spin on the
			 * producers' backlog kicks, which do not end it.
			 */
			sk__worker_sleep(w, SK__WK_HANDOVER, CB_LAZY_NS,
					 worker_handover_wait);
			continue;
		}
		worker_wait_gp(w, backlog);
		worker_run(w, todo);
	}
}

int sk__rcu_cb_worker_start(struct sk__worker *w, int cpu, unsigned flags,
			    const char *name)
{
	return sk__worker_start(w, name, worker_loop, cpu, flags);
}

int sk__rcu_cb_worker_ensure(void)
{
	return sk__worker_ensure(&cb.w0, &cb.lock, "sk-rcu-cb", worker_loop);
}

/* See internal/rcu_cb.h. */
void sk__rcu_cb_start_worker(void)
{
	uint64_t now;

	/* Acquire pairs with WK-S: the fast path of every call, a load. */
	if (SK_LIKELY(sk_atomic_load_acquire(&cb.w0.started)))
		return;
	now = sk__now_ns();
	/* Relaxed: a hint of when to try again, orders nothing. */
	if ((int64_t)(now - sk_atomic_load_relaxed(&cb.retry_ns)) < 0)
		return;
	if (sk__rcu_cb_worker_ensure() != 0)
		sk_atomic_store_relaxed(&cb.retry_ns, now + CB_RETRY_NS);
}

/*
 * Do the default worker's work on the calling thread until none of its
 * queues has a callback left: sk_rcu_barrier() when the worker's thread
 * cannot be started.  Each round is the worker's: take the batches, wait
 * for one grace period that started after the take, run them (under
 * run_lock, as the worker does).  Queues that a worker started meanwhile
 * is running are skipped (busy): that worker finishes them.  The caller
 * may wait for grace periods (sk__rcu_enter_wait() passed).
 */
static void run_default_work_here(void)
{
	int was = sk__rcu_cb_in_worker;

	/* The callbacks run in callback context: they must not wait. */
	sk__rcu_cb_in_worker = 1;
	for (;;) {
		struct sk__rcu_cb_queue *todo;
		unsigned long backlog = worker_take(&cb.w0, &todo);

		if (!todo)
			break;
		worker_wait_gp(&cb.w0, backlog);
		worker_run(&cb.w0, todo);
	}
	sk__rcu_cb_in_worker = was;
}

struct sk__worker *sk__rcu_cb_default_worker(void)
{
	return &cb.w0;
}

void sk__rcu_cb_lock(void)
{
	pthread_mutex_lock(&cb.lock);
}

void sk__rcu_cb_unlock(void)
{
	pthread_mutex_unlock(&cb.lock);
}

void sk__rcu_cb_add_cpu_queue(struct sk__rcu_cb_queue *q)
{
	queue_init(q, 1, &cb.w0);
	q->pcpu = 1;
	sk__link_add_tail(&q->link, &cb.queues);
}

/*
 * The worker of q, for a producer that has just pushed onto q.  A per-CPU
 * queue may be handed to cb.w0 meanwhile (sk_rcu_cb_workers_destroy()):
 * CB-P1 orders the push before the load of q->w (store buffering against
 * the destroy's store of q->w and its full barrier CB-D1): either the
 * load sees cb.w0, or the destroy's kick of cb.w0 comes after the push
 * and its re-check sees it.
 */
static struct sk__worker *queue_kick(struct sk__rcu_cb_queue *q, int kick)
{
	struct sk__worker *w;

	if (SK_UNLIKELY(q->pcpu))
		/* CB-P1: the CB-C1 push before the load of q->w; pairs with
		 * CB-D1. */
		sk_smp_mb__after_atomic();
	w = queue_worker(q);
	sk__worker_wake(w, kick);
	return w;
}

#ifdef SK_TESTING
/*
 * SK__CB_BUSTED_AUTO_SPLIT: give the thread a new queue on w, leaving its
 * queue to the worker it has.  That queue stays listed and is never freed
 * (the caller's sk_call_rcu() still kicks through it; a twin may keep
 * it).  On failure the thread keeps its queue.
 */
static void queue_split(struct sk__worker *w, int cpu)
{
	struct sk__rcu_cb_queue *nq = aligned_alloc(SK_CACHELINE, sizeof(*nq));

	if (!nq)
		return;
	queue_init(nq, 0, w);
	nq->acpu = cpu;
	pthread_mutex_lock(&cb.lock);
	sk__link_add_tail(&nq->link, &cb.queues);
	pthread_mutex_unlock(&cb.lock);
	pthread_setspecific(cb.key, nq);
	my_q = nq;
}
#endif

/*
 * The calling thread's own queue q has a backlog: hand it to the
 * automatic worker of the CPU the thread runs on (started on first use),
 * unless it is there already or that worker cannot run (then q keeps its
 * worker; nothing is lost).  Only the owner changes q->w of its queue, so
 * its push before and its kick after read it without the lock; workers
 * and barriers read it under the lock, which this store takes.  The old
 * worker may still run a batch of q: the new one takes q only after it
 * (busy), so q's callbacks keep their order.
 */
static __attribute__((noinline, cold)) void
queue_follow_cpu(struct sk__rcu_cb_queue *q)
{
	int cpu = sched_getcpu();
	struct sk__worker *w;

	if (cpu == q->acpu || cpu < 0)
		return;
	w = sk__rcu_cb_auto_worker(cpu, worker_loop);
	if (!w)
		return;
#ifdef SK_TESTING
	if (cb_busted() & SK__CB_BUSTED_AUTO_SPLIT) {
		queue_split(w, cpu); /* BROKEN on purpose (test twin) */
		return;
	}
#endif
	pthread_mutex_lock(&cb.lock);
	sk_atomic_store_relaxed(&q->w, w);
	q->acpu = cpu;
	pthread_mutex_unlock(&cb.lock);
}

/*
 * The queue for the calling thread's callback: the queue of the CPU it
 * runs on while per-CPU workers run, else its own queue.
 */
static struct sk__rcu_cb_queue *queue_pick(void)
{
	struct sk__rcu_cb_queue *q = sk__rcu_cb_cpu_queue();

	return q ? q : queue_get();
}

/* See internal/rcu_cb.h. */
int sk__rcu_cb_enqueue(struct sk__rcu_cb_queue *q, struct sk_rcu_head *head,
		       void (*fn)(struct sk_rcu_head *))
{
	unsigned long backlog, queued;
	struct sk__worker *w;
	int err;

	err = sk__cb_prepare(head, fn);
	if (err)
		return err;
	/*
	 * Queued even when the worker cannot start now (see
	 * sk__rcu_cb_start_worker()): the callback is never lost.
	 */
	sk__rcu_cb_start_worker();
	if (!q)
		q = queue_pick();
	sk__wfq_push(&q->wfq, head);
	/*
	 * queued: the count with this callback (other producers of a shared
	 * queue may add more meanwhile; a backlog figure is a hint).
	 */
	if (SK_UNLIKELY(q->shared)) {
		queued = sk_atomic_fetch_add_seq_cst(&q->queued, 1UL) + 1;
	} else {
		queued = q->queued + 1; /* the owner alone writes it */
		sk_atomic_store_relaxed(&q->queued, queued);
	}
	backlog = queued - sk_atomic_load_relaxed(&q->invoked);
	if ((long)backlog < 0) /* a shared queue ran others' past ours */
		backlog = 0;
	/* A thread's own queue with a backlog: its CPU's worker. */
	if (SK_UNLIKELY((queued & (CB_AUTO_EVERY - 1)) == 0) &&
	    backlog > CB_AUTO_MIN && q == my_q && !sk__rcu_cb_in_worker)
		queue_follow_cpu(q);
	w = queue_kick(q, backlog > CB_LAZY_MAX ? SK__WK_KICK_BACKLOG
						: SK__WK_KICK_IDLE);
	/*
	 * Forward progress under a flood: a producer far ahead of the worker
	 * gives up its CPU once per call (bounded work, no waiting on anyone);
	 * see CB_THROTTLE_BUSY for the lower threshold, which a callback
	 * worker (a callback that queues callbacks) does not apply: its CPU
	 * time is what runs callbacks, and with several workers (automatic
	 * ones) each would yield on every call while another runs a batch.
	 */
	if (SK_UNLIKELY(backlog > CB_THROTTLE_BUSY) &&
	    (backlog > SK__CB_THROTTLE ||
	     (sk_atomic_load_relaxed(&w->invoking) && !sk__rcu_cb_in_worker)))
		sched_yield();
	return 0;
}

int sk_call_rcu(struct sk_rcu_head *head, void (*fn)(struct sk_rcu_head *))
{
	if (fn && sk__cb_is_free_fn(fn))
		return -EINVAL;
	return sk__rcu_cb_enqueue(NULL, head, fn);
}

int sk_rcu__free_offset(struct sk_rcu_head *head, size_t offset)
{
	if (offset >= SK__CB_FREE_OFFSET_MAX)
		return -EINVAL;
	/* The offset travels in func_; run_batch() tells it apart. */
	return sk__rcu_cb_enqueue(NULL, head, sk__cb_free_fn(offset));
}

static void barrier_cb(struct sk_rcu_head *h)
{
	struct sk__rcu_cb_queue *q =
		SK__CONTAINER_OF(h, struct sk__rcu_cb_queue, bhead);
	struct sk_rcu_barrier_state *b = q->barrier;

	/* seq_cst: the markers of other queues (other workers) ran before. */
	if (sk_atomic_fetch_add_seq_cst(&b->count, -1UL) == 1) {
		/* CB-B1: release; pairs with the acquire in sk_rcu_barrier(). */
		sk_atomic_store_release(&b->done, 1);
		sk__futex_wake(&b->done, 1);
	}
}

/*
 * Push a marker on every queue with callbacks not yet run and kick the
 * worker of each.  Returns the markers pushed.  cb.barrier_lock held.
 */
static unsigned long barrier_push(struct sk_rcu_barrier_state *b)
{
	int busted = cb_busted();
	unsigned long n = 0;
	struct sk__link *l;

	pthread_mutex_lock(&cb.lock);
	for (l = cb.queues.next; l != &cb.queues; l = l->next) {
		struct sk__rcu_cb_queue *q = queue_of(l);

		/* Acquire pairs with CB-I1. */
		if (sk_atomic_load_acquire(&q->queued) ==
		    sk_atomic_load_acquire(&q->invoked))
			continue;
		if ((q->pcpu || q->acpu >= 0) &&
		    (busted & SK__CB_BUSTED_BARRIER))
			continue; /* BROKEN on purpose (test twins) */
		q->barrier = b;
		q->bhead.func_ = barrier_cb;
		q->bhead.state_ = sk__cb_queued_mark(&q->bhead);
		sk_atomic_fetch_add_seq_cst(&b->count, 1UL);
		sk__wfq_push(&q->wfq, &q->bhead);
		/* q->w cannot change: cb.lock is held. */
		sk__worker_wake(queue_worker(q), SK__WK_KICK_URGENT);
		n++;
	}
	pthread_mutex_unlock(&cb.lock);
	return n;
}

void sk_rcu_barrier(void)
{
	struct sk_rcu_barrier_state b = { 1, 0 };
	int was_online;

	if (sk__rcu_cb_in_worker)
		sk__die("sk_rcu_barrier() called from an RCU callback: it "
			"would wait for itself forever");
	was_online = sk__rcu_enter_wait("sk_rcu_barrier()");
	pthread_mutex_lock(&cb.barrier_lock);
	/*
	 * Callbacks may wait with no worker running: its start failed, or
	 * this is a fork child that inherited them.  Start it (only then:
	 * with nothing pending, a barrier starts no thread); when that
	 * fails, do its work here, markers included.
	 */
	if (barrier_push(&b) && sk__rcu_cb_worker_ensure() != 0)
		run_default_work_here();
	if (sk_atomic_fetch_add_seq_cst(&b.count, -1UL) != 1) {
		/* CB-B1: acquire; the callbacks ran before the markers. */
		while (!sk_atomic_load_acquire(&b.done))
			sk__futex_wait(&b.done, 0);
	}
	pthread_mutex_lock(&cb.lock);
	reap_orphans();
	pthread_mutex_unlock(&cb.lock);
	pthread_mutex_unlock(&cb.barrier_lock);
	if (was_online)
		sk_rcu_thread_online();
}

unsigned long sk_start_poll_synchronize_rcu(void)
{
	unsigned long cookie = sk__rcu_snap();
	unsigned long cur = sk_atomic_load_relaxed(&cb.poll_req);

	/*
	 * Raise poll_req to cookie (max); the worker runs that grace period.
	 * Also replace a completed request whatever its value: it may be
	 * 2^(bits-1) grace periods old (or the initial 0), which the signed
	 * difference reads as newer than cookie, and keeping it would drop
	 * this request (32-bit targets after 2^31 grace periods).  Pending
	 * requests are at most 2 ahead of completed, as cookie is, so the
	 * signed difference orders them right.  Seq_cst CAS: release, so
	 * that the worker's acquire of poll_req sees the gp_seq this cookie
	 * came from (its own snapshot is then not older).
	 */
	while (cur != cookie &&
	       ((long)(cookie - cur) > 0 || sk__rcu_done(cur)) &&
	       !sk_atomic_cmpxchg_seq_cst(&cb.poll_req, &cur, cookie))
		;
	if (sk__rcu_cb_worker_ensure() == 0)
		sk__worker_wake(&cb.w0, SK__WK_KICK_URGENT);
	return cookie;
}

static void cb_stats(struct sk_rcu_stats *st)
{
	struct sk__link *l;

	pthread_mutex_lock(&cb.lock);
	st->cb_queued = cb.retired_queued;
	st->cb_invoked = cb.retired_invoked;
	for (l = cb.queues.next; l != &cb.queues; l = l->next) {
		struct sk__rcu_cb_queue *q = queue_of(l);

		st->cb_queued += sk_atomic_load_relaxed(&q->queued);
		st->cb_invoked += sk_atomic_load_acquire(&q->invoked);
	}
	pthread_mutex_unlock(&cb.lock);
	st->cb_batches = sk_atomic_load_relaxed(&cb.batches);
	st->cb_peak_backlog = sk_atomic_load_relaxed(&cb.peak_backlog);
}

/*
 * fork().  Memory is copied, so the callbacks pending in the parent are
 * pending in the child too, and run in both: each process frees its own
 * copy of what they free.  (Dropping them in the child would leak that
 * copy, and hang whoever waits for them there: an sk_rhash_barrier().)
 * The prepare handler waits until no worker is in the middle of a batch
 * (run_lock), so every callback of the parent either ran before the fork
 * or is still queued in the child: in a taken batch not yet run, or in a
 * queue.  The child puts each taken batch back in front of its queue and
 * hands every queue to the default worker, which the next sk_call_rcu(),
 * sk_rcu_barrier() or poll request starts.
 */
static void cb_fork_prepare(void)
{
	/*
	 * Not barrier_lock: a barrier may hold it for a grace period, which
	 * may wait for the forking thread.  The child re-creates it.
	 * Lock order: the per-CPU workers' run_locks (taken before this:
	 * their part is higher, internal/rcu.h), the automatic workers'
	 * start lock and run_locks, run_lock (the worker holds it, then
	 * takes cb.lock), the locks of the files above (the own workers'
	 * lock and run_locks, then sk_defer_rcu()'s slab list: after every
	 * other worker's run_lock, because a callback may create an own
	 * worker or defer a call, which takes them while its batch holds
	 * its worker's run_lock), then cb.lock.
	 */
	int i;

	sk__rcu_cb_auto_fork_prepare();
	pthread_mutex_lock(&cb.w0.run_lock);
	for (i = 0; i < SK__RCU_CB_NUPPER; i++)
		if (upper_part(i))
			upper_part(i)->fork_prepare();
	pthread_mutex_lock(&cb.lock);
}

static void cb_fork_parent(void)
{
	int i;

	pthread_mutex_unlock(&cb.lock);
	for (i = SK__RCU_CB_NUPPER - 1; i >= 0; i--)
		if (upper_part(i))
			upper_part(i)->fork_parent();
	pthread_mutex_unlock(&cb.w0.run_lock);
	sk__rcu_cb_auto_fork_parent();
}

static void cb_fork_child(void)
{
	struct sk__link *l;
	int i;

	/* Taken by this thread in the prepare handler: release them. */
	pthread_mutex_unlock(&cb.lock);
	pthread_mutex_unlock(&cb.w0.run_lock);
	pthread_mutex_init(&cb.barrier_lock, NULL);
	for (l = cb.queues.next; l != &cb.queues; l = l->next) {
		struct sk__rcu_cb_queue *q = queue_of(l);
		unsigned long kept;

		/* busy: a batch taken, not yet run (run_lock was free). */
		kept = sk__wfq_fork_rebuild(&q->wfq, q->busy ? q->b_first : NULL,
					    q->b_last, &q->bhead);
		q->b_first = q->b_last = NULL;
		q->b_next = NULL;
		q->busy = 0;
		q->barrier = NULL;
		/* Counts of user callbacks: the kept ones are pending. */
		q->queued = q->invoked + kept;
		q->w = &cb.w0;
		q->acpu = -1;
		/* Its thread does not exist here: freed once drained. */
		if (!q->shared && q != my_q)
			q->orphan = 1;
	}
	sk__rcu_cb_in_worker = 0;
	sk__worker_fork_child(&cb.w0);
	sk__rcu_cb_auto_fork_child();
	cb.retry_ns = 0;
	/* The files above: the own workers' queues are w0's now. */
	for (i = SK__RCU_CB_NUPPER - 1; i >= 0; i--)
		if (upper_part(i))
			upper_part(i)->fork_child();
}

#ifdef SK_TESTING
void sk__rcu_cb_set_busted(int what)
{
	sk_atomic_store_relaxed(&cb.busted, what);
}
#endif
