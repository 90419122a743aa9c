/* SPDX-License-Identifier: MIT */
/*
 * rcu_stress.h - a reusable RCU stress checker (tests, torture tool).
 *
 * Readers follow one global pointer to a struct sk_stress_obj {magic, seq,
 * payload[]} while updaters replace it: allocate and fill a new object,
 * publish it with sk_rcu_assign_pointer(), wait with the grace-period
 * primitive under test, then poison every field of the old object and put
 * it in a quarantine; objects leave the quarantine (free()) only after
 * cfg.quarantine later updates by the same updater, so a reader that still
 * holds an object after its grace period reads poison, not memory glibc
 * handed to someone else.
 *
 * Readers check, inside their section and several times with spin delays
 * (and now and then a sched_yield()) in between, that the object is live:
 * magic intact, payload consistent with seq, seq never going backwards.
 * Every failed check is counted, never fatal, so a broken primitive can be
 * run and its detection asserted (the kernel's BUSTED torture type).
 *
 * Reader kinds: general readers (sk_rcu_read_lock(), sometimes nested),
 * QSBR readers (online, sk_rcu_quiescent_state() every qs_every reads,
 * holding every reference obtained since the last quiescent state and
 * re-checking all of them; sometimes offline, reading with read_lock),
 * and churn threads that are created, register (explicitly, implicitly or
 * as QSBR), read and exit without end.  Extra sync threads call the
 * grace-period primitive in a loop to exercise batching.
 *
 * Broken primitives (cfg.broken = 1): readers and the poisoner use
 * SK_READ_ONCE/SK_WRITE_ONCE on the objects so TSan does not report the
 * races the broken primitive causes, and nothing is freed before the end
 * of the run so ASan does not stop at the first use after free.  With a
 * correct primitive, plain (volatile) accesses are used on purpose: TSan
 * then checks that the library's grace period orders the readers' loads
 * before the poisoning stores and free().
 */
#ifndef SK_RCU_STRESS_H
#define SK_RCU_STRESS_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scalekit/rcu.h"
#include "sk_test.h"

/* Truncated to unsigned long (32 bits on ILP32 targets). */
#define SK_STRESS_MAGIC ((unsigned long)0x5ca1ab1e0b1ec7edULL) /* live */
#define SK_STRESS_POISON ((unsigned long)0x6b6b6b6b6b6b6b6bULL) /* freed */
#define SK_STRESS_PAYLOAD 14		      /* object = 2 cache lines */
#define SK_STRESS_HOLD_MAX 64		      /* QSBR references held */

struct sk_stress_obj {
	unsigned long magic; /* SK_STRESS_MAGIC or poison */
	unsigned long seq;   /* update number, from 1 */
	unsigned long payload[SK_STRESS_PAYLOAD]; /* sk_stress_payload(seq, i) */
};

struct sk_stress_config {
	const char *name;	      /* for messages */
	unsigned int general_readers; /* sk_rcu_read_lock() readers */
	unsigned int qsbr_readers;    /* QSBR readers */
	unsigned int updaters;	      /* threads replacing the object */
	unsigned long updates;	      /* replacements per updater */
	unsigned int sync_threads;    /* threads only calling gp_wait() */
	unsigned long sync_calls;     /* gp_wait() calls per sync thread */
	unsigned int churn_threads;   /* spawners of short-lived readers */
	unsigned int qs_every;	      /* QSBR: quiescent state every K reads */
	unsigned int spin_in;	      /* max pause loops inside a section */
	unsigned int spin_out;	      /* max pause loops between sections */
	unsigned int quarantine;      /* poisoned objects kept per updater */
	size_t churn_stack;	      /* stack size of churn threads, 0: 128K */
	int broken;		      /* gp_wait() is known broken (see top) */
	void (*gp_wait)(void);	      /* NULL: sk_synchronize_rcu */
	uint64_t seed;
};

struct sk_stress_result {
	unsigned long reads;	  /* read-side critical sections */
	unsigned long checks;	  /* object checks */
	unsigned long violations; /* failed checks */
	unsigned long updates;	  /* objects replaced */
	unsigned long sync_calls; /* gp_wait() calls by sync threads */
	unsigned long churned;	  /* short-lived reader threads run */
	unsigned long errors;	  /* setup failures (thread creation...) */
	char first[200];	  /* the first violation, for the log */
};

/* The run's shared state; one per sk_stress_run(). */
struct sk_stress {
	struct sk_stress_obj *gp
		__attribute__((aligned(64)));  /* RCU-protected */
	int stop __attribute__((aligned(64))); /* readers and churn stop */
	unsigned long seq;    /* last seq published; guarded by lock */
	pthread_mutex_t lock; /* serializes updaters */
	const struct sk_stress_config *cfg;
	struct sk_stress_result *res;
	pthread_mutex_t res_lock; /* guards res->first and the sums */
};

struct sk_stress_thread {
	struct sk_stress *s;
	pthread_t tid;
	uint64_t rng;
	unsigned long reads, checks, violations, updates, calls, churned;
	unsigned long errors;
	unsigned long last_seq;	  /* highest seq seen: never goes backwards */
	struct sk_stress_obj **q; /* updater: quarantine, freed after the run */
	unsigned long qlen;	  /* its size */
	int started;
};

static inline unsigned long sk_stress_payload(unsigned long seq, unsigned i)
{
	return (seq * (unsigned long)0x9e3779b97f4a7c15ULL) ^
	       ((unsigned long)i << (sizeof(unsigned long) * 8 - 8)) ^ i;
}

/* Loads and stores on objects: plain when checked by TSan, else atomic. */
#define SK_STRESS_LOAD(broken, x) \
	((broken) ? SK_READ_ONCE(x) : *(volatile __typeof__(x) *)&(x))
#define SK_STRESS_STORE(broken, x, v)                          \
	do {                                                   \
		if (broken)                                    \
			SK_WRITE_ONCE(x, v);                   \
		else                                           \
			*(volatile __typeof__(x) *)&(x) = (v); \
	} while (0)

static inline void sk_stress_spin(uint64_t *rng, unsigned int max)
{
	unsigned long n;

	if (!max)
		return;
	n = sk_test_rand(rng) % (max + 1);
	while (n--)
		sk_cpu_relax();
}

static inline void sk_stress_violation(struct sk_stress_thread *t,
				       const struct sk_stress_obj *p,
				       const char *what, unsigned long got,
				       unsigned long want)
{
	struct sk_stress *s = t->s;

	if (t->violations++ == 0) {
		pthread_mutex_lock(&s->res_lock);
		if (!s->res->first[0])
			snprintf(s->res->first, sizeof(s->res->first),
				 "%s: object %p: %s is %#lx, expected %#lx",
				 s->cfg->name ? s->cfg->name : "stress",
				 (const void *)p, what, got, want);
		pthread_mutex_unlock(&s->res_lock);
	}
}

/*
 * Check that *p is live (inside a read section).  Returns its seq, or 0
 * when the check failed.  last_seq: update the reader's high-water mark.
 */
static inline unsigned long sk_stress_check(struct sk_stress_thread *t,
					    const struct sk_stress_obj *p,
					    int last_seq)
{
	int broken = t->s->cfg->broken;
	unsigned long magic, seq, v;
	unsigned int i;

	t->checks++;
	if (!p) {
		sk_stress_violation(t, p, "the global pointer", 0,
				    SK_STRESS_MAGIC);
		return 0;
	}
	magic = SK_STRESS_LOAD(broken, p->magic);
	if (magic != SK_STRESS_MAGIC) {
		sk_stress_violation(t, p, "magic", magic, SK_STRESS_MAGIC);
		return 0;
	}
	seq = SK_STRESS_LOAD(broken, p->seq);
	for (i = 0; i < SK_STRESS_PAYLOAD; i++) {
		v = SK_STRESS_LOAD(broken, p->payload[i]);
		if (v != sk_stress_payload(seq, i)) {
			sk_stress_violation(t, p, "payload", v,
					    sk_stress_payload(seq, i));
			return 0;
		}
	}
	if (last_seq) {
		if (seq < t->last_seq) {
			sk_stress_violation(t, p, "seq (went backwards)", seq,
					    t->last_seq);
			return 0;
		}
		t->last_seq = seq;
	}
	return seq;
}

/* One general read-side critical section, sometimes nested. */
static inline void sk_stress_general_read(struct sk_stress_thread *t)
{
	const struct sk_stress_config *cfg = t->s->cfg;
	struct sk_stress_obj *p, *q;
	uint64_t r = sk_test_rand(&t->rng);
	int k;

	sk_rcu_read_lock();
	p = sk_rcu_dereference(t->s->gp);
	sk_stress_check(t, p, 1);
	if ((r & 7) == 0) {
		/* Nested section: still protected after the inner unlock. */
		sk_rcu_read_lock();
		q = sk_rcu_dereference(t->s->gp);
		sk_stress_check(t, q, 1);
		sk_rcu_read_unlock();
		sk_stress_check(t, q, 0);
	}
	for (k = 0; k < 3; k++) {
		sk_stress_spin(&t->rng, cfg->spin_in);
		sk_stress_check(t, p, 0);
	}
	/* Now and then, let the updater run while this section holds p. */
	if (((r >> 8) & 255) == 0) {
		sched_yield();
		sk_stress_check(t, p, 0);
	}
	sk_rcu_read_unlock();
	t->reads++;
}

static inline void *sk_stress_general_reader(void *arg)
{
	struct sk_stress_thread *t = arg;

	while (!sk_atomic_load_acquire(&t->s->stop)) {
		sk_stress_general_read(t);
		sk_stress_spin(&t->rng, t->s->cfg->spin_out);
	}
	return NULL;
}

/*
 * A QSBR reader: online all the time except for short offline spells; it
 * keeps every reference obtained since its last quiescent state and
 * re-checks them all at every read.
 */
static inline void sk_stress_qsbr_loop(struct sk_stress_thread *t,
				       unsigned long max)
{
	const struct sk_stress_config *cfg = t->s->cfg;
	struct sk_stress_obj *held[SK_STRESS_HOLD_MAX];
	unsigned int every = cfg->qs_every ? cfg->qs_every : 1;
	unsigned int nheld = 0, i;
	unsigned long n = 0;

	if (every > SK_STRESS_HOLD_MAX)
		every = SK_STRESS_HOLD_MAX;
	sk_rcu_thread_online();
	while (!sk_atomic_load_acquire(&t->s->stop) && n < max) {
		uint64_t r = sk_test_rand(&t->rng);
		struct sk_stress_obj *p;

		/* The QSBR flavor's section markers (empty unless SK_DEBUG). */
		sk_rcu_qsbr_read_lock();
		p = sk_rcu_dereference(t->s->gp);
		sk_stress_check(t, p, 1);
		held[nheld++] = p;
		sk_stress_spin(&t->rng, cfg->spin_in);
		for (i = 0; i < nheld; i++)
			sk_stress_check(t, held[i], 0);
		sk_rcu_qsbr_read_unlock();
		t->reads++;
		if (++n % every == 0 || nheld == SK_STRESS_HOLD_MAX) {
			nheld = 0;
			sk_rcu_quiescent_state();
		}
		if ((r & 63) == 0) {
			/* Offline: hold nothing, read with read_lock. */
			nheld = 0;
			sk_rcu_thread_offline();
			if ((r & 0x1c0) == 0)
				sched_yield();
			sk_stress_general_read(t);
			sk_rcu_thread_online();
		} else if ((r & 0x3ff00) == 0) {
			/* Preempted while online, holding references. */
			sched_yield();
			for (i = 0; i < nheld; i++)
				sk_stress_check(t, held[i], 0);
		}
		sk_stress_spin(&t->rng, cfg->spin_out);
	}
	sk_rcu_thread_offline();
}

static inline void *sk_stress_qsbr_reader(void *arg)
{
	struct sk_stress_thread *t = arg;

	if ((t->rng & 1) && sk_rcu_register_thread() != 0)
		t->errors++;
	sk_stress_qsbr_loop(t, ~0UL);
	/* Explicit unregistration for half of them, thread exit for the rest. */
	if ((t->rng >> 1) & 1)
		sk_rcu_unregister_thread();
	return NULL;
}

static inline void *sk_stress_updater(void *arg)
{
	struct sk_stress_thread *t = arg;
	struct sk_stress *s = t->s;
	const struct sk_stress_config *cfg = s->cfg;
	void (*gp_wait)(void) = cfg->gp_wait ? cfg->gp_wait
					     : sk_synchronize_rcu;
	unsigned long qlen = cfg->broken ? cfg->updates : cfg->quarantine;
	struct sk_stress_obj **q = calloc(qlen ? qlen : 1, sizeof(*q));
	unsigned long i, qhead = 0, j;

	if (!q) {
		t->errors++;
		return NULL;
	}
	/* What is left in the quarantine is freed once the readers stopped. */
	t->q = q;
	t->qlen = qlen;
	for (i = 0; i < cfg->updates; i++) {
		struct sk_stress_obj *n = malloc(sizeof(*n)), *old;

		if (!n) {
			t->errors++;
			break;
		}
		pthread_mutex_lock(&s->lock);
		n->magic = SK_STRESS_MAGIC;
		n->seq = ++s->seq;
		for (j = 0; j < SK_STRESS_PAYLOAD; j++)
			n->payload[j] = sk_stress_payload(n->seq, (unsigned)j);
		old = s->gp;
		/* Initialization before publication; pairs with dereference. */
		sk_rcu_assign_pointer(s->gp, n);
		pthread_mutex_unlock(&s->lock);

		gp_wait();

		SK_STRESS_STORE(cfg->broken, old->magic, SK_STRESS_POISON);
		SK_STRESS_STORE(cfg->broken, old->seq, SK_STRESS_POISON);
		for (j = 0; j < SK_STRESS_PAYLOAD; j++)
			SK_STRESS_STORE(cfg->broken, old->payload[j],
					SK_STRESS_POISON);
		if (qlen == 0) {
			free(old);
		} else {
			free(q[qhead]); /* poisoned qlen updates ago */
			q[qhead] = old;
			qhead = (qhead + 1) % qlen;
		}
		t->updates++;
		if ((sk_test_rand(&t->rng) & 31) == 0)
			sched_yield();
	}
	return NULL;
}

static inline void *sk_stress_syncer(void *arg)
{
	struct sk_stress_thread *t = arg;
	const struct sk_stress_config *cfg = t->s->cfg;
	void (*gp_wait)(void) = cfg->gp_wait ? cfg->gp_wait
					     : sk_synchronize_rcu;
	unsigned long i;

	for (i = 0; i < cfg->sync_calls; i++) {
		gp_wait();
		t->calls++;
	}
	return NULL;
}

/* A short-lived reader: registers one of four ways, reads, exits. */
static inline void *sk_stress_ephemeral(void *arg)
{
	struct sk_stress_thread *t = arg;
	unsigned int i, n = 1 + (unsigned)(sk_test_rand(&t->rng) % 8);

	switch (t->rng % 4) {
	case 0: /* registered implicitly by the first read_lock */
		for (i = 0; i < n; i++)
			sk_stress_general_read(t);
		break;
	case 1: /* explicit register and unregister */
		if (sk_rcu_register_thread() != 0)
			t->errors++;
		for (i = 0; i < n; i++)
			sk_stress_general_read(t);
		if (sk_rcu_unregister_thread() != 0)
			t->errors++;
		break;
	case 2: /* QSBR, exits online: the exit handler puts it offline */
		sk_rcu_thread_online();
		for (i = 0; i < n; i++) {
			sk_stress_check(t, sk_rcu_dereference(t->s->gp), 1);
			t->reads++;
			sk_rcu_quiescent_state();
		}
		break;
	default: /* explicit register, exit without unregistering */
		if (sk_rcu_register_thread() != 0)
			t->errors++;
		for (i = 0; i < n; i++)
			sk_stress_general_read(t);
		break;
	}
	return NULL;
}

static inline void *sk_stress_churner(void *arg)
{
	struct sk_stress_thread *t = arg;
	const struct sk_stress_config *cfg = t->s->cfg;
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, cfg->churn_stack ? cfg->churn_stack
							  : 128 * 1024);
	while (!sk_atomic_load_acquire(&t->s->stop)) {
		struct sk_stress_thread e;

		memset(&e, 0, sizeof(e));
		e.s = t->s;
		e.rng = sk_test_rand(&t->rng) | 1;
		if (pthread_create(&e.tid, &attr, sk_stress_ephemeral, &e)) {
			t->errors++;
			break;
		}
		pthread_join(e.tid, NULL);
		t->reads += e.reads;
		t->checks += e.checks;
		t->violations += e.violations;
		t->errors += e.errors;
		t->churned++;
	}
	pthread_attr_destroy(&attr);
	return NULL;
}

static inline int sk_stress_start(struct sk_stress *s,
				  struct sk_stress_thread *t, unsigned long idx,
				  void *(*fn)(void *))
{
	int rc;

	t->s = s;
	t->rng = (s->cfg->seed + 1) * 0x9e3779b97f4a7c15ull + idx * 7919 + 1;
	sk_test_rand(&t->rng);
	rc = pthread_create(&t->tid, NULL, fn, t);
	if (rc != 0) {
		fprintf(stderr, "stress: pthread_create: %s\n", strerror(rc));
		s->res->errors++;
		return rc;
	}
	t->started = 1;
	return 0;
}

static inline void sk_stress_join(struct sk_stress *s,
				  struct sk_stress_thread *t)
{
	struct sk_stress_result *res = s->res;

	if (!t->started)
		return;
	pthread_join(t->tid, NULL);
	res->reads += t->reads;
	res->checks += t->checks;
	res->violations += t->violations;
	res->updates += t->updates;
	res->sync_calls += t->calls;
	res->churned += t->churned;
	res->errors += t->errors;
}

/*
 * Run the stress described by cfg until every updater and sync thread has
 * finished; fill *res.  Returns 0, or -ENOMEM / -EAGAIN when setup failed
 * (res->errors is then nonzero too).
 */
static inline int sk_stress_run(const struct sk_stress_config *cfg,
				struct sk_stress_result *res)
{
	unsigned long nr = cfg->general_readers + cfg->qsbr_readers;
	unsigned long nw = cfg->updaters + cfg->sync_threads;
	unsigned long nt = nr + nw + cfg->churn_threads, i, k = 0;
	struct sk_stress_thread *t = calloc(nt ? nt : 1, sizeof(*t));
	struct sk_stress s;
	unsigned int j;

	memset(res, 0, sizeof(*res));
	if (!t)
		return -ENOMEM;
	memset(&s, 0, sizeof(s));
	s.cfg = cfg;
	s.res = res;
	pthread_mutex_init(&s.lock, NULL);
	pthread_mutex_init(&s.res_lock, NULL);
	s.gp = malloc(sizeof(*s.gp));
	if (!s.gp) {
		free(t);
		return -ENOMEM;
	}
	s.gp->magic = SK_STRESS_MAGIC;
	s.gp->seq = s.seq = 1;
	for (j = 0; j < SK_STRESS_PAYLOAD; j++)
		s.gp->payload[j] = sk_stress_payload(1, j);

	for (i = 0; i < cfg->general_readers; i++, k++)
		sk_stress_start(&s, &t[k], k, sk_stress_general_reader);
	for (i = 0; i < cfg->qsbr_readers; i++, k++)
		sk_stress_start(&s, &t[k], k, sk_stress_qsbr_reader);
	for (i = 0; i < cfg->churn_threads; i++, k++)
		sk_stress_start(&s, &t[k], k, sk_stress_churner);
	for (i = 0; i < cfg->updaters; i++, k++)
		sk_stress_start(&s, &t[k], k, sk_stress_updater);
	for (i = 0; i < cfg->sync_threads; i++, k++)
		sk_stress_start(&s, &t[k], k, sk_stress_syncer);

	/* Updaters and sync threads finish by themselves; then stop readers. */
	for (i = nr + cfg->churn_threads; i < nt; i++)
		sk_stress_join(&s, &t[i]);
	sk_atomic_store_release(&s.stop, 1);
	for (i = 0; i < nr + cfg->churn_threads; i++)
		sk_stress_join(&s, &t[i]);

	for (i = 0; i < nt; i++) {
		unsigned long j2;

		for (j2 = 0; j2 < t[i].qlen; j2++)
			free(t[i].q[j2]);
		free(t[i].q);
	}
	free(s.gp);
	free(t);
	pthread_mutex_destroy(&s.lock);
	pthread_mutex_destroy(&s.res_lock);
	return res->errors ? -EAGAIN : 0;
}

/* One line for the log. */
static inline void sk_stress_print(const struct sk_stress_config *cfg,
				   const struct sk_stress_result *res)
{
	fprintf(stderr,
		"  %s: %lu updates, %lu reads, %lu checks, %lu violations, "
		"%lu sync calls, %lu churned threads, %lu errors%s%s\n",
		cfg->name ? cfg->name : "stress", res->updates, res->reads,
		res->checks, res->violations, res->sync_calls, res->churned,
		res->errors, res->first[0] ? "; first: " : "", res->first);
}

#endif /* SK_RCU_STRESS_H */
