/* SPDX-License-Identifier: MIT */
/* sk_test_elide.h: the elided locks behind one ops table, the stress. */
#define _GNU_SOURCE
#include <sched.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "sk_test_elide.h"

#define EL_AT(m) offsetof(struct elide_lock, m)

/* The exclusive locks; the rwlock's read side is elide_read_ops. */
const struct elide_ops elide_ops[3] = {
	{ "mutex", &sk_tort_lock_elided_mutex, EL_AT(m), 0 },
	{ "spinlock", &sk_tort_lock_elided_spinlock, EL_AT(s), 0 },
	{ "rwlock", &sk_tort_lock_elided_rwlock, EL_AT(rw), 0 },
};
const struct elide_ops elide_read_ops = { "rwlock-read",
					  &sk_tort_lock_elided_rwlock,
					  EL_AT(rw), 1 };

static void *el_of(const struct elide_ops *o, struct elide_lock *l)
{
	return (char *)l + o->off;
}

void el_lock(const struct elide_ops *o, struct elide_lock *l)
{
	if (o->read)
		(void)o->ops->read_lock(el_of(o, l));
	else
		o->ops->write_lock(el_of(o, l));
}

void el_unlock(const struct elide_ops *o, struct elide_lock *l)
{
	if (o->read)
		(void)o->ops->read_unlock(el_of(o, l), 0);
	else
		o->ops->write_unlock(el_of(o, l));
}

int el_trylock(const struct elide_ops *o, struct elide_lock *l)
{
	return o->read ? o->ops->read_trylock(el_of(o, l))
		       : o->ops->write_trylock(el_of(o, l));
}

void el_attach(const struct elide_ops *o, struct elide_lock *l,
	       struct sk_elide_stats *s)
{
	o->ops->attach_stats(el_of(o, l), s);
}

void elide_lock_init(struct elide_lock *l)
{
	int k;

	for (k = 0; k < ELIDE_NOPS; k++)
		(void)elide_ops[k].ops->init(el_of(&elide_ops[k], l));
}

/* ---- hang detection ------------------------------------------------------- */

void elide_deadline(const char *what, unsigned int s)
{
	sk_test_deadline(what, s);
}

/* ---- the stress ---------------------------------------------------------- */

void elide_stress(const struct elide_ops *o, struct elide_lock *l,
		  unsigned long iters, int writers, int readers,
		  enum elide_twin twin, struct sk_lks_result *res)
{
	struct sk_lks_cfg cfg = {
		.ops = o->ops, .lock = el_of(o, l), .label = o->name,
		.writers = writers, .readers = o->ops->read_lock ? readers : 0,
		.iters = iters, .max_s = 120, .nolock = twin == ELIDE_NOLOCK,
		.busted = twin != ELIDE_LOCKED,
		.stop_on_error = twin != ELIDE_LOCKED,
		.print_errors = twin != ELIDE_LOCKED ? 3 : 10,
		.seed = sk_t_seed,
	};

	SK_CHECK_EQ(sk_lks_run(&cfg, res), 0);
	fprintf(stderr, "    %s: %lu writes, shadow %lu (%lu lost), %lu reads, "
			"%lu overlaps, %lu torn\n",
		o->name, res->writes, res->shadow, res->lost, res->reads,
		res->overlaps, res->torn);
}
