# SPDX-License-Identifier: MIT
#
# release_clean: the installed library carries no test machinery.
# `cmake --install` into a scratch prefix, then:
#   - nm (every symbol, not only the exported ones) of the installed
#     libscalekit.so and libscalekit.a, and the names of the archive's
#     members, show no broken mode, hook, test knob or test-only statistic
#     (the names of src/internal/testing.h: *busted*, *_test_*,
#     *hook*, *checker*, *gp_kinds*, the simulated elision backend), in
#     any build type (at -O0 a static inline function is a symbol too);
#   - the installed headers mention none of it: no such name, no build
#     switch of the test builds (SK_TESTING, SK_ELIDE_SIM, ...), no word
#     of the simulated backend.
# Its broken twin, release_clean_catches_testing, runs the same check on
# the testing build (libscalekit_testing.a, and src/internal/testing.h
# beside the installed headers): the check must fail there and name what
# it found.
#
# Script mode (cmake -P):
#   cmake -DNM=nm -DLIBS="a.so;b.a" -DHEADER_DIR=dir -P release_clean.cmake
# or -DBUILD_DIR=... -DWORK_DIR=... (install first, then check the
# installed copy; LIBDIR and INCLUDEDIR name its subdirectories).

if(NOT CMAKE_SCRIPT_MODE_FILE)
  # ---- registration (configure time) ----------------------------------------
  set(twin_headers ${CMAKE_CURRENT_BINARY_DIR}/release_clean_twin_include)
  file(MAKE_DIRECTORY ${twin_headers})
  file(GLOB sk_rc_headers ${PROJECT_SOURCE_DIR}/include/scalekit/*.h)
  file(COPY ${sk_rc_headers} ${PROJECT_SOURCE_DIR}/src/internal/testing.h
    DESTINATION ${twin_headers})
  # The twin needs the testing build, which only its users pull in.
  add_custom_target(sk_release_clean_twin ALL DEPENDS scalekit_testing)
  include(${PROJECT_SOURCE_DIR}/cmake/sk_check_script.cmake)
  sk_check_with_twin(release_clean NEEDS CMAKE_NM "nm (binutils)" TIMEOUT 120
    DEFS -DNM=${CMAKE_NM}
    CHECK_DEFS -DBUILD_DIR=${PROJECT_BINARY_DIR} -DCONFIG=$<CONFIG>
      -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/release_clean
      -DLIBDIR=${CMAKE_INSTALL_LIBDIR}
      -DINCLUDEDIR=${CMAKE_INSTALL_INCLUDEDIR}
    TWIN release_clean_catches_testing
    TWIN_DEFS -DLIBS=$<TARGET_FILE:scalekit_testing>
      -DHEADER_DIR=${twin_headers}
    TWIN_PASS "release_clean:[ \n]+FAILED.*test[ \n]+machinery[ \n]+in[ \n]+.*libscalekit_testing.a:.*sk__rcu_busted.*sk__rcu_set_busted.*test[ \n]+machinery[ \n]+in[ \n]+the[ \n]+headers:[ \n]+testing.h")
  return()
endif()

# ---- the check (cmake -P) ------------------------------------------------------
include(${CMAKE_CURRENT_LIST_DIR}/../cmake/sk_check_script.cmake)
if(DEFINED BUILD_DIR)
  file(REMOVE_RECURSE ${WORK_DIR})
  execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR}
      --config ${CONFIG} --prefix ${WORK_DIR}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "release_clean: cmake --install failed (${rc}):\n${out}${err}")
  endif()
  file(GLOB LIBS ${WORK_DIR}/${LIBDIR}/libscalekit.so.*.*.*
    ${WORK_DIR}/${LIBDIR}/libscalekit.a)
  set(HEADER_DIR ${WORK_DIR}/${INCLUDEDIR}/scalekit)
  list(LENGTH LIBS n)
  if(NOT n EQUAL 2)
    message(FATAL_ERROR "release_clean: expected libscalekit.so and .a in "
      "${WORK_DIR}/${LIBDIR}, found: ${LIBS}")
  endif()
endif()
foreach(v NM LIBS HEADER_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "release_clean: -D${v}=... is required")
  endif()
endforeach()

# What test machinery is called (src/internal/testing.h), in symbol names.
# (Not "broken": elision's list of CPU models with broken TSX is product
# code, and the hash table's knob is *_test_*; nor "test" alone:
# sk__xtest() is the XTEST instruction.)
set(sym_re "(busted|_test_|hook|checker|gp_kinds|elide_sim|_sim_)")
set(found_any "")
set(msg "")
foreach(lib IN LISTS LIBS)
  # Every symbol (the symbol table, hidden and static ones included) and,
  # for an archive, its member names ("name.o:" lines).
  sk_check_output(out release_clean ${NM} -A ${lib})
  execute_process(COMMAND ${NM} ${lib} OUTPUT_VARIABLE members ERROR_QUIET)
  string(REPLACE "\n" ";" lines "${out}")
  set(hits "")
  foreach(line IN LISTS lines)
    # "<file>[:<member>]:<address> <type> <name>"; undefined: no address.
    if(NOT line MATCHES " ([A-Za-z]) ([^ ]+)$")
      continue()
    endif()
    set(type "${CMAKE_MATCH_1}")
    string(REGEX REPLACE "@.*$" "" name "${CMAKE_MATCH_2}")
    # Undefined (U, weak w/v without a definition): a name the library
    # uses from elsewhere (libc, a sanitizer's runtime), not one it has.
    if(type MATCHES "^[Uwv]$" AND line MATCHES ": +[Uwv] [^ ]+$")
      continue()
    endif()
    string(TOLOWER "${name}" lname)
    if(lname MATCHES "${sym_re}")
      list(APPEND hits "${name}")
    endif()
  endforeach()
  string(REGEX MATCHALL "[^\n]*sim[^\n]*\\.o:" m "${members}")
  list(APPEND hits ${m})
  list(REMOVE_DUPLICATES hits)
  list(SORT hits)
  list(LENGTH hits nh)
  message(STATUS "release_clean: ${lib}: ${nh} test names")
  if(hits)
    list(JOIN hits " " h)
    string(APPEND msg "test machinery in ${lib}: ${h}\n")
  endif()
endforeach()

# What test machinery is called in the headers: its names, the switches of
# the test builds, the simulated backend.  (The CPU models on elision's
# "broken list", SK_ELIDE_CPU_BROKEN, are a fact about hardware.)
set(hdr_re "([A-Za-z_]*(busted|BUSTED)[A-Za-z_]*|SK_[A-Z_]*__BROKEN[A-Z_]*|sk_[a-z_]*__test[a-z_]*|sk_[a-z_]*(hook|checker)[a-z_]*|SK_[A-Z_]*(HOOK|CHECK_|CHECKER|_SIM)[A-Z_]*|SK_TESTING|SK_TEST_HOOKS|SK_ELIDE_SIM|[Ss]imulat[a-z]*|broken twin|test knob|test hook|test build)")
file(GLOB headers ${HEADER_DIR}/*.h)
set(hhits "")
foreach(h IN LISTS headers)
  file(STRINGS ${h} hlines REGEX "${hdr_re}")
  get_filename_component(hn ${h} NAME)
  foreach(l IN LISTS hlines)
    string(REGEX MATCH "${hdr_re}" w "${l}")
    list(APPEND hhits "${hn}: ${w}")
  endforeach()
endforeach()
list(REMOVE_DUPLICATES hhits)
list(LENGTH headers nhdr)
message(STATUS "release_clean: ${HEADER_DIR}: ${nhdr} headers")
if(hhits)
  list(JOIN hhits "; " hh)
  string(APPEND msg "test machinery in the headers: ${hh}\n")
endif()
if(msg)
  message(FATAL_ERROR "release_clean: FAILED (compile it only into the "
    "testing build, src/internal/testing.h)\n${msg}")
endif()
message(STATUS "release_clean: ok")
