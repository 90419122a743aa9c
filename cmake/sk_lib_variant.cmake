# SPDX-License-Identifier: MIT
#
# sk_lib_variant(NAME DEFINE TESTS...): a test-only static build of the
# library, compiled with -D<DEFINE>=1 (built only when a test needs it,
# never installed), linked by each listed test instead of scalekit_static
# (one copy of the library per program; the test's other libraries, e.g.
# the test support library, stay).  Used by tests/checker.cmake
# (SK_RCU_CHECKER) and tests/hooks.cmake (SK_TEST_HOOKS).
function(sk_lib_variant name define)
  add_library(${name} STATIC EXCLUDE_FROM_ALL ${SK_SOURCES})
  target_compile_definitions(${name} PRIVATE ${define}=1)
  target_include_directories(${name}
    PUBLIC  ${PROJECT_SOURCE_DIR}/include
    PRIVATE ${PROJECT_SOURCE_DIR}/src)
  set_target_properties(${name} PROPERTIES C_VISIBILITY_PRESET hidden)
  target_link_libraries(${name} PUBLIC Threads::Threads)
  foreach(t ${ARGN})
    if(TARGET ${t})
      get_property(libs TARGET ${t} PROPERTY LINK_LIBRARIES)
      list(TRANSFORM libs REPLACE "^scalekit_static$" ${name})
      set_property(TARGET ${t} PROPERTY LINK_LIBRARIES ${libs})
    endif()
  endforeach()
endfunction()
