# SPDX-License-Identifier: MIT
#
# The simulated-elision build: scalekit_elide_sim is the testing build of
# the library (SK_TESTING, tests/testing.cmake) compiled with SK_ELIDE_SIM=1
# as well, where the elided locks run their state machine over
# simulated transactions whose aborts tests inject (src/elide_sim.c).
# test_elide_sim links it instead of scalekit_static; the installed
# libraries never contain the simulator or its hooks.

if(CMAKE_SCRIPT_MODE_FILE)
  return()
endif()

include(${PROJECT_SOURCE_DIR}/cmake/sk_lib_variant.cmake)
# The simulator replaces the hardware backend, so it is a build of its own
# rather than part of scalekit_testing; it shares scalekit_testing's
# objects of the sources that SK_ELIDE_SIM does not change.
sk_lib_variant_sim(scalekit_elide_sim scalekit_testing)
sk_lib_variant_link(scalekit_elide_sim test_elide_sim)
