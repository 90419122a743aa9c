/* SPDX-License-Identifier: MIT */
/*
 * tools/torture_core.h - what the parts of `scalekit torture` share.
 *
 * Two axes, as in the kernel's rcutorture:
 *  - struct sk_tort_ops (torture_ops.h): one per synchronization
 *    primitive (RCU with general readers, QSBR readers, both mixed, SRCU,
 *    ...): how a reader enters and leaves a section, how an updater waits
 *    for a grace period (synchronous, expedited, callback, polled cookie,
 *    conditional).  A new primitive plugs in with one ops structure and
 *    one line in the mode table of torture.c; the harness and the
 *    scenarios do not change.  Every ops gets a "busted" twin for free
 *    (sk_tort_make_busted()): the same readers, grace periods that do not
 *    wait.  The ops are a library of their own (sk_tort_ops) that the
 *    tests' stress checks run on too; a run holds the instance its ops'
 *    init() made in T->ctx and passes it to every call.
 *  - struct sk_tort_scenario: what the readers and updaters do with it:
 *    the pipe test (torture_pipe.c), an RCU list (torture_list.c), the
 *    resizable hash table (torture_rhash.c).  The locks scenario
 *    (torture_locks.c) is a run of its own (its run()), over the lock ops
 *    table of torture_lock_ops.h, which the lock tests use too.
 *
 * The harness owns the rest: torture.c the modes and the command line;
 * torture_run.c one run, step by step (setup, threads, the monitor with
 * stutter, --fork, forward progress and the memory bound, the shutdown,
 * the final report); torture_threads.c the threads (readers, updaters,
 * helpers, churn, the callback flood), the setup, the pools and the
 * helpers below.  torture_util.c holds what the scenarios share
 * (per-thread state, pools' leak check, nested sections, grace-period
 * waits, objects freed after a grace period).
 */
#ifndef SK_TORTURE_CORE_H
#define SK_TORTURE_CORE_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "scalekit/rcu.h"
#include "torture_ops.h"

/* Stages of an element after its removal (RCU_TORTURE_PIPE_LEN). */
#define SK_TORT_PIPE_LEN 10
/* Histogram buckets: 0 .. SK_TORT_PIPE_LEN (the last one means ">="). */
#define SK_TORT_HIST (SK_TORT_PIPE_LEN + 1)
/* Deepest --nesting: far below the reader word's nesting field. */
#define SK_TORT_MAX_NEST 1000

/* Values of live and freed objects, shared by the scenarios. */
#define SK_TORT_MAGIC ((unsigned long)0x70e7ce11a11feULL)	    /* live */
#define SK_TORT_POISON ((unsigned long)0x6b6b6b6b6b6b6b6bULL) /* freed (poisoned first) */

/* The command line, as parsed. */
struct sk_tort_config {
	const char *mode;
	unsigned long duration_s;
	unsigned long readers;
	unsigned long updaters;
	uint64_t seed;
	unsigned int gp_mask; /* bit g: SK_TORT_GP_* allowed */
	unsigned long nesting;
	int sleep, churn, fork, flood, stutter, busted;
	int busted_qsbr, busted_hs, busted_quiet, busted_scan; /* broken library paths: must FAIL */
	int cb_pcpu;	   /* per-CPU callback workers, cycled every second */
	int in_section;	   /* rhash: updates inside read sections */
	unsigned long threads; /* locks: threads per lock (0: default) */
	const char *lock;      /* locks: only this lock (NULL: all) */
	double fault_rate; /* rhash: fraction of failing allocations */
	unsigned long rss_limit_mib;
	unsigned long stall_s; /* no grace period for this long: FAIL */
	int is_child;	       /* the --fork child run */
};

enum sk_tort_role {
	SK_TORT_READER,
	SK_TORT_UPDATER,
	SK_TORT_EXTRA, /* scenario helper (hand-off, resizer) */
	SK_TORT_FLOOD,
	SK_TORT_CHURN, /* spawns short-lived readers one after another */
};

/*
 * Slots of struct sk_tort_stats.x: they belong to the scenario alone.
 * Each scenario names its slots with an enum whose last member counts
 * them and checks that count with SK_TORT_X_FITS(); the harness never
 * writes x[], its own figures are fields of their own.  So two figures
 * cannot share a slot.
 */
#define SK_TORT_NX 8
#define SK_TORT_X_FITS(nr) \
	_Static_assert((nr) <= SK_TORT_NX, "too many scenario counters")

/*
 * Counters of a thread: written by the owner with relaxed atomics, read
 * by the monitor.  Short-lived churn readers write into their spawner's.
 */
struct sk_tort_stats {
	unsigned long reads;	/* read sections (or lookups) checked */
	unsigned long updates;	/* updates completed */
	unsigned long errors;	/* failed checks */
	unsigned long max_pipe; /* largest pipe count seen at a section end */
	unsigned long pipe[SK_TORT_HIST];     /* Reader Pipe */
	unsigned long batch[SK_TORT_HIST];    /* Reader Batch */
	unsigned long gp_used[SK_TORT_GP_NR]; /* updates per --gp type */
	unsigned long cb_queued;	      /* callbacks this thread queued */
	unsigned long churned;		      /* --churn: readers joined */
	unsigned long x[SK_TORT_NX];	      /* the scenario's (see above) */
} __attribute__((aligned(SK_CACHELINE)));

struct sk_tort;
struct sk_tort_obj;

struct sk_tort_thread {
	struct sk_tort *T;
	pthread_t tid;
	enum sk_tort_role role;
	unsigned long index; /* among the threads of its role */
	struct sk_tort_rng rng;
	int qsbr;		  /* reader holds references until quiescent */
	int started;		  /* pthread_create succeeded */
	unsigned long max_iters;  /* churn readers: sections, then exit */
	void *priv;		  /* scenario state of the thread */
	struct sk_tort_stats *st; /* &own, or the spawner's */
	struct sk_tort_stats own;
};

/*
 * A scenario: what readers and updaters do.  Functions may be NULL.
 * read_one() runs one read-side section with its checks; for QSBR readers
 * (t->qsbr) it may keep references until before_qs(), which re-checks
 * them just before the thread announces a quiescent state.
 */
struct sk_tort_scenario {
	const char *name;
	/*
	 * A scenario with a harness of its own (locks: the rest NULL, and
	 * the mode's ops too): the whole run; returns the exit status.
	 */
	int (*run)(const struct sk_tort_config *cfg);
	int needs_global_rcu; /* uses sk_rhash & co: RCU-domain ops only */
	int plain_updaters;   /* updaters never QSBR-online (they block on
				 locks that a grace-period waiter holds) */
	/*
	 * Before the threads start: 0, or -errno after releasing all it
	 * set up (the harness prints the message).
	 */
	int (*setup)(struct sk_tort *T);
	int (*thread_init)(struct sk_tort_thread *t);
	void (*thread_fini)(struct sk_tort_thread *t);
	void (*read_one)(struct sk_tort_thread *t);
	void (*before_qs)(struct sk_tort_thread *t);
	void (*update_one)(struct sk_tort_thread *t);
	/* Updater after stop: complete what is in flight (polled frees). */
	void (*update_drain)(struct sk_tort_thread *t);
	/*
	 * Helper threads and their step (called until stop, then drain).
	 * nextra() runs before setup(): it may look at T->cfg and T->ops.
	 */
	unsigned int (*nextra)(struct sk_tort *T);
	void (*extra_one)(struct sk_tort_thread *t);
	void (*extra_drain)(struct sk_tort_thread *t);
	/* After every thread is joined: drain, verify, free. */
	void (*finish)(struct sk_tort *T);
	/* Scenario lines of the final report. */
	void (*report)(struct sk_tort *T, FILE *f);
	/* Free the scenario state (after the report). */
	void (*destroy)(struct sk_tort *T);
	/* Progress line extras ("resizes 12"). */
	void (*progress)(struct sk_tort *T, char *buf, size_t len);
	/* Poison o and give it back to its pool (struct sk_tort_obj users). */
	void (*obj_free)(struct sk_tort *T, struct sk_tort_obj *o);
};

extern const struct sk_tort_scenario sk_tort_pipe_scenario;
extern const struct sk_tort_scenario sk_tort_list_scenario;
extern const struct sk_tort_scenario sk_tort_rhash_scenario;
extern const struct sk_tort_scenario sk_tort_locks_scenario;

/* One run. */
struct sk_tort {
	const struct sk_tort_config *cfg;
	const struct sk_tort_ops *ops;
	void *ctx; /* the instance of ops that init() made (or NULL) */
	const struct sk_tort_scenario *scen;
	const char *prefix; /* "" or "fork child: " on messages */

	int stop __attribute__((aligned(SK_CACHELINE))); /* atomic */
	int paused;					 /* atomic: stutter */

	struct sk_tort_thread *threads;
	unsigned long nthreads;
	void *priv; /* scenario state */

	/* Updated by callbacks on library threads (relaxed atomics). */
	unsigned long cb_invoked __attribute__((aligned(SK_CACHELINE)));
	unsigned long cb_pending;  /* scenario callbacks not yet finished */
	unsigned long cb_requeued; /* callbacks queued from callbacks */
	unsigned long wcount[SK_TORT_HIST]; /* Free-Block Circulation */

	/* Errors outside the threads' counters (monitor, finish). */
	pthread_mutex_t err_lock;
	unsigned long global_errors;
	unsigned long printed; /* error messages printed so far */
	unsigned long suppressed;
};

/* Relaxed counters for one writer. */
static inline void sk_tort_inc(unsigned long *c)
{
	sk_atomic_store_relaxed(c, sk_atomic_load_relaxed(c) + 1);
}

static inline void sk_tort_add(unsigned long *c, unsigned long n)
{
	sk_atomic_store_relaxed(c, sk_atomic_load_relaxed(c) + n);
}

static inline void sk_tort_max(unsigned long *c, unsigned long v)
{
	if (v > sk_atomic_load_relaxed(c))
		sk_atomic_store_relaxed(c, v);
}

/*
 * A scenario callback is done with its object.  Release: the monitor
 * that sees cb_pending reach 0 (acquire) sees everything the callback did.
 */
static inline void sk_tort_cb_done(struct sk_tort *T)
{
	__atomic_fetch_sub(&T->cb_pending, 1UL, __ATOMIC_RELEASE);
}

/* The thread running harness code (NULL on library threads). */
extern __thread struct sk_tort_thread *sk_tort_self;

/* Has the run been told to stop? */
static inline int sk_tort_stopping(struct sk_tort *T)
{
	return sk_atomic_load_acquire(&T->stop);
}

/*
 * sk_tort_error() - count a failed check of thread t (NULL: a global
 * error) and print the first few messages on stderr.
 */
void sk_tort_error(struct sk_tort *T, struct sk_tort_thread *t, const char *fmt,
		   ...) __attribute__((format(printf, 3, 4)));

/* The errors sk_tort_error() has counted so far (any thread). */
unsigned long sk_tort_errors_so_far(struct sk_tort *T);

/* Updaters and helpers: wait while the run is paused (--stutter). */
void sk_tort_stutter_wait(struct sk_tort_thread *t);

/* A --gp type picked at random among the allowed ones. */
int sk_tort_pick_gp(struct sk_tort_thread *t);

/*
 * Loads and stores of object fields that readers check.  With a working
 * primitive they are plain (volatile) accesses, so that TSan verifies that
 * the grace period orders the readers' loads before the poisoning stores;
 * with a busted one the races are the point, and relaxed atomics keep
 * TSan quiet about them.
 */
#define SK_TORT_LOAD(T, x) \
	((T)->ops->busted ? SK_READ_ONCE(x) : *(volatile __typeof__(x) *)&(x))
#define SK_TORT_STORE(T, x, v)                                 \
	do {                                                   \
		if ((T)->ops->busted)                          \
			SK_WRITE_ONCE(x, v);                   \
		else                                           \
			*(volatile __typeof__(x) *)&(x) = (v); \
	} while (0)

/*
 * Object recycling.  With a working primitive, a retired (poisoned)
 * object is free()d, so that ASan reports any later access.  With a busted
 * one, readers do access retired objects; they stay in a FIFO quarantine
 * of their thread (a locked one) and are reused from there (type-stable memory, as the
 * kernel's SLAB_TYPESAFE_BY_RCU), never returned to malloc before the end
 * of the run, so the run stays memory-safe while readers see the poison.
 */
struct sk_tort_pool {
	size_t size; /* object size */
	int reuse;   /* busted: quarantine and reuse */
	void **ring; /* quarantine FIFO */
	unsigned long cap, head, len;
	unsigned long allocated, freed; /* for the leak check */
	/*
	 * Guards the quarantine when callbacks retire objects on other
	 * threads than the owner's (--busted --cb-pcpu: the real callback
	 * workers run them); only taken when reuse is set.
	 */
	pthread_mutex_t lock;
};

/*
 * Allocation failures on purpose, for the tests: with the environment
 * variable SCALEKIT_TORTURE_FAIL_ALLOC=N (read once, at the start of the
 * command), the Nth allocation of the top-level run's setup fails (the
 * thread array, the primitive's init(), the scenario's setup(); not the
 * fork child's).  Only the setup thread's allocations count (a table's
 * background resize allocates on the callback worker meanwhile, a timing-
 * dependent number of times); sk_tort_setup_fault() returns
 * 1 for that allocation and 0 for every other one, and always 0 once the
 * setup is over.  Every allocation of the setup asks it first.
 */
int sk_tort_setup_fault(void);

/* calloc(), failing when sk_tort_setup_fault() says so. */
void *sk_tort_calloc(size_t n, size_t size);

void sk_tort_pool_init(struct sk_tort_pool *p, size_t size, int reuse);
void *sk_tort_pool_alloc(struct sk_tort_pool *p); /* zeroed; NULL: ENOMEM */
void sk_tort_pool_retire(struct sk_tort_pool *p, void *obj);
void sk_tort_pool_destroy(struct sk_tort_pool *p);

/* Monotonic time in ns. */
uint64_t sk_tort_now_ns(void);

/* Sum of every thread's counters (for the report). */
void sk_tort_sum_stats(struct sk_tort *T, struct sk_tort_stats *sum);

/* Print "Name: a b c ..." for a histogram of SK_TORT_HIST buckets. */
void sk_tort_print_hist(FILE *f, const char *name, const unsigned long *h);

/* ---- helpers of the scenarios (torture_util.c) --------------------------- */

/*
 * Scenario state of a thread: an updater's (updater_size bytes, beginning
 * with its struct sk_tort_pool of elem_size objects) or a reader's
 * (reader_size bytes, zeroed).  0, or -1 when out of memory.
 */
int sk_tort_thread_priv_init(struct sk_tort_thread *t, size_t updater_size,
			     size_t elem_size, size_t reader_size);

/* Free a reader's state (updaters' stays for sk_tort_pools_destroy()). */
void sk_tort_thread_priv_fini(struct sk_tort_thread *t);

/* Objects allocated and freed by pool0 and every updater's pool. */
void sk_tort_pools_count(struct sk_tort *T, const struct sk_tort_pool *pool0,
			 unsigned long *allocated, unsigned long *freed);

/* Destroy every updater's pool and state, then pool0. */
void sk_tort_pools_destroy(struct sk_tort *T, struct sk_tort_pool *pool0);

/*
 * Enter 0 .. --nesting nested sections (their indexes in nidx; with spin,
 * a short spin after one in four); returns how many, for
 * sk_tort_nest_unlock().
 */
unsigned long sk_tort_nest_lock(struct sk_tort_thread *t, int *nidx, int spin);

/* Leave the depth nested sections of sk_tort_nest_lock(), innermost first. */
void sk_tort_nest_unlock(struct sk_tort_thread *t, const int *nidx,
			 unsigned long depth);

/*
 * Wait for a grace period of --gp type g (the callback type waits as sync);
 * cond waits up to cond_delay_us first, one time in two (0: never).
 */
void sk_tort_wait_gp(struct sk_tort_thread *t, int g,
		     unsigned long cond_delay_us);

/*
 * The head of an object an updater frees after a grace period (list and
 * rhash): the first member, so the pool frees the object through it.
 */
struct sk_tort_obj {
	struct sk_rcu_head rh;		  /* callback frees */
	struct sk_tort *T;		  /* for the callback */
	struct sk_tort_pool *pool;	  /* where it goes when freed */
	struct sk_tort_obj *next_pending; /* updater's polled frees */
	unsigned long cookie;		  /* their grace period */
};

/* The head of a list or rhash updater's state (its first member). */
struct sk_tort_updater {
	struct sk_tort_pool pool;    /* its objects */
	struct sk_tort_obj *pending; /* waiting for a polled grace period */
};

/* A zeroed object of pool with its head set; NULL when out of memory. */
void *sk_tort_obj_alloc(struct sk_tort *T, struct sk_tort_pool *pool);

/*
 * Free o (unlinked by updater t) after a grace period of --gp type g:
 * a callback, a polled cookie (pending until sk_tort_reap_pending()), or
 * a wait as sk_tort_wait_gp(); then T->scen->obj_free().
 */
void sk_tort_obj_retire(struct sk_tort_thread *t, struct sk_tort_obj *o, int g,
			unsigned long cond_delay_us);

/* Free the pending objects of u whose polled grace period is over. */
void sk_tort_reap_pending(struct sk_tort *T, struct sk_tort_updater *u);

/* update_drain() of list and rhash: wait until no object is pending. */
void sk_tort_update_drain(struct sk_tort_thread *t);

/*
 * Is magic that of a live object?  If not, counts an error naming the
 * object (what, obj, when) and returns 0 (list and rhash wording).
 */
int sk_tort_magic_ok(struct sk_tort_thread *t, const char *what,
		     const void *obj, const char *when, unsigned long magic);

/* ---- the harness (torture_threads.c, torture_run.c) ---------------------- */

/* A mode of the command line: a scenario and its default primitive. */
struct sk_tort_mode {
	const char *name;
	const struct sk_tort_scenario *scen;
	const struct sk_tort_ops *ops; /* default readers / grace periods */
	const char *summary;
};

/* The --fork child's run, in seconds. */
#define SK_TORT_CHILD_DURATION 1

/* "reader", "updater", "helper", "flood" or "churn". */
const char *sk_tort_role_name(enum sk_tort_role r);

/* The body of a thread of role r (reader_main(), updater_main(), ...). */
void *(*sk_tort_thread_main(enum sk_tort_role r))(void *);

/*
 * SCALEKIT_TORTURE_FAIL_ALLOC: sk_tort_fault_from_env() reads it once (0,
 * or -1 when it is not a number); sk_tort_fault_arm() arms the failure
 * when the top-level run's setup begins (on) and disarms it after (off).
 */
int sk_tort_fault_from_env(void);
void sk_tort_fault_arm(const struct sk_tort_config *cfg, int on);

/*
 * Set up a run: the thread array (roles, generators), the primitive's
 * init(), the scenario's setup().  0, or -1 after a message on stderr,
 * with everything set up so far released.  sk_tort_ops_cleanup() is the
 * primitive's cleanup(); sk_tort_ops_live() counts init()s not cleaned up.
 */
int sk_tort_setup(struct sk_tort *T);
void sk_tort_ops_cleanup(struct sk_tort *T);
long sk_tort_ops_live(void);

/*
 * One run of mode with primitive ops (mode->ops or a --flavor): banner,
 * setup, threads, monitor, shutdown, report; prefix is "" or "fork
 * child: ".  Also checks that the run cleaned up, exactly once, the
 * primitive it initialized.  Returns SK_TOOL_EXIT_OK or _FAIL.
 */
int sk_tort_run_checked(const struct sk_tort_config *cfg,
			const struct sk_tort_mode *mode,
			const struct sk_tort_ops *ops, const char *prefix);

/*
 * The locks mode, sk_tort_locks_scenario (torture_locks.c), runs every
 * lock of torture_lock_ops.h (or cfg->lock) in turn, cfg->threads threads
 * each (0: 2 x CPUs + 1), cfg->busted: their broken twins.
 * sk_tort_locks_list() prints the locks' names (the help).
 */
void sk_tort_locks_list(FILE *f);

#endif /* SK_TORTURE_CORE_H */
