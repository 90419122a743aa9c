/* SPDX-License-Identifier: MIT */
/*
 * tools/litmus_fns.h - the kernel primitives a litmus test may call, and
 * the operation each one becomes (included by litmus_parse.c only).
 *
 * Argument patterns: L = *pointer (an lvalue, READ_ONCE(*x)), P = pointer
 * (smp_load_acquire(x)), V = a value, S = a struct srcu_struct parameter,
 * K = a spinlock_t parameter.  A name ending in _relaxed, _acquire or
 * _release is the fully ordered entry of its stem with that order.
 */
#ifndef SK_LITMUS_FNS_H
#define SK_LITMUS_FNS_H

struct lt_fn {
	const char *name;
	const char *args;
	unsigned char code, order, rmw, ret_new, returns, then_mb;
};

#define FN(n, a, c, o, r, rn, ret) { n, a, c, o, r, rn, ret, 0 }
#define FENCE(n, o) FN(n, "", LT_OP_FENCE, o, 0, 0, 0)
#define RMW(n, a, r, o, rn, ret) FN(n, a, LT_OP_RMW, o, r, rn, ret)

static const struct lt_fn lt_fns[] = {
	FN("READ_ONCE", "L", LT_OP_LOAD, LT_ONCE, 0, 0, 1),
	FN("WRITE_ONCE", "LV", LT_OP_STORE, LT_ONCE, 0, 0, 0),
	FN("smp_load_acquire", "P", LT_OP_LOAD, LT_ACQUIRE, 0, 0, 1),
	FN("smp_store_release", "PV", LT_OP_STORE, LT_RELEASE, 0, 0, 0),
	FN("rcu_dereference", "L", LT_OP_LOAD, LT_DEREF, 0, 0, 1),
	FN("lockless_dereference", "L", LT_OP_LOAD, LT_DEREF, 0, 0, 1),
	FN("rcu_assign_pointer", "LV", LT_OP_STORE, LT_RELEASE, 0, 0, 0),
	{ "smp_store_mb", "LV", LT_OP_STORE, LT_ONCE, 0, 0, 0, 1 },
	FENCE("smp_mb", LT_F_MB),
	FENCE("smp_rmb", LT_F_RMB),
	FENCE("smp_wmb", LT_F_WMB),
	FENCE("smp_mb__before_atomic", LT_F_BEFORE_ATOMIC),
	FENCE("smp_mb__after_atomic", LT_F_AFTER_ATOMIC),
	FENCE("smp_mb__after_spinlock", LT_F_MB),
	/* linux-kernel.def: a fence that makes the unlock + lock before
	 * it a full barrier; a full barrier here. */
	FENCE("smp_mb__after_unlock_lock", LT_F_MB),
	FENCE("smp_mb__after_srcu_read_unlock", LT_F_MB),
	FENCE("smp_memb", LT_F_MEMB),
	FENCE("barrier", LT_F_COMPILER),
	FENCE("smp_read_barrier_depends", LT_F_COMPILER),
	FN("rcu_read_lock", "", LT_OP_RCU_LOCK, 0, 0, 0, 0),
	FN("rcu_read_unlock", "", LT_OP_RCU_UNLOCK, 0, 0, 0, 0),
	FN("synchronize_rcu", "", LT_OP_SYNC_RCU, 0, 0, 0, 0),
	FN("synchronize_rcu_expedited", "", LT_OP_SYNC_RCU, 1, 0, 0, 0),
	FN("srcu_read_lock", "S", LT_OP_SRCU_LOCK, 0, 0, 0, 1),
	FN("srcu_read_unlock", "SV", LT_OP_SRCU_UNLOCK, 0, 0, 0, 0),
	FN("synchronize_srcu", "S", LT_OP_SYNC_SRCU, 0, 0, 0, 0),
	FN("synchronize_srcu_expedited", "S", LT_OP_SYNC_SRCU, 1, 0, 0, 0),
	FN("srcu_down_read", "S", LT_OP_SRCU_DOWN, 0, 0, 0, 1),
	FN("srcu_up_read", "SV", LT_OP_SRCU_UP, 0, 0, 0, 0),
	FN("spin_lock", "K", LT_OP_SPIN_LOCK, 0, 0, 0, 0),
	FN("spin_unlock", "K", LT_OP_SPIN_UNLOCK, 0, 0, 0, 0),
	FN("spin_is_locked", "K", LT_OP_SPIN_IS_LOCKED, 0, 0, 0, 1),
	FN("spin_trylock", "K", LT_OP_SPIN_TRYLOCK, 0, 0, 0, 1),
	RMW("xchg", "PV", LT_RMW_XCHG, LT_FULL, 0, 1),
	RMW("cmpxchg", "PVV", LT_RMW_CMPXCHG, LT_FULL, 0, 1),
	FN("atomic_read", "P", LT_OP_LOAD, LT_ONCE, 0, 0, 1),
	FN("atomic_set", "PV", LT_OP_STORE, LT_ONCE, 0, 0, 0),
	FN("atomic_read_acquire", "P", LT_OP_LOAD, LT_ACQUIRE, 0, 0, 1),
	FN("atomic_set_release", "PV", LT_OP_STORE, LT_RELEASE, 0, 0, 0),
	RMW("atomic_add", "VP", LT_RMW_ADD, LT_ONCE, 0, 0),
	RMW("atomic_sub", "VP", LT_RMW_SUB, LT_ONCE, 0, 0),
	RMW("atomic_and", "VP", LT_RMW_AND, LT_ONCE, 0, 0),
	RMW("atomic_or", "VP", LT_RMW_OR, LT_ONCE, 0, 0),
	RMW("atomic_xor", "VP", LT_RMW_XOR, LT_ONCE, 0, 0),
	RMW("atomic_inc", "P", LT_RMW_ADD, LT_ONCE, 0, 0),
	RMW("atomic_dec", "P", LT_RMW_SUB, LT_ONCE, 0, 0),
	RMW("atomic_add_return", "VP", LT_RMW_ADD, LT_FULL, 1, 1),
	RMW("atomic_sub_return", "VP", LT_RMW_SUB, LT_FULL, 1, 1),
	RMW("atomic_inc_return", "P", LT_RMW_ADD, LT_FULL, 1, 1),
	RMW("atomic_dec_return", "P", LT_RMW_SUB, LT_FULL, 1, 1),
	RMW("atomic_fetch_add", "VP", LT_RMW_ADD, LT_FULL, 0, 1),
	RMW("atomic_fetch_sub", "VP", LT_RMW_SUB, LT_FULL, 0, 1),
	RMW("atomic_fetch_and", "VP", LT_RMW_AND, LT_FULL, 0, 1),
	RMW("atomic_fetch_or", "VP", LT_RMW_OR, LT_FULL, 0, 1),
	RMW("atomic_fetch_xor", "VP", LT_RMW_XOR, LT_FULL, 0, 1),
	RMW("atomic_fetch_inc", "P", LT_RMW_ADD, LT_FULL, 0, 1),
	RMW("atomic_fetch_dec", "P", LT_RMW_SUB, LT_FULL, 0, 1),
	RMW("atomic_xchg", "PV", LT_RMW_XCHG, LT_FULL, 0, 1),
	RMW("atomic_cmpxchg", "PVV", LT_RMW_CMPXCHG, LT_FULL, 0, 1),
	/* ret_new 3: returns whether the new value is 0 */
	RMW("atomic_dec_and_test", "P", LT_RMW_SUB, LT_FULL, 3, 1),
	RMW("atomic_inc_and_test", "P", LT_RMW_ADD, LT_FULL, 3, 1),
	RMW("atomic_sub_and_test", "VP", LT_RMW_SUB, LT_FULL, 3, 1),
	/* ret_new 2: returns whether it added (old != b) */
	RMW("atomic_add_unless", "PVV", LT_RMW_ADD_UNLESS, LT_FULL, 2, 1),
};

#undef FN
#undef FENCE
#undef RMW

/* Look name up (with an order suffix); returns 0 with *out, or -1. */
static int lt_fn_find(const char *name, struct lt_fn *out)
{
	static const char *const sfx[] = { "_relaxed", "_acquire", "_release" };
	static const unsigned char ord[] = { LT_ONCE, LT_ACQUIRE, LT_RELEASE };
	size_t i, k, n = strlen(name);

	for (i = 0; i < sizeof(lt_fns) / sizeof(lt_fns[0]); i++) {
		if (strcmp(lt_fns[i].name, name) == 0) {
			*out = lt_fns[i];
			return 0;
		}
	}
	for (k = 0; k < 3; k++) {
		size_t m = strlen(sfx[k]);

		if (n <= m || strcmp(name + n - m, sfx[k]) != 0)
			continue;
		for (i = 0; i < sizeof(lt_fns) / sizeof(lt_fns[0]); i++) {
			const struct lt_fn *f = &lt_fns[i];

			if (f->order != LT_FULL || strlen(f->name) != n - m ||
			    strncmp(f->name, name, n - m) != 0)
				continue;
			*out = *f;
			out->order = ord[k];
			out->name = name;
			return 0;
		}
	}
	return -1;
}

#endif /* SK_LITMUS_FNS_H */
