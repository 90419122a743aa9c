/* SPDX-License-Identifier: MIT */
/*
 * The other half of test_rhash_inline.c: a translation unit built with
 * SK_RHASH_NO_INLINE, so that its sk_rhash_lookup() and
 * sk_rhash_lookup_u64() calls are calls of the exported functions
 * (scalekit/rhash.h).
 */
#define SK_RHASH_NO_INLINE
#include "scalekit/rhash.h"

#include "rhash_no_inline.h"

void *sk_test_rhash_lookup_no_inline(struct sk_rhash *ht, const void *key)
{
	return sk_rhash_lookup(ht, key);
}

void *sk_test_rhash_lookup_u64_no_inline(struct sk_rhash *ht, uint64_t key)
{
	return sk_rhash_lookup_u64(ht, key);
}

#if defined(sk_rhash_lookup) || defined(sk_rhash_lookup_u64)
#error "SK_RHASH_NO_INLINE must leave the lookups functions"
#endif
