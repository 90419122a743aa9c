/* SPDX-License-Identifier: MIT */
/*
 * tools/rhash_stress.h - the hash table's stress harness, one for the
 * tests and the torture tool: the key model, the thread bodies (reader:
 * sk_rhs_lookups(), sk_rhs_iterate(); updater: sk_rhs_update(); resizer:
 * sk_rhs_resize()) and the final comparison with the model
 * (sk_rhs_final()), all over a struct sk_rhs_shape whose hooks make,
 * check, free and report on a run's objects.  Two drivers: the tests'
 * self-contained run (sk_rhs_run(), tools/rhash_stress_run.c, which
 * test_rhash_stress.c drives with its broken twin) and `scalekit torture
 * rhash` (tools/torture_rhash.c: its flavors, --gp choices, pools, busted
 * ops).  Code in tools/rhash_stress*.c, built into the sk_tort_ops
 * library that both link.
 *
 * The self-contained run's threads:
 *  - readers: read sections of either a batch of lookups of random keys or
 *    one full iteration (sk_rhash_iter_start/next), under sk_rcu_read_lock;
 *  - updaters: updater u owns the keys [u * K, (u + 1) * K) and inserts,
 *    removes, replaces, insert_unique's again (refused) and looks up its
 *    keys at random, keeping a model (its objects);
 *  - resizers: sk_rhash_resize() to random powers of two, continuously;
 *  optionally automatic resizing on top.
 *
 * The key model (struct sk_rhs_keys): a per-key sequence count written by
 * the key's updater: odd while it changes the key, even otherwise, with the
 * key's presence stored before the even value (release).  A reader reads
 * the count and the presence before its lookup (acquire) and the count
 * again after it (after an acquire fence).  Unchanged and even: the key was
 * not touched by its updater for the whole lookup, so the lookup must find
 * it if present (and return an intact object with that key) and must not
 * find it if absent.  An iteration does the same for every key at once:
 * it terminates (it returns at most a bounded number of objects), returns
 * every present untouched key, no absent untouched key, and only intact
 * objects.
 *
 * Reclamation: the correct variant frees removed objects after a grace
 * period (sk_call_rcu() with a callback that sets the poison field and then
 * frees, or SK_FREE_RCU()).  Readers check the poison field of every object
 * they reach, several times with spin delays in between, inside their
 * section.  The broken variant (cfg.broken) "frees" at once: it sets the
 * poison field and quarantines the object; quarantined objects are really
 * freed only after a later sk_synchronize_rcu(), so ASan stays quiet and
 * the readers see poison instead.  The poison field is always accessed
 * atomically (the broken variant races on it by design); the payload is
 * read with plain loads, so that TSan checks that the grace period orders
 * the readers' loads before free().
 *
 * At the end the table must equal the union of the updaters' models
 * (lookups, one iteration, sk_rhash_count()).
 */
#ifndef SK_RHASH_STRESS_H
#define SK_RHASH_STRESS_H

#include <stdint.h>

#include "scalekit/rcu.h"
#include "scalekit/rhash.h"

struct sk_tort_rng;

/* A freed object's poison field. */
#define SK_RHS_POISON ((unsigned long)0x6b6b6b6b6b6b6b6bULL)
#define SK_RHS_PAYLOAD 4
#define SK_RHS_MAX_UPD 16

/* ---- the key model ------------------------------------------------------ */

/* Keys 0 .. n-1, each changed by one updater only. */
struct sk_rhs_keys {
	unsigned long n;
	unsigned long *seq; /* per key: odd while its updater changes it */
	int *present;	    /* per key: valid while seq is even */
};

/* What a reader saw of key k before its lookup. */
struct sk_rhs_snap {
	unsigned long seq;
	int present;
};

/* The verdict on a lookup (or an iteration) of a key. */
enum sk_rhs_verdict {
	SK_RHS_CHANGED, /* the key changed meanwhile: nothing to check */
	SK_RHS_OK,
	SK_RHS_MISSING, /* present and untouched, not found */
	SK_RHS_GHOST,	/* absent and untouched, found */
};

/* Every key absent.  0, or -ENOMEM. */
int sk_rhs_keys_init(struct sk_rhs_keys *k, unsigned long n);
void sk_rhs_keys_fini(struct sk_rhs_keys *k);

/* The updater of key: before it changes the key (count odd). */
void sk_rhs_key_changing(const struct sk_rhs_keys *k, unsigned long key);
/* ... after: present or not; count even again. */
void sk_rhs_key_changed(const struct sk_rhs_keys *k, unsigned long key,
			int present);

/* A reader, before its lookup of key. */
void sk_rhs_key_snap(const struct sk_rhs_keys *k, unsigned long key,
		     struct sk_rhs_snap *s);
/*
 * A reader, after its lookup of key found (or not) and after sk_smp_rmb()
 * (the lookup's loads before the second read of the count).
 */
enum sk_rhs_verdict sk_rhs_key_verdict(const struct sk_rhs_keys *k,
				       unsigned long key,
				       const struct sk_rhs_snap *s, int found);

/* ---- the thread bodies (the tests' run and `scalekit torture rhash`) ---- */

/* What a check found wrong (sk_rhs_shape.fail). */
enum sk_rhs_fail {
	SK_RHS_F_MISSING,      /* lookup: a present untouched key not found */
	SK_RHS_F_GHOST,	       /* lookup: an absent untouched key found */
	SK_RHS_F_ITER_MISSING, /* iteration: ... not returned */
	SK_RHS_F_ITER_GHOST,   /* iteration: ... returned */
	SK_RHS_F_RUNAWAY,      /* an iteration that does not end */
	SK_RHS_F_UNKNOWN_KEY,  /* an object with a key no one inserted */
	SK_RHS_F_UPDATE,       /* an update returned an error (detail) */
	SK_RHS_F_DUP,	       /* insert_unique of a present key: not -EEXIST */
	SK_RHS_F_OWN,	  /* the updater's lookup of its key: not its model */
	SK_RHS_F_BUCKETS, /* a bucket count not a power of two */
	SK_RHS_F_FINAL,	  /* the quiescent table is not the model */
	SK_RHS_F_NR
};

/* One line each, for messages. */
extern const char *const sk_rhs_fail_what[SK_RHS_F_NR];

/* The kinds of sk_rhs_update(): each update is exactly one. */
enum sk_rhs_kind {
	SK_RHS_INSERT,
	SK_RHS_REMOVE,
	SK_RHS_REPLACE,
	SK_RHS_DUP_INSERT, /* of a present key, refused */
	SK_RHS_OWN_LOOKUP,
	SK_RHS_KIND_NR
};

/*
 * A run's table, its model and its objects.  Keys 0 .. first-1 are
 * stable (inserted before, present until the end: stable[k]); keys first
 * .. first+keys.n-1 are volatile, key first+v changed by one updater only
 * (model[v]: its object, or NULL).  The hooks make, check and dispose of
 * the objects (tests: tools/rhash_stress_run.c; torture: torture_rhash.c);
 * ctx is theirs, t their thread (NULL: the end of the run).
 */
struct sk_rhs_hooks {
	/* Intact (and key want, unless ~0UL)? 1 with *key set, or 0. */
	int (*check)(void *ctx, void *t, void *obj, unsigned long want,
		     int linger, unsigned long *key);
	void (*fail)(void *ctx, void *t, enum sk_rhs_fail f, unsigned long key,
		     long detail);
	void *(*make)(void *ctx, void *t, unsigned long key); /* NULL: none */
	void (*unmake)(void *ctx, void *t, void *obj); /* never published */
	void (*retire)(void *ctx, void *t, void *obj, int replaced);
};

struct sk_rhs_shape {
	struct sk_rhash *ht;
	struct sk_rhs_keys keys;
	unsigned long first;
	void **stable;
	void **model;
	size_t node_off;       /* of the struct sk_rhash_node in an object */
	unsigned int max_log2; /* resizes to 1 .. 2^max_log2 buckets */
	unsigned int big_log, big_logs; /* 1 in 8: 2^big_log.. (0: never) */
	unsigned int spin_first;	/* lookups: the first of n lingers */
	int plain_inserts;		/* only sk_rhash_insert() (lock-free) */
	void *ctx;
	const struct sk_rhs_hooks *h;
};

/* Keys looked up: the stable and volatile ones, and a few never present. */
static inline unsigned long sk_rhs_key_range(const struct sk_rhs_shape *sh)
{
	return sh->first + sh->keys.n + sh->keys.n / 16 + 1;
}

/*
 * A reader, inside its read section: n lookups of random keys, checked
 * with the key model; the intact objects found go to found[] (up to n,
 * with their keys in fkey[]; may be NULL).  Returns how many; *checked
 * counts the keys untouched throughout their lookup.
 */
unsigned long sk_rhs_lookups(const struct sk_rhs_shape *sh, void *t,
			     struct sk_tort_rng *rng, unsigned long n,
			     void **found, unsigned long *fkey,
			     unsigned long *checked);

/*
 * A reader, inside its read section: one full iteration; it must end,
 * return only intact objects of known keys, every stable key, every
 * present untouched key and no absent one.  *held: its 8th object (or
 * left alone).  Returns the objects returned.
 */
unsigned long sk_rhs_iterate(const struct sk_rhs_shape *sh, void *t,
			     void **held, unsigned long *checked);

/*
 * The updater of volatile key first+v: one update (insert when absent;
 * else remove, replace, duplicate insert or own lookup), with the key
 * model around it; with stable keys, 1 in 64 also tries a duplicate
 * insert of one.  Returns its kind, or -ENOMEM (make failed).
 */
int sk_rhs_update(const struct sk_rhs_shape *sh, void *t,
		  struct sk_tort_rng *rng, unsigned long v);

/*
 * A resizer: one sk_rhash_resize() to a random power of two (its result,
 * for the caller to judge), then the bucket count checked.
 */
int sk_rhs_resize(const struct sk_rhs_shape *sh, void *t,
		  struct sk_tort_rng *rng);

/*
 * The end, nothing running: the table equals the model (lookups, one
 * iteration, sk_rhash_count()).  Returns the keys present.
 */
unsigned long sk_rhs_final(const struct sk_rhs_shape *sh);

/* ---- the self-contained run (the tests) --------------------------------- */

struct sk_rhs_obj {
	struct sk_rhash_node node;
	unsigned long key;
	uint64_t gen;			  /* creation number (updater-local) */
	uint64_t payload[SK_RHS_PAYLOAD]; /* sk_rhs_payload(key, gen, i) */
	unsigned long poison;		  /* 0 live, SK_RHS_POISON freed */
	struct sk_rcu_head rcu;
	struct sk_rhs_obj *qnext; /* quarantine (broken variant) */
};

struct sk_rhs_config {
	const char *name;      /* for messages */
	unsigned int readers;  /* reader threads */
	unsigned int updaters; /* updater threads, <= SK_RHS_MAX_UPD */
	unsigned int keys_per_updater;
	unsigned long updates;	    /* per updater */
	unsigned int resizers;	    /* threads calling sk_rhash_resize() */
	unsigned int max_log2;	    /* resizes between 1 and 1 << max_log2 */
	unsigned int iterate_every; /* 1 in N read sections iterates */
	unsigned int lookups_per_section;
	unsigned int spin;	/* spin loops between re-checks */
	int automatic_resize;	/* table param */
	int updates_in_section; /* updaters update inside read sections */
	int plain_inserts;	/* only sk_rhash_insert() (lock-free) */
	int broken;		/* free without a grace period */
	int stop_on_failure;	/* end early once a failure is seen */
	uint64_t seed;
};

struct sk_rhs_result {
	unsigned long lookups, iterations, resizes, resize_errors;
	unsigned long kinds[SK_RHS_KIND_NR]; /* updates of each kind */
	unsigned long checked_keys;	     /* keys untouched during a check */
	unsigned long missing;	      /* untouched present key not found */
	unsigned long ghosts;	      /* untouched absent key found */
	unsigned long iter_missing;   /* ... not returned by an iteration */
	unsigned long iter_ghosts;    /* ... absent but returned */
	unsigned long poisoned;	      /* an object seen freed in a section */
	unsigned long corrupt;	      /* wrong key or payload */
	unsigned long runaway;	      /* an iteration that did not end */
	unsigned long update_errors;  /* an update's wrong result */
	unsigned long final_mismatch; /* table != model at the end */
	unsigned long max_buckets_seen;
};

/*
 * Run one stress configuration; res receives the sums.
 * Returns 0, or -errno when the table or a thread could not be created.
 */
int sk_rhs_run(const struct sk_rhs_config *cfg, struct sk_rhs_result *res);

/* Print the result on stderr, one line. */
void sk_rhs_print(const struct sk_rhs_config *cfg,
		  const struct sk_rhs_result *r);

/* Failures seen by the readers (the final comparison apart). */
unsigned long sk_rhs_failures(const struct sk_rhs_result *r);

#endif /* SK_RHASH_STRESS_H */
