# SPDX-License-Identifier: MIT
#
# The logic of the `install` test (registered by tests/install.cmake); run as
#   cmake -DBUILD_DIR=... -DWORK_DIR=... -DLIBDIR=lib -DINCLUDEDIR=include \
#         -DEXAMPLE=examples/rcu_basic.c -DCONSUMER_DIR=tests/install_consumer \
#         -DCC=cc -DCXX=c++ -DPKG_CONFIG=pkg-config -DGENERATOR="Unix Makefiles" \
#         -DVERSION=0.1.0 [-DCONFIG=RelWithDebInfo] -P tests/install_check.cmake
#
#  1. cmake --install BUILD_DIR --prefix WORK_DIR/prefix (a prefix other than
#     the configured one, so the installed files must be relocatable);
#  2. the expected files are there, and no internal header is (and, with
#     -DREADELF=..., libscalekit.so does not need libstdc++);
#  3. rcu_basic.c built with `pkg-config --cflags --libs scalekit` and run;
#  4. rcu_basic.c built by a separate CMake project with
#     find_package(scalekit) against scalekit::scalekit and
#     scalekit::scalekit_static, and both run;
#     The C++ consumer (CONSUMER_DIR/cpp_consumer.cpp, scalekit/rcu.hpp)
#     is built both ways too (CXX, -std=c++17) and run;
#  5. with URCU_PROGRAM: a program of liburcu's API built with
#     `pkg-config --cflags --libs scalekit-urcu` and, in step 4's project,
#     against scalekit::urcu, and both run.
# Every step prints what it runs; the first failure stops with its output.

# tests/CMakeLists.txt includes every tests/*.cmake: do nothing there.
if(NOT CMAKE_SCRIPT_MODE_FILE)
  return()
endif()

foreach(v BUILD_DIR WORK_DIR LIBDIR INCLUDEDIR EXAMPLE CONSUMER_DIR CC CXX GENERATOR VERSION)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "install: -D${v}=... is required")
  endif()
endforeach()
if(NOT PKG_CONFIG)
  message(FATAL_ERROR "install: pkg-config was not found when the build was "
    "configured; install it (scripts/deps.sh) and reconfigure")
endif()

set(prefix ${WORK_DIR}/prefix)
set(libdir ${prefix}/${LIBDIR})

# Run a command; on failure print it with its output and stop.
function(sk_run what)
  string(REPLACE ";" " " shown "${ARGN}")
  message(STATUS "install: ${what}: ${shown}")
  execute_process(COMMAND ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install: ${what} failed (${rc}):\n${shown}\n${out}${err}")
  endif()
  set(sk_run_out "${out}" PARENT_SCOPE)
endfunction()

# Run a built example and check that it says it succeeded ("<name>: ok",
# rcu_basic unless a third argument names another program).
function(sk_run_example what exe)
  set(name rcu_basic)
  if(ARGC GREATER 2)
    set(name ${ARGV2})
  endif()
  sk_run("${what}" ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libdir} ${exe})
  if(NOT sk_run_out MATCHES "${name}: ok")
    message(FATAL_ERROR "install: ${what}: unexpected output:\n${sk_run_out}")
  endif()
  string(STRIP "${sk_run_out}" shown)
  string(REPLACE "\n" "\n    " shown "${shown}")
  message(STATUS "    ${shown}")
endfunction()

# ---- 1. install ----------------------------------------------------------------
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(config_args "")
if(CONFIG)
  set(config_args --config ${CONFIG})
endif()
sk_run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR}
  --prefix ${prefix} ${config_args})

# ---- 2. the installed files ----------------------------------------------------
foreach(f
    ${INCLUDEDIR}/scalekit/barrier.h
    ${INCLUDEDIR}/scalekit/rcu.h
    ${INCLUDEDIR}/scalekit/rcu.hpp
    ${LIBDIR}/libscalekit.so
    ${LIBDIR}/libscalekit.a
    ${LIBDIR}/pkgconfig/scalekit.pc
    ${LIBDIR}/cmake/scalekit/scalekitConfig.cmake
    ${LIBDIR}/cmake/scalekit/scalekitConfigVersion.cmake
    ${LIBDIR}/cmake/scalekit/scalekitTargets.cmake)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "install: ${prefix}/${f} was not installed")
  endif()
endforeach()
file(GLOB_RECURSE internal ${prefix}/${INCLUDEDIR}/*internal*)
if(internal)
  message(FATAL_ERROR "install: internal headers were installed: ${internal}")
endif()
# The C++ layer is header-only: the library must never need libstdc++.
if(READELF)
  sk_run("readelf -d libscalekit.so" ${READELF} -d ${libdir}/libscalekit.so)
  if(sk_run_out MATCHES "NEEDED[^\n]*libstdc\\+\\+")
    message(FATAL_ERROR "install: libscalekit.so needs libstdc++:\n${sk_run_out}")
  endif()
endif()
file(GLOB installed_headers ${prefix}/${INCLUDEDIR}/scalekit/*.h)
list(LENGTH installed_headers nheaders)
message(STATUS "install: ${nheaders} public headers, libraries, pkg-config "
  "and CMake files are in ${prefix}")
# Step 2 too: every public header of the source tree, C (*.h) and C++
# (*.hpp), was installed.
file(GLOB public_headers RELATIVE ${CMAKE_CURRENT_LIST_DIR}/../include
  ${CMAKE_CURRENT_LIST_DIR}/../include/scalekit/*.h
  ${CMAKE_CURRENT_LIST_DIR}/../include/scalekit/*.hpp)
foreach(h IN LISTS public_headers)
  if(NOT EXISTS ${prefix}/${INCLUDEDIR}/${h})
    message(FATAL_ERROR "install: the public header ${h} was not installed")
  endif()
endforeach()

# ---- 3. pkg-config ---------------------------------------------------------------
# PKG_CONFIG_PATH is searched before the system directories, so an
# installed system-wide scalekit cannot stand in for this one; the -I path
# is checked below all the same.
set(ENV{PKG_CONFIG_PATH} ${libdir}/pkgconfig)
sk_run("pkg-config --modversion" ${PKG_CONFIG} --modversion scalekit)
string(STRIP "${sk_run_out}" pc_version)
if(NOT pc_version STREQUAL VERSION)
  message(FATAL_ERROR "install: scalekit.pc says version ${pc_version}, expected ${VERSION}")
endif()
sk_run("pkg-config --cflags" ${PKG_CONFIG} --cflags scalekit)
string(STRIP "${sk_run_out}" pc_cflags)
sk_run("pkg-config --libs" ${PKG_CONFIG} --libs scalekit)
string(STRIP "${sk_run_out}" pc_libs)

# The .pc file must point into this prefix, not the configured one.
if(NOT pc_cflags MATCHES "-I([^ ]+)")
  message(FATAL_ERROR "install: no -I in pkg-config --cflags: ${pc_cflags}")
endif()
get_filename_component(pc_inc "${CMAKE_MATCH_1}" REALPATH)
get_filename_component(want_inc "${prefix}/${INCLUDEDIR}" REALPATH)
if(NOT pc_inc STREQUAL want_inc)
  message(FATAL_ERROR "install: scalekit.pc points to ${pc_inc}, not to the "
    "install prefix ${want_inc} (is it relocatable?)")
endif()

separate_arguments(cflags_list UNIX_COMMAND "${pc_cflags}")
separate_arguments(libs_list UNIX_COMMAND "${pc_libs}")
set(exe_pc ${WORK_DIR}/rcu_basic_pkgconfig)
sk_run("build with pkg-config" ${CC} -std=gnu11 -Wall -Wextra -Werror
  ${cflags_list} ${EXAMPLE} -o ${exe_pc} ${libs_list})
sk_run_example("run the pkg-config build" ${exe_pc})
set(exe_cpp_pc ${WORK_DIR}/cpp_consumer_pkgconfig)
sk_run("build the C++ consumer with pkg-config" ${CXX} -std=c++17 -pedantic
  -Wall -Wextra -Werror ${cflags_list} ${CONSUMER_DIR}/cpp_consumer.cpp
  -o ${exe_cpp_pc} ${libs_list})
sk_run_example("run the C++ pkg-config build" ${exe_cpp_pc} cpp_consumer)

# ---- 4. CMake find_package ---------------------------------------------------------
set(consumer ${WORK_DIR}/consumer)
sk_run("configure a find_package(scalekit) project" ${CMAKE_COMMAND}
  -S ${CONSUMER_DIR} -B ${consumer} -G ${GENERATOR}
  -DCMAKE_PREFIX_PATH=${prefix}
  -DCMAKE_C_COMPILER=${CC}
  -DCMAKE_CXX_COMPILER=${CXX}
  -DCMAKE_BUILD_TYPE=RelWithDebInfo
  -DSK_EXAMPLE=${EXAMPLE}
  -DSK_URCU_PROGRAM=${URCU_PROGRAM}
  -DSK_VERSION=${VERSION})
file(STRINGS ${consumer}/CMakeCache.txt found_dir REGEX "^scalekit_DIR:")
string(REGEX REPLACE "^[^=]*=" "" found_dir "${found_dir}")
get_filename_component(found_dir "${found_dir}" REALPATH)
get_filename_component(want_dir "${libdir}/cmake/scalekit" REALPATH)
if(NOT found_dir STREQUAL want_dir)
  message(FATAL_ERROR "install: find_package found scalekit in ${found_dir}, "
    "not in the install prefix ${want_dir}")
endif()
sk_run("build the find_package project" ${CMAKE_COMMAND} --build ${consumer})
sk_run_example("run the find_package build (shared)" ${consumer}/rcu_basic)
sk_run_example("run the find_package build (static)" ${consumer}/rcu_basic_static)
sk_run_example("run the find_package C++ build" ${consumer}/cpp_consumer cpp_consumer)

# ---- 5. liburcu's API: scalekit-urcu.pc and scalekit::urcu ---------------------
if(URCU_PROGRAM)
  sk_run("pkg-config scalekit-urcu" ${PKG_CONFIG} --cflags --libs scalekit-urcu)
  separate_arguments(urcu_flags UNIX_COMMAND "${sk_run_out}")
  sk_run("build a liburcu program with pkg-config" ${CC} -std=gnu11 -Wall
    -Werror ${URCU_PROGRAM} -o ${WORK_DIR}/urcu_api_pkgconfig ${urcu_flags})
  foreach(exe ${WORK_DIR}/urcu_api_pkgconfig ${consumer}/urcu_api)
    sk_run("run ${exe}" ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libdir} ${exe})
    if(NOT sk_run_out MATCHES "urcu_api memb: ok")
      message(FATAL_ERROR "install: ${exe}: unexpected output:\n${sk_run_out}")
    endif()
  endforeach()
endif()

message(STATUS "install: ok")
