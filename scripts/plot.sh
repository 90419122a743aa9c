#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plot.sh CSV DIR - draw DIR/targets.svg from the target rows of the CSV
# that `scalekit bench --csv` writes: one bar per speed target (median
# ratio, whiskers min..max over the repetitions).  Needs gnuplot; without
# it, says so and exits 0 (the chart is optional).
set -euo pipefail
csv=${1:?usage: plot.sh CSV DIR}
dir=${2:?usage: plot.sh CSV DIR}
if ! command -v gnuplot >/dev/null 2>&1; then
	echo "plot: gnuplot not found, no chart (scripts/deps.sh --peers installs it)"
	exit 0
fi
if [ ! -r "$csv" ]; then
	echo "plot: cannot read $csv" >&2
	exit 1
fi
data=$(mktemp)
trap 'rm -f "$data"' EXIT
# label median min max, one line per target row
awk -F, '$1 == "target" && $5 != "" {
	printf "\"%s %st %s\" %s %s %s\n", $2, $3, $4, $5, $6, $7 }' "$csv" >"$data"
n=$(wc -l <"$data")
if [ "$n" -eq 0 ]; then
	echo "plot: no target rows in $csv, no chart"
	exit 0
fi
mkdir -p "$dir"
gnuplot <<GP
set terminal svg size 1000,$((120 + 22 * n)) font "sans,11"
set output "$dir/targets.svg"
set title "scalekit bench: speed targets, ratio scalekit / peer (median, min..max)"
set termoption noenhanced
set style fill solid 0.6
set boxwidth 0.6
unset key
set xrange [0:*]
set yrange [-1:$n]
set ytics nomirror
set grid x
set arrow from 1, graph 0 to 1, graph 1 nohead dt 2 lc rgb "black"
plot "$data" using 2:(\$0):(0):2:(\$0-0.3):(\$0+0.3):ytic(1) with boxxyerror lc rgb "#4a7ab5", \
     "$data" using 2:(\$0):3:4 with xerrorbars lc rgb "black" pt -1
GP
echo "plot: wrote $dir/targets.svg ($n targets)"
