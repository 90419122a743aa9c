/* SPDX-License-Identifier: MIT */
/*
 * `scalekit torture`: one struct sk_tort_ops per primitive under test,
 * and the busted twin of any of them.
 *
 *   rcu    general readers, sk_rcu_read_lock()/unlock()
 *   qsbr   QSBR readers: online, sk_rcu_quiescent_state() between sections
 *   mixed  even readers general, odd readers QSBR, one RCU domain
 *   srcu   sk_srcu_read_lock() on one domain; sections may sleep and may
 *          be ended by another thread
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "scalekit/rcu.h"
#include "scalekit/srcu.h"
#include "torture_core.h"

const char *const sk_tort_gp_names[SK_TORT_GP_NR] = {
	"sync", "exp", "cb", "poll", "cond",
};

/* ---- shared pieces ------------------------------------------------------- */

/*
 * Delay inside a read section, as rcutorture's rcu_read_delay(): mostly a
 * short spin, now and then a yield (preemption inside the section), rarely
 * a long delay; with sleep_ok, a sleep in one section out of eight.
 */
static void read_delay(struct sk_tort_rng *rng, int sleep_ok)
{
	unsigned long r = sk_tort_below(rng, 100000);

	if (sleep_ok && r % 8 == 0) {
		usleep((useconds_t)(sk_tort_below(rng, 1000) + 1));
		return;
	}
	if (r < 10) {
		/* 1 in 10000: long delay (1..2 ms); GPs must wait for it. */
		usleep((useconds_t)(1000 + sk_tort_below(rng, 1000)));
	} else if (r < 200) {
		sched_yield();
	} else if (r < 20000) {
		sk_tort_spin(rng, 2000);
	} else {
		sk_tort_spin(rng, 50);
	}
}

static void *deref_rcu(void *const *pp)
{
	return sk_rcu_dereference(*(void **)pp);
}

static void noop(void)
{
}

/* ---- RCU, general readers ------------------------------------------------ */

static __thread int rcu_explicit; /* reader registered explicitly */

static int rcu_reader_start(unsigned long hint)
{
	/* Register explicitly one reader in two; others on first use. */
	rcu_explicit = (hint % 2) == 0;
	if (rcu_explicit && sk_rcu_register_thread() != 0)
		rcu_explicit = 0;
	return 0;
}

static void rcu_reader_stop(void)
{
	/* Explicit unregistration, or the library's at thread exit. */
	if (rcu_explicit)
		sk_rcu_unregister_thread();
}

static int rcu_lock(void)
{
	sk_rcu_read_lock();
	return 0;
}

static void rcu_unlock(int idx)
{
	(void)idx;
	sk_rcu_read_unlock();
}

/* Hidden in the library (src/internal/rcu.h); the tool links it statically. */
unsigned long sk__rcu_gp_count(void);

static unsigned long rcu_gp_seq(void)
{
	/*
	 * Grace periods completed, full width: the batch histogram counts
	 * grace periods on every target.  (Not the reader word's phase: it
	 * counts scans, two per grace period on 32-bit targets, and wraps
	 * at 16 bits there.)
	 */
	return sk__rcu_gp_count();
}

static void rcu_stats(struct sk_tort_gp_stats *st)
{
	struct sk_rcu_stats s;

	sk_rcu_get_stats(&s);
	st->gps = s.grace_periods;
	st->cb_queued = s.cb_queued;
	st->cb_invoked = s.cb_invoked;
	st->exp_handshakes = s.exp_handshakes;
	st->exp_fallbacks = s.exp_fallbacks;
	st->have_cb = 1;
}

#define RCU_UPDATE_OPS                                                        \
	.sync = sk_synchronize_rcu, .exp_sync = sk_synchronize_rcu_expedited, \
	.call = sk_call_rcu, .cb_barrier = sk_rcu_barrier,                    \
	.get_gp_state = sk_get_state_synchronize_rcu,                         \
	.start_gp_poll = sk_start_poll_synchronize_rcu,                       \
	.poll_gp_state = sk_poll_state_synchronize_rcu,                       \
	.cond_sync = sk_cond_synchronize_rcu, .gp_seq = rcu_gp_seq,           \
	.stats = rcu_stats

const struct sk_tort_ops sk_tort_rcu_ops = {
	.name = "rcu",
	.desc = "RCU, general readers (sk_rcu_read_lock)",
	.global_rcu = 1,
	.reader_start = rcu_reader_start,
	.reader_stop = rcu_reader_stop,
	.readlock = rcu_lock,
	.readunlock = rcu_unlock,
	.readlock_nest = rcu_lock,
	.readunlock_nest = rcu_unlock,
	.read_delay = read_delay,
	.deref = deref_rcu,
	RCU_UPDATE_OPS,
};

/* ---- RCU, QSBR readers --------------------------------------------------- */

static __thread int qsbr_reader;   /* this thread reads QSBR-style */
static __thread int qsbr_exit_way; /* how it leaves (see stop) */

static int qsbr_reader_start(unsigned long hint)
{
	qsbr_exit_way = (int)(hint / 2 % 3);
	if (sk_rcu_thread_online() != 0)
		return 0; /* out of memory: read as a general reader */
	qsbr_reader = 1;
	return 1;
}

static void qsbr_reader_pause(void)
{
	if (qsbr_reader)
		sk_rcu_thread_offline();
}

static void qsbr_reader_resume(void)
{
	if (qsbr_reader)
		sk_rcu_thread_online();
}

static void qsbr_reader_stop(void)
{
	/*
	 * Leave in the three ways a QSBR thread may: offline then
	 * unregister, unregister while online, or exit while online.
	 */
	if (!qsbr_reader)
		return;
	switch (qsbr_exit_way) {
	case 0:
		sk_rcu_thread_offline();
		sk_rcu_unregister_thread();
		break;
	case 1:
		sk_rcu_unregister_thread();
		break;
	default:
		break; /* the library puts it offline at thread exit */
	}
	qsbr_reader = 0;
}

static int qsbr_lock(void)
{
	if (!qsbr_reader)
		sk_rcu_read_lock();
	return 0;
}

static void qsbr_unlock(int idx)
{
	(void)idx;
	if (!qsbr_reader)
		sk_rcu_read_unlock();
}

static void qsbr_quiescent(void)
{
	if (qsbr_reader)
		sk_rcu_quiescent_state();
}

/* QSBR updaters: online too, quiescent between updates. */
static __thread int qsbr_updater;

static void qsbr_updater_start(void)
{
	qsbr_updater = sk_rcu_thread_online() == 0;
}

static void qsbr_updater_quiescent(void)
{
	if (qsbr_updater)
		sk_rcu_quiescent_state();
}

static void qsbr_updater_stop(void)
{
	if (qsbr_updater)
		sk_rcu_thread_offline();
	qsbr_updater = 0;
}

/* Readers of qsbr and mixed: QSBR ones if reader_start() made them so. */
#define QSBR_READER_OPS                                             \
	.reader_pause = qsbr_reader_pause,                          \
	.reader_resume = qsbr_reader_resume, .readlock = qsbr_lock, \
	.readunlock = qsbr_unlock, .readlock_nest = rcu_lock,       \
	.readunlock_nest = rcu_unlock, .quiescent = qsbr_quiescent, \
	.read_delay = read_delay, .deref = deref_rcu

const struct sk_tort_ops sk_tort_qsbr_ops = {
	.name = "qsbr",
	.desc = "RCU, QSBR readers (online, sk_rcu_quiescent_state)",
	.global_rcu = 1,
	.reader_start = qsbr_reader_start,
	.reader_stop = qsbr_reader_stop,
	QSBR_READER_OPS,
	.updater_start = qsbr_updater_start,
	.updater_quiescent = qsbr_updater_quiescent,
	.updater_stop = qsbr_updater_stop,
	RCU_UPDATE_OPS,
};

/* ---- RCU, both kinds ----------------------------------------------------- */

static int mixed_reader_start(unsigned long hint)
{
	return hint % 2 ? qsbr_reader_start(hint) : rcu_reader_start(hint / 2);
}

static void mixed_reader_stop(void)
{
	if (qsbr_reader)
		qsbr_reader_stop();
	else
		rcu_reader_stop();
}

const struct sk_tort_ops sk_tort_mixed_ops = {
	.name = "mixed",
	.desc = "RCU, half general and half QSBR readers",
	.global_rcu = 1,
	.reader_start = mixed_reader_start,
	.reader_stop = mixed_reader_stop,
	QSBR_READER_OPS,
	RCU_UPDATE_OPS,
};

/* ---- SRCU ---------------------------------------------------------------- */

/* The domain of this run (a fresh one per run: the fork child's too). */
static struct sk_srcu *tort_srcu;

static int srcu_init(void)
{
	struct sk_srcu *d;
	int err;

	if (sk_tort_setup_fault())
		return -ENOMEM;
	/* struct sk_srcu is cache-line aligned: malloc() is not enough. */
	d = aligned_alloc(SK_CACHELINE, sizeof(*d));

	if (!d)
		return -ENOMEM;
	err = sk_srcu_init(d);
	if (err) {
		free(d);
		return err;
	}
	tort_srcu = d;
	return 0;
}

static void srcu_cleanup(void)
{
	struct sk_srcu *d = tort_srcu;

	if (!d)
		return;
	sk_srcu_barrier(d);
	/* A domain still busy is kept (leaked) rather than freed in use. */
	if (sk_srcu_destroy(d) == 0)
		free(d);
	tort_srcu = NULL;
}

static int srcu_lock(void)
{
	return sk_srcu_read_lock(tort_srcu);
}

static void srcu_unlock(int idx)
{
	sk_srcu_read_unlock(tort_srcu, idx);
}

static void srcu_sync(void)
{
	sk_synchronize_srcu(tort_srcu);
}

static void srcu_exp_sync(void)
{
	sk_synchronize_srcu_expedited(tort_srcu);
}

static int srcu_call(struct sk_rcu_head *head,
		     void (*fn)(struct sk_rcu_head *head))
{
	return sk_call_srcu(tort_srcu, head, fn);
}

static void srcu_barrier(void)
{
	sk_srcu_barrier(tort_srcu);
}

static unsigned long srcu_get_state(void)
{
	return sk_get_state_synchronize_srcu(tort_srcu);
}

static unsigned long srcu_start_poll(void)
{
	return sk_start_poll_synchronize_srcu(tort_srcu);
}

static int srcu_poll(unsigned long cookie)
{
	return sk_poll_state_synchronize_srcu(tort_srcu, cookie);
}

static unsigned long srcu_gp_seq(void)
{
	/* ABI field: the index flips once per grace period. */
	return sk_atomic_load_relaxed(&tort_srcu->idx);
}

static unsigned long srcu_gp_base;

static void srcu_stats(struct sk_tort_gp_stats *st)
{
	st->gps = srcu_gp_seq() - srcu_gp_base;
	st->cb_queued = st->cb_invoked = 0;
	st->have_cb = 0;
}

static int srcu_init_counted(void)
{
	int err = srcu_init();

	if (!err)
		srcu_gp_base = srcu_gp_seq();
	return err;
}

/* SRCU has no cond_synchronize: --gp cond is refused for it. */
const struct sk_tort_ops sk_tort_srcu_ops = {
	.name = "srcu",
	.desc = "SRCU, one domain; sections may sleep and end on another thread",
	.can_sleep = 1,
	.can_handoff = 1,
	.init = srcu_init_counted,
	.cleanup = srcu_cleanup,
	.readlock = srcu_lock,
	.readunlock = srcu_unlock,
	.readlock_nest = srcu_lock,
	.readunlock_nest = srcu_unlock,
	.read_delay = read_delay,
	.deref = deref_rcu,
	.sync = srcu_sync,
	.exp_sync = srcu_exp_sync,
	.call = srcu_call,
	.cb_barrier = srcu_barrier,
	.get_gp_state = srcu_get_state,
	.start_gp_poll = srcu_start_poll,
	.poll_gp_state = srcu_poll,
	.gp_seq = srcu_gp_seq,
	.stats = srcu_stats,
};

/* ---- busted twins -------------------------------------------------------- */

/*
 * Grace periods that do not wait, as rcutorture's "busted" type: a full
 * barrier and nothing else.  A run with them must report FAILURE; if it
 * does not, the detector is blind.
 */
static unsigned long busted_gps;

static void busted_sync(void)
{
	sk_smp_mb();
	sk_atomic_fetch_add_relaxed(&busted_gps, 1UL);
}

static int busted_call(struct sk_rcu_head *head,
		       void (*fn)(struct sk_rcu_head *head))
{
	if (!head || !fn)
		return -EINVAL;
	busted_sync();
	fn(head); /* at once, on the caller's thread */
	return 0;
}

static unsigned long busted_get_state(void)
{
	sk_smp_mb();
	return sk_atomic_load_relaxed(&busted_gps) + 1;
}

static int busted_poll(unsigned long cookie)
{
	(void)cookie;
	busted_sync();
	return 1;
}

static void busted_cond(unsigned long cookie)
{
	(void)cookie;
	busted_sync();
}

static unsigned long busted_seq(void)
{
	return sk_atomic_load_relaxed(&busted_gps);
}

static void busted_stats(struct sk_tort_gp_stats *st)
{
	st->gps = busted_seq();
	st->cb_queued = st->cb_invoked = 0;
	st->have_cb = 0;
}

void sk_tort_make_busted(const struct sk_tort_ops *real,
			 struct sk_tort_ops *out)
{
	*out = *real;
	out->busted = 1;
	out->global_rcu = 0;
	out->sync = busted_sync;
	out->exp_sync = busted_sync;
	out->call = busted_call;
	out->cb_barrier = noop;
	out->get_gp_state = busted_get_state;
	out->start_gp_poll = busted_get_state;
	out->poll_gp_state = busted_poll;
	out->cond_sync = busted_cond;
	out->gp_seq = busted_seq;
	out->stats = busted_stats;
}

int sk_tort_ops_has_gp(const struct sk_tort_ops *ops, int g)
{
	switch (g) {
	case SK_TORT_GP_SYNC:
		return ops->sync != NULL;
	case SK_TORT_GP_EXP:
		return ops->exp_sync != NULL;
	case SK_TORT_GP_CB:
		return ops->call != NULL && ops->cb_barrier != NULL;
	case SK_TORT_GP_POLL:
		return ops->start_gp_poll != NULL && ops->poll_gp_state != NULL;
	case SK_TORT_GP_COND:
		return ops->get_gp_state != NULL && ops->cond_sync != NULL;
	default:
		return 0;
	}
}
