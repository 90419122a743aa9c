/* SPDX-License-Identifier: MIT */
/*
 * `scalekit-bench`: the benchmark of `scalekit bench`, linked with
 * libscalekit.so as programs that use scalekit link it.  The `scalekit`
 * command links the library statically (its torture modes need the
 * library's internal test knobs, which the shared library does not
 * export); `scalekit bench` runs this program, found next to itself,
 * unless given --static.  See tools/bench.c.
 */
#include <string.h>

#include "tool.h"

/*
 * scalekit-bench [bench] ARGS: the arguments of `scalekit bench`; a first
 * word "bench" is skipped, so that a command line of `scalekit` (as the
 * hash-under-lock scenario's child is started) runs here too.
 */
int main(int argc, char **argv)
{
	char name[] = "bench";

	if (argc > 1 && strcmp(argv[1], "bench") == 0) {
		argv++;
		argc--;
	}
	argv[0] = name; /* the subcommand's name, as `scalekit` passes it */
	return sk_tool_bench(argc, argv);
}
