/* SPDX-License-Identifier: MIT */
/*
 * The sk_tort_ops library (torture_ops.h): one struct sk_tort_ops per
 * primitive, and the busted twin of any of them, for `scalekit torture`
 * and the tests' stress checks.
 *
 *   rcu    general readers, sk_rcu_read_lock()/unlock()
 *   qsbr   QSBR readers: online, sk_rcu_quiescent_state() between sections
 *   mixed  even readers general, odd readers QSBR, one RCU domain
 *   srcu   sk_srcu_read_lock() on the domain of its instance (init() makes
 *          one per call); sections may sleep and may be ended by another
 *          thread
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "scalekit/rcu.h"
#include "scalekit/srcu.h"
#include "torture_ops.h"

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

static void noop(void *ctx)
{
	(void)ctx;
}

void sk_tort_spin(struct sk_tort_rng *rng, unsigned long max)
{
	unsigned long n = sk_tort_below(rng, max + 1);

	while (n--)
		sk_cpu_relax();
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

static int rcu_lock(void *ctx)
{
	(void)ctx;
	sk_rcu_read_lock();
	return 0;
}

static void rcu_unlock(void *ctx, int idx)
{
	(void)ctx;
	(void)idx;
	sk_rcu_read_unlock();
}

/*
 * Hidden in the library (src/internal/rcu.h); every user of these ops
 * links a static build of it (scalekit_static or a test build).
 */
unsigned long sk__rcu_gp_count(void);

static unsigned long rcu_gp_seq(void *ctx)
{
	(void)ctx;
	/*
	 * Grace periods completed, full width: the batch histogram counts
	 * grace periods on every target.  (Not the reader word's phase: it
	 * counts scans, two per grace period on 32-bit targets, and wraps
	 * at 16 bits there.)
	 */
	return sk__rcu_gp_count();
}

static void rcu_stats(void *ctx, struct sk_tort_gp_stats *st)
{
	struct sk_rcu_stats s;

	(void)ctx;
	sk_rcu_get_stats(&s);
	st->gps = s.grace_periods;
	st->cb_queued = s.cb_queued;
	st->cb_invoked = s.cb_invoked;
	st->exp_handshakes = s.exp_handshakes;
	st->exp_fallbacks = s.exp_fallbacks;
	st->have_cb = 1;
}

/* The global RCU domain's grace periods (ctx: NULL, unused). */
static void rcu_sync(void *ctx)
{
	(void)ctx;
	sk_synchronize_rcu();
}

static void rcu_exp_sync(void *ctx)
{
	(void)ctx;
	sk_synchronize_rcu_expedited();
}

static int rcu_call(void *ctx, struct sk_rcu_head *head,
		    void (*fn)(struct sk_rcu_head *head))
{
	(void)ctx;
	return sk_call_rcu(head, fn);
}

static void rcu_barrier(void *ctx)
{
	(void)ctx;
	sk_rcu_barrier();
}

static unsigned long rcu_get_state(void *ctx)
{
	(void)ctx;
	return sk_get_state_synchronize_rcu();
}

static unsigned long rcu_start_poll(void *ctx)
{
	(void)ctx;
	return sk_start_poll_synchronize_rcu();
}

static int rcu_poll(void *ctx, unsigned long cookie)
{
	(void)ctx;
	return sk_poll_state_synchronize_rcu(cookie);
}

static void rcu_cond_sync(void *ctx, unsigned long cookie)
{
	(void)ctx;
	sk_cond_synchronize_rcu(cookie);
}

#define RCU_UPDATE_OPS                                                 \
	.sync = rcu_sync, .exp_sync = rcu_exp_sync, .call = rcu_call, \
	.cb_barrier = rcu_barrier, .get_gp_state = rcu_get_state,     \
	.start_gp_poll = rcu_start_poll, .poll_gp_state = rcu_poll,   \
	.cond_sync = rcu_cond_sync, .gp_seq = rcu_gp_seq,             \
	.stats = rcu_stats

const struct sk_tort_ops sk_tort_rcu_ops = {
	.name = "rcu",
	.desc = "RCU, general readers (sk_rcu_read_lock)",
	.global_rcu = 1,
	.updater_reads = 1,
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

/*
 * An online QSBR reader's section: the QSBR flavor's markers (nothing
 * unless SK_DEBUG); other threads of the qsbr and mixed ops read as
 * general readers.
 */
static int qsbr_lock(void *ctx)
{
	(void)ctx;
	if (qsbr_reader)
		sk_rcu_qsbr_read_lock();
	else
		sk_rcu_read_lock();
	return 0;
}

static void qsbr_unlock(void *ctx, int idx)
{
	(void)ctx;
	(void)idx;
	if (qsbr_reader)
		sk_rcu_qsbr_read_unlock();
	else
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

/*
 * One instance: a domain of its own (the tool makes a fresh one per run,
 * the fork child's too; the tests one per stress run) and the grace-period
 * count at its creation.  struct sk_srcu is cache-line aligned, so the
 * instance is allocated with aligned_alloc(): malloc() is not enough.
 */
struct tort_srcu {
	struct sk_srcu d;
	unsigned long gp_base;
};

struct sk_srcu *sk_tort_srcu_domain(void *ctx)
{
	return &((struct tort_srcu *)ctx)->d;
}

static unsigned long srcu_gp_seq(void *ctx)
{
	/* ABI field: the index flips once per grace period. */
	return sk_atomic_load_relaxed(&sk_tort_srcu_domain(ctx)->idx);
}

static int srcu_init(void **ctx)
{
	struct tort_srcu *s = aligned_alloc(SK_CACHELINE, sizeof(*s));
	int err;

	if (!s)
		return -ENOMEM;
	err = sk_srcu_init(&s->d);
	if (err) {
		free(s);
		return err;
	}
	s->gp_base = srcu_gp_seq(s);
	*ctx = s;
	return 0;
}

static int srcu_cleanup(void *ctx)
{
	struct tort_srcu *s = ctx;
	int err;

	sk_srcu_barrier(&s->d);
	/* A domain still busy is kept (leaked) rather than freed in use. */
	err = sk_srcu_destroy(&s->d);
	if (err == 0)
		free(s);
	return err;
}

static int srcu_lock(void *ctx)
{
	return sk_srcu_read_lock(sk_tort_srcu_domain(ctx));
}

static void srcu_unlock(void *ctx, int idx)
{
	sk_srcu_read_unlock(sk_tort_srcu_domain(ctx), idx);
}

static void srcu_sync(void *ctx)
{
	sk_synchronize_srcu(sk_tort_srcu_domain(ctx));
}

static void srcu_exp_sync(void *ctx)
{
	sk_synchronize_srcu_expedited(sk_tort_srcu_domain(ctx));
}

static int srcu_call(void *ctx, struct sk_rcu_head *head,
		     void (*fn)(struct sk_rcu_head *head))
{
	return sk_call_srcu(sk_tort_srcu_domain(ctx), head, fn);
}

static void srcu_barrier(void *ctx)
{
	sk_srcu_barrier(sk_tort_srcu_domain(ctx));
}

static unsigned long srcu_get_state(void *ctx)
{
	return sk_get_state_synchronize_srcu(sk_tort_srcu_domain(ctx));
}

static unsigned long srcu_start_poll(void *ctx)
{
	return sk_start_poll_synchronize_srcu(sk_tort_srcu_domain(ctx));
}

static int srcu_poll(void *ctx, unsigned long cookie)
{
	return sk_poll_state_synchronize_srcu(sk_tort_srcu_domain(ctx),
					      cookie);
}

static void srcu_stats(void *ctx, struct sk_tort_gp_stats *st)
{
	st->gps = srcu_gp_seq(ctx) - ((struct tort_srcu *)ctx)->gp_base;
	st->cb_queued = st->cb_invoked = 0;
	st->have_cb = 0;
}

/* SRCU has no cond_synchronize: --gp cond is refused for it. */
const struct sk_tort_ops sk_tort_srcu_ops = {
	.name = "srcu",
	.desc = "SRCU, one domain; sections may sleep and end on another thread",
	.can_sleep = 1,
	.can_handoff = 1,
	.init = srcu_init,
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

static void busted_sync(void *ctx)
{
	(void)ctx;
	sk_smp_mb();
	sk_atomic_fetch_add_relaxed(&busted_gps, 1UL);
}

static int busted_call(void *ctx, struct sk_rcu_head *head,
		       void (*fn)(struct sk_rcu_head *head))
{
	if (!head || !fn)
		return -EINVAL;
	busted_sync(ctx);
	fn(head); /* at once, on the caller's thread */
	return 0;
}

static unsigned long busted_get_state(void *ctx)
{
	(void)ctx;
	sk_smp_mb();
	return sk_atomic_load_relaxed(&busted_gps) + 1;
}

static int busted_poll(void *ctx, unsigned long cookie)
{
	(void)cookie;
	busted_sync(ctx);
	return 1;
}

static void busted_cond(void *ctx, unsigned long cookie)
{
	(void)cookie;
	busted_sync(ctx);
}

static unsigned long busted_seq(void *ctx)
{
	(void)ctx;
	return sk_atomic_load_relaxed(&busted_gps);
}

static void busted_stats(void *ctx, struct sk_tort_gp_stats *st)
{
	st->gps = busted_seq(ctx);
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
