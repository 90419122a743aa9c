/* SPDX-License-Identifier: MIT */
/*
 * doc_prog.c - a small routing/config table protected by userspace RCU,
 * written against liburcu's documented API (doc/rcu-api.md, README.md,
 * doc/uatomic-api.md, doc/cds-api.md and the installed header comments).
 *
 * Build with exactly one of -DFLAVOR_MEMB, -DFLAVOR_QSBR, -DFLAVOR_BP.
 * -DBROKEN removes every grace-period wait: the program is then expected to
 * catch readers seeing poisoned (freed) memory and exit 1.
 *
 * usage: doc_prog [seconds]   (default 2; BROKEN builds: timeout 10)
 *
 * Written for scalekit's tests by someone who read liburcu's documentation
 * and nothing of scalekit's, and first checked against liburcu 0.13.2 itself
 * (memb, qsbr, bp; the BROKEN builds failed there as they must).  Built
 * here unchanged against the compat layer (tests/urcu/CMakeLists.txt:
 * urcu_doc_prog_*).
 */
#define _GNU_SOURCE
#if defined(FLAVOR_MEMB)
#include <urcu.h>		/* memb flavor, unprefixed API mapped */
#define FLAVOR_NAME "memb"
#elif defined(FLAVOR_QSBR)
#include <urcu-qsbr.h>
#define FLAVOR_NAME "qsbr"
#elif defined(FLAVOR_BP)
#include <urcu-bp.h>
#define FLAVOR_NAME "bp"
#else
#error "define one of FLAVOR_MEMB, FLAVOR_QSBR, FLAVOR_BP"
#endif
#include <urcu/rculist.h>
#include <urcu/uatomic.h>
#include <urcu/compiler.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NR_READERS	3
#define NR_ROUTES	64
#define ROUTE_MAGIC	0x524f555445ULL		/* "ROUTE" */
#define CFG_MAGIC	0x434f4e464947ULL	/* "CONFIG" */
#define POISON		0x6b6b6b6b6b6b6b6bULL
#define DEAD_MAGIC	0xdeaddeaddeaddeadULL

#ifdef BROKEN	/* deliberately wrong: no grace period anywhere */
#define VARIANT			"(BROKEN)"
#define DEFAULT_SECS		10.0
#define GP_WAIT()		do { } while (0)
#define CALL_RCU(head, fn)	(fn)(head)
#define DEFER_RCU(fn, p)	(fn)(p)
#else
#define VARIANT			""
#define DEFAULT_SECS		2.0
#define GP_WAIT()		synchronize_rcu()
#define CALL_RCU(head, fn)	call_rcu(head, fn)
#define DEFER_RCU(fn, p)	defer_rcu(fn, p)
#endif

/* Payload first, list linkage in the middle: free() / malloc metadata
 * lands on the first and last words, the linkage stays walkable. */
struct route {
	uint64_t magic, key, gen, nexthop, metric;
	struct cds_list_head node;
	uint64_t csum;
	struct rcu_head rcu;
};

struct config {
	uint64_t magic, version, mtu, timeout, flags[8], csum;
	struct rcu_head rcu;
};

static CDS_LIST_HEAD(routes);			/* RCU-protected list */
static struct config *current_cfg;		/* RCU-protected pointer */
static pthread_mutex_t update_lock = PTHREAD_MUTEX_INITIALIZER;
static int stop;
static unsigned long nr_reads, nr_route_updates, nr_cfg_updates;
static unsigned long nr_cb_call_rcu, nr_cb_defer, nr_sync_frees;
static unsigned long corruption, live_objects;
static struct call_rcu_data *updater_crdp;

static uint64_t route_csum(const struct route *r)
{
	return (r->key * 0x9e3779b97f4a7c15ULL) ^ (r->gen << 17) ^
		(r->nexthop * 31) ^ r->metric ^ 0x5a5a5a5aULL;
}

static uint64_t cfg_csum(const struct config *c)
{
	uint64_t s = c->version * 0x100000001b3ULL ^ c->mtu ^ (c->timeout << 7);
	for (int i = 0; i < 8; i++)
		s = s * 131 + c->flags[i];
	return s;
}

static void *xzalloc(size_t len)
{
	void *p = calloc(1, len);

	if (!p)
		abort();
	uatomic_inc(&live_objects);
	return p;
}

static struct route *route_new(uint64_t key, uint64_t gen)
{
	struct route *r = xzalloc(sizeof(*r));

	r->magic = ROUTE_MAGIC;
	r->key = key;
	r->gen = gen;
	r->nexthop = (key << 8) | (gen & 0xff);
	r->metric = gen % 97;
	r->csum = route_csum(r);
	return r;
}

static struct config *cfg_new(uint64_t version)
{
	struct config *c = xzalloc(sizeof(*c));

	c->magic = CFG_MAGIC;
	c->version = version;
	c->mtu = 1500 + version % 7;
	c->timeout = 30 + version % 11;
	for (int i = 0; i < 8; i++)
		c->flags[i] = version * (i + 3);
	c->csum = cfg_csum(c);
	return c;
}

/* Poison (but keep the list linkage) before freeing, so a reader that
 * still holds a reference after a too-early free sees DEAD_MAGIC. */
static void route_free(struct route *r)
{
	CMM_STORE_SHARED(r->magic, DEAD_MAGIC);
	CMM_STORE_SHARED(r->key, POISON);
	CMM_STORE_SHARED(r->gen, POISON);
	CMM_STORE_SHARED(r->csum, 0);
	uatomic_dec(&live_objects);
	free(r);
}

static void cfg_free(struct config *c)
{
	CMM_STORE_SHARED(c->magic, DEAD_MAGIC);
	for (int i = 0; i < 8; i++)
		CMM_STORE_SHARED(c->flags[i], POISON);
	CMM_STORE_SHARED(c->csum, 0);
	uatomic_dec(&live_objects);
	free(c);
}

/* call_rcu callbacks (struct rcu_head embedded in the object). */
static void route_free_rcu(struct rcu_head *head)
{
	route_free(caa_container_of(head, struct route, rcu));
	uatomic_inc(&nr_cb_call_rcu);
}

static void cfg_free_rcu(struct rcu_head *head)
{
	cfg_free(caa_container_of(head, struct config, rcu));
	uatomic_inc(&nr_cb_call_rcu);
}

/* defer_rcu callbacks take the object pointer directly. */
static void route_free_defer(void *p)
{
	route_free(p);
	uatomic_inc(&nr_cb_defer);
}

static void cfg_free_defer(void *p)
{
	cfg_free(p);
	uatomic_inc(&nr_cb_defer);
}

#define route_ok(r) (CMM_LOAD_SHARED((r)->magic) == ROUTE_MAGIC && \
		     CMM_LOAD_SHARED((r)->csum) == route_csum(r))
#define cfg_ok(c) (CMM_LOAD_SHARED((c)->magic) == CFG_MAGIC && \
		   CMM_LOAD_SHARED((c)->csum) == cfg_csum(c))

/* Stay a few hundred ns inside the read-side critical section. */
#define HOLD()	for (int spin_ = 0; spin_ < 40; spin_++) caa_cpu_relax()

static void *reader(void *arg)
{
	unsigned long id = (unsigned long) arg, reads = 0, bad = 0;

	rcu_register_thread();
	while (!CMM_LOAD_SHARED(stop)) {
		struct route *r;
		struct config *c;
		unsigned int n = 0;

		rcu_read_lock();
#ifndef FLAVOR_QSBR
		if (!rcu_read_ongoing())
			bad++;
#endif
		c = rcu_dereference(current_cfg);
		if (!c || !cfg_ok(c))
			bad++;
		cds_list_for_each_entry_rcu(r, &routes, node) {
			if (!route_ok(r)) {
				bad++;
				break;
			}
			if ((n++ & 7) == (reads & 7)) {
				HOLD();
				if (!route_ok(r)) {	/* still alive? */
					bad++;
					break;
				}
			}
			if (n > 100 * NR_ROUTES) {	/* list got corrupted */
				bad++;
				break;
			}
		}
		HOLD();
		if (c && !cfg_ok(c))	/* config still alive at end? */
			bad++;
		rcu_read_unlock();
#ifndef FLAVOR_QSBR
		if (rcu_read_ongoing())
			bad++;
#endif
		reads++;
		rcu_quiescent_state();	/* required by QSBR, no-op elsewhere */
		if ((reads & 255) == id) {
			rcu_thread_offline();	/* long pause: go offline */
			usleep(100);
			rcu_thread_online();
		}
		if (bad)
			uatomic_add(&corruption, bad), bad = 0;
	}
	rcu_unregister_thread();
	uatomic_add(&nr_reads, reads);
	return NULL;
}

/* Pick the idx-th route; caller holds update_lock. */
static struct route *route_pick(unsigned int idx)
{
	struct route *r;
	unsigned int i = 0;

	cds_list_for_each_entry(r, &routes, node)
		if (i++ == idx)
			return r;
	return NULL;
}

/* Updater 0: registered RCU thread with its own call_rcu helper thread.
 * Replaces routes in place and updates the config with rcu_cmpxchg_pointer. */
static void *updater_call_rcu(void *arg)
{
	unsigned int seed = 1;

	(void) arg;
	rcu_register_thread();	/* call_rcu wants a registered (online) thread */
	set_thread_call_rcu_data(updater_crdp);
	if (get_thread_call_rcu_data() != updater_crdp ||
	    get_call_rcu_data() != updater_crdp)
		uatomic_inc(&corruption);
	while (!CMM_LOAD_SHARED(stop)) {
		struct route *old, *new;
		struct config *oc, *nc;

		pthread_mutex_lock(&update_lock);
		old = route_pick(rand_r(&seed) % NR_ROUTES);
		new = route_new(old->key, old->gen + 1);
		cds_list_replace_rcu(&old->node, &new->node);
		pthread_mutex_unlock(&update_lock);
		CALL_RCU(&old->rcu, route_free_rcu);
		uatomic_inc(&nr_route_updates);

		for (;;) {	/* lock-free config update */
			rcu_read_lock();	/* keeps oc alive: no ABA */
			oc = rcu_dereference(current_cfg);
			nc = cfg_new(oc->version + 1);
			if (rcu_cmpxchg_pointer(&current_cfg, oc, nc) == oc) {
				rcu_read_unlock();
				CALL_RCU(&oc->rcu, cfg_free_rcu);
				uatomic_inc(&nr_cfg_updates);
				break;
			}
			rcu_read_unlock();
			cfg_free(nc);	/* never published */
		}
		rcu_quiescent_state();
	}
	set_thread_call_rcu_data(NULL);	/* before call_rcu_data_free() */
	rcu_unregister_thread();
	return NULL;
}

/* Updater 1: defer_rcu. Deletes a route and re-adds a fresh one. */
static void *updater_defer(void *arg)
{
	unsigned int seed = 2;
	unsigned long i = 0;

	(void) arg;
	if (rcu_defer_register_thread())
		abort();
	while (!CMM_LOAD_SHARED(stop)) {
		struct route *old;

		pthread_mutex_lock(&update_lock);
		old = route_pick(rand_r(&seed) % NR_ROUTES);
		cds_list_del_rcu(&old->node);
		if (i & 1)
			cds_list_add_rcu(&route_new(old->key, old->gen + 1)->node, &routes);
		else
			cds_list_add_tail_rcu(&route_new(old->key, old->gen + 1)->node, &routes);
		pthread_mutex_unlock(&update_lock);
		DEFER_RCU(route_free_defer, old);	/* never inside a read section */
		uatomic_inc(&nr_route_updates);

		if ((i++ & 3) == 0) {
			struct config *nc = cfg_new(i * 1000), *oc;

			oc = rcu_xchg_pointer(&current_cfg, nc);
			DEFER_RCU(cfg_free_defer, oc);
			uatomic_inc(&nr_cfg_updates);
		}
	}
	rcu_defer_barrier();
	rcu_defer_unregister_thread();
	return NULL;
}

/* Updater 2: not an RCU reader. Batches deletions, one synchronize_rcu. */
static void *updater_sync(void *arg)
{
	unsigned int seed = 3;

	(void) arg;
	while (!CMM_LOAD_SHARED(stop)) {
		struct route *old[4];
		struct config *oc;

		pthread_mutex_lock(&update_lock);
		for (int k = 0; k < 4; k++) {
			old[k] = route_pick(rand_r(&seed) % (NR_ROUTES - 4));
			cds_list_del_rcu(&old[k]->node);
			cds_list_add_tail_rcu(&route_new(old[k]->key, old[k]->gen + 1)->node,
					      &routes);
		}
		pthread_mutex_unlock(&update_lock);
		oc = rcu_xchg_pointer(&current_cfg, cfg_new(seed));
		GP_WAIT();	/* never with update_lock held */
		for (int k = 0; k < 4; k++)
			route_free(old[k]);
		cfg_free(oc);
		uatomic_add(&nr_sync_frees, 5);
		uatomic_add(&nr_route_updates, 4);
		uatomic_inc(&nr_cfg_updates);
	}
	return NULL;
}

#ifdef BROKEN
static void on_fault(int sig)
{
	static const char msg[] = "fault: use-after-free detected\nFAIL\n";

	_exit(write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0 || sig);
}
#endif

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : DEFAULT_SECS;
	pthread_t rd[NR_READERS], up[3];
	struct timespec t0, now;
	struct route *r, *tmp;
	struct config *c;
	unsigned long total_cb;

#ifdef BROKEN	/* a reader walking reused memory may fault: that is detection too */
	signal(SIGSEGV, on_fault);
	signal(SIGBUS, on_fault);
#endif
#ifndef FLAVOR_QSBR
	rcu_init();	/* rcu-api.md; qsbr maps no unprefixed rcu_init */
#endif
	for (unsigned int k = 0; k < NR_ROUTES; k++)
		cds_list_add_tail_rcu(&route_new(k, 0)->node, &routes);
	rcu_assign_pointer(current_cfg, cfg_new(1));

	updater_crdp = create_call_rcu_data(0, -1);	/* no RT flag, no affinity */
	if (!get_default_call_rcu_data() || !updater_crdp)
		return 2;

	for (unsigned long k = 0; k < NR_READERS; k++)
		if (pthread_create(&rd[k], NULL, reader, (void *) k))
			return 2;
	if (pthread_create(&up[0], NULL, updater_call_rcu, NULL) ||
	    pthread_create(&up[1], NULL, updater_defer, NULL) ||
	    pthread_create(&up[2], NULL, updater_sync, NULL))
		return 2;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		usleep(10000);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (!uatomic_read(&corruption) &&
		 (now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	CMM_STORE_SHARED(stop, 1);
	for (int k = 0; k < NR_READERS; k++)
		pthread_join(rd[k], NULL);
	for (int k = 0; k < 3; k++)
		pthread_join(up[k], NULL);

	/* Teardown: unpublish everything, reclaim through the default helper. */
	rcu_register_thread();
	if (get_thread_call_rcu_data() != NULL)
		uatomic_inc(&corruption);
	pthread_mutex_lock(&update_lock);
	cds_list_for_each_entry_safe(r, tmp, &routes, node) {
		cds_list_del_rcu(&r->node);
		call_rcu(&r->rcu, route_free_rcu);
	}
	pthread_mutex_unlock(&update_lock);
	c = rcu_xchg_pointer(&current_cfg, NULL);
	call_rcu(&c->rcu, cfg_free_rcu);
	rcu_unregister_thread();

	rcu_barrier();		/* all call_rcu callbacks, any helper thread */
	call_rcu_data_free(updater_crdp);
	rcu_defer_barrier();	/* nothing left after updater_defer's barrier */

	total_cb = nr_cb_call_rcu + nr_cb_defer;
	printf("flavor=%s%s reads=%lu route_updates=%lu cfg_updates=%lu "
	       "call_rcu_cbs=%lu defer_cbs=%lu sync_frees=%lu live=%lu corruption=%lu\n",
	       FLAVOR_NAME, VARIANT, nr_reads, nr_route_updates, nr_cfg_updates, nr_cb_call_rcu,
	       nr_cb_defer, nr_sync_frees, live_objects, corruption);
	if (corruption || live_objects || !nr_reads || !total_cb) {
		printf("FAIL\n");
		return 1;
	}
	printf("OK\n");
	return 0;
}
