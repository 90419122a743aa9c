/* SPDX-License-Identifier: MIT */
/*
 * The `scalekit` command: one subcommand per tool.  bench and litmus run
 * in this program, which links libscalekit.so like any program; torture
 * runs in scalekit-torture, which links the testing build of the library
 * (see torture_beside() below).
 *
 * A subcommand plugs in with one entry in the table below and its
 * function, int sk_tool_<name>(int argc, char **argv), declared in tool.h
 * and defined in its own file (tools/bench.c, tools/torture.c,
 * tools/litmus.c).  The function receives the arguments from the
 * subcommand's name on, handles its own --help and returns the exit
 * status (see SK_TOOL_EXIT_* in tool.h).
 */
#include <stdio.h>
#include <string.h>

#include "tool.h"

#ifndef SK_VERSION
#define SK_VERSION "unknown"
#endif

struct sk_tool_cmd {
	const char *name;    /* the word after "scalekit" */
	const char *summary; /* one line for `scalekit --help` */
	int (*run)(int argc, char **argv);
};

/*
 * `scalekit torture` is scalekit-torture, beside this program: it links
 * the testing build of the library, this program links libscalekit.so
 * (tools/CMakeLists.txt).
 */
static int torture_beside(int argc, char **argv)
{
	return sk_tool_exec_beside("scalekit-torture", argc, argv);
}

static const struct sk_tool_cmd sk_tool_cmds[] = {
	{ "bench", "compare scalekit with pthreads, liburcu and ck in one run",
	  sk_tool_bench },
	{ "torture",
	  "torture-test RCU, SRCU, lists, the hash table and the locks",
	  torture_beside },
	{ "litmus", "run litmus tests (LKMM C format) with scalekit's primitives",
	  sk_tool_litmus },
};

#define SK_TOOL_NCMDS ((int)(sizeof(sk_tool_cmds) / sizeof(sk_tool_cmds[0])))

static void usage(FILE *f)
{
	int i;

	fprintf(f, "usage: scalekit <command> [options]\n"
		   "       scalekit <command> --help\n"
		   "\n"
		   "Commands:\n");
	for (i = 0; i < SK_TOOL_NCMDS; i++)
		fprintf(f, "  %-8s %s\n", sk_tool_cmds[i].name,
			sk_tool_cmds[i].summary);
	fprintf(f, "\n"
		   "Options:\n"
		   "  -h, --help  show this help\n"
		   "  --version   print the scalekit version\n");
}

static const struct sk_tool_cmd *find_cmd(const char *name)
{
	int i;

	for (i = 0; i < SK_TOOL_NCMDS; i++)
		if (strcmp(sk_tool_cmds[i].name, name) == 0)
			return &sk_tool_cmds[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const struct sk_tool_cmd *cmd;
	const char *name;

	if (argc < 2) {
		usage(stderr);
		return SK_TOOL_EXIT_USAGE;
	}
	name = argv[1];
	if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0) {
		usage(stdout);
		return SK_TOOL_EXIT_OK;
	}
	if (strcmp(name, "--version") == 0) {
		printf("scalekit %s\n", SK_VERSION);
		return SK_TOOL_EXIT_OK;
	}
	/* "scalekit help bench" is "scalekit bench --help". */
	if (strcmp(name, "help") == 0) {
		char help[] = "--help";
		char *args[] = { argv[2], help, NULL };

		if (argc < 3) {
			usage(stdout);
			return SK_TOOL_EXIT_OK;
		}
		cmd = find_cmd(argv[2]);
		if (!cmd)
			return sk_tool_usage_error(NULL, "unknown command '%s'",
						   argv[2]);
		return cmd->run(2, args);
	}
	if (name[0] == '-')
		return sk_tool_usage_error(NULL, "unknown option '%s'", name);
	cmd = find_cmd(name);
	if (!cmd)
		return sk_tool_usage_error(NULL, "unknown command '%s'", name);
	return cmd->run(argc - 1, argv + 1);
}
