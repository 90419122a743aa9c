/* SPDX-License-Identifier: MIT */
/*
 * Allocator for use-after-free tests of table memory: every allocation is
 * a private mapping; a freed one becomes PROT_NONE (never unmapped while a
 * test runs), so that a later touch faults and a SIGSEGV handler can tell
 * it apart (map_find()).  At most MAX_MAPS allocations per test; reset by
 * map_unmap_all().
 */
#ifndef SK_TEST_MAPS_H
#define SK_TEST_MAPS_H

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>

#define MAX_MAPS 64

struct map {
	char *p;
	size_t len;
	int freed;
};

/* The allocations of the current test (entries published by nmaps). */
extern struct map maps[MAX_MAPS];
extern int nmaps;

/* Allocate size bytes in a fresh mapping; NULL when MAX_MAPS are used. */
void *map_alloc(size_t size);

/* Mark p freed and make it PROT_NONE; aborts on a pointer not allocated. */
void map_free(void *p);

/* Index of the mapping that holds address a, or -1 (async-signal-safe). */
int map_find(const char *a);

/* Index of the mapping that starts at p, or -1. */
int map_of(const void *p);

/* munmap maps[0..nmaps) and set nmaps to 0: the reset between tests. */
void map_unmap_all(void);

/*
 * Pausing a thread (the victim) at its touch of a mapping, to let a
 * concurrent free happen while it holds a pointer: map_segv_install()
 * puts map_segv_handler() in place.  While map_armed is i (map_arm()),
 * the first thread to touch mapping i stops in the handler, noting in
 * map_paused_in_section whether it was inside an RCU read section, until
 * map_release_victim is set.  A touch of a freed mapping is counted in
 * map_uaf_faults, of any other mapping in map_unexpected_faults; either
 * mapping is made readable again so that the thread runs on (with the old
 * contents, as it would with glibc).  The victim sets map_victim_done
 * when it is through.
 */
extern int map_armed, map_paused, map_release_victim, map_paused_in_section;
extern int map_victim_done, map_uaf_faults, map_unexpected_faults;

/* The handshake and the counts above back to their initial values. */
void map_pause_reset(void);

void map_segv_handler(int sig, siginfo_t *si, void *uc);

/* Install map_segv_handler() for SIGSEGV; the previous action in *old. */
void map_segv_install(struct sigaction *old);

/* Make mapping i PROT_NONE; the next thread to touch it pauses. */
void map_arm(int i);

/*
 * Wait until the victim has paused (returns 1) or is done (returns 0),
 * then disarm and make mapping i readable again.
 */
int map_wait_victim(int i);

/* Let the paused victim go on. */
void map_release(void);

/*
 * After map_wait_victim(i), the thread resizer frees mapping i.  A victim
 * paused inside a read section must hold that free back: mapping i is
 * still there 50 ms later, then the victim goes on first.  Otherwise the
 * resize completes (then settle(), unless NULL, lets frees queued in the
 * background run) and must have freed mapping i before the victim goes
 * on.  Joins both threads.
 */
void map_race_victim(pthread_t victim, pthread_t resizer, int i,
		     int in_section, void (*settle)(void));

/* One line to stderr: what the victim did, the use-after-free touches. */
void map_victim_report(const char *name, int stopped, int in_section);

#endif /* SK_TEST_MAPS_H */
