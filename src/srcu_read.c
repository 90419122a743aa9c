/* SPDX-License-Identifier: MIT */
/*
 * SRCU read side: thread indexes, slots and the read-side slow paths.
 * The design and the complete legend of barrier pairs: src/internal/srcu.h.
 *
 * Labels placed here (partners in brackets):
 *   SRCU-B  light fence (or full barrier) after a lock count [SRCU-D]
 *   SRCU-C  release store or seq_cst RMW of an unlock count [SRCU-D]
 *   SRCU-N  nchunks raised before a chunk is published [acquires in
 *           srcu_gp.c sums() and of dir[k] here]
 *   SRCU-P  full barrier after binds++ [SRCU-Z in srcu_gp.c]
 *   SRCU-X  release decrement of nlive at thread exit [acquire in
 *           srcu_gp.c idle_view()]
 */
#define _GNU_SOURCE
#include "internal/srcu.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Tag w with its count incremented, in the count's modulus. */
static inline unsigned long tag_count_add(unsigned long w)
{
	return (w & ~SRCU_TAG_COUNT) | ((w + 1) & SRCU_TAG_COUNT);
}

/*
 * What an empty way of a slot cache points at: a slot no thread binds
 * (dom NULL, so no fast path takes it as its own).  Never written.
 */
static struct sk_srcu_slot unbound_slot;

__thread struct sk_srcu__tls sk_srcu__tls
	__attribute__((tls_model("initial-exec"))) = {
		.slot = { &unbound_slot, &unbound_slot, &unbound_slot,
			  &unbound_slot, &unbound_slot, &unbound_slot,
			  &unbound_slot, &unbound_slot },
	};

__thread struct srcu_thr sk__srcu_my_thr __attribute__((tls_model("initial-exec")));

/* ---- thread indexes ----------------------------------------------------- */

static void tls_forget(void)
{
	unsigned int w;

	for (w = 0; w < SK__SRCU_WAYS; w++)
		sk_srcu__tls.slot[w] = &unbound_slot;
}

/* Give up thread r's slots and index.  sk__srcu.lock held. */
void sk__srcu_thr_release(struct srcu_thr *r)
{
	unsigned int i, t = r->t;

	for (i = 0; i < r->n; i++) {
		struct sk_srcu *d = r->bind[i];
		struct sk_srcu_slot *s = sk__srcu_slot_find(d, t);

		if (s) {
			sk_atomic_store_relaxed(slot_tag(s, t), 0UL);
			/* No fast path takes it as a binding any more. */
			sk_atomic_store_relaxed(&s->dom, (struct sk_srcu *)NULL);
		}
		/*
		 * SRCU-X: this thread's counter stores before the decrement;
		 * pairs with the acquire of nlive in gp_idle().
		 */
		__atomic_fetch_sub(&d->state->nlive, 1UL, __ATOMIC_RELEASE);
	}
	free(r->bind);
	r->bind = NULL;
	r->n = r->cap = 0;
	sk__srcu.thr[t - 1] = NULL;
	sk__srcu.used[(t - 1) / 64] &= ~((uint64_t)1 << ((t - 1) % 64));
	r->t = 0;
}

static void tidx_exit(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&sk__srcu.lock);
	if (sk__srcu_my_thr.t)
		sk__srcu_thr_release(&sk__srcu_my_thr);
	pthread_mutex_unlock(&sk__srcu.lock);
	tls_forget();
}

static void srcu_once(void)
{
	if (pthread_key_create(&sk__srcu.key, tidx_exit) != 0)
		sk__die("pthread_key_create failed: cannot track thread exit");
}

/* Give the calling thread an index (1-based); 0 when none is left. */
static unsigned int tidx_get(void)
{
	unsigned int w, t = 0;

	pthread_once(&sk__srcu.once, srcu_once);
	pthread_mutex_lock(&sk__srcu.lock);
	for (w = 0; w < SRCU_MAX_THREADS / 64; w++) {
		if (sk__srcu.used[w] != ~(uint64_t)0) {
			int b = __builtin_ctzll(~sk__srcu.used[w]);

			sk__srcu.used[w] |= (uint64_t)1 << b;
			t = w * 64 + (unsigned int)b + 1;
			break;
		}
	}
	if (t) {
		sk__srcu_my_thr.t = t;
		sk__srcu.thr[t - 1] = &sk__srcu_my_thr;
	}
	pthread_mutex_unlock(&sk__srcu.lock);
	if (t)
		pthread_setspecific(sk__srcu.key, (void *)(uintptr_t)t);
	return t;
}

/* ---- slots ---------------------------------------------------------------- */

/* Put chunk ch in the pool of directory position k.  sk__srcu.lock held. */
static void chunk_pool_put(struct srcu_chunk *ch, unsigned int k)
{
	ch->pool_next = sk__srcu.chunk_pool[k];
	sk__srcu.chunk_pool[k] = ch;
}

/*
 * A chunk for directory position k, its slots unbound with zero counts:
 * from the pool of position k (type-stable: stale slot caches may still
 * point into it, and only load dom and key there), else a new one; NULL
 * on ENOMEM.
 */
static struct srcu_chunk *chunk_get(unsigned int k)
{
	struct srcu_chunk *ch;

	pthread_mutex_lock(&sk__srcu.lock);
	ch = sk__srcu.chunk_pool[k];
	if (ch)
		sk__srcu.chunk_pool[k] = ch->pool_next;
	pthread_mutex_unlock(&sk__srcu.lock);
	if (ch)
		return ch;
	ch = aligned_alloc(SK_CACHELINE, sizeof(*ch));
	if (ch)
		memset(ch, 0, sizeof(*ch));
	return ch;
}

/* The slot of thread index t in d, allocating it; NULL on ENOMEM. */
static struct sk_srcu_slot *slot_get(struct sk_srcu *d, unsigned int t)
{
	unsigned int k = (t - 1) / SK__SRCU_CHUNK_SLOTS;
	struct sk_srcu_slot **dir = sk_atomic_load_acquire(&d->state->dir);
	struct sk_srcu_slot *ch;

	if (!dir) {
		struct sk_srcu_slot **nd =
			calloc(SK__SRCU_MAX_CHUNKS, sizeof(*nd));

		if (!nd)
			return NULL;
		/* Release: readers that load dir see it zeroed. */
		if (!__atomic_compare_exchange_n(&d->state->dir, &dir, nd, 0,
						 __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE))
			free(nd); /* another thread won; dir holds its copy */
		else
			dir = nd;
	}
	ch = sk_atomic_load_acquire(&dir[k]);
	if (!ch) {
		struct srcu_chunk *nc = chunk_get(k);
		unsigned int n = sk_atomic_load_relaxed(&d->state->nchunks);

		if (!nc)
			return NULL;
		/*
		 * SRCU-N: scanners look at dir[0..nchunks); raise it (max)
		 * before
		 * the chunk can be used by anyone, winner or loser of the
		 * publication race.  Pairs with the release CAS below / the
		 * acquire of dir[k], and the acquire of nchunks in sums().
		 */
		while (n < k + 1 &&
		       !sk_atomic_cmpxchg_seq_cst(&d->state->nchunks, &n, k + 1))
			;
		/* Release: the zeroed slots (and SRCU-N) before the pointer. */
		if (!__atomic_compare_exchange_n(&dir[k], &ch, nc->slot, 0,
						 __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE)) {
			/* ch: the winner's chunk (acquire); ours back. */
			pthread_mutex_lock(&sk__srcu.lock);
			chunk_pool_put(nc, k);
			pthread_mutex_unlock(&sk__srcu.lock);
		} else {
			ch = nc->slot;
		}
	}
	return &ch[(t - 1) % SK__SRCU_CHUNK_SLOTS];
}

/*
 * Put d's chunks back in the pool (sk_srcu_destroy(), every section of d
 * ended).  Nobody else counts in them: the fast paths of threads whose
 * caches still point there find dom NULL (cleared by unbind_all() or at
 * their exit) and go to the slow paths, which look in the directories of
 * live domains only.  sk__srcu.lock held.
 */
void sk__srcu_chunks_release(struct sk_srcu *d)
{
	struct sk_srcu_slot **dir = d->state->dir;
	unsigned int k, i, b;

	for (k = 0; dir && k < SK__SRCU_MAX_CHUNKS; k++) {
		struct srcu_chunk *ch = (struct srcu_chunk *)(void *)dir[k];

		if (!ch)
			continue;
		/*
		 * Relaxed stores: the next user gets the chunk from
		 * chunk_get() under sk__srcu.lock (which orders them before
		 * its use); stale fast paths meanwhile read only dom (NULL)
		 * and key, atomically, and act on neither.
		 */
		for (i = 0; i < SK__SRCU_CHUNK_SLOTS; i++) {
			struct sk_srcu_slot *s = &ch->slot[i];

			sk_atomic_store_relaxed(&s->dom, (struct sk_srcu *)NULL);
			sk_atomic_store_relaxed(&ch->tag[i], 0UL);
			sk_atomic_store_relaxed(&s->key, 0UL);
			for (b = 0; b < 2; b++) {
				sk_atomic_store_relaxed(&s->cnt[b], 0UL);
				sk_atomic_store_relaxed(&s->remote[b], 0UL);
			}
		}
		dir[k] = NULL;
		chunk_pool_put(ch, k);
	}
}

/* The existing slot of thread index t in d, or NULL. */
struct sk_srcu_slot *sk__srcu_slot_find(struct sk_srcu *d, unsigned int t)
{
	struct sk_srcu_slot **dir = sk_atomic_load_acquire(&d->state->dir);
	struct sk_srcu_slot *ch;

	if (t == 0 || t > SRCU_MAX_THREADS || !dir)
		return NULL;
	ch = sk_atomic_load_acquire(&dir[(t - 1) / SK__SRCU_CHUNK_SLOTS]);
	return ch ? &ch[(t - 1) % SK__SRCU_CHUNK_SLOTS] : NULL;
}

/*
 * The calling thread's slot in d if it took it.  A slot's tag is nonzero
 * exactly while the current holder of its thread index has it bound
 * (zeroed when a holder exits, under sk__srcu.lock, before the index is
 * given again), so for our own index a nonzero tag means ours.
 */
struct sk_srcu_slot *sk__srcu_my_slot(struct sk_srcu *d)
{
	struct sk_srcu_slot *s = sk__srcu_slot_find(d, sk__srcu_my_thr.t);

	if (!s || !(sk_atomic_load_relaxed(slot_tag(s, sk__srcu_my_thr.t)) >>
		    SRCU_TAG_SHIFT))
		return NULL;
	return s;
}

/*
 * Bind slot s (thread index t) of d to the calling thread: a new binding
 * incarnation, the key its sections return, the tag, and dom, which makes
 * the slot ours in d for the fast paths.  The count part of the tag
 * starts at the slot's count (locks - own unlocks: cnt[]), so that sections
 * left open by earlier owners of the index are not ours
 * (sk_srcu_read_lock_held()); their counts are visible here through
 * sk__srcu.lock, taken by their owner's exit.  sk__srcu.lock held.
 */
static void slot_take(struct sk_srcu *d, struct sk_srcu_slot *s,
		      unsigned int t)
{
	unsigned long open, key;
	unsigned int inc;

	if (++sk__srcu.next_inc > SRCU_INC_MAX)
		sk__srcu.next_inc = 1;
	inc = sk__srcu.next_inc;
	open = slot_counts(s);
	key = (unsigned long)inc << (SRCU_T_BITS + 1) |
	      (unsigned long)t << 1 | SK__SRCU_KEY_DOM(d);
	sk_atomic_xchg_seq_cst(&s->key, key);
	/*
	 * remote[] counts of earlier owners: the inline unlock must add
	 * them.  Store buffering with remote_unlock() (seq_cst count, then
	 * seq_cst OR of the bit): our seq_cst store of the key comes before
	 * these seq_cst loads, so a remote end that they miss ORs the bit
	 * into our key, not into the one we replaced.
	 */
	if (SK__SRCU_KEY_REMOTE_ON &&
	    (__atomic_load_n(&s->remote[0], __ATOMIC_SEQ_CST) |
	     __atomic_load_n(&s->remote[1], __ATOMIC_SEQ_CST)))
		__atomic_fetch_or(&s->key, SK__SRCU_KEY_REMOTE,
				  __ATOMIC_SEQ_CST);
	sk_atomic_xchg_seq_cst(slot_tag(s, t),
			       (unsigned long)inc << SRCU_TAG_SHIFT |
				       (open & SRCU_TAG_COUNT));
	/*
	 * Last: our fast paths take the slot as ours once dom is d.  Relaxed:
	 * only this thread acts on it (its own program order puts key and
	 * tag first); sk_srcu_destroy() clears it under sk__srcu.lock.
	 */
	sk_atomic_store_relaxed(&s->dom, d);
}

/*
 * Cache s as the calling thread's slot in d for the fast paths, which
 * then pair their compiler barriers with membarrier(2): so only when the
 * fence mode is membarrier.  Without it nothing is cached and every
 * section takes the slow paths, whose light fences are full fences.
 */
static void cache_slot(struct sk_srcu *d, struct sk_srcu_slot *s)
{
	unsigned int w = SK__SRCU_WAY(d);

	if (!sk_barrier__fence_sys_get())
		return;
	/*
	 * The lock's copy of s's key (its binding part, which only we
	 * write), beside the pointer.  Plain stores, in no guaranteed order:
	 * only this thread reads them, and not from a signal handler (SRCU
	 * read sections are not async-signal-safe: the slow paths take
	 * mutexes, and a handler's section of another domain of the same way
	 * that interrupted the pair here, or the fast lock between its load
	 * of the pointer and of this copy, would pair one domain's slot with
	 * the other's key).
	 */
	sk_srcu__tls.key[w] = (unsigned int)sk_atomic_load_relaxed(&s->key);
	sk_srcu__tls.slot[w] = s;
}

/*
 * The calling thread's slot in d, taking it (and an index) if needed, and
 * cached in sk_srcu__tls (see cache_slot()).  NULL when no index or memory
 * is left.
 */
static struct sk_srcu_slot *slot_bind(struct sk_srcu *d)
{
	struct srcu_thr *r = &sk__srcu_my_thr;
	struct sk_srcu_slot *s;

	if (!r->t && !tidx_get())
		return NULL;
	s = slot_get(d, r->t);
	if (!s)
		return NULL;
	if (!(sk_atomic_load_relaxed(slot_tag(s, r->t)) >> SRCU_TAG_SHIFT)) {
		pthread_mutex_lock(&sk__srcu.lock);
		if (r->n == r->cap) {
			unsigned int cap = r->cap ? 2 * r->cap : 8;
			struct sk_srcu **nb =
				realloc(r->bind, cap * sizeof(*nb));

			if (!nb) {
				pthread_mutex_unlock(&sk__srcu.lock);
				return NULL;
			}
			r->bind = nb;
			r->cap = cap;
		}
		r->bind[r->n++] = d;
		slot_take(d, s, r->t);
		sk_atomic_fetch_add_seq_cst(&d->state->nlive, 1UL);
		sk_atomic_fetch_add_seq_cst(&d->state->binds, (uint64_t)1);
		pthread_mutex_unlock(&sk__srcu.lock);
		/* SRCU-P: binds++ before our first section; pairs with SRCU-Z. */
		sk_smp_mb();
	}
	cache_slot(d, s);
	return s;
}

int sk_srcu__read_lock_slow(struct sk_srcu *d)
{
	struct sk_srcu_slot *s;
	int bit;

	sk__srcu_ready(d, "sk_srcu_read_lock()");
	s = slot_bind(d);
	bit = (int)(sk_atomic_load_relaxed(&d->idx) & 1);

	if (!s) {
		/* The shared counters count starts in cnt[], ends in remote[]. */
		sk_atomic_fetch_add_seq_cst(&d->state->shared.cnt[bit], 1UL);
		/* SRCU-B: lock count before the section (full barrier). */
		sk_smp_mb__after_atomic();
		return bit;
	}
	sk_srcu__count_up(&s->cnt[bit]);
	/* SRCU-B: the count before the section; pairs with SRCU-D. */
	sk_fence_light();
	/* Through unsigned int: drops SK__SRCU_KEY_REMOTE, as in the fast path. */
	return (int)(unsigned int)(sk_atomic_load_relaxed(&s->key) |
				   (unsigned long)bit);
}

static void __attribute__((noreturn)) die_unbalanced(struct sk_srcu *d, int idx)
{
	sk__die("unbalanced sk_srcu_read_unlock() on domain %p: index %d "
		"ended more often than it was entered",
		(void *)d, idx);
}

static void __attribute__((noreturn)) die_bogus(struct sk_srcu *d, int idx)
{
	sk__die("sk_srcu_read_unlock(): index %d was not returned by "
		"sk_srcu_read_lock() on domain %p",
		idx, (void *)d);
}

static void __attribute__((noreturn)) die_foreign(struct sk_srcu *d, int idx)
{
	sk__die("sk_srcu_read_unlock(): index %d was returned by "
		"sk_srcu_read_lock() on another domain than %p",
		idx, (void *)d);
}

/*
 * (t, inc) is a live binding of thread index t in a domain other than d:
 * an idx of that domain.  Its holder's bindings all have distinct
 * incarnations (one process-wide counter, unless it wrapped meanwhile),
 * and an earlier holder of t, whose section in d may legitimately still
 * be open, had its incarnations before the holder's.
 */
static int foreign_idx(struct sk_srcu *d, unsigned int t, unsigned int inc)
{
	struct srcu_thr *r;
	unsigned int i;
	int found = 0;

	pthread_mutex_lock(&sk__srcu.lock);
	r = sk__srcu.thr[t - 1];
	for (i = 0; r && i < r->n && !found; i++) {
		struct sk_srcu_slot *o = sk__srcu_slot_find(r->bind[i], t);

		found = r->bind[i] != d && o &&
			sk_atomic_load_relaxed(slot_tag(o, t)) >>
					SRCU_TAG_SHIFT ==
				inc;
	}
	pthread_mutex_unlock(&sk__srcu.lock);
	return found;
}

/* Our own section of d, ended on the slow path (a cache miss). */
static void own_unlock(struct sk_srcu *d, struct sk_srcu_slot *s, int idx)
{
	int bit = idx & 1;
	unsigned long n = sk_atomic_load_relaxed(&s->cnt[bit]) - 1;

	if (sk_srcu__none_open(&s->cnt[bit], n, 1))
		die_unbalanced(d, idx);
	/* SRCU-C: release, as in the fast path; pairs with SRCU-D. */
	sk_atomic_store_release(&s->cnt[bit], n);
	cache_slot(d, s);
}

/*
 * Another thread's section (or one of an earlier holder of index t): count
 * it in the slot's remote[] (SRCU-C: a seq_cst RMW), and in its live owner's
 * tag count when the binding incarnation is the owner's (live).
 */
static void remote_unlock(struct sk_srcu *d, struct sk_srcu_slot *s, int idx,
			  int live)
{
	int bit = idx & 1;
	unsigned long r = sk_atomic_fetch_add_seq_cst(&s->remote[bit], 1UL) + 1;
	unsigned long *tag = slot_tag(s, ((unsigned int)idx >> 1) & SRCU_T_MASK);
	unsigned long w = sk_atomic_load_relaxed(tag);

	/*
	 * The owner's inline unlock adds remote[] from now on.  seq_cst,
	 * after the count: store buffering with slot_take() (seq_cst store
	 * of the new key, then seq_cst loads of remote[]): a binding made
	 * meanwhile either sees our count and sets the bit itself, or its
	 * key is stored before our OR, which then marks it.
	 */
	if (SK__SRCU_KEY_REMOTE_ON)
		__atomic_fetch_or(&s->key, SK__SRCU_KEY_REMOTE,
				  __ATOMIC_SEQ_CST);
	while (live && w >> SRCU_TAG_SHIFT == (unsigned int)idx >> 16 &&
	       !sk_atomic_cmpxchg_seq_cst(tag, &w, tag_count_add(w)))
		;
	/* More ends elsewhere (r) than the count (starts less own ends). */
	if ((long)(sk_atomic_load_relaxed(&s->cnt[bit]) - r) < 0) {
		/*
		 * Confirm before dying: the owner's count store of the
		 * section's start may not be visible here yet (the hand-off
		 * ordered it before this end only as far as the idx went);
		 * after the heavy fence every start preceding a counted end
		 * is (as SRCU-C/SRCU-D).
		 */
		sk_fence_heavy();
		if ((long)(sk_atomic_load_relaxed(&s->cnt[bit]) - r) < 0)
			die_unbalanced(d, idx);
	}
}

void sk_srcu__read_unlock_slow(struct sk_srcu *d, int idx)
{
	unsigned int tag = (unsigned int)idx >> 1, t, inc;
	int bit = idx & 1;
	struct sk_srcu_slot *s;
	unsigned long u;

	sk__srcu_ready(d, "sk_srcu_read_unlock()");
	if (idx < 0)
		die_bogus(d, idx);
	if (tag == 0) {
		/*
		 * Shared counters: ends in remote[].  SRCU-C: the RMW is a
		 * full barrier.
		 */
		u = 1 + sk_atomic_fetch_add_seq_cst(
				&d->state->shared.remote[bit], 1UL);
		/* Every lock before a counted unlock is visible (RMW chain). */
		if ((long)(u - sk_atomic_load_acquire(
				       &d->state->shared.cnt[bit])) > 0)
			die_bogus(d, idx);
		return;
	}
	t = tag & SRCU_T_MASK;
	inc = tag >> SRCU_T_BITS;
	if (!t || !inc || t > SRCU_MAX_THREADS)
		die_bogus(d, idx);
	s = sk__srcu_slot_find(d, t);
	if (!s)
		die_bogus(d, idx);
	if (sk_atomic_load_relaxed(slot_tag(s, t)) >> SRCU_TAG_SHIFT == inc) {
		/* The slot's live binding made it: its owner's section. */
		if (t == sk__srcu_my_thr.t)
			own_unlock(d, s, idx); /* cache miss, or unbalanced */
		else
			remote_unlock(d, s, idx, 1);
		return;
	}
	if (foreign_idx(d, t, inc))
		die_foreign(d, idx);
	remote_unlock(d, s, idx, 0); /* an earlier holder's section */
}

int sk_srcu_read_lock_held(struct sk_srcu *d)
{
	struct sk_srcu_slot *s;
	unsigned long open;

	if (!d)
		return 0;
	sk__srcu_ready(d, "sk_srcu_read_lock_held()");
	s = sk__srcu_my_slot(d);
	if (!s)
		return 0;
	/*
	 * Ours: entered minus ended here (cnt[]), minus (in the tag's count)
	 * the count when we took the slot and those ended elsewhere; in the
	 * count's modulus, read as signed.
	 */
	open = (slot_counts(s) -
		sk_atomic_load_relaxed(slot_tag(s, sk__srcu_my_thr.t))) &
	       SRCU_TAG_COUNT;
	return open != 0 && open <= SRCU_TAG_COUNT >> 1;
}
