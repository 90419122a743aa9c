# SPDX-License-Identifier: MIT
#
# The examples (examples/*.c, *.cpp) run in `make check`: each one checks what it
# shows and exits 0 only when its own checks hold, printing "<name>: ok"
# as its last line.  A test per example, label "unit" and "example".

if(CMAKE_SCRIPT_MODE_FILE)
  return()
endif()

file(GLOB sk_example_sources CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/examples/*.c ${PROJECT_SOURCE_DIR}/examples/*.cpp)
foreach(src ${sk_example_sources})
  get_filename_component(name ${src} NAME_WE)
  if(TARGET example_${name})
    add_test(NAME example_${name} COMMAND example_${name})
    set_tests_properties(example_${name} PROPERTIES
      TIMEOUT ${SK_TEST_TIMEOUT} LABELS "unit;example"
      REQUIRED_FILES $<TARGET_FILE:example_${name}>)
  endif()
endforeach()
