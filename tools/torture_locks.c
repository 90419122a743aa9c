/* SPDX-License-Identifier: MIT */
/*
 * `scalekit torture locks`: every lock under contention from more threads
 * than CPUs.
 *
 * Each lock in turn gets the same workload: threads pick, at random, a
 * write section (one in four for reader-writer locks, always for plain
 * locks) or a read section.  A write section checks that the owner field
 * is free, claims it, bumps a shadow counter with a load, a spin and a
 * store (a lost update shows a second writer), copies the counter into a
 * multi-word snapshot one word at a time, and checks that it still owns
 * the owner field.  A read section copies the owner field and the
 * snapshot, and (once the lock says the copy is good: seqlocks may ask
 * for a retry) checks that no writer owned the data and that the words
 * agree.  At the end the shadow counter must equal the sum of the write
 * sections, and every thread must have made progress.
 *
 * --busted swaps in a broken twin of each lock, which the checks must
 * catch: plain locks become a test-then-set lock that is not atomic,
 * reader-writer locks get readers that take no lock, the seqlock's
 * readers skip the retry check.
 *
 * The reference locks (pthread_mutex, pthread_rwlock) are tortured like
 * scalekit's: a failure of theirs means the tool is wrong.  Elided locks
 * are added in the lock table below, one entry per backend.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scalekit/rwlock_rb.h"
#include "scalekit/seqlock.h"
#include "tool.h"
#include "torture_core.h"

#define CMD "torture"
#define TL_WORDS 4
#define TL_MAX_THREADS 256
#define TL_MAX_DURATION (366L * 24 * 3600)
/* A run where no section completes for this long has hung. */
#define TL_HANG_S 30

/* ---- the locks --------------------------------------------------------- */

/* Storage for any of the locks (the largest, aligned). */
union tl_storage {
	pthread_mutex_t m;
	pthread_rwlock_t rw;
	struct sk_rwlock_rb rb;
	struct sk_seqlock sl;
	int word;
	unsigned char bytes[64];
} __attribute__((aligned(SK_CACHELINE)));

/*
 * One lock: init/destroy, the write side, and the read side when it has
 * one.  rd_end() returns 1 when the read must be retried (seqlock).
 */
struct tl_lock {
	const char *name;
	const char *desc;
	int (*init)(union tl_storage *s); /* 0 or -errno */
	int (*destroy)(union tl_storage *s);
	void (*wr_lock)(union tl_storage *s);
	void (*wr_unlock)(union tl_storage *s);
	unsigned int (*rd_begin)(union tl_storage *s);
	int (*rd_end)(union tl_storage *s, unsigned int token);
	int seqlock; /* readers may see a torn copy before rd_end() */
};

static int tl_mutex_init(union tl_storage *s)
{
	return -pthread_mutex_init(&s->m, NULL);
}

static int tl_mutex_destroy(union tl_storage *s)
{
	return -pthread_mutex_destroy(&s->m);
}

static void tl_mutex_lock(union tl_storage *s)
{
	pthread_mutex_lock(&s->m);
}

static void tl_mutex_unlock(union tl_storage *s)
{
	pthread_mutex_unlock(&s->m);
}

static int tl_rw_init(union tl_storage *s)
{
	return -pthread_rwlock_init(&s->rw, NULL);
}

static int tl_rw_destroy(union tl_storage *s)
{
	return -pthread_rwlock_destroy(&s->rw);
}

static void tl_rw_wrlock(union tl_storage *s)
{
	pthread_rwlock_wrlock(&s->rw);
}

static void tl_rw_unlock(union tl_storage *s)
{
	pthread_rwlock_unlock(&s->rw);
}

static unsigned int tl_rw_rdlock(union tl_storage *s)
{
	pthread_rwlock_rdlock(&s->rw);
	return 0;
}

static int tl_rw_rdunlock(union tl_storage *s, unsigned int token)
{
	(void)token;
	pthread_rwlock_unlock(&s->rw);
	return 0;
}

static int tl_rb_init(union tl_storage *s)
{
	sk_rwlock_rb_init(&s->rb);
	return 0;
}

static int tl_rb_destroy(union tl_storage *s)
{
	return sk_rwlock_rb_destroy(&s->rb);
}

static void tl_rb_wrlock(union tl_storage *s)
{
	sk_rwlock_rb_wrlock(&s->rb);
}

static void tl_rb_wrunlock(union tl_storage *s)
{
	sk_rwlock_rb_wrunlock(&s->rb);
}

static unsigned int tl_rb_rdlock(union tl_storage *s)
{
	sk_rwlock_rb_rdlock(&s->rb);
	return 0;
}

static int tl_rb_rdunlock(union tl_storage *s, unsigned int token)
{
	(void)token;
	sk_rwlock_rb_rdunlock(&s->rb);
	return 0;
}

static int tl_sl_init(union tl_storage *s)
{
	sk_seqlock_init(&s->sl);
	return 0;
}

static int tl_sl_destroy(union tl_storage *s)
{
	return sk_seqlock_destroy(&s->sl);
}

static void tl_sl_lock(union tl_storage *s)
{
	sk_seqlock_write_lock(&s->sl);
}

static void tl_sl_unlock(union tl_storage *s)
{
	sk_seqlock_write_unlock(&s->sl);
}

static unsigned int tl_sl_begin(union tl_storage *s)
{
	return sk_seqlock_read_begin(&s->sl);
}

static int tl_sl_retry(union tl_storage *s, unsigned int token)
{
	return sk_seqlock_read_retry(&s->sl, token);
}

/*
 * The elided locks' entries (one per backend), once the elide module is
 * in the tree: the one place where they are added.
 */
#define SK_TORT_ELIDED_LOCKS

static const struct tl_lock tl_locks[] = {
	{ "pthread-mutex", "pthread_mutex_t (reference)", tl_mutex_init,
	  tl_mutex_destroy, tl_mutex_lock, tl_mutex_unlock, NULL, NULL, 0 },
	{ "pthread-rwlock", "pthread_rwlock_t (reference)", tl_rw_init,
	  tl_rw_destroy, tl_rw_wrlock, tl_rw_unlock, tl_rw_rdlock,
	  tl_rw_rdunlock, 0 },
	{ "rwlock-rb", "sk_rwlock_rb, read-biased", tl_rb_init,
	  tl_rb_destroy, tl_rb_wrlock, tl_rb_wrunlock, tl_rb_rdlock,
	  tl_rb_rdunlock, 0 },
	{ "seqlock", "sk_seqlock", tl_sl_init, tl_sl_destroy, tl_sl_lock,
	  tl_sl_unlock, tl_sl_begin, tl_sl_retry, 1 },
	SK_TORT_ELIDED_LOCKS
};

#define TL_NLOCKS ((int)(sizeof(tl_locks) / sizeof(tl_locks[0])))

/* The busted plain lock: test, then set, not atomically. */
static void tl_busted_lock(union tl_storage *s)
{
	while (SK_READ_ONCE(s->word))
		sk_cpu_relax();
	sk_cpu_relax(); /* the window another thread slips through */
	SK_WRITE_ONCE(s->word, 1);
}

static void tl_busted_unlock(union tl_storage *s)
{
	SK_WRITE_ONCE(s->word, 0);
}

/* ---- one run of one lock ------------------------------------------------- */

struct tl_run;

struct tl_thread {
	struct tl_run *run;
	pthread_t tid;
	struct sk_tort_rng rng;
	unsigned long id; /* 1.. : the owner field's value */
	unsigned long reads, writes, retries, errors; /* relaxed */
} __attribute__((aligned(SK_CACHELINE)));

struct tl_run {
	const struct tl_lock *lk;
	int busted;
	int stop; /* atomic */
	union tl_storage lock;
	/* The guarded data, on its own line. */
	unsigned long owner __attribute__((aligned(SK_CACHELINE)));
	unsigned long shadow;
	unsigned long w[TL_WORDS];
	unsigned long printed; /* atomic: error lines printed */
};

static void tl_error(struct tl_thread *t, const char *what, unsigned long a,
		     unsigned long b)
{
	sk_tort_inc(&t->errors);
	if (__atomic_fetch_add(&t->run->printed, 1, __ATOMIC_RELAXED) < 10)
		fprintf(stderr, "ERROR: %s thread %lu: %s (%lu vs %lu)\n",
			t->run->lk->name, t->id, what, a, b);
}

/*
 * The shadow counter: plain accesses with a working lock (so that TSan
 * checks the lock's ordering), relaxed atomics with a busted one.
 */
static unsigned long tl_shadow_get(struct tl_run *r)
{
	return r->busted ? SK_READ_ONCE(r->shadow)
			 : *(volatile unsigned long *)&r->shadow;
}

static void tl_shadow_set(struct tl_run *r, unsigned long v)
{
	if (r->busted)
		SK_WRITE_ONCE(r->shadow, v);
	else
		*(volatile unsigned long *)&r->shadow = v;
}

static void tl_write_section(struct tl_thread *t)
{
	struct tl_run *r = t->run;
	int plain_busted = r->busted && !r->lk->rd_begin;
	unsigned long v, o;
	int k;

	if (plain_busted)
		tl_busted_lock(&r->lock);
	else
		r->lk->wr_lock(&r->lock);
	o = SK_READ_ONCE(r->owner);
	if (o != 0)
		tl_error(t, "lock taken while another thread owns it", o, 0);
	SK_WRITE_ONCE(r->owner, t->id);
	v = tl_shadow_get(r) + 1;
	sk_tort_spin(&t->rng, 8);
	tl_shadow_set(r, v);
	for (k = 0; k < TL_WORDS; k++) {
		SK_WRITE_ONCE(r->w[k], v);
		sk_tort_spin(&t->rng, 4);
	}
	o = SK_READ_ONCE(r->owner);
	if (o != t->id)
		tl_error(t, "owner changed inside a write section", o, t->id);
	SK_WRITE_ONCE(r->owner, 0);
	if (plain_busted)
		tl_busted_unlock(&r->lock);
	else
		r->lk->wr_unlock(&r->lock);
	sk_tort_inc(&t->writes);
}

static void tl_read_section(struct tl_thread *t)
{
	struct tl_run *r = t->run;
	unsigned long o, w[TL_WORDS];
	unsigned int tok = 0;
	int k, retry;

	do {
		/* Busted readers take no lock (the seqlock's: no retry). */
		if (!r->busted || r->lk->seqlock)
			tok = r->lk->rd_begin(&r->lock);
		o = SK_READ_ONCE(r->owner);
		for (k = 0; k < TL_WORDS; k++) {
			w[k] = SK_READ_ONCE(r->w[k]);
			sk_tort_spin(&t->rng, 4);
		}
		retry = r->busted ? 0 : r->lk->rd_end(&r->lock, tok);
		if (retry)
			sk_tort_inc(&t->retries);
	} while (retry);
	if (o != 0)
		tl_error(t, "read section overlapped a writer", o, 0);
	for (k = 1; k < TL_WORDS; k++)
		if (w[k] != w[0])
			tl_error(t, "torn snapshot", w[0], w[k]);
	sk_tort_inc(&t->reads);
}

static void *tl_main(void *arg)
{
	struct tl_thread *t = arg;
	struct tl_run *r = t->run;

	while (!sk_atomic_load_acquire(&r->stop)) {
		if (r->lk->rd_begin && !sk_tort_one_in(&t->rng, 4))
			tl_read_section(t);
		else
			tl_write_section(t);
		if (sk_tort_one_in(&t->rng, 64))
			sched_yield();
	}
	return NULL;
}

/* Sum of the threads' sections (for the monitor). */
static unsigned long tl_sections(struct tl_thread *th, unsigned long n)
{
	unsigned long i, s = 0;

	for (i = 0; i < n; i++)
		s += sk_atomic_load_relaxed(&th[i].reads) +
		     sk_atomic_load_relaxed(&th[i].writes);
	return s;
}

/* Sleep for the run, printing progress; 0, or -1 when it hung. */
static int tl_monitor(struct tl_run *r, struct tl_thread *th, unsigned long n,
		      double secs)
{
	uint64_t start = sk_tort_now_ns(), last_change = start, now;
	unsigned long seen = 0, s;

	for (;;) {
		usleep(100000);
		now = sk_tort_now_ns();
		s = tl_sections(th, n);
		if (s != seen) {
			seen = s;
			last_change = now;
		}
		if ((now - last_change) / 1000000000ULL >= TL_HANG_S) {
			fprintf(stderr, "ERROR: %s: no section completed for "
					"%d s: hang\n",
				r->lk->name, TL_HANG_S);
			return -1;
		}
		if ((now - start) / 1e9 >= secs)
			return 0;
	}
}

/* Final checks and the report line; returns the errors counted. */
static unsigned long tl_report(struct tl_run *r, struct tl_thread *th,
			       unsigned long n, double secs)
{
	unsigned long i, reads = 0, writes = 0, retries = 0, errors = 0;

	for (i = 0; i < n; i++) {
		reads += th[i].reads;
		writes += th[i].writes;
		retries += th[i].retries;
		errors += th[i].errors;
		if (th[i].reads + th[i].writes == 0) {
			fprintf(stderr, "ERROR: %s thread %lu made no "
					"progress\n",
				r->lk->name, th[i].id);
			errors++;
		}
	}
	if (r->shadow != writes) {
		fprintf(stderr, "ERROR: %s: shadow counter %lu, but %lu write "
				"sections (lost updates)\n",
			r->lk->name, r->shadow, writes);
		errors++;
	}
	printf("%-22s %lu threads, %.1f s: %lu reads (%lu retries), %lu "
	       "writes, shadow %lu, errors %lu\n",
	       r->lk->name, n, secs, reads, retries, writes, r->shadow, errors);
	return errors;
}

/* Torture lk with n threads for secs; the errors it found (-1: setup). */
static long tl_run_one(const struct tl_lock *lk, unsigned long n, double secs,
		       uint64_t seed, int busted)
{
	static struct tl_run r;
	struct tl_thread *th = calloc(n, sizeof(*th));
	unsigned long i, started = 0, errors;
	int err, hung;

	memset(&r, 0, sizeof(r));
	r.lk = lk;
	r.busted = busted;
	err = th ? lk->init(&r.lock) : -ENOMEM;
	if (err) {
		fprintf(stderr, "scalekit torture: %s: cannot initialize: %s\n",
			lk->name, strerror(-err));
		free(th);
		return -1;
	}
	for (i = 0; i < n; i++) {
		th[i].run = &r;
		th[i].id = i + 1;
		th[i].rng.s = seed ^ (0x9e3779b97f4a7c15ULL * (i + 1));
		if (pthread_create(&th[i].tid, NULL, tl_main, &th[i]) != 0)
			break;
		started++;
	}
	hung = started == n ? tl_monitor(&r, th, n, secs) : 0;
	if (hung) {
		fflush(stdout);
		_exit(SK_TOOL_EXIT_FAIL); /* threads stuck in a lock */
	}
	sk_atomic_store_release(&r.stop, 1);
	for (i = 0; i < started; i++)
		pthread_join(th[i].tid, NULL);
	if (started < n) {
		fprintf(stderr, "scalekit torture: %s: cannot start %lu "
				"threads\n",
			lk->name, n);
		free(th);
		return -1;
	}
	errors = tl_report(&r, th, n, secs);
	if (!busted && lk->destroy(&r.lock) != 0)
		errors++;
	free(th);
	return (long)errors;
}

/* ---- command line ---------------------------------------------------------- */

static void tl_usage(FILE *f)
{
	int i;

	fprintf(f,
		"usage: scalekit torture locks [--duration S] [--threads N] "
		"[--lock NAME]\n"
		"              [--seed X] [--busted]\n"
		"\n"
		"Torture every lock (or one, --lock) in turn with more "
		"threads than CPUs:\nmutual exclusion by a shadow counter and "
		"an owner field, readers check a\nmulti-word snapshot.  The "
		"duration is shared among the locks.\n\nLocks:\n");
	for (i = 0; i < TL_NLOCKS; i++)
		fprintf(f, "  %-22s %s\n", tl_locks[i].name, tl_locks[i].desc);
	fprintf(f,
		"\nOptions:\n"
		"  --duration S  seconds in all (default 10)\n"
		"  --threads N   threads per lock (default: 2 x CPUs + 1)\n"
		"  --lock NAME   only this lock\n"
		"  --seed X      seed of the random choices (decimal)\n"
		"  --busted      broken twins of the locks: the run must "
		"report FAILURE\n");
}

struct tl_config {
	long duration, threads, seed;
	const char *only;
	int busted;
};

/* Parse argv (argv[0] "torture", one word "locks"); -1: usage error. */
static int tl_parse(int argc, char **argv, struct tl_config *c)
{
	static const struct {
		const char *name;
		long min, max;
		size_t off;
	} nums[] = {
		{ "--duration", 1, TL_MAX_DURATION,
		  offsetof(struct tl_config, duration) },
		{ "--threads", 1, TL_MAX_THREADS,
		  offsetof(struct tl_config, threads) },
		{ "--seed", 0, 0x7fffffffL, offsetof(struct tl_config, seed) },
	};
	const char *val;
	size_t k;
	int i, r;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "locks") == 0)
			continue;
		if (strcmp(argv[i], "--busted") == 0) {
			c->busted = 1;
			continue;
		}
		r = sk_tool_option_value(CMD, argc, argv, &i, "--lock", &val);
		if (r < 0)
			return -1;
		if (r > 0) {
			c->only = val;
			continue;
		}
		for (k = 0, r = 0; k < sizeof(nums) / sizeof(nums[0]) && !r;
		     k++) {
			r = sk_tool_option_value(CMD, argc, argv, &i,
						 nums[k].name, &val);
			if (r > 0 &&
			    sk_tool_parse_long(val, nums[k].min, nums[k].max,
					       (long *)((char *)c +
							nums[k].off)) != 0) {
				sk_tool_usage_error(CMD, "%s wants a whole "
					"number from %ld to %ld, not '%s'",
					nums[k].name, nums[k].min,
					nums[k].max, val);
				return -1;
			}
		}
		if (r < 0)
			return -1;
		if (r == 0) {
			sk_tool_usage_error(CMD, "locks: unknown option or "
					    "word '%s'", argv[i]);
			return -1;
		}
	}
	return 0;
}

int sk_tort_locks_main(int argc, char **argv)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct tl_config c = { 10, 2 * (ncpu < 1 ? 1 : ncpu) + 1, 1, NULL, 0 };
	long errors = 0, e;
	int i, nsel = 0, uncaught = 0;
	double secs;

	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			tl_usage(stdout);
			return SK_TOOL_EXIT_OK;
		}
	if (tl_parse(argc, argv, &c) != 0)
		return SK_TOOL_EXIT_USAGE;
	for (i = 0; i < TL_NLOCKS; i++)
		nsel += !c.only || !strcmp(c.only, tl_locks[i].name);
	if (!nsel)
		return sk_tool_usage_error(CMD, "locks: unknown lock '%s' "
					   "(see --help)", c.only);
	secs = (double)c.duration / nsel;
	printf("torture locks: %d lock%s, %ld threads each, %.1f s each, "
	       "seed %ld%s\n",
	       nsel, nsel == 1 ? "" : "s", c.threads, secs, c.seed,
	       c.busted ? ", BUSTED twins" : "");
	fflush(stdout);
	for (i = 0; i < TL_NLOCKS; i++) {
		if (c.only && strcmp(c.only, tl_locks[i].name))
			continue;
		e = tl_run_one(&tl_locks[i], (unsigned long)c.threads, secs,
			       (uint64_t)c.seed + (uint64_t)i, c.busted);
		if (e < 0)
			return SK_TOOL_EXIT_FAIL;
		errors += e;
		if (c.busted && e == 0) {
			printf("%s: its busted twin was NOT caught\n",
			       tl_locks[i].name);
			uncaught++;
		}
		fflush(stdout);
	}
	printf("errors: %ld\n", errors);
	if (c.busted)
		printf("--busted: locks that do not exclude; %s\n",
		       !uncaught ? "the detector caught it, as it must"
			      : "NOT DETECTED: the detector is blind");
	printf("%s\n", errors || c.busted ? "FAILURE" : "SUCCESS");
	return errors || c.busted ? SK_TOOL_EXIT_FAIL : SK_TOOL_EXIT_OK;
}
