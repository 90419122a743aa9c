/* SPDX-License-Identifier: MIT */
/*
 * message_passing - the message-passing pattern with a pair of barriers.
 *
 * A producer fills a message with plain stores, issues sk_smp_wmb() and
 * then sets a sequence flag.  A consumer waits for the flag, issues
 * sk_smp_rmb() and then reads the message.  The two barriers are a pair:
 * because the consumer saw the flag, and the write barrier kept the
 * message's stores before the flag's, and the read barrier keeps the
 * message's loads after the flag's, the consumer sees the whole message.
 * Leaving out either barrier breaks this on a weakly ordered CPU (Arm,
 * POWER) and, through compiler reordering, on any CPU.
 *
 * The acknowledgement back to the producer is message passing too, in the
 * other direction, written with the other common pair: sk_smp_store_release()
 * on the consumer, sk_smp_load_acquire() on the producer.  It also orders
 * the consumer's loads of the message before the producer's next stores
 * into it, so the producer never overwrites a message still being read.
 *
 * See docs/memory-ordering.md.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include <scalekit/barrier.h>

#define ROUNDS 20000

struct message {
	unsigned long seq;	  /* copy of the round number */
	unsigned long payload[4]; /* derived from seq, checked by the consumer */
	char text[24];		  /* a string the consumer copies */
};

static struct message msg;	/* plain memory, no atomics */
static unsigned long published; /* round number of the message in msg */
static unsigned long consumed;	/* last round the consumer finished */

/*
 * Spin, then yield: the machine may have fewer free CPUs than threads, and
 * a waiter that only spins would wait for a time slice on every round.
 */
static void wait_a_little(unsigned int *spins)
{
	if (++*spins < 200)
		sk_cpu_relax();
	else
		sched_yield();
}

static void *producer(void *arg)
{
	unsigned long i;
	unsigned int spins;
	int k;

	(void)arg;
	for (i = 1; i <= ROUNDS; i++) {
		/* The previous message must have been read (release/acquire pair). */
		spins = 0;
		while (sk_smp_load_acquire(&consumed) != i - 1)
			wait_a_little(&spins);

		msg.seq = i;
		for (k = 0; k < 4; k++)
			msg.payload[k] = i * 4 + (unsigned long)k;
		snprintf(msg.text, sizeof(msg.text), "message %lu", i);
		/*
		 * W: the message's stores before the flag's store; pairs with
		 * the read barrier R in consumer().
		 */
		sk_smp_wmb();
		SK_WRITE_ONCE(published, i);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	unsigned long i, bad = 0;
	char expect[24], text[24];
	unsigned int spins;
	int k;

	(void)arg;
	for (i = 1; i <= ROUNDS; i++) {
		spins = 0;
		while (SK_READ_ONCE(published) != i)
			wait_a_little(&spins);
		/*
		 * R: the flag's load before the message's loads; pairs with
		 * the write barrier W in producer().
		 */
		sk_smp_rmb();
		if (msg.seq != i)
			bad++;
		for (k = 0; k < 4; k++)
			if (msg.payload[k] != i * 4 + (unsigned long)k)
				bad++;
		memcpy(text, msg.text, sizeof(text));
		snprintf(expect, sizeof(expect), "message %lu", i);
		if (strcmp(text, expect) != 0)
			bad++;
		/* Our loads of msg before the ack; pairs with the acquire above. */
		sk_smp_store_release(&consumed, i);
	}
	return (void *)bad;
}

int main(void)
{
	pthread_t p, c;
	void *bad;

	if (pthread_create(&c, NULL, consumer, NULL) != 0 ||
	    pthread_create(&p, NULL, producer, NULL) != 0) {
		fprintf(stderr, "message_passing: pthread_create failed\n");
		return 1;
	}
	pthread_join(p, NULL);
	pthread_join(c, &bad);

	printf("message_passing: %d messages passed with sk_smp_wmb/sk_smp_rmb, "
	       "acknowledged with release/acquire\n",
	       ROUNDS);
	printf("message_passing: %lu fields seen stale or torn\n",
	       (unsigned long)bad);
	if (bad) {
		printf("message_passing: FAILED\n");
		return 1;
	}
	printf("message_passing: ok\n");
	return 0;
}
