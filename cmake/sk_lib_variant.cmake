# SPDX-License-Identifier: MIT
#
# Test-only static builds of the library.  None is installed; each is
# built only when a program needs it.
#
# sk_lib_variant(NAME DEFINE...): the library compiled with -D<DEFINE>=1
# for each DEFINE.  The defines are PUBLIC (a program that links the
# variant sees them too, so that the hooks of the inline functions in the
# public headers match the library's), and so is src/ (the program's
# declarations of the test machinery come from src/internal/testing.h).
# The top-level CMakeLists.txt makes scalekit_testing (SK_TESTING: every
# broken mode, hook and test-only statistic); tests/elide_sim.cmake makes
# scalekit_elide_sim (the same plus SK_ELIDE_SIM: the simulated elision
# backend in place of the hardware one) with sk_lib_variant_sim().
#
# Each variant is two parts: NAME_shared, an object library of the sources
# that SK_ELIDE_SIM does not change, and the elision sources
# (SK_ELIDE_SIM_SOURCES: those that name SK_ELIDE_SIM or include
# internal/elide.h, found here by their text).  sk_lib_variant_sim()
# compiles only the elision sources again and links NAME_shared's
# objects, so a configuration compiles the other sources once for both
# variants.  The test lib_variant_sharing (tests/lib_variant.cmake)
# checks that SK_ELIDE_SIM leaves every shared source's preprocessed text
# unchanged (a header that starts testing it would make a shared object
# wrong).
include_guard(GLOBAL)
set(SK_ELIDE_SIM_SOURCES "")
foreach(src ${SK_SOURCES} ${SK_TESTING_SOURCES})
  file(STRINGS ${src} hits REGEX "SK_ELIDE_SIM|internal/elide\\.h")
  if(hits)
    list(APPEND SK_ELIDE_SIM_SOURCES ${src})
  endif()
endforeach()
set(SK_VARIANT_SHARED_SOURCES ${SK_SOURCES} ${SK_TESTING_SOURCES})
list(REMOVE_ITEM SK_VARIANT_SHARED_SOURCES ${SK_ELIDE_SIM_SOURCES})

# sk__lib_variant_part(TARGET TYPE SOURCES DEFINES): one part's settings.
function(sk__lib_variant_part target type srcs defs)
  add_library(${target} ${type} EXCLUDE_FROM_ALL ${srcs})
  foreach(d ${defs})
    target_compile_definitions(${target} PUBLIC ${d}=1)
  endforeach()
  target_include_directories(${target}
    PUBLIC ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
  set_target_properties(${target} PROPERTIES C_VISIBILITY_PRESET hidden)
  target_link_libraries(${target} PUBLIC Threads::Threads)
endfunction()

function(sk_lib_variant name)
  sk__lib_variant_part(${name}_shared OBJECT "${SK_VARIANT_SHARED_SOURCES}" "${ARGN}")
  sk__lib_variant_part(${name} STATIC "${SK_ELIDE_SIM_SOURCES}" "${ARGN}")
  target_sources(${name} PRIVATE $<TARGET_OBJECTS:${name}_shared>)
  set_target_properties(${name} PROPERTIES SK_VARIANT_DEFINES "${ARGN}")
endfunction()

# sk_lib_variant_sim(NAME BASE): variant BASE (of sk_lib_variant()) with
# SK_ELIDE_SIM as well: BASE's shared objects and the elision sources
# compiled with BASE's defines and SK_ELIDE_SIM.
function(sk_lib_variant_sim name base)
  get_target_property(defs ${base} SK_VARIANT_DEFINES)
  sk__lib_variant_part(${name} STATIC "${SK_ELIDE_SIM_SOURCES}" "${defs};SK_ELIDE_SIM")
  target_sources(${name} PRIVATE $<TARGET_OBJECTS:${base}_shared>)
endfunction()

# sk_lib_variant_link(NAME TARGET...): each TARGET links variant NAME
# instead of scalekit_static (one copy of the library per program; the
# program's other libraries, e.g. the test support library, stay).
function(sk_lib_variant_link name)
  foreach(t ${ARGN})
    if(TARGET ${t})
      get_property(libs TARGET ${t} PROPERTY LINK_LIBRARIES)
      list(TRANSFORM libs REPLACE "^scalekit_static$" ${name})
      set_property(TARGET ${t} PROPERTY LINK_LIBRARIES ${libs})
    endif()
  endforeach()
endfunction()
