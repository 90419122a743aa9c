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
# backend in place of the hardware one).
function(sk_lib_variant name)
  add_library(${name} STATIC EXCLUDE_FROM_ALL ${SK_SOURCES}
    ${SK_TESTING_SOURCES})
  foreach(d ${ARGN})
    target_compile_definitions(${name} PUBLIC ${d}=1)
  endforeach()
  target_include_directories(${name}
    PUBLIC ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
  set_target_properties(${name} PROPERTIES C_VISIBILITY_PRESET hidden)
  target_link_libraries(${name} PUBLIC Threads::Threads)
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
