/* SPDX-License-Identifier: MIT */
/*
 * bench/bench.h - the harness behind `scalekit bench`.
 *
 * The structure follows the kernel's refscale: one harness per family of
 * primitives, driven by one ops struct per implementation.  The harness
 * (harness.c) owns threads, timing, warm-up, repetitions and statistics;
 * a scenario (read.c: read and srcu-read; sync.c: sync, sync-many,
 * expedited and srcu-sync; poll.c; callbacks.c; hash.c: hash-lookup, hash-resize and
 * hash-update; hash_latency.c: hash-update-resize, hash-grow) decides
 * what to measure and which
 * implementations it compares; an adapter (peer_*.c) knows one library
 * and nothing else.  Adding a peer means one adapter file, one line in
 * the registry in harness.c and its name in the scenario tables.
 *
 * Fairness rules every adapter follows:
 *  - The read loop lives inside the adapter, written with
 *    SK_BENCH_READ_LOOP() or SK_BENCH_QSBR_LOOP(), so that each library's
 *    fast path is inlined into its own loop (no indirect call per
 *    iteration) and every loop has the same shape.
 *  - Every iteration consumes the value it dereferenced through
 *    SK_BENCH_USE(), a compiler barrier, so that no compiler can hoist the
 *    dereference out of the loop for a library whose read lock happens to
 *    be empty (QSBR).
 *  - Peer libraries are used the way a performance-minded user would use
 *    them: liburcu through its inline (_LGPL_SOURCE) fast paths, ck's
 *    force-inlined epoch sections.
 *
 * This header includes no library header on purpose: each liburcu flavor
 * header maps unprefixed names onto its own, so each flavor lives in its
 * own file and only there.
 */
#ifndef SK_BENCH_H
#define SK_BENCH_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* The object readers reach through the RCU-protected pointer. */
struct sk_bench_obj {
	long val; /* read by every iteration of every read loop */
} __attribute__((aligned(64)));

/*
 * The RCU-protected pointer of all read loops.  It is published before
 * any reader starts and never changes, so every implementation reads the
 * same read-mostly cache line.
 */
extern struct sk_bench_obj *sk_bench_gp;

/*
 * Size of the object every callback loop allocates with malloc() and whose
 * callback frees it: the same for every library, whatever its head's size.
 * Each adapter's object is "long key; <head>; padding": the same layout
 * everywhere, and a head at a non-zero offset, which SK_FREE_RCU() needs
 * (offset 0 travels as a NULL function and is refused with -EINVAL).
 */
#define SK_BENCH_CB_OBJ_SIZE 64

/* QSBR loops announce a quiescent state once per this many sections. */
#define SK_BENCH_QS_PERIOD 1024

/* Sections per read_section() call of the harness; a multiple of the above. */
#define SK_BENCH_CHUNK (4 * SK_BENCH_QS_PERIOD)

/*
 * SK_BENCH_USE(v) - make the compiler believe v is used and that memory
 * may have changed: a compiler barrier that costs no instruction.  It
 * keeps the dereference inside the loop for every implementation alike.
 */
#define SK_BENCH_USE(v) __asm__ __volatile__("" : : "r"(v) : "memory")

/*
 * Copies of every read loop, each at its own place in the code.  A loop of
 * a few instructions runs at very different speeds depending on where its
 * instructions fall against the CPU's fetch blocks, and which places are
 * slow depends on the CPU and on the loop: on an AMD EPYC family 26 VM
 * (2026-12-07) the scalekit pair ran 1.18 ns per section with its first
 * instruction on a 64-byte boundary and 0.63 to 0.74 ns at the 36 other
 * offsets tried, while urcu-memb's pair was slow 2 and 3 bytes past the
 * boundary (docs/benchmarks.md, "Loop placement").  So no single
 * placement is fair to every library: each implementation's loop is
 * compiled SK_BENCH_COPIES times, copy k after a 64-byte boundary and
 * 9 * k nops (tools/CMakeLists.txt turns the compiler's own loop
 * alignment off, so the copies keep their offsets), and successive
 * read_section() calls of a thread take the copies in turn: a figure is
 * the mean over the copies, what a program whose loop the linker put
 * anywhere would see on average.  The padding runs once per call
 * (SK_BENCH_CHUNK sections).
 */
#define SK_BENCH_COPIES 8 /* SK_BENCH_READ_LOOP() lists this many cases */

static __thread unsigned int sk_bench_copy_ __attribute__((unused));

/* The copy the next read loop of this thread runs. */
static inline unsigned int sk_bench_next_copy(void)
{
	return sk_bench_copy_++ % SK_BENCH_COPIES;
}

/* One loop: n sections "lock; read deref->val; unlock". */
#define SK_BENCH_LOOP_1(n, lock, deref, unlock)         \
	do {                                            \
		long sk_i_;                             \
		for (sk_i_ = 0; sk_i_ < (n); sk_i_++) { \
			lock;                           \
			SK_BENCH_USE((deref)->val);     \
			unlock;                         \
		}                                       \
	} while (0)

/*
 * Copy k: a 64-byte boundary, 9 * k nop instructions (9 * k bytes on x86,
 * 4 times that where instructions are 4 bytes), the loop.
 */
#define SK_BENCH_LOOP_AT(k, n, lock, deref, unlock)                    \
	case k:                                                        \
		__asm__ __volatile__(".p2align 6\n\t.rept " #k " * 9\n\t" \
				     "nop\n\t.endr");                    \
		SK_BENCH_LOOP_1(n, lock, deref, unlock);               \
		break

/*
 * SK_BENCH_READ_LOOP(n, lock, deref, unlock) - n read-side critical
 * sections, each "lock; read deref->val; unlock", in the next of this
 * thread's SK_BENCH_COPIES copies of the loop.  lock and unlock are
 * statements (expressions are fine), deref yields a struct sk_bench_obj
 * pointer.
 */
#define SK_BENCH_READ_LOOP(n, lock, deref, unlock)                    \
	do {                                                          \
		switch (sk_bench_next_copy()) {                       \
			SK_BENCH_LOOP_AT(0, n, lock, deref, unlock);  \
			SK_BENCH_LOOP_AT(1, n, lock, deref, unlock);  \
			SK_BENCH_LOOP_AT(2, n, lock, deref, unlock);  \
			SK_BENCH_LOOP_AT(3, n, lock, deref, unlock);  \
			SK_BENCH_LOOP_AT(4, n, lock, deref, unlock);  \
			SK_BENCH_LOOP_AT(5, n, lock, deref, unlock);  \
			SK_BENCH_LOOP_AT(6, n, lock, deref, unlock);  \
			default:                                      \
			SK_BENCH_LOOP_AT(7, n, lock, deref, unlock);  \
		}                                                     \
	} while (0)

/*
 * SK_BENCH_QSBR_LOOP(n, lock, deref, unlock, qs) - the same sections with
 * a quiescent state qs after every SK_BENCH_QS_PERIOD of them; n is a
 * multiple of SK_BENCH_QS_PERIOD.
 */
#define SK_BENCH_QSBR_LOOP(n, lock, deref, unlock, qs)                      \
	do {                                                                \
		long sk_o_;                                                 \
		for (sk_o_ = 0; sk_o_ < (n); sk_o_ += SK_BENCH_QS_PERIOD) { \
			SK_BENCH_READ_LOOP(SK_BENCH_QS_PERIOD, lock, deref, \
					   unlock);                         \
			qs;                                                 \
		}                                                           \
	} while (0)

/*
 * One implementation of a read side (and, where it has one, of a grace
 * period).  Every function pointer may be NULL except read_section; all
 * are NULL when the implementation is unavailable.
 */
struct sk_bench_rcu_ops {
	const char *name;	 /* column name, e.g. "urcu-memb" */
	const char *desc;	 /* one line for `scalekit bench --help` */
	const char *unavailable; /* NULL, or why it was not built */
	void (*init)(void);	 /* once, in the main thread, before all else */
	/* In each thread that reads: before its first section (register). */
	void (*thread_init)(void);
	/* Before a registered thread blocks for long (QSBR: go offline). */
	void (*thread_offline)(void);
	/* In each thread that called thread_init, before it exits. */
	void (*thread_exit)(void);
	/* n sections (a multiple of SK_BENCH_QS_PERIOD), loop inlined. */
	void (*read_section)(long n);
	/* Wait for a grace period; NULL when the primitive has none. */
	void (*sync)(void);
	/*
	 * Callbacks, NULL when not measured: n times, malloc() an object of
	 * SK_BENCH_CB_OBJ_SIZE bytes and queue a callback that frees it
	 * (loop inlined in the adapter).  Called by a thread after
	 * thread_init().
	 */
	void (*call_loop)(long n);
	/* Wait until every callback queued before the call has run. */
	void (*barrier)(void);
	/*
	 * Around each callbacks run, outside the clock (NULL: nothing): set
	 * up and tear down per-CPU callback workers.  Main thread.
	 */
	void (*cb_setup)(void);
	void (*cb_teardown)(void);
};

/*
 * SK_BENCH_SECTION_OPS(sym, fn, nm, what, lock, deref, unlock) - a lock
 * (or read side) with no grace period: defines read_section() fn, whose
 * SK_BENCH_READ_LOOP() inlines lock, deref and unlock (no indirect call
 * per section), and the ops sym named nm that runs it.
 */
#define SK_BENCH_SECTION_OPS(sym, fn, nm, what, lock, deref, unlock)   \
	static void fn(long n)                                         \
	{                                                              \
		SK_BENCH_READ_LOOP(n, lock, deref, unlock);            \
	}                                                              \
	const struct sk_bench_rcu_ops sym = { .name = nm,              \
					      .desc = what,            \
					      .read_section = fn }

/*
 * SK_BENCH_QSBR_OPS(sym, nm, what, init, offline, exit, section, sync) -
 * the ops sym of an online QSBR reader: registered by init, offline
 * before blocking, unregistered by exit, reading with section.
 */
#define SK_BENCH_QSBR_OPS(sym, nm, what, init, offline, exit, section, \
			  sync_fn)                                     \
	const struct sk_bench_rcu_ops sym = {                          \
		.name = nm,                                            \
		.desc = what,                                          \
		.thread_init = init,                                   \
		.thread_offline = offline,                             \
		.thread_exit = exit,                                   \
		.read_section = section,                               \
		.sync = sync_fn,                                       \
	}

/*
 * SK_BENCH_PEER_MISSING(sym, nm, what, lib) - the ops sym of a peer whose
 * library lib pkg-config did not find at build time: listed, not run.
 */
#define SK_BENCH_PEER_MISSING(sym, nm, what, lib)                  \
	const struct sk_bench_rcu_ops sym = {                      \
		.name = nm,                                        \
		.desc = what,                                      \
		.unavailable = lib " was not found by pkg-config " \
				   "at build time",                \
	}

/* The adapters (peer_*.c). */
extern const struct sk_bench_rcu_ops sk_bench_scalekit_ops;
extern const struct sk_bench_rcu_ops sk_bench_scalekit_qsbr_ops;
extern const struct sk_bench_rcu_ops sk_bench_scalekit_qsbr_bare_ops;
extern const struct sk_bench_rcu_ops sk_bench_scalekit_exp_ops;
extern const struct sk_bench_rcu_ops sk_bench_scalekit_pcpu_ops;
extern const struct sk_bench_rcu_ops sk_bench_urcu_memb_pcpu_ops;
extern const struct sk_bench_rcu_ops sk_bench_scalekit_poll_ops;
extern const struct sk_bench_rcu_ops sk_bench_scalekit_free_ops;
extern const struct sk_bench_rcu_ops sk_bench_scalekit_srcu_ops;
extern const struct sk_bench_rcu_ops sk_bench_scalekit_cxx_ops;
extern const struct sk_bench_rcu_ops sk_bench_scalekit_std_ops;
extern const struct sk_bench_rcu_ops sk_bench_scalekit_retire_ops;
extern const struct sk_bench_rcu_ops sk_bench_urcu_memb_ops;
extern const struct sk_bench_rcu_ops sk_bench_urcu_qsbr_ops;
extern const struct sk_bench_rcu_ops sk_bench_urcu_qsbr_bare_ops;
extern const struct sk_bench_rcu_ops sk_bench_scalekit_qsbr_every_ops;
extern const struct sk_bench_rcu_ops sk_bench_urcu_qsbr_every_ops;
extern const struct sk_bench_rcu_ops sk_bench_urcu_bp_ops;
extern const struct sk_bench_rcu_ops sk_bench_ck_epoch_ops;
extern const struct sk_bench_rcu_ops sk_bench_pthread_rwlock_ops;
extern const struct sk_bench_rcu_ops sk_bench_pthread_mutex_ops;
/*
 * Hash-table adapters (peer_scalekit_rhash.c, peer_urcu_lfht.c; the
 * table side of each is in bench/hash.h): read_section(n) is n lookups,
 * each in its own read section; the hash-* scenarios only.
 */
extern const struct sk_bench_rcu_ops sk_bench_rhash_ops;
extern const struct sk_bench_rcu_ops sk_bench_rhash_resizing_ops;
extern const struct sk_bench_rcu_ops sk_bench_rhash_beside_ops;
extern const struct sk_bench_rcu_ops sk_bench_rhash_gp_ops;
extern const struct sk_bench_rcu_ops sk_bench_urcu_lfht_ops;
extern const struct sk_bench_rcu_ops sk_bench_urcu_lfht_resizing_ops;
/*
 * Lock adapters (locks.c): read_section(n) is n lock+dereference+unlock
 * sections, the read side ("sk-rwlock-rb", "sk-seqlock") or the write
 * side ("...-wr", "ck-spinlock").
 */
extern const struct sk_bench_rcu_ops sk_bench_rwlock_rb_ops;
extern const struct sk_bench_rcu_ops sk_bench_rwlock_rb_wr_ops;
extern const struct sk_bench_rcu_ops sk_bench_seqlock_ops;
extern const struct sk_bench_rcu_ops sk_bench_seqlock_wr_ops;
extern const struct sk_bench_rcu_ops sk_bench_ck_spinlock_ops;
extern const struct sk_bench_rcu_ops sk_bench_elided_mutex_ops;
extern const struct sk_bench_rcu_ops sk_bench_elided_spinlock_ops;
extern const struct sk_bench_rcu_ops sk_bench_elided_rwlock_ops;
extern const struct sk_bench_rcu_ops sk_bench_glibc_elided_ops;

/* Every adapter, NULL-terminated, in the order --help lists them. */
extern const struct sk_bench_rcu_ops *const sk_bench_rcu_all[];

/* The adapter called name; aborts when there is none (a scenario bug). */
const struct sk_bench_rcu_ops *sk_bench_rcu_find(const char *name);

/* ---- configuration and results ----------------------------------------- */

struct sk_bench_config {
	int max_threads;    /* --threads: largest reader thread count */
	int reps;	    /* --reps: measured repetitions per figure */
	int quick;	    /* --quick: CI smoke-test durations */
	uint64_t run_ns;    /* length of one timed run */
	uint64_t warmup_ns; /* length of the untimed run before the reps */
	int idle_threads;   /* registered idle threads of sync's idle variant */
	int no_occ_gate;    /* 1: sk_bench_read_jobs_run() does not gate */
};

/* median [min..max] of the values that were measured. */
struct sk_bench_stat {
	double median, min, max;
	int n; /* values that entered the statistic; 0: none */
};

/* The median of v[0..n-1], n >= 1 (sorts v). */
double sk_bench_median(double *v, int n);

/*
 * A figure paired with a reference measured beside it: the median of
 * ref[0..n-1] times the median of v[i] / ref[i], where v[i] and ref[i]
 * were measured next to each other in time (a window, a batch), n >= 1.
 * A machine that runs slower for a while then slows both sides of a
 * ratio alike; medians of v and ref apart would keep the difference of
 * the moments each was measured at.  Neither array is changed.
 */
double sk_bench_paired_median(const double *v, const double *ref, int n);

#define SK_BENCH_MAX_IMPL 8

/*
 * One line of the table: one figure per implementation for a (scenario,
 * variant, unit, threads).  impl[0] is the scalekit reference; ratio
 * columns divide it by each peer.  rep[i][r] is repetition r of impl i,
 * NAN where nothing was measured.
 */
struct sk_bench_row {
	const char *scenario; /* "read", "sync" */
	const char *variant;  /* "general", "qsbr p50", ... */
	const char *unit;     /* "ns/op", "Mops/s", "us" */
	const char *title;    /* heading printed above the row's group */
	int threads;	      /* threads the row's figures were taken with */
	int mix;	      /* sweep rows: percent reads; 0: not a sweep row */
	int ratios;	      /* print scalekit/peer ratios */
	/* Ratio columns are "<prefix>/<peer>"; NULL: "sk". */
	const char *ratio_prefix;
	int nimpl;
	const struct sk_bench_rcu_ops *impl[SK_BENCH_MAX_IMPL];
	const char *na[SK_BENCH_MAX_IMPL]; /* why impl i has no figure */
	double *rep[SK_BENCH_MAX_IMPL];
	int nrep;
};

/* A speed target: a ratio and the limit it should meet. */
struct sk_bench_target {
	char what[96];	     /* "read general, 1 thread: ns/op ..." */
	char id[48];	     /* CSV variant column, e.g. "read-general" */
	char ratio_name[48]; /* CSV impl column, e.g. "scalekit/urcu-memb" */
	int threads;
	double limit;
	int at_most;		    /* 1: passes when ratio <= limit; 0: >= */
	struct sk_bench_stat ratio; /* n == 0: not measured */
	const char *na;		    /* why not measured */
};

struct sk_bench_results {
	struct sk_bench_row **rows;
	int nrows, cap_rows;
	struct sk_bench_target *targets;
	int ntargets, cap_targets;
	char **notes; /* lines printed after the tables */
	int nnotes, cap_notes;
};

/*
 * sk_bench_row_add() - append a row comparing the implementations named in
 * impls (NULL-terminated, scalekit first) over nrep repetitions.
 * Returns: the row, every figure NAN; unavailable implementations get
 * their reason in na[].  Aborts when memory runs out.
 */
struct sk_bench_row *sk_bench_row_add(struct sk_bench_results *res,
				      const char *scenario, const char *variant,
				      const char *unit, const char *title,
				      int threads, int ratios,
				      const char *const *impls, int nrep);

/* The same with the implementations given as ops (nimpl of them). */
struct sk_bench_row *sk_bench_row_add_ops(
	struct sk_bench_results *res, const char *scenario, const char *variant,
	const char *unit, const char *title, int threads, int ratios,
	const struct sk_bench_rcu_ops *const *ops, int nimpl, int nrep);

/* Index of the implementation called name in row, or -1. */
int sk_bench_row_impl(const struct sk_bench_row *row, const char *name);

/* Statistic of impl i over the measured repetitions of row. */
struct sk_bench_stat sk_bench_row_stat(const struct sk_bench_row *row, int i);

/*
 * Statistic of the per-repetition ratios a->rep[ia][r] / b->rep[ib][r].
 * Within a repetition every implementation runs back to back, so pairing
 * by repetition cancels much of the noise of a shared machine.
 */
struct sk_bench_stat sk_bench_ratio_stat(const struct sk_bench_row *a, int ia,
					 const struct sk_bench_row *b, int ib);

/* Record a target; ratio.n == 0 with na set when it could not be measured. */
void sk_bench_target_add(struct sk_bench_results *res,
			 const struct sk_bench_target *t);

/* Add a line of information printed after the tables (not in the CSV). */
void sk_bench_note_add(struct sk_bench_results *res, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

void sk_bench_results_free(struct sk_bench_results *res);

/* ---- scenarios ----------------------------------------------------------- */

struct sk_bench_scenario {
	const char *name;
	const char *summary; /* one line for --help */
	/* Measure and append rows and targets; 0, or -1 after a message. */
	int (*run)(const struct sk_bench_config *cfg,
		   struct sk_bench_results *res);
};

int sk_bench_read_run(const struct sk_bench_config *cfg,
		      struct sk_bench_results *res);
int sk_bench_sync_run(const struct sk_bench_config *cfg,
		      struct sk_bench_results *res);
/* sync.c: grace periods with 0, 64 and 1,024 registered idle threads. */
int sk_bench_gp_latency_run(const struct sk_bench_config *cfg,
			    struct sk_bench_results *res);
int sk_bench_sync_many_run(const struct sk_bench_config *cfg,
			   struct sk_bench_results *res);
int sk_bench_expedited_run(const struct sk_bench_config *cfg,
			   struct sk_bench_results *res);
int sk_bench_poll_run(const struct sk_bench_config *cfg,
		      struct sk_bench_results *res);
int sk_bench_cpp_run(const struct sk_bench_config *cfg,
		     struct sk_bench_results *res);
/* urcu_compat.c: liburcu's API on scalekit, from scalekit-bench-urcu. */
int sk_bench_urcu_compat_run(const struct sk_bench_config *cfg,
			     struct sk_bench_results *res);
int sk_bench_cpp_read_run(const struct sk_bench_config *cfg,
			  struct sk_bench_results *res);
int sk_bench_srcu_read_run(const struct sk_bench_config *cfg,
			   struct sk_bench_results *res);
int sk_bench_srcu_sync_run(const struct sk_bench_config *cfg,
			   struct sk_bench_results *res);
int sk_bench_callbacks_run(const struct sk_bench_config *cfg,
			   struct sk_bench_results *res);
int sk_bench_hash_lookup_run(const struct sk_bench_config *cfg,
			     struct sk_bench_results *res);
int sk_bench_hash_resize_run(const struct sk_bench_config *cfg,
			     struct sk_bench_results *res);
int sk_bench_hash_update_run(const struct sk_bench_config *cfg,
			     struct sk_bench_results *res);
int sk_bench_hash_update_resize_run(const struct sk_bench_config *cfg,
				    struct sk_bench_results *res);
int sk_bench_hash_grow_run(const struct sk_bench_config *cfg,
			   struct sk_bench_results *res);
/* locks.c: uncontended lock cost, a hash table under one lock, rwlock reads. */
int sk_bench_locks_run(const struct sk_bench_config *cfg,
		       struct sk_bench_results *res);
int sk_bench_hash_under_lock_run(const struct sk_bench_config *cfg,
				 struct sk_bench_results *res);
int sk_bench_rwlock_read_run(const struct sk_bench_config *cfg,
			     struct sk_bench_results *res);

/*
 * sk_bench_cb_measure() (callbacks.c) - one callbacks run of ops: threads
 * enqueuers (pinned round-robin unless unpinned) of n callbacks each, then
 * barrier().  *ns_per_cb gets the wall time per callback from the start to
 * the barrier's return, *enq_ns each enqueuer's mean time per call_loop()
 * iteration.  Returns: 0 or -errno.
 */
int sk_bench_cb_measure(const struct sk_bench_rcu_ops *ops, int threads,
			long n, int unpinned, double *ns_per_cb, double *enq_ns);

/*
 * sk_bench_read_measure() (read.c) - run ops on n threads for run_ns;
 * *ns_per_op gets the mean over threads of each thread's ns per section,
 * *mops the total sections per microsecond of the run.
 * Returns: 0 or -errno.
 */
int sk_bench_read_measure(const struct sk_bench_rcu_ops *ops, int n,
			  uint64_t run_ns, double *ns_per_op, double *mops);

/*
 * sk_bench_read_measure_gated() (read.c) - the same, behind the occupancy
 * gate (SK_BENCH_OCC_MIN above): a run of n <= CPUs threads in which a
 * thread got less than that share of a CPU is run again.
 */
int sk_bench_read_measure_gated(const struct sk_bench_rcu_ops *ops, int n,
				uint64_t run_ns, double *ns_per_op,
				double *mops);

/* One implementation at one thread count: its two rows (read.c). */
struct sk_bench_read_job {
	const struct sk_bench_rcu_ops *ops;
	int threads;
	struct sk_bench_row *ns_row, *mops_row; /* get ns/op and Mops/s */
	int col;				/* the impl's index in both */
	/*
	 * In interleaved windows (read.c): the implementation of the same
	 * rows that this job's figures are paired with
	 * (sk_bench_paired_median()); NULL, or its own name: its median.
	 */
	const char *pair_ref;
};

/*
 * sk_bench_read_jobs_run() (read.c) - a warm-up run of every job
 * (cfg->warmup_ns), then cfg->reps timed rounds of cfg->run_ns each, every
 * round starting at the next job.  Returns: 0, or -1 after a message.
 */
int sk_bench_read_jobs_run(const struct sk_bench_config *cfg,
			   const char *scenario, struct sk_bench_read_job *jobs,
			   int njobs);

/* sweep.c: every read-side primitive x 1..8 threads x read/update mixes. */
int sk_bench_sweep_run(const struct sk_bench_config *cfg,
		       struct sk_bench_results *res);
/* The sweep's tables and chooser, from the rows whose mix is set. */
void sk_bench_sweep_print(FILE *f, const struct sk_bench_results *res);
/* The chooser as an HTML table (nothing without sweep rows). */
void sk_bench_sweep_chooser_html(FILE *f, const struct sk_bench_results *res);

/* update.c: sync-qsbr-every, update-load and uperf (issue 14). */
int sk_bench_qsbr_every_run(const struct sk_bench_config *cfg,
			    struct sk_bench_results *res);
int sk_bench_update_load_run(const struct sk_bench_config *cfg,
			     struct sk_bench_results *res);
int sk_bench_uperf_run(const struct sk_bench_config *cfg,
		       struct sk_bench_results *res);

/* list.c: 1,000-entry list traversals, RCU vs pthread rwlock. */
int sk_bench_list_run(const struct sk_bench_config *cfg,
		      struct sk_bench_results *res);

/*
 * Grace-period latency rows (sync.c), shared by the scenarios that time a
 * sync() the way "sync" does: for each busy reader count, every
 * implementation runs with that many of its own readers, and each
 * repetition yields the p50 and p99 of its sync() calls.  With --pin,
 * the updater is pinned to the CPU after the readers' (sk_bench_pin_main):
 * in a VM a heavy fence (membarrier IPI) costs ~10x more when a reader
 * runs on another CPU than when it shares the updater's, so where the
 * scheduler puts an unpinned updater spreads the busy-reader figures.
 */
struct sk_bench_sync_spec {
	const char *scenario; /* row scenario, e.g. "expedited" */
	const char *p50_variant, *p99_variant; /* e.g. "p50", "p99" */
	const char *p50_title, *p99_title;     /* table headings */
	const char *ratio_prefix;	       /* ratio label; NULL: "sk" */
	const char *const *impls; /* NULL-terminated, reference first */
	const int *readers;	  /* busy reader counts, a row each */
	int nreaders;
};

/*
 * sk_bench_sync_rows() - add and measure the rows of spec; p50[c] and
 * p99[c] (nreaders entries each) receive the rows of readers[c].
 * Returns: 0, or -1 after a message.
 */
int sk_bench_sync_rows(const struct sk_bench_config *cfg,
		       struct sk_bench_results *res,
		       const struct sk_bench_sync_spec *spec,
		       struct sk_bench_row **p50, struct sk_bench_row **p99);

/*
 * sk_bench_ratio_target() - record the target "ratio of impl a to impl b
 * in row <= limit" (at_most) or ">= limit", paired per repetition; what
 * and id as in struct sk_bench_target.  An implementation that was not
 * measured makes the target SKIP with its reason.
 */
void sk_bench_ratio_target(struct sk_bench_results *res,
			   const struct sk_bench_row *row, const char *a,
			   const char *b, double limit, int at_most,
			   const char *what, const char *id);

/* Every scenario, NULL-name-terminated, in the order they run. */
extern const struct sk_bench_scenario sk_bench_scenarios[];

/* ---- harness services (harness.c) ---------------------------------------- */

/* Publish the object and initialize every available adapter, once. */
void sk_bench_setup(void);

/* Monotonic clock in nanoseconds (inline: scalekit-bench-urcu, which
 * links none of the harness, reads the same clock the same way). */
static inline uint64_t sk_bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Sleep for ns nanoseconds (restarted after signals). */
void sk_bench_sleep_ns(uint64_t ns);

/* CPUs this process may run on. */
int sk_bench_ncpus(void);

/* Progress line on stderr: "bench: ..." with a newline added. */
void sk_bench_progress(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/*
 * Reader threads: n threads (pinned round-robin with --pin), each
 * calling ops->thread_init() and then ops->read_section(SK_BENCH_CHUNK) in
 * a loop until stopped.
 */
struct sk_bench_readers;

/*
 * sk_bench_readers_start() - create the threads and return once all of
 * them are registered and released into their loops.
 * Returns: 0, or -errno (message printed) when a thread cannot be created.
 */
int sk_bench_readers_start(struct sk_bench_readers **out,
			   const struct sk_bench_rcu_ops *ops, int n);

/* What one reader did between its release and its stop. */
struct sk_bench_reader_stat {
	uint64_t sections;
	uint64_t ns;	 /* wall time of its loop */
	uint64_t cpu_ns; /* CPU time it got in that loop (thread clock) */
};

/* The calling thread's CPU time in ns (CLOCK_THREAD_CPUTIME_ID). */
uint64_t sk_bench_thread_cpu_ns(void);

/*
 * The occupancy gate.  A figure of n threads, n no more than the CPUs the
 * process may use, is meant to show n threads running at once: a 2-thread
 * throughput, a 2/1 scaling ratio, two updaters contending on a line.  On
 * a shared machine another process can take a CPU for part of a run; the
 * two threads then time-share one CPU (no contention, half the
 * throughput), and the figure measures the other process, not the
 * primitive.  A run's occupancy is the least CPU time any of its threads
 * got over the run's wall time; a run whose occupancy is below
 * SK_BENCH_OCC_MIN is run again, up to SK_BENCH_OCC_TRIES runs in all, and
 * the last one stands.  Runs with more threads than CPUs are not gated
 * (time-sharing is what they measure).  sk_bench_occ_note() reports how
 * many runs were retried and how many stood below the limit.
 */
#define SK_BENCH_OCC_MIN 0.9
#define SK_BENCH_OCC_TRIES 4

/*
 * sk_bench_occ_gated() - 1 when a run of n threads is gated (n <= CPUs),
 * and then counts the run; 0 otherwise.
 */
int sk_bench_occ_gated(int n);

/*
 * sk_bench_occ_retry() - after attempt (1-based) of a gated run measured
 * occupancy occ: 1 when the run must be repeated (counted), 0 when it
 * stands (counted as short when occ is below the limit).
 */
int sk_bench_occ_retry(int attempt, double occ);

/*
 * sk_bench_occ_note() - add a note on scenario's gated runs since the
 * previous call (nothing when none was retried), and reset the counts.
 */
void sk_bench_occ_note(struct sk_bench_results *res, const char *scenario);

/*
 * One cache line's round trip between two threads (bench/linetrip.c), for
 * the notes of the scenarios whose figures follow what moving a line
 * between the CPUs costs.  sk_bench_rt_sample() runs one ping-pong of
 * run_ns and appends ns per round trip to v[*n], or counts a run in which
 * a thread had less than SK_BENCH_OCC_MIN of a CPU in *low (the caller
 * keeps v large enough); -errno when it could not run.
 * sk_bench_rt_note_add() adds scenario's note (median [min..max], sorting
 * v, then tail) and returns the median, NAN when none was measured.
 */
int sk_bench_rt_sample(uint64_t run_ns, double *v, int *n, int *low);
double sk_bench_rt_note_add(struct sk_bench_results *res, const char *scenario,
			    double *v, int n, int low, const char *tail);

/*
 * sk_bench_readers_stop() - stop, join and free the threads; st (n
 * entries, may be NULL) receives what each one did.
 */
void sk_bench_readers_stop(struct sk_bench_readers *r,
			   struct sk_bench_reader_stat *st);

/*
 * Idle registered threads: n threads with small stacks, each calling
 * thread_init() (then thread_offline() where there is one) of every
 * implementation in ops[0..nops-1], then blocking on a condition variable
 * until stopped.
 */
struct sk_bench_idle;

/*
 * sk_bench_idle_start() - create the threads and return once every one
 * that could be created is registered and blocked.
 * Returns: the number of threads created (n on success); fewer when the
 * system refused more threads (message printed).
 */
int sk_bench_idle_start(struct sk_bench_idle **out,
			const struct sk_bench_rcu_ops *const *ops, int nops,
			int n);

void sk_bench_idle_stop(struct sk_bench_idle *idle);

/*
 * Thread counts from 1 (or 0 with from_zero) up to max: 0, 1, 2, 4, 8, ...
 * and max itself.  Returns how many were stored in out (at most cap).
 */
int sk_bench_thread_counts(int max, int from_zero, int *out, int cap);

/*
 * Pinning.  By default no thread of a scenario is pinned, the way users
 * run the code: the scheduler places them.  `scalekit bench --pin`
 * (sk_bench_set_pinning(1), before any scenario runs) pins the harness's
 * readers, hash-resize's resizer, list and locks threads round-robin to
 * the allowed CPUs and the sync updater beside the readers, for
 * diagnosis: it takes the scheduler's placement out of a figure.
 */
void sk_bench_set_pinning(int on);
int sk_bench_pinning(void);

/*
 * Pin the thread attr creates to the i-th allowed CPU, round-robin, when
 * pinning is on (--pin); otherwise leave attr as it is.
 */
void sk_bench_attr_pin(pthread_attr_t *attr, int i);

/* The same, whatever --pin says: for scenarios whose variant is pinned. */
void sk_bench_attr_pin_always(pthread_attr_t *attr, int i);

/*
 * sk_bench_pin_main() - with --pin, pin the calling (main) thread to the
 * i-th allowed CPU, round-robin (without --pin it does nothing);
 * sk_bench_unpin_main() restores the affinity it had.
 * With readers on CPUs 0..n-1, pin_main(n) puts the updater beside them
 * (on its own CPU when there is one), so that where the scheduler happens
 * to put it does not decide the figure.
 */
void sk_bench_pin_main(int i);
void sk_bench_unpin_main(void);

/*
 * sk_bench_latency() - sort lat[0..n-1] (ns, n >= 1) and store its
 * nearest-rank p50 and p99 in microseconds.
 */
void sk_bench_latency(uint64_t *lat, size_t n, double *p50_us, double *p99_us);

/*
 * sk_bench_time_calls() - call fn() back to back, each call timed into
 * lat[], until run_ns have passed and min_calls calls were made (or
 * 10 x run_ns have passed, or max_calls calls were made: lat has room for
 * max_calls values); then sk_bench_latency() of them.  Returns the number
 * of calls.
 */
size_t sk_bench_time_calls(void (*fn)(void), uint64_t run_ns,
			   size_t min_calls, size_t max_calls, uint64_t *lat,
			   double *p50_us, double *p99_us);

/* ---- report (report.c) ---------------------------------------------------- */

/* Print the comparison tables and the targets section. */
void sk_bench_print_table(FILE *f, const struct sk_bench_results *res);
void sk_bench_print_targets(FILE *f, const struct sk_bench_results *res);

/*
 * Write one CSV row per (scenario, variant, threads, impl), then one per
 * ratio and target.  Returns: 0, or -1 when a write failed (errno set).
 */
int sk_bench_write_csv(FILE *f, const struct sk_bench_results *res);

/*
 * sk_bench_unit_direction() - which way is better for a figure's unit:
 * -1 lower (ns/us/ms...), 1 higher (M.../s), 0 neither (ratios, counts).
 */
int sk_bench_unit_direction(const char *unit);

/*
 * sk_bench_row_best() - the implementation with the best median of row
 * (by sk_bench_unit_direction()); -1 when the unit has no direction or
 * fewer than two figures were measured.
 */
int sk_bench_row_best(const struct sk_bench_row *row);

/* sk_bench_target_verdict() - "PASS", "MISS" or "SKIP" (not measured). */
const char *sk_bench_target_verdict(const struct sk_bench_target *t);

/* The environment of a run (bench/env.c), for every output's header. */
struct sk_bench_env {
	char cpu[192];	  /* model name (family, model, stepping) */
	int ncpus;
	long l2_kib, l3_kib; /* 0: unknown */
	const char *rtm;     /* the elision dispatch's verdict, in words */
	int membarrier;	     /* the fence mode in use */
	char kernel[400];
	char date[32];	      /* UTC */
	const char *compiler; /* compiler, version, build type: flags */
	const char *commit;   /* git describe at configure time */
	const char *peers;    /* pkg-config versions of the peers found */
};

void sk_bench_env_get(struct sk_bench_env *e);
/* Three lines, each starting with prefix ("" or "# " in the CSV). */
void sk_bench_env_print(FILE *f, const char *prefix,
			const struct sk_bench_env *e);

/* sk_bench_write_json() - the run as JSON (bench/json.c): 0, or -1. */
int sk_bench_write_json(FILE *f, const struct sk_bench_results *res,
			const struct sk_bench_env *env);

/*
 * sk_bench_write_html() - the run as one self-contained page (bench/html.c):
 * environment, targets (inline SVG chart and table), figures.  0, or -1.
 */
int sk_bench_write_html(FILE *f, const struct sk_bench_results *res,
			const struct sk_bench_env *env);

/*
 * sk_bench_compare() - print new/old for every row two CSV files of
 * sk_bench_write_csv() share, flagging those whose [min..max] ranges do
 * not overlap.  Returns: 0, or 1 (message on stderr) when a file cannot be
 * read, is not such a file (header, columns, numbers) or no row is shared.
 */
int sk_bench_compare(const char *old_path, const char *new_path);

/* Format v with 3 significant digits (at least 2 decimals below 10). */
void sk_bench_fmt_num(char *buf, size_t len, double v);

#endif /* SK_BENCH_H */
