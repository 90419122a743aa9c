/* SPDX-License-Identifier: MIT */
/*
 * CPU placement for the tests of per-CPU machinery (the per-CPU and the
 * automatic callback workers): the CPUs the process may run on, and
 * pinning the calling thread.  Definitions: tests/support/sk_test_cpu.c.
 */
#ifndef SK_TEST_CPU_H
#define SK_TEST_CPU_H

/*
 * Fill cpus[] with the first (at most max) CPUs of the process's affinity
 * mask, in increasing order; returns how many.  Aborts when the mask
 * cannot be read.
 */
int sk_test_cpus(int *cpus, int max);

/* Pin the calling thread to cpu; 0 or an errno value. */
int sk_test_pin_to(int cpu);

/* Let the calling thread run on cpus[0..n) again; 0 or an errno value. */
int sk_test_pin_to_all(const int *cpus, int n);

#endif /* SK_TEST_CPU_H */
