# SPDX-License-Identifier: MIT
# The check of urcu_lfht_no_flavor_lib (tests/urcu/CMakeLists.txt): the
# program EXE loads no liburcu RCU flavor library (liburcu.so,
# liburcu-memb, -qsbr, -bp, -mb, -signal), neither as a NEEDED entry
# (readelf -d) nor through another library (ldd); liburcu-cds and
# liburcu-common are fine.
#
#   cmake -DREADELF=readelf -DLDD=ldd -DEXE=build/tests/urcu/urcu_lfht \
#         -P tests/urcu/needed.cmake
foreach(v READELF LDD EXE)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "needed: -D${v}=... is required")
  endif()
endforeach()
set(flavor_re "liburcu(-memb|-qsbr|-bp|-mb|-signal)?\\.so")
execute_process(COMMAND ${READELF} -d ${EXE} OUTPUT_VARIABLE dyn RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "needed: ${READELF} -d ${EXE} failed")
endif()
execute_process(COMMAND ${LDD} ${EXE} OUTPUT_VARIABLE loaded RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "needed: ${LDD} ${EXE} failed")
endif()
string(REGEX MATCHALL "NEEDED[^\n]*" needed "${dyn}")
message(STATUS "needed: ${EXE}:\n${needed}\n${loaded}")
if(dyn MATCHES "${flavor_re}" OR loaded MATCHES "${flavor_re}")
  message(FATAL_ERROR "needed: a liburcu flavor library is loaded: ${CMAKE_MATCH_0}")
endif()
if(NOT loaded MATCHES "liburcu-cds")
  message(FATAL_ERROR "needed: liburcu-cds is not loaded: is this the cds_lfht test?")
endif()
message(STATUS "needed: ok, no liburcu flavor library")
