# SPDX-License-Identifier: MIT
# sk_cli_check(args show_output): run SK_CMD with the ;-list args and
# fail (FATAL_ERROR with both streams) unless its exit status is SK_RC and
# stdout / stderr match SK_STDOUT / SK_STDERR when those are defined.
# Used in script mode by tests/bench.cmake and tests/torture.cmake.
# SK_EMULATOR (optional, words separated by "|"): the command SK_CMD runs
# under, e.g. qemu-aarch64|-L|/usr/aarch64-linux-gnu in a cross build.
function(sk_cli_check args show_output)
  string(REPLACE "|" ";" emulator "${SK_EMULATOR}")
  execute_process(COMMAND ${emulator} ${SK_CMD} ${args}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(fail "")
  if(NOT "${rc}" STREQUAL "${SK_RC}")
    string(APPEND fail "exit status ${rc}, expected ${SK_RC}\n")
  endif()
  if(DEFINED SK_STDERR AND NOT err MATCHES "${SK_STDERR}")
    string(APPEND fail "stderr does not match '${SK_STDERR}'\n")
  endif()
  if(DEFINED SK_STDOUT AND NOT out MATCHES "${SK_STDOUT}")
    string(APPEND fail "stdout does not match '${SK_STDOUT}'\n")
  endif()
  list(JOIN args " " shown)
  if(fail)
    message(FATAL_ERROR "${SK_CMD} ${shown}:\n${fail}"
      "--- stdout:\n${out}\n--- stderr:\n${err}")
  endif()
  if(show_output)
    # Show the report (histograms, figures) in the test log.
    message("${SK_CMD} ${shown}: exit status ${rc} as expected\n${out}")
  else()
    message(STATUS "${SK_CMD} ${shown}: exit status ${rc} as expected")
  endif()
endfunction()
