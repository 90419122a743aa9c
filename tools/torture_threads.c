/* SPDX-License-Identifier: MIT */
/*
 * `scalekit torture`: the threads of a run and what the scenarios share
 * with the harness.  The helpers of torture_core.h (errors, stutter, the
 * --gp pick, counters, histograms), allocation failures on purpose
 * (SCALEKIT_TORTURE_FAIL_ALLOC), object pools, and the bodies of the
 * reader, updater, helper, --flood and --churn threads.  torture_run.c
 * starts them; torture.c is the command line.
 */
#define _GNU_SOURCE
#include "tool.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "scalekit/barrier.h"
#include "torture_core.h"

/* Error messages printed before the rest are only counted. */
#define TORT_MAX_PRINTED 10
/* Short-lived readers started at once with --churn. */
#define TORT_CHURN_SPAWNERS 2

__thread struct sk_tort_thread *sk_tort_self;

/* ---- small helpers shared with the scenarios ----------------------------- */

uint64_t sk_tort_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

const char *sk_tort_role_name(enum sk_tort_role r)
{
	switch (r) {
	case SK_TORT_READER:
		return "reader";
	case SK_TORT_UPDATER:
		return "updater";
	case SK_TORT_EXTRA:
		return "helper";
	case SK_TORT_FLOOD:
		return "flood";
	case SK_TORT_CHURN:
		return "churn";
	}
	return "thread";
}

unsigned long sk_tort_errors_so_far(struct sk_tort *T)
{
	unsigned long n;

	/* Under err_lock: sk_tort_error() counts every error in printed or
	 * suppressed before it returns. */
	pthread_mutex_lock(&T->err_lock);
	n = T->printed + T->suppressed;
	pthread_mutex_unlock(&T->err_lock);
	return n;
}

void sk_tort_error(struct sk_tort *T, struct sk_tort_thread *t, const char *fmt,
		   ...)
{
	char msg[400];
	va_list ap;
	int print;

	if (t)
		sk_tort_inc(&t->st->errors);
	pthread_mutex_lock(&T->err_lock);
	if (!t)
		T->global_errors++;
	print = T->printed < TORT_MAX_PRINTED;
	if (print)
		T->printed++;
	else
		T->suppressed++;
	pthread_mutex_unlock(&T->err_lock);
	if (!print)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (t)
		fprintf(stderr, "scalekit torture: %sERROR: %s %lu: %s\n",
			T->prefix, sk_tort_role_name(t->role), t->index, msg);
	else
		fprintf(stderr, "scalekit torture: %sERROR: %s\n", T->prefix,
			msg);
}

void sk_tort_stutter_wait(struct sk_tort_thread *t)
{
	struct sk_tort *T = t->T;
	int qsbr;

	if (!sk_atomic_load_relaxed(&T->paused))
		return;
	qsbr = t->role == SK_TORT_UPDATER && !T->scen->plain_updaters;

	if (qsbr && T->ops->updater_stop)
		T->ops->updater_stop();
	while (sk_atomic_load_relaxed(&T->paused) && !sk_tort_stopping(T))
		usleep(1000);
	if (qsbr && T->ops->updater_start)
		T->ops->updater_start();
}

int sk_tort_pick_gp(struct sk_tort_thread *t)
{
	unsigned int mask = t->T->cfg->gp_mask;
	int n = __builtin_popcount(mask), k, g;

	k = (int)sk_tort_below(&t->rng, (unsigned long)n);
	for (g = 0; g < SK_TORT_GP_NR; g++)
		if ((mask & (1u << g)) && k-- == 0)
			return g;
	return SK_TORT_GP_SYNC;
}

void sk_tort_sum_stats(struct sk_tort *T, struct sk_tort_stats *sum)
{
	unsigned long i;
	int k;

	memset(sum, 0, sizeof(*sum));
	for (i = 0; i < T->nthreads; i++) {
		struct sk_tort_stats *s = &T->threads[i].own;

		sum->reads += sk_atomic_load_relaxed(&s->reads);
		sum->updates += sk_atomic_load_relaxed(&s->updates);
		sum->errors += sk_atomic_load_relaxed(&s->errors);
		sum->cb_queued += sk_atomic_load_relaxed(&s->cb_queued);
		sum->churned += sk_atomic_load_relaxed(&s->churned);
		if (sk_atomic_load_relaxed(&s->max_pipe) > sum->max_pipe)
			sum->max_pipe = sk_atomic_load_relaxed(&s->max_pipe);
		for (k = 0; k < SK_TORT_HIST; k++) {
			sum->pipe[k] += sk_atomic_load_relaxed(&s->pipe[k]);
			sum->batch[k] += sk_atomic_load_relaxed(&s->batch[k]);
		}
		for (k = 0; k < SK_TORT_GP_NR; k++)
			sum->gp_used[k] +=
				sk_atomic_load_relaxed(&s->gp_used[k]);
		for (k = 0; k < SK_TORT_NX; k++)
			sum->x[k] += sk_atomic_load_relaxed(&s->x[k]);
	}
}

void sk_tort_print_hist(FILE *f, const char *name, const unsigned long *h)
{
	int k;

	fprintf(f, "%s", name);
	for (k = 0; k < SK_TORT_HIST; k++)
		fprintf(f, " %lu", h[k]);
	fprintf(f, "\n");
}

/* ---- allocation failures on purpose (SCALEKIT_TORTURE_FAIL_ALLOC) ------- */

/*
 * fail_at is written by the main thread before any other thread starts.
 * Only the allocations of the thread that runs the setup (the one that
 * armed the count) are counted and may fail: a table's background resize
 * allocates on the callback worker while the setup still runs, as many
 * times as the timing makes it, and a count that included it would not
 * name the same allocation from one run to the next (the fault sweep of
 * tests/torture.cmake reruns with the last count).  A background
 * resize's failures are --fault-rate's part.
 */
static struct {
	unsigned long fail_at; /* this setup allocation fails; 0: none */
	unsigned long count;   /* the setup thread's allocations so far */
} tort_fault;

/* Set in the thread that runs the setup while it runs (armed). */
static __thread int tort_fault_armed;

int sk_tort_setup_fault(void)
{
	if (!tort_fault_armed || ++tort_fault.count != tort_fault.fail_at)
		return 0;
	fprintf(stderr,
		"scalekit torture: SCALEKIT_TORTURE_FAIL_ALLOC=%lu: this "
		"setup allocation fails on purpose\n",
		tort_fault.fail_at);
	return 1;
}

void *sk_tort_calloc(size_t n, size_t size)
{
	return sk_tort_setup_fault() ? NULL : calloc(n, size);
}

/* Arm (the top-level run's setup begins) or disarm (it is over). */
void sk_tort_fault_arm(const struct sk_tort_config *cfg, int on)
{
	if (!tort_fault.fail_at || cfg->is_child)
		return;
	tort_fault_armed = on;
	if (!on && tort_fault.count < tort_fault.fail_at)
		fprintf(stderr,
			"scalekit torture: SCALEKIT_TORTURE_FAIL_ALLOC=%lu: "
			"the setup made only %lu allocations; none failed\n",
			tort_fault.fail_at, tort_fault.count);
}

/* Read SCALEKIT_TORTURE_FAIL_ALLOC: 0, or -1 when it is not a number. */
int sk_tort_fault_from_env(void)
{
	const char *v = getenv("SCALEKIT_TORTURE_FAIL_ALLOC");
	long n;

	if (!v)
		return 0;
	if (sk_tool_parse_long(v, 1, LONG_MAX, &n) != 0)
		return -1;
	tort_fault.fail_at = (unsigned long)n;
	return 0;
}

/* ---- object pools (see torture_core.h) ----------------------------------- */

/* Objects kept in quarantine before reuse, per pool (busted runs). */
#define TORT_QUARANTINE 4096

void sk_tort_pool_init(struct sk_tort_pool *p, size_t size, int reuse)
{
	memset(p, 0, sizeof(*p));
	p->size = size;
	p->reuse = reuse;
	pthread_mutex_init(&p->lock, NULL);
}

/* The oldest object of the quarantine once it is full, else NULL. */
static void *pool_reuse(struct sk_tort_pool *p)
{
	void *obj = NULL;

	pthread_mutex_lock(&p->lock);
	if (p->len > TORT_QUARANTINE) {
		obj = p->ring[p->head];
		p->head = (p->head + 1) % p->cap;
		p->len--;
	}
	pthread_mutex_unlock(&p->lock);
	return obj;
}

void *sk_tort_pool_alloc(struct sk_tort_pool *p)
{
	void *obj = NULL;

	/*
	 * Reused: the oldest retired object; readers may still look at it,
	 * so it is not cleared: the caller sets every field readers check
	 * (with SK_TORT_STORE).
	 */
	if (p->reuse)
		obj = pool_reuse(p);
	if (!obj) {
		obj = sk_tort_calloc(1, p->size);
		if (!obj)
			return NULL;
	}
	sk_atomic_fetch_add_relaxed(&p->allocated, 1UL);
	return obj;
}

void sk_tort_pool_retire(struct sk_tort_pool *p, void *obj)
{
	sk_atomic_fetch_add_relaxed(&p->freed, 1UL);
	if (!p->reuse) {
		free(obj);
		return;
	}
	pthread_mutex_lock(&p->lock);
	if (p->len == p->cap) {
		unsigned long ncap = p->cap ? 2 * p->cap : 2 * TORT_QUARANTINE;
		void **nr = malloc(ncap * sizeof(*nr));
		unsigned long i;

		if (!nr) {
			/* Out of memory: leak it (still memory-safe). */
			pthread_mutex_unlock(&p->lock);
			return;
		}
		for (i = 0; i < p->len; i++)
			nr[i] = p->ring[(p->head + i) % p->cap];
		free(p->ring);
		p->ring = nr;
		p->cap = ncap;
		p->head = 0;
	}
	p->ring[(p->head + p->len) % p->cap] = obj;
	p->len++;
	pthread_mutex_unlock(&p->lock);
}

void sk_tort_pool_destroy(struct sk_tort_pool *p)
{
	while (p->len) {
		free(p->ring[p->head]);
		p->head = (p->head + 1) % p->cap;
		p->len--;
	}
	free(p->ring);
	p->ring = NULL;
	p->cap = 0;
	pthread_mutex_destroy(&p->lock);
}

/* ---- threads ------------------------------------------------------------- */

static void seed_rng(struct sk_tort_rng *r, uint64_t seed, unsigned int role,
		     unsigned long index)
{
	r->s = seed ^ ((uint64_t)(role + 1) << 56) ^
	       ((uint64_t)index * 0xd1342543de82ef95ULL);
	(void)sk_tort_rand(r);
}

static void name_thread(struct sk_tort_thread *t)
{
	char name[16];

	snprintf(name, sizeof(name), "tort-%.4s%lu", sk_tort_role_name(t->role),
		 t->index);
	pthread_setname_np(pthread_self(), name);
}

/*
 * Start of a reader or updater thread (named unless a churn reader):
 * 0, or -1 when its scenario state cannot be set up (error counted).
 */
static int scen_thread_enter(struct sk_tort_thread *t, int named)
{
	struct sk_tort *T = t->T;

	sk_tort_self = t;
	if (named)
		name_thread(t);
	if (T->scen->thread_init && T->scen->thread_init(t) != 0) {
		sk_tort_error(T, t, "out of memory at thread start");
		return -1;
	}
	return 0;
}

/* End of a reader or updater thread: its scenario state goes. */
static void scen_thread_exit(struct sk_tort_thread *t)
{
	if (t->T->scen->thread_fini)
		t->T->scen->thread_fini(t);
	sk_tort_self = NULL;
}

static void *reader_main(void *arg)
{
	struct sk_tort_thread *t = arg;
	struct sk_tort *T = t->T;
	const struct sk_tort_ops *ops = T->ops;
	const struct sk_tort_scenario *scen = T->scen;
	unsigned long n;

	if (scen_thread_enter(t, !t->max_iters) != 0)
		return NULL;
	t->qsbr = ops->reader_start ? ops->reader_start(t->index) : 0;
	for (n = 0; !sk_tort_stopping(T) && (!t->max_iters || n < t->max_iters);
	     n++) {
		int pause = sk_atomic_load_relaxed(&T->paused) ||
			    sk_tort_one_in(&t->rng, 2000);

		if (pause) {
			/* A stutter pause, or a short nap outside sections. */
			if (t->qsbr && scen->before_qs)
				scen->before_qs(t);
			if (ops->reader_pause)
				ops->reader_pause();
			if (sk_atomic_load_relaxed(&T->paused)) {
				while (sk_atomic_load_relaxed(&T->paused) &&
				       !sk_tort_stopping(T))
					usleep(1000);
			} else {
				usleep((useconds_t)sk_tort_below(&t->rng, 200));
			}
			if (ops->reader_resume)
				ops->reader_resume();
		}
		scen->read_one(t);
		/* QSBR: a quiescent state after most sections, not all. */
		if (t->qsbr && ops->quiescent && !sk_tort_one_in(&t->rng, 4)) {
			if (scen->before_qs)
				scen->before_qs(t);
			ops->quiescent();
		}
	}
	if (t->qsbr && scen->before_qs)
		scen->before_qs(t);
	if (ops->reader_stop)
		ops->reader_stop();
	scen_thread_exit(t);
	return NULL;
}

static void *updater_main(void *arg)
{
	struct sk_tort_thread *t = arg;
	struct sk_tort *T = t->T;
	const struct sk_tort_ops *ops = T->ops;
	const struct sk_tort_scenario *scen = T->scen;
	int qsbr = !scen->plain_updaters;

	if (scen_thread_enter(t, 1) != 0)
		return NULL;
	if (qsbr && ops->updater_start)
		ops->updater_start();
	while (!sk_tort_stopping(T)) {
		sk_tort_stutter_wait(t);
		scen->update_one(t);
		if (qsbr && ops->updater_quiescent)
			ops->updater_quiescent();
		/* Let readers run between updates, now and then. */
		if (sk_tort_one_in(&t->rng, 8))
			usleep((useconds_t)sk_tort_below(&t->rng, 100));
		else
			sk_tort_spin(&t->rng, 200);
	}
	if (scen->update_drain)
		scen->update_drain(t);
	if (qsbr && ops->updater_stop)
		ops->updater_stop();
	scen_thread_exit(t);
	return NULL;
}

static void *extra_main(void *arg)
{
	struct sk_tort_thread *t = arg;
	struct sk_tort *T = t->T;

	sk_tort_self = t;
	name_thread(t);
	while (!sk_tort_stopping(T)) {
		sk_tort_stutter_wait(t);
		T->scen->extra_one(t);
	}
	if (T->scen->extra_drain)
		T->scen->extra_drain(t);
	sk_tort_self = NULL;
	return NULL;
}

/* --flood: callbacks queued as fast as the library takes them. */
struct flood_cb {
	struct sk_rcu_head rh;
	struct sk_tort *T;
};

static void flood_done(struct sk_rcu_head *h)
{
	struct flood_cb *f = (struct flood_cb *)(void *)h;
	struct sk_tort *T = f->T;

	free(f);
	sk_atomic_fetch_add_relaxed(&T->cb_invoked, 1UL);
	sk_tort_cb_done(T);
}


static void *flood_main(void *arg)
{
	struct sk_tort_thread *t = arg;
	struct sk_tort *T = t->T;
	int i, err;

	sk_tort_self = t;
	name_thread(t);
	while (!sk_tort_stopping(T)) {
		sk_tort_stutter_wait(t);
		for (i = 0; i < 256; i++) {
			struct flood_cb *f = malloc(sizeof(*f));

			if (!f) {
				sk_tort_error(T, t, "flood: out of memory");
				usleep(1000);
				break;
			}
			memset(&f->rh, 0, sizeof(f->rh));
			f->T = T;
			sk_atomic_fetch_add_relaxed(&T->cb_pending, 1UL);
			err = T->ops->call(T->ctx, &f->rh, flood_done);
			if (err) {
				sk_tort_cb_done(T);
				free(f);
				sk_tort_error(T, t, "flood: call returned %d",
					      err);
				usleep(1000);
				break;
			}
			sk_tort_inc(&t->st->cb_queued);
		}
	}
	sk_tort_self = NULL;
	return NULL;
}

/* --churn: one short-lived reader after another. */
static void *churn_main(void *arg)
{
	struct sk_tort_thread *t = arg;
	struct sk_tort *T = t->T;
	pthread_attr_t attr;

	sk_tort_self = t;
	name_thread(t);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	while (!sk_tort_stopping(T)) {
		struct sk_tort_thread *c = calloc(1, sizeof(*c));
		int err;

		sk_tort_stutter_wait(t);
		if (!c) {
			sk_tort_error(T, t, "churn: out of memory");
			break;
		}
		c->T = T;
		c->role = SK_TORT_READER;
		c->index = (unsigned long)sk_tort_rand(&t->rng);
		c->rng.s = sk_tort_rand(&t->rng);
		c->max_iters = 1 + sk_tort_below(&t->rng, 2000);
		c->st = t->st; /* one child at a time writes them */
		err = pthread_create(&c->tid, &attr, reader_main, c);
		if (err) {
			free(c);
			/* Thread limits under oversubscription: retry. */
			usleep(10000);
			continue;
		}
		pthread_join(c->tid, NULL);
		free(c);
		sk_tort_inc(&t->st->churned);
	}
	pthread_attr_destroy(&attr);
	sk_tort_self = NULL;
	return NULL;
}


void *(*sk_tort_thread_main(enum sk_tort_role role))(void *)
{
	switch (role) {
	case SK_TORT_READER:
		return reader_main;
	case SK_TORT_UPDATER:
		return updater_main;
	case SK_TORT_EXTRA:
		return extra_main;
	case SK_TORT_FLOOD:
		return flood_main;
	case SK_TORT_CHURN:
		break;
	}
	return churn_main;
}

/* ---- setup --------------------------------------------------------------- */

/*
 * Primitives initialized and not cleaned up yet (see
 * sk_tort_run_checked() in torture_run.c).
 */
static long tort_ops_live;

long sk_tort_ops_live(void)
{
	return tort_ops_live;
}

static int tort_ops_init(struct sk_tort *T)
{
	int err = 0;

	/* The instance's allocation is one of the setup's (see tort_fault). */
	if (T->ops->init)
		err = sk_tort_setup_fault() ? -ENOMEM : T->ops->init(&T->ctx);

	if (!err)
		tort_ops_live++;
	return err;
}

void sk_tort_ops_cleanup(struct sk_tort *T)
{
	/* A busy instance is leaked rather than freed (its cleanup says). */
	if (T->ops->cleanup)
		(void)T->ops->cleanup(T->ctx);
	T->ctx = NULL;
	tort_ops_live--;
}

/* The role, number and generator of each thread of T->threads. */
static void tort_init_threads(struct sk_tort *T, unsigned long nextra)
{
	const struct sk_tort_config *cfg = T->cfg;
	unsigned long i;

	for (i = 0; i < T->nthreads; i++) {
		struct sk_tort_thread *t = &T->threads[i];
		unsigned long k = i;

		t->T = T;
		t->st = &t->own;
		if (k < cfg->readers) {
			t->role = SK_TORT_READER;
		} else if ((k -= cfg->readers) < cfg->updaters) {
			t->role = SK_TORT_UPDATER;
		} else if ((k -= cfg->updaters) < nextra) {
			t->role = SK_TORT_EXTRA;
		} else if ((k -= nextra) < (cfg->flood ? 1u : 0u)) {
			t->role = SK_TORT_FLOOD;
		} else {
			k -= cfg->flood ? 1 : 0;
			t->role = SK_TORT_CHURN;
		}
		t->index = k;
		seed_rng(&t->rng, cfg->seed, t->role, k);
	}
}

/*
 * Set up a run: the thread array, the primitive, the scenario.  0, or -1
 * after a message on stderr, with everything set up so far released.
 */
int sk_tort_setup(struct sk_tort *T)
{
	const struct sk_tort_config *cfg = T->cfg;
	const char *prefix = T->prefix;
	unsigned long nextra;
	int err;

	sk_tort_fault_arm(cfg, 1);
	nextra = T->scen->nextra ? T->scen->nextra(T) : 0;
	T->nthreads = cfg->readers + cfg->updaters + nextra +
		      (cfg->flood ? 1 : 0) +
		      (cfg->churn ? TORT_CHURN_SPAWNERS : 0);
	T->threads = sk_tort_calloc(T->nthreads, sizeof(*T->threads));
	if (!T->threads) {
		fprintf(stderr,
			"scalekit torture: %sout of memory for %lu threads\n",
			prefix, T->nthreads);
		goto fail;
	}
	err = tort_ops_init(T);
	if (err) {
		fprintf(stderr,
			"scalekit torture: %s%s: cannot initialize: %s\n",
			prefix, T->ops->name, strerror(-err));
		goto free_threads;
	}
	err = T->scen->setup ? T->scen->setup(T) : 0;
	if (err) {
		fprintf(stderr, "scalekit torture: %s%s: cannot set up: %s\n",
			prefix, T->scen->name, strerror(-err));
		goto cleanup_ops;
	}
	tort_init_threads(T, nextra);
	sk_tort_fault_arm(cfg, 0);
	return 0;

cleanup_ops:
	sk_tort_ops_cleanup(T);
free_threads:
	free(T->threads);
	T->threads = NULL;
fail:
	T->nthreads = 0;
	sk_tort_fault_arm(cfg, 0);
	return -1;
}

