/* SPDX-License-Identifier: MIT */
/*
 * test_srcu_stress.c - srcu.h: a poison stress with every kind of reader
 * (the object checks of rcu_stress.h on the SRCU read side), and its
 * broken twins, which MUST be caught: the busted twin of the SRCU ops
 * (grace periods that do not wait); and a grace period emulated by this
 * file on the counters of srcu.h that drains the stale index and flips
 * but never drains the index the pre-existing readers use (its correct
 * emulation is run as a control).
 *
 * Every call on the domain goes through the torture tool's SRCU ops
 * (tools/torture_ops.h: sk_tort_srcu_ops, one instance = one domain per
 * run), its busted twin (sk_tort_make_busted()) or, for the emulation,
 * a copy of the ops whose sync() is this file's grace period.  The one
 * exception: a polled cookie is waited for by poll_wait()
 * (sk_test_srcu.h), which also sees a request the library dropped.
 *
 * White box (src/internal/srcu.h): the emulated grace period reads the
 * counters (the private dir and shared, the ABI slots and idx) and writes
 * idx, in a domain that no library grace period touches while it runs.
 *
 * No assertion bounds wall-clock time.  "test_srcu_stress <name>" runs only
 * the tests whose name contains <name>.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "scalekit/rcu.h"
#include "scalekit/srcu.h"

/* White box: the private state of a domain (d->state). */
#include "internal/srcu.h"

#include "rcu_stress.h"
#include "sk_test.h"
#include "sk_test_srcu.h"
#include "sk_test_util.h"

/* ---- poison stress ------------------------------------------------------- */

/* How an updater waits before poisoning the object it replaced (ops). */
enum ss_gp {
	SS_SYNC,      /* sync() */
	SS_EXPEDITED, /* exp_sync() */
	SS_CALL,      /* call(): the callback poisons and frees */
	SS_POLL,      /* start_gp_poll(), then poll in a loop */
	SS_COND,      /* get_gp_state(); sync() only if not yet completed */
};

#define SS_REAL_MASK                                                \
	((1u << SS_SYNC) | (1u << SS_EXPEDITED) | (1u << SS_CALL) | \
	 (1u << SS_POLL) | (1u << SS_COND))
#define SS_QUARANTINE 16
#define SS_QUEUE 8

struct ss_config {
	const char *name;
	unsigned int readers;	/* plain readers, sometimes nested */
	unsigned int sleepers;	/* readers that sometimes sleep inside */
	unsigned int handoffs;	/* locker/unlocker pairs */
	unsigned int ephemeral; /* spawners of lockers that exit mid-section */
	unsigned int first_touch; /* threads whose first section is in d */
	unsigned int updaters;
	unsigned long updates; /* per updater; 0: until the readers stop */
	unsigned int syncers;  /* threads that only synchronize */
	unsigned int gp_mask;  /* kinds the updaters pick from */
	unsigned int sleep_us; /* longest sleep inside a section */
	unsigned int pace_us;  /* updater pause between updates */
	int broken;	       /* grace period known broken (or emulated) */
	int quiet;	       /* print the result only on a violation */
	/* The primitive: NULL for sk_tort_srcu_ops, or a twin of it. */
	const struct sk_tort_ops *ops;
};

struct ss_obj {
	struct sk_stress_obj o; /* first: what sk_stress_check() sees */
	struct sk_rcu_head rh;	/* SS_CALL */
	struct ss_run *run;
};

struct ho_item {
	int idx;
	struct sk_stress_obj *p;
};

/* Bounded queue of open sections, from lockers to unlockers. */
struct ho_queue {
	pthread_mutex_t m;
	pthread_cond_t more, room;
	struct ho_item it[SS_QUEUE];
	unsigned int head, n;
	int closed;
};

struct ss_run {
	const struct sk_tort_ops *ops; /* every call on the domain */
	void *ctx;		       /* the ops' instance: the domain */
	struct sk_srcu *d;	       /* its domain (white box: poll_wait) */
	struct sk_stress s;	      /* rcu_stress.h: gp, stop, seq, lock */
	struct sk_stress_config scfg; /* name, broken: for the checker */
	struct sk_stress_result res;
	const struct ss_config *cfg;
	struct ho_queue *queues;   /* handoffs + ephemeral */
	pthread_mutex_t keep_lock; /* guards kept, cbq */
	struct ss_obj **kept;	   /* broken runs: freed at the end */
	unsigned long nkept, capkept;
	struct ss_obj *cbq[64]; /* quarantine of SS_CALL objects */
	unsigned int cbq_head;
	unsigned long cb_queued, cb_run; /* atomic */
	unsigned long poll_lost;	 /* atomic */
	unsigned long errors;		 /* atomic */
	int updaters_done;
	pthread_barrier_t touch; /* first_touch threads start at once */
};

struct ss_thread {
	struct sk_stress_thread t; /* rng and counters of the checker */
	struct ss_run *run;
	struct ho_queue *q;
	int kind; /* reader: 1 for a sleeper */
	int role; /* enum ss_role */
	pthread_t tid;
	unsigned long lost;
	struct ss_obj *quar[SS_QUARANTINE];
	unsigned int qhead;
};

static void ho_init(struct ho_queue *q)
{
	memset(q, 0, sizeof(*q));
	pthread_mutex_init(&q->m, NULL);
	pthread_cond_init(&q->more, NULL);
	pthread_cond_init(&q->room, NULL);
}

static void ho_push(struct ho_queue *q, int idx, struct sk_stress_obj *p)
{
	pthread_mutex_lock(&q->m);
	while (q->n == SS_QUEUE)
		pthread_cond_wait(&q->room, &q->m);
	q->it[(q->head + q->n) % SS_QUEUE] = (struct ho_item){ idx, p };
	q->n++;
	pthread_cond_signal(&q->more);
	pthread_mutex_unlock(&q->m);
}

/* 0 once the queue is closed and empty. */
static int ho_pop(struct ho_queue *q, struct ho_item *it)
{
	pthread_mutex_lock(&q->m);
	while (q->n == 0 && !q->closed)
		pthread_cond_wait(&q->more, &q->m);
	if (q->n == 0) {
		pthread_mutex_unlock(&q->m);
		return 0;
	}
	*it = q->it[q->head];
	q->head = (q->head + 1) % SS_QUEUE;
	q->n--;
	pthread_cond_signal(&q->room);
	pthread_mutex_unlock(&q->m);
	return 1;
}

static void ho_close(struct ho_queue *q)
{
	pthread_mutex_lock(&q->m);
	q->closed = 1;
	pthread_cond_broadcast(&q->more);
	pthread_mutex_unlock(&q->m);
}

static int ss_stopped(struct ss_run *run)
{
	return sk_atomic_load_acquire(&run->s.stop);
}

static int ss_detected(struct ss_run *run)
{
	int seen;

	pthread_mutex_lock(&run->s.res_lock);
	seen = run->res.first[0] != '\0';
	pthread_mutex_unlock(&run->s.res_lock);
	return seen;
}

/* The object, loaded inside a section of the domain. */
static struct sk_stress_obj *ss_deref(struct ss_run *run)
{
	return run->ops->deref((void *const *)&run->s.gp);
}

static void ss_read(struct ss_thread *me, int sleeper)
{
	struct ss_run *run = me->run;
	struct sk_stress_thread *t = &me->t;
	uint64_t r = sk_test_rand(&t->rng);
	struct sk_stress_obj *p, *q;
	int idx, idx2, k;

	idx = run->ops->readlock(run->ctx);
	p = ss_deref(run);
	sk_stress_check(t, p, 1);
	if ((r & 7) == 0) {
		/* Nested: q stays protected by the outer section. */
		idx2 = run->ops->readlock_nest(run->ctx);
		q = ss_deref(run);
		sk_stress_check(t, q, 1);
		run->ops->readunlock_nest(run->ctx, idx2);
		sk_stress_check(t, q, 0);
	}
	if (sleeper && ((r >> 3) & 3) == 0) {
		sk_test_sleep_us(1 + (r >> 16) % run->cfg->sleep_us);
		sk_stress_check(t, p, 0);
	}
	for (k = 0; k < 3; k++) {
		sk_stress_spin(&t->rng, 300);
		sk_stress_check(t, p, 0);
	}
	if (((r >> 8) & 63) == 0) {
		sched_yield();
		sk_stress_check(t, p, 0);
	}
	run->ops->readunlock(run->ctx, idx);
	t->reads++;
}

static void *ss_reader(void *arg)
{
	struct ss_thread *me = arg;

	while (!ss_stopped(me->run)) {
		ss_read(me, me->kind);
		sk_stress_spin(&me->t.rng, 500);
		if (me->kind && (sk_test_rand(&me->t.rng) & 15) == 0)
			sk_test_sleep_us(20);
	}
	return NULL;
}

/* Enters a section and hands it, with the object it holds, to an unlocker. */
static void ss_lock_and_hand_off(struct ss_thread *me)
{
	struct ss_run *run = me->run;
	int idx = run->ops->readlock(run->ctx);
	struct sk_stress_obj *p = ss_deref(run);

	sk_stress_check(&me->t, p, 1);
	sk_stress_spin(&me->t.rng, 200);
	sk_stress_check(&me->t, p, 0);
	ho_push(me->q, idx, p);
	me->t.reads++;
}

static void *ss_locker(void *arg)
{
	struct ss_thread *me = arg;

	while (!ss_stopped(me->run)) {
		ss_lock_and_hand_off(me);
		if ((sk_test_rand(&me->t.rng) & 3) == 0)
			ss_read(me, 0);
		sk_stress_spin(&me->t.rng, 500);
	}
	return NULL;
}

static void *ss_unlocker(void *arg)
{
	struct ss_thread *me = arg;
	struct ss_run *run = me->run;
	struct ho_item it;

	while (ho_pop(me->q, &it)) {
		uint64_t r = sk_test_rand(&me->t.rng);

		sk_stress_check(&me->t, it.p, 0);
		if ((r & 3) == 0) {
			sk_test_sleep_us(1 + (r >> 8) % run->cfg->sleep_us);
			sk_stress_check(&me->t, it.p, 0);
		}
		/* The section another thread entered (can_handoff). */
		run->ops->readunlock(run->ctx, it.idx);
	}
	return NULL;
}

/* A short-lived thread: one section, handed off; exits with it open. */
static void *ss_ephemeral(void *arg)
{
	ss_lock_and_hand_off(arg);
	return NULL;
}

static void *ss_spawner(void *arg)
{
	struct ss_thread *me = arg;
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 128 * 1024);
	while (!ss_stopped(me->run)) {
		struct ss_thread e;

		memset(&e, 0, sizeof(e));
		e.run = me->run;
		e.q = me->q;
		e.t.s = me->t.s;
		e.t.rng = sk_test_rand(&me->t.rng) | 1;
		sk_test_thread_start_attr(&e.tid, &attr, ss_ephemeral, &e);
		sk_test_thread_join(e.tid);
		me->t.reads += e.t.reads;
		me->t.checks += e.t.checks;
		me->t.violations += e.t.violations;
		me->t.churned++;
	}
	pthread_attr_destroy(&attr);
	return NULL;
}

/* A thread whose first section ever in d starts with all the others. */
static void *ss_first_touch(void *arg)
{
	struct ss_thread *me = arg;
	struct ss_run *run = me->run;
	struct sk_stress_obj *p;
	int idx;

	pthread_barrier_wait(&run->touch);
	idx = run->ops->readlock(run->ctx);
	p = ss_deref(run);
	sk_stress_check(&me->t, p, 1);
	sk_test_sleep_us(500 + sk_test_rand(&me->t.rng) % 1500);
	sk_stress_check(&me->t, p, 0);
	run->ops->readunlock(run->ctx, idx);
	me->t.reads++;
	return NULL;
}

static void ss_poison(struct ss_run *run, struct ss_obj *o)
{
	sk_stress_obj_poison(&o->o, run->cfg->broken);
}

/* Keep o until the end of the run (broken runs free nothing early). */
static void ss_keep(struct ss_run *run, struct ss_obj *o)
{
	pthread_mutex_lock(&run->keep_lock);
	if (run->nkept == run->capkept) {
		unsigned long cap = run->capkept ? run->capkept * 2 : 1024;
		struct ss_obj **k = realloc(run->kept, cap * sizeof(*k));

		if (!k) {
			pthread_mutex_unlock(&run->keep_lock);
			fprintf(stderr, "out of memory\n");
			exit(2);
		}
		run->kept = k;
		run->capkept = cap;
	}
	run->kept[run->nkept++] = o;
	pthread_mutex_unlock(&run->keep_lock);
}

/* Poisoned after its grace period; freed SS_QUARANTINE updates later. */
static void ss_retire(struct ss_thread *me, struct ss_obj *o)
{
	ss_poison(me->run, o);
	if (me->run->cfg->broken) {
		ss_keep(me->run, o);
		return;
	}
	free(me->quar[me->qhead]);
	me->quar[me->qhead] = o;
	me->qhead = (me->qhead + 1) % SS_QUARANTINE;
}

static void ss_cb(struct sk_rcu_head *h)
{
	struct ss_obj *o =
		(struct ss_obj *)((char *)h - offsetof(struct ss_obj, rh));
	struct ss_run *run = o->run;
	struct ss_obj *old;

	ss_poison(run, o);
	pthread_mutex_lock(&run->keep_lock);
	old = run->cbq[run->cbq_head];
	run->cbq[run->cbq_head] = o;
	run->cbq_head = (run->cbq_head + 1) % 64;
	pthread_mutex_unlock(&run->keep_lock);
	free(old);
	__atomic_fetch_add(&run->cb_run, 1, __ATOMIC_RELEASE);
}

/* ---- the emulated grace period (ABI counters of srcu.h) ------------------ */

static unsigned long emu_sum(struct sk_srcu *d, int bit, int unlocks)
{
	struct sk_srcu_slot **dir = sk_atomic_load_acquire(&d->state->dir);
	unsigned long sum;
	unsigned int k, i;

	/* The shared counters count ends in remote[], as other threads. */
	sum = unlocks ? SK_READ_ONCE(d->state->shared.remote[bit])
		      : SK_READ_ONCE(d->state->shared.cnt[bit]);
	/* Every chunk, not only the first nchunks. */
	for (k = 0; dir && k < SK__SRCU_MAX_CHUNKS; k++) {
		struct sk_srcu_slot *ch = sk_atomic_load_acquire(&dir[k]);

		for (i = 0; ch && i < SK__SRCU_CHUNK_SLOTS; i++)
			sum += unlocks ? SK_READ_ONCE(ch[i].remote[bit])
				       : SK_READ_ONCE(ch[i].cnt[bit]);
	}
	return sum;
}

static void emu_drain(struct sk_srcu *d, int bit)
{
	for (;;) {
		unsigned long unlocks = emu_sum(d, bit, 1);

		/* Pairs with the readers' light fences, as the library's D. */
		sk_fence_heavy();
		if (emu_sum(d, bit, 0) == unlocks)
			return;
		sk_test_sleep_us(20);
	}
}

/*
 * Scan-flip-scan done by the test on the domain's ABI counters.  With
 * skip_old the second scan is left out: the grace period drains the stale
 * index and flips, but never waits for the index that the pre-existing
 * readers entered on ("ends without waiting for one index").  Only this
 * function writes d->idx during an emulated run.
 */
static pthread_mutex_t emu_lock = PTHREAD_MUTEX_INITIALIZER;

static void emu_grace_period(void *ctx, int skip_old)
{
	struct sk_srcu *d = sk_tort_srcu_domain(ctx);
	unsigned long idx;

	/* Emulated grace periods one at a time (one domain at a time). */
	pthread_mutex_lock(&emu_lock);
	sk_smp_mb();
	idx = SK_READ_ONCE(d->idx);
	emu_drain(d, (int)(idx & 1) ^ 1); /* stale readers */
	sk_smp_mb();
	SK_WRITE_ONCE(d->idx, idx + 1); /* new readers: other index */
	sk_smp_mb();
	if (!skip_old)
		emu_drain(d, (int)(idx & 1)); /* pre-existing readers */
	pthread_mutex_unlock(&emu_lock);
	sk_smp_mb();
}

static void emu_sync(void *ctx)
{
	emu_grace_period(ctx, 0);
}

static void emu_sync_skip_old(void *ctx)
{
	emu_grace_period(ctx, 1);
}

/*
 * The SRCU ops with the emulated grace period as their only one (the
 * updaters' gp_mask must be SS_SYNC alone): its readers and domains are
 * sk_tort_srcu_ops', so what the twin changes is the grace period only.
 */
static struct sk_tort_ops emu_ops(int skip_old)
{
	struct sk_tort_ops o = sk_tort_srcu_ops;

	o.sync = skip_old ? emu_sync_skip_old : emu_sync;
	o.exp_sync = NULL;
	o.call = NULL;
	o.get_gp_state = o.start_gp_poll = NULL;
	o.poll_gp_state = NULL;
	return o;
}

static int ss_pick(struct ss_thread *me)
{
	unsigned int mask = me->run->cfg->gp_mask, n = 0, k, pick;

	for (k = 0; k < 32; k++)
		n += (mask >> k) & 1;
	pick = (unsigned int)(sk_test_rand(&me->t.rng) % n);
	for (k = 0; k < 32; k++)
		if (((mask >> k) & 1) && pick-- == 0)
			return (int)k;
	return SS_SYNC;
}

/* Wait with grace-period kind k, then poison old and retire it. */
static void ss_wait_and_retire(struct ss_thread *me, struct ss_obj *old, int k)
{
	struct ss_run *run = me->run;
	const struct sk_tort_ops *ops = run->ops;
	unsigned long cookie;

	switch (k) {
	case SS_EXPEDITED:
		ops->exp_sync(run->ctx);
		break;
	case SS_CALL:
		__atomic_fetch_add(&run->cb_queued, 1, __ATOMIC_RELAXED);
		if (ops->call(run->ctx, &old->rh, ss_cb) == 0)
			return; /* ss_cb() retires it after the grace period */
		__atomic_fetch_add(&run->errors, 1, __ATOMIC_RELAXED);
		__atomic_fetch_sub(&run->cb_queued, 1, __ATOMIC_RELAXED);
		ops->sync(run->ctx);
		break;
	case SS_POLL:
		/* Polled by poll_wait(), which sees a dropped request. */
		cookie = ops->start_gp_poll(run->ctx);
		poll_wait(run->d, cookie, &me->lost);
		break;
	case SS_COND:
		cookie = ops->get_gp_state(run->ctx);
		sk_stress_spin(&me->t.rng, 2000);
		if (!ops->poll_gp_state(run->ctx, cookie))
			ops->sync(run->ctx);
		break;
	default:
		ops->sync(run->ctx);
		break;
	}
	ss_retire(me, old);
}

static void *ss_updater(void *arg)
{
	struct ss_thread *me = arg;
	struct ss_run *run = me->run;
	const struct ss_config *cfg = run->cfg;
	unsigned long i;

	for (i = 0; cfg->updates ? i < cfg->updates : !ss_stopped(run); i++) {
		struct ss_obj *n = malloc(sizeof(*n)), *old;

		if (!n) {
			fprintf(stderr, "out of memory\n");
			exit(2);
		}
		memset(&n->rh, 0, sizeof(n->rh));
		n->run = run;
		pthread_mutex_lock(&run->s.lock);
		sk_stress_obj_init(&n->o, ++run->s.seq);
		old = (struct ss_obj *)run->s.gp;
		/* Initialization before publication; pairs with dereference. */
		sk_rcu_assign_pointer(run->s.gp, &n->o);
		pthread_mutex_unlock(&run->s.lock);

		ss_wait_and_retire(me, old, ss_pick(me));
		me->t.updates++;
		if (cfg->pace_us)
			sk_test_sleep_us(cfg->pace_us);
		else if ((sk_test_rand(&me->t.rng) & 31) == 0)
			sched_yield();
		/* A broken run stops at the first detection. */
		if (cfg->broken && (i & 15) == 0 && ss_detected(run))
			break;
	}
	return NULL;
}

static void *ss_syncer(void *arg)
{
	struct ss_thread *me = arg;
	struct ss_run *run = me->run;

	while (!flag_get(&run->updaters_done)) {
		if (sk_test_rand(&me->t.rng) & 1)
			run->ops->sync(run->ctx);
		else
			run->ops->exp_sync(run->ctx);
		me->t.calls++;
	}
	return NULL;
}

static void ss_sum(struct ss_run *run, struct ss_thread *t)
{
	run->res.reads += t->t.reads;
	run->res.checks += t->t.checks;
	run->res.violations += t->t.violations;
	run->res.updates += t->t.updates;
	run->res.sync_calls += t->t.calls;
	run->res.churned += t->t.churned;
	run->poll_lost += t->lost;
}

enum ss_role { R_READER, R_UNLOCKER, R_LOCKER, R_TOUCH, R_UPDATER, R_SYNCER };

static void ss_start(struct ss_thread *t, int role, void *(*fn)(void *))
{
	t->role = role;
	sk_test_thread_start(&t->tid, fn, t);
}

static void ss_join_role(struct ss_thread *t, unsigned int nt, int role)
{
	unsigned int i;

	for (i = 0; i < nt; i++)
		if (t[i].role == role)
			sk_test_thread_join(t[i].tid);
}

/* A run of cfg: an instance of its ops (a domain), the first object. */
static struct ss_run *ss_run_new(const struct ss_config *cfg, unsigned int nq)
{
	struct ss_run *run = calloc(1, sizeof(*run));
	struct ss_obj *first = calloc(1, sizeof(*first));
	unsigned int i;

	if (!run || !first) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	run->cfg = cfg;
	run->ops = cfg->ops ? cfg->ops : &sk_tort_srcu_ops;
	if (run->ops->init(&run->ctx) != 0)
		SK_T_FAIL("%s", "the SRCU ops' init failed");
	run->d = sk_tort_srcu_domain(run->ctx);
	run->scfg.name = cfg->name;
	run->scfg.broken = cfg->broken;
	run->s.cfg = &run->scfg;
	run->s.res = &run->res;
	pthread_mutex_init(&run->s.lock, NULL);
	pthread_mutex_init(&run->s.res_lock, NULL);
	pthread_mutex_init(&run->keep_lock, NULL);
	if (cfg->first_touch)
		pthread_barrier_init(&run->touch, NULL, cfg->first_touch + 1);
	run->queues = calloc(nq ? nq : 1, sizeof(*run->queues));
	for (i = 0; i < nq; i++)
		ho_init(&run->queues[i]);
	sk_stress_obj_init(&first->o, run->s.seq = 1);
	first->run = run;
	run->s.gp = &first->o;
	return run;
}

/* Start the nt threads t of every role; first-touch ones released. */
static void ss_start_all(struct ss_run *run, struct ss_thread *t,
			 unsigned int nt, unsigned int nq)
{
	const struct ss_config *cfg = run->cfg;
	unsigned int i, k = 0;

	for (i = 0; i < nt; i++) {
		t[i].run = run;
		t[i].t.s = &run->s;
		t[i].t.rng = (sk_tsrcu_seed + 1) * 0x9e3779b97f4a7c15ull +
			     i * 7919 + 1;
		sk_test_rand(&t[i].t.rng);
	}
	for (i = 0; i < cfg->readers + cfg->sleepers; i++, k++) {
		t[k].kind = i >= cfg->readers; /* sleeper */
		ss_start(&t[k], R_READER, ss_reader);
	}
	for (i = 0; i < nq; i++) {
		t[k].q = t[k + 1].q = &run->queues[i];
		ss_start(&t[k++], R_UNLOCKER, ss_unlocker);
		ss_start(&t[k++], R_LOCKER,
			 i < cfg->handoffs ? ss_locker : ss_spawner);
	}
	for (i = 0; i < cfg->updaters; i++)
		ss_start(&t[k++], R_UPDATER, ss_updater);
	for (i = 0; i < cfg->syncers; i++)
		ss_start(&t[k++], R_SYNCER, ss_syncer);
	for (i = 0; i < cfg->first_touch; i++)
		ss_start(&t[k++], R_TOUCH, ss_first_touch);
	if (!cfg->first_touch)
		return;
	/* Release the first sections once the updaters are busy. */
	for (;;) {
		unsigned long seq;

		pthread_mutex_lock(&run->s.lock);
		seq = run->s.seq;
		pthread_mutex_unlock(&run->s.lock);
		if (seq >= 3)
			break;
		sk_test_sleep_us(100);
	}
	pthread_barrier_wait(&run->touch);
}

/* Stop and join every thread, sum their counters, drain the callbacks. */
static void ss_stop_all(struct ss_run *run, struct ss_thread *t,
			unsigned int nt, unsigned int nq)
{
	const struct ss_config *cfg = run->cfg;
	unsigned int i;

	if (cfg->updates) {
		/* Updaters finish by count, then the readers stop. */
		ss_join_role(t, nt, R_UPDATER);
		flag_set(&run->updaters_done);
		sk_atomic_store_release(&run->s.stop, 1);
	} else {
		/* The first-touch readers finish by themselves. */
		ss_join_role(t, nt, R_TOUCH);
		sk_atomic_store_release(&run->s.stop, 1);
		ss_join_role(t, nt, R_UPDATER);
		flag_set(&run->updaters_done);
	}
	ss_join_role(t, nt, R_SYNCER);
	ss_join_role(t, nt, R_READER);
	ss_join_role(t, nt, R_LOCKER);
	if (cfg->updates)
		ss_join_role(t, nt, R_TOUCH);
	/* The unlockers end the sections still queued, then exit. */
	for (i = 0; i < nq; i++)
		ho_close(&run->queues[i]);
	ss_join_role(t, nt, R_UNLOCKER);
	for (i = 0; i < nt; i++)
		ss_sum(run, &t[i]);

	/* Callbacks: the barrier, then make sure every one has run. */
	run->ops->cb_barrier(run->ctx);
	while (__atomic_load_n(&run->cb_run, __ATOMIC_ACQUIRE) !=
	       __atomic_load_n(&run->cb_queued, __ATOMIC_RELAXED))
		sk_test_sleep_us(100);
	SK_CHECK_EQ(run->ops->cleanup(run->ctx), 0);
}

/* Free the objects of run and its nt threads t, then run and t. */
static void ss_run_free(struct ss_run *run, struct ss_thread *t,
			unsigned int nt)
{
	unsigned int i, j;
	unsigned long x;

	for (i = 0; i < nt; i++)
		for (j = 0; j < SS_QUARANTINE; j++)
			free(t[i].quar[j]);
	for (j = 0; j < 64; j++)
		free(run->cbq[j]);
	for (x = 0; x < run->nkept; x++)
		free(run->kept[x]);
	free(run->kept);
	free((struct ss_obj *)run->s.gp);
	free(run->queues);
	if (run->cfg->first_touch)
		pthread_barrier_destroy(&run->touch);
	free(run);
	free(t);
}

/* Run one stress; returns the result (violations, reads...). */
static struct sk_stress_result ss_run_one(const struct ss_config *cfg)
{
	unsigned int nq = cfg->handoffs + cfg->ephemeral;
	unsigned int nt = cfg->readers + cfg->sleepers + 2 * nq +
			  cfg->first_touch + cfg->updaters + cfg->syncers;
	struct ss_thread *t = calloc(nt ? nt : 1, sizeof(*t));
	struct ss_run *run = ss_run_new(cfg, nq);
	struct sk_stress_result res;

	if (!t) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	ss_start_all(run, t, nt, nq);
	ss_stop_all(run, t, nt, nq);
	res = run->res;
	res.errors += run->errors;
	if (!cfg->quiet || res.violations)
		sk_stress_print(&run->scfg, &res);
	if (run->poll_lost)
		fprintf(stderr,
			"  %s: %lu polled grace periods dropped by "
			"the library (re-requested)\n",
			cfg->name, run->poll_lost);
	ss_run_free(run, t, nt);
	return res;
}

/*
 * The poison stress with every kind of reader: 2 plain, 2 that sleep up
 * to 300 us inside, a locker/unlocker pair and a spawner of lockers that
 * exit mid-section; updaters updating updates times each, picking their
 * grace periods from gp_mask.
 */
static struct ss_config ss_every_reader(const char *name,
					unsigned int updaters,
					unsigned long updates,
					unsigned int gp_mask)
{
	struct ss_config cfg = {
		.name = name,
		.readers = 2,
		.sleepers = 2,
		.handoffs = 1,
		.ephemeral = 1,
		.updaters = updaters,
		.updates = updates,
		.gp_mask = gp_mask,
		.sleep_us = 300,
	};

	return cfg;
}

static void poison_stress_with_every_kind_of_reader(void)
{
	struct ss_config cfg = ss_every_reader("srcu stress", 2,
					       1200 / sk_tsrcu_slow,
					       SS_REAL_MASK);
	struct sk_stress_result r;

	cfg.syncers = 1;
	r = ss_run_one(&cfg);

	SK_CHECK_EQ(r.violations, 0);
	SK_CHECK_EQ(r.errors, 0);
	SK_CHECK_EQ(r.updates, cfg.updaters * cfg.updates);
	SK_CHECK_GT(r.reads, 0);
	SK_CHECK_GT(r.churned, 0);
	if (r.violations)
		fprintf(stderr, "  first violation: %s\n", r.first);
}

/*
 * Run a broken twin (cfg->broken set, updaters pausing 50 us between
 * updates): the checker must catch it.
 */
static void ss_check_twin_caught(struct ss_config *cfg)
{
	struct sk_stress_result r;

	cfg->pace_us = 50;
	cfg->broken = 1;
	r = ss_run_one(cfg);
	SK_CHECK_GT(r.checks, 0);
	SK_CHECK_GT(r.violations, 0); /* the checker MUST catch it */
}

/* The busted twin of the SRCU ops: grace periods that do not wait. */
static const struct sk_tort_ops *ss_busted_ops(void)
{
	static struct sk_tort_ops busted;

	sk_tort_make_busted(&sk_tort_srcu_ops, &busted);
	return &busted;
}

/*
 * BUSTED twin 1: the updater's grace periods do not wait (synchronous,
 * expedited or conditional; not callbacks, which the twin would run at
 * once, nor polls, which poll_wait() checks against the library).
 */
static void poison_stress_catches_skipped_grace_period(void)
{
	struct ss_config cfg = ss_every_reader(
		"srcu stress, BROKEN: no grace period", 1, 4000,
		(1u << SS_SYNC) | (1u << SS_EXPEDITED) | (1u << SS_COND));

	cfg.ops = ss_busted_ops();
	ss_check_twin_caught(&cfg);
}

/*
 * The index-specific bug cannot be put into the library from outside, so
 * the test runs its own scan-flip-scan on the ABI counters, correct (the
 * control: no violation) and without the scan of the pre-existing
 * readers' index (BUSTED twin 2: must be caught).  A grace period that
 * skips only the first scan (stale readers) is the subtler kernel bug;
 * the readers' window between loading idx and counting (inline in
 * srcu.h) cannot be widened from outside, so that variant would almost
 * never be caught and is not run.
 */
static void poison_stress_catches_gp_that_skips_an_index(void)
{
	struct ss_config cfg = ss_every_reader("srcu stress, emulated "
					       "scan-flip-scan (control)", 2,
					       1000 / sk_tsrcu_slow,
					       1u << SS_SYNC);
	struct sk_tort_ops emu = emu_ops(0), emu_broken = emu_ops(1);
	struct sk_stress_result r;

	cfg.ops = &emu;
	cfg.broken = 1; /* atomic loads, nothing freed before the end */
	r = ss_run_one(&cfg);

	SK_CHECK_EQ(r.violations, 0);
	SK_CHECK_EQ(r.updates, cfg.updaters * cfg.updates);

	cfg.name = "srcu stress, BROKEN emulation: pre-existing readers' "
		   "index not drained";
	cfg.ops = &emu_broken;
	cfg.updaters = 1;
	cfg.updates = 4000;
	ss_check_twin_caught(&cfg);
}

/*
 * Many threads whose first section in a fresh domain starts at the same
 * moment (slot chunks allocated concurrently) while an updater replaces
 * and poisons.  Twin: the same with the grace period skipped.
 */
static void first_sections_in_new_chunks_are_waited_for(void)
{
	struct ss_config cfg = {
		.name = "srcu first-touch",
		.first_touch = 130, /* slots in three chunks */
		.updaters = 1,
		.updates = 0, /* until the readers are done */
		.gp_mask = (1u << SS_SYNC) | (1u << SS_EXPEDITED),
		.quiet = 1,
	};
	unsigned int round, rounds = 40 / sk_tsrcu_slow + 2;
	unsigned long violations = 0, checks = 0, updates = 0;
	struct sk_stress_result r;

	for (round = 0; round < rounds; round++) {
		r = ss_run_one(&cfg);
		violations += r.violations;
		checks += r.checks;
		updates += r.updates;
	}
	fprintf(stderr,
		"  %u rounds of %u first sections: %lu updates, %lu "
		"checks, %lu violations\n",
		rounds, cfg.first_touch, updates, checks, violations);
	SK_CHECK_EQ(violations, 0);
	SK_CHECK_GT(checks, 0);

	cfg.name = "srcu first-touch, BROKEN: no grace period";
	cfg.ops = ss_busted_ops();
	cfg.broken = 1;
	cfg.pace_us = 50;
	cfg.quiet = 0;
	violations = 0;
	for (round = 0; round < 3 && !violations; round++)
		violations += ss_run_one(&cfg).violations;
	SK_CHECK_GT(violations, 0); /* the checker MUST catch it */
}

int main(int argc, char **argv)
{
	sk_test_srcu_start(argc, argv);

	/* poison stress and its broken twins */
	SK_RUN(poison_stress_with_every_kind_of_reader);
	SK_RUN(poison_stress_catches_skipped_grace_period);
	SK_RUN(poison_stress_catches_gp_that_skips_an_index);
	SK_RUN(first_sections_in_new_chunks_are_waited_for);
	return sk_test_report();
}
