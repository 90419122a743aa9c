/* SPDX-License-Identifier: MIT */
/*
 * `scalekit torture`: one run, step by step.  The banner, the setup (the
 * thread array, the primitive, the scenario), the threads, the monitor
 * (stutter, --cb-pcpu cycles, progress lines, forward progress, memory
 * bound, the --fork child), the shutdown under a watchdog, the fork
 * child's verdict, the final callback drain and the report.
 */
#define _GNU_SOURCE
#include "tool.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "torture_core.h"

/*
 * The broken modes (--busted-qsbr, --busted-handshake, --busted-quiet,
 * --busted-scan, --busted --cb-pcpu) and the grace-period kinds of the
 * report: the testing build of the library, which the torture tool links.
 */
#include "internal/testing.h"

/* Progress line period; stutter: run, then pause. */
#define TORT_PROGRESS_NS (3ULL * 1000000000)
#define TORT_STUTTER_RUN_NS (2000ULL * 1000000)
#define TORT_STUTTER_PAUSE_NS (500ULL * 1000000)
/* Monitor tick; RSS and grace-period samples. */
#define TORT_TICK_US 20000
#define TORT_SAMPLE_NS 100000000ULL
/* How long the parent waits for the --fork child. */
#define TORT_CHILD_DEADLINE_S 60
/* After stop: threads must be joined and finish() done within this. */
#define TORT_STOP_DEADLINE_S 180
/*
 * ThreadSanitizer dies when the child of a multithreaded fork() starts a
 * thread ("not supported"), so --fork is skipped, with a note, under it.
 */
#ifdef SK__TSAN
#define SK_TORT_NO_FORK 1
#else
#define SK_TORT_NO_FORK 0
#endif


/*
 * --cb-pcpu: per-CPU callback workers from the start of the run, destroyed
 * and created again every TORT_CB_PCPU_NS (callbacks queued meanwhile
 * move between the per-CPU workers and the default one), destroyed at
 * the end before the final barrier.  With --busted the per-CPU workers
 * skip the grace period (the library's test twin, SK__CB_BUSTED_NO_GP).
 */
#define TORT_CB_PCPU_NS 1000000000ULL

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

/* --fork: the child's whole life. */
static void fork_child(const struct sk_tort_config *cfg,
		       const struct sk_tort_mode *mode,
		       const struct sk_tort_ops *ops)
{
	struct sk_tort_config c = *cfg;
	int rc;

	c.duration_s = SK_TORT_CHILD_DURATION;
	c.fork = c.flood = c.churn = c.stutter = 0;
	c.is_child = 1;
	c.seed = cfg->seed ^ 0xc41dc41dc41dc41dULL;
	if (c.readers > 4)
		c.readers = 4;
	if (c.updaters > 2)
		c.updaters = 2;
	rc = sk_tort_run_checked(&c, mode, ops, "fork child: ");
	fflush(stderr);
	_exit(rc);
}

static int start_thread(struct sk_tort *T, struct sk_tort_thread *t,
			void *(*fn)(void *))
{
	int err = pthread_create(&t->tid, NULL, fn, t);

	if (err) {
		sk_tort_error(T, NULL, "cannot create a %s thread: %s",
			      sk_tort_role_name(t->role), strerror(err));
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

/* ---- the run ------------------------------------------------------------- */

/* One run: what its steps share. */
struct tort_run {
	struct sk_tort T;
	struct sk_tort_ops busted_ops; /* T.ops when the run is busted */
	const struct sk_tort_config *cfg;
	const struct sk_tort_mode *mode;
	const struct sk_tort_ops *ops_in; /* as given: the fork child's */
	const char *prefix;
	FILE *out;	/* the report: stdout, stderr in the fork child */
	uint64_t start; /* the threads started */
	double secs;	/* they ran that long */
	int stopped_early; /* a --busted run, at its first error */
	struct sk_tort_gp_stats gs0, gs_end; /* at the start, at the end */
	struct sk__rcu_gp_kinds k0;	     /* at the start */
	unsigned long peak_rss;		     /* KiB */
	struct tort_watchdog wd;
	pthread_t wd_tid;
	pid_t child; /* the --fork child, or 0 */
	int child_status, child_done;
};

/* The monitor's clocks (ns) and last samples. */
struct tort_monitor {
	uint64_t end, next_progress, prev_progress_ns, last_gp_ns;
	uint64_t stutter_next, next_sample, fork_at, cb_pcpu_next;
	unsigned long last_gps, prev_progress_gps, stall_reported, rss_over;
	struct sk_tort_stats prev_sum;
	int paused;
};

/* The primitive of the run: ops_in, or its twin broken as asked. */
static const struct sk_tort_ops *run_pick_ops(struct tort_run *R)
{
	const struct sk_tort_config *cfg = R->cfg;

	if (cfg->busted && cfg->cb_pcpu) {
		/* The real calls; busted for the pools (quarantine, not
		 * free) and the races the checks expect. */
		R->busted_ops = *R->ops_in;
		R->busted_ops.busted = 1;
		sk__rcu_cb_set_busted(SK__CB_BUSTED_NO_GP);
	} else if (cfg->busted) {
		sk_tort_make_busted(R->ops_in, &R->busted_ops);
	} else if (cfg->busted_qsbr || cfg->busted_hs || cfg->busted_quiet ||
		   cfg->busted_scan) {
		/* Real grace periods, broken inside the library. */
		R->busted_ops = *R->ops_in;
		R->busted_ops.busted = 1;
		sk__rcu_set_busted(cfg->busted_qsbr ? SK__RCU_BUSTED_QSBR_ONLY
				   : cfg->busted_hs ? SK__RCU_BUSTED_HANDSHAKE
				   : cfg->busted_quiet ? SK__RCU_BUSTED_QUIET
						       : SK__RCU_BUSTED_SCAN_SKIP);
	} else {
		return R->ops_in;
	}
	return &R->busted_ops;
}

/* The first lines of the report: what runs, how, and the seed. */
static void run_banner(struct tort_run *R)
{
	const struct sk_tort_config *cfg = R->cfg;
	const struct sk_tort_ops *ops = R->T.ops;
	const char *prefix = R->prefix;
	FILE *out = R->out;
	int i;

	fprintf(out,
		"%sscalekit torture %s: %s; %s; %lu s, %lu readers, %lu "
		"updaters, nesting %lu, gp",
		prefix, R->mode->name, R->T.scen->name, ops->desc,
		cfg->duration_s, cfg->readers, cfg->updaters, cfg->nesting);
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
}

/* The starting counters, then every thread (up to a failed start). */
static void run_start_threads(struct tort_run *R)
{
	struct sk_tort *T = &R->T;
	unsigned long i;

	if (R->cfg->cb_pcpu)
		cb_pcpu_cycle(T, 1, 0);
	T->ops->stats(T->ctx, &R->gs0);
	sk__rcu_get_gp_kinds(&R->k0);
	R->start = sk_tort_now_ns();
	for (i = 0; i < T->nthreads; i++) {
		struct sk_tort_thread *t = &T->threads[i];

		if (start_thread(T, t, sk_tort_thread_main(t->role)) != 0)
			break;
	}
}

static void mon_init(struct tort_run *R, struct tort_monitor *M)
{
	const struct sk_tort_config *cfg = R->cfg;
	uint64_t start = R->start;

	memset(M, 0, sizeof(*M));
	M->end = start + cfg->duration_s * 1000000000ULL;
	M->next_progress = start + TORT_PROGRESS_NS;
	M->prev_progress_ns = start;
	M->last_gp_ns = start;
	M->last_gps = R->gs0.gps;
	M->prev_progress_gps = R->gs0.gps;
	if (cfg->stutter)
		M->stutter_next = start + TORT_STUTTER_RUN_NS;
	M->fork_at = cfg->fork ? start + cfg->duration_s * 1000000000ULL / 2
			       : UINT64_MAX;
	M->cb_pcpu_next = start + TORT_CB_PCPU_NS;
}

/* --stutter: pause every thread, or let them run again. */
static void mon_stutter(struct tort_run *R, struct tort_monitor *M,
			uint64_t now)
{
	M->paused = !M->paused;
	sk_atomic_store_relaxed(&R->T.paused, M->paused);
	M->stutter_next = now + (M->paused ? TORT_STUTTER_PAUSE_NS
					   : TORT_STUTTER_RUN_NS);
	if (!M->paused)
		M->last_gp_ns = now; /* the pause is no stall */
}

/* Resident memory against --rss-limit, grace periods against --stall. */
static void mon_sample(struct tort_run *R, struct tort_monitor *M,
		       uint64_t now)
{
	const struct sk_tort_config *cfg = R->cfg;
	struct sk_tort *T = &R->T;
	struct sk_tort_gp_stats gs;
	unsigned long r = rss_kib();

	/*
	 * A monitor that wakes up late was itself kept off the CPUs (a
	 * loaded machine starves the whole process): that time is not a
	 * grace-period stall.
	 */
	if (M->next_sample && now > M->next_sample + TORT_SAMPLE_NS)
		M->last_gp_ns += now - M->next_sample;
	M->next_sample = now + TORT_SAMPLE_NS;
	if (r > R->peak_rss)
		R->peak_rss = r;
	if (r / 1024 > cfg->rss_limit_mib && !M->rss_over++)
		sk_tort_error(T, NULL,
			      "resident memory %lu MiB is above the bound of "
			      "%lu MiB (--rss-limit)",
			      r / 1024, cfg->rss_limit_mib);
	T->ops->stats(T->ctx, &gs);
	if (gs.gps != M->last_gps || M->paused) {
		M->last_gps = gs.gps;
		M->last_gp_ns = now;
		M->stall_reported = 0;
	} else if (now - M->last_gp_ns > cfg->stall_s * 1000000000ULL &&
		   !M->stall_reported) {
		M->stall_reported = 1;
		sk_tort_error(T, NULL,
			      "no grace period completed for %lu s (--stall): "
			      "forward progress lost",
			      cfg->stall_s);
	}
}

/* --fork, half-way through: the child runs its own torture. */
static void mon_fork(struct tort_run *R, struct tort_monitor *M)
{
	M->fork_at = UINT64_MAX;
	if (SK_TORT_NO_FORK) {
		fprintf(stderr,
			"scalekit torture: %s--fork: not run under "
			"ThreadSanitizer, which cannot start threads in the "
			"child of a multithreaded process\n",
			R->prefix);
		return;
	}
	fflush(stdout);
	fflush(stderr);
	R->child = fork();
	if (R->child == 0)
		fork_child(R->cfg, R->mode, R->ops_in);
	if (R->child < 0) {
		sk_tort_error(&R->T, NULL, "fork: %s", strerror(errno));
		R->child = 0;
	} else {
		fprintf(stderr,
			"scalekit torture: %sforked child %ld for a %d s "
			"torture\n",
			R->prefix, (long)R->child, SK_TORT_CHILD_DURATION);
	}
}

static void mon_progress(struct tort_run *R, struct tort_monitor *M,
			 uint64_t now)
{
	struct sk_tort *T = &R->T;
	struct sk_tort_stats sum;
	struct sk_tort_gp_stats gs;

	sk_tort_sum_stats(T, &sum);
	T->ops->stats(T->ctx, &gs);
	print_progress(T, R->mode->name, (now - R->start) / 1e9,
		       (now - M->prev_progress_ns) / 1e9, &sum, &M->prev_sum,
		       gs.gps, M->prev_progress_gps, rss_kib());
	M->prev_sum = sum;
	M->prev_progress_gps = gs.gps;
	M->prev_progress_ns = now;
	M->next_progress = now + TORT_PROGRESS_NS;
}

/* The monitor (this thread), until the end of the run or a stop. */
static void run_monitor(struct tort_run *R)
{
	const struct sk_tort_config *cfg = R->cfg;
	struct tort_monitor M;
	uint64_t now;

	mon_init(R, &M);
	for (now = R->start; now < M.end && !sk_tort_stopping(&R->T);
	     now = sk_tort_now_ns()) {
		usleep(TORT_TICK_US);
		now = sk_tort_now_ns();
		if (cfg->stutter && now >= M.stutter_next)
			mon_stutter(R, &M, now);
		if (cfg->cb_pcpu && now >= M.cb_pcpu_next) {
			M.cb_pcpu_next = now + TORT_CB_PCPU_NS;
			cb_pcpu_cycle(&R->T, 1, 1);
		}
		if (now >= M.next_sample)
			mon_sample(R, &M, now);
		if (now >= M.fork_at)
			mon_fork(R, &M);
		if (R->child && !R->child_done &&
		    waitpid(R->child, &R->child_status, WNOHANG) == R->child)
			R->child_done = 1;
		if (now >= M.next_progress)
			mon_progress(R, &M, now);
		/* A --busted run has proved its point at its first error:
		 * the rest of the duration would only count more. */
		if (R->T.ops->busted && sk_tort_errors_so_far(&R->T)) {
			R->stopped_early = 1;
			break;
		}
	}
	R->secs = (sk_tort_now_ns() - R->start) / 1e9;
}

/* Stop and join every thread, under the watchdog from here on. */
static void run_stop(struct tort_run *R)
{
	struct sk_tort *T = &R->T;
	unsigned long i;

	pthread_mutex_init(&R->wd.lock, NULL);
	pthread_cond_init(&R->wd.cv, NULL);
	R->wd.prefix = R->prefix;
	R->wd.out = R->out;
	/* The child reports its own hang before the parent kills it. */
	R->wd.deadline_s = R->cfg->is_child ? TORT_CHILD_DEADLINE_S / 2
					    : TORT_STOP_DEADLINE_S;
	pthread_create(&R->wd_tid, NULL, watchdog_main, &R->wd);
	sk_atomic_store_relaxed(&T->paused, 0);
	sk_atomic_store_release(&T->stop, 1);
	for (i = 0; i < T->nthreads; i++)
		if (T->threads[i].started)
			pthread_join(T->threads[i].tid, NULL);
}

/* Wait for the --fork child (killed after a deadline); its verdict. */
static void run_reap_child(struct tort_run *R)
{
	uint64_t deadline = sk_tort_now_ns() +
			    TORT_CHILD_DEADLINE_S * 1000000000ULL;
	int st;

	if (!R->child)
		return;
	while (!R->child_done && sk_tort_now_ns() < deadline) {
		if (waitpid(R->child, &R->child_status, WNOHANG) == R->child)
			R->child_done = 1;
		else
			usleep(10000);
	}
	if (!R->child_done) {
		kill(R->child, SIGKILL);
		waitpid(R->child, &R->child_status, 0);
		R->child_done = 1;
		sk_tort_error(&R->T, NULL,
			      "the fork child did not finish within %d s: "
			      "killed",
			      TORT_CHILD_DEADLINE_S);
		return;
	}
	st = R->child_status;
	if (WIFEXITED(st) && WEXITSTATUS(st) == SK_TOOL_EXIT_OK)
		fprintf(stderr, "scalekit torture: %sfork child %ld: SUCCESS\n",
			R->prefix, (long)R->child);
	else
		sk_tort_error(&R->T, NULL, "fork child %ld failed (%s %d)",
			      (long)R->child,
			      WIFEXITED(st) ? "exit status" : "signal",
			      WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

/*
 * Every callback invoked (flood's and the scenario's), the scenario's
 * finish(), the last counters, the primitive cleaned up; the watchdog ends.
 */
static void run_drain(struct tort_run *R)
{
	struct sk_tort *T = &R->T;
	const struct sk_tort_ops *ops = T->ops;

	if (R->cfg->cb_pcpu)
		cb_pcpu_cycle(T, 0, 1); /* what is left goes to the default */
	if (ops->cb_barrier)
		ops->cb_barrier(T->ctx);
	while (sk_atomic_load_acquire(&T->cb_pending) && ops->cb_barrier) {
		ops->cb_barrier(T->ctx);
		usleep(1000);
	}
	if (T->scen->finish)
		T->scen->finish(T);
	if (ops->cb_barrier)
		ops->cb_barrier(T->ctx);
	ops->stats(T->ctx, &R->gs_end);
	sk_tort_ops_cleanup(T);
	pthread_mutex_lock(&R->wd.lock);
	R->wd.done = 1;
	pthread_cond_signal(&R->wd.cv);
	pthread_mutex_unlock(&R->wd.lock);
	pthread_join(R->wd_tid, NULL);
	pthread_cond_destroy(&R->wd.cv);
	pthread_mutex_destroy(&R->wd.lock);
}

/* Report lines: throughput, callbacks, first-barrier kinds, --gp use. */
static void report_counts(struct tort_run *R, const struct sk_tort_stats *sum)
{
	const struct sk_tort_gp_stats *g0 = &R->gs0, *g1 = &R->gs_end;
	const char *prefix = R->prefix;
	struct sk__rcu_gp_kinds k1;
	FILE *out = R->out;
	double secs = R->secs;
	int i;

	fprintf(out,
		"%sreads: %lu (%.0f/s)  updates: %lu (%.0f/s)  grace "
		"periods: %lu (%.0f/s)\n",
		prefix, sum->reads, sum->reads / secs, sum->updates,
		sum->updates / secs, g1->gps - g0->gps,
		(g1->gps - g0->gps) / secs);
	fprintf(out, "%scallbacks: %lu queued, %lu invoked by the tool", prefix,
		sum->cb_queued + sk_atomic_load_relaxed(&R->T.cb_requeued),
		sk_atomic_load_relaxed(&R->T.cb_invoked));
	if (g1->have_cb)
		fprintf(out, "; library: %lu queued, %lu invoked",
			g1->cb_queued - g0->cb_queued,
			g1->cb_invoked - g0->cb_invoked);
	if (g1->have_cb && g1->exp_handshakes + g1->exp_fallbacks !=
				   g0->exp_handshakes + g0->exp_fallbacks)
		fprintf(out, "; expedited first barriers: %lu handshakes, %lu "
			     "membarriers",
			g1->exp_handshakes - g0->exp_handshakes,
			g1->exp_fallbacks - g0->exp_fallbacks);
	sk__rcu_get_gp_kinds(&k1);
	if (g1->have_cb)
		fprintf(out, "\n%sRCU first barriers: %lu handshakes (%lu "
			     "quiet), %lu membarriers, %lu QSBR-only",
			prefix, k1.handshake - R->k0.handshake,
			k1.quiet - R->k0.quiet, k1.heavy - R->k0.heavy,
			k1.qsbr_only - R->k0.qsbr_only);
	fprintf(out, "\n%supdates by grace-period type:", prefix);
	for (i = 0; i < SK_TORT_GP_NR; i++)
		if (R->cfg->gp_mask & (1u << i))
			fprintf(out, " %s %lu", sk_tort_gp_names[i],
				sum->gp_used[i]);
	fprintf(out, "\n");
}

/* The report and the verdict: SK_TOOL_EXIT_OK or SK_TOOL_EXIT_FAIL. */
static int run_report(struct tort_run *R)
{
	struct sk_tort *T = &R->T;
	const char *prefix = R->prefix;
	struct sk_tort_stats sum;
	unsigned long errors;
	FILE *out = R->out;
	int rc;

	sk_tort_sum_stats(T, &sum);
	if (peak_rss_kib() > R->peak_rss)
		R->peak_rss = peak_rss_kib();
	if (sum.reads == 0)
		sk_tort_error(T, NULL, "no read section completed");
	if (sum.updates == 0)
		sk_tort_error(T, NULL, "no update completed");
	if (T->scen->report)
		T->scen->report(T, out);
	report_counts(R, &sum);
	if (R->cfg->churn)
		fprintf(out, "%sshort-lived reader threads: %lu\n", prefix,
			sum.churned);
	errors = sum.errors + T->global_errors;
	fprintf(out, "%speak RSS: %lu MiB (bound %lu MiB)\n", prefix,
		R->peak_rss / 1024, R->cfg->rss_limit_mib);
	fprintf(out, "%smax pipe count: %lu  errors: %lu%s\n", prefix,
		sum.max_pipe, errors,
		T->suppressed ? " (only the first ones printed)" : "");
	sk__rcu_set_busted(0);
	if (R->stopped_early)
		fprintf(out, "%s--busted: the run stopped at its first error, "
			     "%.1f s in\n",
			prefix, R->secs);
	if (T->ops->busted)
		fprintf(out, "%s--busted: grace periods did not wait; %s\n",
			prefix,
			errors ? "the detector caught it, as it must"
			       : "NOT DETECTED: the detector is blind");
	rc = errors ? SK_TOOL_EXIT_FAIL : SK_TOOL_EXIT_OK;
	fprintf(out, "%s%s\n", prefix, rc ? "FAILURE" : "SUCCESS");
	fflush(out);
	return rc;
}

static int tort_run(const struct sk_tort_config *cfg,
		    const struct sk_tort_mode *mode,
		    const struct sk_tort_ops *ops_in, const char *prefix)
{
	struct tort_run R_, *R = &R_;
	struct sk_tort *T = &R->T;
	int rc;

	memset(R, 0, sizeof(*R));
	R->cfg = cfg;
	R->mode = mode;
	R->ops_in = ops_in;
	R->prefix = prefix;
	R->out = cfg->is_child ? stderr : stdout;
	T->cfg = cfg;
	T->ops = run_pick_ops(R);
	T->scen = mode->scen;
	T->prefix = prefix;
	pthread_mutex_init(&T->err_lock, NULL);
	run_banner(R);
	if (sk_tort_setup(T) != 0) {
		fprintf(R->out, "%sFAILURE\n", prefix);
		fflush(R->out);
		pthread_mutex_destroy(&T->err_lock);
		return SK_TOOL_EXIT_FAIL;
	}
	run_start_threads(R);
	run_monitor(R);
	run_stop(R);
	run_reap_child(R);
	run_drain(R);
	rc = run_report(R);
	if (T->scen->destroy)
		T->scen->destroy(T);
	free(T->threads);
	pthread_mutex_destroy(&T->err_lock);
	return rc;
}

/*
 * tort_run(), then a check that the run cleaned up, exactly once, the
 * primitive it initialized: on every path, a failed setup included.
 */
int sk_tort_run_checked(const struct sk_tort_config *cfg,
			const struct sk_tort_mode *mode,
			const struct sk_tort_ops *ops, const char *prefix)
{
	long live = sk_tort_ops_live();
	int rc = tort_run(cfg, mode, ops, prefix);

	if (sk_tort_ops_live() != live) {
		fprintf(stderr,
			"scalekit torture: %sinternal error: %s: the run "
			"made %ld init() calls without their cleanup() (a "
			"negative count: cleanup() without init())\n",
			prefix, ops->name, sk_tort_ops_live() - live);
		rc = SK_TOOL_EXIT_FAIL;
	}
	return rc;
}
