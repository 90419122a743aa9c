# SPDX-License-Identifier: MIT
# urcu: the tests of liburcu's API on scalekit (compat/urcu,
# docs/urcu-compat.md); they live in tests/urcu/.
# SK_BUILD_URCU_TESTS=OFF leaves them out (make check-generic: see there).
if(CMAKE_SCRIPT_MODE_FILE OR NOT SK_BUILD_URCU_TESTS)
  return()
endif()
add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/urcu ${CMAKE_CURRENT_BINARY_DIR}/urcu)
