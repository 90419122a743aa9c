/* SPDX-License-Identifier: MIT */
/*
 * compat/urcu/call_rcu.c - liburcu's call_rcu(), rcu_barrier() and
 * call_rcu_data API on scalekit's callback workers (docs/urcu-compat.md).
 *
 * A struct call_rcu_data names one of three kinds of worker:
 *  - the default one: sk_call_rcu() (which itself uses the per-CPU
 *    workers while they run);
 *  - the per-CPU workers of sk_rcu_cb_workers_create(), which
 *    create_all_cpu_call_rcu_data() starts: sk_call_rcu() again, which
 *    picks the caller's CPU's queue itself;
 *  - a worker of its own, create_call_rcu_data(): sk_call_rcu_on().
 * call_rcu() routes as liburcu does: the thread's call_rcu_data if set,
 * else the one set for the caller's CPU, else the default.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <unistd.h>

#include "compat.h"

enum crd_kind {
	CRD_DEFAULT, /* sk_call_rcu() */
	CRD_PER_CPU, /* sk_call_rcu() with the per-CPU workers running */
	CRD_OWN,     /* sk_call_rcu_on(w) */
};

struct call_rcu_data {
	enum crd_kind kind; /* immutable */
	struct sk_rcu_cb_worker *w; /* CRD_OWN: the worker; immutable */
};

static struct call_rcu_data crd_default = { CRD_DEFAULT, NULL };
static struct call_rcu_data crd_per_cpu = { CRD_PER_CPU, NULL };

/* The calling thread's call_rcu_data (set_thread_call_rcu_data()). */
static __thread struct call_rcu_data *crd_thread;

/*
 * Per-CPU assignments (set_cpu_call_rcu_data()).  Guarded by: crd_lock
 * for writers; call_rcu() reads an entry inside a read section, and the
 * caller of set_cpu_call_rcu_data() waits for a grace period before it
 * frees what it replaced (liburcu's rule).  The array is allocated once,
 * on the first assignment, and never freed; crd_ncpu is set before
 * crd_cpu is published (release/acquire).
 */
static pthread_mutex_t crd_lock = PTHREAD_MUTEX_INITIALIZER;
static struct call_rcu_data **crd_cpu;
static int crd_ncpu;

static void trampoline(struct sk_rcu_head *h)
{
	struct rcu_head *head =
		(struct rcu_head *)((char *)h - offsetof(struct rcu_head, sk_head_));

	head->func(head);
}

static int queue_on(struct call_rcu_data *crdp, struct rcu_head *head)
{
	if (crdp->kind == CRD_OWN)
		return sk_call_rcu_on(crdp->w, &head->sk_head_, trampoline);
	return sk_call_rcu(&head->sk_head_, trampoline);
}

/* The CPU's assignment; NULL when none.  Inside a read section. */
static struct call_rcu_data *cpu_crdp(int cpu)
{
	/* URCU-C1: acquire pairs with URCU-C2: crd_ncpu is set. */
	struct call_rcu_data **a = sk_atomic_load_acquire(&crd_cpu);

	if (!a || cpu < 0 || cpu >= crd_ncpu)
		return NULL;
	/* URCU-C3: acquire pairs with URCU-C4: *crdp is initialised. */
	return sk_atomic_load_acquire(&a[cpu]);
}

static void call_rcu(struct rcu_head *head, void (*func)(struct rcu_head *))
{
	struct call_rcu_data *crdp = crd_thread;
	int err;

	if (!func)
		sk__urcu_die("call_rcu(%p, NULL): no callback", (void *)head);
	head->func = func;
	/* Relaxed: only whether assignments exist; cpu_crdp() orders. */
	if (crdp || !sk_atomic_load_relaxed(&crd_cpu)) {
		/* The thread's own (it outlives its use here), or the default. */
		err = queue_on(crdp ? crdp : &crd_default, head);
	} else {
		sk_rcu_read_lock();
		crdp = cpu_crdp(sched_getcpu());
		err = queue_on(crdp ? crdp : &crd_default, head);
		sk_rcu_read_unlock();
	}
	if (err == -EBUSY)
		sk__urcu_die("call_rcu(): rcu_head %p is queued already (a "
			     "second call_rcu() before its callback ran)",
			     (void *)head);
	if (err)
		sk__urcu_die("call_rcu(): error %d", err);
}
SK__URCU_ALIAS3(call_rcu, call_rcu);

/* Waits for the own workers too (sk_rcu_barrier()). */
static void barrier(void) { sk_rcu_barrier(); }
SK__URCU_ALIAS3(barrier, barrier);

static struct call_rcu_data *get_default(void) { return &crd_default; }
SK__URCU_ALIAS3(get_default_call_rcu_data, get_default);

static struct call_rcu_data *get_thread(void) { return crd_thread; }
SK__URCU_ALIAS3(get_thread_call_rcu_data, get_thread);

static void set_thread(struct call_rcu_data *crdp) { crd_thread = crdp; }
SK__URCU_ALIAS3(set_thread_call_rcu_data, set_thread);

static struct call_rcu_data *get_cpu(int cpu) { return cpu_crdp(cpu); }
SK__URCU_ALIAS3(get_cpu_call_rcu_data, get_cpu);

static struct call_rcu_data *get_current(void)
{
	struct call_rcu_data *crdp = crd_thread;

	if (!crdp)
		crdp = cpu_crdp(sched_getcpu());
	return crdp ? crdp : &crd_default;
}
SK__URCU_ALIAS3(get_call_rcu_data, get_current);

/* The array of assignments, allocated on first use.  Under crd_lock. */
static struct call_rcu_data **cpu_array(void)
{
	long n;

	if (crd_cpu)
		return crd_cpu;
	n = sysconf(_SC_NPROCESSORS_CONF);
	if (n < 1)
		n = 1;
	crd_ncpu = (int)n;
	/* URCU-C2: crd_ncpu before the array; pairs with URCU-C1. */
	sk_atomic_store_release(&crd_cpu,
				(struct call_rcu_data **)calloc((size_t)n,
								sizeof(*crd_cpu)));
	return crd_cpu;
}

static int set_cpu(int cpu, struct call_rcu_data *crdp)
{
	struct call_rcu_data **a;
	int err = 0;

	pthread_mutex_lock(&crd_lock);
	a = cpu_array();
	if (!a)
		err = ENOMEM;
	else if (cpu < 0 || cpu >= crd_ncpu)
		err = EINVAL;
	else if (crdp && a[cpu])
		err = EEXIST;
	else /* URCU-C4: *crdp before the pointer; pairs with URCU-C3. */
		sk_atomic_store_release(&a[cpu], crdp);
	pthread_mutex_unlock(&crd_lock);
	if (err)
		errno = err;
	return -err;
}
SK__URCU_ALIAS3(set_cpu_call_rcu_data, set_cpu);

static pthread_t get_thread_of(struct call_rcu_data *crdp)
{
	pthread_t t = 0;

	/* The default and per-CPU workers have no call that names them. */
	if (crdp && crdp->kind == CRD_OWN &&
	    sk_rcu_cb_worker_pthread(crdp->w, &t) != 0)
		t = 0; /* -ESRCH: a fork() child, where it has no thread */
	return t;
}
SK__URCU_ALIAS3(get_call_rcu_thread, get_thread_of);

static struct call_rcu_data *create(unsigned long flags, int cpu_affinity)
{
	struct call_rcu_data *crdp = malloc(sizeof(*crdp));

	(void)flags; /* URCU_CALL_RCU_RT: accepted, ignored */
	if (!crdp)
		return NULL;
	crdp->kind = CRD_OWN;
	crdp->w = sk_rcu_cb_worker_create(0, cpu_affinity < 0 ? -1 : cpu_affinity);
	if (!crdp->w) {
		free(crdp);
		return NULL; /* errno set by sk_rcu_cb_worker_create() */
	}
	return crdp;
}
SK__URCU_ALIAS3(create_call_rcu_data, create);

/* Pending callbacks go to the default worker (as liburcu). */
static void crdp_free(struct call_rcu_data *crdp)
{
	int was_online;

	if (!crdp || crdp->kind != CRD_OWN)
		return; /* the default and per-CPU ones are never freed */
	was_online = sk__urcu_wait_enter();
	if (sk_rcu_cb_worker_destroy(crdp->w) != 0)
		sk__urcu_die("call_rcu_data_free() called from a callback: it "
			     "would wait for itself");
	sk__urcu_wait_exit(was_online);
	free(crdp);
}
SK__URCU_ALIAS3(call_rcu_data_free, crdp_free);

static int create_all(unsigned long flags)
{
	struct call_rcu_data **a;
	int err, i;

	(void)flags; /* URCU_CALL_RCU_RT: accepted, ignored */
	err = sk_rcu_cb_workers_create(0);
	if (err && err != -EEXIST) {
		errno = -err;
		return err;
	}
	pthread_mutex_lock(&crd_lock);
	a = cpu_array();
	for (i = 0; a && i < crd_ncpu; i++)
		if (!a[i])
			sk_atomic_store_release(&a[i], &crd_per_cpu); /* URCU-C4 */
	pthread_mutex_unlock(&crd_lock);
	if (!a) {
		errno = ENOMEM;
		return -ENOMEM;
	}
	return 0;
}
SK__URCU_ALIAS3(create_all_cpu_call_rcu_data, create_all);

/*
 * Like liburcu: every CPU's assignment is cleared, and after a grace
 * period the workers are freed (the per-CPU ones stopped, own ones set
 * for a CPU destroyed, each once).
 */
static void free_all(void)
{
	struct call_rcu_data **a, **gone;
	int i, j, n = 0;

	pthread_mutex_lock(&crd_lock);
	a = crd_cpu;
	gone = a ? calloc((size_t)crd_ncpu, sizeof(*gone)) : NULL;
	for (i = 0; a && i < crd_ncpu; i++) {
		if (a[i] && a[i]->kind == CRD_OWN && gone) {
			for (j = 0; j < n && gone[j] != a[i]; j++)
				;
			if (j == n)
				gone[n++] = a[i];
		}
		sk_atomic_store_relaxed(&a[i], NULL); /* freed after a GP */
	}
	pthread_mutex_unlock(&crd_lock);
	sk_synchronize_rcu(); /* no call_rcu() uses them any more */
	for (i = 0; i < n; i++)
		crdp_free(gone[i]);
	free(gone);
	i = sk__urcu_wait_enter();
	(void)sk_rcu_cb_workers_destroy(); /* -ENOENT: none ran */
	sk__urcu_wait_exit(i);
}
SK__URCU_ALIAS3(free_all_cpu_call_rcu_data, free_all);
