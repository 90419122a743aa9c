/* SPDX-License-Identifier: MIT */
/*
 * tools/tool.h - what the subcommands of the `scalekit` command share.
 *
 * A subcommand is a function int sk_tool_<name>(int argc, char **argv)
 * with argv[0] the subcommand's name; it returns the exit status.  It is
 * declared here and listed in the table in scalekit.c, one entry each.
 */
#ifndef SK_TOOL_H
#define SK_TOOL_H

#include <stddef.h>

/* Exit statuses shared by every subcommand. */
#define SK_TOOL_EXIT_OK 0    /* done (benchmark targets are informational) */
#define SK_TOOL_EXIT_FAIL 1  /* the tool or the thing tested failed */
#define SK_TOOL_EXIT_USAGE 2 /* bad command line */

/* The subcommands (one file each). */
int sk_tool_bench(int argc, char **argv);
int sk_tool_torture(int argc, char **argv);
int sk_tool_litmus(int argc, char **argv);

/*
 * sk_tool_exec_beside() - run program exe, found in the directory of this
 * program, with the arguments argv[0..argc-1] (the subcommand's name
 * first), in place of this process.  `scalekit torture` runs
 * scalekit-torture so (tools/CMakeLists.txt says why).
 * Returns: only when it cannot (message printed): SK_TOOL_EXIT_FAIL.
 */
int sk_tool_exec_beside(const char *exe, int argc, char **argv);

/*
 * sk_tool_path_beside() - the path of program exe in the directory of this
 * program, into buf (size bytes).
 * Returns: 0, or -1 with errno ENOENT (this program's path is unknown) or
 * ENAMETOOLONG (it does not fit).
 */
int sk_tool_path_beside(const char *exe, char *buf, size_t size);

/*
 * sk_tool_usage_error() - print "scalekit <cmd>: <message>" and a pointer
 * to --help on stderr.
 * Returns: SK_TOOL_EXIT_USAGE, for "return sk_tool_usage_error(...)".
 */
int sk_tool_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * sk_tool_parse_long() - parse text as a decimal integer in [min, max]:
 * digits only (no sign, no blanks, no suffix), no overflow.
 * Returns: 0 with *out set, or -1 when text is not such a number.
 */
int sk_tool_parse_long(const char *text, long min, long max, long *out);

/*
 * sk_tool_option_value() - match argv[*i] against a long option that takes
 * a value, in either form "--name VALUE" or "--name=VALUE".
 * Returns: 1 with *value set (advancing *i past a separate value), 0 when
 * argv[*i] is another option, -1 when the value is missing (message
 * printed).
 */
int sk_tool_option_value(const char *cmd, int argc, char **argv, int *i,
			 const char *name, const char **value);

#endif /* SK_TOOL_H */
