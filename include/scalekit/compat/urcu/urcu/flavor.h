/* SPDX-License-Identifier: MIT */
/*
 * urcu/flavor.h - liburcu's flavor table on scalekit
 * (docs/urcu-compat.md).  struct rcu_flavor_struct and struct urcu_atfork
 * have liburcu 0.13's members in liburcu's order, so that liburcu-cds
 * (cds_lfht_new_flavor()) and other RCU-aware containers built against
 * liburcu can call through the instances urcu_memb_flavor,
 * urcu_qsbr_flavor and urcu_bp_flavor (declared by the flavor headers; the
 * name rcu_flavor maps to the flavor a program includes).
 *
 * All three instances drive scalekit's one RCU domain: a grace period of
 * any flavor waits for the readers of all of them.
 */
#ifndef SCALEKIT_COMPAT_URCU_FLAVOR_H
#define SCALEKIT_COMPAT_URCU_FLAVOR_H

#ifdef __cplusplus
extern "C" {
#endif

struct rcu_head;

/*
 * Fork hooks of a container (cds_lfht registers one that pauses its
 * resize worker); call_rcu_before_fork() and the two after_fork functions
 * run them.
 */
struct urcu_atfork {
	void (*before_fork)(void *priv);
	void (*after_fork_parent)(void *priv);
	void (*after_fork_child)(void *priv);
	void *priv;
};

struct rcu_flavor_struct {
	void (*read_lock)(void);
	void (*read_unlock)(void);
	int (*read_ongoing)(void);
	void (*read_quiescent_state)(void);
	void (*update_call_rcu)(struct rcu_head *head,
				void (*func)(struct rcu_head *head));
	void (*update_synchronize_rcu)(void);
	void (*update_defer_rcu)(void (*fct)(void *p), void *p);
	void (*thread_offline)(void);
	void (*thread_online)(void);
	void (*register_thread)(void);
	void (*unregister_thread)(void);
	void (*barrier)(void);
	void (*register_rculfhash_atfork)(struct urcu_atfork *atfork);
	void (*unregister_rculfhash_atfork)(struct urcu_atfork *atfork);
};

#ifdef __cplusplus
}
#endif

#endif /* SCALEKIT_COMPAT_URCU_FLAVOR_H */
