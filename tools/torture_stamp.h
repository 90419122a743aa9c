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

#include <stddef.h>

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

/*
 * A new object from pool (NULL if none) whose stamp is at offset st_off,
 * stamped with key, gen and the mode's check word.
 */
static inline void *sk_tort_stamped_new(struct sk_tort *T,
					struct sk_tort_pool *pool,
					size_t st_off, unsigned long key,
					unsigned long gen, unsigned long check)
{
	char *o = sk_tort_obj_alloc(T, pool);

	if (o)
		sk_tort_stamp_set(T, (struct sk_tort_stamp *)(o + st_off), key,
				  gen, check);
	return o;
}

/* Poison the stamp (at st_off) of o and give o back to its pool. */
static inline void sk_tort_stamped_retire(struct sk_tort *T,
					  struct sk_tort_obj *o, size_t st_off)
{
	sk_tort_stamp_poison(T, (struct sk_tort_stamp *)((char *)o + st_off));
	sk_tort_pool_retire(o->pool, o);
}

/*
 * A reader's check of the stamp st of obj (a what, reached when): live
 * and check(key, gen) intact.  1 with *key set, or 0 after counting an
 * error that names the object (tools/torture_util.c).
 */
int sk_tort_stamp_ok(struct sk_tort_thread *t, const char *what,
		     const void *obj, const struct sk_tort_stamp *st,
		     const char *when,
		     unsigned long (*check)(unsigned long key,
					    unsigned long gen),
		     unsigned long *key);

#endif /* SK_TORTURE_STAMP_H */
