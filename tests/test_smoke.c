#include <pthread.h>
#include "scalekit/rcu.h"
#include "sk_test.h"
static int *gp;
static int stop;
static void *rd(void *a) { (void)a; unsigned long n=0; while (!SK_READ_ONCE(stop)) { sk_rcu_read_lock(); int *p = sk_rcu_dereference(gp); if (p && *p != 42) { printf("BAD\n"); abort(); } sk_rcu_read_unlock(); n++; } return (void*)n; }
static void t(void) {
	pthread_t th[2]; int i;
	for (i=0;i<2;i++) pthread_create(&th[i], NULL, rd, NULL);
	for (i=0;i<20000;i++) { int *n = malloc(sizeof *n); *n = 42; int *o = gp; sk_rcu_assign_pointer(gp, n); sk_synchronize_rcu(); if (o) { *o = -1; free(o);} }
	SK_WRITE_ONCE(stop, 1);
	for (i=0;i<2;i++) { void *r; pthread_join(th[i], &r); printf("reads %lu\n", (unsigned long)r); }
	struct sk_rcu_stats st; sk_rcu_get_stats(&st); printf("gps %lu sleeps %lu readers %lu\n", st.grace_periods, st.gp_sleeps, st.readers);
}
int main(void) { SK_RUN(t); return sk_test_report(); }
