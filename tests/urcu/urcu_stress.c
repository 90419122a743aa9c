/* SPDX-License-Identifier: MIT */
/*
 * tests/urcu/urcu_stress.c - a pipe-count stress test in the style of
 * liburcu's rcutorture, written against liburcu's API only, for the
 * memb, qsbr and bp flavors (one source, built once per flavor).
 *
 * A pipe of PIPE_LEN elements: the updater makes the next element current
 * (its count reset to 0), adds 1 to the count of every other element and
 * waits for a grace period, again and again.  A reader that took an
 * element while it was current holds it until its read section ends;
 * the grace period that follows the element's removal waits for that,
 * so the reader sees a count of at most 1.  Readers record what they
 * see; the histogram is printed, and a count above 1 is an error.
 *
 *   urcu_stress_<flavor> MODE    MODE is how the updater waits:
 *     sync             synchronize_rcu()
 *     call_rcu         call_rcu() on the default worker, then waits for
 *                      the callback
 *     call_rcu_percpu  the same, after create_all_cpu_call_rcu_data()
 *     call_rcu_thread  the same, on the updater's own call_rcu_data
 *                      (create_call_rcu_data(), set_thread_call_rcu_data())
 *     defer            defer_rcu(), then waits for the deferred call
 *     poll             start_poll_synchronize_rcu(), then polls
 *
 * Built with -DURCU_TEST_BROKEN (the broken twins) the wait is gone: the
 * callback or deferred call runs at once, synchronize_rcu() and the poll
 * are skipped.  Then the test must fail (it runs until it does, at most
 * ten times its usual time): "ERROR: pipe count".
 */
#define _GNU_SOURCE
#include "urcu_test.h"

#include <pthread.h>
#include <semaphore.h>
#include <unistd.h>

#define PIPE_LEN 10
#define NREADERS 2

struct elem {
	int pipe_count; /* grace periods since it was replaced */
	int mbtest;	/* 1 once initialised */
};

static struct elem pipe_elems[PIPE_LEN];
static struct elem *current_elem;
static int stop;
static unsigned long hist[NREADERS][PIPE_LEN + 1];
static unsigned long mb_errors[NREADERS];
static sem_t gp_done;

enum mode { SYNC, CALL_RCU, CALL_RCU_PERCPU, CALL_RCU_THREAD, DEFER, POLL };
static const char *const mode_names[] = { "sync", "call_rcu",
	"call_rcu_percpu", "call_rcu_thread", "defer", "poll" };

#define LOAD(x)	    __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

/*
 * One read section; with yield set, it gives up the CPU inside, so that
 * the updater runs while the element is held even when both share a CPU.
 */
static void read_once(int id, int yield)
{
	struct elem *p;
	volatile int spin;
	int pc;

	rcu_read_lock();
	p = rcu_dereference(current_elem);
	if (!LOAD(p->mbtest))
		STORE(mb_errors[id], LOAD(mb_errors[id]) + 1);
	rcu_read_lock(); /* nested, as rcutorture does */
	for (spin = 0; spin < 200; spin++)
		;
	if (yield)
		sched_yield();
	rcu_read_unlock();
	pc = LOAD(p->pipe_count);
	rcu_read_unlock();
	if (pc < 0 || pc > PIPE_LEN)
		pc = PIPE_LEN;
	STORE(hist[id][pc], LOAD(hist[id][pc]) + 1); /* the updater peeks */
}

static void *reader(void *arg)
{
	int id = (int)(long)arg, k;
	unsigned long rounds = 0;

#ifndef URCU_TEST_BP
	rcu_register_thread(); /* bp: scalekit registers by itself */
#endif
	/* Registration put a qsbr thread online; the others are outside. */
	URCU_CHECK(!rcu_read_ongoing() == (URCU_TEST_FLAVOR[0] != 'q'));
	while (!LOAD(stop)) {
		for (k = 0; k < 64; k++)
			read_once(id, k == 0);
		rcu_quiescent_state(); /* qsbr; nothing in memb and bp */
		if (++rounds % 16 == 0) {
			rcu_thread_offline();
			sched_yield();
			rcu_thread_online();
		}
	}
#ifndef URCU_TEST_BP
	rcu_unregister_thread();
#endif
	return NULL;
}

static void gp_callback(struct rcu_head *head)
{
	(void)head;
	sem_post(&gp_done);
}

static void gp_deferred(void *p)
{
	sem_post((sem_t *)p);
}

/* The updater waits for its callback, offline (qsbr). */
static void wait_callback(void)
{
	rcu_thread_offline();
	while (sem_wait(&gp_done) != 0)
		;
	rcu_thread_online();
}

static void wait_poll(void)
{
	struct urcu_gp_poll_state s = start_poll_synchronize_rcu();

	rcu_thread_offline();
	while (!poll_state_synchronize_rcu(s))
		usleep(20);
	rcu_thread_online();
}

/* The updater's wait for a grace period, as MODE says. */
static void wait_gp(enum mode m)
{
	static struct rcu_head rh;

	switch (m) {
	case SYNC:
#ifndef URCU_TEST_BROKEN
		synchronize_rcu();
#endif
		break;
	case DEFER:
#ifndef URCU_TEST_BROKEN
		defer_rcu(gp_deferred, &gp_done);
#else
		gp_deferred(&gp_done);
#endif
		wait_callback();
		break;
	case POLL:
#ifndef URCU_TEST_BROKEN
		wait_poll();
#else
		(void)wait_poll;
#endif
		break;
	default:
#ifndef URCU_TEST_BROKEN
		call_rcu(&rh, gp_callback);
#else
		gp_callback(&rh);
#endif
		wait_callback();
		break;
	}
}

static unsigned long update(enum mode m, double seconds)
{
	double end = urcu_test_now() + seconds;
	unsigned long n = 0;
	int idx = 0, i, j, bad = 0;

	while (urcu_test_now() < end && !bad) {
		i = (idx + 1) % PIPE_LEN;
		STORE(pipe_elems[i].mbtest, 0);
		STORE(pipe_elems[i].pipe_count, 0);
		STORE(pipe_elems[i].mbtest, 1);
		rcu_assign_pointer(current_elem, &pipe_elems[i]);
		idx = i;
		for (j = 0; j < PIPE_LEN; j++)
			if (j != i)
				STORE(pipe_elems[j].pipe_count,
				      LOAD(pipe_elems[j].pipe_count) + 1);
		wait_gp(m);
		n++;
#ifdef URCU_TEST_BROKEN
		/* The broken twins stop once the readers saw it. */
		for (j = 0; j < NREADERS; j++)
			bad |= LOAD(hist[j][2]) != 0;
#endif
	}
	return n;
}

static enum mode parse_mode(const char *s)
{
	unsigned i;

	for (i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++)
		if (!strcmp(s, mode_names[i]))
			return (enum mode)i;
	fprintf(stderr, "unknown mode %s\n", s);
	exit(2);
}

/* Set up MODE's call_rcu_data; returns what teardown() needs. */
static struct call_rcu_data *setup(enum mode m)
{
	struct call_rcu_data *crdp = NULL;

	if (m == CALL_RCU_PERCPU) {
		URCU_CHECK(create_all_cpu_call_rcu_data(0) == 0);
		URCU_CHECK(get_cpu_call_rcu_data(0) != NULL);
	} else if (m == CALL_RCU_THREAD) {
		crdp = create_call_rcu_data(0, -1);
		URCU_CHECK(crdp != NULL);
		set_thread_call_rcu_data(crdp);
		URCU_CHECK(get_thread_call_rcu_data() == crdp);
		URCU_CHECK(get_call_rcu_data() == crdp);
		URCU_CHECK(get_default_call_rcu_data() != crdp);
	}
	return crdp;
}

static void teardown(enum mode m, struct call_rcu_data *crdp)
{
	if (m == CALL_RCU_PERCPU) {
		free_all_cpu_call_rcu_data();
		URCU_CHECK(get_cpu_call_rcu_data(0) == NULL);
	} else if (m == CALL_RCU_THREAD) {
		set_thread_call_rcu_data(NULL);
		URCU_CHECK(get_call_rcu_data() != crdp);
		call_rcu_data_free(crdp);
	}
	if (m == DEFER)
		rcu_defer_barrier();
	rcu_barrier();
}

int main(int argc, char **argv)
{
	pthread_t th[NREADERS];
	unsigned long total[PIPE_LEN + 1] = { 0 }, n, reads = 0, mberr = 0;
	struct call_rcu_data *crdp;
	double seconds = urcu_test_seconds();
	enum mode m;
	int i, k, last = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s sync|call_rcu|call_rcu_percpu|"
				"call_rcu_thread|defer|poll\n", argv[0]);
		return 2;
	}
	m = parse_mode(argv[1]);
#ifdef URCU_TEST_BROKEN
	seconds *= 10;
#endif
	sem_init(&gp_done, 0, 0);
	current_elem = &pipe_elems[0];
	pipe_elems[0].mbtest = 1;
#ifndef URCU_TEST_BP
	rcu_register_thread();
#endif
	crdp = setup(m);
	if (m == DEFER)
		URCU_CHECK(rcu_defer_register_thread() == 0);
	for (i = 0; i < NREADERS; i++)
		URCU_CHECK(pthread_create(&th[i], NULL, reader, (void *)(long)i) == 0);
	n = update(m, seconds);
	STORE(stop, 1);
	rcu_thread_offline(); /* qsbr: the readers' exit waits for nothing */
	for (i = 0; i < NREADERS; i++)
		pthread_join(th[i], NULL);
	rcu_thread_online();
	teardown(m, crdp);
	if (m == DEFER)
		rcu_defer_unregister_thread();
#ifndef URCU_TEST_BP
	rcu_unregister_thread();
#endif
	for (i = 0; i < NREADERS; i++) {
		mberr += mb_errors[i];
		for (k = 0; k <= PIPE_LEN; k++) {
			total[k] += hist[i][k];
			reads += hist[i][k];
		}
	}
	printf("urcu_stress %s %s: %lu updates, %lu reads, pipe histogram:",
	       URCU_TEST_FLAVOR, mode_names[m], n, reads);
	for (k = 0; k <= PIPE_LEN; k++) {
		printf(" %lu", total[k]);
		if (total[k])
			last = k;
	}
	printf("\n");
	if (last > 1 || mberr) {
		printf("ERROR: pipe count %d seen (must stay <= 1), %lu "
		       "uninitialised elements seen\n", last, mberr);
		return 1;
	}
	URCU_CHECK(n >= 3 && reads >= 100); /* it did run */
	printf("urcu_stress: ok\n");
	return 0;
}
