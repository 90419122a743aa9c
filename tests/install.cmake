# SPDX-License-Identifier: MIT
#
# install: `cmake --install` into a scratch prefix, then build
# examples/rcu_basic.c against the installed copy only, the two ways the
# README tells users to (pkg-config; CMake find_package + scalekit::scalekit,
# plus the static library), and run the programs.  The logic is in
# tests/install_check.cmake; the CMake consumer is tests/install_consumer/.

if(CMAKE_SCRIPT_MODE_FILE)
  return()
endif()

add_test(NAME install
  COMMAND ${CMAKE_COMMAND}
    -DBUILD_DIR=${PROJECT_BINARY_DIR}
    -DCONFIG=$<CONFIG>
    -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/install_check
    -DLIBDIR=${CMAKE_INSTALL_LIBDIR}
    -DINCLUDEDIR=${CMAKE_INSTALL_INCLUDEDIR}
    -DEXAMPLE=${PROJECT_SOURCE_DIR}/examples/rcu_basic.c
    -DURCU_PROGRAM=${PROJECT_SOURCE_DIR}/tests/urcu/urcu_api.c
    -DCONSUMER_DIR=${CMAKE_CURRENT_SOURCE_DIR}/install_consumer
    -DCC=${CMAKE_C_COMPILER}
    -DCXX=${CMAKE_CXX_COMPILER}
    -DREADELF=${CMAKE_READELF}
    -DPKG_CONFIG=${PKG_CONFIG_EXECUTABLE}
    -DGENERATOR=${CMAKE_GENERATOR}
    -DVERSION=${PROJECT_VERSION}
    -P ${CMAKE_CURRENT_SOURCE_DIR}/install_check.cmake)
set_tests_properties(install PROPERTIES TIMEOUT 300 LABELS "nosan")
