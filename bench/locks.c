/* SPDX-License-Identifier: MIT */
/*
 * Lock scenarios and the lock adapters:
 *  - "locks": the uncontended cost of lock+dereference+unlock on one
 *    thread (ns/op), every lock against pthread_mutex and ck_spinlock;
 *  - "rwlock-read": read throughput with 1 and 2 readers and no writer:
 *    sk_rwlock_rb, sk_seqlock, pthread_rwlock, and RCU as the ceiling;
 *  - "hash-under-lock": a fixed-size chained hash table guarded by one
 *    lock, 90% lookups (read side) and 10% updates (write side: the
 *    entry's value is changed in place), 1 and 2 threads, against
 *    sk_rhash (lookups under RCU; an update stores the new value into
 *    the entry found, no structural change); a third row runs 4
 *    threads, more than this machine's 2 CPUs: the oversubscribed case,
 *    where a lock holder can be preempted.
 *
 * Each table names the elision backend the elided locks ran on (rtm,
 * fallback).  The elided locks join the tables in one place:
 * BL_ELIDED_IMPLS and BL_ELIDED_HUL below.  Where the CPU has RTM, the
 * elided locks' abort rates by cause are printed beside their figures.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scalekit/rcu.h"
#include "scalekit/rhash.h"
#include "scalekit/rwlock_rb.h"
#include "scalekit/seqlock.h"

#ifdef SK_HAVE_CK
#include <ck_spinlock.h>
#endif

#include "scalekit/elide.h"

/*
 * The elided locks' adapter names (first: the reference of the "locks"
 * ratios) and their hash-under-lock entries: the one place they are
 * added.
 */
#define BL_ELIDED_IMPLS "sk-elided-mutex", "sk-elided-spinlock",
#define BL_ELIDED_HUL                                                   \
	{ "sk-elided-mutex", hul_em_lock, hul_em_unlock, hul_em_lock,   \
	  hul_em_unlock, &hul_em_stats, 0 },                             \
	{ "sk-elided-rwlock", hul_erw_rd, hul_erw_rdu, hul_erw_wr,      \
	  hul_erw_wru, &hul_erw_stats, 0 },

/* The backend the elided locks run on, for titles and notes. */
static const char *bl_backend(void)
{
	return sk_elide_backend_name(sk_elide_backend());
}

/* The lock orders the load; a relaxed load keeps it a single access. */
#define BL_DEREF(p) __atomic_load_n(&(p), __ATOMIC_RELAXED)

/* ---- adapters ------------------------------------------------------------- */

static struct sk_rwlock_rb bl_rb = SK_RWLOCK_RB_INITIALIZER;
static struct sk_rwlock_rb bl_rb_wr = SK_RWLOCK_RB_INITIALIZER;
static struct sk_seqlock bl_sl = SK_SEQLOCK_INITIALIZER;
static struct sk_seqlock bl_sl_wr = SK_SEQLOCK_INITIALIZER;

SK_BENCH_SECTION_OPS(sk_bench_rwlock_rb_ops, rb_read_section, "sk-rwlock-rb",
		     "sk_rwlock_rb_read_lock/read_unlock (read-biased rwlock)",
		     sk_rwlock_rb_read_lock(&bl_rb), BL_DEREF(sk_bench_gp),
		     sk_rwlock_rb_read_unlock(&bl_rb));

SK_BENCH_SECTION_OPS(sk_bench_rwlock_rb_wr_ops, rb_wr_section,
		     "sk-rwlock-rb-wr",
		     "sk_rwlock_rb_write_lock/write_unlock (locks scenario)",
		     sk_rwlock_rb_write_lock(&bl_rb_wr), BL_DEREF(sk_bench_gp),
		     sk_rwlock_rb_write_unlock(&bl_rb_wr));

/* A seqlock read: begin, load, retry check (the value is used after it). */
static void sl_read_section(long n)
{
	long i, v;
	unsigned int s;

	for (i = 0; i < n; i++) {
		do {
			s = sk_seqlock_read_begin(&bl_sl);
			v = SK_READ_ONCE(BL_DEREF(sk_bench_gp)->val);
		} while (sk_seqlock_read_retry(&bl_sl, s));
		SK_BENCH_USE(v);
	}
}

const struct sk_bench_rcu_ops sk_bench_seqlock_ops = {
	.name = "sk-seqlock",
	.desc = "sk_seqlock_read_begin/read_retry",
	.read_section = sl_read_section,
};

SK_BENCH_SECTION_OPS(sk_bench_seqlock_wr_ops, sl_wr_section, "sk-seqlock-wr",
		     "sk_seqlock_write_lock/write_unlock (locks scenario)",
		     sk_seqlock_write_lock(&bl_sl_wr), BL_DEREF(sk_bench_gp),
		     sk_seqlock_write_unlock(&bl_sl_wr));

static struct sk_elided_mutex bl_em = SK_ELIDED_MUTEX_INITIALIZER;
static struct sk_elided_spinlock bl_es = SK_ELIDED_SPINLOCK_INITIALIZER;

static struct sk_elided_rwlock bl_erw = SK_ELIDED_RWLOCK_INITIALIZER;

SK_BENCH_SECTION_OPS(sk_bench_elided_rwlock_ops, erw_section,
		     "sk-elided-rwlock",
		     "sk_elided_rwlock_read_lock/unlock (elided where RTM "
		     "works)",
		     sk_elided_rwlock_read_lock(&bl_erw), BL_DEREF(sk_bench_gp),
		     sk_elided_rwlock_read_unlock(&bl_erw));

/* hash-under-lock only: measured in a child, see hul_child_run(). */
const struct sk_bench_rcu_ops sk_bench_glibc_elided_ops = {
	.name = "glibc-elided",
	.desc = "pthread_mutex with GLIBC_TUNABLES=glibc.elision.enable=1 "
		"(hash-under-lock, a child process; RTM CPUs only)",
};

SK_BENCH_SECTION_OPS(sk_bench_elided_mutex_ops, em_section,
		     "sk-elided-mutex",
		     "sk_elided_mutex_lock/unlock (elided where RTM works)",
		     sk_elided_mutex_lock(&bl_em), BL_DEREF(sk_bench_gp),
		     sk_elided_mutex_unlock(&bl_em));

SK_BENCH_SECTION_OPS(sk_bench_elided_spinlock_ops, es_section,
		     "sk-elided-spinlock",
		     "sk_elided_spinlock_lock/unlock (elided where RTM works)",
		     sk_elided_spinlock_lock(&bl_es), BL_DEREF(sk_bench_gp),
		     sk_elided_spinlock_unlock(&bl_es));

#ifdef SK_HAVE_CK
static ck_spinlock_t bl_ck = CK_SPINLOCK_INITIALIZER;

SK_BENCH_SECTION_OPS(sk_bench_ck_spinlock_ops, ck_section, "ck-spinlock",
		     "ck_spinlock_lock/unlock (Concurrency Kit)",
		     ck_spinlock_lock(&bl_ck), BL_DEREF(sk_bench_gp),
		     ck_spinlock_unlock(&bl_ck));
#else
SK_BENCH_PEER_MISSING(sk_bench_ck_spinlock_ops, "ck-spinlock",
		      "ck_spinlock_lock/unlock (Concurrency Kit)", "ck");
#endif

/* ---- rows of read_section() figures ---------------------------------------- */

/*
 * Measure every available implementation of the rows (one row per thread
 * count, ns/op; mops rows optional, same shape) over cfg->reps
 * repetitions, rotating the start.  windows == 1: each run lasts
 * cfg->run_ns.  windows > 1: per repetition every run is made `windows`
 * times for half of cfg->run_ns, interleaved (window w runs every row and
 * implementation once, starting one run later than window w - 1), and
 * the repetition's figure is the median of its windows, so that a
 * stretch of outside load or a move of the host's vCPUs falls on every
 * implementation alike.  Returns 0, or -1 after a message.
 */
static int bl_measure(const struct sk_bench_config *cfg, const char *scenario,
		      struct sk_bench_row **ns, struct sk_bench_row **mops,
		      int nrows, int windows)
{
	int r, i, rep, k, w, s, n = ns[0]->nimpl, err = 0, slots = nrows * n;
	uint64_t run_ns = windows > 1 ? cfg->run_ns / 2 : cfg->run_ns;
	double x, y, *wx, *wy;

	wx = calloc((size_t)(slots * windows), sizeof(*wx));
	wy = calloc((size_t)(slots * windows), sizeof(*wy));
	if (!wx || !wy) {
		free(wx);
		free(wy);
		fprintf(stderr, "scalekit bench: %s: out of memory\n",
			scenario);
		return -1;
	}
	sk_bench_progress("%s: %d row%s x %d implementations x %d reps%s, "
			  "%.0f ms each",
			  scenario, nrows, nrows == 1 ? "" : "s", n, cfg->reps,
			  windows > 1 ? " x interleaved windows" : "",
			  run_ns / 1e6);
	for (rep = -1; rep < cfg->reps && !err; rep++) {
		for (w = 0; w < (rep < 0 ? 1 : windows) && !err; w++) {
			for (k = 0; k < slots && !err; k++) {
				s = (k + (rep < 0 ? 0 : rep + w)) % slots;
				r = s / n;
				i = s % n;
				if (ns[r]->na[i])
					continue;
				/* Timed runs behind the occupancy gate. */
				err = (rep < 0 ? sk_bench_read_measure
					       : sk_bench_read_measure_gated)(
					ns[r]->impl[i], ns[r]->threads,
					rep < 0 ? cfg->warmup_ns : run_ns,
					&x, &y);
				if (err) {
					fprintf(stderr, "scalekit bench: %s: "
						"%s: %s\n", scenario,
						ns[r]->impl[i]->name,
						strerror(-err));
					break;
				}
				wx[s * windows + w] = x;
				wy[s * windows + w] = y;
			}
		}
		if (rep < 0 || err)
			continue;
		for (s = 0; s < slots; s++) {
			r = s / n;
			i = s % n;
			if (ns[r]->na[i])
				continue;
			ns[r]->rep[i][rep] = sk_bench_median(&wx[s * windows],
						       windows);
			if (mops)
				mops[r]->rep[i][rep] =
					sk_bench_median(&wy[s * windows], windows);
		}
	}
	free(wx);
	free(wy);
	return err ? -1 : 0;
}

int sk_bench_locks_run(const struct sk_bench_config *cfg,
		       struct sk_bench_results *res)
{
	static const char *const impls[] = {
		BL_ELIDED_IMPLS "pthread-mutex", "ck-spinlock",
		"sk-rwlock-rb-wr", "sk-rwlock-rb", "sk-seqlock-wr",
		"sk-seqlock", NULL
	};
	static char variant[48], title[160];
	struct sk_bench_row *row;
	int rtm = sk_elide_backend() == SK_ELIDE_BACKEND_RTM;

	snprintf(variant, sizeof(variant), "uncontended %s", bl_backend());
	snprintf(title, sizeof(title),
		 "locks: uncontended lock+dereference+unlock, 1 thread, "
		 "ns/op (lower is better); elision backend %s",
		 bl_backend());
	row = sk_bench_row_add(res, "locks", variant, "ns/op", title, 1, 1,
			       impls, cfg->reps);
	if (bl_measure(cfg, "locks", &row, NULL, 1, 1))
		return -1;
	sk_bench_occ_note(res, "locks");
	sk_bench_ratio_target(res, row, "sk-elided-mutex", "pthread-mutex",
			      rtm ? 1.5 : 1.05, 1,
			      rtm ? "locks, rtm: ns/op sk-elided-mutex / "
				    "pthread-mutex"
				  : "locks, no RTM: ns/op sk-elided-mutex / "
				    "pthread-mutex",
			      "locks-elided-mutex");
	return 0;
}

/*
 * rwlock-read's note: the median round trip of one cache line
 * (bench/linetrip.c) over the runs (reps of 50 ms) in which both threads
 * had their own CPU.  A pthread_rwlock read lock and unlock are two
 * read-modify-writes of one shared word, so with two readers on two CPUs
 * its throughput is bounded by how fast that line moves between them; the
 * note lets a run's sk-rwlock-rb / pthread-rwlock ratio be read against
 * it.
 */
static void rt_note(const struct sk_bench_config *cfg,
		    struct sk_bench_results *res)
{
	double v[64];
	int i, n = 0, low = 0;

	for (i = 0; i < cfg->reps && i < 64; i++)
		if (sk_bench_rt_sample(cfg->quick ? 5000000 : 50000000, v,
				       &n, &low))
			return;
	sk_bench_rt_note_add(res, "rwlock-read", v, n, low,
			     "pthread_rwlock's readers share one such line "
			     "(its lock word)");
}

/*
 * rwlock-read's windows per repetition (bl_measure()): the 2-reader
 * ratio against pthread_rwlock divides a steady figure by one that
 * follows the line's round trip and the occupancy of the two CPUs;
 * docs/benchmarks.md, "The rwlock-read rows".
 */
#define RR_WINDOWS 5
#define RR_PTHREAD 2 /* "pthread-rwlock" in impls[] below */

int sk_bench_rwlock_read_run(const struct sk_bench_config *cfg,
			     struct sk_bench_results *res)
{
	static const char *const impls[] = { "sk-rwlock-rb", "sk-seqlock",
					     "pthread-rwlock", "scalekit",
					     NULL };
	struct sk_bench_row *ns[2], *mops[2];
	struct sk_bench_target t = { .threads = 2, .limit = 1.8 };
	int c, nc = cfg->max_threads >= 2 ? 2 : 1;

	for (c = 0; c < nc; c++)
		ns[c] = sk_bench_row_add(
			res, "rwlock-read", "no writer", "ns/op",
			"rwlock-read: ns per read lock+dereference+unlock, "
			"per thread, no writer (lower is better)",
			c + 1, 1, impls, cfg->reps);
	for (c = 0; c < nc; c++)
		mops[c] = sk_bench_row_add(
			res, "rwlock-read", "no writer", "Mops/s",
			"rwlock-read: total read throughput, Mops/s (higher "
			"is better)",
			c + 1, 1, impls, cfg->reps);
	if (bl_measure(cfg, "rwlock-read", ns, mops, nc, RR_WINDOWS))
		return -1;
	sk_bench_occ_note(res, "rwlock-read");
	if (nc == 2 && sk_bench_ncpus() >= 2)
		rt_note(cfg, res);
	snprintf(t.what, sizeof(t.what),
		 "rwlock-read: sk-rwlock-rb Mops/s 2 readers / 1 reader");
	snprintf(t.id, sizeof(t.id), "rwlock-read-scaling");
	snprintf(t.ratio_name, sizeof(t.ratio_name), "sk-rwlock-rb 2T/1T");
	if (nc < 2)
		t.na = "needs --threads 2 or more";
	else
		t.ratio = sk_bench_ratio_stat(mops[1], 0, mops[0], 0);
	sk_bench_target_add(res, &t);
	/*
	 * Against pthread_rwlock: its 1-reader throughput (its best case:
	 * the lock word's line never leaves the CPU), not its 2-reader one.
	 * With 2 readers pthread_rwlock's throughput is set by how fast one
	 * cache line crosses between the two CPUs (the note above), which
	 * moved 2x between runs on one VM while sk_rwlock_rb's did not: a
	 * ratio of the two 2-reader figures judged the host's placement of
	 * its vCPUs (docs/benchmarks.md, "The rwlock-read rows").  That
	 * ratio stays in the table (sk/pthread-rwlock), for information.
	 */
	t = (struct sk_bench_target){ .threads = 2, .limit = 1.8 };
	snprintf(t.what, sizeof(t.what),
		 "rwlock-read: Mops/s sk-rwlock-rb 2 readers / "
		 "pthread-rwlock 1 reader");
	snprintf(t.id, sizeof(t.id), "rwlock-read-vs-pthread-1r");
	snprintf(t.ratio_name, sizeof(t.ratio_name),
		 "sk-rwlock-rb 2T/pthread-rwlock 1T");
	if (nc < 2)
		t.na = "needs --threads 2 or more";
	else
		t.ratio = sk_bench_ratio_stat(mops[1], 0, mops[0], RR_PTHREAD);
	sk_bench_target_add(res, &t);
	return 0;
}

/* ---- hash-under-lock ----------------------------------------------------------- */

#define HUL_KEYS 4096
#define HUL_BUCKETS 1024
#define HUL_MAX_THREADS 4 /* the oversubscribed row */

struct hul_node {
	long key;
	long val;		  /* written by updates */
	struct hul_node *next;	  /* chain of the locked table */
	struct sk_rhash_node rh;  /* sk_rhash's link */
};

static struct hul_node *hul_nodes; /* HUL_KEYS entries */
static struct hul_node *hul_buckets[HUL_BUCKETS];
static struct sk_rhash *hul_rhash;

/* The guard of one table implementation: read and write sides. */
struct hul_lock {
	const char *name;
	void (*rd)(void), (*rdu)(void), (*wr)(void), (*wru)(void);
	struct sk_elide_stats *stats; /* elided locks: attached statistics */
	int child; /* measured in a child process with glibc's elision on */
};

static pthread_mutex_t hul_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t hul_rwlock = PTHREAD_RWLOCK_INITIALIZER;
static struct sk_rwlock_rb hul_rb = SK_RWLOCK_RB_INITIALIZER;

static void hul_mutex_lock(void) { pthread_mutex_lock(&hul_mutex); }
static void hul_mutex_unlock(void) { pthread_mutex_unlock(&hul_mutex); }
static void hul_rw_rd(void) { pthread_rwlock_rdlock(&hul_rwlock); }
static void hul_rw_wr(void) { pthread_rwlock_wrlock(&hul_rwlock); }
static void hul_rw_unlock(void) { pthread_rwlock_unlock(&hul_rwlock); }
static void hul_rb_rd(void) { sk_rwlock_rb_read_lock(&hul_rb); }
static void hul_rb_rdu(void) { sk_rwlock_rb_read_unlock(&hul_rb); }
static void hul_rb_wr(void) { sk_rwlock_rb_write_lock(&hul_rb); }
static void hul_rb_wru(void) { sk_rwlock_rb_write_unlock(&hul_rb); }

static struct sk_elided_mutex hul_em = SK_ELIDED_MUTEX_INITIALIZER;
static struct sk_elided_rwlock hul_erw = SK_ELIDED_RWLOCK_INITIALIZER;
static struct sk_elide_stats hul_em_stats, hul_erw_stats;

static void hul_em_lock(void) { sk_elided_mutex_lock(&hul_em); }
static void hul_em_unlock(void) { sk_elided_mutex_unlock(&hul_em); }
static void hul_erw_rd(void) { sk_elided_rwlock_read_lock(&hul_erw); }
static void hul_erw_rdu(void) { sk_elided_rwlock_read_unlock(&hul_erw); }
static void hul_erw_wr(void) { sk_elided_rwlock_write_lock(&hul_erw); }
static void hul_erw_wru(void) { sk_elided_rwlock_write_unlock(&hul_erw); }

/* rd == NULL: sk_rhash under RCU. */
static const struct hul_lock hul_locks[] = {
	BL_ELIDED_HUL
	{ "pthread-mutex", hul_mutex_lock, hul_mutex_unlock, hul_mutex_lock,
	  hul_mutex_unlock, NULL, 0 },
	{ "glibc-elided", hul_mutex_lock, hul_mutex_unlock, hul_mutex_lock,
	  hul_mutex_unlock, NULL, 1 },
	{ "pthread-rwlock", hul_rw_rd, hul_rw_unlock, hul_rw_wr,
	  hul_rw_unlock, NULL, 0 },
	{ "sk-rwlock-rb", hul_rb_rd, hul_rb_rdu, hul_rb_wr, hul_rb_wru, NULL, 0 },
	{ "rhash", NULL, NULL, NULL, NULL, NULL, 0 },
};

#define HUL_NLOCKS ((int)(sizeof(hul_locks) / sizeof(hul_locks[0])))
#define HUL_GLIBC 3 /* hul_locks[] index of glibc-elided */

static unsigned int hul_bucket(long key)
{
	return (unsigned int)(((unsigned long)key * 0x9e3779b97f4a7c15ULL) >>
			      40) & (HUL_BUCKETS - 1);
}

/* The entry of key in the locked table (caller holds the lock). */
static struct hul_node *hul_find(long key)
{
	struct hul_node *n = hul_buckets[hul_bucket(key)];

	while (n && n->key != key)
		n = n->next;
	return n;
}

static int hul_build(void)
{
	struct sk_rhash_params p = SK_RHASH_PARAMS_DEFAULT;
	long k;

	hul_nodes = calloc(HUL_KEYS, sizeof(*hul_nodes));
	if (!hul_nodes)
		return -ENOMEM;
	p.head_offset = offsetof(struct hul_node, rh);
	p.key_offset = offsetof(struct hul_node, key);
	p.key_len = sizeof(long);
	if (!(hul_rhash = sk_rhash_create(&p))) {
		free(hul_nodes);
		return -ENOMEM;
	}
	for (k = 0; k < HUL_KEYS; k++) {
		struct hul_node *n = &hul_nodes[k];

		n->key = k;
		n->next = hul_buckets[hul_bucket(k)];
		hul_buckets[hul_bucket(k)] = n;
		if (sk_rhash_insert(hul_rhash, &n->rh))
			return -ENOMEM;
	}
	return 0;
}

/*
 * One thread's record, on a cache line of its own: the records sit side
 * by side in hul_run()'s array, and a record written by its thread while
 * it runs would otherwise share a line with its neighbour's, a transfer
 * between the CPUs that every lock's figure would pay.  The counts are
 * kept in the thread's registers and stored once, at the end.
 */
struct hul_thread {
	pthread_t tid;
	const struct hul_lock *lk;
	int index;
	volatile int *go, *stop;
	uint64_t ops, ns, missing;
} __attribute__((aligned(64)));

/* One operation on the table: 1 in 10 an update.  Returns 1 when the key
 * was missing (a broken table). */
static int hul_op(const struct hul_thread *t, uint64_t r)
{
	const struct hul_lock *lk = t->lk;
	long key = (long)(r % HUL_KEYS);
	int update = (r >> 32) % 10 == 0;
	struct hul_node *n;

	if (!lk->rd) {
		sk_rcu_read_lock();
		n = sk_rhash_lookup(hul_rhash, &key);
		if (n && update)
			SK_WRITE_ONCE(n->val, SK_READ_ONCE(n->val) + 1);
		else if (n)
			SK_BENCH_USE(SK_READ_ONCE(n->val));
		sk_rcu_read_unlock();
	} else if (update) {
		lk->wr();
		n = hul_find(key);
		if (n)
			SK_WRITE_ONCE(n->val, n->val + 1);
		lk->wru();
	} else {
		lk->rd();
		n = hul_find(key);
		if (n)
			SK_BENCH_USE(SK_READ_ONCE(n->val));
		lk->rdu();
	}
	return !n;
}

static void *hul_main(void *arg)
{
	struct hul_thread *t = arg;
	uint64_t r = 0x2545f4914f6cdd1dULL * (uint64_t)(t->index + 1), t0;
	uint64_t ops = 0, missing = 0;
	int i;

	if (!t->lk->rd)
		sk_rcu_register_thread();
	/* Acquire pairs with the release of go by the main thread. */
	while (!__atomic_load_n(t->go, __ATOMIC_ACQUIRE))
		;
	t0 = sk_bench_now_ns();
	/* Relaxed: stop only ends the loop; join orders the results. */
	while (!__atomic_load_n(t->stop, __ATOMIC_RELAXED)) {
		for (i = 0; i < 256; i++) {
			r ^= r << 13;
			r ^= r >> 7;
			r ^= r << 17;
			missing += (uint64_t)hul_op(t, r);
		}
		ops += 256;
	}
	t->ns = sk_bench_now_ns() - t0;
	t->ops = ops;
	t->missing = missing;
	if (!t->lk->rd)
		sk_rcu_unregister_thread();
	return NULL;
}

/* n threads of lk for run_ns: total Mops/s, or a negative errno. */
static double hul_run(const struct hul_lock *lk, int n, uint64_t run_ns)
{
	struct hul_thread t[HUL_MAX_THREADS];
	volatile int go = 0, stop = 0;
	double mops = 0;
	int i, created = 0, err = 0;

	for (i = 0; i < n; i++) {
		pthread_attr_t attr;

		memset(&t[i], 0, sizeof(t[i]));
		t[i] = (struct hul_thread){ .lk = lk, .index = i, .go = &go,
					    .stop = &stop };
		pthread_attr_init(&attr);
		sk_bench_attr_pin(&attr, i);
		err = pthread_create(&t[i].tid, &attr, hul_main, &t[i]);
		pthread_attr_destroy(&attr);
		if (err)
			break;
		created++;
	}
	/* Release: the table is built before the threads start. */
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	if (!err)
		sk_bench_sleep_ns(run_ns);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < created; i++) {
		pthread_join(t[i].tid, NULL);
		if (t[i].missing)
			err = EIO; /* a key was not found: a broken table */
		if (t[i].ns)
			mops += (double)t[i].ops * 1e3 / (double)t[i].ns;
	}
	return err ? -err : mops;
}

/*
 * glibc's own elided pthread_mutex: glibc reads GLIBC_TUNABLES once, at
 * start-up, so the figure comes from a child: this program run again
 * ("bench hash-under-lock") with glibc.elision.enable=1 and
 * HUL_CHILD_ENV="<fd> <threads> <warm-up ns> <ns>"; the child builds the
 * table, runs the pthread-mutex table on that many threads (a warm-up,
 * then the measured run) and writes its Mops/s to the pipe fd.  glibc elides only where the CPU has RTM; elsewhere it is
 * pthread_mutex again, and the column is n/a unless HUL_GLIBC_ENV=force
 * (which tests the mechanism on any CPU).
 */
#define HUL_CHILD_ENV "SCALEKIT_BENCH_HUL_CHILD"
#define HUL_GLIBC_ENV "SCALEKIT_BENCH_GLIBC_ELISION"

/* 1: the CPU's RTM works (what glibc looks at, whatever our policy). */
static int hul_cpu_rtm(void)
{
	return !!(sk_elide_cpu_has_rtm() & SK_ELIDE_CPU_PROBE_OK);
}

/* Why the glibc-elided column has no figure here, or NULL: measure it. */
static const char *hul_glibc_na(void)
{
	const char *v = getenv(HUL_GLIBC_ENV);

	if (v && !strcmp(v, "force"))
		return NULL;
	if (v && !strcmp(v, "off"))
		return HUL_GLIBC_ENV "=off";
	return hul_cpu_rtm() ? NULL : "no RTM";
}

/* The child's side of exec: stdout to /dev/null, the environment set. */
static void hul_child_exec(int fd, int n, uint64_t warm_ns, uint64_t ns)
{
	char spec[96];
	int null = open("/dev/null", O_WRONLY);

	if (null >= 0)
		dup2(null, 1);
	snprintf(spec, sizeof(spec), "%d %d %llu %llu", fd, n,
		 (unsigned long long)warm_ns, (unsigned long long)ns);
	setenv(HUL_CHILD_ENV, spec, 1);
	setenv("GLIBC_TUNABLES", "glibc.elision.enable=1", 1);
	/* The same program, so the child measures the same library. */
	execl("/proc/self/exe", "scalekit", "bench", "hash-under-lock",
	      (char *)NULL);
	_exit(127);
}

/*
 * n threads of glibc's elided pthread_mutex for ns after warm_ns: Mops/s
 * or -errno.
 */
static double hul_child_run(int n, uint64_t warm_ns, uint64_t ns)
{
	double mops;
	int fd[2], st = 0;
	char buf[64] = "";
	ssize_t got;
	pid_t pid;

	if (pipe(fd))
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		close(fd[0]);
		hul_child_exec(fd[1], n, warm_ns, ns);
	}
	close(fd[1]);
	if (pid < 0) {
		close(fd[0]);
		return -errno;
	}
	got = read(fd[0], buf, sizeof(buf) - 1);
	close(fd[0]);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return -ECHILD;
	if (got <= 0 || sscanf(buf, "%lf", &mops) != 1)
		return -EIO;
	return mops;
}

/* The hul_locks entry of a row's implementation i. */
static const struct hul_lock *hul_lock_of(const struct sk_bench_row *row,
					  int i)
{
	int k;

	for (k = 0; k < HUL_NLOCKS; k++)
		if (!strcmp(hul_locks[k].name, row->impl[i]->name))
			return &hul_locks[k];
	return NULL;
}

/*
 * Every repetition of every row; with rt, before each repetition also
 * one cache line's round trip (10 ms, sk_bench_rt_sample()) into
 * rt[*rtn] (at most HUL_RT_MAX of them), so that the note can say which
 * cost of a line's transfer the contended rows ran under: the host moves
 * the two vCPUs (docs/benchmarks.md, "Which figures depend on the CPU").
 */
#define HUL_RT_MAX 64

static int hul_measure(const struct sk_bench_config *cfg,
		       struct sk_bench_row **rows, int nc, double *rt,
		       int *rtn, int *rtlow)
{
	const struct hul_lock *lk;
	int c, i, rep, n = rows[0]->nimpl;
	double v;

	for (rep = -1; rep < cfg->reps; rep++) {
		if (rt && rep >= 0 && *rtn < HUL_RT_MAX &&
		    sk_bench_rt_sample(10000000, rt, rtn, rtlow))
			rt = NULL; /* not measurable here */
		for (c = 0; c < nc; c++)
			for (i = 0; i < n; i++) {
				lk = hul_lock_of(rows[c], (i + c + rep + 1) % n);
				if (!lk || rows[c]->na[(i + c + rep + 1) % n])
					continue;
				if (lk->child && rep < 0)
					continue; /* the child warms up */
				v = lk->child
				    ? hul_child_run(rows[c]->threads,
						    cfg->warmup_ns, cfg->run_ns)
				    : hul_run(lk, rows[c]->threads,
					      rep < 0 ? cfg->warmup_ns
						      : cfg->run_ns);
				if (v < 0) {
					fprintf(stderr, "scalekit bench: "
						"hash-under-lock: %s: %s\n",
						lk->name, strerror((int)-v));
					return -1;
				}
				if (rep >= 0)
					rows[c]->rep[(i + c + rep + 1) % n]
						    [rep] = v;
			}
	}
	return 0;
}

/* The elision events of lk over the whole scenario, as a note. */
static void hul_note_stats(struct sk_bench_results *res,
			   const struct hul_lock *lk)
{
	struct sk_elide_stats st;
	unsigned long acq, ab = 0;
	char buf[256];
	int c, n;

	sk_elide_stats_read(lk->stats, &st);
	for (c = 0; c < SK_ELIDE_ABORT_NCAUSES; c++)
		ab += st.aborts[c];
	acq = st.commits + st.fallbacks + st.skips;
	n = snprintf(buf, sizeof(buf), "%s on %s: %lu commits, %lu "
		     "fallbacks, %lu skips; aborts %.2f%% of attempts (",
		     lk->name, bl_backend(), st.commits, st.fallbacks,
		     st.skips, st.commits + ab ? 100.0 * ab / (st.commits + ab)
					       : 0.0);
	for (c = 0; c < SK_ELIDE_ABORT_NCAUSES && n < (int)sizeof(buf); c++)
		n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%s%s %lu",
			      c ? ", " : "", sk_elide_abort_cause_name(c),
			      st.aborts[c]);
	sk_bench_note_add(res, "hash-under-lock: %s); %lu acquisitions "
			  "counted", buf, acq);
}

/* What the glibc-elided column measured, and where. */
static void hul_note_glibc(struct sk_bench_results *res,
			   struct sk_bench_row **rows, int nc)
{
	struct sk_bench_stat a = sk_bench_row_stat(rows[0], HUL_GLIBC), b;

	b = nc > 1 ? sk_bench_row_stat(rows[1], HUL_GLIBC) : a;
	sk_bench_note_add(res, "hash-under-lock: glibc-elided: pthread_mutex "
			  "in a child process with GLIBC_TUNABLES=glibc."
			  "elision.enable=1 (glibc elides only where RTM "
			  "works; this CPU: %s): 1 thread %.3g Mops/s%s%.3g%s",
			  hul_cpu_rtm() ? "RTM" : "no RTM", a.median,
			  nc > 1 ? ", 2 threads " : "", nc > 1 ? b.median : 0.0,
			  nc > 1 ? " Mops/s" : "");
}

/* A target of sk-elided-mutex against peer that was not measured. */
static void hul_target_na(struct sk_bench_results *res, const char *peer,
			  double limit, const char *id, const char *na)
{
	struct sk_bench_target t = { .threads = 2, .limit = limit, .na = na };

	snprintf(t.what, sizeof(t.what), "hash-under-lock, 2 threads, rtm: "
		 "Mops/s sk-elided-mutex / %s", peer);
	snprintf(t.id, sizeof(t.id), "%s", id);
	snprintf(t.ratio_name, sizeof(t.ratio_name), "sk-elided-mutex/%s",
		 peer);
	sk_bench_target_add(res, &t);
}

/*
 * Issue 28: on every backend, and so without RTM (the fallback path is
 * the product on most CPUs), the elided locks are never slower than the
 * locks they replace under contention: 2 threads on 2 CPUs, and 4
 * (oversubscribed on 2 CPUs, where holders get preempted).
 */
static void hul_targets_vs_plain(struct sk_bench_results *res,
				 struct sk_bench_row **rows)
{
	static const char *const pair[2][2] = {
		{ "sk-elided-mutex", "pthread-mutex" },
		{ "sk-elided-rwlock", "pthread-rwlock" },
	};
	char what[160], id[64];
	int c, p;

	for (c = 1; c < 3; c++)
		for (p = 0; p < 2; p++) {
			snprintf(what, sizeof(what),
				 "hash-under-lock, %d threads, %s: Mops/s "
				 "%s / %s",
				 rows[c]->threads, bl_backend(), pair[p][0],
				 pair[p][1]);
			snprintf(id, sizeof(id), "hash-under-lock-%s-%dt",
				 p ? "rwlock" : "mutex", rows[c]->threads);
			sk_bench_ratio_target(res, rows[c], pair[p][0],
					      pair[p][1], 1.0, 0, what, id);
		}
}

/*
 * In a child started by hul_child_run(): measure, write the figure to the
 * pipe and exit.  Returns (nothing done) in any other process.
 */
static void hul_child_main(void)
{
	const char *spec = getenv(HUL_CHILD_ENV);
	unsigned long long warm, ns;
	double mops;
	int fd, n;
	FILE *f;

	if (!spec)
		return;
	if (sscanf(spec, "%d %d %llu %llu", &fd, &n, &warm, &ns) != 4 ||
	    n < 1 || n > HUL_MAX_THREADS || !(f = fdopen(fd, "w"))) {
		fprintf(stderr, "scalekit bench: bad %s '%s'\n",
			HUL_CHILD_ENV, spec);
		_exit(2);
	}
	if (hul_build() || hul_run(&hul_locks[HUL_GLIBC], n, warm) < 0)
		_exit(1);
	mops = hul_run(&hul_locks[HUL_GLIBC], n, ns);
	if (mops < 0)
		_exit(1);
	fprintf(f, "%.6f\n", mops);
	_exit(fclose(f) ? 1 : 0);
}

int sk_bench_hash_under_lock_run(const struct sk_bench_config *cfg,
				 struct sk_bench_results *res)
{
	static const char *names[HUL_NLOCKS + 1];
	static char variant[48], title[200];
	static const int threads[] = { 1, 2, HUL_MAX_THREADS };
	struct sk_bench_row *rows[3];
	int c, k, nc = cfg->max_threads >= 2 ? 3 : 1, err, rtn = 0, rtlow = 0;
	double rt[HUL_RT_MAX];

	hul_child_main();
	for (k = 0; k < HUL_NLOCKS; k++)
		names[k] = hul_locks[k].name;
	err = hul_build();
	if (err) {
		fprintf(stderr, "scalekit bench: hash-under-lock: cannot "
				"build the table: %s\n",
			strerror(-err));
		return -1;
	}
	snprintf(variant, sizeof(variant), "90/10 %s", bl_backend());
	snprintf(title, sizeof(title),
		 "hash-under-lock: 4096 keys, 1024 buckets, one lock, 90%% "
		 "lookups / 10%% updates, total Mops/s (higher is better); "
		 "elision backend %s",
		 bl_backend());
	sk_elided_mutex_attach_stats(&hul_em, &hul_em_stats);
	sk_elided_rwlock_attach_stats(&hul_erw, &hul_erw_stats);
	for (c = 0; c < nc; c++) {
		rows[c] = sk_bench_row_add(res, "hash-under-lock", variant,
					   "Mops/s", title, threads[c], 1,
					   names, cfg->reps);
		rows[c]->na[HUL_GLIBC] = hul_glibc_na();
	}
	sk_bench_progress("hash-under-lock: %d thread counts x %d tables x "
			  "%d reps, %.0f ms each",
			  nc, HUL_NLOCKS, cfg->reps, cfg->run_ns / 1e6);
	err = hul_measure(cfg, rows, nc, nc > 1 ? rt : NULL, &rtn, &rtlow);
	if (nc > 1 && !err && (rtn || rtlow))
		sk_bench_rt_note_add(res, "hash-under-lock", rt, rtn, rtlow,
				     "measured before each repetition; the 2- "
				     "and 4-thread rows move with it");
	for (k = 0; k < HUL_NLOCKS && !err; k++)
		if (hul_locks[k].stats)
			hul_note_stats(res, &hul_locks[k]);
	if (!err && !rows[0]->na[HUL_GLIBC])
		hul_note_glibc(res, rows, nc);
	if (nc > 1 && !err)
		hul_targets_vs_plain(res, rows);
	if (nc > 1 && !err && sk_elide_backend() == SK_ELIDE_BACKEND_RTM) {
		sk_bench_ratio_target(res, rows[1], "sk-elided-mutex",
				      "pthread-mutex", 1.6, 0,
				      "hash-under-lock, 2 threads, rtm: Mops/s "
				      "sk-elided-mutex / pthread-mutex",
				      "hash-under-lock-elided");
		sk_bench_ratio_target(res, rows[1], "sk-elided-mutex",
				      "glibc-elided", 1.0, 0,
				      "hash-under-lock, 2 threads, rtm: Mops/s "
				      "sk-elided-mutex / glibc-elided",
				      "hash-under-lock-vs-glibc");
	} else if (!err) {
		const char *na = nc < 2 ? "needs --threads 2 or more"
					: "no RTM: the elided locks ran on "
					  "fallback";

		hul_target_na(res, "pthread-mutex", 1.6,
			      "hash-under-lock-elided", na);
		hul_target_na(res, "glibc-elided", 1.0,
			      "hash-under-lock-vs-glibc", na);
	}
	sk_synchronize_rcu(); /* the last lookups are over */
	sk_rhash_destroy(hul_rhash, NULL, NULL);
	free(hul_nodes);
	hul_nodes = NULL;
	memset(hul_buckets, 0, sizeof(hul_buckets));
	return err ? -1 : 0;
}
