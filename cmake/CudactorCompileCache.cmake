# The compile cache (docs/development.md): every C++ and CUDA compile of every build folder
# goes through ccache when it is installed, so that a clean clone of a commit whose sources were
# already compiled in another folder recompiles nothing.
#
# What makes two clones share entries:
#  - base_dir: absolute paths under the source tree (sources, -I folders, the precompiled
#    header) are handed to the compiler relative to the folder it runs in, so the command
#    line and the preprocessed text are the same in /work/main/build and /tmp/clone/build;
#  - hash_dir off: the compiler's working folder is not part of the key (with -g it would be),
#    so objects compiled in one clone carry that clone's folder as DW_AT_comp_dir; the line
#    tables' file names are relative, which is what gdb, perf and the sanitizers print;
#  - sloppiness: precompiled headers are cached (pch_defines, time_macros), and a header
#    written a moment before a compile (the install test's prefix) does not turn the direct
#    mode off (include_file_mtime, include_file_ctime).
# No absolute path of the build tree may appear in a command line: it would make each clone's
# key its own. Paths that programs of the build tree need go through cudactor_build_paths
# (cmake/build_paths/), one small file compiled per clone.
#
# CUDACTOR_CCACHE: AUTO (default: use ccache where found), ON (required) or OFF. The
# environment variable of that name, when set, wins over the cached value for that configure
# only, so that `CUDACTOR_CCACHE=off make test` builds once without the cache and the next
# `make test` uses it again (make configures every time). A launcher given by the caller
# (CMAKE_CXX_COMPILER_LAUNCHER) is left as it is.
set(CUDACTOR_CCACHE AUTO CACHE STRING "Compile through ccache: AUTO (where found), ON, OFF")
set_property(CACHE CUDACTOR_CCACHE PROPERTY STRINGS AUTO ON OFF)
set(_cudactor_ccache "${CUDACTOR_CCACHE}")
if(DEFINED ENV{CUDACTOR_CCACHE})
  set(_cudactor_ccache "$ENV{CUDACTOR_CCACHE}")
endif()
string(TOUPPER "${_cudactor_ccache}" _cudactor_ccache)
if(NOT _cudactor_ccache MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "CUDACTOR_CCACHE must be AUTO, ON or OFF, not '${_cudactor_ccache}'")
endif()

# The launcher this build put in place last time, so that OFF takes it away again.
set(_cudactor_ccache_launcher "")
if(NOT _cudactor_ccache STREQUAL "OFF")
  find_program(CUDACTOR_CCACHE_PROGRAM ccache)
  find_program(CUDACTOR_ENV_PROGRAM env)
  if(CUDACTOR_CCACHE_PROGRAM AND CUDACTOR_ENV_PROGRAM)
    set(_cudactor_ccache_launcher
        "${CUDACTOR_ENV_PROGRAM}" "CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}" "CCACHE_NOHASHDIR=true"
        "CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime"
        "${CUDACTOR_CCACHE_PROGRAM}")
  elseif(_cudactor_ccache STREQUAL "ON")
    message(FATAL_ERROR "CUDACTOR_CCACHE=ON but ccache was not found (scripts/install-deps)")
  endif()
endif()
foreach(lang CXX CUDA)
  if(DEFINED CMAKE_${lang}_COMPILER_LAUNCHER
     AND NOT "${CMAKE_${lang}_COMPILER_LAUNCHER}" STREQUAL "${CUDACTOR_CCACHE_LAUNCHER_SET}")
    message(STATUS "cudactor: ${lang} compiles through the given launcher ${CMAKE_${lang}_COMPILER_LAUNCHER}")
    continue()  # the caller's own launcher
  endif()
  if(_cudactor_ccache_launcher)
    set(CMAKE_${lang}_COMPILER_LAUNCHER "${_cudactor_ccache_launcher}" CACHE STRING
        "Compiler launcher (cudactor: ccache)" FORCE)
  else()
    unset(CMAKE_${lang}_COMPILER_LAUNCHER CACHE)
    unset(CMAKE_${lang}_COMPILER_LAUNCHER)
  endif()
endforeach()
set(CUDACTOR_CCACHE_LAUNCHER_SET "${_cudactor_ccache_launcher}" CACHE INTERNAL "")
if(_cudactor_ccache_launcher)
  message(STATUS "cudactor: compiling through ${CUDACTOR_CCACHE_PROGRAM}")
else()
  message(STATUS "cudactor: no compile cache")
endif()
