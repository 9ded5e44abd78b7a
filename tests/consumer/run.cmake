# cmake -DMODE=find_package|add_subdirectory -DPROF_SOURCE_DIR=... \
#       -DPROF_BINARY_DIR=... -DWORK_DIR=... -DGENERATOR=... \
#       -DC_COMPILER=... -DCXX_COMPILER=... -P run.cmake
# Builds tests/consumer against this tree, installed into WORK_DIR/prefix
# (find_package) or as a subdirectory, runs its programs and reads the traces.
cmake_minimum_required(VERSION 3.16)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}")
  endif()
endfunction()

set(prefix "${WORK_DIR}/prefix")
set(build "${WORK_DIR}/build")
file(REMOVE_RECURSE "${prefix}" "${build}")
file(GLOB old "${WORK_DIR}/*.json")
if(old)
  file(REMOVE ${old})
endif()

set(configure_args
  -S "${CMAKE_CURRENT_LIST_DIR}" -B "${build}" -G "${GENERATOR}"
  "-DCMAKE_C_COMPILER=${C_COMPILER}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
  "-DPROF_CONSUMER_MODE=${MODE}")
# No build type: the consumers compile unoptimised (-O0, a fifth of -O3's
# time for the implementation they hold). What is checked here is the package
# (its config, targets, include directory and link), which no build type
# changes; the optimised builds of the implementation are the stages' own.
if(MODE STREQUAL "find_package")
  run("${CMAKE_COMMAND}" --install "${PROF_BINARY_DIR}" --prefix "${prefix}")
  foreach(f include/prof.h share/cmake/prof/prof-config.cmake
            share/cmake/prof/prof-config-version.cmake
            share/cmake/prof/prof-targets.cmake)
    if(NOT EXISTS "${prefix}/${f}")
      message(FATAL_ERROR "install did not put ${f} in ${prefix}")
    endif()
  endforeach()
  list(APPEND configure_args "-DCMAKE_PREFIX_PATH=${prefix}"
                             "-DPROF_EXPECT_PREFIX=${prefix}")
elseif(MODE STREQUAL "add_subdirectory")
  list(APPEND configure_args "-DPROF_SOURCE_DIR=${PROF_SOURCE_DIR}")
else()
  message(FATAL_ERROR "MODE must be find_package or add_subdirectory")
endif()

run("${CMAKE_COMMAND}" ${configure_args})
run("${CMAKE_COMMAND}" --build "${build}")

foreach(lang c cpp)
  set(trace "${WORK_DIR}/consumer_${lang}.json")
  run("${CMAKE_COMMAND}" -E env
      --unset=PROF_SCHEDULE --unset=PROF_TABLE --unset=PROF_TB_DIR
      --unset=PROF_BUFFER_MB --unset=PROF_DISABLE "PROF_OUTPUT=${trace}"
      "${build}/consumer_${lang}")
  if(NOT EXISTS "${trace}")
    message(FATAL_ERROR "consumer_${lang} wrote no trace at ${trace}")
  endif()
  if(NOT CMAKE_VERSION VERSION_LESS 3.19)
    file(READ "${trace}" json)
    string(JSON n ERROR_VARIABLE err LENGTH "${json}" traceEvents)
    if(err OR n EQUAL 0)
      message(FATAL_ERROR "${trace}: no traceEvents array (${err})")
    endif()
    message(STATUS "consumer_${lang}: ${n} trace events")
  endif()
endforeach()
message(STATUS "package via ${MODE}: OK")
