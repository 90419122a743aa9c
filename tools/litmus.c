/* SPDX-License-Identifier: MIT */
/*
 * `scalekit litmus`: run litmus tests in the C format of the Linux-kernel
 * memory model on this machine, with scalekit's primitives (see
 * docs/litmus.md).  This file holds the command line, the walk over files
 * and directories, the verdict and the report (text or JSON); the parser
 * is litmus_parse.c, the executor litmus_exec.c.
 */
#define _GNU_SOURCE
/* 32-bit builds: stat() and scandir() fail with EOVERFLOW on large inode
 * numbers without 64-bit file offsets. */
#define _FILE_OFFSET_BITS 64
#include "litmus.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tool.h"

#define LT_MAX_FILE (1L << 20)

enum verdict { V_OK, V_NOT_OBSERVED, V_FAIL, V_ERROR };

static const char *const verdict_name[] = { "Ok", "Not observed", "FAIL",
					    "error" };
static const char *const expect_name[] = { "none", "Never", "Sometimes",
					   "Always", "DEADLOCK", "Flag" };

struct cli {
	struct lt_opts o;
	int json;
	int require_observed; /* "Not observed" counts as a failure */
	int parse_only;
	int ntests, count[4];
	int unsupported; /* errors that are a construct not supported */
	int first_json;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: scalekit litmus [options] FILE|DIR...\n"
		"\n"
		"Run litmus tests (the C format of the Linux-kernel memory "
		"model) with\nscalekit's primitives; a directory means its "
		"*.litmus files and those of its\nsubdirectories "
		"(*.litmus entries that are not regular files are skipped\n"
		"with a warning).\n"
		"\n"
		"Options:\n"
		"  --iterations N  at most N iterations per test "
		"(default 2000000)\n"
		"  --seconds S     at most S seconds per test (default 5; "
		"decimals allowed);\n"
		"                  a test stops at once when an outcome it "
		"expects Never is seen\n"
		"  --threads N     threads per test (default: processes, at "
		"most the CPUs)\n"
		"  --seed N        seed of the random delays (default 1)\n"
		"  --busted        grace periods that wait for nothing: RCU "
		"and SRCU\n"
		"                  tests whose result is Never must FAIL\n"
		"  --require-observed\n"
		"                  a Sometimes outcome not seen fails the run\n"
		"  --parse-only    parse, report errors, run nothing\n"
		"  --json          one JSON array of results on stdout\n"
		"  -h, --help      show this help\n"
		"\n"
		"Verdicts: Ok (Never and not seen, Sometimes and seen, Always "
		"and always\nseen), Not observed (Sometimes, not seen: a "
		"warning), FAIL (a Never\noutcome seen, or an Always outcome "
		"missed).  Exit status 1 on any FAIL\nor error, 2 on a bad "
		"command line.\n");
}

/* ---- verdict and report ------------------------------------------------ */

static enum lt_expect expected(const struct lt_test *t)
{
	if (lt_expects_never(t))
		return LT_NEVER;
	if (t->expect != LT_EXPECT_NONE && t->expect != LT_FLAG)
		return t->expect;
	/* "Result: Flag x" says nothing of the condition: as without one */
	return t->quant == LT_FORALL ? LT_ALWAYS : LT_SOMETIMES;
}

/* The iterations that have a final state: not dropped by the filter
 * clause, no null dereference. */
static unsigned long kept(const struct lt_result *r)
{
	return r->iterations - r->filtered - r->null_deref;
}

/* Iterations ran, and none was kept (the filter clause dropped every
 * one): no final state, which herd7 (and the corpora's "Result:
 * DEADLOCK") reports for a test with no execution left
 * (Documentation/litmus-tests/locking/RM-broken.litmus). */
static int no_state(const struct lt_result *r)
{
	return r->iterations > 0 && kept(r) == 0;
}

static enum verdict judge(const struct lt_test *t, const struct lt_result *r)
{
	switch (expected(t)) {
	case LT_NEVER:
		return r->positive ? V_FAIL : V_OK;
	case LT_ALWAYS: /* of the states the filter clause keeps */
		return r->positive < kept(r) ? V_FAIL : V_OK;
	case LT_DEADLOCK: /* herd7: no execution, no final state */
		return r->deadlock || no_state(r) ? V_OK : V_NOT_OBSERVED;
	default:
		return r->positive ? V_OK : V_NOT_OBSERVED;
	}
}

static void print_value(FILE *f, const struct lt_test *t, long v)
{
	if (LT_IS_PTR(v))
		fprintf(f, "%s", t->loc[v - LT_PTR_TAG].name);
	else
		fprintf(f, "%ld", v);
}

static void print_obs(FILE *f, const struct lt_test *t, int j)
{
	const struct lt_obs *o = &t->obs[j];

	if (o->proc >= 0)
		fprintf(f, "%d:%s", o->proc, t->proc[o->proc].reg[o->idx]);
	else
		fprintf(f, "%s", t->loc[o->idx].name);
}

static void report_text(const struct lt_test *t, const struct lt_result *r,
			enum verdict v)
{
	static const char *const quant[] = { "exists", "~exists", "forall" };
	int s, j;

	printf("Test %s (%s): %d processes on %d threads, %lu iterations "
	       "in %.2f s\n", t->name, t->file, t->nprocs, r->threads,
	       r->iterations, r->elapsed);
	printf("Histogram (%d states)\n", r->nstates);
	for (s = 0; s < r->nstates; s++) {
		printf("%12lu %s> ", r->states[s].count,
		       r->states[s].match ? "*" : ":");
		for (j = 0; j < t->nobs; j++) {
			print_obs(stdout, t, j);
			putchar('=');
			print_value(stdout, t, r->states[s].val[j]);
			printf(";%s", j + 1 < t->nobs ? " " : "");
		}
		putchar('\n');
	}
	if (r->other_count)
		printf("%12lu    (other states, beyond the table)\n",
		       r->other_count);
	if (t->filter_root >= 0)
		printf("Filter: %lu of %lu iterations dropped\n", r->filtered,
		       r->iterations);
	if (r->null_deref)
		printf("Null dereference: %lu of %lu iterations left out (a "
		       "process dereferenced a pointer that was 0)\n",
		       r->null_deref, r->iterations);
	printf("Condition %s %s: %s, %lu of %lu\n", quant[t->quant],
	       t->clause, r->positive ? "observed" : "not observed",
	       r->positive, kept(r));
	if (t->plain)
		printf("Plain accesses: a data race among them (herd7: Flag "
		       "data-race) is not detected here\n");
	if (r->flagged)
		printf("Flag %s: a process ended inside its SRCU read section "
		       "(closed at its end)\n", t->flag);
	if (r->deadlock)
		printf("Deadlock: %s\n", r->error);
	else if (t->expect == LT_DEADLOCK)
		printf("Deadlock: %s\n", no_state(r) ? "no iteration left by the "
		       "filter (no final state, as herd7's DEADLOCK)" :
		       "not reached");
	printf("Verdict: %s (expected %s)\n\n", verdict_name[v],
	       expect_name[expected(t)]);
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void json_begin(struct cli *c, const char *file)
{
	printf("%s\n  {\"file\": ", c->first_json ? "" : ",");
	c->first_json = 0;
	json_str(file);
}

static void report_json(struct cli *c, const struct lt_test *t,
			const struct lt_result *r, enum verdict v)
{
	int s, j;

	json_begin(c, t->file);
	printf(", \"name\": ");
	json_str(t->name);
	printf(", \"expected\": \"%s\", \"condition\": ",
	       expect_name[expected(t)]);
	json_str(t->clause);
	printf(", \"iterations\": %lu, \"seconds\": %.3f, \"threads\": %d, "
	       "\"positive\": %lu, \"filtered\": %lu, \"null_deref\": %lu, "
	       "\"observed\": %s, \"verdict\": \"%s\", \"states\": [",
	       r->iterations, r->elapsed, r->threads, r->positive,
	       r->filtered, r->null_deref,
	       r->positive ? "true" : "false", verdict_name[v]);
	for (s = 0; s < r->nstates; s++) {
		printf("%s{\"count\": %lu, \"match\": %s, \"values\": {",
		       s ? ", " : "", r->states[s].count,
		       r->states[s].match ? "true" : "false");
		for (j = 0; j < t->nobs; j++) {
			printf("%s\"", j ? ", " : "");
			print_obs(stdout, t, j);
			printf("\": ");
			if (LT_IS_PTR(r->states[s].val[j]))
				json_str(t->loc[r->states[s].val[j] -
						LT_PTR_TAG].name);
			else
				printf("%ld", r->states[s].val[j]);
		}
		printf("}}");
	}
	printf("], \"other_states\": %lu, \"plain\": %s", r->other_count,
	       t->plain ? "true" : "false");
	if (r->flagged) {
		printf(", \"flag\": ");
		json_str(t->flag);
	}
	if (r->deadlock) {
		printf(", \"deadlock\": ");
		json_str(r->error);
	}
	putchar('}');
}

/* A file that could not be parsed or run: the message, and go on. */
static void report_error(struct cli *c, const char *file, const char *msg)
{
	c->count[V_ERROR]++;
	c->unsupported += strstr(msg, ": unsupported: ") != NULL;
	fprintf(stderr, "scalekit litmus: %s\n", msg);
	if (!c->json)
		return;
	json_begin(c, file);
	printf(", \"error\": ");
	json_str(msg);
	putchar('}');
}

/* ---- files ------------------------------------------------------------- */

/* What a file that is not a regular one is, for messages. */
static const char *file_kind(mode_t m)
{
	return S_ISFIFO(m) ? "a FIFO" : S_ISDIR(m) ? "a directory" :
	       S_ISCHR(m) ? "a character device" :
	       S_ISBLK(m) ? "a block device" :
	       S_ISSOCK(m) ? "a socket" : "a special file";
}

/*
 * The text of the file at path (at most 1 MiB), or NULL with the message
 * in err.  Only a regular file is read: *not_regular is set (and err says
 * what path is instead) for a FIFO, a device, a directory or a socket.
 * The open itself must not block either: a FIFO opened for reading waits
 * for a writer, so it is opened with O_NONBLOCK and then checked through
 * its descriptor (no window between a stat() and the open); a socket
 * cannot be opened (ENXIO), and stat() tells what it is then.
 */
static char *read_file(const char *path, size_t *len, int *not_regular,
		       char err[LT_ERR])
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), flags;
	struct stat st;
	char *buf;
	FILE *f;

	*not_regular = 0;
	if (fd < 0) {
		int e = errno;

		if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
			*not_regular = 1;
			snprintf(err, LT_ERR, "%s: %s, not a regular file",
				 path, file_kind(st.st_mode));
		} else {
			snprintf(err, LT_ERR, "%s: %s", path, strerror(e));
		}
		return NULL;
	}
	if (fstat(fd, &st) != 0) {
		snprintf(err, LT_ERR, "%s: %s", path, strerror(errno));
		close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		*not_regular = 1;
		snprintf(err, LT_ERR, "%s: %s, not a regular file", path,
			 file_kind(st.st_mode));
		close(fd);
		return NULL;
	}
	/* Reads of a regular file do not block: back to blocking mode, so
	 * that stdio sees an ordinary descriptor. */
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0 ||
	    !(f = fdopen(fd, "rb"))) {
		snprintf(err, LT_ERR, "%s: %s", path, strerror(errno));
		close(fd);
		return NULL;
	}
	buf = malloc(LT_MAX_FILE + 1);
	*len = buf ? fread(buf, 1, LT_MAX_FILE + 1, f) : 0;
	if (!buf || ferror(f) || *len > LT_MAX_FILE) {
		snprintf(err, LT_ERR, "%s: %s", path,
			 !buf ? "out of memory" : ferror(f) ?
			 "read error" : "larger than 1 MiB");
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/*
 * Parse and run the test in path.  in_dir: path is an entry that a
 * directory scan found, where anything that is not a regular file (a
 * FIFO, a directory named *.litmus) is skipped with a warning; a path
 * given on the command line must be a regular file (or an error).
 */
static void run_file(struct cli *c, const char *path, int in_dir)
{
	struct lt_test t;
	struct lt_result r;
	char err[LT_ERR];
	enum verdict v;
	size_t len;
	int not_regular;
	char *text = read_file(path, &len, &not_regular, err);

	if (!text && not_regular && in_dir) {
		fprintf(stderr, "scalekit litmus: warning: %s, skipped\n", err);
		return;
	}
	c->ntests++;
	if (!text || lt_parse(path, text, len, &t, err) != 0) {
		free(text);
		report_error(c, path, err);
		return;
	}
	free(text);
	if (c->parse_only) {
		c->count[V_OK]++;
		lt_free(&t);
		return;
	}
	/* A test whose Result is DEADLOCK runs until the deadlock: that
	 * runtime error is its verdict, not an error of the file. */
	if (lt_run(&t, &c->o, &r) != 0 &&
	    !(r.deadlock && t.expect == LT_DEADLOCK)) {
		report_error(c, path, r.error);
	} else {
		v = judge(&t, &r);
		c->count[v]++;
		if (c->json)
			report_json(c, &t, &r, v);
		else
			report_text(&t, &r, v);
	}
	fflush(stdout);
	free(r.states);
	lt_free(&t);
}

static int is_litmus_name(const char *name)
{
	size_t n = strlen(name);

	return n > 7 && strcmp(name + n - 7, ".litmus") == 0;
}

/* Entries of a directory scan: every name but the hidden ones (".", "..",
 * ".git"); run_dir() tells the *.litmus files from the subdirectories. */
static int is_visible(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

#define LT_MAX_DEPTH 32 /* subdirectories below a directory given */

static void run_dir(struct cli *c, const char *path, int depth);

/* An entry of a directory scan: a *.litmus file is run (or skipped with a
 * warning when it is no regular file); a subdirectory (not a symbolic
 * link: no loops) is walked; anything else is ignored. */
static void run_entry(struct cli *c, const char *full, const char *name,
		      int depth)
{
	struct stat st;

	if (is_litmus_name(name)) {
		run_file(c, full, 1);
		return;
	}
	if (lstat(full, &st) == 0 && S_ISDIR(st.st_mode) &&
	    depth < LT_MAX_DEPTH)
		run_dir(c, full, depth + 1);
}

static void run_path(struct cli *c, const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
		run_file(c, path, 0);
		return;
	}
	run_dir(c, path, 0);
}

/* The *.litmus files of a directory and of its subdirectories, each
 * directory's entries in alphabetical order. */
static void run_dir(struct cli *c, const char *path, int depth)
{
	struct dirent **list;
	char err[LT_ERR];
	const char *sep;
	size_t len;
	int n, i;

	n = scandir(path, &list, is_visible, alphasort);
	if (n < 0) {
		c->ntests++;
		snprintf(err, LT_ERR, "%s: %s", path, strerror(errno));
		report_error(c, path, err);
		return;
	}
	len = strlen(path);
	sep = len && path[len - 1] == '/' ? "" : "/";
	for (i = 0; i < n; i++) {
		char *full;

		if (asprintf(&full, "%s%s%s", path, sep,
			     list[i]->d_name) >= 0) {
			run_entry(c, full, list[i]->d_name, depth);
			free(full);
		}
		free(list[i]);
	}
	free(list);
}

/* ---- command line ------------------------------------------------------ */

static int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0) || v > 86400)
		return -1;
	*out = v;
	return 0;
}

/* A whole-number option: 1 taken (*out set), 0 not this option, -1 bad
 * (message printed). */
static int long_option(int argc, char **argv, int *i, const char *name,
		       long min, long max, long *out)
{
	const char *v;
	int r = sk_tool_option_value("litmus", argc, argv, i, name, &v);

	if (r <= 0)
		return r;
	if (sk_tool_parse_long(v, min, max, out) == 0)
		return 1;
	sk_tool_usage_error("litmus", "%s wants a whole number from %ld to "
			    "%ld, not '%s'", name, min, max, v);
	return -1;
}

/* Returns 1 when argv[*i] was an option taken, 0 when it is not one,
 * -1 on a bad value (message printed). */
static int take_option(struct cli *c, int argc, char **argv, int *i)
{
	const char *v;
	long n;
	int r;

	if ((r = long_option(argc, argv, i, "--iterations", 1,
			     LONG_MAX, &n)) != 0) {
		c->o.iterations = (unsigned long)n;
	} else if ((r = long_option(argc, argv, i, "--threads", 1,
				    LT_MAX_PROCS, &n)) != 0) {
		c->o.threads = (int)n;
	} else if ((r = long_option(argc, argv, i, "--seed", 0, 0x7fffffffL,
				    &n)) != 0) {
		c->o.seed = (unsigned long)n;
	} else if ((r = sk_tool_option_value("litmus", argc, argv, i,
					     "--seconds", &v)) != 0) {
		if (r > 0 && parse_seconds(v, &c->o.seconds) != 0) {
			sk_tool_usage_error("litmus", "--seconds wants a "
					    "number above 0, up to 86400, not "
					    "'%s'", v);
			r = -1;
		}
	} else if (strcmp(argv[*i], "--busted") == 0) {
		c->o.busted = 1;
	} else if (strcmp(argv[*i], "--json") == 0) {
		c->json = 1;
	} else if (strcmp(argv[*i], "--require-observed") == 0) {
		c->require_observed = 1;
	} else if (strcmp(argv[*i], "--parse-only") == 0) {
		c->parse_only = 1;
	} else {
		return 0;
	}
	return r < 0 ? -1 : 1;
}

int sk_tool_litmus(int argc, char **argv)
{
	struct cli c = { .o = { .iterations = 2000000, .seconds = 5,
				.seed = 1 }, .first_json = 1 };
	int i, npaths = 0, r;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return SK_TOOL_EXIT_OK;
		}
		if (argv[i][0] != '-') {
			npaths++;
			continue;
		}
		if ((r = take_option(&c, argc, argv, &i)) < 0)
			return SK_TOOL_EXIT_USAGE;
		if (r == 0)
			return sk_tool_usage_error("litmus", "unknown option "
						   "'%s'", argv[i]);
	}
	if (npaths == 0)
		return sk_tool_usage_error("litmus", "no FILE or DIR given");
	if (c.json)
		printf("[");
	for (i = 1; i < argc; i++) {
		if (argv[i][0] == '-') {
			/* Skip an option and its separate value. */
			if (!strchr(argv[i], '=') &&
			    (!strcmp(argv[i], "--iterations") ||
			     !strcmp(argv[i], "--seconds") ||
			     !strcmp(argv[i], "--threads") ||
			     !strcmp(argv[i], "--seed")))
				i++;
			continue;
		}
		run_path(&c, argv[i]);
	}
	if (c.json)
		printf("\n]\n");
	fprintf(c.json ? stderr : stdout,
		"litmus: %d tests: %d Ok, %d Not observed, %d FAIL, %d "
		"errors", c.ntests, c.count[V_OK], c.count[V_NOT_OBSERVED],
		c.count[V_FAIL], c.count[V_ERROR]);
	if (c.unsupported)
		fprintf(c.json ? stderr : stdout, " (%d unsupported)",
			c.unsupported);
	fprintf(c.json ? stderr : stdout, "%s\n",
		c.o.busted ? " (--busted: grace periods did not wait)" : "");
	if (c.count[V_FAIL] || c.count[V_ERROR] ||
	    (c.require_observed && c.count[V_NOT_OBSERVED]))
		return SK_TOOL_EXIT_FAIL;
	return SK_TOOL_EXIT_OK;
}
