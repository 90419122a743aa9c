/* SPDX-License-Identifier: MIT */
/*
 * valgrind_dlmod.c - a plugin that uses RCU callbacks, loaded and unloaded
 * with dlopen()/dlclose() by valgrind_dlclose.c (see tests/valgrind.cmake).
 * It links the shared libscalekit, which the main program does not, so
 * dlclose() of the plugin drops the last reference to the library while
 * the library's callback worker thread lives on.
 */
#include <stddef.h>
#include <stdlib.h>

#include "scalekit/rcu.h"

struct plug_obj {
	long v;
	struct sk_rcu_head rcu;
};

static int plug_ran;

static void plug_cb(struct sk_rcu_head *h)
{
	(void)h;
	__atomic_fetch_add(&plug_ran, 1, __ATOMIC_RELAXED);
}

/*
 * Queue callbacks that run plugin code and wait for them (they must have
 * run before the plugin is unloaded), then queue SK_FREE_RCU() objects,
 * which run only library code, and return with them pending: the worker
 * runs them after dlclose().  Returns 0 on success.
 */
__attribute__((visibility("default"))) int sk_test_plugin_run(void);
int sk_test_plugin_run(void)
{
	static struct sk_rcu_head heads[8];
	struct plug_obj *o;
	int i;

	for (i = 0; i < 8; i++)
		if (sk_call_rcu(&heads[i], plug_cb) != 0)
			return 1;
	sk_rcu_read_lock();
	sk_rcu_read_unlock();
	sk_rcu_barrier();
	if (__atomic_load_n(&plug_ran, __ATOMIC_RELAXED) != 8)
		return 2;
	for (i = 0; i < 1000; i++) {
		o = calloc(1, sizeof(*o));
		if (!o || SK_FREE_RCU(o, rcu) != 0) {
			free(o);
			return 3;
		}
	}
	return 0;
}
