/* SPDX-License-Identifier: MIT */
/*
 * scalekit/kernel.h - the Linux kernel's spellings of scalekit's
 * primitives, for code moved from the kernel or written from its
 * documentation.  Opt-in: scalekit.h does not include it, because these
 * unprefixed names collide with other libraries (liburcu, ck, ...).
 *
 * Differences from the kernel: call_rcu()/call_srcu() return an int
 * (0 or -errno) that may be ignored; rcu_read_lock() registers the thread
 * on first use; there is one RCU flavor (rcu_read_lock_bh/sched are the
 * plain read lock); srcu_read_unlock() may run on another thread.
 */
#ifndef SCALEKIT_KERNEL_H
#define SCALEKIT_KERNEL_H

#include "scalekit/barrier.h"
#include "scalekit/list.h"
#include "scalekit/rcu.h"
#include "scalekit/srcu.h"

/* Barriers. */
#define READ_ONCE(x)		   SK_READ_ONCE(x)
#define WRITE_ONCE(x, v)	   SK_WRITE_ONCE(x, v)
#define barrier()		   sk_barrier()
#define smp_mb()		   sk_smp_mb()
#define smp_rmb()		   sk_smp_rmb()
#define smp_wmb()		   sk_smp_wmb()
#define smp_load_acquire(p)	   sk_smp_load_acquire(p)
#define smp_store_release(p, v)	   sk_smp_store_release(p, v)
#define smp_mb__before_atomic()	   sk_smp_mb__before_atomic()
#define smp_mb__after_atomic()	   sk_smp_mb__after_atomic()
#define cpu_relax()		   sk_cpu_relax()
#define likely(x)		   SK_LIKELY(x)
#define unlikely(x)		   SK_UNLIKELY(x)
#define container_of(p, t, m)	   sk_container_of(p, t, m)

/* RCU. */
#define rcu_head		   sk_rcu_head
#define rcu_read_lock()		   sk_rcu_read_lock()
#define rcu_read_unlock()	   sk_rcu_read_unlock()
#define rcu_read_lock_bh()	   sk_rcu_read_lock()
#define rcu_read_unlock_bh()	   sk_rcu_read_unlock()
#define rcu_read_lock_held()	   sk_rcu_read_lock_held()
#define rcu_dereference(p)	   sk_rcu_dereference(p)
#define rcu_dereference_protected(p, c) ((void)(c), SK_READ_ONCE(p))
#define rcu_access_pointer(p)	   SK_READ_ONCE(p)
#define rcu_assign_pointer(p, v)   sk_rcu_assign_pointer(p, v)
#define RCU_INIT_POINTER(p, v)	   SK_WRITE_ONCE(p, v)
/* Object-like, so that these can also be passed as functions. */
#define synchronize_rcu		   sk_synchronize_rcu
#define synchronize_rcu_expedited  sk_synchronize_rcu_expedited
#define call_rcu		   sk_call_rcu
#define rcu_barrier		   sk_rcu_barrier
#define kfree_rcu(p, field)	   SK_FREE_RCU(p, field)
#define get_state_synchronize_rcu() sk_get_state_synchronize_rcu()
#define start_poll_synchronize_rcu() sk_start_poll_synchronize_rcu()
#define poll_state_synchronize_rcu(c) sk_poll_state_synchronize_rcu(c)
#define cond_synchronize_rcu(c)	   sk_cond_synchronize_rcu(c)

/* SRCU. */
#define srcu_struct		   sk_srcu
#define DEFINE_SRCU(name)	   SK_SRCU_DEFINE(name)
#define DEFINE_STATIC_SRCU(name)   SK_SRCU_DEFINE_STATIC(name)
#define init_srcu_struct(s)	   sk_srcu_init(s)
#define cleanup_srcu_struct(s)	   sk_srcu_destroy(s)
#define srcu_read_lock(s)	   sk_srcu_read_lock(s)
#define srcu_read_unlock(s, i)	   sk_srcu_read_unlock(s, i)
#define srcu_read_lock_held(s)	   sk_srcu_read_lock_held(s)
#define srcu_dereference(p, s)	   sk_srcu_dereference(p, s)
#define synchronize_srcu(s)	   sk_synchronize_srcu(s)
#define synchronize_srcu_expedited(s) sk_synchronize_srcu_expedited(s)
#define call_srcu(s, h, f)	   sk_call_srcu(s, h, f)
#define srcu_barrier(s)		   sk_srcu_barrier(s)
#define get_state_synchronize_srcu(s) sk_get_state_synchronize_srcu(s)
#define start_poll_synchronize_srcu(s) sk_start_poll_synchronize_srcu(s)
#define poll_state_synchronize_srcu(s, c) sk_poll_state_synchronize_srcu(s, c)

/* Lists. */
#define list_head		   sk_list_head
#define LIST_HEAD_INIT(name)	   SK_LIST_HEAD_INIT(name)
#define LIST_HEAD(name)		   SK_LIST_HEAD(name)
#define INIT_LIST_HEAD(h)	   sk_list_init(h)
#define list_empty(h)		   sk_list_empty(h)
#define list_entry(p, t, m)	   sk_list_entry(p, t, m)
#define list_add_rcu(n, h)	   sk_list_add_rcu(n, h)
#define list_add_tail_rcu(n, h)	   sk_list_add_tail_rcu(n, h)
#define list_del_rcu(e)		   sk_list_del_rcu(e)
#define list_replace_rcu(o, n)	   sk_list_replace_rcu(o, n)
#define list_splice_init_rcu(l, h, s) sk_list_splice_init_rcu(l, h, s)
#define list_for_each_entry(p, h, m) sk_list_for_each_entry(p, h, m)
#define list_for_each_entry_safe(p, n, h, m) sk_list_for_each_entry_safe(p, n, h, m)
/* The kernel's optional lockdep condition is accepted and ignored. */
#define list_for_each_entry_rcu(p, h, m, ...) sk_list_for_each_entry_rcu(p, h, m)
#define list_first_or_null_rcu(h, t, m) sk_list_first_or_null_rcu(h, t, m)
#define list_next_or_null_rcu(h, p, t, m) sk_list_next_or_null_rcu(h, p, t, m)
#define hlist_head		   sk_hlist_head
#define hlist_node		   sk_hlist_node
#define HLIST_HEAD_INIT		   SK_HLIST_HEAD_INIT
#define INIT_HLIST_HEAD(h)	   sk_hlist_init_head(h)
#define INIT_HLIST_NODE(n)	   sk_hlist_node_init(n)
#define hlist_unhashed(n)	   sk_hlist_unhashed(n)
#define hlist_empty(h)		   sk_hlist_empty(h)
#define hlist_entry(p, t, m)	   sk_hlist_entry(p, t, m)
#define hlist_add_head_rcu(n, h)   sk_hlist_add_head_rcu(n, h)
#define hlist_add_before_rcu(n, x) sk_hlist_add_before_rcu(n, x)
#define hlist_add_behind_rcu(n, p) sk_hlist_add_behind_rcu(n, p)
#define hlist_del_rcu(n)	   sk_hlist_del_rcu(n)
#define hlist_replace_rcu(o, n)	   sk_hlist_replace_rcu(o, n)
#define hlist_for_each_entry_rcu(p, h, m, ...) sk_hlist_for_each_entry_rcu(p, h, m)

#endif /* SCALEKIT_KERNEL_H */
