# SPDX-License-Identifier: MIT
#
# lib_variant_sharing: scalekit_elide_sim links scalekit_testing's objects
# of every source but the elision ones (cmake/sk_lib_variant.cmake), which
# is right only while SK_ELIDE_SIM changes nothing in those sources: each
# one's preprocessed text, with this configuration's compiler and flags,
# must be the same with and without -DSK_ELIDE_SIM=1.  A header that
# starts testing SK_ELIDE_SIM fails it, naming the sources it reaches.
# Its twin, lib_variant_sharing_catches_elide, checks src/elide.c, which
# SK_ELIDE_SIM does change: it must be reported.
#
# Run by hand:
#   cmake -DCC=cc "-DFLAGS=-std=gnu11|-DSK_TESTING=1|-Iinclude|-Isrc" \
#         "-DSOURCES=src/rcu.c|src/rhash.c" -P tests/lib_variant.cmake

if(NOT CMAKE_SCRIPT_MODE_FILE)
  # ---- registration (configure time) ----------------------------------------
  separate_arguments(sk_lv_flags UNIX_COMMAND "${CMAKE_C_FLAGS}")
  list(APPEND sk_lv_flags -std=gnu11 -DSK_DEBUG=${SK_DEBUG} -DSK_TESTING=1
    -I${PROJECT_SOURCE_DIR}/include -I${PROJECT_SOURCE_DIR}/src)
  if(SK_ARCH_GENERIC)
    list(APPEND sk_lv_flags -DSK_ARCH_GENERIC=1)
  endif()
  if(SK_SANITIZE)
    list(APPEND sk_lv_flags -fsanitize=${SK_SANITIZE})
  endif()
  list(JOIN sk_lv_flags "|" sk_lv_flags)
  list(JOIN SK_VARIANT_SHARED_SOURCES "|" sk_lv_shared)
  include(${PROJECT_SOURCE_DIR}/cmake/sk_check_script.cmake)
  sk_check_with_twin(lib_variant_sharing
    DEFS -DCC=${CMAKE_C_COMPILER} "-DFLAGS=${sk_lv_flags}"
    CHECK_DEFS "-DSOURCES=${sk_lv_shared}"
    TWIN lib_variant_sharing_catches_elide
    TWIN_DEFS -DSOURCES=${PROJECT_SOURCE_DIR}/src/elide.c
    TWIN_PASS "src/elide\\.c[ \n]+changes[ \n]+with[ \n]+SK_ELIDE_SIM")
  return()
endif()

# ---- the check (cmake -P) ------------------------------------------------------
foreach(v CC FLAGS SOURCES)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "lib_variant_sharing: -D${v}=... is required")
  endif()
endforeach()
string(REPLACE "|" ";" flags "${FLAGS}")
string(REPLACE "|" ";" sources "${SOURCES}")
# sk_lv_preprocess(OUT SOURCES EXTRA): the preprocessed text of SOURCES
# (one compiler run), with EXTRA (a definition, or "").
function(sk_lv_preprocess out srcs extra)
  execute_process(COMMAND ${CC} ${flags} ${extra} -E -P ${srcs}
    RESULT_VARIABLE rc OUTPUT_VARIABLE text ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "lib_variant_sharing: ${CC} -E ${extra} failed "
      "(${rc}):\n${err}")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# All sources in one run per side; the sources one by one only to name
# those that change.
set(changed "")
sk_lv_preprocess(plain "${sources}" "")
sk_lv_preprocess(sim "${sources}" -DSK_ELIDE_SIM=1)
if(NOT plain STREQUAL sim)
  foreach(src ${sources})
    sk_lv_preprocess(plain ${src} "")
    sk_lv_preprocess(sim ${src} -DSK_ELIDE_SIM=1)
    if(NOT plain STREQUAL sim)
      list(APPEND changed ${src})
    endif()
  endforeach()
endif()
list(LENGTH sources total)
if(changed)
  list(JOIN changed ", " changed)
  message(FATAL_ERROR "lib_variant_sharing: ${changed} changes with "
    "SK_ELIDE_SIM, so scalekit_elide_sim cannot share its object with "
    "scalekit_testing: add the source to SK_ELIDE_SIM_SOURCES "
    "(cmake/sk_lib_variant.cmake finds them by their text)")
endif()
message("lib_variant_sharing: the ${total} shared sources are the same "
  "with and without SK_ELIDE_SIM")
