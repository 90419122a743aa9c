/* SPDX-License-Identifier: MIT */
/*
 * `scalekit torture`: a torture test in the spirit of the kernel's
 * rcutorture.  This file holds the command line, the threads (readers,
 * updaters, helpers, churn, flood), stutter, the --fork child, the monitor
 * (progress lines, forward progress, memory bound) and the report.  The
 * primitives are in torture_ops.c, the scenarios in torture_pipe.c,
 * torture_list.c and torture_rhash.c; torture_core.h ties them together.
 */
#define _GNU_SOURCE
#include "tool.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "scalekit/barrier.h"
#include "torture_core.h"

/*
 * Hidden in the library (src/internal/rcu.h); the tool links it
 * statically.  --busted-qsbr and --busted-handshake switch it on.
 */
enum { SK__RCU_BUSTED_QSBR_ONLY = 1, SK__RCU_BUSTED_HANDSHAKE = 2 };
void sk__rcu_set_busted(int mode);
struct sk__rcu_gp_kinds {
	unsigned long handshake, heavy, qsbr_only;
};
void sk__rcu_get_gp_kinds(struct sk__rcu_gp_kinds *k);

#define CMD "torture"

/* Limits of the options: generous, yet small enough to catch typos. */
#define TORT_MAX_DURATION (366UL * 24 * 3600)
#define TORT_MAX_READERS 1024
#define TORT_MAX_UPDATERS 256
#define TORT_DEFAULT_DURATION 10
#define TORT_DEFAULT_UPDATERS 2
#define TORT_DEFAULT_NESTING 3
#define TORT_DEFAULT_RSS_MIB 1024
#define TORT_DEFAULT_STALL_S 10

/* Progress line period; stutter: run, then pause. */
#define TORT_PROGRESS_NS (3ULL * 1000000000)
#define TORT_STUTTER_RUN_NS (2000ULL * 1000000)
#define TORT_STUTTER_PAUSE_NS (500ULL * 1000000)
/* Monitor tick; RSS and grace-period samples. */
#define TORT_TICK_US 20000
/* Short-lived readers started at once with --churn. */
#define TORT_CHURN_SPAWNERS 2
/* The --fork child: its duration, and how long the parent waits. */
#define TORT_CHILD_DURATION 1
#define TORT_CHILD_DEADLINE_S 60
/* After stop: threads must be joined and finish() done within this. */
#define TORT_STOP_DEADLINE_S 180
/*
 * ThreadSanitizer dies when the child of a multithreaded fork() starts a
 * thread ("not supported"), so --fork is skipped, with a note, under it.
 */
#ifdef SK_TSAN
#define SK_TORT_NO_FORK 1
#else
#define SK_TORT_NO_FORK 0
#endif
/* Error messages printed before the rest are only counted. */
#define TORT_MAX_PRINTED 10

__thread struct sk_tort_thread *sk_tort_self;

/* ---- modes --------------------------------------------------------------- */

struct tort_mode {
	const char *name;
	const struct sk_tort_scenario *scen;
	const struct sk_tort_ops *ops; /* default readers / grace periods */
	const char *summary;
};

static const struct tort_mode tort_modes[] = {
	{ "rcu", &sk_tort_pipe_scenario, &sk_tort_rcu_ops,
	  "pipe test, general RCU readers" },
	{ "qsbr", &sk_tort_pipe_scenario, &sk_tort_qsbr_ops,
	  "pipe test, QSBR readers (and QSBR updaters)" },
	{ "mixed", &sk_tort_pipe_scenario, &sk_tort_mixed_ops,
	  "pipe test, half general, half QSBR readers" },
	{ "srcu", &sk_tort_pipe_scenario, &sk_tort_srcu_ops,
	  "pipe test, SRCU readers (sleep with --sleep, hand-off)" },
	{ "list", &sk_tort_list_scenario, &sk_tort_rcu_ops,
	  "sk_list: sorted-list invariants against a model" },
	{ "rhash", &sk_tort_rhash_scenario, &sk_tort_rcu_ops,
	  "sk_rhash: stable keys, model, resizer, --fault-rate" },
};

#define TORT_NMODES ((int)(sizeof(tort_modes) / sizeof(tort_modes[0])))

/* Reader flavors for list and rhash (--flavor). */
static const struct sk_tort_ops *const tort_flavors[] = {
	&sk_tort_rcu_ops,
	&sk_tort_qsbr_ops,
	&sk_tort_mixed_ops,
	&sk_tort_srcu_ops,
};

#define TORT_NFLAVORS ((int)(sizeof(tort_flavors) / sizeof(tort_flavors[0])))

static void usage(FILE *f)
{
	int i;

	fprintf(f,
		"usage: scalekit torture MODE [--duration S] [--readers N] "
		"[--updaters N]\n"
		"              [--seed X] [--gp LIST] [--nesting D] [--sleep] "
		"[--churn] [--fork]\n"
		"              [--flood] [--stutter] [--cb-pcpu] [--busted] "
		"[--fault-rate P] [--flavor F]\n"
		"              [--rss-limit MIB] [--stall S]\n"
		"\n"
		"Torture-test a scalekit primitive, in the spirit of the "
		"kernel's rcutorture:\nreaders check what they see while "
		"updaters replace it and wait for grace\nperiods.  Prints "
		"histograms and SUCCESS or FAILURE.\n"
		"\n"
		"Modes:\n");
	for (i = 0; i < TORT_NMODES; i++)
		fprintf(f, "  %-6s %s\n", tort_modes[i].name,
			tort_modes[i].summary);
	fprintf(f, "  %-6s %s\n", "locks",
		"mutual exclusion of every lock (own options: "
		"torture locks --help)");
	fprintf(f,
		"\n"
		"Options:\n"
		"  --duration S    run for S seconds (1..%lu, default %d)\n"
		"  --readers N     reader threads (1..%d, default: CPUs, at "
		"least 2)\n"
		"  --updaters N    updater threads (1..%d, default %d)\n"
		"  --seed X        seed of every random choice (decimal or "
		"0x hex); printed\n"
		"                  at start, pass it again to replay a run\n"
		"  --gp LIST       grace-period primitives updaters pick from "
		"at random,\n"
		"                  comma-separated: sync,exp,cb,poll,cond "
		"(default: all that\n"
		"                  the mode offers; srcu has no cond)\n"
		"  --nesting D     nest read sections up to D deep (0..%d, "
		"default %d)\n"
		"  --sleep         readers sleep (usleep) inside some "
		"sections\n"
		"  --churn         also create and end short-lived reader "
		"threads nonstop\n"
		"  --fork          fork mid-run; the child runs its own %d s "
		"torture and its\n"
		"                  verdict counts\n"
		"  --flood         a thread floods callbacks; fail if "
		"resident memory passes\n"
		"                  --rss-limit or grace periods stop "
		"completing\n"
		"  --stutter       pause every thread 0.5 s out of every "
		"2.5 s\n"
		"  --cb-pcpu       callbacks on per-CPU workers "
		"(sk_rcu_cb_workers_create),\n"
		"                  destroyed and created again every "
		"second\n"
		"  --busted        grace periods that do not wait (with "
		"--cb-pcpu: per-CPU\n"
		"                  workers that do not wait): the run "
		"must report FAILURE\n"
		"                  (proves the detector works)\n"
		"  --busted-qsbr   rcu, qsbr, mixed: grace periods with no "
		"general reader\n"
		"                  do not wait for QSBR readers (must FAIL)\n"
		"  --busted-handshake\n"
		"                  rcu, mixed: a handshake that times out skips "
		"membarrier(2)\n"
		"                  and the scan (must FAIL)\n"
		"  --fault-rate P  rhash: make a fraction P (0..1) of the "
		"table's allocations\n"
		"                  fail\n"
		"  --in-section    rhash: every update runs inside a read "
		"section, while\n"
		"                  explicit and background resizes run\n"
		"  --flavor F      list, rhash: readers and grace periods of "
		"rcu (default),\n"
		"                  qsbr, mixed or srcu (list only)\n"
		"  --rss-limit MIB fail when resident memory exceeds MIB "
		"(default %d)\n"
		"  --stall S       fail when no grace period completes for "
		"S s (default %d)\n"
		"  -h, --help      show this help\n"
		"\n"
		"Progress lines go to stderr every few seconds, the report "
		"to stdout.  Exit\nstatus: 0 SUCCESS, 1 FAILURE, 2 bad "
		"command line.  See docs/torture.md.\n",
		TORT_MAX_DURATION, TORT_DEFAULT_DURATION, TORT_MAX_READERS,
		TORT_MAX_UPDATERS, TORT_DEFAULT_UPDATERS, SK_TORT_MAX_NEST,
		TORT_DEFAULT_NESTING, TORT_CHILD_DURATION, TORT_DEFAULT_RSS_MIB,
		TORT_DEFAULT_STALL_S);
}

/* ---- small helpers shared with the scenarios ----------------------------- */

uint64_t sk_tort_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sk_tort_spin(struct sk_tort_rng *rng, unsigned long max)
{
	unsigned long n = sk_tort_below(rng, max + 1);

	while (n--)
		sk_cpu_relax();
}

static const char *role_name(enum sk_tort_role r)
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
			T->prefix, role_name(t->role), t->index, msg);
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
 * Written only by the main thread, before the run's threads start (their
 * pthread_create() orders the writes before their reads).
 */
static struct {
	unsigned long fail_at; /* this setup allocation fails; 0: none */
	unsigned long count;   /* setup allocations so far */
	int armed;	       /* the top-level run's setup is running */
} tort_fault;

int sk_tort_setup_fault(void)
{
	if (!tort_fault.armed || ++tort_fault.count != tort_fault.fail_at)
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
static void tort_fault_arm(const struct sk_tort_config *cfg, int on)
{
	if (!tort_fault.fail_at || cfg->is_child)
		return;
	tort_fault.armed = on;
	if (!on && tort_fault.count < tort_fault.fail_at)
		fprintf(stderr,
			"scalekit torture: SCALEKIT_TORTURE_FAIL_ALLOC=%lu: "
			"the setup made only %lu allocations; none failed\n",
			tort_fault.fail_at, tort_fault.count);
}

/* Read SCALEKIT_TORTURE_FAIL_ALLOC: 0, or -1 when it is not a number. */
static int tort_fault_from_env(void)
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

	snprintf(name, sizeof(name), "tort-%.4s%lu", role_name(t->role),
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

/*
 * --cb-pcpu: per-CPU callback workers from the start of the run, destroyed
 * and created again every TORT_CB_PCPU_NS (callbacks queued meanwhile
 * move between the per-CPU workers and the default one), destroyed at
 * the end before the final barrier.  With --busted the per-CPU workers
 * skip the grace period (the library's test twin, declared here: the
 * static library has it, the shared one does not export it).
 */
#define TORT_CB_PCPU_NS 1000000000ULL
void sk__rcu_cb_set_busted(int what);

static void cb_pcpu_cycle(struct sk_tort *T, int create, int destroy)
{
	int err;

	if (destroy && (err = sk_rcu_cb_workers_destroy()) != 0)
		sk_tort_error(T, NULL, "sk_rcu_cb_workers_destroy: %s",
			      strerror(-err));
	if (create && (err = sk_rcu_cb_workers_create(0)) != 0)
		sk_tort_error(T, NULL, "sk_rcu_cb_workers_create: %s",
			      strerror(-err));
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
			err = T->ops->call(&f->rh, flood_done);
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

/* ---- monitor ------------------------------------------------------------- */

static unsigned long rss_kib(void)
{
	unsigned long size, res;
	FILE *f = fopen("/proc/self/statm", "r");
	int ok;

	if (!f)
		return 0;
	ok = fscanf(f, "%lu %lu", &size, &res) == 2;
	fclose(f);
	return ok ? res * (unsigned long)(sysconf(_SC_PAGESIZE) / 1024) : 0;
}

static unsigned long peak_rss_kib(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return (unsigned long)ru.ru_maxrss;
}

/* Watchdog for the end of the run: nothing may hang forever. */
struct tort_watchdog {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	int done;
	const char *prefix;
	int deadline_s;
	FILE *out; /* where the verdict goes */
};

static void *watchdog_main(void *arg)
{
	struct tort_watchdog *w = arg;
	struct timespec ts;
	int timed_out = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += w->deadline_s;
	pthread_mutex_lock(&w->lock);
	while (!w->done && !timed_out)
		timed_out = pthread_cond_timedwait(&w->cv, &w->lock, &ts) ==
			    ETIMEDOUT;
	pthread_mutex_unlock(&w->lock);
	if (timed_out && !w->done) {
		fprintf(stderr,
			"scalekit torture: %sERROR: the threads did not stop "
			"within %d s of the end of the run: a grace period, "
			"callback or poll never completed\n",
			w->prefix, w->deadline_s);
		fflush(w->out);
		fprintf(w->out, "%sFAILURE\n", w->prefix);
		fflush(w->out);
		_exit(SK_TOOL_EXIT_FAIL);
	}
	return NULL;
}

static int tort_run_checked(const struct sk_tort_config *cfg,
			    const struct tort_mode *mode,
			    const struct sk_tort_ops *ops, const char *prefix);

/* --fork: the child's whole life. */
static void fork_child(const struct sk_tort_config *cfg,
		       const struct tort_mode *mode,
		       const struct sk_tort_ops *ops)
{
	struct sk_tort_config c = *cfg;
	int rc;

	c.duration_s = TORT_CHILD_DURATION;
	c.fork = c.flood = c.churn = c.stutter = 0;
	c.is_child = 1;
	c.seed = cfg->seed ^ 0xc41dc41dc41dc41dULL;
	if (c.readers > 4)
		c.readers = 4;
	if (c.updaters > 2)
		c.updaters = 2;
	rc = tort_run_checked(&c, mode, ops, "fork child: ");
	fflush(stderr);
	_exit(rc);
}

static int start_thread(struct sk_tort *T, struct sk_tort_thread *t,
			void *(*fn)(void *))
{
	int err = pthread_create(&t->tid, NULL, fn, t);

	if (err) {
		sk_tort_error(T, NULL, "cannot create a %s thread: %s",
			      role_name(t->role), strerror(err));
		return -1;
	}
	t->started = 1;
	return 0;
}

static void print_progress(struct sk_tort *T, const char *name, double elapsed,
			   double dt, const struct sk_tort_stats *now,
			   const struct sk_tort_stats *prev, unsigned long gps,
			   unsigned long prev_gps, unsigned long rss)
{
	char extra[160] = "";

	if (T->scen->progress) {
		/* It may look at RCU-protected data. */
		sk_rcu_read_lock();
		T->scen->progress(T, extra, sizeof(extra));
		sk_rcu_read_unlock();
	}
	fprintf(stderr,
		"scalekit torture: %s%s: %5.1f s: %.0f reads/s, %.0f "
		"updates/s, %.0f GPs/s, max pipe %lu, errors %lu, RSS %lu "
		"MiB%s%s\n",
		T->prefix, name, elapsed, (now->reads - prev->reads) / dt,
		(now->updates - prev->updates) / dt, (gps - prev_gps) / dt,
		now->max_pipe, now->errors + T->global_errors, rss / 1024,
		extra[0] ? ", " : "", extra);
}

/* ---- setup --------------------------------------------------------------- */

/* Primitives initialized and not cleaned up yet (see tort_run_checked()). */
static long tort_ops_live;

static int tort_ops_init(struct sk_tort *T)
{
	int err = T->ops->init ? T->ops->init() : 0;

	if (!err)
		tort_ops_live++;
	return err;
}

static void tort_ops_cleanup(struct sk_tort *T)
{
	if (T->ops->cleanup)
		T->ops->cleanup();
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
static int tort_setup(struct sk_tort *T)
{
	const struct sk_tort_config *cfg = T->cfg;
	const char *prefix = T->prefix;
	unsigned long nextra;
	int err;

	tort_fault_arm(cfg, 1);
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
	tort_fault_arm(cfg, 0);
	return 0;

cleanup_ops:
	tort_ops_cleanup(T);
free_threads:
	free(T->threads);
	T->threads = NULL;
fail:
	T->nthreads = 0;
	tort_fault_arm(cfg, 0);
	return -1;
}

/* ---- the run ------------------------------------------------------------- */

static int tort_run(const struct sk_tort_config *cfg,
		    const struct tort_mode *mode,
		    const struct sk_tort_ops *ops_in, const char *prefix)
{
	struct sk_tort T_, *T = &T_;
	struct sk_tort_ops busted_ops;
	const struct sk_tort_ops *ops = ops_in;
	const struct sk_tort_scenario *scen = mode->scen;
	FILE *out = cfg->is_child ? stderr : stdout;
	unsigned long i, nthreads, peak_rss = 0, rss_over = 0;
	unsigned long child_errors = 0;
	struct sk_tort_stats sum, prev_sum;
	struct sk_tort_gp_stats gs0, gs, gs_end;
	struct sk__rcu_gp_kinds k0, k1;
	struct tort_watchdog wd = { .lock = PTHREAD_MUTEX_INITIALIZER,
				    .cv = PTHREAD_COND_INITIALIZER };
	pthread_t wd_tid;
	uint64_t start, now, end, next_progress, last_gp_ns, prev_progress_ns;
	uint64_t stutter_next = 0, next_sample = 0, fork_at = UINT64_MAX;
	uint64_t cb_pcpu_next;
	unsigned long last_gps, prev_progress_gps, stall_reported = 0;
	unsigned long errors, cb_invoked;
	pid_t child = 0;
	int child_status = 0, child_done = 0, paused = 0, rc;
	double secs;

	if (cfg->busted && cfg->cb_pcpu) {
		/* The real calls; busted for the pools (quarantine, not
		 * free) and the races the checks expect. */
		busted_ops = *ops_in;
		busted_ops.busted = 1;
		ops = &busted_ops;
		sk__rcu_cb_set_busted(2); /* SK__CB_BUSTED_NO_GP */
	} else if (cfg->busted) {
		sk_tort_make_busted(ops_in, &busted_ops);
		ops = &busted_ops;
	} else if (cfg->busted_qsbr || cfg->busted_hs) {
		/* Real grace periods, broken inside the library. */
		busted_ops = *ops_in;
		busted_ops.busted = 1;
		ops = &busted_ops;
		sk__rcu_set_busted(cfg->busted_qsbr ? SK__RCU_BUSTED_QSBR_ONLY
						    : SK__RCU_BUSTED_HANDSHAKE);
	}
	memset(T, 0, sizeof(*T));
	T->cfg = cfg;
	T->ops = ops;
	T->scen = scen;
	T->prefix = prefix;
	pthread_mutex_init(&T->err_lock, NULL);

	fprintf(out,
		"%sscalekit torture %s: %s; %s; %lu s, %lu readers, %lu "
		"updaters, nesting %lu, gp",
		prefix, mode->name, scen->name, ops->desc, cfg->duration_s,
		cfg->readers, cfg->updaters, cfg->nesting);
	for (i = 0; i < SK_TORT_GP_NR; i++)
		if (cfg->gp_mask & (1u << i))
			fprintf(out, "%s%s",
				(cfg->gp_mask & ((1u << i) - 1)) ? "," : " ",
				sk_tort_gp_names[i]);
	fprintf(out, "%s%s%s%s%s%s%s\n", cfg->sleep ? ", --sleep" : "",
		cfg->churn ? ", --churn" : "", cfg->fork ? ", --fork" : "",
		cfg->flood ? ", --flood" : "",
		cfg->stutter ? ", --stutter" : "",
		cfg->cb_pcpu ? ", --cb-pcpu" : "",
		ops->busted ? ", --busted (must FAIL)" : "");
	if (cfg->fault_rate > 0)
		fprintf(out, "%sfault rate %g of the table's allocations\n",
			prefix, cfg->fault_rate);
	fprintf(out, "%sseed %llu (--seed %llu to replay)\n", prefix,
		(unsigned long long)cfg->seed, (unsigned long long)cfg->seed);
	fflush(out);

	if (tort_setup(T) != 0) {
		fprintf(out, "%sFAILURE\n", prefix);
		fflush(out);
		pthread_mutex_destroy(&T->err_lock);
		return SK_TOOL_EXIT_FAIL;
	}
	nthreads = T->nthreads;

	if (cfg->cb_pcpu)
		cb_pcpu_cycle(T, 1, 0);
	ops->stats(&gs0);
	sk__rcu_get_gp_kinds(&k0);
	start = sk_tort_now_ns();
	for (i = 0; i < nthreads; i++) {
		struct sk_tort_thread *t = &T->threads[i];
		void *(*fn)(void *) = t->role == SK_TORT_READER ? reader_main
				      : t->role == SK_TORT_UPDATER
					      ? updater_main
				      : t->role == SK_TORT_EXTRA ? extra_main
				      : t->role == SK_TORT_FLOOD ? flood_main
								 : churn_main;

		if (start_thread(T, t, fn) != 0)
			break;
	}

	/* The monitor: this thread. */
	end = start + cfg->duration_s * 1000000000ULL;
	next_progress = start + TORT_PROGRESS_NS;
	prev_progress_ns = start;
	last_gp_ns = start;
	last_gps = gs0.gps;
	prev_progress_gps = gs0.gps;
	memset(&prev_sum, 0, sizeof(prev_sum));
	if (cfg->stutter)
		stutter_next = start + TORT_STUTTER_RUN_NS;
	if (cfg->fork)
		fork_at = start + cfg->duration_s * 1000000000ULL / 2;
	cb_pcpu_next = start + TORT_CB_PCPU_NS;
	for (now = start; now < end && !sk_tort_stopping(T);
	     now = sk_tort_now_ns()) {
		usleep(TORT_TICK_US);
		now = sk_tort_now_ns();
		if (cfg->stutter && now >= stutter_next) {
			paused = !paused;
			sk_atomic_store_relaxed(&T->paused, paused);
			stutter_next = now + (paused ? TORT_STUTTER_PAUSE_NS
						     : TORT_STUTTER_RUN_NS);
			if (!paused)
				last_gp_ns = now; /* the pause is no stall */
		}
		if (cfg->cb_pcpu && now >= cb_pcpu_next) {
			cb_pcpu_next = now + TORT_CB_PCPU_NS;
			cb_pcpu_cycle(T, 1, 1);
		}
		if (now >= next_sample) {
			unsigned long r = rss_kib();

			next_sample = now + 100000000ULL;
			if (r > peak_rss)
				peak_rss = r;
			if (r / 1024 > cfg->rss_limit_mib && !rss_over++)
				sk_tort_error(T, NULL,
					      "resident memory %lu MiB is "
					      "above the bound of %lu MiB "
					      "(--rss-limit)",
					      r / 1024, cfg->rss_limit_mib);
			ops->stats(&gs);
			if (gs.gps != last_gps || paused) {
				last_gps = gs.gps;
				last_gp_ns = now;
				stall_reported = 0;
			} else if (now - last_gp_ns >
					   cfg->stall_s * 1000000000ULL &&
				   !stall_reported) {
				stall_reported = 1;
				sk_tort_error(T, NULL,
					      "no grace period completed for "
					      "%lu s (--stall): forward "
					      "progress lost",
					      cfg->stall_s);
			}
		}
		if (now >= fork_at && SK_TORT_NO_FORK) {
			fork_at = UINT64_MAX;
			fprintf(stderr,
				"scalekit torture: %s--fork: not run under "
				"ThreadSanitizer, which cannot start threads "
				"in the child of a multithreaded process\n",
				prefix);
		}
		if (now >= fork_at) {
			fork_at = UINT64_MAX;
			fflush(stdout);
			fflush(stderr);
			child = fork();
			if (child == 0)
				fork_child(cfg, mode, ops_in);
			if (child < 0) {
				sk_tort_error(T, NULL, "fork: %s",
					      strerror(errno));
				child = 0;
			} else {
				fprintf(stderr,
					"scalekit torture: %sforked child "
					"%ld for a %d s torture\n",
					prefix, (long)child,
					TORT_CHILD_DURATION);
			}
		}
		if (child && !child_done &&
		    waitpid(child, &child_status, WNOHANG) == child)
			child_done = 1;
		if (now >= next_progress) {
			sk_tort_sum_stats(T, &sum);
			ops->stats(&gs);
			print_progress(T, mode->name, (now - start) / 1e9,
				       (now - prev_progress_ns) / 1e9, &sum,
				       &prev_sum, gs.gps, prev_progress_gps,
				       rss_kib());
			prev_sum = sum;
			prev_progress_gps = gs.gps;
			prev_progress_ns = now;
			next_progress = now + TORT_PROGRESS_NS;
		}
	}
	secs = (sk_tort_now_ns() - start) / 1e9;

	/* Stop everything; nothing may hang forever from here on. */
	wd.prefix = prefix;
	wd.out = out;
	/* The child reports its own hang before the parent kills it. */
	wd.deadline_s = cfg->is_child ? TORT_CHILD_DEADLINE_S / 2
				      : TORT_STOP_DEADLINE_S;
	pthread_create(&wd_tid, NULL, watchdog_main, &wd);
	sk_atomic_store_relaxed(&T->paused, 0);
	sk_atomic_store_release(&T->stop, 1);
	for (i = 0; i < nthreads; i++)
		if (T->threads[i].started)
			pthread_join(T->threads[i].tid, NULL);
	if (child && !child_done) {
		uint64_t deadline = sk_tort_now_ns() +
				    TORT_CHILD_DEADLINE_S * 1000000000ULL;

		while (!child_done && sk_tort_now_ns() < deadline) {
			if (waitpid(child, &child_status, WNOHANG) == child)
				child_done = 1;
			else
				usleep(10000);
		}
		if (!child_done) {
			kill(child, SIGKILL);
			waitpid(child, &child_status, 0);
			child_done = 1;
			sk_tort_error(T, NULL,
				      "the fork child did not finish within "
				      "%d s: killed",
				      TORT_CHILD_DEADLINE_S);
			child_errors++;
		}
	}
	if (child && !child_errors) {
		if (WIFEXITED(child_status) &&
		    WEXITSTATUS(child_status) == SK_TOOL_EXIT_OK) {
			fprintf(stderr,
				"scalekit torture: %sfork child %ld: SUCCESS\n",
				prefix, (long)child);
		} else {
			sk_tort_error(T, NULL, "fork child %ld failed (%s %d)",
				      (long)child,
				      WIFEXITED(child_status) ? "exit status"
							      : "signal",
				      WIFEXITED(child_status)
					      ? WEXITSTATUS(child_status)
					      : WTERMSIG(child_status));
		}
	}
	if (cfg->cb_pcpu)
		cb_pcpu_cycle(T, 0, 1); /* what is left goes to the default */
	/* Flood callbacks and the scenario's own. */
	if (ops->cb_barrier)
		ops->cb_barrier();
	while (sk_atomic_load_acquire(&T->cb_pending) && ops->cb_barrier) {
		ops->cb_barrier();
		usleep(1000);
	}
	if (scen->finish)
		scen->finish(T);
	if (ops->cb_barrier)
		ops->cb_barrier();
	ops->stats(&gs_end);
	tort_ops_cleanup(T);
	pthread_mutex_lock(&wd.lock);
	wd.done = 1;
	pthread_cond_signal(&wd.cv);
	pthread_mutex_unlock(&wd.lock);
	pthread_join(wd_tid, NULL);

	/* The report. */
	sk_tort_sum_stats(T, &sum);
	if (peak_rss_kib() > peak_rss)
		peak_rss = peak_rss_kib();
	if (sum.reads == 0)
		sk_tort_error(T, NULL, "no read section completed");
	if (sum.updates == 0)
		sk_tort_error(T, NULL, "no update completed");
	if (scen->report)
		scen->report(T, out);
	cb_invoked = sk_atomic_load_relaxed(&T->cb_invoked);
	fprintf(out,
		"%sreads: %lu (%.0f/s)  updates: %lu (%.0f/s)  grace "
		"periods: %lu (%.0f/s)\n",
		prefix, sum.reads, sum.reads / secs, sum.updates,
		sum.updates / secs, gs_end.gps - gs0.gps,
		(gs_end.gps - gs0.gps) / secs);
	fprintf(out, "%scallbacks: %lu queued, %lu invoked by the tool", prefix,
		sum.cb_queued + sk_atomic_load_relaxed(&T->cb_requeued),
		cb_invoked);
	if (gs_end.have_cb)
		fprintf(out, "; library: %lu queued, %lu invoked",
			gs_end.cb_queued - gs0.cb_queued,
			gs_end.cb_invoked - gs0.cb_invoked);
	if (gs_end.have_cb &&
	    gs_end.exp_handshakes + gs_end.exp_fallbacks !=
		    gs0.exp_handshakes + gs0.exp_fallbacks)
		fprintf(out, "; expedited first barriers: %lu handshakes, %lu "
			     "membarriers",
			gs_end.exp_handshakes - gs0.exp_handshakes,
			gs_end.exp_fallbacks - gs0.exp_fallbacks);
	sk__rcu_get_gp_kinds(&k1);
	if (gs_end.have_cb)
		fprintf(out, "\n%sRCU first barriers: %lu handshakes, %lu "
			     "membarriers, %lu QSBR-only",
			prefix, k1.handshake - k0.handshake,
			k1.heavy - k0.heavy, k1.qsbr_only - k0.qsbr_only);
	fprintf(out, "\n%supdates by grace-period type:", prefix);
	for (i = 0; i < SK_TORT_GP_NR; i++)
		if (cfg->gp_mask & (1u << i))
			fprintf(out, " %s %lu", sk_tort_gp_names[i],
				sum.gp_used[i]);
	fprintf(out, "\n");
	if (cfg->churn)
		fprintf(out, "%sshort-lived reader threads: %lu\n", prefix,
			sum.churned);
	errors = sum.errors + T->global_errors;
	fprintf(out, "%speak RSS: %lu MiB (bound %lu MiB)\n", prefix,
		peak_rss / 1024, cfg->rss_limit_mib);
	fprintf(out, "%smax pipe count: %lu  errors: %lu%s\n", prefix,
		sum.max_pipe, errors,
		T->suppressed ? " (only the first ones printed)" : "");
	sk__rcu_set_busted(0);
	if (ops->busted)
		fprintf(out, "%s--busted: grace periods did not wait; %s\n",
			prefix,
			errors ? "the detector caught it, as it must"
			       : "NOT DETECTED: the detector is blind");
	rc = errors ? SK_TOOL_EXIT_FAIL : SK_TOOL_EXIT_OK;
	fprintf(out, "%s%s\n", prefix, rc ? "FAILURE" : "SUCCESS");
	fflush(out);
	if (scen->destroy)
		scen->destroy(T);
	free(T->threads);
	pthread_mutex_destroy(&T->err_lock);
	return rc;
}

/*
 * tort_run(), then a check that the run cleaned up, exactly once, the
 * primitive it initialized: on every path, a failed setup included.
 */
static int tort_run_checked(const struct sk_tort_config *cfg,
			    const struct tort_mode *mode,
			    const struct sk_tort_ops *ops, const char *prefix)
{
	long live = tort_ops_live;
	int rc = tort_run(cfg, mode, ops, prefix);

	if (tort_ops_live != live) {
		fprintf(stderr,
			"scalekit torture: %sinternal error: %s: the run "
			"made %ld init() calls without their cleanup() (a "
			"negative count: cleanup() without init())\n",
			prefix, ops->name, tort_ops_live - live);
		rc = SK_TOOL_EXIT_FAIL;
	}
	return rc;
}

/* ---- command line -------------------------------------------------------- */

static int bad_number(const char *opt, unsigned long min, unsigned long max,
		      const char *val)
{
	return sk_tool_usage_error(CMD,
				   "%s wants a whole number from %lu to %lu, "
				   "not '%s'",
				   opt, min, max, val);
}

static int parse_ulong(const char *opt, const char *val, unsigned long min,
		       unsigned long max, unsigned long *out)
{
	long v;

	if (sk_tool_parse_long(val, (long)min, (long)max, &v) != 0)
		return bad_number(opt, min, max, val);
	*out = (unsigned long)v;
	return 0;
}

/* Decimal or 0x hexadecimal, 64 bits, nothing else. */
static int parse_seed(const char *val, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = val;
	int hex = 0;

	if (!*p)
		return -1;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		hex = 1;
		p += 2;
		if (!*p)
			return -1;
	}
	for (; *p; p++) {
		int d;

		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (hex && *p >= 'a' && *p <= 'f')
			d = *p - 'a' + 10;
		else if (hex && *p >= 'A' && *p <= 'F')
			d = *p - 'A' + 10;
		else
			return -1;
		if (hex) {
			if (v >> 60)
				return -1;
			v = v * 16 + (uint64_t)d;
		} else {
			if (v > (UINT64_MAX - (uint64_t)d) / 10)
				return -1;
			v = v * 10 + (uint64_t)d;
		}
	}
	*out = v;
	return 0;
}

/* "0.01", "1", ".5", "1e-3": a fraction from 0 to 1. */
static int parse_fraction(const char *val, double *out)
{
	char *end;
	double v;

	if (!*val || !((*val >= '0' && *val <= '9') || *val == '.'))
		return -1;
	errno = 0;
	v = strtod(val, &end);
	if (errno || *end || !isfinite(v) || v < 0 || v > 1)
		return -1;
	*out = v;
	return 0;
}

static int parse_gp(const char *val, unsigned int *mask)
{
	char buf[128], *tok, *save = NULL;
	int g;

	if (strlen(val) >= sizeof(buf) || !*val)
		return sk_tool_usage_error(CMD,
					   "--gp wants a comma-separated list "
					   "of sync, exp, cb, poll, cond; not "
					   "'%s'",
					   val);
	strcpy(buf, val);
	*mask = 0;
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (g = 0; g < SK_TORT_GP_NR; g++)
			if (strcmp(tok, sk_tort_gp_names[g]) == 0)
				break;
		if (g == SK_TORT_GP_NR)
			return sk_tool_usage_error(
				CMD,
				"unknown grace-period type '%s' in --gp "
				"(types: sync, exp, cb, poll, cond)",
				tok);
		*mask |= 1u << g;
	}
	if (!*mask || val[strlen(val) - 1] == ',' || val[0] == ',' ||
	    strstr(val, ",,"))
		return sk_tool_usage_error(CMD,
					   "--gp wants a comma-separated list "
					   "of sync, exp, cb, poll, cond; not "
					   "'%s'",
					   val);
	return 0;
}

static unsigned long default_readers(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 2 ? 2 : (unsigned long)(n > 64 ? 64 : n);
}

static uint64_t default_seed(void)
{
	struct sk_tort_rng r;

	r.s = sk_tort_now_ns() ^ ((uint64_t)getpid() << 32);
	/* Keep it short enough to type. */
	return sk_tort_rand(&r) % 1000000000ULL;
}

/* Options without a value: each sets one int flag of the config. */
static const struct tort_flag_opt {
	const char *name;
	size_t off; /* of the int in struct sk_tort_config */
} tort_flag_opts[] = {
	{ "--sleep", offsetof(struct sk_tort_config, sleep) },
	{ "--churn", offsetof(struct sk_tort_config, churn) },
	{ "--fork", offsetof(struct sk_tort_config, fork) },
	{ "--flood", offsetof(struct sk_tort_config, flood) },
	{ "--stutter", offsetof(struct sk_tort_config, stutter) },
	{ "--busted", offsetof(struct sk_tort_config, busted) },
	{ "--busted-qsbr", offsetof(struct sk_tort_config, busted_qsbr) },
	{ "--busted-handshake", offsetof(struct sk_tort_config, busted_hs) },
	{ "--cb-pcpu", offsetof(struct sk_tort_config, cb_pcpu) },
	{ "--in-section", offsetof(struct sk_tort_config, in_section) },
};

/* Options with a whole number from min to max, in the order tried. */
static const struct tort_num_opt {
	const char *name;
	unsigned long min, max;
	size_t off; /* of the unsigned long in struct sk_tort_config */
} tort_num_opts[] = {
	{ "--duration", 1, TORT_MAX_DURATION,
	  offsetof(struct sk_tort_config, duration_s) },
	{ "--readers", 1, TORT_MAX_READERS,
	  offsetof(struct sk_tort_config, readers) },
	{ "--updaters", 1, TORT_MAX_UPDATERS,
	  offsetof(struct sk_tort_config, updaters) },
	{ "--nesting", 0, SK_TORT_MAX_NEST,
	  offsetof(struct sk_tort_config, nesting) },
	{ "--rss-limit", 16, 1UL << 24,
	  offsetof(struct sk_tort_config, rss_limit_mib) },
	{ "--stall", 1, 3600, offsetof(struct sk_tort_config, stall_s) },
};

#define TORT_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Is a a flag option?  If so, set its flag in cfg. */
static int parse_flag_opt(struct sk_tort_config *cfg, const char *a)
{
	size_t k;

	for (k = 0; k < TORT_ARRAY_LEN(tort_flag_opts); k++) {
		if (strcmp(a, tort_flag_opts[k].name) == 0) {
			*(int *)((char *)cfg + tort_flag_opts[k].off) = 1;
			return 1;
		}
	}
	return 0;
}

/*
 * Does argv[*i] set a number option?  1: set in cfg, 0: not one,
 * -1: bad or missing value (message printed).
 */
static int parse_num_opt(struct sk_tort_config *cfg, int argc, char **argv,
			 int *i)
{
	const char *val;
	size_t k;
	int r;

	for (k = 0; k < TORT_ARRAY_LEN(tort_num_opts); k++) {
		const struct tort_num_opt *o = &tort_num_opts[k];

		r = sk_tool_option_value(CMD, argc, argv, i, o->name, &val);
		if (r == 0)
			continue;
		if (r < 0 ||
		    parse_ulong(o->name, val, o->min, o->max,
				(unsigned long *)((char *)cfg + o->off)))
			return -1;
		return 1;
	}
	return 0;
}

/* Does argv[i] set the value option name?  r < 0: its value is missing. */
#define TRY(name) \
	(r = sk_tool_option_value(CMD, argc, argv, &i, name, &val)) != 0

int sk_tool_torture(int argc, char **argv)
{
	struct sk_tort_config cfg = {
		.duration_s = TORT_DEFAULT_DURATION,
		.updaters = TORT_DEFAULT_UPDATERS,
		.nesting = TORT_DEFAULT_NESTING,
		.rss_limit_mib = TORT_DEFAULT_RSS_MIB,
		.stall_s = TORT_DEFAULT_STALL_S,
	};
	const struct tort_mode *mode = NULL;
	const struct sk_tort_ops *ops;
	const char *flavor = NULL, *val, *fault = NULL;
	int i, m, r, have_seed = 0, have_gp = 0, g;

	cfg.readers = default_readers();
	/* The locks mode has a command line of its own. */
	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], "locks") == 0)
			return sk_tort_locks_main(argc, argv);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return SK_TOOL_EXIT_OK;
		}
		if (parse_flag_opt(&cfg, a))
			continue;
		r = parse_num_opt(&cfg, argc, argv, &i);
		if (r < 0)
			return SK_TOOL_EXIT_USAGE;
		if (r > 0)
			continue;
		if (TRY("--seed")) {
			if (r < 0)
				return SK_TOOL_EXIT_USAGE;
			if (parse_seed(val, &cfg.seed) != 0)
				return sk_tool_usage_error(
					CMD,
					"--seed wants a 64-bit number "
					"(decimal or 0x hex), not '%s'",
					val);
			have_seed = 1;
		} else if (TRY("--gp")) {
			if (r < 0 || parse_gp(val, &cfg.gp_mask) != 0)
				return SK_TOOL_EXIT_USAGE;
			have_gp = 1;
		} else if (TRY("--fault-rate")) {
			if (r < 0)
				return SK_TOOL_EXIT_USAGE;
			if (parse_fraction(val, &cfg.fault_rate) != 0)
				return sk_tool_usage_error(
					CMD,
					"--fault-rate wants a fraction from 0 "
					"to 1 (e.g. 0.01), not '%s'",
					val);
			fault = val;
		} else if (TRY("--flavor")) {
			if (r < 0)
				return SK_TOOL_EXIT_USAGE;
			flavor = val;
		} else if (a[0] == '-') {
			return sk_tool_usage_error(CMD, "unknown option '%s'",
						   a);
		} else if (mode) {
			return sk_tool_usage_error(
				CMD, "one mode only: '%s' after '%s'", a,
				mode->name);
		} else {
			for (m = 0; m < TORT_NMODES; m++)
				if (strcmp(a, tort_modes[m].name) == 0)
					mode = &tort_modes[m];
			if (!mode)
				return sk_tool_usage_error(
					CMD,
					"unknown mode '%s' (modes: rcu, qsbr, "
					"mixed, srcu, list, rhash, locks)",
					a);
		}
	}
	if (!mode)
		return sk_tool_usage_error(CMD,
					   "missing mode (modes: rcu, qsbr, "
					   "mixed, srcu, list, rhash, locks)");
	ops = mode->ops;
	if (flavor) {
		if (mode->scen == &sk_tort_pipe_scenario)
			return sk_tool_usage_error(
				CMD,
				"--flavor applies to list and rhash; mode "
				"'%s' is a flavor itself",
				mode->name);
		for (m = 0; m < TORT_NFLAVORS; m++)
			if (strcmp(flavor, tort_flavors[m]->name) == 0)
				ops = tort_flavors[m];
		if (!ops || strcmp(ops->name, flavor) != 0)
			return sk_tool_usage_error(
				CMD,
				"unknown flavor '%s' (flavors: rcu, qsbr, "
				"mixed, srcu)",
				flavor);
		if (mode->scen->needs_global_rcu && !ops->global_rcu)
			return sk_tool_usage_error(
				CMD,
				"--flavor %s: %s needs RCU readers (rcu, "
				"qsbr or mixed)",
				flavor, mode->name);
	}
	if (cfg.in_section && mode->scen != &sk_tort_rhash_scenario)
		return sk_tool_usage_error(CMD,
					   "--in-section applies to rhash "
					   "only, not '%s'",
					   mode->name);
	/* Its sections are sk_rcu_read_lock() ones: general readers. */
	if (cfg.in_section && flavor && strcmp(flavor, "rcu") != 0)
		return sk_tool_usage_error(CMD,
					   "--in-section needs --flavor rcu, "
					   "not '%s'",
					   flavor);
	if (fault && mode->scen != &sk_tort_rhash_scenario)
		return sk_tool_usage_error(CMD,
					   "--fault-rate applies to rhash "
					   "only, not '%s'",
					   mode->name);
	if (have_gp) {
		for (g = 0; g < SK_TORT_GP_NR; g++)
			if ((cfg.gp_mask & (1u << g)) &&
			    !sk_tort_ops_has_gp(ops, g))
				return sk_tool_usage_error(
					CMD,
					"--gp %s: %s has no such grace-period "
					"primitive",
					sk_tort_gp_names[g], ops->name);
	} else {
		for (g = 0; g < SK_TORT_GP_NR; g++)
			if (sk_tort_ops_has_gp(ops, g))
				cfg.gp_mask |= 1u << g;
	}
	if (!have_seed)
		cfg.seed = default_seed();
	cfg.mode = mode->name;
	if (tort_fault_from_env() != 0)
		return sk_tool_usage_error(
			CMD,
			"SCALEKIT_TORTURE_FAIL_ALLOC wants a whole number "
			"from 1, not '%s'",
			getenv("SCALEKIT_TORTURE_FAIL_ALLOC"));
	return tort_run_checked(&cfg, mode, ops, "");
}

#undef TRY
