/* SPDX-License-Identifier: MIT */
/* sk_test_locks.h: the lock stress and its checks. */
#define _GNU_SOURCE
#include "sk_test_locks.h"

void lk_spin(unsigned n)
{
	while (n--)
		sk_cpu_relax();
}

void lk_write(const struct lk_spec *spec, struct lk_data *d)
{
	const struct sk_tort_lock_ops *o = spec->ops;
	unsigned long c;
	int k;

	if (!spec->try)
		o->write_lock(spec->lock);
	else
		while (o->write_trylock(spec->lock) != 0)
			sched_yield();
	c = d->counter + 1;
	for (k = 0; k < LK_WORDS; k++) {
		SK_WRITE_ONCE(d->w[k], c);
		lk_spin(20);
	}
	d->counter = c;
	o->write_unlock(spec->lock);
}

void lk_read(const struct lk_spec *spec, struct lk_data *d,
	     unsigned long *out)
{
	const struct sk_tort_lock_ops *o = spec->ops;
	unsigned int token = 0;
	int k;

	do {
		if (!spec->try)
			token = o->read_lock(spec->lock);
		else
			while (o->read_trylock(spec->lock) != 0)
				sched_yield();
		for (k = 0; k < LK_WORDS; k++) {
			out[k] = SK_READ_ONCE(d->w[k]);
			lk_spin(10);
		}
	} while (o->read_unlock(spec->lock, token));
}

void *lk_writer(void *arg)
{
	struct lk_run *r = arg;
	unsigned long i;

	for (i = 0; i < r->spec->writes_each && !LOAD(r->stop); i++) {
		lk_write(r->spec, &r->d);
		if (i % 64 == 0)
			sched_yield();
	}
	__atomic_fetch_sub(&r->writers_left, 1, __ATOMIC_RELEASE);
	return NULL;
}

void *lk_reader(void *arg)
{
	struct lk_run *r = arg;
	unsigned long out[LK_WORDS], reads = 0, torn = 0;
	double end = sk_test_now() + r->spec->max_s;
	int k;

	/* Read while writers write (and at least a few times). */
	while (!LOAD(r->stop) &&
	       (LOAD(r->writers_left) > 0 || reads < 1000)) {
		lk_read(r->spec, &r->d, out);
		reads++;
		for (k = 1; k < LK_WORDS; k++)
			if (out[k] != out[0]) {
				torn++;
				break;
			}
		if (torn && r->spec->stop_on_torn)
			STORE(r->stop, 1);
		if ((reads & 255) == 0 && sk_test_now() > end)
			break;
	}
	__atomic_fetch_add(&r->reads, reads, __ATOMIC_RELAXED);
	__atomic_fetch_add(&r->torn, torn, __ATOMIC_RELAXED);
	return NULL;
}

void lk_stress(const struct lk_spec *spec, struct lk_result *res)
{
	static struct lk_run r; /* large enough to keep off small stacks */
	pthread_t t[64];
	int i, n = 0;

	memset(&r, 0, sizeof(r));
	r.spec = spec;
	r.writers_left = spec->writers;
	for (i = 0; i < spec->writers; i++)
		sk_test_thread_start(&t[n++], lk_writer, &r);
	for (i = 0; i < spec->readers; i++)
		sk_test_thread_start(&t[n++], lk_reader, &r);
	for (i = 0; i < n; i++)
		sk_test_thread_join(t[i]);
	res->counter = r.d.counter;
	res->expected = (unsigned long)spec->writers * spec->writes_each;
	res->reads = r.reads;
	res->torn = r.torn;
	fprintf(stderr, "    counter %lu (expected %lu), %lu reads, %lu torn\n",
		res->counter, res->expected, res->reads, res->torn);
}

void lk_check_clean(struct lk_spec spec)
{
	struct lk_result r;

	lk_stress(&spec, &r);
	SK_CHECK_EQ(r.counter, r.expected);
	SK_CHECK_EQ(r.torn, 0);
	SK_CHECK_GT(r.reads, 0);
}

void lk_check_twin_caught(struct lk_spec spec)
{
	struct lk_result r;

	spec.writes_each = 1000000;
	spec.max_s = 20;
	spec.stop_on_torn = 1;
	lk_stress(&spec, &r);
	SK_CHECK_GT(r.torn, 0);
}

void lk_check_aborts(void (*fn)(void), const char *m1, const char *m2)
{
	sk_test_expect_abort(fn, 30, m1, m2);
}

void lk_arm_alarm(unsigned s)
{
	sk_test_deadline("the lock test (a lock wait that never ended?)", s);
}
