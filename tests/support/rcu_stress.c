/* SPDX-License-Identifier: MIT */
/* rcu_stress.h: the RCU poison stress checker. */
#define _GNU_SOURCE
#include "rcu_stress.h"
#include "sk_test_util.h"

unsigned long sk_stress_payload(unsigned long seq, unsigned i)
{
	/* The index in the top byte, whatever the width of unsigned long. */
	return (seq * (unsigned long)0x9e3779b97f4a7c15ULL) ^
	       ((unsigned long)i << (8 * sizeof(unsigned long) - 8)) ^ i;
}

void sk_stress_spin(uint64_t *rng, unsigned int max)
{
	unsigned long n;

	if (!max)
		return;
	n = sk_test_rand(rng) % (max + 1);
	while (n--)
		sk_cpu_relax();
}

void sk_stress_violation(struct sk_stress_thread *t,
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

unsigned long sk_stress_check(struct sk_stress_thread *t,
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

const struct sk_tort_ops *sk_stress_ops(const struct sk_stress *s)
{
	return s->cfg->ops ? s->cfg->ops : &sk_tort_mixed_ops;
}

/*
 * A general section; paused: the thread is a paused QSBR reader, whose
 * readlock() marks a section only while it is online: its sections are
 * readlock_nest()'s, full ones (see torture_ops.h).
 */
static void general_read(struct sk_stress_thread *t, int paused)
{
	const struct sk_tort_ops *ops = sk_stress_ops(t->s);
	void *ctx = t->s->ctx;
	const struct sk_stress_config *cfg = t->s->cfg;
	struct sk_stress_obj *p, *q;
	uint64_t r = sk_test_rand(&t->rng);
	int idx, idx2, k;

	idx = paused ? ops->readlock_nest(ctx) : ops->readlock(ctx);
	p = ops->deref((void *const *)&t->s->gp);
	sk_stress_check(t, p, 1);
	if ((r & 7) == 0) {
		/* Nested section: still protected after the inner unlock. */
		idx2 = ops->readlock_nest(ctx);
		q = ops->deref((void *const *)&t->s->gp);
		sk_stress_check(t, q, 1);
		ops->readunlock_nest(ctx, idx2);
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
	if (paused)
		ops->readunlock_nest(ctx, idx);
	else
		ops->readunlock(ctx, idx);
	/* Release: pairs with stress_start_all()'s acquire (a start gate). */
	if (t->reads++ == 0)
		__atomic_fetch_add(&t->s->readers_in, 1, __ATOMIC_RELEASE);
}

void sk_stress_general_read(struct sk_stress_thread *t)
{
	general_read(t, 0);
}

static void general_loop(struct sk_stress_thread *t)
{
	while (!sk_atomic_load_acquire(&t->s->stop)) {
		general_read(t, 0);
		sk_stress_spin(&t->rng, t->s->cfg->spin_out);
	}
}

void *sk_stress_general_reader(void *arg)
{
	struct sk_stress_thread *t = arg;
	const struct sk_tort_ops *ops = sk_stress_ops(t->s);

	/* Even hints: general readers (one in two registers explicitly). */
	if (ops->reader_start)
		ops->reader_start(2 * t->idx);
	general_loop(t);
	if (ops->reader_stop)
		ops->reader_stop();
	return NULL;
}

/* A QSBR reader's section: it holds p (and every earlier one) after it. */
static struct sk_stress_obj *qsbr_read(struct sk_stress_thread *t,
				       struct sk_stress_obj **held,
				       unsigned int nheld)
{
	const struct sk_tort_ops *ops = sk_stress_ops(t->s);
	int idx = ops->readlock(t->s->ctx); /* the QSBR flavor's markers */
	struct sk_stress_obj *p = ops->deref((void *const *)&t->s->gp);
	unsigned int i;

	sk_stress_check(t, p, 1);
	sk_stress_spin(&t->rng, t->s->cfg->spin_in);
	for (i = 0; i < nheld; i++)
		sk_stress_check(t, held[i], 0);
	ops->readunlock(t->s->ctx, idx);
	/* Release: pairs with stress_start_all()'s acquire (a start gate). */
	if (t->reads++ == 0)
		__atomic_fetch_add(&t->s->readers_in, 1, __ATOMIC_RELEASE);
	return p;
}

void sk_stress_qsbr_loop(struct sk_stress_thread *t,
			 unsigned long max)
{
	const struct sk_tort_ops *ops = sk_stress_ops(t->s);
	const struct sk_stress_config *cfg = t->s->cfg;
	struct sk_stress_obj *held[SK_STRESS_HOLD_MAX];
	unsigned int every = cfg->qs_every ? cfg->qs_every : 1;
	unsigned int nheld = 0, i;
	unsigned long n = 0;

	if (every > SK_STRESS_HOLD_MAX)
		every = SK_STRESS_HOLD_MAX;
	while (!sk_atomic_load_acquire(&t->s->stop) && n < max) {
		uint64_t r = sk_test_rand(&t->rng);

		held[nheld] = qsbr_read(t, held, nheld);
		nheld++;
		if (++n % every == 0 || nheld == SK_STRESS_HOLD_MAX) {
			nheld = 0;
			ops->quiescent();
		}
		if ((r & 63) == 0) {
			/* Paused (offline): hold nothing, read in a section. */
			nheld = 0;
			ops->reader_pause();
			if ((r & 0x1c0) == 0)
				sched_yield();
			general_read(t, 1);
			ops->reader_resume();
		} else if ((r & 0x3ff00) == 0) {
			/* Preempted while online, holding references. */
			sched_yield();
			for (i = 0; i < nheld; i++)
				sk_stress_check(t, held[i], 0);
		}
		sk_stress_spin(&t->rng, cfg->spin_out);
	}
}

void *sk_stress_qsbr_reader(void *arg)
{
	struct sk_stress_thread *t = arg;
	const struct sk_tort_ops *ops = sk_stress_ops(t->s);

	/*
	 * Odd hints: QSBR readers of the mixed ops, leaving in the three
	 * ways reader_stop() takes by turns.  An ops without QSBR readers
	 * makes this a general reader.
	 */
	if (ops->reader_start && ops->reader_start(2 * t->idx + 1))
		sk_stress_qsbr_loop(t, ~0UL);
	else
		general_loop(t);
	if (ops->reader_stop)
		ops->reader_stop();
	return NULL;
}

/* Updaters and sync threads: QSBR updaters of the ops go online. */
static void updater_begin(const struct sk_tort_ops *ops)
{
	if (ops->updater_start)
		ops->updater_start();
}

static void updater_end(const struct sk_tort_ops *ops)
{
	if (ops->updater_stop)
		ops->updater_stop();
}

/* Wait for a grace period (then quiescent, for a QSBR updater). */
static void updater_wait(const struct sk_tort_ops *ops, void *ctx)
{
	ops->sync(ctx);
	if (ops->updater_quiescent)
		ops->updater_quiescent();
}

/* Replace the object by a new one; returns the old one (NULL: ENOMEM). */
static struct sk_stress_obj *replace(struct sk_stress *s)
{
	struct sk_stress_obj *n = malloc(sizeof(*n)), *old;

	if (!n)
		return NULL;
	pthread_mutex_lock(&s->lock);
	sk_stress_obj_init(n, ++s->seq);
	old = s->gp;
	/* Initialization before publication; pairs with dereference. */
	sk_rcu_assign_pointer(s->gp, n);
	pthread_mutex_unlock(&s->lock);
	return old;
}

/*
 * More updates wanted: the first cfg->updates, then (cfg->min_churned)
 * until that many churn threads have run or a churner gave up.
 */
static int updater_more(const struct sk_stress *s, unsigned long i)
{
	const struct sk_stress_config *cfg = s->cfg;

	if (i < cfg->updates)
		return 1;
	/* Relaxed: a count to stop at, no data is read through it. */
	return __atomic_load_n(&s->churned, __ATOMIC_RELAXED) <
		       cfg->min_churned &&
	       !__atomic_load_n(&s->churn_failed, __ATOMIC_RELAXED);
}

/*
 * Put the poisoned old in t's quarantine.  A correct run frees what was
 * poisoned cfg->quarantine updates ago; a broken one keeps everything
 * until the end of the run (the quarantine grows past cfg->updates when
 * min_churned asks for more updates).  Returns -1 when it cannot grow.
 */
static int quarantine_put(struct sk_stress_thread *t, const int broken,
			  unsigned long *qhead, struct sk_stress_obj *old)
{
	if (t->qlen == 0) {
		free(old);
		return 0;
	}
	if (broken && *qhead == t->qlen) {
		struct sk_stress_obj **q = realloc(t->q, 2 * t->qlen *
							 sizeof(*q));

		if (!q)
			return -1;
		memset(q + t->qlen, 0, t->qlen * sizeof(*q));
		t->q = q;
		t->qlen *= 2;
	}
	free(t->q[*qhead]); /* poisoned qlen updates ago (never if broken) */
	t->q[*qhead] = old;
	*qhead = broken ? *qhead + 1 : (*qhead + 1) % t->qlen;
	return 0;
}

void *sk_stress_updater(void *arg)
{
	struct sk_stress_thread *t = arg;
	struct sk_stress *s = t->s;
	const struct sk_stress_config *cfg = s->cfg;
	const struct sk_tort_ops *ops = sk_stress_ops(s);
	unsigned long qlen = cfg->broken ? cfg->updates : cfg->quarantine;
	unsigned long i, qhead = 0;

	/* What is left in the quarantine is freed once the readers stopped. */
	t->q = calloc(qlen ? qlen : 1, sizeof(*t->q));
	if (!t->q) {
		t->errors++;
		return NULL;
	}
	t->qlen = qlen;
	updater_begin(ops);
	for (i = 0; updater_more(s, i); i++) {
		struct sk_stress_obj *old = replace(s);

		if (!old) {
			t->errors++;
			break;
		}
		/* Readers that may hold old end before it is poisoned. */
		updater_wait(ops, s->ctx);

		sk_stress_obj_poison(old, cfg->broken);
		if (quarantine_put(t, cfg->broken, &qhead, old)) {
			free(old); /* poisoned: no correct reader holds it */
			t->errors++;
			break;
		}
		t->updates++;
		if ((sk_test_rand(&t->rng) & 31) == 0)
			sched_yield();
	}
	updater_end(ops);
	return NULL;
}

void *sk_stress_syncer(void *arg)
{
	struct sk_stress_thread *t = arg;
	const struct sk_tort_ops *ops = sk_stress_ops(t->s);
	unsigned long i;

	updater_begin(ops);
	for (i = 0; i < t->s->cfg->sync_calls; i++) {
		updater_wait(ops, t->s->ctx);
		t->calls++;
	}
	updater_end(ops);
	return NULL;
}

/*
 * With the mixed ops, kind k: 0 general registered explicitly, 2 general
 * registered by its first section, 4 explicitly registered and exiting
 * without reader_stop() (so without unregistering); 1, 3, 5 QSBR, leaving
 * offline then unregistered, unregistered while online, and exiting
 * online (the library puts it offline).
 */
void *sk_stress_ephemeral(void *arg)
{
	struct sk_stress_thread *t = arg;
	const struct sk_tort_ops *ops = sk_stress_ops(t->s);
	unsigned int i, n = 1 + (unsigned)(sk_test_rand(&t->rng) % 8);
	unsigned long kind = (unsigned long)(t->rng % 6);
	int qsbr = ops->reader_start ? ops->reader_start(kind) : 0;

	for (i = 0; i < n; i++) {
		if (qsbr) {
			qsbr_read(t, NULL, 0);
			ops->quiescent();
		} else {
			general_read(t, 0);
		}
	}
	if (kind != 4 && ops->reader_stop)
		ops->reader_stop();
	return NULL;
}

void *sk_stress_churner(void *arg)
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
			/* Relaxed: only stops updater_more()'s wait. */
			__atomic_store_n(&t->s->churn_failed, 1,
					 __ATOMIC_RELAXED);
			break;
		}
		pthread_join(e.tid, NULL);
		/* Relaxed: a count for updater_more(), no data behind it. */
		__atomic_fetch_add(&t->s->churned, 1, __ATOMIC_RELAXED);
		t->reads += e.reads;
		t->checks += e.checks;
		t->violations += e.violations;
		t->errors += e.errors;
		t->churned++;
	}
	pthread_attr_destroy(&attr);
	return NULL;
}

int sk_stress_start(struct sk_stress *s,
		    struct sk_stress_thread *t, unsigned long idx,
		    void *(*fn)(void *))
{
	int rc;

	t->s = s;
	t->idx = idx;
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

void sk_stress_join(struct sk_stress *s,
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

/* Start the threads of cfg in t: readers, churners, updaters, syncers. */
static void stress_start_all(struct sk_stress *s, struct sk_stress_thread *t)
{
	const struct sk_stress_config *cfg = s->cfg;
	unsigned long i, k = 0;
	int running = 0;

	for (i = 0; i < cfg->general_readers; i++, k++)
		running += !sk_stress_start(s, &t[k], k,
					    sk_stress_general_reader);
	for (i = 0; i < cfg->qsbr_readers; i++, k++)
		running += !sk_stress_start(s, &t[k], k,
					    sk_stress_qsbr_reader);
	/*
	 * Updates start once every reader has read: on 2 loaded CPUs a short
	 * run could otherwise end before a reader first ran (and check nothing).
	 */
	/* Acquire: pairs with the readers' release after their first read. */
	while (__atomic_load_n(&s->readers_in, __ATOMIC_ACQUIRE) < running)
		sched_yield();
	for (i = 0; i < cfg->churn_threads; i++, k++)
		sk_stress_start(s, &t[k], k, sk_stress_churner);
	for (i = 0; i < cfg->updaters; i++, k++)
		sk_stress_start(s, &t[k], k, sk_stress_updater);
	for (i = 0; i < cfg->sync_threads; i++, k++)
		sk_stress_start(s, &t[k], k, sk_stress_syncer);
}

/* Free the quarantines of the nt threads t, then t. */
static void stress_free_threads(struct sk_stress_thread *t, unsigned long nt)
{
	unsigned long i, j;

	for (i = 0; i < nt; i++) {
		for (j = 0; j < t[i].qlen; j++)
			free(t[i].q[j]);
		free(t[i].q);
	}
	free(t);
}

int sk_stress_run(const struct sk_stress_config *cfg,
		  struct sk_stress_result *res)
{
	const struct sk_tort_ops *ops = cfg->ops ? cfg->ops : &sk_tort_mixed_ops;
	unsigned long nr = cfg->general_readers + cfg->qsbr_readers;
	unsigned long nw = cfg->updaters + cfg->sync_threads;
	unsigned long nt = nr + nw + cfg->churn_threads, i;
	struct sk_stress_thread *t = calloc(nt ? nt : 1, sizeof(*t));
	struct sk_stress s;
	int err;

	memset(res, 0, sizeof(*res));
	memset(&s, 0, sizeof(s));
	s.cfg = cfg;
	s.res = res;
	s.gp = malloc(sizeof(*s.gp));
	err = !t || !s.gp ? -ENOMEM : ops->init ? ops->init(&s.ctx) : 0;
	if (err) {
		res->errors++;
		free(s.gp);
		free(t);
		return err;
	}
	pthread_mutex_init(&s.lock, NULL);
	pthread_mutex_init(&s.res_lock, NULL);
	sk_stress_obj_init(s.gp, s.seq = 1);
	stress_start_all(&s, t);

	/* Updaters and sync threads finish by themselves; then stop readers. */
	for (i = nr + cfg->churn_threads; i < nt; i++)
		sk_stress_join(&s, &t[i]);
	sk_atomic_store_release(&s.stop, 1);
	for (i = 0; i < nr + cfg->churn_threads; i++)
		sk_stress_join(&s, &t[i]);

	/* Waits for the instance's callbacks; a busy one is an error. */
	if (ops->cleanup && ops->cleanup(s.ctx) != 0)
		res->errors++;
	stress_free_threads(t, nt);
	free(s.gp);
	pthread_mutex_destroy(&s.lock);
	pthread_mutex_destroy(&s.res_lock);
	return res->errors ? -EAGAIN : 0;
}

void sk_stress_print(const struct sk_stress_config *cfg,
		     const struct sk_stress_result *res)
{
	fprintf(stderr,
		"  %s: %lu updates, %lu reads, %lu checks, %lu violations, "
		"%lu sync calls, %lu churned threads, %lu errors%s%s\n",
		cfg->name ? cfg->name : "stress", res->updates, res->reads,
		res->checks, res->violations, res->sync_calls, res->churned,
		res->errors, res->first[0] ? "; first: " : "", res->first);
}

void sk_stress_obj_init(struct sk_stress_obj *o, unsigned long seq)
{
	unsigned int j;

	o->magic = SK_STRESS_MAGIC;
	o->seq = seq;
	for (j = 0; j < SK_STRESS_PAYLOAD; j++)
		o->payload[j] = sk_stress_payload(seq, j);
}

void sk_stress_obj_poison(struct sk_stress_obj *o, int broken)
{
	unsigned int j;

	SK_STRESS_STORE(broken, o->magic, SK_STRESS_POISON);
	SK_STRESS_STORE(broken, o->seq, SK_STRESS_POISON);
	for (j = 0; j < SK_STRESS_PAYLOAD; j++)
		SK_STRESS_STORE(broken, o->payload[j], SK_STRESS_POISON);
}
