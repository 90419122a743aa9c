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
#define _GNU_SOURCE /* pipe2 */
#include "bench.h"
#include "tool.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

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

	if (env && *env) {
		if ((size_t)snprintf(compat_path, sizeof(compat_path), "%s",
				     env) >= sizeof(compat_path))
			return "SCALEKIT_BENCH_URCU is too long";
	} else if (sk_tool_path_beside(COMPAT_PROG, compat_path,
				       sizeof(compat_path))) {
		return errno == ENOENT ?
			       "cannot find the scalekit program's directory" :
			       "the scalekit program's path is too long";
	}
	if (access(compat_path, X_OK) != 0) {
		snprintf(compat_why, sizeof(compat_why),
			 "%s not found (not built): %s", COMPAT_PROG,
			 compat_path);
		return compat_why;
	}
	return NULL;
}

/*
 * Start compat_path with args, its standard output into a pipe (no shell
 * between, so any path works).  Returns the pipe's read end as a stream,
 * or NULL (errno set); *pid is the child's.
 */
static FILE *spawn_prog(char **args, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	int fd[2], err;
	FILE *f;

	if (pipe2(fd, O_CLOEXEC))
		return NULL;
	err = posix_spawn_file_actions_init(&fa);
	if (!err) {
		/* dup2 clears FD_CLOEXEC on the copy; both pipe ends close. */
		err = posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
		if (!err)
			err = posix_spawn(pid, compat_path, &fa, NULL, args,
					  environ);
		posix_spawn_file_actions_destroy(&fa);
	}
	close(fd[1]);
	if (err || !(f = fdopen(fd[0], "r"))) {
		if (!err) { /* fdopen failed: end the child we started */
			err = errno;
			close(fd[0]);
			while (waitpid(*pid, NULL, 0) < 0 && errno == EINTR)
				;
		} else {
			close(fd[0]);
		}
		errno = err;
		return NULL;
	}
	return f;
}

/*
 * One run of the program on the rows' thread counts: rep r of row c gets
 * the figure of its "urcu-compat read <threads> <ns>" line.  Returns NULL,
 * or why no figure came (the program's exit status, or what it printed).
 */
static const char *run_prog(struct sk_bench_row **rows, int n, long run_ms,
			    long warm_ms, int rep)
{
	char nums[2 + COMPAT_MAX_THREADS][24], line[256];
	char *args[4 + COMPAT_MAX_THREADS];
	double ns;
	FILE *p;
	pid_t pid;
	int c, t, st = -1, got = 0, bad = 0;

	args[0] = compat_path;
	snprintf(nums[0], sizeof(nums[0]), "%ld", run_ms);
	snprintf(nums[1], sizeof(nums[1]), "%ld", warm_ms);
	args[1] = nums[0];
	args[2] = nums[1];
	for (c = 0; c < n; c++) {
		snprintf(nums[2 + c], sizeof(nums[2 + c]), "%d",
			 rows[c]->threads);
		args[3 + c] = nums[2 + c];
	}
	args[3 + n] = NULL;
	fflush(NULL);
	p = spawn_prog(args, &pid);
	if (!p) {
		snprintf(compat_why, sizeof(compat_why),
			 "cannot start %s: %s", compat_path, strerror(errno));
		return compat_why;
	}
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
	fclose(p);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (st == 0 && got == n && !bad)
		return NULL;
	snprintf(compat_why, sizeof(compat_why),
		 "%s gave %d of %d figures (%s %d%s): %s",
		 COMPAT_PROG, got, n,
		 WIFSIGNALED(st) ? "killed by signal" : "exit status",
		 WIFSIGNALED(st) ? WTERMSIG(st) :
		 WIFEXITED(st)	 ? WEXITSTATUS(st) : -1,
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
