# SPDX-License-Identifier: MIT
#
# layers: calls only go down.  src/layers.txt lists the library's files
# from the lowest layer to the highest; a file may use (call, or read the
# data of) only files listed before it.  A lower file reaches an upper one
# only through a pointer or hook that the upper one registers.  The check
# reads the undefined and defined global symbols of each object file
# (nm) and fails on a use of a file listed later, on an object file the
# list does not place, and on an `allow` line of the list that no use
# needs any more (so the list of known exceptions can only shrink).
#
# This file has two roles.  Included by tests/CMakeLists.txt it registers
# the test and its broken twin; run with `cmake -P` (which the tests do)
# it performs the check:
#
#   cmake -DNM=nm -DSPEC=src/layers.txt -DOBJS=a.c.o:b.c.o \
#         [-DSWAP=rhash_resize:rhash_update] -P tests/layers.cmake
#
# layers_tools runs the same check over the litmus tool's object files
# with tools/layers.txt.
#
# The twin, layers_catches_a_call_up, swaps two files of which the upper
# calls the lower (rhash_update calls sk__rhash_maybe_resize() in
# rhash_resize): with the order inverted that call goes up, and the check
# must fail.

if(NOT CMAKE_SCRIPT_MODE_FILE)
  # ---- registration (configure time) ----------------------------------------
  include(${PROJECT_SOURCE_DIR}/cmake/sk_check_script.cmake)
  sk_check_with_twin(layers NEEDS CMAKE_NM "nm (binutils)" TIMEOUT 120
    DEFS -DNM=${CMAKE_NM} -DSPEC=${PROJECT_SOURCE_DIR}/src/layers.txt
      "-DOBJS=$<JOIN:$<TARGET_OBJECTS:scalekit_obj>,:>"
    TWIN layers_catches_a_call_up
    TWIN_DEFS "-DSWAP=rhash_resize:rhash_update"
    TWIN_PASS "calls[ \n]+up:[ \n]+rhash_update[ \n]+->[ \n]+rhash_resize")
  # The same check over the litmus tool's files (tools/layers.txt): the
  # objects of scalekit_tool whose names the list is about.
  if(CMAKE_NM AND TARGET scalekit_tool)
    set(objs "$<TARGET_OBJECTS:scalekit_tool>")
    add_test(NAME layers_tools
      COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM}
        -DSPEC=${PROJECT_SOURCE_DIR}/tools/layers.txt
        "-DOBJS=$<JOIN:$<FILTER:${objs},INCLUDE,/(litmus[a-z_]*|tool_util)\\.c\\.o(bj)?$>,:>"
        -P ${CMAKE_CURRENT_LIST_FILE})
    set_tests_properties(layers_tools PROPERTIES TIMEOUT 120 LABELS "unit")
  endif()
  return()
endif()

# ---- the check (cmake -P) ---------------------------------------------------
cmake_minimum_required(VERSION 3.16) # IN_LIST
include(${CMAKE_CURRENT_LIST_DIR}/../cmake/sk_check_script.cmake)
string(REPLACE ":" ";" OBJS "${OBJS}")
string(REPLACE ":" ";" SWAP "${SWAP}")
file(STRINGS ${SPEC} spec_lines)
set(order "")
set(allows "")
foreach(line IN LISTS spec_lines)
  string(REGEX REPLACE "#.*" "" line "${line}")
  string(STRIP "${line}" line)
  if(line STREQUAL "")
    continue()
  elseif(line MATCHES "^allow +([a-z0-9_]+) +-> +([a-z0-9_]+)$")
    list(APPEND allows "${CMAKE_MATCH_1}>${CMAKE_MATCH_2}")
  elseif(line MATCHES "^[a-z0-9_]+$")
    list(APPEND order "${line}")
  else()
    message(FATAL_ERROR "${SPEC}: cannot read the line '${line}'")
  endif()
endforeach()
if(SWAP)
  list(GET SWAP 0 a)
  list(GET SWAP 1 b)
  list(FIND order ${a} ia)
  list(FIND order ${b} ib)
  list(REMOVE_AT order ${ia})
  list(INSERT order ${ia} ${b})
  list(REMOVE_AT order ${ib})
  list(INSERT order ${ib} ${a})
  message(STATUS "twin: ${a} and ${b} swapped in the order")
endif()

set(stems "")
set(errors 0)
foreach(obj IN LISTS OBJS)
  if(obj STREQUAL "")
    continue()
  endif()
  get_filename_component(stem ${obj} NAME)
  string(REGEX REPLACE "\\.c\\.o(bj)?$" "" stem "${stem}")
  list(FIND order ${stem} idx)
  if(idx LESS 0)
    message(SEND_ERROR "${stem}.c is not placed in ${SPEC}")
    math(EXPR errors "${errors} + 1")
    continue()
  endif()
  list(APPEND stems ${stem})
  sk_check_output(out layers ${NM} ${obj})
  string(REPLACE "\n" ";" out "${out}")
  set(undef_${stem} "")
  foreach(l IN LISTS out)
    if(l MATCHES "^ +U ([A-Za-z0-9_]+)$")
      list(APPEND undef_${stem} ${CMAKE_MATCH_1})
    elseif(l MATCHES "^[0-9a-f]+ [TDBRVW] ([A-Za-z0-9_]+)$")
      set(def_${CMAKE_MATCH_1} ${stem})
    endif()
  endforeach()
endforeach()

set(used_allows "")
foreach(stem IN LISTS stems)
  list(FIND order ${stem} me)
  set(seen "")
  foreach(sym IN LISTS undef_${stem})
    if(NOT DEFINED def_${sym})
      continue() # libc, pthreads, the kernel
    endif()
    set(to ${def_${sym}})
    list(FIND order ${to} them)
    if(them LESS me OR "${stem}>${to}" IN_LIST seen)
      continue()
    endif()
    if("${stem}>${to}" IN_LIST allows)
      list(APPEND used_allows "${stem}>${to}")
      message(STATUS "known exception: ${stem} -> ${to} (${sym})")
    else()
      message(SEND_ERROR "calls up: ${stem} -> ${to} (${sym}): "
        "${to} is listed after ${stem} in ${SPEC}")
      math(EXPR errors "${errors} + 1")
    endif()
    list(APPEND seen "${stem}>${to}")
  endforeach()
endforeach()
foreach(a IN LISTS allows)
  if(NOT a IN_LIST used_allows)
    string(REPLACE ">" " -> " a "${a}")
    message(SEND_ERROR "${SPEC}: 'allow ${a}' is no longer needed: remove it")
    math(EXPR errors "${errors} + 1")
  endif()
endforeach()
list(LENGTH stems n)
if(errors)
  message(FATAL_ERROR "layers: ${errors} problem(s) in ${n} files")
endif()
message(STATUS "layers: ${n} files, every use goes down")
