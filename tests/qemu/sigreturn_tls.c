/* SPDX-License-Identifier: MIT */
/*
 * sigreturn_tls.c - what qemu-user 7.2 does to an x86 thread that takes
 * a signal, without scalekit (tests/qemu/README.md says why it matters).
 *
 * Thread A records the address of a __thread variable, then blocks in
 * nanosleep(2) in a loop (a handler makes it return EINTR; the loop goes
 * on).  Thread B is created after A and idles.  The main thread signals A
 * a few times, one at a time.  Checked:
 *   - in A's handler: the __thread variable is A's, the handler ran once
 *     per signal, and the stack pointer at the handler's entry has the
 *     alignment the psABI promises (16 bytes at the call, so %esp+4 /
 *     %rsp+8 is a multiple of 16 on entry);
 *   - in A after each signal returned: the __thread variable is still A's.
 * Natively every check holds.  Under qemu-i386 7.2 the first handler
 * runs on A's TLS, but after the first sigreturn A's __thread accesses
 * land in B's TLS block: sigreturn reloads %gs from the selector saved in
 * the frame, and qemu's emulated GDT is one table shared by all threads,
 * whose TLS entry holds the base set_thread_area(2) (clone's
 * CLONE_SETTLS) wrote last, that is, the newest thread's.  Under
 * qemu-x86_64 7.2 the TLS holds (the %fs base is not reloaded), but the
 * handler starts on a stack 8 bytes off the psABI alignment (qemu-i386:
 * 4 bytes): a movaps to a stack slot in the handler then faults.
 *
 * Build and run (exit status 0: all held; 1: a check failed):
 *   gcc -m32 -O2 -pthread sigreturn_tls.c -o sigreturn_tls32
 *   qemu-i386 ./sigreturn_tls32
 *   gcc -O2 -pthread sigreturn_tls.c -o sigreturn_tls64
 *   qemu-x86_64 ./sigreturn_tls64
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SIGNALS 5

static __thread int tls_var;

static int *a_tls;			     /* &tls_var in thread A */
static int *b_tls;			     /* &tls_var in thread B */
static int *volatile seen_in_handler;	     /* &tls_var in A's last handler */
static volatile uintptr_t entry_sp_misalign; /* worst handler entry */
static volatile int handled, a_ready, b_ready, stop;
static int bad_after_return, returns;

/*
 * &tls_var, computed anew at each call: the compiler takes a thread's TLS
 * address for a constant and would otherwise compute it once per function,
 * before the signal.
 */
__attribute__((noinline)) static int *my_tls(void)
{
	int *p = &tls_var;

	__asm__ volatile("" : "+r"(p));
	return p;
}

/*
 * __builtin_frame_address(0) points at the frame pointer the handler saved
 * right below its return address: two words up is the stack pointer before
 * the call, which the psABI keeps 16-byte aligned.
 */
__attribute__((noinline)) static void on_signal(int sig)
{
	uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
	uintptr_t mis = (fp + 2 * sizeof(void *)) % 16;

	(void)sig;
	if (mis > entry_sp_misalign)
		entry_sp_misalign = mis;
	seen_in_handler = my_tls();
	__atomic_fetch_add(&handled, 1, __ATOMIC_SEQ_CST);
}

static void *thread_a(void *arg)
{
	struct timespec nap = { 0, 2000000 };
	int last = 0;

	(void)arg;
	a_tls = my_tls();
	__atomic_store_n(&a_ready, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&stop, __ATOMIC_SEQ_CST)) {
		nanosleep(&nap, NULL); /* the signal interrupts this */
		if (__atomic_load_n(&handled, __ATOMIC_SEQ_CST) != last) {
			last = __atomic_load_n(&handled, __ATOMIC_SEQ_CST);
			returns++;
			if (my_tls() != a_tls)
				bad_after_return++;
		}
	}
	return NULL;
}

static void *thread_b(void *arg)
{
	(void)arg;
	b_tls = my_tls();
	__atomic_store_n(&b_ready, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&stop, __ATOMIC_SEQ_CST))
		usleep(1000);
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	struct timespec ms = { 0, 20000000 };
	pthread_t a, b;
	int i, fails = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	pthread_create(&a, NULL, thread_a, NULL);
	while (!a_ready)
		usleep(100);
	pthread_create(&b, NULL, thread_b, NULL); /* created after A */
	while (!b_ready)
		usleep(100);
	for (i = 0; i < SIGNALS; i++) {
		int h = handled;

		pthread_kill(a, SIGUSR1);
		while (handled == h)
			usleep(100);
		nanosleep(&ms, NULL); /* A notices and checks */
		if (i == 0 && seen_in_handler != a_tls) {
			printf("FAIL: handler in A sees &tls_var %p, A's is %p\n",
			       (void *)seen_in_handler, (void *)a_tls);
			fails++;
		}
	}
	__atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	printf("A's &tls_var %p, B's %p, last seen in A's handler %p\n",
	       (void *)a_tls, (void *)b_tls, (void *)seen_in_handler);
	if (seen_in_handler != a_tls && seen_in_handler == b_tls)
		printf("FAIL: A's later handlers ran on B's TLS\n");
	if (bad_after_return) {
		printf("FAIL: after %d of %d signal returns, A's __thread "
		       "accesses went to another thread's TLS\n",
		       bad_after_return, returns);
		fails++;
	}
	if (handled != SIGNALS) {
		printf("FAIL: %d handler runs for %d signals\n", handled,
		       SIGNALS);
		fails++;
	}
	if (entry_sp_misalign) {
		printf("FAIL: the handler was entered with its stack %lu "
		       "bytes off the psABI's 16-byte alignment\n",
		       (unsigned long)entry_sp_misalign);
		fails++;
	}
	if (!fails)
		printf("ok: %d signals, TLS and handler stack as on Linux\n",
		       SIGNALS);
	return fails != 0;
}
