/* SPDX-License-Identifier: MIT */
/* sk_test.h: the counters, the name filter, the report, the seed. */
#include "sk_test.h"

int sk_t_failed_checks;
int sk_t_passed, sk_t_failed;
uint64_t sk_t_seed;
const char *sk_t_only;

static int sk_t_selected_any; /* a test passed the filter */

void sk_test_check_ints(const int *got, int ngot, const int *want, int nwant)
{
	int i;

	SK_CHECK_EQ(ngot, nwant);
	for (i = 0; i < nwant && i < ngot; i++)
		SK_CHECK_EQ(got[i], want[i]);
}

double sk_test_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void sk_test_args(int argc, char **argv)
{
	if (argc <= 1)
		return;
	if (argc > 2 || argv[1][0] == '-' || !argv[1][0]) {
		fprintf(stderr,
			"usage: %s [name]\n"
			"  name: run only the tests whose function name "
			"contains it\n",
			argv[0]);
		exit(2);
	}
	sk_t_only = argv[1];
}

int sk_test_selected(const char *name)
{
	if (sk_t_only && !strstr(name, sk_t_only))
		return 0;
	sk_t_selected_any = 1;
	return 1;
}

int sk_test_report(void)
{
	printf("%d passed, %d failed\n", sk_t_passed, sk_t_failed);
	if (sk_t_only && !sk_t_selected_any) {
		fprintf(stderr, "no test name contains \"%s\"\n", sk_t_only);
		return 2;
	}
	return sk_t_failed ? 1 : 0;
}

unsigned sk_test_slow(void)
{
	const char *v = getenv("SK_TEST_SLOW");

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	return 8;
#endif
	return (v && *v && strcmp(v, "0")) ? 8 : 1;
}

uint64_t sk_test_seed_init(void)
{
	const char *v = getenv("SK_TEST_SEED");

	sk_t_seed = v ? strtoull(v, NULL, 0) : (uint64_t)time(NULL);
	fprintf(stderr, "seed %" PRIu64 " (replay with SK_TEST_SEED=%" PRIu64
			")\n",
		sk_t_seed, sk_t_seed);
	return sk_t_seed;
}
