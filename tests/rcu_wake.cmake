# SPDX-License-Identifier: MIT
#
# test_rcu_wake counts the library's futex wake-ups: every call of
# syscall() in the program, the library's included, goes through the
# test's __wrap_syscall().

if(CMAKE_SCRIPT_MODE_FILE)
  return()
endif()

if(TARGET test_rcu_wake)
  target_link_options(test_rcu_wake PRIVATE -Wl,--wrap=syscall)
endif()
