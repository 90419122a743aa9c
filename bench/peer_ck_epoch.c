/* SPDX-License-Identifier: MIT */
/*
 * Adapter: Concurrency Kit's epoch reclamation (ck_epoch).  Each thread
 * owns a record; a read section is ck_epoch_begin()/ck_epoch_end() on it,
 * and ck_epoch_synchronize() waits for a grace period.  ck never frees a
 * record: an exiting thread unregisters it and the next thread recycles
 * it, so the record list is as long as the most threads ever alive.
 */
#include "bench.h"
#include "sweep.h"

#ifdef SK_HAVE_CK
#include <ck_epoch.h>
#include <ck_pr.h>
#include <stdlib.h>

static ck_epoch_t sk_bench_epoch;
static ck_epoch_record_t sk_bench_updater; /* the main thread's record */
static __thread ck_epoch_record_t *sk_bench_record;

static void ck_init(void)
{
	ck_epoch_init(&sk_bench_epoch);
	ck_epoch_register(&sk_bench_epoch, &sk_bench_updater, NULL);
}

static void ck_thread_init(void)
{
	ck_epoch_record_t *r = ck_epoch_recycle(&sk_bench_epoch, NULL);

	if (!r) {
		r = aligned_alloc(CK_MD_CACHELINE, sizeof(*r));
		if (!r) {
			fprintf(stderr,
				"scalekit bench: out of memory (ck record)\n");
			abort();
		}
		ck_epoch_register(&sk_bench_epoch, r, NULL);
	}
	sk_bench_record = r;
}

static void ck_thread_exit(void)
{
	ck_epoch_unregister(sk_bench_record);
	sk_bench_record = NULL;
}

static void ck_read_section(long n)
{
	/* The record is an argument of the API: users keep it at hand. */
	ck_epoch_record_t *r = sk_bench_record;

	SK_BENCH_READ_LOOP(
		n, ck_epoch_begin(r, NULL),
		((struct sk_bench_obj *)ck_pr_load_ptr(&sk_bench_gp)),
		ck_epoch_end(r, NULL));
}

static void ck_sync(void)
{
	ck_epoch_synchronize(&sk_bench_updater);
}

const struct sk_bench_rcu_ops sk_bench_ck_epoch_ops = {
	.name = "ck-epoch",
	.desc = "ck_epoch_begin/end on a per-thread record, "
		"ck_epoch_synchronize",
	.init = ck_init,
	.thread_init = ck_thread_init,
	.thread_exit = ck_thread_exit,
	.read_section = ck_read_section,
	.sync = ck_sync,
};

/*
 * The sweep (bench/sweep.h): the read scenario's records; an update
 * queues ck_epoch_call() on its own record and polls it every 64th time
 * (ck runs callbacks only from poll or barrier); a thread drains its
 * record with ck_epoch_barrier() before it gives the record back.
 */
static __thread unsigned int swck_calls;
#define SWCK_LOCK() ck_epoch_record_t *swck_r_ = sk_bench_record; \
	ck_epoch_begin(swck_r_, NULL)
#define SWCK_UNLOCK() ck_epoch_end(swck_r_, NULL)
#define SWCK_DEREF(p) ((__typeof__(p))ck_pr_load_ptr(&(p)))
#define SWCK_RETIRE(o)                                               \
	do {                                                         \
		ck_epoch_call(sk_bench_record, &(o)->head, swck_free); \
		if (++swck_calls % 64 == 0)                          \
			ck_epoch_poll(sk_bench_record);              \
	} while (0)
SK_BENCH_SWEEP_RCU(swck, ck_epoch_entry_t, SWCK_LOCK, SWCK_UNLOCK,
		   SWCK_DEREF, SWCK_RETIRE, (void)0)

static void swck_thread_exit(void)
{
	ck_epoch_barrier(sk_bench_record);
	ck_thread_exit();
}

SK_BENCH_SWEEP_OPS(sk_bench_sweep_ck_epoch_ops, "ck-epoch",
		   "ck_epoch_begin/end; ck_epoch_call + ck_epoch_poll", swck,
		   .thread_init = ck_thread_init,
		   .thread_exit = swck_thread_exit);

#else

SK_BENCH_PEER_MISSING(sk_bench_ck_epoch_ops, "ck-epoch",
		      "Concurrency Kit epochs", "ck");

SK_BENCH_PEER_MISSING(sk_bench_sweep_ck_epoch_ops, "ck-epoch",
		      "Concurrency Kit epochs", "ck");

#endif /* SK_HAVE_CK */
