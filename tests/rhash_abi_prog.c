/* SPDX-License-Identifier: MIT */
/*
 * A program that uses sk_rhash_lookup(), for tests/rhash_abi.cmake: built
 * as is (the inline lookup) and with -DSK_RHASH_NO_INLINE.  It prints
 * "loaded" once the dynamic loader has started it; the lookup call never
 * runs (no arguments), it is there for the references it makes.
 */
#include "scalekit/rhash.h"

#include <stdio.h>

int main(int argc, char **argv)
{
	uint64_t key = 1;

	(void)argv;
	if (argc > 1000) /* never: no table */
		return sk_rhash_lookup(NULL, &key) != NULL;
	puts("loaded");
	return 0;
}
