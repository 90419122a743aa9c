# SPDX-License-Identifier: MIT
#
# scalekit_sim: the torture tool (scalekit-torture's sources) linked
# against the simulated-elision library build (scalekit_elide_sim,
# tests/elide_sim.cmake) and compiled
# with SK_TORT_SIM=1, so that `scalekit torture locks` runs the elided
# locks on the simulated backend with random injected aborts, and its
# --busted twin is the library's (simulated sections that do not look at
# the lock word).  A test program only: never installed.

if(CMAKE_SCRIPT_MODE_FILE)
  return()
endif()
if(NOT TARGET scalekit_torture OR NOT TARGET scalekit_elide_sim)
  return()
endif()

add_executable(scalekit_tool_sim ${SK_TORTURE_SOURCES})
set_target_properties(scalekit_tool_sim PROPERTIES OUTPUT_NAME scalekit_sim)
target_include_directories(scalekit_tool_sim PRIVATE ${PROJECT_SOURCE_DIR}/tools)
target_compile_definitions(scalekit_tool_sim PRIVATE SK_TORT_SIM=1
  SK_VERSION="${PROJECT_VERSION}")
target_link_libraries(scalekit_tool_sim PRIVATE sk_tort_ops scalekit_elide_sim m)

sk_torture_test(torture_locks_sim 0
  "torture|locks|--lock|elided-mutex|--duration|@DUR@|--seed|19"
  DURATION 2 SLOW_DURATION 2 TOOL scalekit_tool_sim
  STDOUT "elided-mutex/sim .*errors 0\nerrors: 0\nSUCCESS\n$")
sk_torture_test(torture_locks_sim_rwlock 0
  "torture|locks|--lock|elided-rwlock|--duration|@DUR@|--seed|20"
  DURATION 2 SLOW_DURATION 2 TOOL scalekit_tool_sim
  STDOUT "elided-rwlock/sim .*errors 0\nerrors: 0\nSUCCESS\n$")
# Not under TSan: there the library's abort (several threads abort at
# once on the corrupted lock word) went through TSan's deferred signal
# handling and the run hung once until the test's timeout.
if(SK_SANITIZE STREQUAL "thread")
  return()
endif()
sk_torture_test(torture_busted_locks_sim 1
  "torture|locks|--lock|elided-spinlock|--busted|--duration|@DUR@|--seed|21"
  DURATION 10 SLOW_DURATION 10 TOOL scalekit_tool_sim
  STDOUT "the detector caught it.*\nFAILURE\n$"
  STDERR "ERROR: elided-spinlock/sim" ENV "${sk_tort_busted_env}")
