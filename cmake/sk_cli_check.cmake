# SPDX-License-Identifier: MIT
# Running SK_CMD in script mode, for tests/bench.cmake and tests/torture.cmake.
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
