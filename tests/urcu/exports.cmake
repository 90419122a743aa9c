# SPDX-License-Identifier: MIT
# The check of urcu_exports (tests/urcu/CMakeLists.txt): libscalekit-urcu
# exports liburcu's flavor-prefixed names only, and every function the
# compat headers declare out of line.
#
#   cmake -DNM=nm -DLIB=libscalekit-urcu.so -DHEADER_DIR=include/scalekit/compat/urcu \
#         [-DLIBURCU_DIR=/usr/lib/x86_64-linux-gnu] -P tests/urcu/exports.cmake
#
#  1. every defined dynamic symbol is urcu_memb_*, urcu_qsbr_* or urcu_bp_*
#     (besides the linker's _init, _fini, _edata, _end, __bss_start);
#  2. every name the headers declare is exported: the SK__URCU_DECLARE(f)
#     list of urcu/scalekit-flavor.h for each flavor, and the prefixed
#     functions urcu/urcu-<flavor>.h declares on its own (not static);
#  3. with LIBURCU_DIR (where liburcu's flavor libraries are), each of
#     them is a name liburcu-<flavor>.so exports too, except the polling
#     functions (liburcu 0.14's API, newer than the 0.13 installed here).
cmake_minimum_required(VERSION 3.20)
foreach(v NM LIB HEADER_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "urcu exports: -D${v}=... is required")
  endif()
endforeach()

function(sk_dynsyms lib out)
  execute_process(COMMAND ${NM} -D --defined-only ${lib}
    RESULT_VARIABLE rc OUTPUT_VARIABLE txt ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "urcu exports: ${NM} -D ${lib} failed: ${err}")
  endif()
  # "<address> <type> <name>[@[@]VERSION]"; the address may be absent.
  string(REPLACE "\n" ";" lines "${txt}")
  set(syms "")
  foreach(l IN LISTS lines)
    if(l MATCHES "(^| )[A-Za-z] ([^ @]+)[^ ]*$")
      list(APPEND syms "${CMAKE_MATCH_2}")
    endif()
  endforeach()
  set(${out} ${syms} PARENT_SCOPE)
endfunction()

sk_dynsyms(${LIB} exported)
set(bad "")
foreach(s IN LISTS exported)
  if(NOT s MATCHES "^urcu_(memb|qsbr|bp)_" AND
     NOT s MATCHES "^(_init|_fini|_edata|_end|__bss_start)$")
    list(APPEND bad ${s})
  endif()
endforeach()

# 2. the names the headers declare
file(READ ${HEADER_DIR}/urcu/scalekit-flavor.h common)
string(REGEX REPLACE "^.*#define SK__URCU_DECLARE" "" common "${common}")
string(REGEX REPLACE "#define SK__URCU_GENERAL_READER.*$" "" common "${common}")
string(REGEX MATCHALL "f##_[a-z_]+" common "${common}")
list(TRANSFORM common REPLACE "^f##_" "")
set(expected "")
foreach(f memb qsbr bp)
  foreach(n IN LISTS common)
    list(APPEND expected urcu_${f}_${n})
  endforeach()
  file(STRINGS ${HEADER_DIR}/urcu/urcu-${f}.h own REGEX "^(void|int) urcu_${f}_[a-z_]+\\(")
  foreach(l IN LISTS own)
    string(REGEX MATCH "urcu_${f}_[a-z_]+" n "${l}")
    list(APPEND expected ${n})
  endforeach()
endforeach()
list(REMOVE_DUPLICATES expected)
set(missing "")
foreach(n IN LISTS expected)
  if(NOT n IN_LIST exported)
    list(APPEND missing ${n})
  endif()
endforeach()

# 3. liburcu's own export lists
set(foreign "")
if(LIBURCU_DIR)
  foreach(f memb qsbr bp)
    if(NOT EXISTS ${LIBURCU_DIR}/liburcu-${f}.so)
      continue()
    endif()
    sk_dynsyms(${LIBURCU_DIR}/liburcu-${f}.so theirs)
    foreach(s IN LISTS exported)
      if(s MATCHES "^urcu_${f}_" AND NOT s IN_LIST theirs AND
         NOT s MATCHES "_(start_poll|poll_state)_synchronize_rcu$")
        list(APPEND foreign ${s})
      endif()
    endforeach()
  endforeach()
endif()

list(LENGTH exported n_exp)
list(LENGTH expected n_want)
message(STATUS "urcu exports: ${LIB}: ${n_exp} dynamic symbols, ${n_want} declared")
if(bad OR missing OR foreign)
  string(REPLACE ";" " " bad "${bad}")
  string(REPLACE ";" " " missing "${missing}")
  string(REPLACE ";" " " foreign "${foreign}")
  message(FATAL_ERROR "urcu exports: FAILED\n"
    "  outside liburcu's names: ${bad}\n"
    "  declared but not exported: ${missing}\n"
    "  not exported by liburcu: ${foreign}")
endif()
message(STATUS "urcu exports: ok")
