/* SPDX-License-Identifier: MIT */
/*
 * The hash-table tests' object and table (test_rhash.c, test_rhash_resize.c,
 * test_rhash_misuse.c): an object with an 8-byte key after a pad (so that
 * the node is not at offset 0), a table of such objects with automatic
 * resizing off, and the sanitizer options of programs that fork or catch
 * SIGSEGV.  Code in tests/support/sk_test_rhash.c.
 */
#ifndef SK_TEST_RHASH_H
#define SK_TEST_RHASH_H

#include <stddef.h>
#include <stdint.h>

#include "scalekit/rhash.h"

struct obj {
	uint64_t pad;
	struct sk_rhash_node node;
	uint64_t key;
	int freed_by_cb; /* test_rhash.c's free callback counts here */
};

/*
 * A table of objects with their node at head and an 8-byte key at key:
 * buckets to start with, min 1 bucket, no automatic resize.
 */
struct sk_rhash_params sk_test_rhash_params(size_t head, size_t key,
					    unsigned long buckets);

/* sk_test_rhash_params() of struct obj. */
struct sk_rhash_params obj_params(unsigned long buckets);

/* A table of obj_params(buckets); exits with 2 if it cannot be created. */
struct sk_rhash *table_new(unsigned long buckets);

/*
 * n objects with distinct keys (i * 7919 + 1); cleared, or straight from
 * malloc() (insert needs no initialised node).  Exits with 2 on ENOMEM.
 */
struct obj *objs_new(int n, int cleared);

/*
 * Every object of o[0..n) findable, an iteration returns each once, the
 * count is n; a failure is a test failure that names what.
 */
void check_all(struct sk_rhash *ht, struct obj *o, int n, const char *what);

#endif /* SK_TEST_RHASH_H */
