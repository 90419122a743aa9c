/* SPDX-License-Identifier: MIT */
/* placeholder: replaced by the bench/torture front end */
#include <stdio.h>
int main(void) { puts("scalekit"); return 0; }
