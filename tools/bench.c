/* SPDX-License-Identifier: MIT */
/*
 * `scalekit bench`: the command line of the benchmark.  What is measured
 * lives in bench/ (harness, scenarios, one adapter per peer library);
 * this file parses options, runs the chosen scenarios and writes the
 * report.
 */
#define _GNU_SOURCE
#include "tool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "scalekit/barrier.h"

#define CMD "bench"

/*
 * The measured library: this program links libscalekit.so, as programs
 * that use scalekit do (calls through the PLT, thread-locals reached
 * through the GOT), against peers that are shared libraries too.
 */
static const char *bench_link = "libscalekit.so";

/* Limits of the options: generous, yet small enough to catch typos. */
#define BENCH_MAX_THREADS 1024
#define BENCH_MAX_REPS 1000
/* Room in the selection array for the scenarios of sk_bench_scenarios[]. */
#define BENCH_MAX_SCENARIOS 64
#define BENCH_DEFAULT_THREADS 2
#define BENCH_DEFAULT_REPS 5
#define BENCH_IDLE_THREADS 1000

/* One timed run, normal and --quick; the warm-up run is a quarter of it. */
#define BENCH_RUN_MS 200
#define BENCH_QUICK_RUN_MS 50

static void usage(FILE *f)
{
	int i;

	fprintf(f,
		"usage: scalekit bench [SCENARIO...] [--threads N] [--reps R] "
		"[--csv FILE] [--quick]\n"
		"                      [--json FILE] [--html FILE] [--pin] "
		"[--sweep]\n"
		"       scalekit bench --compare OLD.csv NEW.csv\n"
		"\n"
		"Compare scalekit with pthreads, liburcu and Concurrency Kit in "
		"one run and\nprint a table of figures and ratios "
		"(scalekit / peer).\n"
		"\n"
		"Scenarios (default: all):\n");
	for (i = 0; sk_bench_scenarios[i].name; i++)
		fprintf(f, "  %-11s %s\n", sk_bench_scenarios[i].name,
			sk_bench_scenarios[i].summary);
	fprintf(f,
		"\n"
		"Options:\n"
		"  --threads N  largest number of reader threads (1..%d, "
		"default %d):\n"
		"               read, srcu-read, callbacks, hash-lookup and "
		"hash-update run\n"
		"               1, 2, 4, ... N threads,\n"
		"               sync 0, 1, 2, 4, ... N readers (sync's idle "
		"variant always\n"
		"               uses 1 and %d idle threads; expedited, poll and "
		"srcu-sync\n"
		"               always 0 and 1 reader, hash-resize 1 reader "
		"and a resizer)\n"
		"  --reps R     timed repetitions per figure (1..%d, default "
		"%d); figures are\n"
		"               median [min..max] over them\n"
		"  --csv FILE   also write every figure and ratio to FILE as "
		"CSV (missing\n"
		"               parent directories are created)\n"
		"  --json FILE  also write the environment, every figure with "
		"its repetitions'\n"
		"               values and every target to FILE as JSON\n"
		"  --html FILE  also write a self-contained page (environment, "
		"targets chart\n"
		"               and table, every figure) to FILE\n"
		"  --quick      %d ms runs instead of %d ms and fewer "
		"callbacks, for CI smoke\n"
		"               tests\n"
		"  --pin        pin the threads of each scenario round-robin "
		"to the allowed\n"
		"               CPUs (default: the scheduler places them, as "
		"in an application;\n"
		"               the callbacks scenario's pinned variant is "
		"pinned either way)\n"
		"  --sweep      run the sweep (the scenario \"sweep\", also part "
		"of the default\n"
		"               set): every read-side primitive at 1, 2, 4 and "
		"8 threads over\n"
		"               100/99/90/50%% reads, a table per mix and the "
		"chooser\n"
		"  --compare OLD NEW  measure nothing: print new/old for every "
		"row two --csv\n"
		"               files share, marking the rows whose [min..max] "
		"ranges do not\n"
		"               overlap (BETTER / WORSE by the unit's direction, "
		"CHANGED for\n"
		"               ratios)\n"
		"  -h, --help   show this help\n"
		"\n"
		"Implementations:\n",
		BENCH_MAX_THREADS, BENCH_DEFAULT_THREADS, BENCH_IDLE_THREADS,
		BENCH_MAX_REPS, BENCH_DEFAULT_REPS, BENCH_QUICK_RUN_MS,
		BENCH_RUN_MS);
	for (i = 0; sk_bench_rcu_all[i]; i++) {
		const struct sk_bench_rcu_ops *ops = sk_bench_rcu_all[i];

		fprintf(f, "  %-19s %s\n", ops->name, ops->desc);
		if (ops->unavailable)
			fprintf(f, "  %-19s (not built: %s)\n", "",
				ops->unavailable);
	}
	fprintf(f,
		"\n"
		"Progress goes to stderr, the report to stdout.  Exit status: "
		"0 when the\nbenchmark ran (its targets are informational), "
		"1 when it failed, 2 for a\nbad command line.\n");
}

/* mkdir -p of the directory part of path. */
static int make_parent_dirs(const char *path)
{
	char *dir = strdup(path), *p;
	int err = 0;

	if (!dir)
		return -ENOMEM;
	for (p = dir + 1; *p && !err; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0777) != 0 && errno != EEXIST)
			err = -errno;
		*p = '/';
	}
	free(dir);
	return err;
}

/* The files a run can write besides the terminal's tables. */
enum out_kind { OUT_CSV, OUT_JSON, OUT_HTML, OUT_KINDS };

static const char *const out_opt[OUT_KINDS] = { "--csv", "--json",
						"--html" };

/*
 * The output before out[k] that is the same regular file as out[k] (two
 * options naming one file, however spelled: the second would overwrite
 * the first), or -1.  Devices such as /dev/null may be shared.
 */
static int same_output(FILE *const *out, int k)
{
	struct stat a, b;
	int j;

	if (fstat(fileno(out[k]), &b) != 0 || !S_ISREG(b.st_mode))
		return -1;
	for (j = 0; j < k; j++)
		if (out[j] && fstat(fileno(out[j]), &a) == 0 &&
		    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			return j;
	return -1;
}

/* Open the CSV file before the long run, so a bad path fails at once. */
static FILE *open_output(const char *path)
{
	FILE *f;
	int err = make_parent_dirs(path);

	if (err) {
		fprintf(stderr,
			"scalekit bench: cannot create the directory of "
			"'%s': %s\n",
			path, strerror(-err));
		return NULL;
	}
	f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "scalekit bench: cannot write '%s': %s\n", path,
			strerror(errno));
	return f;
}

static void print_preamble(FILE *f, const struct sk_bench_config *cfg)
{
	struct sk_bench_env env;
	int i, first = 1;

	sk_bench_env_get(&env);
	sk_bench_env_print(f, "", &env);
	/* The CPUs and membarrier(2) are on the environment's first line. */
	fprintf(f,
		"scalekit bench: %d reps x %.0f ms per figure%s, threads %s, "
		"library %s\n",
		cfg->reps, cfg->run_ns / 1e6, cfg->quick ? " (--quick)" : "",
		sk_bench_pinning() ? "pinned (--pin)" : "not pinned",
		bench_link);
	fprintf(f, "not built:");
	for (i = 0; sk_bench_rcu_all[i]; i++) {
		if (!sk_bench_rcu_all[i]->unavailable)
			continue;
		fprintf(f, " %s", sk_bench_rcu_all[i]->name);
		first = 0;
	}
	fprintf(f, "%s\n\n", first ? " none (all peers present)" : "");
}

/*
 * Does argv[*i] set the whole-number option name (1..max)?  1: set in
 * *out, 0: not that option, -1: bad or missing value (message printed).
 */
static int parse_int_opt(int argc, char **argv, int *i, const char *name,
			 long max, int *out)
{
	const char *value;
	long v;
	int m = sk_tool_option_value(CMD, argc, argv, i, name, &value);

	if (m <= 0)
		return m;
	if (sk_tool_parse_long(value, 1, max, &v)) {
		sk_tool_usage_error(CMD,
				    "%s wants a whole number from 1 to %ld, "
				    "not '%s'",
				    name, max, value);
		return -1;
	}
	*out = (int)v;
	return 1;
}

/* Mark the scenario arg: 0, or SK_TOOL_EXIT_USAGE when there is none. */
static int select_scenario(const char *arg, int *selected, int nscen)
{
	char names[512] = ""; /* every name, with room to grow */
	int s;

	for (s = 0; s < nscen; s++)
		if (strcmp(arg, sk_bench_scenarios[s].name) == 0) {
			selected[s] = 1;
			return 0;
		}
	for (s = 0; s < nscen; s++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names),
			 "%s%s", s ? ", " : "", sk_bench_scenarios[s].name);
	return sk_tool_usage_error(CMD,
				   "unknown scenario '%s' (scenarios: %s)",
				   arg, names);
}

/*
 * Does argv[*i] name an output file (--csv, --json, --html)?  1: set in
 * path[kind], 0: not such an option, -1: bad or missing value (message
 * printed).
 */
static int file_opt(int argc, char **argv, int *i, const char **path)
{
	int k, m;

	for (k = 0; k < OUT_KINDS; k++) {
		m = sk_tool_option_value(CMD, argc, argv, i, out_opt[k],
					 &path[k]);
		if (m > 0 && !*path[k]) {
			sk_tool_usage_error(CMD, "%s wants a file name",
					    out_opt[k]);
			return -1;
		}
		if (m)
			return m;
	}
	return 0;
}

/*
 * The command line into cfg, selected[] and path[] (the output files): 0, -1 after
 * --help (printed), or SK_TOOL_EXIT_USAGE after a message.
 */
static int parse_args(int argc, char **argv, struct sk_bench_config *cfg,
		      int *selected, int nscen, const char **path)
{
	int i, m;

	for (i = 1; i < argc; i++) {
		const char *arg = argv[i];

		if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
			usage(stdout);
			return -1;
		}
		if (strcmp(arg, "--quick") == 0) {
			cfg->quick = 1;
			continue;
		}
		if (strcmp(arg, "--pin") == 0) {
			sk_bench_set_pinning(1);
			continue;
		}
		if (strcmp(arg, "--sweep") == 0) {
			select_scenario("sweep", selected, nscen);
			continue;
		}
		m = parse_int_opt(argc, argv, &i, "--threads",
				  BENCH_MAX_THREADS, &cfg->max_threads);
		if (!m)
			m = parse_int_opt(argc, argv, &i, "--reps",
					  BENCH_MAX_REPS, &cfg->reps);
		if (!m)
			m = file_opt(argc, argv, &i, path);
		if (m < 0)
			return SK_TOOL_EXIT_USAGE;
		if (m > 0)
			continue;
		if (arg[0] == '-')
			return sk_tool_usage_error(CMD, "unknown option '%s'",
						   arg);
		if (select_scenario(arg, selected, nscen) != 0)
			return SK_TOOL_EXIT_USAGE;
	}
	return 0;
}

/* Write one kind of file, with the environment: 0, or -1. */
static int write_output(FILE *out, enum out_kind kind,
			const struct sk_bench_results *res)
{
	struct sk_bench_env env;

	sk_bench_env_get(&env);
	switch (kind) {
	case OUT_CSV:
		sk_bench_env_print(out, "# ", &env);
		return sk_bench_write_csv(out, res);
	case OUT_JSON:
		return sk_bench_write_json(out, res, &env);
	default:
		return sk_bench_write_html(out, res, &env);
	}
}

/* Write the file and close it: the exit status, from ret. */
static int finish_output(FILE *out, const char *path, enum out_kind kind,
			 int ret, const struct sk_bench_results *res)
{
	int bad = 0, err = 0;

	if (ret == SK_TOOL_EXIT_OK && write_output(out, kind, res)) {
		bad = 1;
		err = errno;
	}
	if (fclose(out) != 0 && !bad) {
		bad = 1;
		err = errno;
	}
	if (bad) {
		fprintf(stderr, "scalekit bench: cannot write '%s': %s\n",
			path, strerror(err));
		return SK_TOOL_EXIT_FAIL;
	}
	if (ret == SK_TOOL_EXIT_OK)
		sk_bench_progress("wrote %s", path);
	return ret;
}

/* Run the selected scenarios and print the tables: the exit status. */
static int run_selected(const struct sk_bench_config *cfg,
			const int *selected, int nscen,
			struct sk_bench_results *res)
{
	int s;

	sk_bench_setup();
	print_preamble(stdout, cfg);
	for (s = 0; s < nscen; s++)
		if (selected[s] && sk_bench_scenarios[s].run(cfg, res) != 0)
			return SK_TOOL_EXIT_FAIL;
	sk_bench_print_table(stdout, res);
	sk_bench_print_targets(stdout, res);
	return fflush(stdout) != 0 ? SK_TOOL_EXIT_FAIL : SK_TOOL_EXIT_OK;
}

int sk_tool_bench(int argc, char **argv)
{
	struct sk_bench_config cfg = {
		.max_threads = BENCH_DEFAULT_THREADS,
		.reps = BENCH_DEFAULT_REPS,
		.idle_threads = BENCH_IDLE_THREADS,
	};
	struct sk_bench_results res = { 0 };
	int selected[BENCH_MAX_SCENARIOS] = { 0 }, nselected = 0, nscen, s, k;
	const char *path[OUT_KINDS] = { NULL };
	FILE *out[OUT_KINDS] = { NULL };
	int ret;

	for (s = 1; s < argc; s++)
		if (strcmp(argv[s], "--compare") == 0) {
			if (argc != 4 || s != 1)
				return sk_tool_usage_error(
					CMD, "--compare takes two CSV files "
					     "(old, new) and nothing else");
			return sk_bench_compare(argv[2], argv[3]);
		}
	for (nscen = 0; sk_bench_scenarios[nscen].name; nscen++)
		;
	if (nscen > BENCH_MAX_SCENARIOS) {
		fprintf(stderr,
			"scalekit bench: internal error: %d scenarios, room "
			"for %d (BENCH_MAX_SCENARIOS)\n",
			nscen, BENCH_MAX_SCENARIOS);
		return SK_TOOL_EXIT_FAIL;
	}
	ret = parse_args(argc, argv, &cfg, selected, nscen, path);
	if (ret != 0)
		return ret < 0 ? SK_TOOL_EXIT_OK : ret;
	for (s = 0; s < nscen; s++)
		nselected += selected[s];
	if (!nselected)
		for (s = 0; s < nscen; s++)
			selected[s] = 1;
	cfg.run_ns =
		(cfg.quick ? BENCH_QUICK_RUN_MS : BENCH_RUN_MS) * 1000000ull;
	cfg.warmup_ns = cfg.run_ns / 4;
	/* Every file is opened before anything is measured. */
	for (k = 0; k < OUT_KINDS; k++) {
		int same = -1, j;

		if (!path[k])
			continue;
		out[k] = open_output(path[k]);
		if (out[k] && (same = same_output(out, k)) < 0)
			continue;
		ret = SK_TOOL_EXIT_FAIL;
		if (same >= 0)
			ret = sk_tool_usage_error(
				CMD, "%s and %s name the same file ('%s', "
				     "'%s'): each would overwrite the other",
				out_opt[same], out_opt[k], path[same],
				path[k]);
		for (j = 0; j <= k; j++)
			if (out[j])
				fclose(out[j]);
		return ret;
	}
	ret = run_selected(&cfg, selected, nscen, &res);
	for (k = 0; k < OUT_KINDS; k++)
		if (out[k])
			ret = finish_output(out[k], path[k], k, ret, &res);
	sk_bench_results_free(&res);
	return ret;
}
