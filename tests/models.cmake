# SPDX-License-Identifier: MIT
#
# Models of concurrency protocols (tests/models/), checked with spin when
# it is installed (the test reports itself skipped otherwise).  They do
# not depend on the build, so the sanitizer builds skip them (nosan).

if(CMAKE_SCRIPT_MODE_FILE)
  return()
endif()

add_test(NAME model_cb_wake
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/models/check_cb_wake.sh
    ${CMAKE_CURRENT_SOURCE_DIR}/models/cb_wake.pml
    ${CMAKE_CURRENT_BINARY_DIR}/models/cb_wake ${CMAKE_C_COMPILER})
set_tests_properties(model_cb_wake PROPERTIES
  TIMEOUT 120 LABELS "unit;nosan" SKIP_RETURN_CODE 77)
