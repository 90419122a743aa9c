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

struct map {
	char *p;
	size_t len;
	int freed;
};

/* The allocations of the current test (entries published by nmaps). */
extern struct map maps[MAX_MAPS];
extern int nmaps;

/* Allocate size bytes in a fresh mapping; NULL when MAX_MAPS are used. */
void *map_alloc(size_t size);

/* Mark p freed and make it PROT_NONE; aborts on a pointer not allocated. */
void map_free(void *p);

/* Index of the mapping that holds address a, or -1 (async-signal-safe). */
int map_find(const char *a);

#endif /* SK_TEST_MAPS_H */
