# SPDX-License-Identifier: MIT
#
# labels: every fence pairing label in the comments of src/ and include/
# is in its module's legend (src/internal/<module>.h) and in the module's
# docs table, every legend entry and every label the docs name is used in
# the code, no comment names a bare label, and every litmus file a comment
# names exists (scripts/check_labels.py; docs/CONTRIBUTING.md, "Fences and
# their labels").
#
# This file has two roles.  Included by tests/CMakeLists.txt it registers
# the test and its twin; run with `cmake -P` it is the twin:
#
#   cmake -DPYTHON=python3 -DSRC=<source dir> -DWORK=<scratch dir>
#         -DLABEL=WK-S -DLEGEND=src/internal/worker.h -P tests/labels.cmake
#
# The twin, labels_catches_missing_entry, copies the checked part of the
# tree (src, include, docs, litmus, README.md) to WORK, deletes LABEL's
# entry line from LEGEND there, and runs the checker on the copy: it must
# fail and name LABEL as missing from the legend.

if(NOT CMAKE_SCRIPT_MODE_FILE)
  # ---- registration (configure time) ----------------------------------------
  find_package(Python3 COMPONENTS Interpreter)
  include(${PROJECT_SOURCE_DIR}/cmake/sk_check_script.cmake)
  sk_check_with_twin(labels NEEDS Python3_Interpreter_FOUND python3
    CHECK_COMMAND ${Python3_EXECUTABLE}
      ${PROJECT_SOURCE_DIR}/scripts/check_labels.py -v
      --root ${PROJECT_SOURCE_DIR}
    TWIN labels_catches_missing_entry
    TWIN_DEFS -DPYTHON=${Python3_EXECUTABLE} -DSRC=${PROJECT_SOURCE_DIR}
      -DWORK=${CMAKE_CURRENT_BINARY_DIR}/labels_twin
      -DLABEL=WK-S -DLEGEND=src/internal/worker.h)
  return()
endif()

# ---- the twin (cmake -P) --------------------------------------------------------
foreach(v PYTHON SRC WORK LABEL LEGEND)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "labels twin: -D${v}=... is required")
  endif()
endforeach()

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
foreach(d src include docs litmus)
  file(COPY ${SRC}/${d} DESTINATION ${WORK})
endforeach()
file(COPY ${SRC}/README.md ${SRC}/scripts DESTINATION ${WORK})

# The copy must pass before the entry goes: else the twin proves nothing.
execute_process(COMMAND ${PYTHON} ${WORK}/scripts/check_labels.py
    --root ${WORK}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "labels twin: the unchanged copy fails already "
    "(${rc}):\n${out}")
endif()

# Delete the entry: the comment line that starts with the label.
file(READ ${WORK}/${LEGEND} text)
string(REPLACE "-" "\\-" label_re "${LABEL}")
string(REGEX REPLACE "\n \\*[ \t]+${label_re}[ \t(][^\n]*" "" cut "${text}")
if(cut STREQUAL text)
  message(FATAL_ERROR "labels twin: no legend entry of ${LABEL} "
    "in ${LEGEND}")
endif()
file(WRITE ${WORK}/${LEGEND} "${cut}")

execute_process(COMMAND ${PYTHON} ${WORK}/scripts/check_labels.py
    --root ${WORK}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(rc EQUAL 0)
  message(FATAL_ERROR "labels twin: the check passed without the legend "
    "entry of ${LABEL}")
endif()
if(NOT out MATCHES "${label_re} is missing from the legend in ${LEGEND}")
  message(FATAL_ERROR "labels twin: the check failed (${rc}) but did not "
    "name ${LABEL} as missing from ${LEGEND}")
endif()
message("labels twin: the check fails without the entry of ${LABEL}, "
  "as it must")
