# SPDX-License-Identifier: MIT
# Tests of `scalekit torture` (see docs/torture.md).
#
# Like tests/bench.cmake, this file has two modes.  Included from
# tests/CMakeLists.txt it declares the tests.  Run as a script (cmake -P) it
# is the checker they call: it runs the tool and verifies the exact exit
# status and the output, which WILL_FAIL (any non-zero status) cannot.
#
# Labels:
#   torture       short runs (about 10 s each, 3 s under sanitizers), the
#                 --busted detector proofs and the command-line checks;
#                 part of `make check` and of the sanitizer builds.
#   torture-long  every mode for 600 s, for `make torture` (ctest -L
#                 torture-long, with SK_TORTURE_LONG=1).  make check
#                 passes -LE torture-long; a plain `ctest` would pick them
#                 up, so each one skips itself (CTest "Skipped", not a
#                 failure) unless SK_TORTURE_LONG=1 is set.
#
# Script mode variables:
#   SK_CMD        the program to run
#   SK_ARGS       its arguments, separated by "|"; @DUR@ is replaced by
#                 SK_DURATION, or by SK_SLOW_DURATION when the environment
#                 has SK_TEST_SLOW (sanitizer builds: make check-asan/tsan)
#   SK_RC         the exit status expected
#   SK_STDOUT     a regular expression stdout must match (optional)
#   SK_STDERR     a regular expression stderr must match (optional)
#   SK_LONG       1: a torture-long test (skips itself, see above)
#   SK_EMULATOR   the command SK_CMD runs under, words separated by "|"
#                 (cross builds: CMAKE_CROSSCOMPILING_EMULATOR; optional)

if(CMAKE_SCRIPT_MODE_FILE)
  if(SK_LONG AND NOT "$ENV{SK_TORTURE_LONG}" STREQUAL "1")
    # Matched by the test's SKIP_REGULAR_EXPRESSION.
    message("skipped: a 10-minute torture test; run it with `make torture` "
      "(SK_TORTURE_LONG=1 ctest -L torture-long)")
    return()
  endif()
  if(NOT DEFINED SK_SLOW_DURATION)
    set(SK_SLOW_DURATION ${SK_DURATION})
  endif()
  set(dur "${SK_DURATION}")
  if(NOT "$ENV{SK_TEST_SLOW}" STREQUAL "" AND NOT "$ENV{SK_TEST_SLOW}" STREQUAL "0")
    set(dur "${SK_SLOW_DURATION}")
  endif()
  string(REPLACE "@DUR@" "${dur}" args "${SK_ARGS}")
  string(REPLACE "|" ";" args "${args}")
  include(${CMAKE_CURRENT_LIST_DIR}/../cmake/sk_cli_check.cmake)
  sk_cli_check("${args}" ON)
  return()
endif()

if(NOT TARGET scalekit_tool)
  return()
endif()

# TSan: the lock-order detector stays on (TSan builds of sk_rhash use 32
# stripes, within the 64 held locks it tracks).
set(sk_tort_tsan "TSAN_OPTIONS=halt_on_error=1 second_deadlock_stack=1")
# --busted runs race on purpose (objects are reused while readers look at
# them); a sanitizer report would replace the verdict the test checks.
set(sk_tort_busted_env
  "TSAN_OPTIONS=report_bugs=0"
  "ASAN_OPTIONS=detect_leaks=0")

# sk_torture_test(NAME RC ARGS [DURATION s] [SLOW_DURATION s] [STDOUT re]
#                 [STDERR re] [LABELS ...] [TIMEOUT s] [ENV ...] [LONG])
function(sk_torture_test name rc args)
  cmake_parse_arguments(T "LONG" "DURATION;SLOW_DURATION;STDOUT;STDERR;TIMEOUT"
    "LABELS;ENV" ${ARGN})
  set(defs -DSK_CMD=$<TARGET_FILE:scalekit_tool> "-DSK_ARGS=${args}" -DSK_RC=${rc})
  if(CMAKE_CROSSCOMPILING_EMULATOR)
    list(JOIN CMAKE_CROSSCOMPILING_EMULATOR "|" emu)
    list(APPEND defs "-DSK_EMULATOR=${emu}")
  endif()
  if(DEFINED T_DURATION)
    list(APPEND defs -DSK_DURATION=${T_DURATION})
  endif()
  if(DEFINED T_SLOW_DURATION)
    list(APPEND defs -DSK_SLOW_DURATION=${T_SLOW_DURATION})
  endif()
  if(DEFINED T_STDOUT)
    list(APPEND defs "-DSK_STDOUT=${T_STDOUT}")
  endif()
  if(DEFINED T_STDERR)
    list(APPEND defs "-DSK_STDERR=${T_STDERR}")
  endif()
  if(T_LONG)
    list(APPEND defs -DSK_LONG=1)
  endif()
  if(NOT T_LABELS)
    set(T_LABELS torture)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 180)
  endif()
  add_test(NAME ${name}
    COMMAND ${CMAKE_COMMAND} ${defs} -P ${CMAKE_CURRENT_FUNCTION_LIST_FILE})
  set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}"
    TIMEOUT ${T_TIMEOUT})
  if(T_ENV)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${T_ENV}")
  endif()
  if(T_LONG)
    set_tests_properties(${name} PROPERTIES
      SKIP_REGULAR_EXPRESSION "skipped: a 10-minute torture test")
  endif()
endfunction()

# ---- short runs: about 10 s each, 3 s under sanitizers ---------------------
# Fixed seeds: a failure names its seed and replays with it.
set(sk_ok "Reader Pipe: +[0-9]+ [0-9]+ 0 0 0 0 0 0 0 0 0\n.*max pipe count: [01]  errors: 0\nSUCCESS\n$")
set(sk_ok_ds "errors: 0\nSUCCESS\n$")

sk_torture_test(torture_rcu 0 "torture|rcu|--duration|@DUR@|--seed|1"
  DURATION 10 SLOW_DURATION 3 STDOUT "${sk_ok}")
sk_torture_test(torture_qsbr 0 "torture|qsbr|--duration|@DUR@|--seed|2"
  DURATION 10 SLOW_DURATION 3 STDOUT "${sk_ok}")
sk_torture_test(torture_mixed 0 "torture|mixed|--duration|@DUR@|--seed|3"
  DURATION 10 SLOW_DURATION 3 STDOUT "${sk_ok}")
sk_torture_test(torture_srcu_sleep 0 "torture|srcu|--sleep|--duration|@DUR@|--seed|4"
  DURATION 10 SLOW_DURATION 3
  STDOUT "sections ended by another thread: [1-9].*${sk_ok_ds}")
sk_torture_test(torture_list 0 "torture|list|--duration|@DUR@|--seed|5"
  DURATION 10 SLOW_DURATION 3 STDOUT "list: [1-9][0-9]* walks.*${sk_ok_ds}")
sk_torture_test(torture_rhash 0 "torture|rhash|--fault-rate|0.01|--duration|@DUR@|--seed|6"
  DURATION 10 SLOW_DURATION 3
  STDOUT "rhash: [1-9][0-9]* lookups.*[1-9][0-9]* resizes.*${sk_ok_ds}"
  ENV "${sk_tort_tsan}")
# Threads come and go, a forked child runs its own torture, everything
# pauses now and then; more threads than CPUs.
sk_torture_test(torture_rcu_churn_fork_stutter 0
  "torture|rcu|--churn|--fork|--stutter|--readers|8|--duration|@DUR@|--seed|7"
  DURATION 10 SLOW_DURATION 4
  STDOUT "Reader Pipe: +[0-9]+ [0-9]+ 0 0 0 0 0 0 0 0 0\n.*short-lived reader threads: [1-9].*max pipe count: [01]  errors: 0\nSUCCESS\n$"
  STDERR "fork child [0-9]+: SUCCESS|--fork: not run under ThreadSanitizer")
# Forward progress under a callback flood: bounded memory, grace periods.
sk_torture_test(torture_rcu_flood 0 "torture|rcu|--flood|--duration|@DUR@|--seed|8"
  DURATION 10 SLOW_DURATION 3 STDOUT "peak RSS: .*${sk_ok_ds}")

# Expedited grace periods only, one reader and one updater: most of them
# try the readers' handshake, and some must get it (alone on the machine:
# the reader must run while the updater waits).
sk_torture_test(torture_rcu_exp_handshake 0
  "torture|rcu|--gp|exp|--readers|1|--updaters|1|--duration|@DUR@|--seed|14"
  DURATION 10 SLOW_DURATION 3
  STDOUT "Reader Pipe: +[0-9]+ [0-9]+ 0 0 0 0 0 0 0 0 0\n.*expedited first barriers: [1-9][0-9]* handshakes.*max pipe count: [01]  errors: 0\nSUCCESS\n$")
set_tests_properties(torture_rcu_exp_handshake PROPERTIES RUN_SERIAL TRUE)

sk_torture_test(torture_srcu 0 "torture|srcu|--duration|@DUR@|--seed|9"
  DURATION 10 SLOW_DURATION 3 STDOUT "${sk_ok_ds}")
sk_torture_test(torture_srcu_flood 0 "torture|srcu|--flood|--duration|@DUR@|--seed|10"
  DURATION 10 SLOW_DURATION 3 STDOUT "peak RSS: .*${sk_ok_ds}")

# ---- --busted: the detector must see grace periods that do not wait --------
sk_torture_test(torture_busted_rcu 1 "torture|rcu|--busted|--duration|@DUR@|--seed|11"
  DURATION 3 SLOW_DURATION 8 STDOUT "the detector caught it.*\nFAILURE\n$"
  STDERR "ERROR: (reader|helper|updater)" ENV "${sk_tort_busted_env}")
sk_torture_test(torture_busted_srcu 1 "torture|srcu|--busted|--duration|@DUR@|--seed|12"
  DURATION 3 SLOW_DURATION 8 STDOUT "the detector caught it.*\nFAILURE\n$"
  STDERR "ERROR: (reader|helper|updater)" ENV "${sk_tort_busted_env}")
sk_torture_test(torture_busted_rhash 1 "torture|rhash|--busted|--duration|@DUR@|--seed|13"
  DURATION 3 SLOW_DURATION 8 STDOUT "the detector caught it.*\nFAILURE\n$"
  STDERR "ERROR: (reader|helper|updater)" ENV "${sk_tort_busted_env}")

# ---- the command line: exit status 2 and a message naming the problem ----
sk_torture_test(torture_usage_no_mode 2 "torture"
  STDERR "missing mode \\(modes: rcu, qsbr, mixed, srcu, list, rhash\\)")
sk_torture_test(torture_usage_unknown_mode 2 "torture|nosuch"
  STDERR "unknown mode 'nosuch'")
sk_torture_test(torture_usage_duration_abc 2 "torture|rcu|--duration|abc"
  STDERR "--duration wants a whole number from 1 to [0-9]+, not 'abc'")
sk_torture_test(torture_usage_readers_zero 2 "torture|rcu|--readers|0"
  STDERR "--readers wants a whole number from 1 to [0-9]+, not '0'")
sk_torture_test(torture_usage_gp_foo 2 "torture|rcu|--gp|foo"
  STDERR "unknown grace-period type 'foo' in --gp")
sk_torture_test(torture_usage_gp_unsupported 2 "torture|srcu|--gp|sync,cond"
  STDERR "--gp cond: srcu has no such grace-period primitive")
sk_torture_test(torture_usage_seed 2 "torture|rcu|--seed|-5"
  STDERR "--seed wants a 64-bit number")
sk_torture_test(torture_usage_fault_rate 2 "torture|rhash|--fault-rate|1.5"
  STDERR "--fault-rate wants a fraction from 0 to 1")
sk_torture_test(torture_usage_fault_rate_mode 2 "torture|list|--fault-rate|0.1"
  STDERR "--fault-rate applies to rhash only")
sk_torture_test(torture_usage_unknown_option 2 "torture|rcu|--nosuch"
  STDERR "unknown option '--nosuch'")
sk_torture_test(torture_usage_missing_value 2 "torture|rcu|--duration"
  STDERR "option --duration needs a value")
sk_torture_test(torture_help 0 "torture|--help"
  STDOUT "usage: scalekit torture MODE.*--busted.*--fault-rate P")
foreach(t torture_usage_no_mode torture_usage_unknown_mode
    torture_usage_duration_abc torture_usage_readers_zero torture_usage_gp_foo
    torture_usage_gp_unsupported torture_usage_seed torture_usage_fault_rate
    torture_usage_fault_rate_mode torture_usage_unknown_option
    torture_usage_missing_value torture_help)
  set_tests_properties(${t} PROPERTIES TIMEOUT 30)
endforeach()

# ---- make torture: every mode for 10 minutes --------------------------------
sk_torture_test(torture_long_rcu 0
  "torture|rcu|--churn|--fork|--stutter|--readers|8|--duration|@DUR@"
  DURATION 600 STDOUT "${sk_ok}" LABELS torture-long TIMEOUT 900 LONG)
sk_torture_test(torture_long_qsbr 0 "torture|qsbr|--stutter|--duration|@DUR@"
  DURATION 600 STDOUT "${sk_ok}" LABELS torture-long TIMEOUT 900 LONG)
sk_torture_test(torture_long_mixed 0 "torture|mixed|--churn|--readers|8|--duration|@DUR@"
  DURATION 600 STDOUT "${sk_ok}" LABELS torture-long TIMEOUT 900 LONG)
sk_torture_test(torture_long_srcu 0 "torture|srcu|--sleep|--stutter|--duration|@DUR@"
  DURATION 600 STDOUT "${sk_ok_ds}" LABELS torture-long TIMEOUT 900 LONG)
sk_torture_test(torture_long_list 0 "torture|list|--churn|--duration|@DUR@"
  DURATION 600 STDOUT "${sk_ok_ds}" LABELS torture-long TIMEOUT 900 LONG)
sk_torture_test(torture_long_rhash 0 "torture|rhash|--fault-rate|0.01|--duration|@DUR@"
  DURATION 600 STDOUT "${sk_ok_ds}" LABELS torture-long TIMEOUT 900 LONG
  ENV "${sk_tort_tsan}")
sk_torture_test(torture_long_rcu_flood 0 "torture|rcu|--flood|--duration|@DUR@"
  DURATION 600 STDOUT "${sk_ok_ds}" LABELS torture-long TIMEOUT 900 LONG)
sk_torture_test(torture_long_srcu_flood 0 "torture|srcu|--flood|--duration|@DUR@"
  DURATION 600 STDOUT "${sk_ok_ds}" LABELS torture-long TIMEOUT 900 LONG)
