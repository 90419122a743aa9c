/* SPDX-License-Identifier: MIT */
/* sk_test_maps.h: the mmap allocator of the use-after-free tests. */
#define _GNU_SOURCE
#include <sys/mman.h>

#include "sk_test_maps.h"

struct map maps[MAX_MAPS];
int nmaps;

void *map_alloc(size_t size)
{
	size_t len = (size + 4095) & ~(size_t)4095;
	void *p;

	if (nmaps == MAX_MAPS)
		return NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	maps[nmaps].p = (char *)p;
	maps[nmaps].len = len;
	maps[nmaps].freed = 0;
	/* Release: a signal handler that sees the count sees the entry. */
	__atomic_fetch_add(&nmaps, 1, __ATOMIC_RELEASE);
	return p;
}

void map_free(void *p)
{
	/*
	 * Acquire: pairs with map_alloc()'s release, which may run in
	 * another thread (a table frees arrays from RCU callbacks).
	 */
	int i, n = __atomic_load_n(&nmaps, __ATOMIC_ACQUIRE);

	for (i = 0; i < n; i++)
		if (maps[i].p == p &&
		    !__atomic_load_n(&maps[i].freed, __ATOMIC_RELAXED)) {
			/* Release: pairs with the handler's acquire of freed. */
			__atomic_store_n(&maps[i].freed, 1, __ATOMIC_RELEASE);
			mprotect(p, maps[i].len, PROT_NONE);
			return;
		}
	abort();
}

int map_find(const char *a)
{
	int i, n = __atomic_load_n(&nmaps, __ATOMIC_ACQUIRE);

	for (i = 0; i < n; i++)
		if (a >= maps[i].p && a < maps[i].p + maps[i].len)
			return i;
	return -1;
}
