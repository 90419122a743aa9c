/* SPDX-License-Identifier: MIT */
/*
 * rhash_checker.h - what the hash-table checker programs share
 * (test_rhash_checker.c, test_rhash_checker_migration.c): the table, its
 * objects and key sets, the reader model for the Triplett checker
 * (tests/rcu_checker.h) and the checks after an operation.  Code in
 * tests/rhash_checker.c, compiled with the testing build's definitions.
 */
#ifndef SK_TEST_RHASH_CHECKER_H
#define SK_TEST_RHASH_CHECKER_H

#include "internal/testing.h" /* first: list.h's trace points */
#include "scalekit/rhash.h"

#include <stdint.h>

#include "../src/internal/rhash.h" /* white box: ht->tbl, ht->p.seed */
#include "rcu_checker.h"

/* The bucket array (src/internal/rhash.h). */
#define chk_tbl sk_rhash_table

#define MAX_OBJS 512
#define MAX_IDS	 SK_CHK_MAX_KEYS

struct cobj {
	struct sk_rhash_node node;
	uint64_t key;  /* the table's key (8 bytes) */
	int id;	       /* checker key id */
	int freed;     /* freed by the test after a grace period */
};

extern struct cobj objs[MAX_OBJS];
extern int nobjs;
extern uint64_t keyval[MAX_IDS]; /* key of each id */
extern struct sk_rhash *ht;
extern struct sk_chk chk;
extern const struct sk_chk_ops rh_ops; /* the reader model */

/* Table blocks allocated and not freed; forget every block. */
int live_blocks(void);
void q_release_all(void);

/* objs[nobjs++] for key id (key keyval[id]); "free" o (poisoned). */
struct cobj *obj_new(int id);
void obj_free(struct cobj *o);

/* The table's current bucket array. */
struct chk_tbl *cur_tbl(void);

/* Parameters of a table of struct cobj (8-byte keys) from buckets up,
 * min 1 bucket, no automatic resize. */
struct sk_rhash_params obj_table_params(unsigned long buckets);
/* Create ht from p, no objects yet; identity: identity_hash is in use. */
void table_create(const struct sk_rhash_params *p, int identity);
/* A table of buckets on the quarantining allocator, no automatic resize. */
void table_init(unsigned long buckets, int identity);
/* Destroy ht; no block may be left. */
void table_destroy(void);
/*
 * After a completed operation: every chain holds only its bucket's nodes,
 * each id of present[] is found once by lookup and iteration, count right.
 */
void check_table(const uint64_t *present, const char *label);
/* Readers: a lookup of every id in [0, nids), one iteration. */
void add_readers(int nids, const uint64_t *stable);

/* Key sets (make_keys()). */
enum { KS_ALTERNATE, KS_IDENTITY_SHUFFLED, KS_RANDOM, KS_KINDS };
extern const char *const ks_names[KS_KINDS];

/*
 * Fill keyval[0..n) and the insertion order.  KS_ALTERNATE: key i hashes
 * to i and keys are inserted in descending order, so every chain lists its
 * keys ascending: consecutive nodes differ in the lowest bit not yet used,
 * at every table size.
 */
void make_keys(int kind, int n, uint64_t *rng, int *order);
/* Insert the keys of order[0..n), marking them in present[]. */
void fill(int n, const int *order, uint64_t *present);

/*
 * U_STALE: an insert that read the table before the resize began (only
 * the twin without RH-G2 lets one reach a migration step).
 * U_RACE_M2: an insert made inside a migration step, right before the CAS
 * of RH-M2 (a key of the run's new bucket).
 */
enum { U_INSERT, U_REMOVE, U_REPLACE, U_STALE, U_RACE_M2 };

extern const char *const u_names[U_RACE_M2 + 1];

/* The updater's own grace period before it frees what it removed. */
void gp_then_free_later(void);

/*
 * The main() of a checker program: correct() runs the tests of the correct
 * table, twins() those of the broken twins (each followed by the checker's
 * statistics), others() (or NULL) what uses no checker reader.
 */
int rhash_checker_main(int argc, char **argv, void (*correct)(void),
		       void (*twins)(void), void (*others)(void));

#endif /* SK_TEST_RHASH_CHECKER_H */
