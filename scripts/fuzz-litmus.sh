#!/bin/sh
# SPDX-License-Identifier: MIT
# Fuzz the parser of `scalekit litmus` with libFuzzer (clang).
#   scripts/fuzz-litmus.sh [SECONDS] [WORKDIR]
# Seeds: litmus/ and tests/litmus-bad/.  Crashers land in WORKDIR/crashes;
# each one, once fixed, belongs in tests/litmus-bad/ (see docs/litmus.md).
set -eu
secs=${1:-600}
work=${2:-build-fuzz}
top=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$work/corpus" "$work/crashes"
cp "$top"/litmus/*.litmus "$top"/tests/litmus-bad/*.litmus "$work/corpus/" 2>/dev/null || true
clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-I"$top/tools" "$top/tools/litmus_parse.c" \
	"$top/tests/litmus-fuzz/fuzz_parse.c" -o "$work/fuzz_parse"
exec nice -n 19 "$work/fuzz_parse" -max_total_time="$secs" -max_len=4096 \
	-artifact_prefix="$work/crashes/" -print_final_stats=1 "$work/corpus"
