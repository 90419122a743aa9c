# SPDX-License-Identifier: MIT
#
# tls_model: every thread-local variable of the shared library uses the
# initial-exec TLS model, so that a program linked with libscalekit.so
# reaches it at a fixed offset from the thread pointer.  The default
# model of -fPIC code (general or local dynamic) calls __tls_get_addr on
# each access: measured here, sk_rwlock_rb_read_lock+read_unlock took 10.1 ns
# through libscalekit.so against 4.8 ns statically linked, and 6.3 ns
# through the library once its row pointer was initial-exec.
#
# The check reads the library's dynamic relocations: a dynamic-model
# access needs a module-id relocation (x86: *_DTPMOD*, aarch64: *_DTPMOD*
# or *_TLSDESC), an initial-exec one only *_TPOFF*.  Its broken twin,
# tls_model_catches_dynamic, runs the check on a small library with one
# plain __thread variable: the check must fail there.
#
#   cmake -DREADELF=readelf -DLIB=libscalekit.so -P tests/tls_model.cmake

if(NOT CMAKE_SCRIPT_MODE_FILE)
  # ---- registration (configure time) ----------------------------------------
  include(${PROJECT_SOURCE_DIR}/cmake/sk_check_script.cmake)
  sk_check_with_twin(tls_model NEEDS CMAKE_READELF "readelf (binutils)"
    DEFS -DREADELF=${CMAKE_READELF}
    CHECK_DEFS -DLIB=$<TARGET_FILE:scalekit>
    TWIN tls_model_catches_dynamic
    TWIN_LIBRARY sk_tls_model_twin "static __thread int sk_zz_counter;
int sk_zz_bump(void) { return ++sk_zz_counter; }
"
    TWIN_DEFS -DLIB=$<TARGET_FILE:sk_tls_model_twin>
    TWIN_PASS "tls_model:[ \n]+.*[ \n]+dynamic-model[ \n]+TLS[ \n]+relocation")
  return()
endif()

# ---- the check (cmake -P) ------------------------------------------------------
foreach(v READELF LIB)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "tls_model: -D${v}=... is required")
  endif()
endforeach()
include(${CMAKE_CURRENT_LIST_DIR}/../cmake/sk_check_script.cmake)
sk_check_output(relocs tls_model ${READELF} -rW ${LIB})
string(REGEX MATCHALL "R_[A-Z0-9_]*(DTPMOD|TLSDESC)[A-Z0-9_]*" dyn "${relocs}")
string(REGEX MATCHALL "R_[A-Z0-9_]*TPOFF[A-Z0-9_]*" ie "${relocs}")
list(LENGTH dyn ndyn)
list(LENGTH ie nie)
if(ndyn GREATER 0)
  list(REMOVE_DUPLICATES dyn)
  message(FATAL_ERROR "tls_model: ${LIB} has ${ndyn} dynamic-model TLS "
    "relocation(s) (${dyn}): give its __thread variables "
    "__attribute__((tls_model(\"initial-exec\")))")
endif()
message(STATUS "tls_model: ${LIB}: ${nie} initial-exec TLS relocations, no dynamic-model one")
