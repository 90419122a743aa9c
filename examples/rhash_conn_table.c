/* SPDX-License-Identifier: MIT */
/*
 * rhash_conn_table - a table of network connections on sk_rhash, shared
 * by several threads, growing and shrinking by itself.
 *
 * Each thread opens connections (sk_rhash_insert_unique() of an object
 * keyed by its 4-tuple), looks up its own and other threads' connections
 * (sk_rhash_lookup() inside sk_rcu_read_lock(): wait-free, no lock), and
 * closes half of its own (sk_rhash_remove(), then the object is freed by
 * an RCU callback once no lookup can still hold it).  The table starts at
 * 64 buckets; automatic resizing grows it in the background as the
 * connections come in, while lookups and updates go on, and shrinks it
 * again when main closes the rest.
 *
 * Checks (exit 1 when one fails): opening a key twice is refused
 * (-EEXIST); every lookup returns an object with the key asked for that
 * is not freed; a thread finds each of its open connections and none of
 * its closed ones; the table's count and an iteration agree with the
 * number of open connections; every removed object is freed exactly
 * once; the table grew past 64 buckets and shrank again.
 *
 * Build: cc rhash_conn_table.c $(pkg-config --cflags --libs scalekit)
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scalekit/list.h> /* sk_container_of() */
#include <scalekit/rhash.h>

#define THREADS	 4
#define CONNS	 4096 /* per thread */
#define LIVE	 0xc0117eUL
#define POISONED 0xdeadUL

struct conn_key {
	uint32_t src_ip, dst_ip;
	uint16_t src_port, dst_port;
};

struct conn {
	struct sk_rhash_node node; /* link in the table */
	struct conn_key key;
	unsigned long magic;	   /* LIVE until the RCU callback frees it */
	unsigned long bytes;	   /* traffic counter, owner thread only */
	struct sk_rcu_head rcu;	   /* for sk_call_rcu() */
};

static struct sk_rhash *table;
static unsigned long freed; /* objects freed by RCU callbacks */

static struct conn_key key_of(int thread, int i)
{
	struct conn_key k;

	memset(&k, 0, sizeof(k)); /* the whole key is hashed: no garbage */
	k.src_ip = 0x0a000000u | (uint32_t)thread << 16 | (uint32_t)i;
	k.dst_ip = 0xc0a80001u; /* 192.168.0.1 */
	k.src_port = (uint16_t)(1024 + i);
	k.dst_port = 443;
	return k;
}

static void conn_free_cb(struct sk_rcu_head *head)
{
	struct conn *c = sk_container_of(head, struct conn, rcu);

	c->magic = POISONED;
	free(c);
	__atomic_fetch_add(&freed, 1, __ATOMIC_RELAXED);
}

/*
 * Look k up; returns 1 when found, 0 when not, -1 when the object found
 * has another key or was freed (a broken table).
 */
static int conn_lookup(const struct conn_key *k)
{
	struct conn *c;
	int ret = 0;

	sk_rcu_read_lock();
	c = sk_rhash_lookup(table, k);
	if (c)
		ret = memcmp(&c->key, k, sizeof(*k)) == 0 &&
		      SK_READ_ONCE(c->magic) == LIVE ? 1 : -1;
	sk_rcu_read_unlock();
	return ret;
}

struct worker {
	pthread_t th;
	int id;
	struct conn *conns[CONNS]; /* NULL once closed */
	unsigned long open, closed, lookups, errors;
	unsigned long max_buckets; /* largest table size seen */
};

static void open_conns(struct worker *w)
{
	struct conn dup;
	int i;

	for (i = 0; i < CONNS; i++) {
		struct conn *c = calloc(1, sizeof(*c));

		if (!c) {
			w->errors++;
			continue;
		}
		c->key = key_of(w->id, i);
		c->magic = LIVE;
		if (sk_rhash_insert_unique(table, &c->node) != 0) {
			w->errors++;
			free(c);
			continue;
		}
		w->conns[i] = c;
		w->open++;
		if (conn_lookup(&c->key) != 1)
			w->errors++;
	}
	/* A second connection with the same 4-tuple is refused. */
	memset(&dup, 0, sizeof(dup));
	dup.key = key_of(w->id, 0);
	if (sk_rhash_insert_unique(table, &dup.node) != -EEXIST)
		w->errors++;
	w->max_buckets = sk_rhash_buckets(table);
}

static void *worker(void *arg)
{
	struct worker *w = arg;
	int i, t;

	open_conns(w);
	/* Everyone's connections, some open, some not (yet): no torn hits. */
	for (t = 0; t < THREADS; t++)
		for (i = 0; i < CONNS; i += 3) {
			struct conn_key k = key_of(t, i);

			if (conn_lookup(&k) < 0)
				w->errors++;
			w->lookups++;
		}
	/* Close every other connection; the callback frees it later. */
	for (i = 0; i < CONNS; i += 2) {
		struct conn *c = w->conns[i];

		if (!c)
			continue;
		if (sk_rhash_remove(table, &c->node) != 0) {
			w->errors++;
			continue;
		}
		w->conns[i] = NULL;
		w->closed++;
		w->open--;
		if (sk_call_rcu(&c->rcu, conn_free_cb) != 0)
			w->errors++;
	}
	/* Open ones are found (traffic counted), closed ones are gone. */
	for (i = 0; i < CONNS; i++) {
		struct conn_key k = key_of(w->id, i);
		int found = conn_lookup(&k);

		if (found != (w->conns[i] != NULL))
			w->errors++;
		if (w->conns[i])
			w->conns[i]->bytes += 1500;
		w->lookups++;
	}
	if (sk_rhash_buckets(table) > w->max_buckets)
		w->max_buckets = sk_rhash_buckets(table);
	return NULL;
}

static unsigned long count_by_iteration(void)
{
	struct sk_rhash_iter it;
	unsigned long n = 0;

	sk_rcu_read_lock();
	sk_rhash_iter_start(table, &it);
	while (sk_rhash_iter_next(&it))
		n++;
	sk_rcu_read_unlock();
	return n;
}

int main(void)
{
	struct sk_rhash_params p = SK_RHASH_PARAMS_DEFAULT;
	static struct worker w[THREADS];
	unsigned long open = 0, closed = 0, lookups = 0, errors = 0;
	unsigned long peak = 0, counted, iterated, final_buckets;
	int i, t;

	p.head_offset = offsetof(struct conn, node);
	p.key_offset = offsetof(struct conn, key);
	p.key_len = sizeof(struct conn_key);
	table = sk_rhash_create(&p); /* 64 buckets, automatic resizing */
	if (!table) {
		perror("rhash_conn_table: sk_rhash_create");
		return 1;
	}
	for (t = 0; t < THREADS; t++) {
		w[t].id = t;
		if (pthread_create(&w[t].th, NULL, worker, &w[t]) != 0) {
			fprintf(stderr, "rhash_conn_table: pthread_create failed\n");
			return 1;
		}
	}
	for (t = 0; t < THREADS; t++) {
		pthread_join(w[t].th, NULL);
		open += w[t].open;
		closed += w[t].closed;
		lookups += w[t].lookups;
		errors += w[t].errors;
		if (w[t].max_buckets > peak)
			peak = w[t].max_buckets;
	}
	sk_rhash_barrier(table); /* the background resizes are done */
	counted = sk_rhash_count(table);
	iterated = count_by_iteration();
	if (sk_rhash_buckets(table) > peak)
		peak = sk_rhash_buckets(table);
	printf("rhash_conn_table: %d threads opened %lu connections, closed "
	       "%lu, made %lu lookups; %lu open, table grew from 64 to %lu "
	       "buckets\n", THREADS, open + closed, closed, lookups,
	       counted, peak);

	/* Close the rest from main; the table shrinks behind the removals. */
	for (t = 0; t < THREADS; t++)
		for (i = 0; i < CONNS; i++) {
			struct conn *c = w[t].conns[i];

			if (!c)
				continue;
			if (sk_rhash_remove(table, &c->node) != 0 ||
			    sk_call_rcu(&c->rcu, conn_free_cb) != 0)
				errors++;
			closed++;
		}
	sk_rhash_barrier(table);
	final_buckets = sk_rhash_buckets(table);
	sk_rcu_barrier(); /* every conn_free_cb() has run */
	printf("rhash_conn_table: all closed: %lu objects freed after their "
	       "grace periods, %lu left, table shrank to %lu buckets\n",
	       freed, sk_rhash_count(table), final_buckets);
	sk_rhash_destroy(table, NULL, NULL);

	if (errors || counted != open || iterated != open || freed != closed ||
	    peak <= 64 || final_buckets >= peak) {
		printf("rhash_conn_table: FAILED: %lu errors; count %lu, "
		       "iteration %lu, open %lu; freed %lu of %lu; buckets "
		       "peak %lu, final %lu\n", errors, counted, iterated, open,
		       freed, closed, peak, final_buckets);
		return 1;
	}
	printf("rhash_conn_table: ok\n");
	return 0;
}
