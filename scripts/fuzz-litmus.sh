#!/bin/sh
# SPDX-License-Identifier: MIT
# Fuzz `scalekit litmus` with libFuzzer (clang), niced.
#   scripts/fuzz-litmus.sh [SECONDS] [WORKDIR]        the parser alone
#   scripts/fuzz-litmus.sh --run [SECONDS] [WORKDIR]  parse, and run what
#                                  parses for a few iterations (the library
#                                  is compiled in; about 30 inputs/s)
# Seeds: litmus/ and tests/litmus-bad/.  Crashers land in WORKDIR/crashes;
# each one, once fixed, belongs in tests/litmus-bad/ (see docs/litmus.md).
set -eu
run=
if [ "${1:-}" = --run ]; then
	run=1
	shift
fi
secs=${1:-600}
work=${2:-build-fuzz${run:+-run}}
top=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$work/corpus" "$work/crashes"
cp "$top"/litmus/*.litmus "$top"/tests/litmus-bad/*.litmus "$work/corpus/"
if [ -n "$run" ]; then
	srcs="$top/src/*.c $top/tools/litmus_ops.c $top/tools/litmus_exec.c"
	flags="-DLT_FUZZ_RUN -D_GNU_SOURCE -I$top/include -I$top/src -lpthread"
else
	srcs=
	flags=
fi
# shellcheck disable=SC2086 # word splitting of srcs and flags is wanted
clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-I"$top/tools" "$top/tools/litmus_lex.c" "$top/tools/litmus_decl.c" \
	"$top/tools/litmus_lisa.c" "$top/tools/litmus_parse.c" $srcs \
	"$top/tests/litmus-fuzz/fuzz_parse.c" $flags -o "$work/fuzz"
exec nice -n 19 "$work/fuzz" -max_total_time="$secs" -max_len=4096 \
	-timeout=30 -artifact_prefix="$work/crashes/" -print_final_stats=1 \
	"$work/corpus"
