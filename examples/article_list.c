/* SPDX-License-Identifier: MIT */
/*
 * The seed example: readers walk a list of articles under rcu_read_lock()
 * while a writer inserts (initialize the node, then publish it) and
 * removes (unlink, wait for a grace period, free).  Written with the
 * kernel's spellings from scalekit/kernel.h.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <scalekit/kernel.h>

struct article {
	int id;
	int words;		/* always id * 100 once published */
	struct list_head node;
};

static LIST_HEAD(articles);
static pthread_mutex_t writer_lock = PTHREAD_MUTEX_INITIALIZER;
static int stop, started;

static void *reader(void *arg)
{
	unsigned long walks = 0, seen = 0, bad = 0;
	struct article *a;

	(void)arg;
	__atomic_fetch_add(&started, 1, __ATOMIC_RELAXED);
	while (!READ_ONCE(stop)) {
		rcu_read_lock();
		list_for_each_entry_rcu(a, &articles, node) {
			/* Published nodes are fully initialized. */
			if (READ_ONCE(a->words) != a->id * 100)
				bad++;
			seen++;
		}
		rcu_read_unlock();
		walks++;
	}
	printf("reader: %lu walks, %lu articles seen, %lu bad\n", walks, seen,
	       bad);
	return (void *)bad;
}

static void add_article(int id)
{
	struct article *a = malloc(sizeof(*a));

	if (!a)
		abort();
	a->id = id; /* initialize... */
	a->words = id * 100;
	pthread_mutex_lock(&writer_lock);
	list_add_tail_rcu(&a->node, &articles); /* ...then publish */
	pthread_mutex_unlock(&writer_lock);
}

static void remove_first(void)
{
	struct article *a;

	pthread_mutex_lock(&writer_lock);
	a = list_first_or_null_rcu(&articles, struct article, node);
	if (a)
		list_del_rcu(&a->node); /* unlink */
	pthread_mutex_unlock(&writer_lock);
	if (!a)
		return;
	synchronize_rcu(); /* wait for readers that may still see it */
	WRITE_ONCE(a->words, -1);
	free(a); /* nobody can reach it now */
}

int main(void)
{
	pthread_t r[2];
	void *bad[2];
	int i;

	for (i = 0; i < 2; i++)
		pthread_create(&r[i], NULL, reader, NULL);
	while (READ_ONCE(started) < 2)
		cpu_relax();
	for (i = 1; i <= 20000; i++) {
		add_article(i);
		if (i % 3 == 0)
			remove_first();
	}
	WRITE_ONCE(stop, 1);
	for (i = 0; i < 2; i++)
		pthread_join(r[i], &bad[i]);
	while (!list_empty(&articles))
		remove_first();
	printf("writer: 20000 added, all removed\n");
	return bad[0] || bad[1];
}
