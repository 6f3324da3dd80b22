# Installs the build tree into a fresh temporary prefix, then configures, builds and runs a
# consumer project that finds it with find_package(cudactor). Run by CTest as
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... [-DCCACHE_PROGRAM=...] -P <this>
# CCACHE_PROGRAM: compile the consumer through ccache, keyed as the build's own compiles are
# (paths under the source tree made relative), so that a clone's consumer is a cache hit.
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "${var} is not set")
  endif()
endforeach()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "failed (${code}): ${ARGN}\n${out}\n${err}")
  endif()
  message("${out}")
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")
foreach(required lib/cmake/cudactor/cudactorConfig.cmake
                 lib/cmake/cudactor/cudactorConfigVersion.cmake
                 lib/cmake/cudactor/FindCAF.cmake
                 include/cudactor/gpu/backend.hpp)
  if(NOT EXISTS "${prefix}/${required}")
    message(FATAL_ERROR "the install lacks ${required}")
  endif()
endforeach()
if(EXISTS "${prefix}/include/cudactor/gpu/detail")
  message(FATAL_ERROR "internal headers (gpu/detail) must not be installed")
endif()

set(configure_args -S "${SOURCE_DIR}/tests/install/consumer" -B "${WORK_DIR}/consumer"
                   "-DCMAKE_PREFIX_PATH=${prefix}")
if(CCACHE_PROGRAM)
  list(APPEND configure_args "-DCMAKE_CXX_COMPILER_LAUNCHER=${CCACHE_PROGRAM}")
  set(ENV{CCACHE_BASEDIR} "${SOURCE_DIR}")
  set(ENV{CCACHE_NOHASHDIR} "true")
  set(ENV{CCACHE_SLOPPINESS} "include_file_mtime,include_file_ctime")
endif()
run(${CMAKE_COMMAND} ${configure_args})
run(${CMAKE_COMMAND} --build "${WORK_DIR}/consumer")
run("${WORK_DIR}/consumer/consumer")
file(REMOVE_RECURSE "${WORK_DIR}")
