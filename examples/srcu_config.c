/* SPDX-License-Identifier: MIT */
/*
 * srcu_config - a configuration reloaded under SRCU while its readers
 * sleep inside their read sections.
 *
 * Worker threads handle "requests": each one takes the current
 * configuration inside an SRCU read section and keeps using it across a
 * nap (standing in for I/O), so that one request sees one configuration
 * from start to end.  Plain RCU readers must not block; SRCU readers may,
 * and they hold up only the grace periods of their own domain
 * (config_srcu), not the process's RCU.
 *
 * The main thread reloads the configuration: it builds a new copy,
 * publishes it with sk_rcu_assign_pointer() and retires the old one in
 * one of the two ways SRCU offers: sk_synchronize_srcu() (wait for the
 * readers, then free) or sk_call_srcu() (free in a callback after the
 * grace period, without waiting).
 *
 * Checks (exit 1 when one fails): a retired copy is poisoned just before
 * it is freed, so a reader that still used it after its grace period
 * would see the poison; every copy's fields agree with its checksum; a
 * worker never sees the version go backwards; every queued callback ran
 * (sk_srcu_barrier()) and each freed exactly one copy.
 *
 * Build: cc srcu_config.c $(pkg-config --cflags --libs scalekit)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <scalekit/list.h> /* sk_container_of() */
#include <scalekit/srcu.h>

#define WORKERS	 4
#define RELOADS	 200
#define NAP_US	 200 /* a worker's nap inside its read section */
#define LIVE	 0x11feUL
#define POISONED 0xdeadUL

struct config {
	unsigned long magic;	/* LIVE while readers may use the copy */
	unsigned long version;	/* 1, 2, ... in publication order */
	int timeout_ms;
	int max_conns;
	unsigned long checksum; /* of version, timeout_ms and max_conns */
	struct sk_rcu_head rcu; /* for sk_call_srcu() */
};

SK_SRCU_DEFINE_STATIC(config_srcu);
static struct config *current_config; /* SRCU-protected (config_srcu) */

static int stop;		  /* main: the reloads are done */
static unsigned long cb_freed;	  /* copies freed by callbacks */

static unsigned long config_sum(const struct config *c)
{
	return c->version * 31 + (unsigned long)c->timeout_ms * 7 +
	       (unsigned long)c->max_conns;
}

static int config_ok(const struct config *c)
{
	return SK_READ_ONCE(c->magic) == LIVE && config_sum(c) == c->checksum;
}

static void nap(long us)
{
	struct timespec ts = { 0, us * 1000 };

	nanosleep(&ts, NULL);
}

struct worker {
	pthread_t th;
	unsigned long requests; /* read sections, each with a nap inside */
	unsigned long bad;	/* requests that saw a poisoned or torn copy */
	unsigned long backwards; /* requests that saw an older version */
};

/* A request: one configuration from start to end, across a sleep. */
static void *worker(void *arg)
{
	struct worker *w = arg;
	unsigned long last = 0;

	while (!SK_READ_ONCE(stop)) {
		int idx = sk_srcu_read_lock(&config_srcu);
		struct config *c = sk_srcu_dereference(current_config,
						       &config_srcu);

		if (!config_ok(c))
			w->bad++;
		if (c->version < last)
			w->backwards++;
		last = c->version;
		nap(NAP_US); /* allowed: an SRCU reader may sleep */
		if (!config_ok(c)) /* still valid after the nap? */
			w->bad++;
		sk_srcu_read_unlock(&config_srcu, idx);
		w->requests++;
	}
	return NULL;
}

static void config_free(struct config *c)
{
	c->magic = POISONED; /* a reader that still used it would see this */
	free(c);
}

static void config_free_cb(struct sk_rcu_head *head)
{
	config_free(sk_container_of(head, struct config, rcu));
	__atomic_fetch_add(&cb_freed, 1, __ATOMIC_RELAXED);
}

/* Publish version v; retire the old copy by waiting or by a callback. */
static int reload(unsigned long v, int wait)
{
	struct config *c = malloc(sizeof(*c)), *old = current_config;

	if (!c)
		return -1;
	c->magic = LIVE;
	c->version = v;
	c->timeout_ms = 100 + (int)(v % 50);
	c->max_conns = 1000 + (int)(v % 7) * 100;
	c->checksum = config_sum(c);
	sk_rcu_assign_pointer(current_config, c);
	if (!old) /* the first copy */
		return 0;
	if (wait) {
		sk_synchronize_srcu(&config_srcu); /* readers of old are done */
		config_free(old);
		return 0;
	}
	/* Cannot fail here: old->rcu is queued for the first time. */
	return sk_call_srcu(&config_srcu, &old->rcu, config_free_cb);
}

int main(void)
{
	struct worker w[WORKERS] = { 0 };
	unsigned long requests = 0, bad = 0, backwards = 0, queued = 0;
	unsigned long v;
	int i;

	if (reload(1, 1) != 0)
		return 1;
	for (i = 0; i < WORKERS; i++)
		if (pthread_create(&w[i].th, NULL, worker, &w[i]) != 0) {
			fprintf(stderr, "srcu_config: pthread_create failed\n");
			return 1;
		}
	for (v = 2; v <= RELOADS; v++) {
		int by_callback = v % 2;

		if (reload(v, !by_callback) != 0) {
			fprintf(stderr, "srcu_config: reload %lu failed\n", v);
			return 1;
		}
		queued += by_callback;
		nap(NAP_US / 2);
	}
	SK_WRITE_ONCE(stop, 1);
	for (i = 0; i < WORKERS; i++) {
		pthread_join(w[i].th, NULL);
		requests += w[i].requests;
		bad += w[i].bad;
		backwards += w[i].backwards;
	}
	sk_srcu_barrier(&config_srcu); /* every queued callback has run */

	printf("srcu_config: %d workers served %lu requests (each slept %d us "
	       "inside its read section) during %d reloads\n",
	       WORKERS, requests, NAP_US, RELOADS);
	printf("srcu_config: %lu old copies freed after sk_synchronize_srcu(), "
	       "%lu by sk_call_srcu() callbacks (%lu queued); version now %lu\n",
	       (unsigned long)RELOADS - 1 - queued, cb_freed, queued,
	       current_config->version);
	config_free(current_config);
	current_config = NULL;
	if (bad || backwards || cb_freed != queued || requests == 0) {
		printf("srcu_config: FAILED: %lu requests saw a freed or torn "
		       "copy, %lu an older version, %lu of %lu callbacks ran\n",
		       bad, backwards, cb_freed, queued);
		return 1;
	}
	printf("srcu_config: ok\n");
	return 0;
}
