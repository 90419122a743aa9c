/* SPDX-License-Identifier: MIT */
/* CPU placement for tests: see tests/sk_test_cpu.h. */
#define _GNU_SOURCE
#include "sk_test_cpu.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

int sk_test_cpus(int *cpus, int max)
{
	cpu_set_t set;
	int i, n = 0;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		abort();
	for (i = 0; i < CPU_SETSIZE && n < max; i++)
		if (CPU_ISSET(i, &set))
			cpus[n++] = i;
	return n;
}

int sk_test_pin_to_all(const int *cpus, int n)
{
	cpu_set_t set;
	int i;

	CPU_ZERO(&set);
	for (i = 0; i < n; i++)
		CPU_SET(cpus[i], &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

int sk_test_pin_to(int cpu)
{
	return sk_test_pin_to_all(&cpu, 1);
}
