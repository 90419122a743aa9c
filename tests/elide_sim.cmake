# SPDX-License-Identifier: MIT
#
# The simulated-elision build: scalekit_elide_sim is the library compiled
# with SK_ELIDE_SIM=1, where the elided locks run their state machine over
# simulated transactions whose aborts tests inject (src/elide_sim.c).
# test_elide_sim links it instead of scalekit_static; the installed
# libraries never contain the simulator or its hooks.

if(CMAKE_SCRIPT_MODE_FILE)
  return()
endif()

include(${PROJECT_SOURCE_DIR}/cmake/sk_lib_variant.cmake)
sk_lib_variant(scalekit_elide_sim SK_ELIDE_SIM test_elide_sim)
