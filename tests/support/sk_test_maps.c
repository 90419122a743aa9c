/* SPDX-License-Identifier: MIT */
/*
 * sk_test_maps.h: the mmap allocator of the use-after-free tests and the
 * SIGSEGV handler that pauses a victim at its touch of a mapping.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "scalekit/rcu.h"
#include "sk_test.h"
#include "sk_test_maps.h"

struct map maps[MAX_MAPS];
int nmaps;

void *map_alloc(size_t size)
{
	size_t len = (size + 4095) & ~(size_t)4095;
	void *p;

	if (nmaps == MAX_MAPS)
		return NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	maps[nmaps].p = (char *)p;
	maps[nmaps].len = len;
	maps[nmaps].freed = 0;
	/* Release: a signal handler that sees the count sees the entry. */
	__atomic_fetch_add(&nmaps, 1, __ATOMIC_RELEASE);
	return p;
}

void map_free(void *p)
{
	/*
	 * Acquire: pairs with map_alloc()'s release, which may run in
	 * another thread (a table frees arrays from RCU callbacks).
	 */
	int i, n = __atomic_load_n(&nmaps, __ATOMIC_ACQUIRE);

	for (i = 0; i < n; i++)
		if (maps[i].p == p &&
		    !__atomic_load_n(&maps[i].freed, __ATOMIC_RELAXED)) {
			/* Release: pairs with the handler's acquire of freed. */
			__atomic_store_n(&maps[i].freed, 1, __ATOMIC_RELEASE);
			mprotect(p, maps[i].len, PROT_NONE);
			return;
		}
	abort();
}

int map_find(const char *a)
{
	int i, n = __atomic_load_n(&nmaps, __ATOMIC_ACQUIRE);

	for (i = 0; i < n; i++)
		if (a >= maps[i].p && a < maps[i].p + maps[i].len)
			return i;
	return -1;
}

int map_of(const void *p)
{
	int i;

	for (i = 0; i < nmaps; i++)
		if (maps[i].p == p)
			return i;
	return -1;
}

void map_unmap_all(void)
{
	int i;

	for (i = 0; i < nmaps; i++)
		munmap(maps[i].p, maps[i].len);
	nmaps = 0;
}

int map_armed = -1;	/* map whose next touch pauses the toucher */
int map_paused, map_release_victim; /* handshake with the handler */
int map_paused_in_section; /* the victim was inside a read section */
int map_victim_done;
int map_uaf_faults;	/* touches of freed mappings */
int map_unexpected_faults;

void map_pause_reset(void)
{
	map_armed = -1;
	map_paused = map_release_victim = 0;
	map_paused_in_section = map_victim_done = 0;
	map_uaf_faults = map_unexpected_faults = 0;
}

void map_segv_handler(int sig, siginfo_t *si, void *uc)
{
	char *a = (char *)si->si_addr;
	int i = map_find(a), e = errno, freed;

	(void)uc;
	if (i < 0) {
		signal(sig, SIG_DFL); /* a real crash: let it happen */
		return;
	}
	freed = __atomic_load_n(&maps[i].freed, __ATOMIC_ACQUIRE);
	if (!freed && __atomic_load_n(&map_armed, __ATOMIC_ACQUIRE) == i) {
		__atomic_store_n(&map_armed, -1, __ATOMIC_RELAXED);
		__atomic_store_n(&map_paused_in_section,
				 sk_rcu_read_lock_held(), __ATOMIC_RELAXED);
		__atomic_store_n(&map_paused, 1, __ATOMIC_RELEASE);
		while (!__atomic_load_n(&map_release_victim,
					__ATOMIC_ACQUIRE))
			sched_yield();
		errno = e;
		return; /* the access is retried */
	}
	if (freed)
		__atomic_fetch_add(&map_uaf_faults, 1, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(&map_unexpected_faults, 1,
				   __ATOMIC_RELAXED);
	mprotect(maps[i].p, maps[i].len, PROT_READ | PROT_WRITE);
	errno = e;
}

void map_segv_install(struct sigaction *old)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = map_segv_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, old);
}

void map_arm(int i)
{
	__atomic_store_n(&map_armed, i, __ATOMIC_RELEASE);
	mprotect(maps[i].p, maps[i].len, PROT_NONE);
}

int map_wait_victim(int i)
{
	int stopped;

	while (!(stopped = __atomic_load_n(&map_paused, __ATOMIC_ACQUIRE)) &&
	       !__atomic_load_n(&map_victim_done, __ATOMIC_ACQUIRE))
		sched_yield();
	__atomic_store_n(&map_armed, -1, __ATOMIC_RELEASE);
	/* The victim holds a pointer to the mapping (or has finished). */
	mprotect(maps[i].p, maps[i].len, PROT_READ | PROT_WRITE);
	return stopped;
}

void map_release(void)
{
	__atomic_store_n(&map_release_victim, 1, __ATOMIC_RELEASE);
}

void map_race_victim(pthread_t victim, pthread_t resizer, int i,
		     int in_section, void (*settle)(void))
{
	if (in_section) {
		/* The resize must wait for the victim's read section. */
		usleep(50000);
		SK_CHECK(!__atomic_load_n(&maps[i].freed, __ATOMIC_ACQUIRE));
		map_release();
		pthread_join(victim, NULL);
		pthread_join(resizer, NULL);
	} else {
		pthread_join(resizer, NULL);
		if (settle)
			settle();
		SK_CHECK(maps[i].freed); /* the array is gone meanwhile */
		map_release();
		pthread_join(victim, NULL);
	}
}

void map_victim_report(const char *name, int stopped, int in_section)
{
	fprintf(stderr, "  %s: %s; %d read(s) of the freed bucket array%s\n",
		name,
		!stopped     ? "never touched the array"
		: in_section ? "touched the array inside a read section"
			     : "touched the array OUTSIDE a read section",
		map_uaf_faults, map_uaf_faults ? " (use after free)" : "");
}
