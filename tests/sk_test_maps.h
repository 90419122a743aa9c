/* SPDX-License-Identifier: MIT */
/*
 * Allocator for use-after-free tests of table memory: every allocation is
 * a private mapping; a freed one becomes PROT_NONE (never unmapped while a
 * test runs), so that a later touch faults and a SIGSEGV handler can tell
 * it apart (map_find()).  At most MAX_MAPS allocations per test; reset by
 * munmapping maps[0..nmaps) and setting nmaps to 0.
 */
#ifndef SK_TEST_MAPS_H
#define SK_TEST_MAPS_H

#include <stdlib.h>
#include <sys/mman.h>

#define MAX_MAPS 64

static struct map {
	char *p;
	size_t len;
	int freed;
} maps[MAX_MAPS];
static int nmaps;

/* Allocate size bytes in a fresh mapping; NULL when MAX_MAPS are used. */
static void *map_alloc(size_t size)
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

/* Mark p freed and make it PROT_NONE; aborts on a pointer not allocated. */
static void map_free(void *p)
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

/* Index of the mapping that holds address a, or -1 (async-signal-safe). */
static int map_find(const char *a)
{
	int i, n = __atomic_load_n(&nmaps, __ATOMIC_ACQUIRE);

	for (i = 0; i < n; i++)
		if (a >= maps[i].p && a < maps[i].p + maps[i].len)
			return i;
	return -1;
}

#endif /* SK_TEST_MAPS_H */
