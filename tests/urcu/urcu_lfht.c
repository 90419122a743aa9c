/* SPDX-License-Identifier: MIT */
/*
 * tests/urcu/urcu_lfht.c - liburcu's lock-free hash table (liburcu-cds)
 * on scalekit's grace periods: the table is created with scalekit's memb
 * flavor table, and nothing of liburcu's RCU flavor libraries is linked
 * (tests/urcu/needed.cmake checks that).
 *
 *   urcu_lfht flavor   cds_lfht_new_flavor(..., &urcu_memb_flavor, ...)
 *   urcu_lfht macro    cds_lfht_new(...), which takes rcu_flavor
 *
 * Readers look keys up inside read sections and check what they find;
 * updaters add, delete and replace nodes (the table grows and shrinks:
 * CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING).  Removed nodes are
 * reclaimed through the flavor table: by update_call_rcu, or in batches
 * after update_synchronize_rcu.  Reclaiming poisons a node and puts it
 * in a quarantine ring (it is freed when the ring wraps), so a reader
 * that still sees a reclaimed node finds the poison: "ERROR: poisoned".
 * Built with -DURCU_TEST_BROKEN (the broken twin) reclaiming does not
 * wait for readers, and the test must report that error.
 */
#define _GNU_SOURCE
#include "urcu_test.h"

#include <urcu/rculfhash.h>

#include <pthread.h>
#include <stddef.h>
#include <unistd.h>

#define NKEYS	   2048
#define NREADERS   2
#define NUPDATERS  2
#define QUARANTINE 65536

#define MAGIC_LIVE   0x5ca1ab1eUL
#define MAGIC_POISON 0xdeadbeefUL

struct node {
	struct cds_lfht_node lfht; /* first: the casts below rely on it */
	unsigned long key;
	unsigned long value;	   /* key + NKEYS * generation */
	unsigned long magic;	   /* MAGIC_LIVE until reclaimed */
	struct rcu_head rh;
};

/*
 * TSan does not see liburcu-cds's atomics (the library is not
 * instrumented): the edges they make, from a node's initialisation to the
 * readers that find it, are told to TSan here, and what liburcu-cds
 * allocates and frees for its bucket tables is left out of its reports.
 */
#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void)
{
	return "called_from_lib:liburcu-cds.so\n";
}
#define CDS_PUBLISHED(n) __tsan_release(n)
#define CDS_FOUND(n)	 __tsan_acquire(n)
#else
#define CDS_PUBLISHED(n) ((void)(n))
#define CDS_FOUND(n)	 ((void)(n))
#endif

#define LOAD(x)	    __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

static struct cds_lfht *ht;
static const struct rcu_flavor_struct *flv; /* reclaims through it */
static int stop;
static unsigned long errors, lookups, found, updates;
static unsigned long progress[NUPDATERS]; /* 1 + updates, once registered */

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static struct node *quarantine[QUARANTINE];
static unsigned long q_next;
#ifdef URCU_TEST_BROKEN
static struct node **grave; /* reclaimed nodes the ring let go of */
static size_t ngrave, capgrave;
#endif

static unsigned long hash_key(unsigned long key)
{
	return key * 0x9e3779b97f4a7c15ULL >> 7;
}

static int match(struct cds_lfht_node *n, const void *key)
{
	CDS_FOUND(n);
	return LOAD(((struct node *)n)->key) == *(const unsigned long *)key;
}

static void reclaim(struct node *n)
{
	struct node *old;

	STORE(n->magic, MAGIC_POISON);
	pthread_mutex_lock(&q_lock);
	old = quarantine[q_next % QUARANTINE];
	quarantine[q_next++ % QUARANTINE] = n;
#ifdef URCU_TEST_BROKEN
	/*
	 * Reclaiming waited for no reader: one preempted for the ring's
	 * length could still read old.  Keep it (freed at the end) so the
	 * reader finds the poison, not freed memory (the sanitizers would
	 * stop the twin before it prints its error).
	 */
	if (old) {
		if (ngrave == capgrave) {
			capgrave = capgrave ? 2 * capgrave : 1024;
			grave = realloc(grave, capgrave * sizeof(*grave));
			URCU_CHECK(grave);
		}
		grave[ngrave++] = old;
		old = NULL;
	}
#endif
	pthread_mutex_unlock(&q_lock);
	free(old);
}

static void reclaim_cb(struct rcu_head *rh)
{
	reclaim((struct node *)((char *)rh - offsetof(struct node, rh)));
}

#ifdef URCU_TEST_BROKEN
/* The broken twin's flavor: reclaims at once. */
static void call_at_once(struct rcu_head *rh, void (*fn)(struct rcu_head *))
{
	fn(rh);
}
static void sync_nothing(void) {}
#endif

static void check_node(struct node *n, unsigned long key)
{
	CDS_FOUND(n);
	unsigned long m = LOAD(n->magic), v = LOAD(n->value);

	if (m != MAGIC_LIVE || LOAD(n->key) != key || v % NKEYS != key) {
		__atomic_fetch_add(&errors, 1, __ATOMIC_RELAXED);
		STORE(stop, 1);
	}
}

/* A node found by a walk: its key is whatever it says. */
static void check_walked(struct node *n)
{
	CDS_FOUND(n);
	check_node(n, LOAD(n->key) % NKEYS);
}

static void *reader(void *arg)
{
	unsigned long seed = (unsigned long)arg * 7919 + 1, key, n = 0, f = 0;
	struct cds_lfht_iter iter;
	struct cds_lfht_node *node;
	volatile int spin;

	rcu_register_thread();
	while (!LOAD(stop)) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		key = (seed >> 33) % NKEYS;
		rcu_read_lock();
		cds_lfht_lookup(ht, hash_key(key), match, &key, &iter);
		node = cds_lfht_iter_get_node(&iter);
		if (node) {
			check_node((struct node *)node, key);
			for (spin = 0; spin < 100; spin++)
				;
			check_node((struct node *)node, key);
			f++;
		}
		if (++n % 1024 == 0) /* a walk over the whole table */
			cds_lfht_for_each(ht, &iter, node)
				check_walked((struct node *)node);
		rcu_read_unlock();
	}
	rcu_unregister_thread();
	__atomic_fetch_add(&lookups, n, __ATOMIC_RELAXED);
	__atomic_fetch_add(&found, f, __ATOMIC_RELAXED);
	return NULL;
}

static struct node *new_node(unsigned long key, unsigned long gen)
{
	/*
	 * malloc(), not calloc(), and atomic stores: liburcu-cds publishes
	 * the node with its own atomics, which TSan does not see (it is not
	 * instrumented); atomic accesses on both sides never race for it.
	 */
	struct node *n = malloc(sizeof(*n));

	URCU_CHECK(n != NULL);
	cds_lfht_node_init(&n->lfht);
	STORE(n->key, key);
	STORE(n->value, key + NKEYS * gen);
	STORE(n->magic, MAGIC_LIVE);
	CDS_PUBLISHED(n);
	return n;
}

#define BATCH 64

/* Updater 0 reclaims by call_rcu, updater 1 in batches after a sync. */
static void retire(int id, struct node *n, struct node **batch, int *nb)
{
	int i;

	if (id == 0) {
		flv->update_call_rcu(&n->rh, reclaim_cb);
		return;
	}
	batch[(*nb)++] = n;
	if (n && *nb < BATCH)
		return;
	flv->update_synchronize_rcu();
	for (i = 0; i < *nb; i++)
		if (batch[i])
			reclaim(batch[i]);
	*nb = 0;
}

/*
 * One update of key: phases of 4096 updates alternate between filling
 * (add or replace) and draining (delete), so the table grows and shrinks.
 * Returns the node it removed, if any.  Inside a read section.
 */
static struct node *update_key(unsigned long key, int fill, unsigned long *gen)
{
	struct cds_lfht_iter iter;
	struct cds_lfht_node *old;
	struct node *n;

	cds_lfht_lookup(ht, hash_key(key), match, &key, &iter);
	old = cds_lfht_iter_get_node(&iter);
	if (!fill)
		return old && cds_lfht_del(ht, old) == 0 ? (struct node *)old : NULL;
	n = new_node(key, (*gen)++);
	if (!old) {
		if (cds_lfht_add_unique(ht, hash_key(key), match, &key,
					&n->lfht) != &n->lfht)
			free(n); /* another updater added it: never published */
		return NULL;
	}
	if (cds_lfht_replace(ht, &iter, hash_key(key), match, &key,
			     &n->lfht) == 0)
		return (struct node *)old;
	free(n);
	return NULL;
}

static void *updater(void *arg)
{
	int id = (int)(long)arg, nb = 0;
	unsigned long seed = (unsigned long)id * 104729 + 3, gen = 1, n = 0;
	struct node *batch[BATCH], *gone;

	rcu_register_thread();
	STORE(progress[id], 1);
	while (!LOAD(stop)) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		rcu_read_lock();
		gone = update_key((seed >> 33) % NKEYS, !(n / 4096 % 2), &gen);
		rcu_read_unlock();
		if (gone)
			retire(id, gone, batch, &nb);
		n++;
		STORE(progress[id], n + 1);
	}
	if (id != 0)
		retire(id, NULL, batch, &nb); /* the rest of the batch */
	rcu_unregister_thread();
	__atomic_fetch_add(&updates, n, __ATOMIC_RELAXED);
	return NULL;
}

/* Empty the table (after a grace period, free what it held), destroy it. */
static void destroy_table(void)
{
	struct cds_lfht_iter iter;
	struct cds_lfht_node *node;
	unsigned long i, n = 0;
	long before, after;
	struct node **gone = calloc(NKEYS, sizeof(*gone));

	URCU_CHECK(gone != NULL);
	rcu_read_lock();
	cds_lfht_count_nodes(ht, &before, &n, &after);
	n = 0;
	cds_lfht_for_each(ht, &iter, node)
		if (cds_lfht_del(ht, node) == 0 && n < NKEYS)
			gone[n++] = (struct node *)node;
	rcu_read_unlock();
	synchronize_rcu();
	for (i = 0; i < n; i++)
		reclaim(gone[i]);
	free(gone);
	rcu_barrier(); /* the call_rcu reclaims */
	URCU_CHECK(cds_lfht_destroy(ht, NULL) == 0);
	for (i = 0; i < QUARANTINE; i++)
		free(quarantine[i]);
#ifdef URCU_TEST_BROKEN
	for (size_t g = 0; g < ngrave; g++)
		free(grave[g]);
	free(grave);
#endif
}

static int enough_progress(void)
{
	int i;

	for (i = 0; i < NUPDATERS; i++)
		if (LOAD(progress[i]) < 101)
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	pthread_t r[NREADERS], u[NUPDATERS];
	double end;
	int i, by_flavor;
#ifdef URCU_TEST_BROKEN
	static struct rcu_flavor_struct broken;
#endif

	if (argc != 2 || (strcmp(argv[1], "flavor") && strcmp(argv[1], "macro"))) {
		fprintf(stderr, "usage: %s flavor|macro\n", argv[0]);
		return 2;
	}
	by_flavor = !strcmp(argv[1], "flavor");
	flv = &urcu_memb_flavor;
#ifdef URCU_TEST_BROKEN
	broken = urcu_memb_flavor;
	broken.update_call_rcu = call_at_once;
	broken.update_synchronize_rcu = sync_nothing;
	flv = &broken;
#endif
	rcu_register_thread();
	if (by_flavor)
		ht = cds_lfht_new_flavor(1, 1, 0,
					 CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING,
					 &urcu_memb_flavor, NULL);
	else
		ht = cds_lfht_new(1, 1, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING,
				  NULL);
	URCU_CHECK(ht != NULL);
	for (i = 0; i < NREADERS; i++)
		URCU_CHECK(pthread_create(&r[i], NULL, reader, (void *)(long)i) == 0);
	for (i = 0; i < NUPDATERS; i++)
		URCU_CHECK(pthread_create(&u[i], NULL, updater, (void *)(long)i) == 0);
	end = urcu_test_now() + urcu_test_seconds()
#ifdef URCU_TEST_BROKEN
		* 10
#endif
		;
	/*
	 * The time, and then until each updater made 100 updates (a loaded
	 * machine may not run one for a while), for at most a minute more.
	 */
	while (!LOAD(stop) && (urcu_test_now() < end ||
			       (!enough_progress() && urcu_test_now() < end + 60)))
		usleep(10000);
	for (i = 0; i < NUPDATERS; i++)
		if (LOAD(progress[i]) < 2)
			printf("updater %d: %s\n", i, LOAD(progress[i]) ?
			       "registered, no update done" : "not registered yet");
	STORE(stop, 1);
	for (i = 0; i < NUPDATERS; i++)
		pthread_join(u[i], NULL);
	for (i = 0; i < NREADERS; i++)
		pthread_join(r[i], NULL);
	if (!errors)
		destroy_table();
	rcu_unregister_thread();
	printf("urcu_lfht %s: %lu lookups (%lu found), %lu updates, %lu "
	       "reclaimed\n", argv[1], lookups, found, updates, q_next);
	if (errors) {
		printf("ERROR: poisoned or wrong node seen %lu times\n", errors);
		return 1;
	}
	URCU_CHECK(lookups > 0 && found > 0 && updates > 0 && q_next > 0);
	printf("urcu_lfht: ok\n");
	return 0;
}
