# SPDX-License-Identifier: MIT
# The tests of the `scalekit` command: tests/bench.cmake, tests/torture.cmake
# and tests/litmus.cmake include this file in both of their modes.
# Declaring a test (configure time): sk_cli_test_defs() and sk_cli_add_test(),
# which each file's own registration function calls.  Checking it (script
# mode, cmake -P): running SK_CMD with sk_cli_run() / sk_cli_check().
include_guard(GLOBAL)
#
# sk_cli_run(args): run SK_CMD with the ;-list args, behind the ;-list
# SK_WRAP when that is set (e.g. valgrind and its options) and under
# SK_EMULATOR when that is set (words separated by "|", e.g.
# qemu-aarch64|-L|/usr/aarch64-linux-gnu in a cross build); set SK_CLI_RC,
# SK_CLI_OUT, SK_CLI_ERR and SK_CLI_SHOWN (the command line, for messages)
# in the caller's scope.
function(sk_cli_run args)
  string(REPLACE "|" ";" emulator "${SK_EMULATOR}")
  execute_process(COMMAND ${SK_WRAP} ${emulator} ${SK_CMD} ${args}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  list(JOIN args " " shown)
  set(SK_CLI_RC "${rc}" PARENT_SCOPE)
  set(SK_CLI_OUT "${out}" PARENT_SCOPE)
  set(SK_CLI_ERR "${err}" PARENT_SCOPE)
  set(SK_CLI_SHOWN "${SK_CMD} ${shown}" PARENT_SCOPE)
endfunction()

# sk_cli_fail(why): FATAL_ERROR naming the last sk_cli_run() command, why,
# and both of its streams.
function(sk_cli_fail why)
  message(FATAL_ERROR "${SK_CLI_SHOWN}:\n${why}"
    "--- stdout:\n${SK_CLI_OUT}\n--- stderr:\n${SK_CLI_ERR}")
endfunction()

# sk_cli_check(args show_output): sk_cli_run(args), then fail unless its
# exit status is SK_RC, stdout / stderr match SK_STDOUT / SK_STDERR when
# those are defined, and stderr does not match SK_STDERR_NOT when defined.
# The SK_CLI_* results stay set in the caller's scope.
function(sk_cli_check args show_output)
  sk_cli_run("${args}")
  set(fail "")
  if(NOT "${SK_CLI_RC}" STREQUAL "${SK_RC}")
    string(APPEND fail "exit status ${SK_CLI_RC}, expected ${SK_RC}\n")
  endif()
  if(DEFINED SK_STDERR AND NOT SK_CLI_ERR MATCHES "${SK_STDERR}")
    string(APPEND fail "stderr does not match '${SK_STDERR}'\n")
  endif()
  if(DEFINED SK_STDERR_NOT AND SK_CLI_ERR MATCHES "${SK_STDERR_NOT}")
    string(APPEND fail "stderr matches '${SK_STDERR_NOT}'\n")
  endif()
  if(DEFINED SK_STDOUT AND NOT SK_CLI_OUT MATCHES "${SK_STDOUT}")
    string(APPEND fail "stdout does not match '${SK_STDOUT}'\n")
  endif()
  if(fail)
    sk_cli_fail("${fail}")
  endif()
  if(show_output)
    # Show the report (histograms, figures) in the test log.
    message("${SK_CLI_SHOWN}: exit status ${SK_CLI_RC} as expected\n"
      "${SK_CLI_OUT}")
  else()
    message(STATUS "${SK_CLI_SHOWN}: exit status ${SK_CLI_RC} as expected")
  endif()
  foreach(v RC OUT ERR SHOWN)
    set(SK_CLI_${v} "${SK_CLI_${v}}" PARENT_SCOPE)
  endforeach()
endfunction()

# ---- declaring the tests ----------------------------------------------------

# sk_cli_test_defs(OUT TOOL ARGS RC [OPTS NAME...]): in OUT, the -D
# definitions of a test's checker: SK_CMD (the program of target TOOL),
# SK_ARGS, SK_RC, then -DSK_<NAME>=<value> for each NAME whose T_<NAME> the
# calling function defines (its cmake_parse_arguments() prefix is T), then
# SK_EMULATOR in a cross build.
function(sk_cli_test_defs out tool args rc)
  cmake_parse_arguments(D "" "" "OPTS" ${ARGN})
  set(defs -DSK_CMD=$<TARGET_FILE:${tool}> "-DSK_ARGS=${args}" -DSK_RC=${rc})
  foreach(v ${D_OPTS})
    if(DEFINED T_${v})
      list(APPEND defs "-DSK_${v}=${T_${v}}")
    endif()
  endforeach()
  if(CMAKE_CROSSCOMPILING_EMULATOR)
    list(JOIN CMAKE_CROSSCOMPILING_EMULATOR "|" emu)
    list(APPEND defs "-DSK_EMULATOR=${emu}")
  endif()
  set(${out} "${defs}" PARENT_SCOPE)
endfunction()

# sk_cli_add_test(NAME SCRIPT LABELS TIMEOUT): the test NAME runs
# `cmake <defs> -P SCRIPT`, where defs is the caller's variable of that
# name, labelled with the caller's T_LABELS (LABELS when that is empty),
# with the caller's T_TIMEOUT (TIMEOUT when that is empty) and, when the
# caller's T_ENV is set, that environment.
function(sk_cli_add_test name script labels timeout)
  if(T_LABELS)
    set(labels "${T_LABELS}")
  endif()
  if(T_TIMEOUT)
    set(timeout ${T_TIMEOUT})
  endif()
  add_test(NAME ${name} COMMAND ${CMAKE_COMMAND} ${defs} -P ${script})
  set_tests_properties(${name} PROPERTIES LABELS "${labels}"
    TIMEOUT ${timeout})
  if(T_ENV)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${T_ENV}")
  endif()
endfunction()
