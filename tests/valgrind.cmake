# SPDX-License-Identifier: MIT
#
# Process exit, dlclose() and valgrind checks of the RCU library.
# Included by tests/CMakeLists.txt.  Helper programs are named valgrind_*.c
# (not test_*.c, which would make them unit tests of their own).
#
#   valgrind_exit_pending   exit from main() with registered threads (one
#                           QSBR thread parked online) and callbacks pending,
#                           or with the worker busy running a flood of them:
#                           20 runs of each, every one must exit 0 (a hang
#                           hits the TIMEOUT).  Native, every build.
#   dlclose_nodelete        a plugin linking libscalekit.so is dlopen()ed,
#                           queues callbacks, is dlclose()d with callbacks
#                           pending; the library must stay loaded
#                           (-z nodelete) and the process must not crash.
#   dlclose_nodelete_twin   the same against a copy of the library linked
#                           without -z nodelete: the check must see it
#                           unloaded (or the process crash).  Proves the
#                           check above can fail.
#   valgrind_leaks          memcheck: threads register, read, queue
#                           SK_FREE_RCU()/sk_call_rcu() callbacks and exit;
#                           main calls sk_rcu_barrier(): no definite leak,
#                           no error.
#   valgrind_exit_*_memcheck, valgrind_dlclose
#                           the exit and dlclose programs under memcheck.
# The valgrind tests carry the label nosan (sanitizer builds skip them) and
# exist only when valgrind is installed.

set(sk_vg_dir ${CMAKE_CURRENT_SOURCE_DIR})

add_executable(valgrind_exit ${sk_vg_dir}/valgrind_exit.c)
target_link_libraries(valgrind_exit PRIVATE scalekit_static)

# The dlclose driver does not link libscalekit: only the plugin does.
add_executable(valgrind_dlclose ${sk_vg_dir}/valgrind_dlclose.c)
target_link_libraries(valgrind_dlclose PRIVATE ${CMAKE_DL_LIBS})

add_library(valgrind_dlmod MODULE ${sk_vg_dir}/valgrind_dlmod.c)
target_link_libraries(valgrind_dlmod PRIVATE scalekit)

# Broken twin: the same objects as libscalekit, without -z nodelete.
add_library(sk_test_deletable SHARED $<TARGET_OBJECTS:scalekit_obj>)
target_include_directories(sk_test_deletable PUBLIC ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(sk_test_deletable PUBLIC Threads::Threads)
add_library(valgrind_dlmod_twin MODULE ${sk_vg_dir}/valgrind_dlmod.c)
target_link_libraries(valgrind_dlmod_twin PRIVATE sk_test_deletable)

add_test(NAME valgrind_exit_pending COMMAND valgrind_exit exit-loop)
set_tests_properties(valgrind_exit_pending PROPERTIES TIMEOUT 120 LABELS unit)

add_test(NAME dlclose_nodelete
  COMMAND valgrind_dlclose $<TARGET_FILE:valgrind_dlmod>
          $<TARGET_SONAME_FILE_NAME:scalekit>)
add_test(NAME dlclose_nodelete_twin
  COMMAND valgrind_dlclose --expect-unload $<TARGET_FILE:valgrind_dlmod_twin>
          $<TARGET_FILE_NAME:sk_test_deletable>)
set_tests_properties(dlclose_nodelete dlclose_nodelete_twin PROPERTIES
  TIMEOUT 60 LABELS unit)

find_program(SK_VALGRIND valgrind)
if(SK_VALGRIND)
  set(sk_vg ${SK_VALGRIND} --leak-check=full --errors-for-leak-kinds=definite
    --error-exitcode=99 --fair-sched=try)
  add_test(NAME valgrind_leaks
    COMMAND ${sk_vg} $<TARGET_FILE:valgrind_exit> leaks)
  add_test(NAME valgrind_exit_pending_memcheck
    COMMAND ${sk_vg} $<TARGET_FILE:valgrind_exit> exit-pending)
  add_test(NAME valgrind_exit_running_memcheck
    COMMAND ${sk_vg} $<TARGET_FILE:valgrind_exit> exit-running)
  add_test(NAME valgrind_dlclose
    COMMAND ${sk_vg} $<TARGET_FILE:valgrind_dlclose>
            $<TARGET_FILE:valgrind_dlmod> $<TARGET_SONAME_FILE_NAME:scalekit>)
  set_tests_properties(valgrind_leaks valgrind_exit_pending_memcheck
    valgrind_exit_running_memcheck valgrind_dlclose PROPERTIES
    TIMEOUT 300 LABELS nosan ENVIRONMENT "SK_TEST_SLOW=1")
else()
  message(STATUS "valgrind not found: valgrind tests skipped")
endif()
