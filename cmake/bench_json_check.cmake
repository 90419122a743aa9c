# SPDX-License-Identifier: MIT
# The JSON of `scalekit bench --json` (test bench_json wrote SK_JSON):
# parses (CMake's string(JSON)), has the environment, a figure with as
# many values as repetitions, and the srcu-read targets with a verdict.
file(READ "${SK_JSON}" j)
string(JSON cpu ERROR_VARIABLE err GET "${j}" env cpu)
if(err)
  message(FATAL_ERROR "${SK_JSON}: not JSON or no env.cpu: ${err}")
endif()
foreach(k cpus l2_kib l3_kib rtm membarrier kernel compiler peers commit date)
  string(JSON v ERROR_VARIABLE err GET "${j}" env ${k})
  if(err)
    message(FATAL_ERROR "${SK_JSON}: env has no ${k}")
  endif()
endforeach()
string(JSON nfig LENGTH "${j}" figures)
if(nfig LESS 2)
  message(FATAL_ERROR "${SK_JSON}: ${nfig} figures")
endif()
string(JSON reps GET "${j}" figures 0 reps)
string(JSON nval LENGTH "${j}" figures 0 values)
if(NOT reps EQUAL 2 OR NOT nval EQUAL 2)
  message(FATAL_ERROR "${SK_JSON}: first figure has reps ${reps}, ${nval} values (want 2)")
endif()
string(JSON ntar LENGTH "${j}" targets)
string(JSON tid GET "${j}" targets 0 id)
string(JSON verdict GET "${j}" targets 0 verdict)
string(JSON dir GET "${j}" targets 0 direction)
# SKIP: the peer was not built (no liburcu-dev); the verdict is still there.
if(ntar LESS 1 OR NOT tid STREQUAL "srcu-read" OR NOT verdict MATCHES "^(PASS|MISS|SKIP)$"
   OR NOT dir STREQUAL "at most")
  message(FATAL_ERROR "${SK_JSON}: targets ${ntar}, first ${tid} ${dir} ${verdict}")
endif()
message(STATUS "${SK_JSON}: ${nfig} figures, ${ntar} targets, cpu ${cpu}")
