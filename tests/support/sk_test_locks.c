/* SPDX-License-Identifier: MIT */
/* sk_test_locks.h: the lock stress and its checks. */
#define _GNU_SOURCE
#include "sk_test_locks.h"

void lk_stress(const struct lk_spec *spec, int busted,
	       struct sk_lks_result *res)
{
	struct sk_lks_cfg cfg = {
		.ops = spec->ops, .lock = spec->lock, .try = spec->try,
		.writers = spec->writers, .readers = spec->readers,
		.iters = spec->writes_each, .max_s = spec->max_s,
		.busted = busted, .stop_on_error = busted,
		.print_errors = busted ? 3 : 10, .seed = sk_t_seed,
	};

	SK_CHECK_EQ(sk_lks_run(&cfg, res), 0);
	fprintf(stderr, "    %lu writes, shadow %lu, %lu reads (%lu retries), "
			"%lu overlaps, %lu torn\n",
		res->writes, res->shadow, res->reads, res->retries,
		res->overlaps, res->torn);
}

void lk_check_clean(struct lk_spec spec)
{
	struct sk_lks_result r;

	lk_stress(&spec, 0, &r);
	SK_CHECK_EQ(r.writes, (unsigned long)spec.writers * spec.writes_each);
	SK_CHECK_EQ(r.shadow, r.writes);
	SK_CHECK_EQ(r.overlaps, 0);
	SK_CHECK_EQ(r.torn, 0);
	SK_CHECK_EQ(r.errors, 0);
	SK_CHECK_GT(r.reads, 0);
}

void lk_check_twin_caught(struct lk_spec spec)
{
	struct sk_lks_result r;

	spec.writes_each = 1000000;
	spec.max_s = 20;
	lk_stress(&spec, 1, &r);
	SK_CHECK_GT(r.overlaps + r.torn, 0);
}

void lk_check_aborts(void (*fn)(void), const char *m1, const char *m2)
{
	sk_test_expect_abort(fn, 30, m1, m2);
}

void lk_arm_alarm(unsigned s)
{
	sk_test_deadline("the lock test (a lock wait that never ended?)", s);
}
