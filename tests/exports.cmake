# SPDX-License-Identifier: MIT
#
# exports: the shared library exports only sk_/SK_ names, and at least
# every SK_API name declared in the public headers.
#
# This file has two roles.  Included by tests/CMakeLists.txt it registers
# the test; run with `cmake -P` (which the test does) it performs the check:
#
#   cmake -DNM=nm -DLIB=libscalekit.so -DHEADER_DIR=include/scalekit \
#         -P tests/exports.cmake
#
# No mutable test global either: an exported data symbol whose name says
# test, hook or checker (the test machinery of src/internal/testing.h
# exists only in the testing build, tests/testing.cmake; release_clean
# checks for all of it, exported or not).
# Its broken twin, exports_catches_test_globals, runs the same check on a
# small library that exports two such globals: the check must fail there.
#
# Runs in the sanitizer builds too (their instrumentation must not leak
# names either).  Allowed besides sk_*/SK_*: the linker's own _init, _fini, _edata, _end,
# __bss_start, and version-node symbols (type A, SCALEKIT_*) that a linker
# version script would add.

if(NOT CMAKE_SCRIPT_MODE_FILE)
  # ---- registration (configure time) ----------------------------------------
  include(${PROJECT_SOURCE_DIR}/cmake/sk_check_script.cmake)
  sk_check_with_twin(exports NEEDS CMAKE_NM "nm (binutils)"
    DEFS -DNM=${CMAKE_NM}
    CHECK_DEFS -DLIB=$<TARGET_FILE:scalekit>
      -DHEADER_DIR=${PROJECT_SOURCE_DIR}/include/scalekit
    TWIN exports_catches_test_globals
    TWIN_LIBRARY sk_exports_twin "void (*sk_rcu_checker_hook)(int event);
int sk_zz__test_knob;
void sk_synchronize_rcu(void) {}
void sk_fence_heavy(void) {}
"
    TWIN_DEFS -DLIB=$<TARGET_FILE:sk_exports_twin>
      -DHEADER_DIR=${CMAKE_CURRENT_BINARY_DIR}/exports_twin_no_headers
    TWIN_PASS "test[ \n]+globals[ \n]+in[ \n]+the[ \n]+installed[ \n]+library:[ \n]+sk_rcu_checker_hook[ \n]+sk_zz__test_knob")
  return()
endif()

# ---- the check (cmake -P) ------------------------------------------------------
foreach(v NM LIB HEADER_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "exports: -D${v}=... is required")
  endif()
endforeach()

include(${CMAKE_CURRENT_LIST_DIR}/../cmake/sk_check_script.cmake)
sk_check_output(out exports ${NM} -D --defined-only ${LIB})

set(allowed_extra _init _fini _edata _end __bss_start)
set(test_globals "")
set(exported "")
set(bad "")
string(REPLACE "\n" ";" lines "${out}")
foreach(line IN LISTS lines)
  # "<address> <type> <name>[@[@]VERSION]"; the address may be absent.
  if(NOT line MATCHES "([A-Za-z]) ([^ ]+)$")
    continue()
  endif()
  set(type "${CMAKE_MATCH_1}")
  string(REGEX REPLACE "@.*$" "" name "${CMAKE_MATCH_2}")
  list(APPEND exported "${name}")
  if(type MATCHES "^[BbDdGgSsVv]$" AND name MATCHES "^(sk_|SK_).*(test|hook|checker)")
    list(APPEND test_globals "${name}")
  endif()
  if(name MATCHES "^(sk_|SK_)")
    continue()
  endif()
  list(FIND allowed_extra "${name}" idx)
  if(NOT idx EQUAL -1)
    continue()
  endif()
  if(type STREQUAL "A" AND name MATCHES "^SCALEKIT_[A-Za-z0-9_.]*$")
    continue()
  endif()
  list(APPEND bad "${name} (${type})")
endforeach()

# Every name declared with SK_API in a public header must be exported,
# otherwise users get a link error.  Declarations may span lines; their
# attributes are stripped before the name is taken.
file(GLOB headers ${HEADER_DIR}/*.h)
set(expected sk_synchronize_rcu sk_fence_heavy)
foreach(h IN LISTS headers)
  file(STRINGS ${h} hlines)
  set(decl "")
  foreach(l IN LISTS hlines)
    if(decl STREQUAL "")
      if(NOT l MATCHES "^[ \t]*SK_API[ \t]")
        continue()
      endif()
    endif()
    string(APPEND decl " ${l}")
    if(NOT decl MATCHES "[;{]")
      continue()
    endif()
    string(REGEX REPLACE "__attribute__[ \t]*\\(\\(([^()]|\\([^()]*\\))*\\)\\)" ""
      decl "${decl}")
    # An asm label, __asm__("name"), is the symbol's name.  A function
    # pointer variable, "T (*name)(args);", is named inside the first
    # parentheses; anything else by the identifier before ( ; [ {.
    if(decl MATCHES "__asm__[ \t]*\\([ \t]*\"([A-Za-z_][A-Za-z0-9_]*)\"[ \t]*\\)")
      list(APPEND expected "${CMAKE_MATCH_1}")
    elseif(decl MATCHES "^[^(]*\\([ \t]*\\*[ \t]*([A-Za-z_][A-Za-z0-9_]*)[ \t]*\\)")
      list(APPEND expected "${CMAKE_MATCH_1}")
    elseif(decl MATCHES "([A-Za-z_][A-Za-z0-9_]*)[ \t]*[(;[{]")
      list(APPEND expected "${CMAKE_MATCH_1}")
    else()
      message(WARNING "exports: cannot parse declaration in ${h}: ${decl}")
    endif()
    set(decl "")
  endforeach()
endforeach()
list(REMOVE_DUPLICATES expected)

set(missing "")
foreach(name IN LISTS expected)
  list(FIND exported "${name}" idx)
  if(idx EQUAL -1)
    list(APPEND missing "${name}")
  endif()
endforeach()

list(LENGTH exported n_exported)
list(LENGTH expected n_expected)
message(STATUS "exports: ${LIB}: ${n_exported} dynamic symbols, "
  "${n_expected} SK_API names declared in ${HEADER_DIR}")
if(test_globals)
  list(SORT test_globals)
  list(JOIN test_globals " " t)
  message(STATUS "exports: test globals in the installed library: ${t}")
endif()
if(bad OR missing OR test_globals)
  set(msg "")
  if(test_globals)
    string(APPEND msg "mutable test globals exported (compile them only "
      "into the testing build, src/internal/testing.h):\n  ${t}\n")
  endif()
  if(bad)
    list(JOIN bad "\n  " b)
    string(APPEND msg "exported names outside the sk_/SK_ namespace "
      "(make them static or hidden):\n  ${b}\n")
  endif()
  if(missing)
    list(JOIN missing "\n  " m)
    string(APPEND msg "declared with SK_API but not exported:\n  ${m}\n")
  endif()
  message(FATAL_ERROR "exports: FAILED\n${msg}")
endif()
message(STATUS "exports: ok")
