# SPDX-License-Identifier: MIT
# The check of urcu_liburcu_examples (tests/urcu/CMakeLists.txt): the
# example programs that liburcu-dev installs (EXAMPLES, e.g.
# /usr/share/doc/liburcu-dev/examples), written for liburcu, build
# unchanged against scalekit's compat layer (the compile and link flags of
# `pkg-config scalekit-urcu`, plus liburcu-cds for the containers) and run
# to success.  They are built from where liburcu installed them, never
# copied into this tree.
#
#   cmake -DCC=cc -DEXAMPLES=... -DCOMPAT_INC=... -DINC=... -DLIBDIRS="a;b"
#         -DCDS_LIBS="-lurcu-cds" -DWORK=... [-DSANFLAGS="-fsanitize=..."]
#         -P tests/urcu/liburcu_examples.cmake
#
# SANFLAGS (the ASan build): the examples are built with the sanitizer
# too, and run against the instrumented libraries; liburcu-cds itself is
# not instrumented, but the heads it hands to call_rcu() are checked where
# this layer writes them (heap errors; the leak check is off, below).
if(NOT CC OR NOT EXAMPLES OR NOT COMPAT_INC OR NOT INC OR NOT LIBDIRS OR NOT WORK)
  message(FATAL_ERROR "liburcu examples: -DCC, -DEXAMPLES, -DCOMPAT_INC, "
    "-DINC, -DLIBDIRS and -DWORK are required")
endif()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
file(GLOB srcs ${EXAMPLES}/urcu-flavors/membarrier.c ${EXAMPLES}/urcu-flavors/qsbr.c
  ${EXAMPLES}/urcu-flavors/bp.c ${EXAMPLES}/list/*.c ${EXAMPLES}/hlist/*.c
  ${EXAMPLES}/rculfhash/*.c ${EXAMPLES}/rculfqueue/*.c)
if(NOT srcs)
  message(FATAL_ERROR "liburcu examples: none found in ${EXAMPLES}")
endif()
set(ldflags "")
foreach(d IN LISTS LIBDIRS)
  list(APPEND ldflags -L${d})
endforeach()
separate_arguments(cds UNIX_COMMAND "${CDS_LIBS}")
separate_arguments(san UNIX_COMMAND "${SANFLAGS}")
# The examples leave their tables and nodes allocated at exit (leaks of
# the example programs, not of this layer): no leak check.
set(asan_env "")
if(SANFLAGS)
  set(asan_env ASAN_OPTIONS=detect_leaks=0)
endif()
string(REPLACE ";" ":" ldpath "${LIBDIRS}")
set(n 0)
foreach(src IN LISTS srcs)
  get_filename_component(dir ${src} DIRECTORY)
  get_filename_component(dname ${dir} NAME)
  get_filename_component(name ${src} NAME_WE)
  set(exe ${WORK}/${dname}_${name})
  execute_process(COMMAND ${CC} -std=gnu11 ${san} -I${COMPAT_INC} -I${INC} -I${dir}
      -pthread ${src} -o ${exe} ${ldflags} -lscalekit-urcu -lscalekit ${cds} -pthread
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "liburcu examples: ${src} does not build:\n${err}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${ldpath} ${asan_env} ${exe}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "liburcu examples: ${exe} failed (${rc}):\n${out}${err}")
  endif()
  math(EXPR n "${n} + 1")
  message(STATUS "liburcu examples: ${dname}/${name}: built and ran")
endforeach()
message(STATUS "liburcu examples: ok, ${n} programs")
