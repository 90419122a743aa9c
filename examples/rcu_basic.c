/* SPDX-License-Identifier: MIT */
/*
 * rcu_basic - the RCU pattern of the README as a complete program.
 *
 * A configuration object is read by a reader thread many times and
 * replaced by the main thread now and then.  Readers take no lock: they
 * bracket the access with sk_rcu_read_lock()/sk_rcu_read_unlock() and load
 * the pointer with sk_rcu_dereference().  The updater publishes a new copy
 * with sk_rcu_assign_pointer(), waits for a grace period with
 * sk_synchronize_rcu(), and only then frees the old copy: no reader can
 * still be looking at it.
 *
 * The reader thread also checks that this holds: inside one read section
 * it reads the same field twice with a pause between.  A copy is never
 * written after it is published, so the two loads agree unless the copy
 * was freed under the reader (glibc's free() overwrites the first bytes of
 * a block, and malloc() hands it out again).  A mismatch makes the program
 * exit 1.  tests/test_rcu_stress.c proves the guarantee under stress.
 *
 * Build: cc rcu_basic.c $(pkg-config --cflags --libs scalekit)
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include <scalekit/rcu.h>

#define UPDATES 1000

/* --- README example begins --- */
struct config {
	int timeout_ms;
	int retries;
};

static struct config *current_config; /* RCU-protected */
static pthread_mutex_t update_lock = PTHREAD_MUTEX_INITIALIZER;

/* Reader: any thread; wait-free, takes no lock. */
static int get_timeout(void)
{
	struct config *c;
	int t;

	sk_rcu_read_lock();
	c = sk_rcu_dereference(current_config);
	t = c->timeout_ms;
	sk_rcu_read_unlock();
	return t;
}

/* Updater: publish a new copy, wait for readers, free the old one. */
static int set_timeout(int timeout_ms)
{
	struct config *new_cfg = malloc(sizeof(*new_cfg)), *old_cfg;

	if (!new_cfg)
		return -1;
	pthread_mutex_lock(&update_lock); /* one updater at a time */
	old_cfg = current_config;
	*new_cfg = *old_cfg;
	new_cfg->timeout_ms = timeout_ms;
	sk_rcu_assign_pointer(current_config, new_cfg);
	pthread_mutex_unlock(&update_lock);
	sk_synchronize_rcu(); /* pre-existing readers are done with old_cfg */
	free(old_cfg);
	return 0;
}
/* --- README example ends --- */

static int started; /* set by the reader after its first read section */
static int stop;    /* set by main when the updates are done */

/* One read section that fails if its copy changes under it. */
static int config_stable(void)
{
	struct config *c;
	int first, again, i;

	sk_rcu_read_lock();
	c = sk_rcu_dereference(current_config);
	first = SK_READ_ONCE(c->timeout_ms);
	for (i = 0; i < 100; i++)
		sk_cpu_relax(); /* give the updater time to (wrongly) free c */
	again = SK_READ_ONCE(c->timeout_ms);
	sk_rcu_read_unlock();
	return first == again;
}

static void *reader(void *arg)
{
	unsigned long reads = 0, torn = 0;

	(void)arg;
	/* No registration needed: the first sk_rcu_read_lock() does it. */
	while (!SK_READ_ONCE(stop)) {
		if (get_timeout() <= 0 || !config_stable())
			torn++;
		reads += 2;
		SK_WRITE_ONCE(started, 1);
	}
	printf("reader: %lu read sections, %lu saw a copy change or vanish\n",
	       reads, torn);
	return (void *)torn;
}

int main(void)
{
	struct sk_rcu_stats st;
	struct config *last;
	pthread_t th;
	void *torn;
	int i;

	current_config = malloc(sizeof(*current_config));
	if (!current_config)
		return 1;
	current_config->timeout_ms = 100;
	current_config->retries = 3;

	if (pthread_create(&th, NULL, reader, NULL) != 0) {
		fprintf(stderr, "rcu_basic: pthread_create failed\n");
		return 1;
	}
	/* Let the reader get going, so that the updates overlap its reads. */
	while (!SK_READ_ONCE(started))
		sched_yield();
	for (i = 1; i <= UPDATES; i++) {
		if (set_timeout(100 + i) != 0) {
			fprintf(stderr, "rcu_basic: out of memory\n");
			return 1;
		}
	}
	SK_WRITE_ONCE(stop, 1);
	pthread_join(th, &torn);

	sk_rcu_get_stats(&st);
	printf("updater: %d updates, timeout now %d ms, %lu grace periods\n",
	       UPDATES, get_timeout(), st.grace_periods);

	/* No reader is left: the last copy can go without a grace period. */
	last = current_config;
	current_config = NULL;
	free(last);
	if (torn) {
		printf("rcu_basic: FAILED: a reader saw freed memory\n");
		return 1;
	}
	printf("rcu_basic: ok\n");
	return 0;
}
