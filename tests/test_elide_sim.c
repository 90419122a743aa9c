/* SPDX-License-Identifier: MIT */
#include "sk_test.h"
int main(void) { return sk_test_report(); }
