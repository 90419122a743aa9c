# SPDX-License-Identifier: MIT
#
# headers: every public header include/scalekit/*.h compiles on its own,
# included twice (include guard), as strict C11 and as C++11:
#
#   C    -std=c11 -pedantic -Wall -Wextra -Werror      (compiled to an object)
#   C++  -std=c++11 -pedantic -Wall -Wextra -Werror    (compiled to an object)
#
# with the project's compilers, and again with clang/clang++ when they are
# installed and not already the project's compilers.  Strict ISO C is
# deliberate: users build with -std=c11 -pedantic -Werror, where GNU
# spellings (typeof, statement expressions) need __typeof__/__extension__.
# Headers are globbed when the test runs, so a new header is checked
# without reconfiguring.
#
# Also: a header that declares SK_API names must wrap them in extern "C",
# and when the umbrella header scalekit.h exists it must include every other
# public header except the opt-in kernel spellings (kernel.h), which define
# unprefixed names on purpose.
#
# The C++ layer's headers, include/scalekit/*.hpp, are checked by the test
# headers_hpp (KIND=hpp): each compiles on its own, included twice, as
#
#   -std=c++17 and -std=c++20, -pedantic -Wall -Wextra -Werror
#
# with the project's C++ compiler and clang++ (as above); each refuses
# older standards with a clear message, i.e. starts with
#
#   #if __cplusplus < 201703L
#   #error "scalekit/<name>.hpp needs C++17 or later"
#   #endif
#
# (checked by compiling it as -std=c++14: it must fail with a message
# that says "need(s) C++17 or later"; a header whose first include is
# another scalekit .hpp may rely on that one's #error); no header (.h or
# .hpp) includes the test harness (sk_test*); and when the umbrella
# scalekit.hpp exists it includes every other .hpp.  Its broken twin,
# headers_hpp_busted, checks tests/cpp/headers_busted/ (a header without
# the C++17 #error, an umbrella that misses it) and must report both.
#
# Run by hand:
#   cmake -DHEADER_DIR=include/scalekit -DINCLUDE_DIR=include \
#         -DCC=cc -DCXX=c++ -DWORK_DIR=/tmp/h [-DKIND=hpp] -P tests/headers.cmake

if(NOT CMAKE_SCRIPT_MODE_FILE)
  # ---- registration (configure time) ----------------------------------------
  set(sk_hdr_extra_cc "")
  set(sk_hdr_extra_cxx "")
  # Not in cross builds: the host's clang compiles for the host, which
  # check-main's run of this test does already.
  if(NOT CMAKE_C_COMPILER_ID STREQUAL "Clang" AND NOT CMAKE_CROSSCOMPILING)
    find_program(SK_CLANG clang)
    find_program(SK_CLANGXX clang++)
    if(SK_CLANG AND SK_CLANGXX)
      set(sk_hdr_extra_cc ${SK_CLANG})
      set(sk_hdr_extra_cxx ${SK_CLANGXX})
    endif()
  endif()
  add_test(NAME headers
    COMMAND ${CMAKE_COMMAND}
      -DHEADER_DIR=${PROJECT_SOURCE_DIR}/include/scalekit
      -DINCLUDE_DIR=${PROJECT_SOURCE_DIR}/include
      -DCC=${CMAKE_C_COMPILER}
      -DCXX=${CMAKE_CXX_COMPILER}
      -DEXTRA_CC=${sk_hdr_extra_cc}
      -DEXTRA_CXX=${sk_hdr_extra_cxx}
      -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/headers_check
      -P ${CMAKE_CURRENT_LIST_FILE})
  set_tests_properties(headers PROPERTIES TIMEOUT 300 LABELS "nosan")
  # The .hpp headers: a test of their own (runs beside the C one), and
  # the twin on the stand-ins of tests/cpp/headers_busted/scalekit.
  foreach(t "headers_hpp|${PROJECT_SOURCE_DIR}/include"
      "headers_hpp_busted|${CMAKE_CURRENT_SOURCE_DIR}/cpp/headers_busted")
    string(REPLACE "|" ";" t "${t}")
    list(GET t 0 name)
    list(GET t 1 dir)
    add_test(NAME ${name}
      COMMAND ${CMAKE_COMMAND} -DKIND=hpp
        -DHEADER_DIR=${dir}/scalekit -DINCLUDE_DIR=${dir}
        -DCC=${CMAKE_C_COMPILER} -DCXX=${CMAKE_CXX_COMPILER}
        -DEXTRA_CC=${sk_hdr_extra_cc} -DEXTRA_CXX=${sk_hdr_extra_cxx}
        -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/${name}_check
        -P ${CMAKE_CURRENT_LIST_FILE})
    set_tests_properties(${name} PROPERTIES TIMEOUT 300 LABELS "nosan;cpp")
  endforeach()
  set_tests_properties(headers_hpp_busted PROPERTIES PASS_REGULAR_EXPRESSION
    "no_cxx17_error.hpp:[ \n]+-std=c\\+\\+14.*scalekit.hpp:[ \n]+does[ \n]+not[ \n]+include[ \n]+scalekit/no_cxx17_error.hpp")
  return()
endif()

# ---- the check (cmake -P) ------------------------------------------------------
foreach(v HEADER_DIR INCLUDE_DIR CC CXX WORK_DIR)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "headers: -D${v}=... is required")
  endif()
endforeach()

set(warn_flags -pedantic -Wall -Wextra -Werror)
# Each entry: compiler|extension of the generated file|standard.
if(KIND STREQUAL "hpp")
  set(who headers_hpp)
  set(suffix hpp)
  set(not_in_umbrella scalekit.hpp)
  # Alone, each header once per compiler: g++ as C++17 and clang++ as
  # C++20 (g++ as both without clang++).  The C++ tests compile every
  # header with both compilers in both standards already; here the
  # point is that a header needs nothing included before it (CI time:
  # each compile parses the standard library's headers).
  set(compilers "${CXX}|cpp|c++17")
  if(EXTRA_CXX)
    list(APPEND compilers "${EXTRA_CXX}|cpp|c++20")
  else()
    list(APPEND compilers "${CXX}|cpp|c++20")
  endif()
else()
  set(who headers)
  set(suffix h)
  set(not_in_umbrella scalekit.h kernel.h)
  set(compilers "${CC}|c|c11" "${CXX}|cpp|c++11")
  if(EXTRA_CC AND EXTRA_CXX)
    list(APPEND compilers "${EXTRA_CC}|c|c11" "${EXTRA_CXX}|cpp|c++11")
  endif()
endif()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
file(GLOB headers ${HEADER_DIR}/*.${suffix})
if(NOT headers AND suffix STREQUAL "h")
  message(FATAL_ERROR "headers: no header found in ${HEADER_DIR}")
endif()

set(failures "")
set(checked 0)
foreach(h IN LISTS headers)
  get_filename_component(name ${h} NAME)
  get_filename_component(base ${h} NAME_WE)
  file(READ ${h} text)

  if(text MATCHES "SK_API" AND NOT text MATCHES "extern \"C\"")
    string(APPEND failures "${name}: declares SK_API names but has no extern \"C\" block\n")
  endif()
  if(text MATCHES "#[ \t]*include[ \t]*[<\"][^>\"]*sk_test")
    string(APPEND failures "${name}: includes the test harness (sk_test*): "
      "installed headers carry no test machinery\n")
  endif()

  foreach(entry IN LISTS compilers)
    string(REPLACE "|" ";" parts "${entry}")
    list(GET parts 0 compiler)
    list(GET parts 1 ext)
    list(GET parts 2 std)
    set(flags -std=${std} ${warn_flags})
    string(REPLACE ";" " " flags_str "${flags}")
    get_filename_component(cname ${compiler} NAME)
    set(tu ${WORK_DIR}/${base}.${cname}.${std}.${ext})
    file(WRITE ${tu}
      "/* Generated by tests/headers.cmake: ${name} alone, twice. */\n"
      "#include <scalekit/${name}>\n"
      "#include <scalekit/${name}>\n"
      "int sk_headers_check_${base};\n")
    execute_process(
      COMMAND ${compiler} ${flags} -I${INCLUDE_DIR} -c ${tu} -o ${tu}.o
      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    math(EXPR checked "${checked} + 1")
    if(NOT rc EQUAL 0)
      string(APPEND failures
        "${name}: ${cname} ${flags_str} failed:\n${out}${err}\n")
    endif()
    # A C++ layer header refuses older standards with its own message.
    # The #error comes first: -Wfatal-errors stops there (cheap).
    if(suffix STREQUAL "hpp" AND std STREQUAL "c++17")
      execute_process(
        COMMAND ${compiler} -std=c++14 -fsyntax-only -Wfatal-errors
          -I${INCLUDE_DIR} ${tu}
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
      math(EXPR checked "${checked} + 1")
      if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "needs? C\\+\\+17 or later")
        string(APPEND failures "${name}: -std=c++14 (${cname}) must fail "
          "with #error \"scalekit/${name} needs C++17 or later\" (rule: each "
          ".hpp starts with #if __cplusplus < 201703L and that #error)\n")
      endif()
    endif()
  endforeach()
endforeach()

# The umbrella header: optional until it is written, complete once it is.
set(umbrella_name scalekit.${suffix})
if(EXISTS ${HEADER_DIR}/${umbrella_name})
  file(READ ${HEADER_DIR}/${umbrella_name} umbrella)
  foreach(h IN LISTS headers)
    get_filename_component(name ${h} NAME)
    list(FIND not_in_umbrella ${name} skip)
    if(NOT skip EQUAL -1)
      continue()
    endif()
    if(NOT umbrella MATCHES "#[ \t]*include[ \t]*[<\"]scalekit/${name}[>\"]")
      string(APPEND failures "${umbrella_name}: does not include scalekit/${name}\n")
    endif()
  endforeach()
else()
  message(STATUS "${who}: note: ${HEADER_DIR}/${umbrella_name} (the umbrella header) does not exist yet")
endif()

list(LENGTH headers n)
if(NOT failures STREQUAL "")
  message(FATAL_ERROR "${who}: FAILED\n${failures}")
endif()
message(STATUS "${who}: ok (${n} headers, ${checked} compilations)")
