# SPDX-License-Identifier: MIT
#
# cpp_compile_fail: misuse of the C++ layer that must not compile.  Each
# tests/cpp/compile_fail/<what>.cpp holds one misuse inside
# `#ifndef SK_CF_OK` and one line `// SK_CF_EXPECT: <regex>`
# (tests/cpp/compile_fail/README.md).  For every snippet and compiler
# (the project's C++ compiler, and clang++ when it is installed and not
# already that compiler), with -std=c++17 -fsyntax-only:
#
#   -DSK_CF_OK  must compile (with -pedantic -Wall -Wextra -Werror): the
#               snippet is valid apart from its misuse, so the check
#               below can fail (the first compiler only: the C++ tests
#               compile the headers with both);
#   plain       must fail, and the compiler's messages must match the
#               regex: it fails for the misuse, not for a typo.
#
# One CTest per snippet, cpp_compile_fail_<what> (labels unit;cpp;nosan:
# nothing runs, so the sanitizer jobs would repeat the same compilations),
# and two broken twins, cpp_compile_fail_busted_* (compile_fail/busted/),
# that show the check fails when a misuse compiles or fails otherwise.
# Snippets are globbed with CONFIGURE_DEPENDS: the build that precedes
# ctest registers a new one.  Run by hand (all snippets when SNIPPET is
# not given, globbed then):
#   cmake -DCXX="g++;clang++" -DINCLUDE_DIR=include \
#         [-DSNIPPET=tests/cpp/compile_fail/x.cpp] -P tests/cpp_compile_fail.cmake

if(NOT CMAKE_SCRIPT_MODE_FILE)
  # ---- registration (configure time) ----------------------------------------
  set(sk_cf_cxx ${CMAKE_CXX_COMPILER})
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND NOT CMAKE_CROSSCOMPILING)
    find_program(SK_CLANGXX clang++)
    if(SK_CLANGXX)
      list(APPEND sk_cf_cxx ${SK_CLANGXX})
    endif()
  endif()
  list(JOIN sk_cf_cxx "|" sk_cf_cxx)
  file(GLOB sk_cf_snippets CONFIGURE_DEPENDS
    ${CMAKE_CURRENT_SOURCE_DIR}/cpp/compile_fail/*.cpp)
  foreach(snippet IN LISTS sk_cf_snippets)
    get_filename_component(what ${snippet} NAME_WE)
    add_test(NAME cpp_compile_fail_${what}
      COMMAND ${CMAKE_COMMAND} "-DCXX=${sk_cf_cxx}"
        -DINCLUDE_DIR=${PROJECT_SOURCE_DIR}/include
        -DSNIPPET=${snippet}
        -P ${CMAKE_CURRENT_LIST_FILE})
    set_tests_properties(cpp_compile_fail_${what} PROPERTIES TIMEOUT 120
      LABELS "unit;cpp;nosan")
  endforeach()
  # The check's broken twins (tests/cpp/compile_fail/busted/): a "misuse"
  # that compiles and one that fails for another reason must be caught.
  # (message() wraps long lines: words are matched across line breaks.)
  foreach(twin "misuse_compiles|the[ \n]+misuse[ \n]+compiles"
      "wrong_error|do[ \n]+not[ \n]+match[ \n]+SK_CF_EXPECT")
    string(REPLACE "|" ";" twin "${twin}")
    list(GET twin 0 what)
    list(GET twin 1 pass)
    add_test(NAME cpp_compile_fail_busted_${what}
      COMMAND ${CMAKE_COMMAND} "-DCXX=${sk_cf_cxx}"
        -DINCLUDE_DIR=${PROJECT_SOURCE_DIR}/include
        -DSNIPPET=${CMAKE_CURRENT_SOURCE_DIR}/cpp/compile_fail/busted/${what}.cpp
        -P ${CMAKE_CURRENT_LIST_FILE})
    set_tests_properties(cpp_compile_fail_busted_${what} PROPERTIES
      TIMEOUT 120 LABELS "unit;cpp;nosan" PASS_REGULAR_EXPRESSION "${pass}")
  endforeach()
  return()
endif()

# ---- the check (cmake -P) ------------------------------------------------------
foreach(v CXX INCLUDE_DIR)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "cpp_compile_fail: -D${v}=... is required")
  endif()
endforeach()
string(REPLACE "|" ";" CXX "${CXX}")
if(SNIPPET)
  set(snippets ${SNIPPET})
else()
  get_filename_component(here ${CMAKE_SCRIPT_MODE_FILE} DIRECTORY)
  file(GLOB snippets ${here}/cpp/compile_fail/*.cpp)
endif()

set(ok_flags -std=c++17 -fsyntax-only -pedantic -Wall -Wextra -Werror
  -DSK_CF_OK -I${INCLUDE_DIR})
set(bad_flags -std=c++17 -fsyntax-only -I${INCLUDE_DIR})
set(failures "")
foreach(snippet IN LISTS snippets)
  get_filename_component(what ${snippet} NAME)
  file(STRINGS ${snippet} expect REGEX "^// SK_CF_EXPECT: ")
  list(LENGTH expect n_expect)
  file(STRINGS ${snippet} guard REGEX "^#[ \t]*ifndef[ \t]+SK_CF_OK")
  if(NOT n_expect EQUAL 1 OR NOT guard)
    string(APPEND failures "${what}: needs exactly one '// SK_CF_EXPECT: <regex>' line"
      " and an '#ifndef SK_CF_OK' block (tests/cpp/compile_fail/README.md)\n")
    continue()
  endif()
  string(REGEX REPLACE "^// SK_CF_EXPECT: " "" expect "${expect}")
  # The valid part with the first compiler only (the C++ tests compile
  # the headers with both); the misuse with every compiler.
  list(GET CXX 0 cxx)
  get_filename_component(cname ${cxx} NAME)
  execute_process(COMMAND ${cxx} ${ok_flags} ${snippet}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(APPEND failures "${what}: ${cname} -DSK_CF_OK: the snippet without"
      " its misuse does not compile, so the check proves nothing:\n${out}${err}\n")
    continue()
  endif()
  foreach(cxx IN LISTS CXX)
    get_filename_component(cname ${cxx} NAME)
    execute_process(COMMAND ${cxx} ${bad_flags} ${snippet}
      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(rc EQUAL 0)
      string(APPEND failures "${what}: ${cname}: the misuse compiles\n")
    elseif(NOT "${out}${err}" MATCHES "${expect}")
      string(APPEND failures "${what}: ${cname}: fails, but its messages do"
        " not match SK_CF_EXPECT '${expect}':\n${out}${err}\n")
    else()
      message(STATUS "${what}: ${cname}: rejected as expected")
    endif()
  endforeach()
endforeach()

if(NOT failures STREQUAL "")
  message(FATAL_ERROR "cpp_compile_fail: FAILED\n${failures}")
endif()
list(LENGTH snippets n)
message(STATUS "cpp_compile_fail: ok (${n} snippets)")
