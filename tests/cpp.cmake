# SPDX-License-Identifier: MIT
#
# The C++ layer's tests: every tests/cpp/test_*.cpp is built twice, as
# C++17 and as C++20 (ISO, no GNU extensions, -pedantic), with the
# project's C++ compiler, linked to the static library and the test
# support library, and registered as <name>_cxx17 and <name>_cxx20
# (labels "unit;cpp").  The sanitizer jobs build them with their flags
# like every other test.
#
# sk_cxx_test_link(NAME LIB): both builds of tests/cpp/NAME.cpp link LIB
# (a variant of cmake/sk_lib_variant.cmake) instead of scalekit_static.

file(GLOB SK_CXX_TESTS CONFIGURE_DEPENDS
  ${CMAKE_CURRENT_SOURCE_DIR}/cpp/test_*.cpp)
foreach(src ${SK_CXX_TESTS})
  get_filename_component(name ${src} NAME_WE)
  foreach(std 17 20)
    set(t ${name}_cxx${std})
    add_executable(${t} ${src})
    set_target_properties(${t} PROPERTIES CXX_STANDARD ${std}
      CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF)
    target_compile_options(${t} PRIVATE -pedantic)
    target_include_directories(${t} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/cpp)
    target_link_libraries(${t} PRIVATE sk_test_support scalekit_static)
    add_test(NAME ${t} COMMAND ${t})
    set_tests_properties(${t} PROPERTIES TIMEOUT ${SK_TEST_TIMEOUT}
      LABELS "unit;cpp")
  endforeach()
endforeach()

# sk_cxx_test_twin(NAME): the broken twin of tests/cpp/NAME.cpp, built as
# C++17 with SK_CXX_TEST_BROKEN, where the file runs only its concurrency
# tests, each against something broken (a lock that does not lock, a
# guard that enters no section).  The twin passes when every one of them
# failed: its closing line must read "0 passed, N failed" with N > 0.
function(sk_cxx_test_twin name)
  set(t ${name}_broken)
  add_executable(${t} ${CMAKE_CURRENT_SOURCE_DIR}/cpp/${name}.cpp)
  set_target_properties(${t} PROPERTIES CXX_STANDARD 17
    CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF)
  target_compile_options(${t} PRIVATE -pedantic)
  target_compile_definitions(${t} PRIVATE SK_CXX_TEST_BROKEN)
  target_include_directories(${t} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/cpp)
  target_link_libraries(${t} PRIVATE sk_test_support scalekit_static)
  add_test(NAME ${t} COMMAND ${t})
  set_tests_properties(${t} PROPERTIES TIMEOUT ${SK_TEST_TIMEOUT}
    LABELS "unit;cpp" PASS_REGULAR_EXPRESSION "(^|\n)0 passed, [1-9][0-9]* failed")
endfunction()
sk_cxx_test_twin(test_cpp_srcu)
sk_cxx_test_twin(test_cpp_locks)
# The lock wrappers on the simulated elision backend (tests/elide_sim.cmake).
include(${PROJECT_SOURCE_DIR}/cmake/sk_lib_variant.cmake)
sk_lib_variant_link(scalekit_elide_sim test_cpp_locks_sim_cxx17
  test_cpp_locks_sim_cxx20)

function(sk_cxx_test_link name lib)
  include(${PROJECT_SOURCE_DIR}/cmake/sk_lib_variant.cmake)
  sk_lib_variant_link(${lib} ${name}_cxx17 ${name}_cxx20)
endfunction()
