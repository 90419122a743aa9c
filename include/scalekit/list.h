/* SPDX-License-Identifier: MIT */
/*
 * scalekit/list.h - intrusive doubly linked lists and hlists that RCU
 * readers may traverse while one updater changes them.
 *
 * Readers: sk_list_for_each_entry_rcu() and friends inside
 * sk_rcu_read_lock()/unlock() (or an SRCU section).  Updaters: serialize
 * among themselves (a lock of the caller's choice) and free a removed entry
 * only after a grace period (sk_synchronize_rcu(), sk_call_rcu(),
 * SK_FREE_RCU()).
 *
 * Every writer step below names the rule of Josh Triplett that makes it
 * safe (docs/data-structures.md):
 *  - [pub]  the reader reads in the opposite order of the writer's two
 *           writes (it reads the pointer, then the object; the writer
 *           fills the object, then writes the pointer): publication
 *           ordering, sk_rcu_assign_pointer(), separates them.
 *  - [gp]   the reader reads in the same order as the writer writes: a
 *           grace period must separate the writes.
 *  - [one]  a single write: a reader sees the structure before or after
 *           it, both of which are valid.
 *  - [priv] a write to memory no reader can reach yet (or any more).
 *
 * A deleted entry keeps its next pointer (a reader standing on it carries
 * on to the rest of the list) and gets a poisoned prev.  Continuing a
 * traversal from an entry after the read section that found it has ended
 * is the user's bug: the entry may have been freed since.
 *
 * All functions here are static inline, never block, and may be called
 * from any thread; the _rcu update functions require the caller to hold
 * the updaters' lock.
 */
#ifndef SCALEKIT_LIST_H
#define SCALEKIT_LIST_H

#include <stddef.h>

#include "scalekit/rcu.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Instrumentation points: every publication and every grace-period wait
 * of the update functions below expands SK__LIST_TRACE(PUBLISH) or
 * SK__LIST_TRACE(GP), which does nothing unless a build defines it before
 * it includes this header.
 */
#ifndef SK__LIST_TRACE
#define SK__LIST_TRACE(ev) ((void)0)
#endif

/* A publication (release store) of a reader-visible pointer, traced. */
#define SK__LIST_PUBLISH(p, v)                  \
	do {                                    \
		sk_rcu_assign_pointer(p, v);    \
		SK__LIST_TRACE(PUBLISH);        \
	} while (0)

/* Poison for the prev pointers of deleted entries. */
#define SK_LIST_POISON_PREV ((void *)0x5c1ee7e0ul)
#define SK_HLIST_POISON_PPREV ((void *)0x5c1ee7e8ul)

/* sk_container_of(ptr, type, member) - the structure containing ptr. */
#define sk_container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/* ---- doubly linked list ------------------------------------------------ */

struct sk_list_head {
	struct sk_list_head *next, *prev;
};

#define SK_LIST_HEAD_INIT(name) { &(name), &(name) }
#define SK_LIST_HEAD(name) struct sk_list_head name = SK_LIST_HEAD_INIT(name)
#define sk_list_entry(ptr, type, member) sk_container_of(ptr, type, member)

/* sk_list_init() - make h an empty list (no reader may see h yet). */
static inline void sk_list_init(struct sk_list_head *h)
{
	sk_atomic_store_relaxed(&h->next, h);
	h->prev = h;
}

/* sk_list_empty() - nonzero when h has no entry.  Any context. */
static inline int sk_list_empty(const struct sk_list_head *h)
{
	return SK_READ_ONCE(h->next) == h;
}

static inline void sk_list__add_rcu(struct sk_list_head *n,
				    struct sk_list_head *prev,
				    struct sk_list_head *next)
{
	/* [priv] n is not reachable yet. */
	n->next = next;
	n->prev = prev;
	/* [pub] n's fields, then the pointer to n (readers: opposite order). */
	SK__LIST_PUBLISH(prev->next, n);
	/* [one] readers never follow prev pointers. */
	next->prev = n;
}

/*
 * sk_list_add_rcu() - insert n right after head.
 * Context: updater (holds the updaters' lock); readers may run.
 * Ordering: n's initialization happens before readers can reach n.
 */
static inline void sk_list_add_rcu(struct sk_list_head *n,
				   struct sk_list_head *head)
{
	sk_list__add_rcu(n, head, head->next);
}

/* sk_list_add_tail_rcu() - insert n right before head (at the end). */
static inline void sk_list_add_tail_rcu(struct sk_list_head *n,
					struct sk_list_head *head)
{
	sk_list__add_rcu(n, head->prev, head);
}

/*
 * sk_list_del_rcu() - unlink entry; readers standing on it may go on.
 * Context: updater.  Reclamation: free entry only after a grace period
 * ([gp]: readers reach entry, then read it, in the order of the writes
 * "unlink" and "free").
 */
static inline void sk_list_del_rcu(struct sk_list_head *entry)
{
	struct sk_list_head *prev = entry->prev, *next = entry->next;

	/* [one] readers either still see entry or skip it. */
	SK__LIST_PUBLISH(prev->next, next);
	/* [one] readers never follow prev pointers. */
	next->prev = prev;
	/* entry->next stays for readers on entry; prev is poisoned. */
	entry->prev = (struct sk_list_head *)SK_LIST_POISON_PREV;
}

/*
 * sk_list_replace_rcu() - put n in old's place.  Readers see old or n,
 * never neither.  Context: updater.  Reclamation: free old after a grace
 * period.
 */
static inline void sk_list_replace_rcu(struct sk_list_head *old,
				       struct sk_list_head *n)
{
	/* [priv] n is not reachable yet. */
	n->next = old->next;
	n->prev = old->prev;
	/* [pub] n's fields (and object), then the pointer to n. */
	SK__LIST_PUBLISH(n->prev->next, n);
	/* [one] readers never follow prev pointers. */
	n->next->prev = n;
	old->prev = (struct sk_list_head *)SK_LIST_POISON_PREV;
}

/*
 * sk_list_splice_init_rcu() - move every entry of list right after head
 * and make list empty; sync (e.g. sk_synchronize_rcu) is called once.
 * Context: updater of both lists, outside any read section (sync blocks).
 * Readers of head may run; readers of list must be RCU readers too.
 */
static inline void sk_list_splice_init_rcu(struct sk_list_head *list,
					   struct sk_list_head *head,
					   void (*sync)(void))
{
	struct sk_list_head *first = list->next, *last = list->prev;
	struct sk_list_head *at = head, *at_next = head->next;

	if (first == list)
		return;
	/* [one] readers of list now find it empty. */
	SK__LIST_PUBLISH(list->next, list);
	list->prev = list;
	/*
	 * [gp] a reader of list reads list->next, then last->next; we write
	 * them in that order, so wait until no reader is inside list before
	 * pointing last at the other list (it would never find list again).
	 */
	sync();
	SK__LIST_TRACE(GP);
	/* [priv] no reader can reach first..last now. */
	last->next = at_next;
	first->prev = at;
	/* [pub] the chain's links, then the pointer into it. */
	SK__LIST_PUBLISH(at->next, first);
	/* [one] readers never follow prev pointers. */
	at_next->prev = last;
}

/*
 * sk_list_for_each_entry_rcu(pos, head, member) - iterate inside a read
 * section.  Every entry present for the whole walk is visited exactly
 * once; entries added or removed meanwhile may or may not be.
 */
#define sk_list_for_each_entry_rcu(pos, head, member)                       \
	for (pos = sk_list_entry(sk_rcu_dereference((head)->next),          \
				 __typeof__(*pos), member);                 \
	     &pos->member != (head);                                        \
	     pos = sk_list_entry(sk_rcu_dereference(pos->member.next),      \
				 __typeof__(*pos), member))

/*
 * sk_list_first_or_null_rcu() - first entry or NULL; in a read section.
 * head may be const (readers only read it), as for the other readers.
 */
#define sk_list_first_or_null_rcu(head, type, member)                         \
	__extension__({                                                       \
		const struct sk_list_head *sk_h_ = (head);                    \
		struct sk_list_head *sk_n_ = sk_rcu_dereference(sk_h_->next); \
		sk_n_ != sk_h_ ? sk_list_entry(sk_n_, type, member) : NULL;   \
	})

/* sk_list_next_or_null_rcu() - entry after ptr or NULL; in a read section. */
#define sk_list_next_or_null_rcu(head, ptr, type, member)                   \
	__extension__({                                                     \
		const struct sk_list_head *sk_h_ = (head);                  \
		struct sk_list_head *sk_n_ =                                \
			sk_rcu_dereference((ptr)->next);                    \
		sk_n_ != sk_h_ ? sk_list_entry(sk_n_, type, member) : NULL; \
	})

/* Updater-side iteration (holding the updaters' lock, not for readers). */
#define sk_list_for_each_entry(pos, head, member)                           \
	for (pos = sk_list_entry((head)->next, __typeof__(*pos), member);   \
	     &pos->member != (head);                                        \
	     pos = sk_list_entry(pos->member.next, __typeof__(*pos), member))

#define sk_list_for_each_entry_safe(pos, n, head, member)                   \
	for (pos = sk_list_entry((head)->next, __typeof__(*pos), member),   \
	    n = sk_list_entry(pos->member.next, __typeof__(*pos), member);  \
	     &pos->member != (head);                                        \
	     pos = n,                                                       \
	    n = sk_list_entry(n->member.next, __typeof__(*pos), member))

/* ---- hlist: hash-bucket lists with a one-pointer head ------------------ */

struct sk_hlist_node {
	struct sk_hlist_node *next, **pprev;
};

struct sk_hlist_head {
	struct sk_hlist_node *first;
};

#define SK_HLIST_HEAD_INIT { NULL }

static inline void sk_hlist_init_head(struct sk_hlist_head *h)
{
	sk_atomic_store_relaxed(&h->first, (struct sk_hlist_node *)NULL);
}

static inline void sk_hlist_node_init(struct sk_hlist_node *n)
{
	n->next = NULL;
	n->pprev = NULL;
}

/* sk_hlist_unhashed() - nonzero when n is on no list (updater side). */
static inline int sk_hlist_unhashed(const struct sk_hlist_node *n)
{
	return !n->pprev || n->pprev == (struct sk_hlist_node **)SK_HLIST_POISON_PPREV;
}

static inline int sk_hlist_empty(const struct sk_hlist_head *h)
{
	return !SK_READ_ONCE(h->first);
}

/* sk_hlist_add_head_rcu() - insert n first in h.  Context: updater. */
static inline void sk_hlist_add_head_rcu(struct sk_hlist_node *n,
					 struct sk_hlist_head *h)
{
	struct sk_hlist_node *first = h->first;

	/* [priv] n is not reachable yet. */
	n->next = first;
	n->pprev = &h->first;
	/* [pub] n's fields, then the pointer to n. */
	SK__LIST_PUBLISH(h->first, n);
	/* [one] readers never follow pprev. */
	if (first)
		first->pprev = &n->next;
}

/* sk_hlist_add_before_rcu() - insert n before next.  Context: updater. */
static inline void sk_hlist_add_before_rcu(struct sk_hlist_node *n,
					   struct sk_hlist_node *next)
{
	/* [priv] n is not reachable yet. */
	n->pprev = next->pprev;
	n->next = next;
	/* [pub] n's fields, then the pointer to n. */
	SK__LIST_PUBLISH(*n->pprev, n);
	/* [one] readers never follow pprev. */
	next->pprev = &n->next;
}

/* sk_hlist_add_behind_rcu() - insert n after prev.  Context: updater. */
static inline void sk_hlist_add_behind_rcu(struct sk_hlist_node *n,
					   struct sk_hlist_node *prev)
{
	/* [priv] n is not reachable yet. */
	n->next = prev->next;
	n->pprev = &prev->next;
	/* [pub] n's fields, then the pointer to n. */
	SK__LIST_PUBLISH(prev->next, n);
	/* [one] readers never follow pprev. */
	if (n->next)
		n->next->pprev = &n->next;
}

/*
 * sk_hlist_del_rcu() - unlink n; readers on n go on.  Context: updater.
 * Reclamation: free n only after a grace period.
 */
static inline void sk_hlist_del_rcu(struct sk_hlist_node *n)
{
	struct sk_hlist_node *next = n->next, **pprev = n->pprev;

	/* [one] readers either still see n or skip it. */
	SK__LIST_PUBLISH(*pprev, next);
	/* [one] readers never follow pprev. */
	if (next)
		next->pprev = pprev;
	n->pprev = (struct sk_hlist_node **)SK_HLIST_POISON_PPREV;
}

/* sk_hlist_replace_rcu() - put n in old's place.  Context: updater. */
static inline void sk_hlist_replace_rcu(struct sk_hlist_node *old,
					struct sk_hlist_node *n)
{
	struct sk_hlist_node *next = old->next;

	/* [priv] n is not reachable yet. */
	n->next = next;
	n->pprev = old->pprev;
	/* [pub] n's fields, then the pointer to n. */
	SK__LIST_PUBLISH(*n->pprev, n);
	/* [one] readers never follow pprev. */
	if (next)
		next->pprev = &n->next;
	old->pprev = (struct sk_hlist_node **)SK_HLIST_POISON_PPREV;
}

#define sk_hlist_entry(ptr, type, member) sk_container_of(ptr, type, member)

/* sk_hlist_first_rcu() / sk_hlist_next_rcu() - in a read section. */
#define sk_hlist_first_rcu(h) sk_rcu_dereference((h)->first)
#define sk_hlist_next_rcu(n) sk_rcu_dereference((n)->next)

/* The entry containing node n, or NULL when n is NULL. */
#define sk_list__hlist_entry_safe(n, type, member)                      \
	__extension__({                                                 \
		struct sk_hlist_node *sk_n_ = (n);                      \
		sk_n_ ? sk_hlist_entry(sk_n_, type, member) : NULL;     \
	})

/*
 * sk_hlist_for_each_entry_rcu(pos, head, member) - iterate inside a read
 * section; same visiting guarantee as sk_list_for_each_entry_rcu().
 */
#define sk_hlist_for_each_entry_rcu(pos, head, member)                        \
	for (pos = sk_list__hlist_entry_safe(sk_hlist_first_rcu(head),        \
					__typeof__(*pos), member);            \
	     pos;                                                             \
	     pos = sk_list__hlist_entry_safe(sk_hlist_next_rcu(&pos->member), \
					__typeof__(*pos), member))

#ifdef __cplusplus
}
#endif

#endif /* SCALEKIT_LIST_H */
