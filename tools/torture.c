/* SPDX-License-Identifier: MIT */
/*
 * `scalekit torture`: a torture test in the spirit of the kernel's
 * rcutorture.  This file holds the modes and the command line.  A run,
 * step by step, is in torture_run.c; its threads, the pools and the
 * helpers the scenarios share in torture_threads.c; the primitives in
 * torture_ops.c; the scenarios in torture_pipe.c, torture_list.c and
 * torture_rhash.c; the locks mode, a harness of its own, in
 * torture_locks.c over the locks of torture_lock_ops.c.  torture_core.h
 * ties them together.
 */
#define _GNU_SOURCE
#include "tool.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "torture_core.h"

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
#define TORT_MAX_THREADS 256

/* ---- modes --------------------------------------------------------------- */

/* The pipe test of flavor f (sk_tort_f_ops); summary "pipe test, " s. */
#define TORT_PIPE(f, s) \
	{ #f, &sk_tort_pipe_scenario, &sk_tort_##f##_ops, "pipe test, " s }

/* One line here per mode (struct sk_tort_mode in torture_core.h). */
static const struct sk_tort_mode tort_modes[] = {
	TORT_PIPE(rcu, "general RCU readers"),
	TORT_PIPE(qsbr, "QSBR readers (and QSBR updaters)"),
	TORT_PIPE(mixed, "half general, half QSBR readers"),
	TORT_PIPE(srcu, "SRCU readers (sleep with --sleep, hand-off)"),
	/* The data structures: readers of --flavor, rcu by default. */
	{ "list", &sk_tort_list_scenario, &sk_tort_rcu_ops,
	  "sk_list: sorted-list invariants against a model" },
	{ "rhash", &sk_tort_rhash_scenario, &sk_tort_rcu_ops,
	  "sk_rhash: stable keys, model, resizer, --fault-rate" },
	/* A harness of its own: no ops. */
	{ "locks", &sk_tort_locks_scenario, NULL,
	  "mutual exclusion of every lock, and its broken twin" },
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


static void usage_options(FILE *f)
{
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
		"2.5 s\n",
		TORT_MAX_DURATION, TORT_DEFAULT_DURATION, TORT_MAX_READERS,
		TORT_MAX_UPDATERS, TORT_DEFAULT_UPDATERS, SK_TORT_MAX_NEST,
		TORT_DEFAULT_NESTING, SK_TORT_CHILD_DURATION);
}

static void usage_broken_and_rest(FILE *f)
{
	fprintf(f,
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
		"                  and the scan (must FAIL)\n"		"  --busted-quiet  rcu, mixed: a normal grace period's quiet round "
		"takes every\n"
		"                  reader for passed and skips the scan (must "
		"FAIL; 64-bit\n"
		"                  builds only: with 32-bit words there is no "
		"quiet round)\n"
		"  --busted-scan   rcu, mixed: the reader scan of every registry "
		"chunk leaves\n"
		"                  out the highest slot that blocks it (must "
		"FAIL)\n"
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
		"  --threads N     locks: threads per lock (1..%d, default: "
		"2 x CPUs + 1)\n"
		"  --lock NAME     locks: only this lock, one of\n",
		TORT_DEFAULT_RSS_MIB, TORT_DEFAULT_STALL_S, TORT_MAX_THREADS);
	sk_tort_locks_list(f);
	fprintf(f,
		"  -h, --help      show this help\n"
		"\n"
		"Progress lines go to stderr every few seconds, the report "
		"to stdout.  Exit\nstatus: 0 SUCCESS, 1 FAILURE, 2 bad "
		"command line.  See docs/torture.md.\n");
}

static void usage(FILE *f)
{
	const struct sk_tort_mode *m;

	fprintf(f,
		"usage: scalekit torture MODE [--duration S] [--readers N] "
		"[--updaters N]\n"
		"              [--seed X] [--gp LIST] [--nesting D] [--sleep] "
		"[--churn] [--fork]\n"
		"              [--flood] [--stutter] [--cb-pcpu] [--busted] "
		"[--fault-rate P] [--flavor F]\n"
		"              [--rss-limit MIB] [--stall S] [--threads N] "
		"[--lock NAME]\n"
		"\n"
		"Torture-test a scalekit primitive, in the spirit of the "
		"kernel's rcutorture:\nreaders check what they see while "
		"updaters replace it and wait for grace\nperiods.  Prints "
		"histograms and SUCCESS or FAILURE.\n"
		"\n"
		"Modes:\n");
	for (m = tort_modes; m < tort_modes + TORT_NMODES; m++)
		fprintf(f, "  %-6s %s\n", m->name, m->summary);
	usage_options(f);
	usage_broken_and_rest(f);
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
	{ "--busted-quiet", offsetof(struct sk_tort_config, busted_quiet) },
	{ "--busted-scan", offsetof(struct sk_tort_config, busted_scan) },
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
	{ "--threads", 1, TORT_MAX_THREADS,
	  offsetof(struct sk_tort_config, threads) },
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

/* The command line, as read, before the checks across options. */
struct tort_cmdline {
	struct sk_tort_config cfg;
	const struct sk_tort_mode *mode;
	const char *flavor, *fault;
	int have_seed, have_gp;
	/* The first option for the locks only, and one for the others. */
	const char *locks_opt, *other_opt;
};

/* The options of the locks mode: the common ones, and its own. */
static const char *const tort_locks_common[] = { "--duration", "--seed",
						 "--busted", NULL };
static const char *const tort_locks_own[] = { "--threads", "--lock", NULL };

/* Is option a (maybe "--name=value") one of names? */
static int opt_in(const char *a, const char *const *names)
{
	size_t len = strcspn(a, "=");

	for (; *names; names++)
		if (strlen(*names) == len && strncmp(a, *names, len) == 0)
			return 1;
	return 0;
}

/* Note which modes option a applies to (check_mode_options()). */
static void note_option(struct tort_cmdline *cl, const char *a)
{
	if (opt_in(a, tort_locks_own)) {
		if (!cl->locks_opt)
			cl->locks_opt = a;
	} else if (!opt_in(a, tort_locks_common) && !cl->other_opt) {
		cl->other_opt = a;
	}
}

/* "opt wants what, not 'val'": -1. */
static int bad_value(const char *opt, const char *what, const char *val)
{
	return -sk_tool_usage_error(CMD, "%s wants %s, not '%s'", opt, what,
				    val);
}

/*
 * Does argv[*i] set --seed, --gp, --fault-rate, --flavor or --lock?  1: set
 * in cl,
 * 0: none of them, -1: bad or missing value (message printed).
 */
static int parse_value_opt(struct tort_cmdline *cl, int argc, char **argv,
			   int *i)
{
	const char *val;
	int r;

	if ((r = sk_tool_option_value(CMD, argc, argv, i, "--seed", &val))) {
		if (r > 0 && parse_seed(val, &cl->cfg.seed) != 0)
			r = bad_value("--seed", "a 64-bit number (decimal "
				      "or 0x hex)", val);
		cl->have_seed = 1;
	} else if ((r = sk_tool_option_value(CMD, argc, argv, i, "--gp",
					     &val))) {
		if (r > 0 && parse_gp(val, &cl->cfg.gp_mask) != 0)
			r = -1;
		cl->have_gp = 1;
	} else if ((r = sk_tool_option_value(CMD, argc, argv, i,
					     "--fault-rate", &val))) {
		if (r > 0 && parse_fraction(val, &cl->cfg.fault_rate) != 0)
			r = bad_value("--fault-rate", "a fraction from 0 "
				      "to 1 (e.g. 0.01)", val);
		cl->fault = val;
	} else if ((r = sk_tool_option_value(CMD, argc, argv, i, "--flavor",
					     &val))) {
		cl->flavor = val;
	} else if ((r = sk_tool_option_value(CMD, argc, argv, i, "--lock",
					     &val))) {
		cl->cfg.lock = val;
	}
	return r < 0 ? -1 : r;
}

/* a names the mode: 0, or SK_TOOL_EXIT_USAGE after a message. */
static int parse_mode(struct tort_cmdline *cl, const char *a)
{
	int m;

	if (cl->mode)
		return sk_tool_usage_error(CMD,
					   "one mode only: '%s' after '%s'", a,
					   cl->mode->name);
	for (m = 0; m < TORT_NMODES; m++)
		if (strcmp(a, tort_modes[m].name) == 0)
			cl->mode = &tort_modes[m];
	if (!cl->mode)
		return sk_tool_usage_error(CMD,
					   "unknown mode '%s' (modes: rcu, "
					   "qsbr, mixed, srcu, list, rhash, "
					   "locks)",
					   a);
	return 0;
}

/*
 * Read argv into cl: 0, -1 after --help (printed), or SK_TOOL_EXIT_USAGE
 * after a message.
 */
static int parse_args(struct tort_cmdline *cl, int argc, char **argv)
{
	int i, r;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return -1;
		}
		r = parse_flag_opt(&cl->cfg, a);
		if (r == 0)
			r = parse_num_opt(&cl->cfg, argc, argv, &i);
		if (r == 0)
			r = parse_value_opt(cl, argc, argv, &i);
		if (r < 0)
			return SK_TOOL_EXIT_USAGE;
		if (r > 0) {
			note_option(cl, a);
			continue;
		}
		if (a[0] == '-')
			return sk_tool_usage_error(CMD, "unknown option '%s'",
						   a);
		if (parse_mode(cl, a) != 0)
			return SK_TOOL_EXIT_USAGE;
	}
	if (!cl->mode)
		return sk_tool_usage_error(CMD,
					   "missing mode (modes: rcu, qsbr, "
					   "mixed, srcu, list, rhash, locks)");
	return 0;
}

/* The primitive: the mode's, or --flavor's.  NULL after a message. */
static const struct sk_tort_ops *pick_flavor(const struct tort_cmdline *cl)
{
	const struct sk_tort_mode *mode = cl->mode;
	const struct sk_tort_ops *ops = mode->ops;
	const char *flavor = cl->flavor;
	int m;

	if (!flavor)
		return ops;
	if (mode->scen == &sk_tort_pipe_scenario) {
		sk_tool_usage_error(CMD,
				    "--flavor applies to list and rhash; "
				    "mode '%s' is a flavor itself",
				    mode->name);
		return NULL;
	}
	for (m = 0; m < TORT_NFLAVORS; m++)
		if (strcmp(flavor, tort_flavors[m]->name) == 0)
			ops = tort_flavors[m];
	if (strcmp(ops->name, flavor) != 0) {
		sk_tool_usage_error(CMD,
				    "unknown flavor '%s' (flavors: rcu, qsbr, "
				    "mixed, srcu)",
				    flavor);
		return NULL;
	}
	if (mode->scen->needs_global_rcu && !ops->global_rcu) {
		sk_tool_usage_error(CMD,
				    "--flavor %s: %s needs RCU readers (rcu, "
				    "qsbr or mixed)",
				    flavor, mode->name);
		return NULL;
	}
	return ops;
}

/* Options of the locks mode, or of the others: 0 or SK_TOOL_EXIT_USAGE. */
static int check_mode_options(const struct tort_cmdline *cl)
{
	if (cl->mode->scen->run && cl->other_opt)
		return sk_tool_usage_error(CMD,
					   "%.*s does not apply to mode '%s'",
					   (int)strcspn(cl->other_opt, "="),
					   cl->other_opt, cl->mode->name);
	if (!cl->mode->scen->run && cl->locks_opt)
		return sk_tool_usage_error(CMD,
					   "%.*s applies to locks only, not "
					   "'%s'",
					   (int)strcspn(cl->locks_opt, "="),
					   cl->locks_opt, cl->mode->name);
	return 0;
}

/*
 * The broken twins, one at a time, and each only where the readers take
 * the path it breaks (else the run would break nothing and report a
 * blind detector): 0 or SK_TOOL_EXIT_USAGE.
 */
static int check_busted(const struct tort_cmdline *cl,
			const struct sk_tort_ops *ops)
{
	static const struct {
		const char *name;
		size_t off;	    /* of the int in struct sk_tort_config */
		const char *readers; /* the flavors it applies to */
	} twin[] = {
		{ "--busted", offsetof(struct sk_tort_config, busted), NULL },
		{ "--busted-qsbr", offsetof(struct sk_tort_config, busted_qsbr),
		  "rcu,qsbr,mixed" },
		{ "--busted-handshake",
		  offsetof(struct sk_tort_config, busted_hs), "rcu,mixed" },
		{ "--busted-quiet",
		  offsetof(struct sk_tort_config, busted_quiet), "rcu,mixed" },
		{ "--busted-scan", offsetof(struct sk_tort_config, busted_scan),
		  "rcu,mixed" },
	};
	const char *first = NULL;
	size_t k, len = strlen(ops->name);

	for (k = 0; k < TORT_ARRAY_LEN(twin); k++) {
		const char *r = twin[k].readers;

		if (!*(const int *)((const char *)&cl->cfg + twin[k].off))
			continue;
		if (first)
			return sk_tool_usage_error(CMD,
						   "one broken twin at a time: "
						   "%s with %s",
						   twin[k].name, first);
		first = twin[k].name;
		/* ops->name in the comma-separated list r? */
		while (r && !(strncmp(r, ops->name, len) == 0 &&
			      (r[len] == ',' || r[len] == '\0')))
			r = (r = strchr(r, ',')) ? r + 1 : NULL;
		if (twin[k].readers && !r)
			return sk_tool_usage_error(CMD,
						   "%s breaks a path that %s "
						   "readers do not take (it "
						   "applies to %s)",
						   twin[k].name, ops->name,
						   twin[k].readers);
	}
	return 0;
}

/* rhash-only options, --gp against ops: 0 or SK_TOOL_EXIT_USAGE. */
static int check_options(struct tort_cmdline *cl,
			 const struct sk_tort_ops *ops)
{
	const char *mode = cl->mode->name, *flavor = cl->flavor;
	int rhash = cl->mode->scen == &sk_tort_rhash_scenario, g;

	if (check_busted(cl, ops) != 0)
		return SK_TOOL_EXIT_USAGE;

	if (cl->cfg.in_section && !rhash)
		return sk_tool_usage_error(CMD,
					   "--in-section applies to rhash "
					   "only, not '%s'",
					   mode);
	/* Its sections are sk_rcu_read_lock() ones: general readers. */
	if (cl->cfg.in_section && flavor && strcmp(flavor, "rcu") != 0)
		return sk_tool_usage_error(CMD,
					   "--in-section needs --flavor rcu, "
					   "not '%s'",
					   flavor);
	if (cl->fault && !rhash)
		return sk_tool_usage_error(CMD,
					   "--fault-rate applies to rhash "
					   "only, not '%s'",
					   mode);
	for (g = 0; g < SK_TORT_GP_NR; g++) {
		if (!cl->have_gp && sk_tort_ops_has_gp(ops, g))
			cl->cfg.gp_mask |= 1u << g;
		else if ((cl->cfg.gp_mask & (1u << g)) &&
			 !sk_tort_ops_has_gp(ops, g))
			return sk_tool_usage_error(
				CMD,
				"--gp %s: %s has no such grace-period "
				"primitive",
				sk_tort_gp_names[g], ops->name);
	}
	return 0;
}

int sk_tool_torture(int argc, char **argv)
{
	struct tort_cmdline cl = {
		.cfg = {
			.duration_s = TORT_DEFAULT_DURATION,
			.updaters = TORT_DEFAULT_UPDATERS,
			.nesting = TORT_DEFAULT_NESTING,
			.rss_limit_mib = TORT_DEFAULT_RSS_MIB,
			.stall_s = TORT_DEFAULT_STALL_S,
		},
	};
	const struct sk_tort_ops *ops;
	int r;

	cl.cfg.readers = default_readers();
	r = parse_args(&cl, argc, argv);
	if (r != 0)
		return r < 0 ? SK_TOOL_EXIT_OK : r;
	if (check_mode_options(&cl) != 0)
		return SK_TOOL_EXIT_USAGE;
	if (!cl.have_seed)
		cl.cfg.seed = default_seed();
	cl.cfg.mode = cl.mode->name;
	if (cl.mode->scen->run)
		return cl.mode->scen->run(&cl.cfg);
	ops = pick_flavor(&cl);
	if (!ops)
		return SK_TOOL_EXIT_USAGE;
	if (check_options(&cl, ops) != 0)
		return SK_TOOL_EXIT_USAGE;
	if (sk_tort_fault_from_env() != 0)
		return sk_tool_usage_error(
			CMD,
			"SCALEKIT_TORTURE_FAIL_ALLOC wants a whole number "
			"from 1, not '%s'",
			getenv("SCALEKIT_TORTURE_FAIL_ALLOC"));
	return sk_tort_run_checked(&cl.cfg, cl.mode, ops, "");
}
