# SPDX-License-Identifier: MIT
#
# The Triplett checker build: scalekit_checker is the library compiled with
# SK_RCU_CHECKER=1, so that the publications and grace periods inside
# src/rhash.c call sk_rcu_checker_hook (see include/scalekit/list.h and
# tests/rcu_checker.h), and the test knob sk_rhash__test_broken exists.
# test_rhash_checker and test_list_checker link it instead of
# scalekit_static; everything else is the same library.  The installed
# libraries contain neither the hook nor the knob (the exports test checks).

if(CMAKE_SCRIPT_MODE_FILE)
  return()
endif()

include(${PROJECT_SOURCE_DIR}/cmake/sk_lib_variant.cmake)
sk_lib_variant(scalekit_checker SK_RCU_CHECKER test_rhash_checker
  test_list_checker)

# The exhaustive checker runs take a while under the sanitizers.
foreach(t test_list_checker test_rhash_checker)
  if(TARGET ${t})
    set_tests_properties(${t} PROPERTIES LABELS "unit;checker")
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
