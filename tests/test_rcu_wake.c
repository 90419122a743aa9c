/* SPDX-License-Identifier: MIT */
/*
 * test_rcu_wake.c - the futex wake-ups between readers and a grace period
 * that sleeps on them (sk_rcu__gp.futex: -1 while the leader sleeps).
 *
 * The program is linked with -Wl,--wrap=syscall (tests/rcu_wake.cmake),
 * so every system call the library makes passes through __wrap_syscall()
 * below, which counts each thread's FUTEX_WAKE calls on sk_rcu__gp.futex.
 * Each case runs this program again (fork + exec) with
 * SCALEKIT_RCU_STALL_MS in its environment (read once at load time).
 * What is proven:
 *   - a reader that leaves while the leader sleeps on it makes exactly one
 *     wake system call (the control: the counter sees wake-ups);
 *   - after a futex sleep that timed out (SCALEKIT_RCU_STALL_MS=1: the
 *     leader wakes up to report a stall), the leader is awake and the
 *     futex word is 0, so a reader that leaves then makes no wake system
 *     call.  Before the fix the word stayed -1 there and the reader made
 *     one.  The leader is held awake inside its stall report by a full
 *     pipe on stderr, so the check does not depend on timing;
 *   - while the leader sleeps on one reader, another reader whose section
 *     began in the new phase leaves without a wake system call (it cannot
 *     hold the scan, RCU-U3), and the leader stays asleep until the
 *     reader it waits for leaves.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "scalekit/rcu.h"
#include "sk_test.h"
#include "sk_test_rcu.h"

/* ---- counting the library's futex wake-ups ------------------------------- */

long __real_syscall(long n, ...);
long __wrap_syscall(long n, ...);

static __thread unsigned long my_gp_wakes; /* FUTEX_WAKE on the gp futex */

long __wrap_syscall(long n, ...)
{
	long a[6];
	va_list ap;
	int i;

	/* As glibc's syscall(): six argument registers, used or not. */
	va_start(ap, n);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (n == SYS_futex && a[0] == (long)&sk_rcu__gp.futex &&
	    (a[1] & ~FUTEX_PRIVATE_FLAG) == FUTEX_WAKE)
		my_gp_wakes++;
	return __real_syscall(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* ---- child side ---------------------------------------------------------- */

/* A reader that holds a section until released and counts its wake-ups. */
struct reader {
	pthread_t t;
	int in, go;
	unsigned long wakes; /* FUTEX_WAKE calls of its sk_rcu_read_unlock() */
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;

	sk_rcu_read_lock();
	STORE(r->in, 1);
	while (!LOAD(r->go))
		sched_yield();
	my_gp_wakes = 0;
	sk_rcu_read_unlock();
	STORE(r->wakes, my_gp_wakes);
	return NULL;
}

/* A thread that runs one grace period. */
struct leader {
	pthread_t t;
	long tid;
	int done;
};

static void *leader_main(void *arg)
{
	struct leader *l = arg;

	STORE(l->tid, sk_test_gettid());
	sk_synchronize_rcu();
	STORE(l->done, 1);
	return NULL;
}

/* The system call thread tid is blocked in (-1: running or unknown). */
static long blocked_in(long tid)
{
	char path[64], buf[128];
	long nr = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%ld/syscall", tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f) && buf[0] >= '0' && buf[0] <= '9')
		nr = strtol(buf, NULL, 10);
	fclose(f);
	return nr;
}

/* Wait until the leader is blocked in a system call nr (or nr2). */
static int wait_leader_in(struct leader *l, long nr, long nr2)
{
	long i, s;

	while (!LOAD(l->tid))
		sched_yield();
	for (i = 0; i < 200000; i++) { /* a hang guard of minutes */
		s = blocked_in(l->tid);
		if (s == nr || s == nr2)
			return 1;
		sk_test_sleep_us(500);
	}
	return 0;
}

/*
 * Start reader r inside its section, then leader l; returns 1 once l
 * sleeps on the futex (so on r), 0 when it never does.
 */
static int leader_sleeps_on(struct reader *r, struct leader *l)
{
	sk_test_thread_start(&r->t, reader_main, r);
	while (!LOAD(r->in))
		sched_yield();
	sk_test_thread_start(&l->t, leader_main, l);
	return wait_leader_in(l, SYS_futex, SYS_futex);
}

/*
 * --child=control (default threshold: the leader sleeps 21 s unless
 * woken): the reader leaves while the leader sleeps on it and wakes it
 * with one system call.  Prints "futex <v> wakes <n> gp_sleeps <s>".
 */
static int child_control(void)
{
	struct reader r = { 0 };
	struct leader l = { 0 };
	int futex;

	if (!leader_sleeps_on(&r, &l))
		return 3;
	futex = sk_atomic_load_relaxed(&sk_rcu__gp.futex);
	STORE(r.go, 1);
	pthread_join(r.t, NULL);
	pthread_join(l.t, NULL);
	fprintf(stderr, "futex %d wakes %lu gp_sleeps %lu\n", futex,
		LOAD(r.wakes), sk_test_rcu_stats().gp_sleeps);
	return 0;
}

/*
 * A reader whose section begins while the leader sleeps (so in the phase
 * of the scan it sleeps on) and that leaves at once: it never held the
 * grace period.
 */
static void *bystander_main(void *arg)
{
	struct reader *r = arg;

	while (!LOAD(r->go))
		sched_yield();
	sk_rcu_read_lock();
	my_gp_wakes = 0;
	sk_rcu_read_unlock();
	STORE(r->wakes, my_gp_wakes);
	STORE(r->in, 1);
	return NULL;
}

/*
 * --child=bystander: while the leader sleeps on reader r, another
 * registered reader b runs a section of the new phase and leaves: its
 * unlock sees futex -1 but makes no wake call (RCU-U3: its section cannot
 * hold the scan), and the leader still sleeps; then r leaves and wakes it.
 * Prints "futex <v> bystander <n> wakes <n> asleep <0|1>".
 */
static int child_bystander(void)
{
	struct reader r = { 0 }, b = { 0 };
	struct leader l = { 0 };
	int futex, asleep;

	sk_test_thread_start(&b.t, bystander_main, &b);
	if (!leader_sleeps_on(&r, &l))
		return 3;
	STORE(b.go, 1);
	pthread_join(b.t, NULL);
	futex = sk_atomic_load_relaxed(&sk_rcu__gp.futex);
	asleep = !LOAD(l.done) && blocked_in(l.tid) == SYS_futex;
	STORE(r.go, 1);
	pthread_join(r.t, NULL);
	pthread_join(l.t, NULL);
	fprintf(stderr, "futex %d bystander %lu wakes %lu asleep %d\n", futex,
		LOAD(b.wakes), LOAD(r.wakes), asleep);
	return 0;
}

/*
 * --child=after-timeout (SCALEKIT_RCU_STALL_MS=1): stderr becomes a full
 * pipe, so the leader blocks writing its first stall report, which comes
 * after a futex sleep that timed out.  The reader leaves while the leader
 * is held there; then the pipe is drained and the grace period ends.
 * Prints "futex <v> wakes <n> gp_sleeps <s>" on the real stderr.
 */
static int child_after_timeout(void)
{
	struct reader r = { 0 };
	struct leader l = { 0 };
	int p[2], saved, futex, in_write;
	char sink[4096];

	sk_test_pipe(p);
	fcntl(p[1], F_SETPIPE_SZ, 4096);
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	while (write(p[1], sink, sizeof(sink)) > 0 || errno == EINTR)
		;
	fcntl(p[1], F_SETFL, 0);
	fflush(stderr);
	saved = dup(2);
	dup2(p[1], 2); /* from here on, a write to stderr blocks */

	sk_test_thread_start(&r.t, reader_main, &r);
	while (!LOAD(r.in))
		sched_yield();
	sk_test_thread_start(&l.t, leader_main, &l);
	in_write = wait_leader_in(&l, SYS_write, SYS_writev);
	/* The leader is awake, inside report_stall(). */
	futex = sk_atomic_load_relaxed(&sk_rcu__gp.futex);
	STORE(r.go, 1);
	pthread_join(r.t, NULL);

	fcntl(p[0], F_SETFL, O_NONBLOCK);
	while (!LOAD(l.done))
		if (read(p[0], sink, sizeof(sink)) <= 0)
			sk_test_sleep_us(100);
	pthread_join(l.t, NULL);
	dup2(saved, 2);
	close(saved);
	if (!in_write)
		return 3;
	fprintf(stderr, "futex %d wakes %lu gp_sleeps %lu\n", futex,
		LOAD(r.wakes), sk_test_rcu_stats().gp_sleeps);
	return 0;
}

/* ---- parent side --------------------------------------------------------- */

/* Run --child=mode with SCALEKIT_RCU_STALL_MS=stall_ms (NULL: unset). */
static int run_child(const char *mode, const char *stall_ms, char *out,
		     size_t len)
{
	int st = sk_test_run_child("test_rcu_wake", mode,
				   "SCALEKIT_RCU_STALL_MS", stall_ms, out, len);

	fprintf(stderr, "[child %s] %s", mode, out);
	return st;
}

/* The number after "key " in s, or -99. */
static long value_of(const char *s, const char *key)
{
	const char *p = strstr(s, key);

	return p ? strtol(p + strlen(key) + 1, NULL, 10) : -99;
}

/*
 * Run --child=mode (run_child()) into out and check that it exited with 0
 * and printed the futex word futex and the reader's wake calls wakes.
 */
static void check_child(const char *mode, const char *stall_ms, char *out,
			size_t len, long futex, long wakes)
{
	SK_CHECK_EXIT_0(run_child(mode, stall_ms, out, len));
	SK_CHECK_EQ(value_of(out, "futex"), futex);
	SK_CHECK_EQ(value_of(out, "wakes"), wakes);
}

/*
 * Control: a reader leaving while the grace period sleeps on it (futex
 * -1) makes exactly one wake system call; so the counter sees them.
 */
static void reader_leaving_wakes_a_sleeping_leader_once(void)
{
	char out[8192];

	check_child("control", NULL, out, sizeof(out), -1, 1);
	SK_CHECK_GT(value_of(out, "gp_sleeps"), 0);
}

/*
 * After a timed-out futex sleep the awake leader has the futex word at 0:
 * a reader leaving then makes no wake system call.
 */
static void no_wake_syscall_after_a_timed_out_sleep(void)
{
	char out[65536];

	check_child("after-timeout", "1", out, sizeof(out), 0, 0);
	SK_CHECK_GT(value_of(out, "gp_sleeps"), 0);
}

/*
 * While the grace period sleeps on one reader, another reader's section
 * of the new phase ends without a wake system call (RCU-U3); the reader
 * it sleeps on still wakes it.  Before RCU-U3, every unlock that saw -1
 * woke the leader, which then went back to sleep.
 */
static void only_a_holding_reader_wakes_the_leader(void)
{
	char out[8192];

	check_child("bystander", NULL, out, sizeof(out), -1, 1);
	SK_CHECK_EQ(value_of(out, "bystander"), 0);
	SK_CHECK_EQ(value_of(out, "asleep"), 1);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--child=control"))
		return child_control();
	if (argc == 2 && !strcmp(argv[1], "--child=bystander"))
		return child_bystander();
	if (argc == 2 && !strcmp(argv[1], "--child=after-timeout"))
		return child_after_timeout();
	sk_test_args(argc, argv);
	sk_test_seed_init();
	SK_RUN(reader_leaving_wakes_a_sleeping_leader_once);
	SK_RUN(no_wake_syscall_after_a_timed_out_sleep);
	SK_RUN(only_a_holding_reader_wakes_the_leader);
	return sk_test_report();
}
