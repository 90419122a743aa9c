/* SPDX-License-Identifier: MIT */
/*
 * elided_cache - a read-mostly cache under the elided reader-writer lock.
 *
 * A small open-addressing cache maps a product id to its price.  Reader
 * threads look prices up under sk_elided_rwlock_read_lock(); now and then
 * a thread that misses fills the entry under
 * sk_elided_rwlock_write_lock(), and one thread reprices the whole
 * catalogue under the write lock.  On a CPU with working Intel TSX the
 * lock is elided: readers (and writers that touch other lines) run as
 * hardware transactions and never write the lock word, so they do not
 * bounce its cache line between CPUs; a conflict aborts the transaction
 * and the section runs again under the real lock.  Elsewhere (no TSX, or
 * SCALEKIT_ELIDE=off) it is a plain writer-fair rwlock: the program is
 * the same, only the backend line of the output differs.
 *
 * Checks (exit 1 when one fails): every entry a reader finds holds a
 * price that matches its id and the catalogue's current generation
 * (a torn entry, or one half-way through a repricing, would not), and
 * the number of entries matches the fills counted by the writers.
 *
 * Build: cc elided_cache.c $(pkg-config --cflags --libs scalekit)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <scalekit/elide.h>

#define READERS	 3
#define SLOTS	 1024	/* cache slots (power of two) */
#define PRODUCTS 768	/* ids 1..PRODUCTS */
#define REPRICES 200
#define REPRICE_US 100

struct entry {
	unsigned long id;    /* 0: empty */
	unsigned long price; /* price_of(id, gen) */
	unsigned long gen;   /* catalogue generation of the price */
};

static struct {
	struct sk_elided_rwlock lock; /* guards everything below */
	struct entry slot[SLOTS];
	unsigned long gen;	      /* current catalogue generation */
	unsigned long entries;	      /* filled slots */
} cache = { SK_ELIDED_RWLOCK_INITIALIZER, { { 0, 0, 0 } }, 1, 0 };

static struct sk_elide_stats stats = SK_ELIDE_STATS_INITIALIZER;
static unsigned long fills; /* entries added, under the write lock */
static int done;	    /* the repricer has finished */

static unsigned long price_of(unsigned long id, unsigned long gen)
{
	return 100 + (id * 37 + gen * 11) % 900;
}

static unsigned long slot_of(unsigned long id)
{
	return (id * 2654435761UL >> 7) & (SLOTS - 1);
}

/*
 * The cached price of id, or 0 on a miss.  Sets *bad when the entry is
 * inconsistent with the generation seen under the same read lock.
 */
static unsigned long lookup(unsigned long id, int *bad)
{
	unsigned long i, n, price = 0;

	sk_elided_rwlock_read_lock(&cache.lock);
	for (i = slot_of(id), n = 0; n < SLOTS; i = (i + 1) & (SLOTS - 1), n++) {
		const struct entry *e = &cache.slot[i];

		if (e->id == 0)
			break;
		if (e->id == id) {
			price = e->price;
			if (e->gen != cache.gen || price != price_of(id, e->gen))
				*bad = 1;
			break;
		}
	}
	sk_elided_rwlock_read_unlock(&cache.lock);
	return price;
}

/* Fill id's entry after a miss (another thread may have done it). */
static void fill(unsigned long id)
{
	unsigned long i;

	sk_elided_rwlock_write_lock(&cache.lock);
	for (i = slot_of(id);; i = (i + 1) & (SLOTS - 1)) {
		struct entry *e = &cache.slot[i];

		if (e->id == id)
			break;
		if (e->id == 0) {
			e->id = id;
			e->gen = cache.gen;
			e->price = price_of(id, cache.gen);
			cache.entries++;
			fills++;
			break;
		}
	}
	sk_elided_rwlock_write_unlock(&cache.lock);
}

/* A new price list: every entry at once, in one write section. */
static void reprice(void)
{
	unsigned long i;

	sk_elided_rwlock_write_lock(&cache.lock);
	cache.gen++;
	for (i = 0; i < SLOTS; i++) {
		struct entry *e = &cache.slot[i];

		if (e->id) {
			e->gen = cache.gen;
			e->price = price_of(e->id, cache.gen);
		}
	}
	sk_elided_rwlock_write_unlock(&cache.lock);
}

struct reader {
	pthread_t th;
	uint64_t seed;
	unsigned long hits, misses;
	int bad;
};

static void *reader(void *arg)
{
	struct reader *r = arg;
	while (!SK_READ_ONCE(done)) {
		unsigned long id;

		r->seed = r->seed * 6364136223846793005ULL + 1442695040888963407ULL;
		id = 1 + (unsigned long)(r->seed >> 33) % PRODUCTS;
		if (lookup(id, &r->bad)) {
			r->hits++;
		} else {
			r->misses++;
			fill(id);
		}
	}
	return NULL;
}

/* REPRICES new price lists, REPRICE_US apart; then the readers stop. */
static void *repricer(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < REPRICES; i++) {
		struct timespec ts = { 0, REPRICE_US * 1000 };

		nanosleep(&ts, NULL);
		reprice();
	}
	SK_WRITE_ONCE(done, 1);
	return NULL;
}

int main(void)
{
	struct reader r[READERS] = { 0 };
	struct sk_elide_stats st;
	unsigned long hits = 0, misses = 0, aborts = 0, entries, i;
	pthread_t rp;
	int bad = 0, c;

	sk_elided_rwlock_attach_stats(&cache.lock, &stats); /* to report */
	for (i = 0; i < READERS; i++) {
		r[i].seed = 12345 + i;
		if (pthread_create(&r[i].th, NULL, reader, &r[i]) != 0) {
			fprintf(stderr, "elided_cache: pthread_create failed\n");
			return 1;
		}
	}
	if (pthread_create(&rp, NULL, repricer, NULL) != 0) {
		fprintf(stderr, "elided_cache: pthread_create failed\n");
		return 1;
	}
	for (i = 0; i < READERS; i++) {
		pthread_join(r[i].th, NULL);
		hits += r[i].hits;
		misses += r[i].misses;
		bad |= r[i].bad;
	}
	pthread_join(rp, NULL);

	sk_elided_rwlock_read_lock(&cache.lock);
	entries = cache.entries;
	for (i = 0; i < SLOTS; i++)
		if (cache.slot[i].id &&
		    cache.slot[i].price != price_of(cache.slot[i].id, cache.gen))
			bad = 1;
	sk_elided_rwlock_read_unlock(&cache.lock);
	sk_elide_stats_read(&stats, &st);
	for (c = 0; c < SK_ELIDE_ABORT_NCAUSES; c++)
		aborts += st.aborts[c];

	printf("elided_cache: backend %s; %d readers made %lu lookups "
	       "(%lu hits, %lu misses filled %lu entries), %d repricings\n",
	       sk_elide_backend_name(sk_elide_backend()), READERS,
	       hits + misses, hits, misses, entries, REPRICES);
	printf("elided_cache: %lu sections committed as transactions, %lu "
	       "aborts, %lu taken for real after an abort, %lu without "
	       "trying\n", st.commits, aborts, st.fallbacks, st.skips);
	if (bad || entries != fills || entries > PRODUCTS ||
	    sk_elided_rwlock_destroy(&cache.lock) != 0) {
		printf("elided_cache: FAILED: %s; %lu entries, %lu fills\n",
		       bad ? "a reader saw a torn or stale entry" :
			     "the counts disagree", entries, fills);
		return 1;
	}
	printf("elided_cache: ok\n");
	return 0;
}
