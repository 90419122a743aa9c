/* SPDX-License-Identifier: MIT */
/*
 * RCU, the grace-period engine's reader handshake (the quiet round, then
 * the request) that stands for a grace period's first barrier, and the
 * stall watchdog's report.  Both serve rcu_gp.c, listed above this file
 * (src/layers.txt); the polled API is in rcu_exp.c.
 * The algorithm and the module's overview: src/internal/rcu.h.
 *
 * Barrier pairs placed here [partner's file]:
 *   RCU-H0  leader: release store of the handshake number after RCU-R1
 *           [rcu_gp.c]; pairs with the reader's acquire before RCU-H1
 *           [rcu_reader.c].
 *   RCU-H2  leader: acquire load of every answer; pairs with the reader's
 *           release after RCU-H1 [rcu_reader.c].  All answers stand for
 *           RCU-G1 [rcu_gp.c].
 *   The quiet round places no fence: its relaxed loads of reader words
 *   rely on RCU-R1/RCU-L1 (a word of the new phase was stored after the
 *   reader's acquire of the advanced counter), and the leader's local
 *   full barrier after it orders its own later loads [rcu_gp.c].
 */
#define _GNU_SOURCE
#include "scalekit/rcu.h"

#include <stdint.h>
#include <string.h>
#include <pthread.h>
#include <stdio.h>

#include "internal/rcu.h"
#include "internal/rcu_state.h"
#include "internal/util.h"

/*
 * A parked thread (sk__rcu_park()) answers by its word: it finished its
 * sections before a full fence (RCU-P1) and will take another full fence
 * (RCU-P2) before its next one, whose RCU-L1 then sees the advance that
 * the caller made before reading this word (RCU-R1, full barrier).  Any
 * number of scans: the word holds no phase.
 */
static inline int word_is_parked(unsigned long v)
{
	return v == SK__RCU_PARKED;
}

/*
 * Does reader word v already stand for an answer to a handshake after the
 * advance to counter word c?  It is inside a section (or QSBR online) in
 * c's phase: it loaded c (acquire, RCU-L1) before storing v, so its section
 * and every later one see what RCU-R1 published, and v is its latest store.
 * A QSBR thread that announced between RCU-R1 and the request would
 * otherwise answer only after the next grace period began.  Only where
 * one scan suffices: with narrow phases a stale word may equal c.  Or
 * the thread is parked (word_is_parked()).
 */
static inline int word_is_answer(unsigned long v, unsigned long c)
{
	return (sk__rcu_scans() == 1 && nest_of(v) &&
		!((v ^ c) >> SK__RCU_SEQ_SHIFT)) ||
	       word_is_parked(v);
}

/*
 * Has reader s answered handshake e (or shown a word of counter word c, see
 * word_is_answer())?  e == 0: no request yet (the quiet round), only the
 * word counts, and a reader that shows it is marked passed for the scan
 * (TSan).
 */
static int slot_answered(struct rcu_slot *s, uint64_t e, unsigned long c)
{
	if (!e) {
		if (!word_is_answer(slot_word(s), c) &&
		    !busted(SK__RCU_BUSTED_QUIET))
			return 0;
		slot_passed(s);
		return 1;
	}
	/* RCU-H2: acquire; pairs with the reader's release. */
	return sk_atomic_load_acquire(s->ackp) == e ||
	       word_is_answer(slot_word(s), c);
}

/*
 * The registered readers but the caller that have not answered
 * (slot_answered()), up to max of them; each one's slot, word address and
 * word go to out[] unless out is NULL.  Returns how many were found (the
 * walk stops at max).  Registry read lock held.
 */
static unsigned int unanswered(uint64_t e, unsigned long c,
			       struct rcu_hs_miss *out, unsigned int max)
{
	struct rcu_chunk *ch;
	unsigned int n = 0;

	for (ch = &sk__rcu_first_chunk; ch && n < max; ch = ch->next) {
		uint64_t used = ch->used;

		while (used && n < max) {
			struct rcu_slot *s = &ch->slots[__builtin_ctzll(used)];

			used &= used - 1;
			if (s->ackp == &sk__rcu_ack || slot_answered(s, e, c))
				continue;
			if (out)
				out[n] = (struct rcu_hs_miss){ s, s->ctrp,
							       slot_word(s) };
			n++;
		}
	}
	return n;
}

/* Has every registered reader but the caller answered?  Lock as above. */
static int all_answered(uint64_t e, unsigned long c)
{
	return unanswered(e, c, NULL, 1) == 0;
}

/* Spin until the clock reaches t, without touching shared lines. */
static void spin_until(uint64_t t)
{
	while (sk__now_ns() < t)
		sk_cpu_relax();
}

/*
 * The quiet round of a normal grace period: wait for every reader to show
 * a section of counter word c without asking (see word_is_answer()).  A
 * reader that runs sections loads the advanced counter at its next
 * sk_rcu_read_lock() (RCU-L1, acquire, pairs with RCU-R1), so it answers
 * within a fraction of a microsecond, with no futex store for it to miss,
 * no slow path and no fence.  The leader looks only every
 * SK__RCU_QUIET_GAP_NS (see there).  A word of c also shows that the reader
 * left every section that began before RCU-R1, so no scan needs to read it
 * again.  Returns 1 when all showed one within SK__RCU_QUIET_NS; 0 at once
 * when an expedited caller waits (it asks instead) or where one scan does
 * not suffice.
 */
static int quiet_round(unsigned long c)
{
	uint64_t now = sk__now_ns(), end = now + SK__RCU_QUIET_NS;
	int all;

	if (sk__rcu_scans() != 1)
		return 0;
	for (now += SK__RCU_QUIET_FIRST_NS;; now += SK__RCU_QUIET_GAP_NS) {
		spin_until(now);
		if (sk_atomic_load_relaxed(&sk__rcu.expedite))
			return 0;
		pthread_rwlock_rdlock(&sk__rcu.registry_lock);
		all = all_answered(0, c);
		pthread_rwlock_unlock(&sk__rcu.registry_lock);
		if (all || now >= end)
			return all;
	}
}

/*
 * Does a reader that missed the last failed round still show the word it
 * showed then?  Every grace period advances the counter before its
 * rounds (RCU-R1), and a reader's first section after an advance takes
 * the new phase into its word (RCU-L3), so an unchanged word means no
 * section entered since the failed round: an idle registered thread (or
 * one still inside the same section), which would miss this round too.
 * Entries whose word changed, or whose slot has another owner now, are
 * dropped.  A wrong guess only costs a heavy fence where a handshake
 * would have done (or one round, where a changed word hides an idle
 * thread); the heavy fence is always a correct RCU-G1.  Caller holds
 * gp_lock; registry read lock taken here (the owner's word stays mapped
 * while its slot is owned; chunks are never freed).
 */
static int misses_still_idle(void)
{
	unsigned int i, n = 0;

	if (busted(SK__RCU_BUSTED_MISS_FORGET))
		sk__rcu.nmiss = 0;
	if (!sk__rcu.nmiss || busted(SK__RCU_BUSTED_MISS_STICKY))
		return sk__rcu.nmiss != 0;
	pthread_rwlock_rdlock(&sk__rcu.registry_lock);
	for (i = 0; i < sk__rcu.nmiss; i++) {
		struct rcu_hs_miss *m = &sk__rcu.miss[i];

		if (m->slot->ctrp == m->ctrp && slot_word(m->slot) == m->word)
			sk__rcu.miss[n++] = *m;
	}
	pthread_rwlock_unlock(&sk__rcu.registry_lock);
	sk__rcu.nmiss = n;
	return n != 0;
}

/*
 * Ask every registered reader for a barrier (RCU-H0) and wait up to
 * SK__RCU_HANDSHAKE_NS for all answers; returns 1 when all answered, else
 * remembers the readers that did not (unanswered() into sk__rcu.miss[]).
 * Registry read lock taken here.
 */
static int handshake_round(unsigned long c)
{
	uint64_t e = sk__rcu.exp_seq + 1, deadline;
	int all;

	/* RCU-H0: release: RCU-R1 before the request number; pairs with the
	 * readers' acquire of exp_seq. */
	sk_atomic_store_release(&sk__rcu.exp_seq, e);
	/* Readers take their slow path and answer (after exp_seq). */
	sk_atomic_store_release(&sk_rcu__gp.futex, sk__rcu_hs_word(e));
	deadline = sk__now_ns() + SK__RCU_HANDSHAKE_NS;
	pthread_rwlock_rdlock(&sk__rcu.registry_lock);
	while (!(all = all_answered(e, c)) && sk__now_ns() < deadline)
		sk_cpu_relax();
	if (!all) {
		/* Remember who missed it, with the words they show now. */
		sk__rcu.nmiss = unanswered(e, c, sk__rcu.miss,
					   SK__RCU_HS_MISS_MAX);
		count_kind(&sk__rcu.kinds.timeouts);
	}
	pthread_rwlock_unlock(&sk__rcu.registry_lock);
	sk_atomic_store_relaxed(&sk_rcu__gp.futex, 0);
	return all;
}

/*
 * RCU-G1 by handshake (RCU-H0/RCU-H1/RCU-H2), tried by every grace period
 * that waits for general readers: 1 when every other registered reader
 * answered within SK__RCU_HANDSHAKE_NS, 0 when the caller must issue the
 * heavy fence.  Busy readers answer within about a microsecond, where
 * membarrier(2) costs an IPI round trip.  After a failure (an idle
 * registered thread never answers) grace periods go straight to
 * membarrier(2) while a reader that missed it still shows the same word
 * (misses_still_idle()): an idle registered thread costs no timeout
 * while it stays idle.  Besides, the next SK__RCU_HANDSHAKE_BACKOFF
 * expedited grace periods after a failure skip the rounds (exp_skip);
 * for normal ones (gp_skip) the skip doubles with every further failure
 * (up to SK__RCU_HANDSHAKE_BACKOFF_MAX) and resets after a success, so
 * readers that run sections but miss the rounds (preempted on a busy
 * machine) cost them at most one timeout per that many grace periods.
 * Caller holds gp_lock, after RCU-R1.
 */
int sk__rcu_gp_handshake(int expedited, unsigned long c)
{
	unsigned int *skip = expedited ? &sk__rcu.exp_skip : &sk__rcu.gp_skip;
	int all;

	if (!busted(SK__RCU_BUSTED_HANDSHAKE) && misses_still_idle()) {
		all = 0;
	} else if (*skip && !busted(SK__RCU_BUSTED_HANDSHAKE)) {
		(*skip)--;
		all = 0;
	} else if (!expedited && !busted(SK__RCU_BUSTED_HANDSHAKE) &&
		   quiet_round(c)) {
		sk__rcu.gp_backoff = SK__RCU_HANDSHAKE_BACKOFF;
		count_kind(&sk__rcu.kinds.handshake);
		count_kind(&sk__rcu.kinds.quiet);
		return SK_RCU_HS_QUIET;
	} else if ((all = handshake_round(c))) {
		if (!expedited)
			sk__rcu.gp_backoff = SK__RCU_HANDSHAKE_BACKOFF;
	} else if (expedited) {
		*skip = SK__RCU_HANDSHAKE_BACKOFF;
	} else {
		*skip = sk__rcu.gp_backoff;
		if (sk__rcu.gp_backoff < SK__RCU_HANDSHAKE_BACKOFF_MAX)
			sk__rcu.gp_backoff = 2 * sk__rcu.gp_backoff + 1;
	}
	if (expedited)
		sk_atomic_fetch_add_relaxed(
			all ? &sk__rcu.exp_handshakes : &sk__rcu.exp_fallbacks, 1UL);
	count_kind(all ? &sk__rcu.kinds.handshake : &sk__rcu.kinds.heavy);
	return all ? SK_RCU_HS_ASKED : SK_RCU_HS_NONE;
}

/* Copy the name of thread tid (as set by pthread_setname_np) into buf. */
static void thread_name(long tid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%ld/comm", tid);
	buf[0] = '\0';
	f = fopen(path, "r");
	if (f) {
		if (fgets(buf, (int)len, f))
			buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
	if (!buf[0])
		snprintf(buf, len, "?");
}

/* Stall watchdog: name every reader that still holds the scan of c. */
void sk__rcu_report_stall(struct rcu_slot **pend, unsigned long n,
			 unsigned long c, uint64_t waited_ns)
{
	unsigned long i, k = 0, ms = (unsigned long)(waited_ns / 1000000u);
	unsigned long words[SK__RCU_PEND_MAX];
	long tids[SK__RCU_PEND_MAX];
	char name[32];
	int cancel_state;

	/*
	 * The caller holds gp_lock (and waiters of its batch wait on it),
	 * and the stdio calls below (fopen(), fgets(), fprintf() ...) are
	 * cancellation points: a pthread_cancel() acted on there would end
	 * the thread with gp_lock held and hang every later grace period.
	 * No cancellation inside the report; a pending request is acted on
	 * at the caller's next cancellation point, after the grace period.
	 * Places no fence.
	 */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
	/* The readers that still block, read once: header and lines agree. */
	pthread_rwlock_rdlock(&sk__rcu.registry_lock);
	for (i = 0; i < n && i < SK__RCU_PEND_MAX; i++) {
		unsigned long v = slot_word(pend[i]);

		if (blocks_gp(v, c)) {
			words[k] = v;
			tids[k++] = pend[i]->tid;
		}
	}
	pthread_rwlock_unlock(&sk__rcu.registry_lock);
	if (!k)
		goto out; /* all left since the last scan: nothing to report */
	fprintf(stderr,
		"scalekit: RCU stall: grace period %lu has waited %lu ms "
		"(threshold %lu ms: SCALEKIT_RCU_STALL_MS or "
		"sk_rcu_set_stall_ms()) for %lu reader(s)%s:\n",
		sk__rcu.ngps + 1, ms, sk_rcu_get_stall_ms(),
		n > SK__RCU_PEND_MAX ? n : k,
		n > SK__RCU_PEND_MAX ? " (the first ones listed)" : "");
	for (i = 0; i < k; i++) {
		thread_name(tids[i], name, sizeof(name));
		fprintf(stderr,
			"scalekit:   thread %ld (\"%s\"), %s for at least %lu "
			"ms\n",
			tids[i], name,
			nest_of(words[i]) >= SK__RCU_QSBR_NEST
				? "QSBR online without a quiescent state"
				: "inside a read-side critical section",
			ms);
	}
	fflush(stderr);
out:
	pthread_setcancelstate(cancel_state, NULL);
}
