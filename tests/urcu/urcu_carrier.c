/* SPDX-License-Identifier: MIT */
/*
 * tests/urcu/urcu_carrier.c - call_rcu() through every kind of
 * call_rcu_data at once, written against liburcu's API only (memb).
 *
 * Four updater threads replace objects in a shared array of slots
 * (rcu_xchg_pointer()) and hand the old one to call_rcu(), whose callback
 * poisons it; each updater goes through another call_rcu_data:
 *   0  the default one (set_thread_call_rcu_data(get_default_...()));
 *   1  its CPU's (none set for the thread, after
 *      create_all_cpu_call_rcu_data());
 *   2  one of its own (create_call_rcu_data());
 *   3  switching every few calls between the default, a second own one
 *      and its CPU's.
 * Checked, with real threads:
 *  - two readers: an object seen in a read section is not poisoned until
 *    the section ends (they look twice, the second time after spinning or
 *    yielding the CPU): "ERROR: poison";
 *  - a barrier thread: after rcu_barrier(), every callback that each
 *    updater had queued before the call has run (counts per updater):
 *    "ERROR: barrier";
 *  - order: the callbacks of one updater through one call_rcu_data (the
 *    default or an own one, whose routing the test knows) run in
 *    call_rcu() order: "ERROR: order".
 * At the end: rcu_barrier(), every callback ran exactly once.
 *
 * The broken twins link a build of the layer with a defect
 * (compat/urcu/call_rcu.c); each runs until it fails, at most ten times as
 * long:
 *  - SK__URCU_BROKEN_CARRIER_EARLY: a batch is detached when its carrier
 *    runs, not before the carrier is queued, so heads pushed during the
 *    carrier's grace period run without one: "ERROR: poison";
 *  - SK__URCU_BROKEN_BARRIER_SK_ONLY: rcu_barrier() is sk_rcu_barrier()
 *    alone, which misses pending heads and carriers queued again after it
 *    began: "ERROR: barrier".
 */
#define _GNU_SOURCE
#include "urcu_test.h"

#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <unistd.h>
#include <stdint.h>

#define NSLOTS	 8
#define NUPD	 4
#define NREADERS 2
#define NCRD	 3 /* order keys: 0 default, 1 own (updater 2), 2 own2 */
/*
 * An updater frees the objects whose callback ran, a batch at a time,
 * after a synchronize_rcu() of its own (so that a reader of the broken
 * twin that still holds one reads a poisoned object, never freed memory).
 */
#define RECLAIM_EVERY 4096

#define LIVE   0x11feUL
#define POISON 0xdeadUL

#define LOAD(x)	    __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define LOAD_ACQ(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE_REL(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
#define ADD(x, v)   __atomic_fetch_add(&(x), (v), __ATOMIC_SEQ_CST)

struct obj {
	struct rcu_head rh;
	unsigned long magic; /* LIVE, POISON once its callback ran */
	int upd;	     /* the updater that call_rcu()ed it */
	int key;	     /* order key (NCRD: not checked) */
	unsigned long seq;   /* that updater's call_rcu() number */
	struct obj *all;     /* its creator's list of objects in use */
};

static struct obj *slots[NSLOTS];
static int stop;
static unsigned long queued[NUPD];	 /* call_rcu() calls returned */
static unsigned long done[NUPD];	 /* callbacks run */
static unsigned long last[NUPD][NCRD];	 /* last seq run, per key */
static unsigned long errors_poison, errors_barrier, errors_order, barriers;
static struct call_rcu_data *own1, *own2;

static void free_cb(struct rcu_head *rh)
{
	struct obj *o = (struct obj *)((char *)rh - offsetof(struct obj, rh));
	int upd;

	if (LOAD(o->magic) != LIVE) {
		fprintf(stderr, "ERROR: callback ran twice (object %p)\n",
			(void *)o);
		exit(1);
	}
	if (o->key < NCRD) {
		/* Callbacks of one key run one after the other. */
		if (o->seq <= LOAD(last[o->upd][o->key]))
			ADD(errors_order, 1);
		STORE(last[o->upd][o->key], o->seq);
	}
	upd = o->upd; /* o may be freed once it reads as poisoned */
	STORE_REL(o->magic, POISON);
	/* Release: the barrier thread reads done with acquire. */
	__atomic_fetch_add(&done[upd], 1, __ATOMIC_RELEASE);
}

static void *reader(void *arg)
{
	unsigned long n = 0, id = (unsigned long)(uintptr_t)arg;
	volatile int spin;

	rcu_register_thread();
	while (!LOAD(stop)) {
		struct obj *o;

		rcu_read_lock();
		o = rcu_dereference(slots[(n + id) % NSLOTS]);
		if (o && LOAD(o->magic) != LIVE)
			ADD(errors_poison, 1);
		for (spin = 0; spin < 300; spin++)
			;
		if ((n & 7) == 0)
			sched_yield();
		if (o && LOAD(o->magic) != LIVE)
			ADD(errors_poison, 1);
		rcu_read_unlock();
		n++;
	}
	rcu_unregister_thread();
	return NULL;
}

/* Free the objects of list all whose callback ran; returns the rest. */
static struct obj *reclaim(struct obj *all)
{
	struct obj *keep = NULL, *dead = NULL, *o, *next;

	for (o = all; o; o = next) {
		next = o->all;
		/* Acquire: the callback's accesses are done. */
		if (LOAD_ACQ(o->magic) == POISON) {
			o->all = dead;
			dead = o;
		} else {
			o->all = keep;
			keep = o;
		}
	}
	synchronize_rcu(); /* readers that saw one before its poisoning */
	for (o = dead; o; o = next) {
		next = o->all;
		free(o);
	}
	return keep;
}

static void *updater(void *arg)
{
	int id = (int)(uintptr_t)arg;
	struct obj *all = NULL, *o, *old;
	unsigned long seq = 0;

	rcu_register_thread();
	if (id == 0)
		set_thread_call_rcu_data(get_default_call_rcu_data());
	else if (id == 2)
		set_thread_call_rcu_data(own1);
	while (!LOAD(stop)) {
		int key = id == 0 ? 0 : id == 2 ? 1 : NCRD;

		if (id == 3) {
			switch ((seq / 16) % 3) {
			case 0:
				set_thread_call_rcu_data(
					get_default_call_rcu_data());
				key = 0;
				break;
			case 1:
				set_thread_call_rcu_data(own2);
				key = 2;
				break;
			default:
				set_thread_call_rcu_data(NULL); /* its CPU's */
				key = NCRD;
			}
		}
		if (seq % RECLAIM_EVERY == 0)
			all = reclaim(all);
		o = malloc(sizeof(*o));
		URCU_CHECK(o);
		o->magic = LIVE;
		o->all = all;
		all = o;
		old = rcu_xchg_pointer(&slots[++seq % NSLOTS], o);
		if (old) {
			/* Who queues it, through which key, as which call. */
			old->upd = id;
			old->key = key;
			old->seq = LOAD(queued[id]) + 1;
			call_rcu(&old->rh, free_cb);
			/* Release: the barrier thread's snapshot. */
			STORE_REL(queued[id], LOAD(queued[id]) + 1);
		}
	}
	set_thread_call_rcu_data(NULL);
	rcu_unregister_thread();
	return all;
}

static void *barrier_thread(void *arg)
{
	unsigned long snap[NUPD];
	int i;

	(void)arg;
	rcu_register_thread();
	while (!LOAD(stop)) {
		for (i = 0; i < NUPD; i++)
			snap[i] = LOAD_ACQ(queued[i]);
		rcu_barrier();
		for (i = 0; i < NUPD; i++)
			if (LOAD_ACQ(done[i]) < snap[i]) {
				fprintf(stderr, "barrier: updater %d: %lu "
					"callbacks run, %lu queued before\n",
					i, LOAD_ACQ(done[i]), snap[i]);
				ADD(errors_barrier, 1);
			}
		ADD(barriers, 1);
	}
	rcu_unregister_thread();
	return NULL;
}

int main(void)
{
	pthread_t rd[NREADERS], up[NUPD], bt;
	struct obj *all[NUPD], *o, *next;
	double secs = urcu_test_seconds(), t0;
	unsigned long total = 0;
	int i, j;

#ifdef URCU_TEST_BROKEN
	secs *= 10;
#endif
	rcu_register_thread();
	URCU_CHECK(create_all_cpu_call_rcu_data(0) == 0);
	own1 = create_call_rcu_data(0, -1);
	own2 = create_call_rcu_data(0, -1);
	URCU_CHECK(own1 && own2);
	for (i = 0; i < NREADERS; i++)
		URCU_CHECK(!pthread_create(&rd[i], NULL, reader,
					   (void *)(uintptr_t)i));
	for (i = 0; i < NUPD; i++)
		URCU_CHECK(!pthread_create(&up[i], NULL, updater,
					   (void *)(uintptr_t)i));
	URCU_CHECK(!pthread_create(&bt, NULL, barrier_thread, NULL));
	t0 = urcu_test_now();
	while (urcu_test_now() - t0 < secs) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		nanosleep(&ts, NULL);
#ifdef URCU_TEST_BROKEN_STOP_ON
		if (LOAD(URCU_TEST_BROKEN_STOP_ON))
			break;
#endif
	}
	STORE(stop, 1);
	for (i = 0; i < NUPD; i++)
		URCU_CHECK(!pthread_join(up[i], (void **)&all[i]));
	for (i = 0; i < NREADERS; i++)
		URCU_CHECK(!pthread_join(rd[i], NULL));
	URCU_CHECK(!pthread_join(bt, NULL));
	rcu_barrier();
	for (i = 0; i < NSLOTS; i++) /* the last objects: still current */
		if (slots[i])
			URCU_CHECK(slots[i]->magic == LIVE);
	for (i = 0; i < NUPD; i++) {
		/*
		 * After the last rcu_barrier(): every callback ran once.
		 * Acquire, pairs with free_cb()'s release add: a broken
		 * barrier returns while callbacks still run, so this read
		 * must be atomic (TSan halts on a plain one).
		 */
		unsigned long ran = LOAD_ACQ(done[i]);

		if (ran != queued[i]) {
			printf("final barrier: updater %d: %lu callbacks run, "
			       "%lu queued\n", i, ran, queued[i]);
			errors_barrier++;
		}
		total += queued[i];
	}
	printf("urcu_carrier: %lu callbacks, %lu barriers, poisoned %lu, "
	       "barrier %lu, order %lu\n",
	       total, barriers, LOAD(errors_poison), errors_barrier,
	       LOAD(errors_order));
	for (j = 0; j < NUPD; j++)
		printf("  updater %d: %lu callbacks\n", j, LOAD(done[j]));
	if (LOAD(errors_poison))
		printf("ERROR: poison: %lu reads saw a poisoned object\n",
		       LOAD(errors_poison));
	if (errors_barrier)
		printf("ERROR: barrier: %lu\n", errors_barrier);
	/* Atomic: after a broken barrier, callbacks may still count. */
	if (LOAD(errors_order))
		printf("ERROR: order: %lu\n", LOAD(errors_order));
	if (errors_barrier) {
		fflush(stdout);
		_exit(1); /* callbacks may still run: free nothing */
	}
	for (i = 0; i < NUPD; i++)
		for (o = all[i]; o; o = next) {
			next = o->all;
			free(o);
		}
	call_rcu_data_free(own1);
	call_rcu_data_free(own2);
	free_all_cpu_call_rcu_data();
	rcu_unregister_thread();
	return LOAD(errors_poison) || errors_barrier || LOAD(errors_order);
}
