# SPDX-License-Identifier: MIT
# Tests of `scalekit litmus` (see docs/litmus.md).
#
# Like tests/torture.cmake, this file has two modes.  Included from
# tests/CMakeLists.txt it declares the tests.  Run as a script (cmake -P)
# it is the checker they call: it runs the tool and verifies the exact exit
# status and the output.
#
# Label "litmus".  Durations: @SECS@ in the arguments is SK_SECS, or
# SK_SLOW_SECS when the environment has SK_TEST_SLOW (sanitizer builds and
# the qemu-user jobs), so the whole suite stays within a few seconds there.
#
# Script mode variables:
#   SK_CMD, SK_ARGS, SK_RC, SK_STDOUT, SK_STDERR, SK_EMULATOR
#                 as in tests/torture.cmake (cmake/sk_cli_check.cmake)
#   SK_SECS, SK_SLOW_SECS  the values of @SECS@
#   SK_BAD_DIR    check every *.litmus file there instead: each must be
#                 reported as an error naming the file, a line and the
#                 text of its "// expect: <text>" first line, exit status 1,
#                 no crash
#   SK_FIFO_DIR   first (re)create this directory holding a FIFO x.litmus
#                 and a copy of litmus/CoWW.litmus, write its path for
#                 @FIFO_DIR@ in the arguments, and run the tool under
#                 timeout(1) (when installed): an open that waits for a
#                 writer fails the test with exit status 124 instead of
#                 hanging it

include(${CMAKE_CURRENT_LIST_DIR}/../cmake/sk_cli_check.cmake)
if(CMAKE_SCRIPT_MODE_FILE)
  if(DEFINED SK_BAD_DIR)
    file(GLOB bad ${SK_BAD_DIR}/*.litmus)
    list(LENGTH bad n)
    if(n EQUAL 0)
      message(FATAL_ERROR "no *.litmus file in ${SK_BAD_DIR}")
    endif()
    set(SK_RC 1)
    foreach(f ${bad})
      file(STRINGS ${f} first LIMIT_COUNT 1)
      if(NOT first MATCHES "^// expect: (.+)$")
        message(FATAL_ERROR "${f}: the first line must be // expect: <message>")
      endif()
      set(want "${CMAKE_MATCH_1}")
      string(REGEX REPLACE "([][+.*()^$?|\\\\])" "\\\\\\1" want_re "${want}")
      string(REGEX REPLACE "([][+.*()^$?|\\\\])" "\\\\\\1" f_re "${f}")
      set(SK_STDERR "scalekit litmus: ${f_re}:[0-9]+: ${want_re}")
      sk_cli_check("litmus;--seconds;0.05;${f}" OFF)
    endforeach()
    message("${n} malformed files: each reported with its message, none crashed")
    return()
  endif()
  set(secs "${SK_SECS}")
  if(NOT "$ENV{SK_TEST_SLOW}" STREQUAL "" AND NOT "$ENV{SK_TEST_SLOW}" STREQUAL "0")
    set(secs "${SK_SLOW_SECS}")
  endif()
  string(REPLACE "@SECS@" "${secs}" args "${SK_ARGS}")
  if(DEFINED SK_FIFO_DIR)
    file(REMOVE_RECURSE ${SK_FIFO_DIR})
    file(MAKE_DIRECTORY ${SK_FIFO_DIR})
    file(COPY ${CMAKE_CURRENT_LIST_DIR}/../litmus/CoWW.litmus
      DESTINATION ${SK_FIFO_DIR})
    execute_process(COMMAND mkfifo ${SK_FIFO_DIR}/x.litmus RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "mkfifo ${SK_FIFO_DIR}/x.litmus: ${rc}")
    endif()
    string(REPLACE "@FIFO_DIR@" "${SK_FIFO_DIR}" args "${args}")
    find_program(sk_timeout timeout)
    if(sk_timeout)
      set(SK_WRAP ${sk_timeout} 30)
    endif()
  endif()
  string(REPLACE "|" ";" args "${args}")
  sk_cli_check("${args}" ON)
  return()
endif()

if(NOT TARGET scalekit_tool)
  return()
endif()

set(sk_lit_dir ${PROJECT_SOURCE_DIR}/litmus)
set(sk_lit_bad ${PROJECT_SOURCE_DIR}/tests/litmus-bad)

# sk_litmus_test(NAME RC ARGS [SECS s] [SLOW_SECS s] [STDOUT re] [STDERR re]
#                [BAD_DIR dir] [FIFO_DIR dir] [LABELS ...] [ENV ...]
#                [TIMEOUT s])
function(sk_litmus_test name rc args)
  cmake_parse_arguments(T ""
    "SECS;SLOW_SECS;STDOUT;STDERR;BAD_DIR;FIFO_DIR;TIMEOUT" "LABELS;ENV"
    ${ARGN})
  if(NOT DEFINED T_SECS)
    set(T_SECS 1)
  endif()
  if(NOT DEFINED T_SLOW_SECS)
    set(T_SLOW_SECS ${T_SECS})
  endif()
  sk_cli_test_defs(defs scalekit_tool "${args}" ${rc}
    OPTS SECS SLOW_SECS STDOUT STDERR BAD_DIR FIFO_DIR)
  set(T_LABELS "litmus;${T_LABELS}")
  sk_cli_add_test(${name} ${CMAKE_CURRENT_FUNCTION_LIST_FILE} litmus 120)
endfunction()

# The shipped suite, briefly: no FAIL (Never outcomes unseen) and no
# error.  "Not observed" is a warning (x86 shows no MP, LB, IRIW...).
# This runs every file the fence legends of src/ name.
sk_litmus_test(litmus_suite 0 "litmus|--seconds|@SECS@|${sk_lit_dir}"
  SECS 0.25 SLOW_SECS 0.05 TIMEOUT 300
  STDOUT "litmus: [0-9]+ tests: [0-9]+ Ok, [0-9]+ Not observed, 0 FAIL, 0 errors\n$")

# The harness sees real reordering: SB without fences observed on x86
# (labels: qemu-user does not reorder like the host; sanitizer
# instrumentation between the store and the load drains the store
# buffer), SB with sk_smp_mb() never (part of litmus_suite, and here
# for longer).
sk_litmus_test(litmus_sb_observed 0
  "litmus|--require-observed|--seconds|@SECS@|${sk_lit_dir}/SB.litmus"
  SECS 2 STDOUT "observed, [1-9][0-9]* of.*Verdict: Ok" LABELS "noqemu;nosan")
sk_litmus_test(litmus_sb_mbs_never 0
  "litmus|--seconds|@SECS@|${sk_lit_dir}/SB+mbs.litmus"
  SECS 2 SLOW_SECS 0.3 STDOUT "not observed, 0 of.*Verdict: Ok")

# --busted: grace periods that wait for nothing.  The RCU and SRCU
# deferred-free tests must FAIL (exit status 1): proof that they run
# through the real sk_synchronize_rcu() / sk_synchronize_srcu().
# A Never outcome seen stops the run at once, so the 10 s are a bound for
# loaded machines (2 s missed it once under a load average of 15).
sk_litmus_test(litmus_busted_rcu 1
  "litmus|--busted|--seconds|@SECS@|${sk_lit_dir}/rcu-deferred-free.litmus"
  SECS 10 STDOUT "Verdict: FAIL \\(expected Never\\).*1 FAIL" LABELS noqemu)
sk_litmus_test(litmus_busted_lisa 1
  "litmus|--busted|--seconds|@SECS@|${sk_lit_dir}/lisa-rcu-sb.litmus"
  SECS 10 STDOUT "Verdict: FAIL \\(expected Never\\).*1 FAIL"
  LABELS "noqemu;nosan") # store buffering: TSan's atomics hide it
sk_litmus_test(litmus_busted_srcu 1
  "litmus|--busted|--seconds|@SECS@|${sk_lit_dir}/srcu-deferred-free.litmus"
  SECS 10 STDOUT "Verdict: FAIL \\(expected Never\\).*1 FAIL" LABELS noqemu)

# Malformed files (the fuzzer's crashers among them): a clean error each.
# One run per file (7 s under ASan on a quiet machine); a loaded one
# (load average 30) took over 120 s.
sk_litmus_test(litmus_bad_files 1 "" BAD_DIR ${sk_lit_bad} TIMEOUT 300)
# A bad file among good ones: reported, and the others still run.
sk_litmus_test(litmus_goes_on 1
  "litmus|--seconds|0.05|${sk_lit_bad}/unsupported-call-rcu.litmus|${sk_lit_dir}/CoWW.litmus"
  STDOUT "Test CoWW .*1 Ok, 0 Not observed, 0 FAIL, 1 errors"
  STDERR "unsupported-call-rcu.litmus:[0-9]+: unsupported: call_rcu")
# "Result: DEADLOCK": the deadlock the runner stops at is the verdict (Ok,
# not an error); "Result: Flag srcu-bad-nesting": the section left open is
# closed and reported; a test without a final clause runs.
sk_litmus_test(litmus_deadlock_flag 0
  "litmus|--seconds|0.1|${sk_lit_dir}/deadlock-expected.litmus|${sk_lit_dir}/srcu-flag-bad-nesting.litmus|${sk_lit_dir}/no-final-clause.litmus"
  STDOUT "Deadlock: [^\n]*deadlock-expected.litmus:[0-9]+: P0 waits for a grace period inside a read section[^\n]*\nVerdict: Ok \\(expected DEADLOCK\\).*Flag srcu-bad-nesting: a process ended inside its SRCU read section.*Condition exists \\(none\\): observed.*3 tests: 3 Ok, 0 Not observed, 0 FAIL, 0 errors")
# A FIFO named *.litmus (it would block an open for reading until a
# writer comes): a directory scan skips it with a warning and runs the
# other files; given by name it is an error.  Neither open may block.
sk_litmus_test(litmus_dir_skips_fifo 0
  "litmus|--seconds|0.05|@FIFO_DIR@"
  FIFO_DIR ${CMAKE_CURRENT_BINARY_DIR}/litmus-fifo-dir TIMEOUT 120
  STDOUT "Test CoWW .*litmus: 1 tests: 1 Ok, 0 Not observed, 0 FAIL, 0 errors"
  STDERR "warning: [^\n]*/x.litmus: a FIFO, not a regular file, skipped")
sk_litmus_test(litmus_fifo_argument 1
  "litmus|--seconds|0.05|@FIFO_DIR@/x.litmus|@FIFO_DIR@/CoWW.litmus"
  FIFO_DIR ${CMAKE_CURRENT_BINARY_DIR}/litmus-fifo-arg TIMEOUT 120
  STDOUT "Test CoWW .*litmus: 2 tests: 1 Ok, 0 Not observed, 0 FAIL, 1 errors"
  STDERR "litmus: [^\n]*/x.litmus: a FIFO, not a regular file\n")
# A directory is walked with its subdirectories: tests/ holds no *.litmus
# of its own, its subdirectory litmus-bad/ the malformed files, every one
# an error (or, --parse-only, a runtime misuse that parses), those of
# unsupported constructs counted apart.
sk_litmus_test(litmus_dir_walks_subdirs 1
  "litmus|--parse-only|${PROJECT_SOURCE_DIR}/tests"
  STDOUT "litmus: [1-9][0-9]* tests: [0-9]+ Ok, 0 Not observed, 0 FAIL, [1-9][0-9]* errors \\([1-9][0-9]* unsupported\\)\n$"
  STDERR "litmus-bad/unsupported-while.litmus:[0-9]+: unsupported: while")
# filter: the dropped iterations are reported, the verdict is about the
# others (filter-always would FAIL without its filter).
sk_litmus_test(litmus_filter 0
  "litmus|--seconds|@SECS@|${sk_lit_dir}/filter-always.litmus"
  SECS 0.5 SLOW_SECS 0.2
  STDOUT "Filter: [0-9]+ of [0-9]+ iterations dropped\nCondition forall.*Verdict: Ok \\(expected Always\\)")
# A pointer read before the store that publishes it, then followed: the
# null dereferences are left out and counted, the verdict is about the
# other iterations (MP+rel+acq-null-deref would FAIL if they were
# counted).  One thread: the processes take turns in both orders, so P1
# reads p before P0 stores to it in some iterations for certain.
sk_litmus_test(litmus_null_deref 0
  "litmus|--threads|1|--seconds|@SECS@|${sk_lit_dir}/MP+rel+acq-null-deref.litmus"
  SECS 0.5 SLOW_SECS 0.2
  STDOUT "Null dereference: [1-9][0-9]* of [0-9]+ iterations left out[^\n]*\nCondition exists \\(1:r1=0\\): not observed.*Verdict: Ok \\(expected Never\\)")
sk_litmus_test(litmus_json 0
  "litmus|--json|--seconds|0.05|${sk_lit_dir}/CoWW.litmus"
  STDOUT "^\\[\n  {\"file\": \"[^\"]*CoWW.litmus\", \"name\": \"CoWW\", \"expected\": \"Never\".*\"null_deref\": 0, .*\"verdict\": \"Ok\".*}\n\\]\n$")

# The command line.
sk_litmus_test(litmus_usage_no_file 2 "litmus" STDERR "no FILE or DIR given")
sk_litmus_test(litmus_usage_seconds 2 "litmus|--seconds|abc|x.litmus"
  STDERR "--seconds wants a number above 0")
sk_litmus_test(litmus_usage_unknown 2 "litmus|--nosuch|x.litmus"
  STDERR "unknown option '--nosuch'")
sk_litmus_test(litmus_missing_file 1 "litmus|/nonexistent.litmus"
  STDERR "/nonexistent.litmus: No such file")
sk_litmus_test(litmus_help 0 "litmus|--help" STDOUT "usage: scalekit litmus")
