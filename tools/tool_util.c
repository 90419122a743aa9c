/* SPDX-License-Identifier: MIT */
/* Helpers shared by the subcommands of the `scalekit` command. */
#define _GNU_SOURCE /* memrchr */
#include "tool.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sk_tool_usage_error(const char *cmd, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (cmd)
		fprintf(stderr, "scalekit %s: %s\nTry 'scalekit %s --help'.\n",
			cmd, msg, cmd);
	else
		fprintf(stderr, "scalekit: %s\nTry 'scalekit --help'.\n", msg);
	return SK_TOOL_EXIT_USAGE;
}

int sk_tool_parse_long(const char *text, long min, long max, long *out)
{
	long v = 0;
	const char *p;

	if (!text || !*text)
		return -1;
	/* strtol() would accept blanks, signs and "0x"; be stricter. */
	for (p = text; *p; p++) {
		int d = *p - '0';

		if (d < 0 || d > 9)
			return -1;
		if (v > (max - d) / 10)
			return -1; /* beyond max, or overflow on the way */
		v = v * 10 + d;
	}
	if (v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int sk_tool_option_value(const char *cmd, int argc, char **argv, int *i,
			 const char *name, const char **value)
{
	const char *arg = argv[*i];
	size_t len = strlen(name);

	if (strncmp(arg, name, len) != 0)
		return 0;
	if (arg[len] == '=') {
		*value = arg + len + 1;
		return 1;
	}
	if (arg[len] != '\0')
		return 0;
	if (*i + 1 >= argc) {
		sk_tool_usage_error(cmd, "option %s needs a value", name);
		return -1;
	}
	*value = argv[++*i];
	return 1;
}

int sk_tool_path_beside(const char *exe, char *buf, size_t size)
{
	ssize_t n = size > 1 ? readlink("/proc/self/exe", buf, size - 1) : -1;
	char *slash;
	size_t room;

	if (n <= 0 || !(slash = memrchr(buf, '/', (size_t)n))) {
		errno = ENOENT;
		return -1;
	}
	room = size - (size_t)(slash + 1 - buf);
	if ((size_t)snprintf(slash + 1, room, "%s", exe) >= room) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int sk_tool_exec_beside(const char *exe, int argc, char **argv)
{
	char self[4096], **args;
	int i;

	if (sk_tool_path_beside(exe, self, sizeof(self))) {
		fprintf(stderr, "scalekit %s: %s\n", argv[0],
			errno == ENOENT ? "cannot find this program's directory"
					: "this program's path is too long");
		return SK_TOOL_EXIT_FAIL;
	}
	args = calloc((size_t)argc + 2, sizeof(*args));
	if (!args) {
		fprintf(stderr, "scalekit %s: out of memory\n", argv[0]);
		return SK_TOOL_EXIT_FAIL;
	}
	args[0] = self;
	for (i = 0; i < argc; i++)
		args[i + 1] = argv[i];
	fflush(NULL);
	execv(self, args);
	fprintf(stderr, "scalekit %s: cannot run %s: %s\n", argv[0], self,
		strerror(errno));
	free(args);
	return SK_TOOL_EXIT_FAIL;
}
