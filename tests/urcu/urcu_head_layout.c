/* SPDX-License-Identifier: MIT */
/*
 * tests/urcu/urcu_head_layout.c - struct rcu_head of this layer has
 * liburcu's layout: two pointer-sized words, the link first and func
 * second.  Checked at compile time against liburcu's own queue node
 * (struct cds_wfcq_node of liburcu's <urcu/wfcqueue.h>, which the compat
 * directory does not have, so liburcu's is included) where liburcu's
 * headers are installed (URCU_TEST_HAVE_LIBURCU), and against the sizes
 * liburcu's header gives on every target (the -m32 and aarch64 builds
 * too).  liburcu's struct rcu_head is rebuilt here from its definition
 * ({ struct cds_wfcq_node next; void (*func)(struct rcu_head *); }).
 */
#include <urcu.h>
#include <urcu-call-rcu.h>

#include <stddef.h>
#include <stdio.h>

#ifdef URCU_TEST_HAVE_LIBURCU
#include <urcu/wfcqueue.h>

struct liburcu_rcu_head {
	struct cds_wfcq_node next;
	void (*func)(struct liburcu_rcu_head *head);
};
#else
struct liburcu_rcu_head {
	void *next;
	void (*func)(struct liburcu_rcu_head *head);
};
#endif

_Static_assert(sizeof(struct rcu_head) == sizeof(struct liburcu_rcu_head),
	       "struct rcu_head: liburcu's size");
_Static_assert(_Alignof(struct rcu_head) == _Alignof(struct liburcu_rcu_head),
	       "struct rcu_head: liburcu's alignment");
_Static_assert(offsetof(struct rcu_head, func) ==
		       offsetof(struct liburcu_rcu_head, func),
	       "struct rcu_head: func where liburcu has it");
_Static_assert(sizeof(struct rcu_head) == 2 * sizeof(void *),
	       "struct rcu_head: two words");

int main(void)
{
	printf("struct rcu_head: %zu bytes, func at %zu (liburcu: %zu, %zu)\n",
	       sizeof(struct rcu_head), offsetof(struct rcu_head, func),
	       sizeof(struct liburcu_rcu_head),
	       offsetof(struct liburcu_rcu_head, func));
	return 0;
}
