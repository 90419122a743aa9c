/* SPDX-License-Identifier: MIT */
/* The hash-table tests' object and table (tests/sk_test_rhash.h). */
#include "sk_test_rhash.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "scalekit/rcu.h"
#include "sk_test.h"

struct sk_rhash_params sk_test_rhash_params(size_t head, size_t key,
					    unsigned long buckets)
{
	struct sk_rhash_params p = SK_RHASH_PARAMS_DEFAULT;

	p.head_offset = head;
	p.key_offset = key;
	p.key_len = sizeof(uint64_t);
	p.initial_buckets = buckets;
	p.min_buckets = 1;
	p.automatic_resize = 0;
	return p;
}

struct sk_rhash_params obj_params(unsigned long buckets)
{
	return sk_test_rhash_params(offsetof(struct obj, node),
				    offsetof(struct obj, key), buckets);
}

struct sk_rhash *table_new(unsigned long buckets)
{
	struct sk_rhash_params p = obj_params(buckets);
	struct sk_rhash *ht = sk_rhash_create(&p);

	if (!ht) {
		perror("sk_rhash_create");
		exit(2);
	}
	return ht;
}

struct obj *objs_new(int n, int cleared)
{
	struct obj *o = cleared ? calloc((size_t)n, sizeof(*o))
				: malloc((size_t)n * sizeof(*o));
	int i;

	if (!o)
		exit(2);
	for (i = 0; i < n; i++)
		o[i].key = (uint64_t)i * 7919 + 1;
	return o;
}

void check_all(struct sk_rhash *ht, struct obj *o, int n, const char *what)
{
	struct sk_rhash_iter it;
	struct obj *x;
	int i, bad = 0, got = 0;
	unsigned char *seen = calloc((size_t)n + 1, 1);

	if (!seen)
		exit(2);
	sk_rcu_read_lock();
	for (i = 0; i < n; i++)
		if (sk_rhash_lookup(ht, &o[i].key) != &o[i])
			bad++;
	sk_rhash_iter_start(ht, &it);
	while ((x = sk_rhash_iter_next(&it)) != NULL) {
		long idx = x - o;

		if (idx < 0 || idx >= n || seen[idx]++ || ++got > n) {
			bad++;
			break;
		}
	}
	sk_rcu_read_unlock();
	if (bad || got != n)
		SK_T_FAIL("%s: %d objects not found or returned wrongly, "
			  "iteration returned %d of %d",
			  what, bad, got, n);
	SK_CHECK_EQ(sk_rhash_count(ht), n);
	free(seen);
}
