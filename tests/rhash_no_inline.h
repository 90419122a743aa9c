/* SPDX-License-Identifier: MIT */
/* tests/rhash_no_inline.c: the lookups built with SK_RHASH_NO_INLINE. */
#ifndef SK_TEST_RHASH_NO_INLINE_H
#define SK_TEST_RHASH_NO_INLINE_H

#include <stdint.h>

struct sk_rhash;

void *sk_test_rhash_lookup_no_inline(struct sk_rhash *ht, const void *key);
void *sk_test_rhash_lookup_u64_no_inline(struct sk_rhash *ht, uint64_t key);

#endif
