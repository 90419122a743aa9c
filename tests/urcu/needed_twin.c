/* SPDX-License-Identifier: MIT */
/*
 * tests/urcu/needed_twin.c - the broken twin of urcu_lfht_no_flavor_lib:
 * a program linked with liburcu-memb, which the check must reject.
 */
void urcu_memb_synchronize_rcu(void);

int main(void)
{
	urcu_memb_synchronize_rcu();
	return 0;
}
