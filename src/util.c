/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the modules: environment tunables, misuse reports. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/util.h"

int sk__env_flag(const char *name)
{
	const char *v = getenv(name);

	return v && *v && strcmp(v, "0") != 0;
}

unsigned long sk__env_ulong(const char *name, unsigned long def,
			    unsigned long min, unsigned long max)
{
	const char *v = getenv(name);
	char *end;
	unsigned long x;

	if (!v)
		return def;
	errno = 0;
	x = strtoul(v, &end, 10);
	if (*v == '\0' || *v == '-' || *end != '\0' || errno || x < min ||
	    x > max) {
		fprintf(stderr,
			"scalekit: warning: ignoring %s=\"%s\" (expected an "
			"integer in [%lu, %lu]); using the default %lu\n",
			name, v, min, max, def);
		return def;
	}
	return x;
}

void sk__die(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	n = snprintf(buf, sizeof(buf), "scalekit: thread %ld: ", sk__gettid());
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	/* One write so that the line is not interleaved with other output. */
	fprintf(stderr, "%s\n", buf);
	fflush(stderr);
	abort();
}

#ifdef SK_TESTING
/* The Triplett checker hook (internal/testing.h): NULL unless a test sets it. */
#include "internal/testing.h"
void (*sk__rcu_checker_hook)(int event);
#endif
