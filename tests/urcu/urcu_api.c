/* SPDX-License-Identifier: MIT */
/*
 * tests/urcu/urcu_api.c - liburcu's API as its documentation (rcu-api.md,
 * README) describes it, one check per documented behaviour, for the
 * memb, qsbr and bp flavors; written against liburcu's API only.
 */
#define _GNU_SOURCE
#include "urcu_test.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

struct item {
	int value;
	struct rcu_head rh;
};

static struct item *gp_ptr;
static int cb_runs, deferred_runs;

static void item_free(struct rcu_head *rh)
{
	struct item *it = (struct item *)((char *)rh - offsetof(struct item, rh));

	__atomic_fetch_add(&cb_runs, 1, __ATOMIC_RELAXED);
	free(it);
}

static void deferred(void *p)
{
	__atomic_fetch_add(&deferred_runs, 1, __ATOMIC_RELAXED);
	free(p);
}

static struct item *item_new(int v)
{
	struct item *it = calloc(1, sizeof(*it));

	URCU_CHECK(it != NULL);
	it->value = v;
	return it;
}

/* rcu_assign_pointer, rcu_dereference, rcu_xchg_pointer, rcu_cmpxchg_pointer. */
static void pointers(void)
{
	struct item *a = item_new(1), *b = item_new(2), *c = item_new(3), *old;

	rcu_assign_pointer(gp_ptr, a);
	rcu_read_lock();
	URCU_CHECK(rcu_dereference(gp_ptr) == a);
	URCU_CHECK(rcu_dereference(gp_ptr)->value == 1);
	rcu_read_unlock();
	old = rcu_xchg_pointer(&gp_ptr, b); /* returns the old value */
	URCU_CHECK(old == a && gp_ptr == b);
	old = rcu_cmpxchg_pointer(&gp_ptr, a, c); /* fails: returns b */
	URCU_CHECK(old == b && gp_ptr == b);
	old = rcu_cmpxchg_pointer(&gp_ptr, b, c); /* succeeds: returns b */
	URCU_CHECK(old == b && gp_ptr == c);
	rcu_set_pointer(&gp_ptr, a);
	URCU_CHECK(gp_ptr == a);
	rcu_assign_pointer(gp_ptr, NULL);
	synchronize_rcu();
	free(a);
	free(b);
	free(c);
}

/* Read sections nest; rcu_read_ongoing() says whether one is open. */
static void read_sections(void)
{
#ifdef URCU_TEST_QSBR
	URCU_CHECK(rcu_read_ongoing()); /* registration put it online */
	rcu_thread_offline();
	URCU_CHECK(!rcu_read_ongoing());
	rcu_thread_offline(); /* twice: nothing */
	rcu_thread_online();
	URCU_CHECK(rcu_read_ongoing());
	rcu_quiescent_state();
#else
	URCU_CHECK(!rcu_read_ongoing());
	rcu_read_lock();
	rcu_read_lock();
	URCU_CHECK(rcu_read_ongoing());
	rcu_read_unlock();
	URCU_CHECK(rcu_read_ongoing());
	rcu_read_unlock();
	URCU_CHECK(!rcu_read_ongoing());
#endif
}

/* call_rcu() runs the callback after a grace period; rcu_barrier() waits. */
static void callbacks(void)
{
	int i, before = cb_runs;

	for (i = 0; i < 100; i++)
		call_rcu(&item_new(i)->rh, item_free);
	rcu_barrier();
	URCU_CHECK(cb_runs == before + 100);
}

/*
 * A call_rcu() callback may read RCU-protected data between
 * rcu_read_lock() and rcu_read_unlock(): liburcu runs callbacks on a
 * registered thread (online, for QSBR, whose read lock is nothing), so a
 * synchronize_rcu() waits for the callback's read section.  The callback
 * holds its section until the updater's synchronize_rcu() returned (or
 * 200 ms passed); the updater poisons the old object after it.
 */
static struct item *cb_ptr;
static int cb_in_section, cb_synced, cb_seen, cb_ongoing;
static struct rcu_head cb_rh;

static void reading_cb(struct rcu_head *rh)
{
	struct item *p;
	int i;

	(void)rh;
	rcu_read_lock();
	cb_ongoing = rcu_read_ongoing();
	p = rcu_dereference(cb_ptr);
	__atomic_store_n(&cb_in_section, 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < 200 && !__atomic_load_n(&cb_synced, __ATOMIC_SEQ_CST); i++)
		usleep(1000);
	cb_seen = p->value;
	rcu_read_unlock();
}

static void callback_reads(void)
{
	struct item *a = item_new(42), *old;

	rcu_assign_pointer(cb_ptr, a);
	call_rcu(&cb_rh, reading_cb);
	rcu_thread_offline(); /* QSBR: not online while it waits */
	while (!__atomic_load_n(&cb_in_section, __ATOMIC_SEQ_CST))
		usleep(100);
	rcu_thread_online();
	old = rcu_xchg_pointer(&cb_ptr, item_new(43));
	synchronize_rcu(); /* waits for the callback's read section */
	old->value = -1;   /* "freed" */
	__atomic_store_n(&cb_synced, 1, __ATOMIC_SEQ_CST);
	rcu_barrier();
	URCU_CHECK(cb_ongoing);
	URCU_CHECK(cb_seen == 42);
	free(old);
	free(cb_ptr);
}

/* The call_rcu_data API: defaults, per-CPU assignments and their errors. */
static void call_rcu_data_api(void)
{
	struct call_rcu_data *def = get_default_call_rcu_data(), *own;
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	int cpu, i, before;

	URCU_CHECK(def != NULL);
	URCU_CHECK(get_thread_call_rcu_data() == NULL);
	URCU_CHECK(get_call_rcu_data() == def);
	errno = 0;
	URCU_CHECK(set_cpu_call_rcu_data(-1, def) != 0 && errno == EINVAL);
	errno = 0;
	URCU_CHECK(set_cpu_call_rcu_data((int)ncpu + 5, def) != 0 && errno == EINVAL);
	URCU_CHECK(set_cpu_call_rcu_data(0, def) == 0);
	URCU_CHECK(get_cpu_call_rcu_data(0) == def);
	errno = 0;
	URCU_CHECK(set_cpu_call_rcu_data(0, def) != 0 && errno == EEXIST);
	callbacks(); /* through the CPU's assignment where this runs on CPU 0 */
	URCU_CHECK(set_cpu_call_rcu_data(0, NULL) == 0);
	URCU_CHECK(get_cpu_call_rcu_data(0) == NULL);
	call_rcu_data_free(def); /* the default is never freed */
	URCU_CHECK(get_default_call_rcu_data() == def);

	URCU_CHECK(create_all_cpu_call_rcu_data(0) == 0);
	URCU_CHECK(create_all_cpu_call_rcu_data(0) == 0); /* again: fine */
	URCU_CHECK(get_cpu_call_rcu_data(0) != NULL);
	callbacks();
	free_all_cpu_call_rcu_data();
	URCU_CHECK(get_cpu_call_rcu_data(0) == NULL);

	own = create_call_rcu_data(URCU_CALL_RCU_RT, -1); /* RT: accepted */
	URCU_CHECK(own != NULL);
	URCU_CHECK(get_call_rcu_thread(own) != (pthread_t)0);
	set_thread_call_rcu_data(own);
	URCU_CHECK(get_call_rcu_data() == own);
	callbacks();
	set_thread_call_rcu_data(NULL);
	call_rcu_data_free(own);

	/*
	 * Callbacks still pending at call_rcu_data_free() are not lost: they
	 * go to the default call_rcu_data (as liburcu), or run in the batch
	 * in flight, before the free returns or after it.
	 */
	own = create_call_rcu_data(0, -1);
	URCU_CHECK(own != NULL);
	set_thread_call_rcu_data(own);
	before = cb_runs;
	for (i = 0; i < 1000; i++)
		call_rcu(&item_new(i)->rh, item_free);
	set_thread_call_rcu_data(NULL);
	call_rcu_data_free(own);
	rcu_barrier();
	URCU_CHECK(cb_runs == before + 1000);

	/*
	 * A CPU this process cannot run on (here: one that does not exist;
	 * also offline or outside the cpuset): liburcu's worker ignores the
	 * EINVAL of its affinity, so the handle is made and works.
	 */
	own = create_call_rcu_data(0, (int)ncpu + 5);
	URCU_CHECK(own != NULL);
	set_thread_call_rcu_data(own);
	callbacks();
	set_thread_call_rcu_data(NULL);
	call_rcu_data_free(own);

	cpu = sched_getcpu(); /* one this process may run on */
	URCU_CHECK(cpu >= 0);
	own = create_call_rcu_data(0, cpu); /* pinned to it */
	URCU_CHECK(own != NULL);
	URCU_CHECK(set_cpu_call_rcu_data(cpu, own) == 0);
	URCU_CHECK(get_cpu_call_rcu_data(cpu) == own);
	callbacks(); /* through it while this runs there */
	URCU_CHECK(set_cpu_call_rcu_data(cpu, NULL) == 0);
	synchronize_rcu(); /* liburcu's rule before the free */
	call_rcu_data_free(own);
}

/* defer_rcu(): fct(p) after a grace period; rcu_defer_barrier() waits. */
static void defer(void)
{
	int i;

	URCU_CHECK(rcu_defer_register_thread() == 0);
	for (i = 0; i < 10; i++)
		defer_rcu(deferred, malloc(16));
	rcu_defer_barrier_thread();
	URCU_CHECK(deferred_runs == 10);
	defer_rcu(deferred, malloc(16));
	rcu_defer_barrier();
	URCU_CHECK(deferred_runs == 11);
	rcu_defer_unregister_thread();
}

/* Polling: a state completes once a grace period has passed. */
static void polling(void)
{
	struct urcu_gp_poll_state s = start_poll_synchronize_rcu();

	synchronize_rcu();
	URCU_CHECK(poll_state_synchronize_rcu(s));
	s = start_poll_synchronize_rcu();
	rcu_thread_offline();
	while (!poll_state_synchronize_rcu(s))
		usleep(100);
	rcu_thread_online();
}

/* The flavor table: what liburcu-cds calls through. */
static void flavor_table(void)
{
	const struct rcu_flavor_struct *f = &rcu_flavor;
	int before = cb_runs;

	f->read_lock();
	URCU_CHECK(f->read_ongoing());
	f->read_unlock();
	f->read_quiescent_state();
	f->thread_offline();
	f->thread_online();
	f->update_synchronize_rcu();
	f->update_call_rcu(&item_new(7)->rh, item_free);
	f->barrier();
	URCU_CHECK(cb_runs == before + 1);
	f->update_defer_rcu(deferred, malloc(16));
	f->barrier();
	URCU_CHECK(deferred_runs == 12);
}

int main(void)
{
	rcu_register_thread();
	pointers();
	read_sections();
	callbacks();
	callback_reads();
	call_rcu_data_api();
	defer();
	polling();
	flavor_table();
	rcu_unregister_thread();
	printf("urcu_api %s: ok\n", URCU_TEST_FLAVOR);
	return 0;
}
