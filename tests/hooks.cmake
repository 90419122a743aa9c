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

include(${PROJECT_SOURCE_DIR}/cmake/sk_lib_variant.cmake)
sk_lib_variant(scalekit_hooks SK_TEST_HOOKS test_rcu_wrap test_srcu_wrap
  test_rcu_expedite test_rwlock_rb test_worker)
