# SPDX-License-Identifier: MIT
# Declaring the CTests of the `scalekit` command: tests/bench.cmake,
# tests/torture.cmake and tests/litmus.cmake each define one function that
# registers a test of theirs with these two.  The checker such a test runs
# is the same .cmake file in script mode (cmake/sk_cli_check.cmake).
include_guard(GLOBAL)

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
# name, with LABELS, TIMEOUT and, when the caller's T_ENV is set, that
# environment.
function(sk_cli_add_test name script labels timeout)
  add_test(NAME ${name} COMMAND ${CMAKE_COMMAND} ${defs} -P ${script})
  set_tests_properties(${name} PROPERTIES LABELS "${labels}"
    TIMEOUT ${timeout})
  if(T_ENV)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${T_ENV}")
  endif()
endfunction()
