# SPDX-License-Identifier: MIT
# Tests of the `scalekit` command's bench subcommand.
#
# This file has two modes.  Included from tests/CMakeLists.txt it declares
# the tests.  Run as a script (cmake -P tests/bench.cmake) it is the
# checker those tests call: it runs a command and verifies its exact exit
# status and what it printed, which WILL_FAIL (any non-zero status) cannot.
#
# Script mode variables:
#   SK_CMD       the program to run
#   SK_ARGS      its arguments, separated by "|" (";" would split in add_test)
#   SK_RC        the exit status expected
#   SK_STDERR    a regular expression stderr must match (optional)
#   SK_STDOUT    a regular expression stdout must match (optional)
#   SK_EMULATOR  the command SK_CMD runs under, words separated by "|"
#                (cross builds: CMAKE_CROSSCOMPILING_EMULATOR; optional)

include(${CMAKE_CURRENT_LIST_DIR}/../cmake/sk_cli_check.cmake)
if(CMAKE_SCRIPT_MODE_FILE)
  string(REPLACE "|" ";" args "${SK_ARGS}")
  sk_cli_check("${args}" OFF)
  return()
endif()

if(NOT TARGET scalekit_tool)
  return()
endif()

# sk_bench_cli_test(NAME RC ARGS [STDERR regex] [STDOUT regex] [LABELS ...]
#                   [TOOL target]): TOOL defaults to scalekit_tool.
function(sk_bench_cli_test name rc args)
  cmake_parse_arguments(T "" "STDERR;STDOUT;TIMEOUT;TOOL" "LABELS;ENV" ${ARGN})
  if(NOT T_TOOL)
    set(T_TOOL scalekit_tool)
  endif()
  sk_cli_test_defs(defs ${T_TOOL} "${args}" ${rc} OPTS STDERR STDOUT)
  sk_cli_add_test(${name} ${CMAKE_CURRENT_FUNCTION_LIST_FILE} tools 60)
endfunction()

# Smoke test: every scenario (no name given), every peer that was built,
# one short repetition (about 12 s on 2 CPUs, mostly sync's 1000 idle
# threads and liburcu's 10 ms call_rcu batching); the CSV goes to a
# directory that does not exist yet.  Label bench: sanitizer runs exclude
# it.
# The sync-many note on urcu-memb's figures exists only where liburcu-memb
# was found (tools/CMakeLists.txt); without peers the tables stand alone.
set(sk_bench_csv ${CMAKE_CURRENT_BINARY_DIR}/bench-smoke/out/bench.csv)
if(SK_PEER_LIBURCU_MEMB_FOUND)
  set(sk_bench_smoke_memb_note "sync-many: urcu-memb p50.*")
else()
  set(sk_bench_smoke_memb_note "")
endif()
sk_bench_cli_test(bench_smoke 0
  "bench|--quick|--reps|1|--csv|${sk_bench_csv}"
  STDOUT "read / general.*sync / idle p50.*sync-many / busy8 p99.*expedited p50.*poll / cost.*poll / latency p50.*sync-qsbr-every: online.*update-load: one.*uperf: N updaters.*srcu-read.*srcu-sync p50.*hash-lookup: millions.*hash-resize: millions.*hash-update: millions.*hash-update-resize: WORST.*hash-update-resize: p99.9.*hash-grow: TOTAL.*hash-grow: WORST.*list: full traversals.*callbacks / end to end.*callbacks / barrier.*c\\+\\+ / read.*c\\+\\+ / retire, enqueue.*notes.*${sk_bench_smoke_memb_note}targets.*sync-many p50, 1024 idle \\+ 8 busy.*expedited.*srcu-read.*srcu-sync.*callbacks, 2 threads.*c\\+\\+ read, 1 thread.*c\\+\\+ retire, 1 thread"
  LABELS bench TIMEOUT 120)

# The hash-table scenarios alone, quick (about 3 s): every table, the
# resize ratio column and every target line (SKIP when liburcu-cds is
# missing); the CSV holds their figures and ratios.  A lookup that misses
# a present key, also while the table resizes, aborts the run.
# The peer's resize row (urcu-lfht-resizing / urcu-lfht) is always
# printed (n/a without liburcu-cds); its note only where it ran.
set(sk_bench_hash_csv ${CMAKE_CURRENT_BINARY_DIR}/bench-hash/bench.csv)
if(SK_PEER_LIBURCU_CDS_FOUND AND SK_PEER_LIBURCU_MEMB_FOUND)
  set(sk_bench_hash_lfht_note ".*hash-resize: urcu-lfht's resizer completed [0-9]+ grow\\+shrink cycles per second \\(cds_lfht_resize\\(\\)\\); a cycle changed [0-9]+ object lines; its reader lost [-0-9.a-z]+ ms per cycle, sk_rhash's [-0-9.a-z]+ ms")
else()
  set(sk_bench_hash_lfht_note "")
endif()
sk_bench_cli_test(bench_hash 0
  "bench|hash-lookup|hash-resize|hash-update|--quick|--reps|1|--csv|${sk_bench_hash_csv}"
  STDOUT "hash-lookup: millions of lookups.*hash-lookup +2\\^16 keys +1 .*hash-lookup +2\\^20 keys +2 .*hash-resize: millions.*resizing/rhash +resizing/rhash-beside +resizing/rhash-gp.*hash-resize +2\\^16 keys +1 .*hash-resize / urcu-lfht: millions.*resizing/urcu-lfht.*hash-resize +2\\^16 keys +1 .*hash-update: millions.*hash-update +2\\^16 keys +2 .*hash-resize: a cycle wrote [0-9]+ lines that the reader reads \\([0-9]+ of bucket heads, [0-9]+ of objects whose link changed${sk_bench_hash_lfht_note}.*targets.*hash-lookup 2\\^16 keys, 1 thread: Mops/s rhash / urcu-lfht.*hash-lookup 2\\^20 keys, 2 threads.*hash-resize 2\\^16 keys, 1 thread: Mops/s rhash-resizing / rhash.*hash-update 2\\^16 keys, 2 threads: Mops/s rhash / urcu-lfht"
  LABELS bench TIMEOUT 120)

# The sweep (--sweep), quick: a table per mix with every primitive (n/a
# for a peer that was not built), the thread counts (above the CPUs
# marked "(over)") and the chooser; beside one ordinary scenario, whose
# CSV rows leave the mix column empty (bench_sweep_csv checks the file).
set(sk_bench_sweep_csv ${CMAKE_CURRENT_BINARY_DIR}/bench-sweep/bench.csv)
sk_bench_cli_test(bench_sweep 0
  "bench|rwlock-read|--sweep|--quick|--reps|1|--threads|1|--csv|${sk_bench_sweep_csv}|--json|${sk_bench_sweep_csv}.json"
  STDOUT "rwlock-read.*sweep: one operation.*sweep / 100% reads: total Mops/s.*primitive +1 thread +2 threads.* 8 threads( \\(over\\))?\n-+\nscalekit .*scalekit-qsbr .*scalekit-srcu .*sk-rwlock-rb .*sk-seqlock .*sk-elided-mutex .*sk-elided-rwlock .*pthread-rwlock .*pthread-mutex .*refcount .*urcu-memb .*urcu-qsbr .*urcu-bp .*ck-epoch .*sweep / 99% reads.*sweep / 90% reads.*sweep / 50% reads.*chooser: .*100% +1 +[a-z-]+ +[0-9.]+ +[0-9.]+x [a-z-]+ +[0-9.]+x.*50% +8.*oversubscribed"
  STDERR "sweep 100% reads: [0-9]+ runs x 1 reps.*sweep 50% reads: rep 1/1"
  LABELS bench TIMEOUT 300)
add_test(NAME bench_sweep_csv COMMAND ${CMAKE_COMMAND}
  -DSK_CSV=${sk_bench_sweep_csv} -P ${PROJECT_SOURCE_DIR}/cmake/bench_sweep_check.cmake)
set_tests_properties(bench_sweep_csv PROPERTIES DEPENDS bench_sweep
  LABELS "bench;tools")
# The sweep's broken twin: the seqlock column's reader never retries
# (SCALEKIT_BENCH_SWEEP_BUSTED=seqlock): the check of every read MUST
# catch a torn value and end the run (exit status 3).  A wrong value is
# refused.
sk_bench_cli_test(bench_sweep_busted 3 "bench|sweep|--quick|--reps|1"
  STDERR "sweep: sk-seqlock-busted read a torn or freed value"
  ENV "SCALEKIT_BENCH_SWEEP_BUSTED=seqlock" LABELS bench TIMEOUT 300)
sk_bench_cli_test(bench_sweep_busted_value 1 "bench|sweep|--quick|--reps|1"
  STDERR "SCALEKIT_BENCH_SWEEP_BUSTED=rcu: the only broken twin is 'seqlock'"
  ENV "SCALEKIT_BENCH_SWEEP_BUSTED=rcu")
sk_bench_cli_test(bench_usage_sweep_value 2 "bench|--sweep=yes"
  STDERR "unknown option '--sweep=yes'")
sk_bench_cli_test(bench_usage_sweep_typo 2 "bench|sweeps"
  STDERR "unknown scenario 'sweeps' \\(scenarios: .*, sweep\\)")

# urcu-compat: liburcu's API on scalekit, measured by scalekit-bench-urcu
# beside the tool, against urcu-memb and scalekit (bench/urcu_compat.c).
# Its twins: the program missing, printing garbage (echo prints its
# arguments) or failing (scalekit-torture refuses them): n/a with the
# reason, exit status 0.
set(sk_bench_compat_csv ${CMAKE_CURRENT_BINARY_DIR}/bench-urcu-compat/bench.csv)
sk_bench_cli_test(bench_urcu_compat 0
  "bench|urcu-compat|--quick|--reps|1|--csv|${sk_bench_compat_csv}"
  STDOUT "urcu-compat: ns per rcu_read_lock.*urcu-compat +read +1 +[0-9]+\\.[0-9]+ "
  LABELS bench TIMEOUT 60)
find_program(SK_ECHO echo)
foreach(twin "missing;${CMAKE_CURRENT_BINARY_DIR}/no-such-bench-urcu;not found \\(not built\\)"
    "garbage;${SK_ECHO};gave 0 of [12] figures \\(exit status 0, unexpected output\\)"
    "failing;$<TARGET_FILE:scalekit_torture>;gave 0 of [12] figures \\(exit status [1-9]")
  list(GET twin 0 t)
  list(GET twin 1 prog)
  list(GET twin 2 why)
  sk_bench_cli_test(bench_urcu_compat_${t} 0 "bench|urcu-compat|--quick|--reps|1"
    STDOUT "urcu-compat +read +1 +n/a .*n/a urcu-compat: scalekit-bench-urcu ${why}"
    ENV "SCALEKIT_BENCH_URCU=${prog}" LABELS bench TIMEOUT 60)
endforeach()

# glibc's elided pthread_mutex peer of hash-under-lock runs in a child
# process (GLIBC_TUNABLES is read at start-up); forced here so that the
# mechanism runs on CPUs without RTM too (glibc then does not elide, and
# the note says so).  Without RTM and unforced the column is n/a.
sk_bench_cli_test(bench_hul_glibc_child 0
  "bench|hash-under-lock|--quick|--reps|1"
  ENV "SCALEKIT_BENCH_GLIBC_ELISION=force"
  STDOUT "glibc-elided.*hash-under-lock +90/10 [a-z]+ +2 .*glibc-elided: pthread_mutex in a child process .*: 1 thread [0-9.]+ Mops/s, 2 threads [0-9.]+ Mops/s.*sk-elided-mutex / glibc-elided"
  LABELS bench TIMEOUT 120)

# The command line: exact exit status 2 and a message naming the problem.
sk_bench_cli_test(bench_usage_threads_zero 2 "bench|--threads|0"
  STDERR "--threads wants a whole number from 1 to [0-9]+, not '0'")
sk_bench_cli_test(bench_usage_threads_abc 2 "bench|--threads|abc"
  STDERR "--threads wants a whole number from 1 to [0-9]+, not 'abc'")
sk_bench_cli_test(bench_usage_threads_negative 2 "bench|--threads=-1"
  STDERR "--threads wants a whole number from 1 to [0-9]+, not '-1'")
sk_bench_cli_test(bench_usage_threads_overflow 2
  "bench|--threads|18446744073709551617"
  STDERR "--threads wants a whole number")
sk_bench_cli_test(bench_usage_reps_zero 2 "bench|--reps|0"
  STDERR "--reps wants a whole number from 1 to [0-9]+, not '0'")
sk_bench_cli_test(bench_usage_missing_value 2 "bench|--reps"
  STDERR "option --reps needs a value")
sk_bench_cli_test(bench_usage_unknown_scenario 2 "bench|nosuch"
  STDERR "unknown scenario 'nosuch' \\(scenarios: read, sync, sync-many, gp-latency, expedited, poll, sync-qsbr-every, update-load, uperf, srcu-read, srcu-sync, hash-lookup, hash-resize, hash-update, hash-update-resize, hash-grow, locks, hash-under-lock, rwlock-read, list, urcu-compat, callbacks, c\\+\\+, sweep\\)")
sk_bench_cli_test(bench_usage_unknown_flag 2 "bench|--nosuch"
  STDERR "unknown option '--nosuch'")
sk_bench_cli_test(tool_usage_unknown_command 2 "nosuch"
  STDERR "unknown command 'nosuch'")
sk_bench_cli_test(tool_usage_no_command 2 ""
  STDERR "usage: scalekit <command>")
sk_bench_cli_test(tool_help 0 "--help" STDOUT "bench")
sk_bench_cli_test(bench_help 0 "bench|--help"
  STDOUT "usage: scalekit bench.*expedited.*poll.*srcu-read.*srcu-sync.*hash-lookup.*hash-resize.*hash-update.*hash-update-resize.*hash-grow.*list.*callbacks.*c\\+\\+ +the C\\+\\+ layer.*--threads N.*--reps R.*--csv FILE.*--quick.*--pin.*scalekit-exp.*scalekit-poll.*scalekit-free.*scalekit-srcu")
# Threads are placed by the scheduler unless --pin says otherwise; the
# preamble says which (the hash scenarios above run unpinned).
sk_bench_cli_test(bench_pin 0 "bench|read|--quick|--reps|1|--threads|2|--pin"
  STDOUT "threads pinned \\(--pin\\).*read +general +2 "
  LABELS bench)
sk_bench_cli_test(bench_unpinned 0 "bench|read|--quick|--reps|1"
  STDOUT "threads not pinned" LABELS bench)
sk_bench_cli_test(bench_usage_pin_value 2 "bench|--pin=1"
  STDERR "unknown option '--pin=1'")
# A CSV path that cannot be written fails before anything is measured.
sk_bench_cli_test(bench_csv_unwritable 1
  "bench|read|--quick|--csv|/dev/null/bench.csv"
  STDERR "cannot write '/dev/null/bench.csv'")
# The figures are measured through libscalekit.so: `scalekit` links the
# shared library (tools/CMakeLists.txt), and the preamble names it.
sk_bench_cli_test(bench_shared_library 0 "bench|read|--quick|--reps|1|--threads|1"
  STDOUT "library libscalekit.so.*read +general +1 " LABELS bench)

# --compare: two CSV files of --csv, no measurement (so they also run in
# the sanitizer builds: the parser's memory safety).  new.csv has an extra
# (empty) "mix" column, which must not split the keys.
set(sk_bd ${CMAKE_CURRENT_SOURCE_DIR}/bench-data)
sk_bench_cli_test(bench_compare 0 "bench|--compare|${sk_bd}/old.csv|${sk_bd}/new.csv"
  STDOUT "read,general,1,scalekit,ns/op +1 +2 +2\\.000 +WORSE\nread,general,1,urcu-memb,ns/op +1\\.5 +1\\.45 +0\\.967 +\nhash-lookup,2\\^16 keys,2,rhash,Mops/s +100 +150 +1\\.500 +BETTER\nread,general,1,scalekit/urcu-memb,ratio +0\\.66 +1\\.4 +2\\.121 +CHANGED \\(up\\).*4 rows in both files \\(1 only in old, 0 only in new\\): 1 better, 1 worse, 1 ratios changed")
sk_bench_cli_test(bench_compare_bad_header 1 "bench|--compare|${sk_bd}/old.csv|${sk_bd}/bad-header.csv"
  STDERR "bad-header.csv:1: not a bench CSV file \\(no column 'median'\\)")
sk_bench_cli_test(bench_compare_bad_number 1 "bench|--compare|${sk_bd}/bad-number.csv|${sk_bd}/old.csv"
  STDERR "bad-number.csv:3: median, min and max must be numbers")
sk_bench_cli_test(bench_compare_bad_columns 1 "bench|--compare|${sk_bd}/old.csv|${sk_bd}/bad-columns.csv"
  STDERR "bad-columns.csv:2: wrong number of columns")
# Columns are found by the header's names, in any order: a row too short
# for any of them (here the key's scenario, variant and threads, which
# this header puts last) is refused, not keyed with what an earlier line
# left behind.
sk_bench_cli_test(bench_compare_short_row 1 "bench|--compare|${sk_bd}/short-row.csv|${sk_bd}/short-row.csv"
  STDERR "short-row.csv:3: wrong number of columns")
sk_bench_cli_test(bench_compare_disjoint 1 "bench|--compare|${sk_bd}/old.csv|${sk_bd}/disjoint.csv"
  STDERR "share no row")
sk_bench_cli_test(bench_compare_missing 1 "bench|--compare|${sk_bd}/old.csv|${sk_bd}/nosuch.csv"
  STDERR "cannot read '.*nosuch.csv': No such file")
sk_bench_cli_test(bench_compare_usage 2 "bench|--compare|${sk_bd}/old.csv"
  STDERR "--compare takes two CSV files \\(old, new\\) and nothing else")
sk_bench_cli_test(bench_compare_with_scenario 2 "bench|read|--compare|a|b"
  STDERR "--compare takes two CSV files")

# --json: the environment, every figure with its repetitions' values and
# every target (one scenario, quick); a path that cannot be written fails
# before anything is measured.
set(sk_bench_json ${CMAKE_CURRENT_BINARY_DIR}/bench-json/out/bench.json)
sk_bench_cli_test(bench_json 0
  "bench|srcu-read|--quick|--reps|2|--threads|1|--json|${sk_bench_json}|--csv|${sk_bench_json}.csv"
  STDOUT "^CPU: .*; L2 [0-9]+ KiB, L3 [0-9]+ KiB; .*membarrier\\(2\\) .*\nkernel .*; built by .*\npeers: .*; commit .*; 20[0-9][0-9]-"
  STDERR "wrote .*bench.json.csv.*wrote .*bench.json"
  LABELS bench)
add_test(NAME bench_json_content COMMAND ${CMAKE_COMMAND}
  -DSK_JSON=${sk_bench_json} -P ${PROJECT_SOURCE_DIR}/cmake/bench_json_check.cmake)
set_tests_properties(bench_json_content PROPERTIES DEPENDS bench_json
  LABELS "bench;tools")
sk_bench_cli_test(bench_json_unwritable 1
  "bench|read|--quick|--json|/dev/null/bench.json"
  STDERR "cannot write '/dev/null/bench.json'")
sk_bench_cli_test(bench_usage_json_missing 2 "bench|--json"
  STDERR "option --json needs a value")
# Two output options naming one file (however spelled) would overwrite
# each other's file: refused before anything is measured.
set(sk_bench_same ${CMAKE_CURRENT_BINARY_DIR}/bench-same)
sk_bench_cli_test(bench_usage_same_file 2
  "bench|read|--quick|--reps|1|--threads|1|--csv|${sk_bench_same}/out|--json|${sk_bench_same}/./out"
  STDERR "--csv and --json name the same file")

# scripts/plot.sh: targets.svg counts each target against its own limit
# and direction (2 of the 4 rows meet theirs: an "at most" and an "at
# least" on each side); without gnuplot it says so and the test is skipped.
add_test(NAME plot_targets COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/plot.sh
  ${CMAKE_CURRENT_SOURCE_DIR}/bench-data/targets.csv
  ${CMAKE_CURRENT_BINARY_DIR}/plot-targets)
set_tests_properties(plot_targets PROPERTIES LABELS tools
  PASS_REGULAR_EXPRESSION "wrote .*targets.svg \\(4 targets, 2 met\\)"
  SKIP_REGULAR_EXPRESSION "gnuplot not found")

# --html: one self-contained page; checked by cmake/bench_html_check.cmake,
# also in headless chromium where it is installed (scripts/deps.sh --peers).
find_program(SK_CHROMIUM NAMES chromium chromium-browser)
set(sk_bench_html ${CMAKE_CURRENT_BINARY_DIR}/bench-html/index.html)
sk_bench_cli_test(bench_html 0
  "bench|read|srcu-read|gp-latency|--quick|--reps|2|--threads|2|--html|${sk_bench_html}|--csv|${sk_bench_html}.csv"
  STDERR "wrote .*index.html" LABELS bench)
# scripts/plot.sh draws its charts beside the page and puts them into it
# (nothing to do without gnuplot).
get_filename_component(sk_bench_html_dir ${sk_bench_html} DIRECTORY)
add_test(NAME bench_html_plot COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/plot.sh
  ${sk_bench_html}.csv ${sk_bench_html_dir})
set_tests_properties(bench_html_plot PROPERTIES DEPENDS bench_html
  LABELS "bench;tools"
  PASS_REGULAR_EXPRESSION "put the charts into .*index.html|gnuplot not found")
add_test(NAME bench_html_page COMMAND ${CMAKE_COMMAND}
  -DSK_HTML=${sk_bench_html} -DSK_CHROMIUM=${SK_CHROMIUM}
  -P ${PROJECT_SOURCE_DIR}/cmake/bench_html_check.cmake)
set_tests_properties(bench_html_page PROPERTIES DEPENDS "bench_html;bench_html_plot"
  LABELS "bench;tools" TIMEOUT 300)
sk_bench_cli_test(bench_usage_html_missing 2 "bench|--html"
  STDERR "option --html needs a value")

# gp-latency: the four percentiles of every grace-period primitive and
# peer, one table (quick, about 4 s).
sk_bench_cli_test(bench_gp_latency 0 "bench|gp-latency|--quick|--reps|1"
  STDOUT "gp-latency: one grace-period wait.*gp-latency +1 busy reader p50 +1 .*gp-latency +1 busy reader p90 +1 .*gp-latency +1 busy reader p99 +1 .*gp-latency +1 busy reader max +1 "
  LABELS bench TIMEOUT 120)
