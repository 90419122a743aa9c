# SPDX-License-Identifier: MIT
# The broken twins of the C++ stress tests of sk::rcu_list and sk::rhash
# (tests/cpp/test_cpp_list.cpp, test_cpp_rhash.cpp): the same program run
# with --broken poisons what it erases without waiting for a grace period;
# the twin passes only when the readers caught it and said so.
if(CMAKE_SCRIPT_MODE_FILE)
  return()
endif()
foreach(t test_cpp_list test_cpp_rhash)
  if(TARGET ${t}_cxx17)
    add_test(NAME ${t}_broken COMMAND ${t}_cxx17 --broken)
    set_tests_properties(${t}_broken PROPERTIES TIMEOUT ${SK_TEST_TIMEOUT}
      LABELS "unit;cpp"
      PASS_REGULAR_EXPRESSION "readers saw a freed object [0-9]+ times")
  endif()
endforeach()
