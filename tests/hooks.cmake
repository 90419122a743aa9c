# SPDX-License-Identifier: MIT
#
# The test-hooks build: scalekit_hooks is the library compiled with
# SK_TEST_HOOKS=1, which adds hidden functions that only tests call (e.g.
# sk__rcu_test_set_seq(): start the grace-period counters just below their
# wrap-around points).  The installed libraries never contain them.
# Tests listed in SK_HOOKS_TESTS link it instead of scalekit_static.

if(CMAKE_SCRIPT_MODE_FILE)
  return()
endif()

add_library(scalekit_hooks STATIC EXCLUDE_FROM_ALL ${SK_SOURCES})
target_compile_definitions(scalekit_hooks PRIVATE SK_TEST_HOOKS=1)
target_include_directories(scalekit_hooks
  PUBLIC  ${PROJECT_SOURCE_DIR}/include
  PRIVATE ${PROJECT_SOURCE_DIR}/src)
set_target_properties(scalekit_hooks PROPERTIES C_VISIBILITY_PRESET hidden)
target_link_libraries(scalekit_hooks PUBLIC Threads::Threads)

set(SK_HOOKS_TESTS test_rcu_wrap test_srcu_wrap)
foreach(t ${SK_HOOKS_TESTS})
  if(TARGET ${t})
    # Replace the scalekit_static link: one copy of the library only.
    set_property(TARGET ${t} PROPERTY LINK_LIBRARIES scalekit_hooks)
  endif()
endforeach()
