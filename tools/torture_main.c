/* SPDX-License-Identifier: MIT */
/*
 * `scalekit-torture`: the torture tests of `scalekit torture`.  It links
 * the testing build of the library (scalekit_testing: the broken modes of
 * --busted*, the grace-period kinds of the report; src/internal/testing.h),
 * which the installed libscalekit.so and .a do not contain; `scalekit`
 * links libscalekit.so as programs do and runs this program, found next
 * to itself, for `scalekit torture` (tools/CMakeLists.txt).
 */
#include <string.h>

#include "tool.h"

/*
 * scalekit-torture [torture] ARGS: the arguments of `scalekit torture`; a
 * first word "torture" is skipped, so that `scalekit` passes its command
 * line on as it is.
 */
int main(int argc, char **argv)
{
	char name[] = "torture";

	if (argc > 1 && strcmp(argv[1], "torture") == 0) {
		argv++;
		argc--;
	}
	argv[0] = name; /* the subcommand's name, as `scalekit` passes it */
	return sk_tool_torture(argc, argv);
}
