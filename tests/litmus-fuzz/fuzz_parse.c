/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the parser of `scalekit litmus`: any bytes go to
 * lt_parse(), which must return 0 or -1 with a "file:line: message"
 * error, never crash, read out of bounds or leak.  Build and run with
 * scripts/fuzz-litmus.sh (clang -fsanitize=fuzzer,address,undefined).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "litmus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lt_test t;
	char err[LT_ERR];
	/* A copy of exactly size bytes: ASan sees any read past the end. */
	char *text = malloc(size ? size : 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	if (lt_parse("fuzz.litmus", text, size, &t, err) == 0) {
#ifdef LT_FUZZ_RUN
		struct lt_opts o = { .iterations = 8, .seconds = 0.01,
				     .threads = 2, .seed = 1 };
		struct lt_result r;

		if (lt_run(&t, &o, &r) != 0 &&
		    strncmp(r.error, "fuzz.litmus:", 12) != 0) {
			fprintf(stderr, "runtime error without file:line: "
				"%s\n", r.error);
			abort();
		}
		free(r.states);
#endif
		lt_free(&t);
	} else if (strncmp(err, "fuzz.litmus:", 12) != 0) {
		fprintf(stderr, "error without file:line: %s\n", err);
		abort();
	}
	free(text);
	return 0;
}
