# SPDX-License-Identifier: MIT
#
# The testing build: scalekit_testing (top-level CMakeLists.txt) is the
# library compiled with SK_TESTING=1, which adds every broken mode, hook
# and test-only statistic, all declared in src/internal/testing.h: the
# broken twins of RCU, its callbacks, the hash table, the read-biased
# rwlock and the elided rwlock's writers, the Triplett checker hook, the
# counters' wrap-around presets, the worker's start failures.  The
# installed libraries never contain
# them (the release_clean test checks).  The tests listed here link it
# instead of scalekit_static; so does the torture tool (scalekit-torture).

if(CMAKE_SCRIPT_MODE_FILE)
  return()
endif()

include(${PROJECT_SOURCE_DIR}/cmake/sk_lib_variant.cmake)
sk_lib_variant_link(scalekit_testing
  test_rcu_wrap test_srcu_wrap test_rcu_expedite test_rwlock_rb test_worker
  test_rcu_batch test_rcu_cb_pcpu test_rcu_park test_rcu_quiet test_rcu_poll
  test_rhash_checker test_list_checker test_rcu_defer test_rcu_cb_own
  test_rcu_cb_auto test_elide_rw test_rcu_registry test_rcu_marks
  test_rcu_fallback test_rcu_signal test_rhash_inline test_elide
  test_srcu_fork test_srcu_api)

# The exhaustive checker runs take a while under the sanitizers: TSan's
# run of every_grow_and_shrink_between_1_and_64_buckets took 52 s alone
# and 150 s on a loaded 2-CPU machine, beside a 300 s timeout.
foreach(t test_list_checker test_rhash_checker test_rhash_checker_migration)
  if(TARGET ${t})
    set_tests_properties(${t} PROPERTIES LABELS "unit;checker" TIMEOUT 900)
  endif()
endforeach()

# The hash table's checker programs share its model (tests/rhash_checker.c),
# compiled into each with the testing build's definitions.
sk_lib_variant_link(scalekit_testing test_rhash_checker_migration)
foreach(t test_rhash_checker test_rhash_checker_migration)
  if(TARGET ${t})
    target_sources(${t} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/rhash_checker.c)
  endif()
endforeach()

# Kernel spellings (scalekit/kernel.h): the kernel passes its grace-period
# functions by name, e.g. list_splice_init_rcu(list, head, synchronize_rcu).
# Compile-only: tests/test_kernel_names.c with -DSK_KERNEL_IDIOMS.
add_test(NAME kernel_names_idioms
  COMMAND ${CMAKE_C_COMPILER} -std=gnu11 -Wall -Wextra -Werror -fsyntax-only
    -DSK_KERNEL_IDIOMS -I${PROJECT_SOURCE_DIR}/include
    -I${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/test_kernel_names.c)
set_tests_properties(kernel_names_idioms PROPERTIES TIMEOUT 60 LABELS unit)
