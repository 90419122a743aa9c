#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Model-check the callback worker's sleep/wake protocol (cb_wake.pml, see
# its header) with spin: the protocol as src/rcu_cb.c has it must pass in
# both configurations (ordinary and urgent kicks), and every broken twin
# must fail with an invalid end state (the worker asleep with work it
# must not sleep through).  A twin that passes means the model can no
# longer see the bug it stands for: that fails the test too.
#
# Usage: check_cb_wake.sh MODEL WORKDIR [CC]
# Exit status: 0 as expected, 1 otherwise, 77 (CTest: skipped) when spin
# is not installed.
set -u
model=$1
work=$2
cc=${3:-cc}

if ! command -v spin >/dev/null 2>&1; then
	echo "SKIPPED: spin is not installed (Debian: apt-get install spin);" \
		"the wake protocol model was not checked"
	exit 77
fi
mkdir -p "$work" && cd "$work" || exit 1
status=0

# check pass|fail [spin -D flags...]
check() {
	want=$1
	shift
	rm -f pan pan.* ./*.trail
	if ! spin "$@" -a "$model" >spin.log 2>&1; then
		echo "spin $* failed:"
		cat spin.log
		status=1
		return
	fi
	if ! "$cc" -w -O0 -DSAFETY -o pan pan.c; then
		echo "cannot compile the verifier ($cc)"
		status=1
		return
	fi
	./pan -m100000 -w20 >pan.log 2>&1
	if grep -q "max search depth too small" pan.log; then
		got=incomplete
	elif grep -q "errors: 0" pan.log; then
		got=pass
	elif grep -q "invalid end state" pan.log; then
		got=fail
	else
		got=error
	fi
	states=$(sed -n 's/^ *\([0-9]*\) states, stored.*/\1/p' pan.log)
	if [ "$got" = "$want" ]; then
		echo "ok:    ${*:-(default)}: $got as expected ($states states)"
	else
		echo "WRONG: ${*:-(default)}: $got, expected $want"
		cat pan.log
		status=1
	fi
}

check pass
check pass -DALL_URGENT
check fail -DNO_FENCE
check fail -DALL_URGENT -DNO_FENCE
check fail -DALL_URGENT -DLATE_URGENT
check fail -DALL_URGENT -DPLAIN_RESET
exit $status
