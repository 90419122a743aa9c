# SPDX-License-Identifier: MIT
# The page of `scalekit bench --html` (test bench_html wrote SK_HTML),
# with scripts/plot.sh's charts put in where gnuplot is installed:
# self-contained (no src= or href= to anything outside it, no script), a targets
# chart with one bar per measured target, a targets table and figure
# tables that are not empty.  Where SK_CHROMIUM names a browser, the page
# is also loaded in it (headless): the DOM it builds must hold the same
# bars and rows, and its screenshot must not be blank.
file(READ "${SK_HTML}" h)
# Links inside the page (href="#...", gnuplot's point shapes) are fine.
string(REGEX MATCH "(src|href)=[\"'][^#]|<script|<img" bad "${h}")
if(bad)
  message(FATAL_ERROR "${SK_HTML}: not self-contained: has '${bad}'")
endif()
# sk_html_counts(TEXT PREFIX): PREFIX_rects, _verdicts, _rows in TEXT.
function(sk_html_counts text prefix)
  string(REGEX MATCHALL "<rect class=\"bar\" " r "${text}")
  string(REGEX MATCHALL "<td class=\"(PASS|MISS)\">" v "${text}")
  string(REGEX MATCHALL "<tr><td>[^<]+</td><td>[0-9]+</td>" f "${text}")
  list(LENGTH r nr)
  list(LENGTH v nv)
  list(LENGTH f nf)
  set(${prefix}_rects ${nr} PARENT_SCOPE)
  set(${prefix}_verdicts ${nv} PARENT_SCOPE)
  set(${prefix}_rows ${nf} PARENT_SCOPE)
endfunction()
sk_html_counts("${h}" page)
if(page_rects EQUAL 0 OR NOT page_rects EQUAL page_verdicts OR page_rows LESS 2)
  message(FATAL_ERROR "${SK_HTML}: ${page_rects} bars, ${page_verdicts} "
    "measured targets, ${page_rows} figure rows")
endif()
if(NOT SK_CHROMIUM)
  message(STATUS "${SK_HTML}: ${page_rects} bars, ${page_rows} figure rows "
    "(no chromium: not loaded in a browser)")
  return()
endif()
set(flags --headless --no-sandbox --disable-gpu --hide-scrollbars
  --window-size=1100,1400)
execute_process(COMMAND ${SK_CHROMIUM} ${flags} --dump-dom "file://${SK_HTML}"
  OUTPUT_VARIABLE dom ERROR_QUIET RESULT_VARIABLE rc TIMEOUT 120)
sk_html_counts("${dom}" dom)
if(NOT rc EQUAL 0 OR NOT dom_rects EQUAL page_rects OR
   NOT dom_rows EQUAL page_rows)
  message(FATAL_ERROR "chromium (exit ${rc}) built ${dom_rects} bars and "
    "${dom_rows} figure rows of ${page_rects} and ${page_rows}")
endif()
get_filename_component(dir "${SK_HTML}" DIRECTORY)
file(REMOVE "${dir}/shot.png")
execute_process(COMMAND ${SK_CHROMIUM} ${flags} --screenshot=${dir}/shot.png
  "file://${SK_HTML}" OUTPUT_QUIET ERROR_QUIET RESULT_VARIABLE rc TIMEOUT 120)
file(SIZE "${dir}/shot.png" png)
# A blank 1100x1400 page compresses to a few KiB; this one is text and
# bars all over (about 200 KiB).
if(NOT rc EQUAL 0 OR png LESS 40000)
  message(FATAL_ERROR "chromium (exit ${rc}): screenshot ${png} bytes")
endif()
message(STATUS "${SK_HTML}: ${page_rects} bars, ${page_rows} figure rows; "
  "chromium built the same, screenshot ${png} bytes")
