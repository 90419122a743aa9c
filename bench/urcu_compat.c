/* SPDX-License-Identifier: MIT */
/*
 * Scenario "urcu-compat": the read pair of liburcu's API on scalekit
 * (libscalekit-urcu, docs/urcu-compat.md) against the real liburcu memb
 * flavor's pair and scalekit's own, same loop, same measurement as the
 * "read" scenario (bench/read.c), 1 and 2 unpinned threads.
 *
 * libscalekit-urcu exports liburcu's own names (urcu_memb_*), so it
 * cannot be linked into this program beside the urcu-memb peer: its
 * figures come from the program scalekit-bench-urcu
 * (bench/urcu_compat/bench_urcu.c) installed beside this one, run once
 * per repetition in turn with the in-process implementations so that a
 * noisy neighbour slows them alike.  SCALEKIT_BENCH_URCU names another
 * program (the tests).  When the program is missing or prints no figure,
 * its column says n/a with the reason and the scenario goes on.
 */
#define _GNU_SOURCE /* memrchr */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define COMPAT_PROG "scalekit-bench-urcu"
#define COMPAT_MAX_THREADS 2
/* The program's warm-up after the first repetition's, in ms. */
#define COMPAT_REWARM_MS 20

static const char compat_title[] =
	"urcu-compat: ns per rcu_read_lock+rcu_dereference+rcu_read_unlock "
	"of liburcu's API (memb) on scalekit, vs liburcu memb and scalekit's "
	"pair, per thread (lower is better)";

/* Its figures come from COMPAT_PROG; unavailable set when it has none. */
static struct sk_bench_rcu_ops compat_ops = {
	.name = "urcu-compat",
	.desc = "liburcu's API (memb) on scalekit: libscalekit-urcu, "
		"measured by " COMPAT_PROG " (scenario urcu-compat only)",
};

static char compat_path[4096], compat_why[4200];

/* compat_path: $SCALEKIT_BENCH_URCU or COMPAT_PROG beside this program. */
static const char *find_prog(void)
{
	const char *env = getenv("SCALEKIT_BENCH_URCU");
	ssize_t n;
	char *slash;

	if (env && *env) {
		snprintf(compat_path, sizeof(compat_path), "%s", env);
	} else {
		n = readlink("/proc/self/exe", compat_path,
			     sizeof(compat_path) - sizeof(COMPAT_PROG) - 1);
		if (n <= 0 || !(slash = memrchr(compat_path, '/', (size_t)n)))
			return "cannot find the scalekit program's directory";
		memcpy(slash + 1, COMPAT_PROG, sizeof(COMPAT_PROG));
	}
	if (strchr(compat_path, '\''))
		return "its path contains a quote";
	if (access(compat_path, X_OK) != 0) {
		snprintf(compat_why, sizeof(compat_why),
			 "%s not found (not built): %s", COMPAT_PROG,
			 compat_path);
		return compat_why;
	}
	return NULL;
}

/*
 * One run of the program on the rows' thread counts: rep r of row c gets
 * the figure of its "urcu-compat read <threads> <ns>" line.  Returns NULL,
 * or why no figure came (the program's exit status, or what it printed).
 */
static const char *run_prog(struct sk_bench_row **rows, int n, long run_ms,
			    long warm_ms, int rep)
{
	char cmd[4400], line[256];
	double ns;
	size_t len;
	FILE *p;
	int c, t, st, got = 0, bad = 0;

	len = (size_t)snprintf(cmd, sizeof(cmd), "'%s' %ld %ld", compat_path,
			       run_ms, warm_ms);
	for (c = 0; c < n && len < sizeof(cmd); c++)
		len += (size_t)snprintf(cmd + len, sizeof(cmd) - len, " %d",
					rows[c]->threads);
	fflush(NULL);
	p = popen(cmd, "r");
	if (!p)
		return "cannot start " COMPAT_PROG;
	while (fgets(line, sizeof(line), p)) {
		for (c = 0; c < n; c++)
			if (sscanf(line, "urcu-compat read %d %lf", &t, &ns) ==
				    2 &&
			    t == rows[c]->threads && isfinite(ns) && ns > 0)
				break;
		if (c == n) {
			bad = 1;
			continue;
		}
		rows[c]->rep[0][rep] = ns;
		got++;
	}
	st = pclose(p);
	if (st == 0 && got == n && !bad)
		return NULL;
	snprintf(compat_why, sizeof(compat_why),
		 "%s gave %d of %d figures (exit status %d%s): %s",
		 COMPAT_PROG, got, n,
		 WIFEXITED(st) ? WEXITSTATUS(st) : -1,
		 bad ? ", unexpected output" : "", compat_path);
	return compat_why;
}

/* The in-process implementations k >= 1 of rows at rep (< 0: warm-up). */
static int run_peers(const struct sk_bench_config *cfg,
		     struct sk_bench_row **rows, int n, int rep)
{
	double ns, mops;
	int c, k, err;

	for (k = 1; k < rows[0]->nimpl; k++)
		for (c = 0; c < n; c++) {
			if (rows[c]->na[k])
				continue;
			err = sk_bench_read_measure(
				rows[c]->impl[k], rows[c]->threads,
				rep < 0 ? cfg->warmup_ns : cfg->run_ns, &ns,
				&mops);
			if (err) {
				fprintf(stderr,
					"scalekit bench: urcu-compat: cannot "
					"run %s on %d threads: %s\n",
					rows[c]->impl[k]->name,
					rows[c]->threads, strerror(-err));
				return -1;
			}
			if (rep >= 0)
				rows[c]->rep[k][rep] = ns;
		}
	return 0;
}

int sk_bench_urcu_compat_run(const struct sk_bench_config *cfg,
			     struct sk_bench_results *res)
{
	const struct sk_bench_rcu_ops *ops[3] = {
		&compat_ops, sk_bench_rcu_find("urcu-memb"),
		sk_bench_rcu_find("scalekit")
	};
	struct sk_bench_row *rows[COMPAT_MAX_THREADS];
	int counts[COMPAT_MAX_THREADS], n, c, rep;
	long run_ms = (long)(cfg->run_ns / 1000000u);
	long warm_ms = (long)(cfg->warmup_ns / 1000000u);
	const char *why;

	compat_ops.unavailable = NULL;
	why = find_prog();
	n = sk_bench_thread_counts(cfg->max_threads, 0, counts,
				   COMPAT_MAX_THREADS);
	for (c = 0; c < n; c++) {
		rows[c] = sk_bench_row_add_ops(res, "urcu-compat", "read",
					       "ns/op", compat_title, counts[c],
					       1, ops, 3, cfg->reps);
		rows[c]->ratio_prefix = "compat";
	}
	sk_bench_progress("urcu-compat: %d x 3 runs x %d reps, %ld ms each",
			  n, cfg->reps, run_ms);
	if (run_peers(cfg, rows, n, -1))
		return -1;
	for (rep = 0; rep < cfg->reps; rep++) {
		if (!why)
			why = run_prog(rows, n, run_ms > 0 ? run_ms : 1,
				       rep ? COMPAT_REWARM_MS :
					     (warm_ms > 0 ? warm_ms : 1),
				       rep);
		if (run_peers(cfg, rows, n, rep))
			return -1;
	}
	if (why) {
		/* No figure of the program counts: the rows say n/a. */
		for (c = 0; c < n; c++) {
			for (rep = 0; rep < cfg->reps; rep++)
				rows[c]->rep[0][rep] = NAN;
			rows[c]->na[0] = why;
		}
		sk_bench_note_add(res, "urcu-compat: n/a: %s", why);
	}
	return 0;
}
