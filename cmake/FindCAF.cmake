# FindCAF.cmake: the C++ Actor Framework 0.17 as Debian packages it (libcaf-dev), which ships
# neither a CMake package configuration nor a pkg-config file.
#
# Imported targets: CAF::core, CAF::io (CAF::caf_core and CAF::caf_io as aliases), and
# CAF::openssl when libcaf-openssl is installed (component "openssl").
# Variables: CAF_FOUND, CAF_VERSION, CAF_INCLUDE_DIR, CAF_CORE_LIBRARY, CAF_IO_LIBRARY.
# Hints: CAF_ROOT (standard), CAF_INCLUDE_DIR / CAF_*_LIBRARY cache entries.
include(FindPackageHandleStandardArgs)
include(CMakeFindDependencyMacro)

find_path(CAF_INCLUDE_DIR caf/all.hpp)
find_library(CAF_CORE_LIBRARY NAMES caf_core)
find_library(CAF_IO_LIBRARY NAMES caf_io)
find_library(CAF_OPENSSL_LIBRARY NAMES caf_openssl)
mark_as_advanced(CAF_INCLUDE_DIR CAF_CORE_LIBRARY CAF_IO_LIBRARY CAF_OPENSSL_LIBRARY)

if(CAF_INCLUDE_DIR AND EXISTS "${CAF_INCLUDE_DIR}/caf/config.hpp")
  # "#define CAF_VERSION 1706" -> 0.17.6
  file(STRINGS "${CAF_INCLUDE_DIR}/caf/config.hpp" _caf_version_line
       REGEX "^#define CAF_VERSION [0-9]+")
  string(REGEX REPLACE ".* ([0-9]+)$" "\\1" _caf_version_number "${_caf_version_line}")
  math(EXPR _caf_major "${_caf_version_number} / 10000")
  math(EXPR _caf_minor "(${_caf_version_number} / 100) % 100")
  math(EXPR _caf_patch "${_caf_version_number} % 100")
  set(CAF_VERSION "${_caf_major}.${_caf_minor}.${_caf_patch}")
endif()

set(CAF_openssl_FOUND FALSE)
if(CAF_OPENSSL_LIBRARY)
  set(CAF_openssl_FOUND TRUE)
endif()

find_package_handle_standard_args(CAF
  REQUIRED_VARS CAF_CORE_LIBRARY CAF_IO_LIBRARY CAF_INCLUDE_DIR
  VERSION_VAR CAF_VERSION
  HANDLE_COMPONENTS)

if(CAF_FOUND)
  find_dependency(Threads)
  if(NOT TARGET CAF::core)
    add_library(CAF::core UNKNOWN IMPORTED)
    # Imported include directories are treated as system headers: CAF's own warnings stay out
    # of -Wall -Wextra builds.
    set_target_properties(CAF::core PROPERTIES
      IMPORTED_LOCATION "${CAF_CORE_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}"
      INTERFACE_LINK_LIBRARIES Threads::Threads)
    add_library(CAF::caf_core ALIAS CAF::core)
  endif()
  if(NOT TARGET CAF::io)
    add_library(CAF::io UNKNOWN IMPORTED)
    set_target_properties(CAF::io PROPERTIES
      IMPORTED_LOCATION "${CAF_IO_LIBRARY}"
      INTERFACE_LINK_LIBRARIES CAF::core)
    add_library(CAF::caf_io ALIAS CAF::io)
  endif()
  if(CAF_OPENSSL_LIBRARY AND NOT TARGET CAF::openssl)
    add_library(CAF::openssl UNKNOWN IMPORTED)
    set_target_properties(CAF::openssl PROPERTIES
      IMPORTED_LOCATION "${CAF_OPENSSL_LIBRARY}"
      INTERFACE_LINK_LIBRARIES CAF::io)
  endif()
endif()
