/* SPDX-License-Identifier: MIT */
/*
 * The checked words of the keyed torture objects (torture_list.c,
 * torture_rhash.c): a key, a generation, a check word the mode computes
 * from both, and a magic word that says live or freed.  Readers verify
 * them on every object they reach; an object is poisoned just before its
 * free, so a reader that reaches a freed one sees it.
 */
#ifndef SK_TORTURE_STAMP_H
#define SK_TORTURE_STAMP_H

#include "torture_core.h"

struct sk_tort_stamp {
	unsigned long key;
	unsigned long magic; /* SK_TORT_MAGIC, or SK_TORT_POISON once freed */
	unsigned long gen;
	unsigned long check; /* the mode's check(key, gen) */
};

/* Fill the words of a new object, not yet reachable (busted: racy). */
static inline void sk_tort_stamp_set(struct sk_tort *T,
				     struct sk_tort_stamp *s,
				     unsigned long key, unsigned long gen,
				     unsigned long check)
{
	SK_TORT_STORE(T, s->key, key);
	SK_TORT_STORE(T, s->gen, gen);
	SK_TORT_STORE(T, s->check, check);
	SK_TORT_STORE(T, s->magic, SK_TORT_MAGIC);
}

/* Poison the words of an object about to be freed. */
static inline void sk_tort_stamp_poison(struct sk_tort *T,
					struct sk_tort_stamp *s)
{
	SK_TORT_STORE(T, s->magic, SK_TORT_POISON);
	SK_TORT_STORE(T, s->check, SK_TORT_POISON);
}

#endif /* SK_TORTURE_STAMP_H */
