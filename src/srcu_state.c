/* SPDX-License-Identifier: MIT */
/*
 * SRCU's lowest layer (src/layers.txt): the process-wide state and the
 * setup of a domain's private state on first use, which every other file
 * of the module uses and which calls none of them.  The design and the
 * complete legend of barrier pairs: src/internal/srcu.h.
 *
 * Labels placed here (partners in brackets):
 *   SRCU-R  release of state->ready after the setup [its acquire in
 *           sk__srcu_ready()]
 */
#define _GNU_SOURCE
#include "internal/srcu.h"

#include <pthread.h>
#include <sched.h>

struct sk__srcu_global sk__srcu = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.once = PTHREAD_ONCE_INIT,
	.work = { &sk__srcu.work, &sk__srcu.work },
	.idle_cv = PTHREAD_COND_INITIALIZER,
	.worker = { .cpu = -1, .run_lock = PTHREAD_MUTEX_INITIALIZER },
};

void sk__srcu_state_setup(struct sk_srcu *d, struct sk_srcu__state *st)
{
	st->dom = d;
	pthread_mutex_init(&st->gp_mutex, NULL);
	pthread_mutex_init(&st->barrier_mutex, NULL);
	sk__wfq_init(&st->cbq);
	sk__link_init(&st->work_link);
}

/* The inline unlock reaches remote[i] through &cnt[i]. */
_Static_assert(offsetof(struct sk_srcu_slot, remote) ==
		       offsetof(struct sk_srcu_slot, cnt) +
			       SK__SRCU_REMOTE * sizeof(unsigned long),
	       "the slot's counters are where the inline unlock looks");
_Static_assert(sizeof(struct sk_srcu__state) <= sizeof(struct sk_srcu__store),
	       "SK__SRCU_STATE_BYTES holds the private state");
_Static_assert(_Alignof(struct sk_srcu__state) <=
		       _Alignof(struct sk_srcu__store),
	       "struct sk_srcu__store is aligned for the private state");

void sk__srcu_ready(struct sk_srcu *d, const char *fn)
{
	struct sk_srcu__state *st = d->state;
	int r;

	if (SK_UNLIKELY(!st))
		sk__die("%s on SRCU domain %p, which sk_srcu_destroy() "
			"released: call sk_srcu_init() first",
			fn, (void *)d);
	r = sk_atomic_load_acquire(&st->ready);
	if (SK_LIKELY(r == 2))
		return;
	/* Zeroed static storage: the first caller sets it up. */
	if (r == 0 && sk_atomic_cmpxchg_seq_cst(&st->ready, &r, 1)) {
		sk__srcu_state_setup(d, st);
		/* SRCU-R: release: the setup before any use; pairs with the acquire
		 * above. */
		sk_atomic_store_release(&st->ready, 2);
		return;
	}
	while (sk_atomic_load_acquire(&st->ready) != 2)
		sched_yield(); /* another thread is setting it up */
}
