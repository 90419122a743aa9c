#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plot.sh CSV DIR - draw DIR/targets.svg from the target rows of the CSV
# that `scalekit bench --csv` writes: one bar per speed target, drawn
# against its own limit and direction (see below), pass and miss in two
# colours.  Needs gnuplot; without it, says so and exits 0 (the chart is
# optional).
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
# One line per measured target row: label score lo hi colour.  The score
# is how far the ratio is on the good side of its limit (limit/ratio for
# "at most", ratio/limit for "at least"), so every bar is drawn against its
# own target: right of 1 passes (green), left misses (red); lo..hi is the
# same for the ratio's min..max.  The label says the ratio, the direction,
# the limit and the verdict.
awk -F, 'function clip(v) { return v < 0.05 ? 0.05 : (v > 50 ? 50 : v) }
$1 == "target" && $5 != "" && $10 != "" {
	lim = $10 + 0; at_most = ($11 == "at most")
	if (lim <= 0 || $5 <= 0 || $6 <= 0 || $7 <= 0)
		next
	sc = at_most ? lim / $5 : $5 / lim
	lo = at_most ? lim / $7 : $6 / lim
	hi = at_most ? lim / $6 : $7 / lim
	pass = sc >= 1
	printf "\"%s %st %s: %.3g %s %.3g %s\" %g %g %g %d\n", $2, $3, $4, $5,
		at_most ? "<=" : ">=", lim, pass ? "PASS" : "MISS",
		clip(sc), clip(lo), clip(hi), pass ? 3050327 : 12597547 }' \
	"$csv" >"$data"
n=$(wc -l <"$data")
if [ "$n" -eq 0 ]; then
	echo "plot: no target rows in $csv, no chart"
	exit 0
fi
pass=$(awk '$NF == 3050327' "$data" | wc -l)
mkdir -p "$dir"
gnuplot <<GP
set terminal svg size 1100,$((140 + 22 * n)) font "sans,11"
set output "$dir/targets.svg"
set title "scalekit bench: $pass of $n speed targets met (green: met, red: missed)\nbar: how far the ratio is on the good side of its own limit, limit/ratio for <= and ratio/limit for >=\nright of the dashed line meets the target; whiskers: min..max over the repetitions"
set termoption noenhanced
set style fill solid 0.7
unset key
set logscale x
set xrange [0.05:50]
set xtics ("0.1" 0.1, "0.5" 0.5, "target" 1, "2" 2, "10" 10)
set yrange [$n:-1]
set ytics nomirror
set grid x
set arrow from 1, graph 0 to 1, graph 1 nohead dt 2 lw 2 lc rgb "black"
plot "$data" using (\$2):(\$0):((\$2 < 1) ? \$2 : 1):((\$2 < 1) ? 1 : \$2):(\$0-0.3):(\$0+0.3):5:ytic(1) with boxxyerror lc rgb variable, \
     "$data" using 2:(\$0):3:4 with xerrorbars lc rgb "black" pt -1
GP
echo "plot: wrote $dir/targets.svg ($n targets, $pass met)"
