#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plot.sh CSV DIR - draw the bench's charts into DIR from the CSV that
# `scalekit bench --csv` writes (columns found by the header's names):
#   targets.svg       one bar per speed target, drawn against its own limit
#                     and direction, pass and miss in two colours;
#   read-scaling.svg  ns per read against threads (log scales), one line
#                     per implementation (scenario read, general readers);
#   gp-latency.svg    p50/p90/p99/max of one grace-period wait per
#                     primitive (scenario gp-latency, log scale);
#   hash.svg          hash-table lookups/s per table size and threads;
#   mix.svg           throughput against the update fraction at 2 threads
#                     (the sweep's rows, which have a mix column).
# A chart whose rows the CSV lacks (a scenario not run) is not drawn.
# When DIR/index.html (scalekit bench --html) is there, the charts are put
# into it, inline, where it says "<!-- gnuplot charts -->".
# Needs gnuplot; without it, says so and exits 0 (the charts are optional).
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
mkdir -p "$dir"

# col NAME...: an awk program prefix that maps the header's names to
# column numbers in c[] (skipping the "# " environment lines) and defines
# v(name), the field of that column ("" when the CSV has no such column).
cols='function v(n) { return (n in c) ? $(c[n]) : "" }
/^#/ { next }
!hdr { for (i = 1; i <= NF; i++) c[$i] = i; hdr = 1; next }'

# One line per measured target row: label score lo hi colour.  The score
# is how far the ratio is on the good side of its limit (limit/ratio for
# "at most", ratio/limit for "at least"), so every bar is drawn against its
# own target: right of 1 passes (green), left misses (red); lo..hi is the
# same for the ratio's min..max.  The label says the ratio, the direction,
# the limit and the verdict.
plot_targets() {
	awk -F, "$cols"'
function clip(x) { return x < 0.05 ? 0.05 : (x > 50 ? 50 : x) }
v("scenario") == "target" && v("median") != "" && v("limit") != "" {
	lim = v("limit") + 0; at_most = (v("direction") == "at most")
	med = v("median") + 0; mn = v("min") + 0; mx = v("max") + 0
	if (lim <= 0 || med <= 0 || mn <= 0 || mx <= 0)
		next
	sc = at_most ? lim / med : med / lim
	lo = at_most ? lim / mx : mn / lim
	hi = at_most ? lim / mn : mx / lim
	pass = sc >= 1
	printf "\"%s %st %s: %.3g %s %.3g %s\" %g %g %g %d\n", v("variant"),
		v("threads"), v("impl"), med, at_most ? "<=" : ">=", lim,
		pass ? "PASS" : "MISS", clip(sc), clip(lo), clip(hi),
		pass ? 3050327 : 12597547 }' "$csv" >"$data"
	local n pass
	n=$(wc -l <"$data")
	if [ "$n" -eq 0 ]; then
		echo "plot: no target rows in $csv, no targets chart"
		return
	fi
	pass=$(awk '$NF == 3050327' "$data" | wc -l)
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
}

# lines NAME TITLE XLABEL YLABEL LOGX [GNUPLOT]: draw DIR/NAME.svg from $data
# (GNUPLOT: more commands, e.g. tics), whose
# lines are "impl x y", one line per implementation (gnuplot "index"
# blocks separated by two blank lines, each headed by the implementation).
lines() {
	local name=$1 title=$2 xl=$3 yl=$4 logx=$5 extra=${6:-} nb
	nb=$(grep -c '^#impl' "$data" || true)
	if [ "$nb" -eq 0 ]; then
		echo "plot: no rows for $name.svg in $csv, not drawn"
		return
	fi
	gnuplot <<GP
set terminal svg size 900,560 font "sans,11"
set output "$dir/$name.svg"
set title "$title"
set termoption noenhanced
set xlabel "$xl"
set ylabel "$yl"
set logscale y
$( [ "$logx" = 1 ] && echo "set logscale x 2" )
$extra
set grid
set key outside right
plot for [i=0:$((nb - 1))] "$data" index i using 2:3 with linespoints lw 2 title columnheader(1)
GP
	echo "plot: wrote $dir/$name.svg ($nb lines)"
}

# Rows selected by the awk condition sel, as "index" blocks per impl of
# x (column xcol) and the median; header line "#impl NAME" per block.
blocks() {
	local sel=$1 xexpr=$2
	awk -F, "$cols"'
'"$sel"' { k = v("impl"); if (!(k in seen)) { seen[k] = ++n; name[n] = k }
	  pts[k] = pts[k] sprintf("%s %s %s\n", k, '"$xexpr"', v("median")) }
END { for (i = 1; i <= n; i++) printf "#impl %s\n\"%s\"\n%s\n\n", name[i],
	name[i], pts[name[i]] }' "$csv" >"$data"
}

plot_targets
blocks 'v("scenario") == "read" && v("variant") == "general" && v("unit") == "ns/op"' 'v("threads")'
lines read-scaling "read side: ns per read_lock+dereference+read_unlock (general readers)" "threads" "ns per read (log)" 1
blocks 'v("mix") != "" && v("threads") == 2 && v("unit") == "Mops/s"' '100 - v("mix")'
lines mix "read/update mix at 2 threads: total throughput against the update fraction" "updates, % of operations" "Mops/s (log)" 0
# gp-latency: x = 1..4 for p50, p90, p99, max.
blocks 'v("scenario") == "gp-latency" && v("unit") == "us"' '(v("variant") ~ /p50$/ ? 1 : v("variant") ~ /p90$/ ? 2 : v("variant") ~ /p99$/ ? 3 : 4)'
lines gp-latency "one grace-period wait with one busy reader of the same kind" "" "us (log)" 0 'set xtics ("p50" 1, "p90" 2, "p99" 3, "max" 4)
set xrange [0.8:4.2]'

# hash: x = threads, one line per table and size.
awk -F, "$cols"'
v("scenario") == "hash-lookup" && v("unit") == "Mops/s" {
	k = v("impl") " " v("variant"); if (!(k in seen)) { seen[k] = ++n; name[n] = k }
	pts[k] = pts[k] sprintf("x %s %s\n", v("threads"), v("median")) }
END { for (i = 1; i <= n; i++) printf "#impl %s\n\"%s\"\n%s\n\n", name[i],
	name[i], pts[name[i]] }' "$csv" >"$data"
lines hash "hash-table lookups: millions per second against threads, per table and size" "threads" "Mops/s (log)" 1

# Inline the charts into the page (its marker is replaced: once per page).
page="$dir/index.html"
if [ -f "$page" ] && grep -q '^<!-- gnuplot charts -->$' "$page"; then
	awk -v dir="$dir" '
	$0 == "<!-- gnuplot charts -->" {
		print "<h2>Charts</h2>"
		n = split("targets read-scaling mix gp-latency hash", names, " ")
		for (i = 1; i <= n; i++) {
			f = dir "/" names[i] ".svg"
			if ((getline line < f) <= 0)
				continue
			print "<div class=\"chart\">"  # line 1 is the XML declaration
			while ((getline line < f) > 0)
				print line
			close(f)
			print "</div>"
		}
		next
	}
	{ print }' "$page" >"$data" && cat "$data" >"$page"
	echo "plot: put the charts into $page"
fi
