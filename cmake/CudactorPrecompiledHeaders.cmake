# Precompiled headers (docs/development.md): CAF's headers, which every source that speaks to
# an actor includes, take 3 to 5 s of parsing in each such file. They are parsed once per build
# folder into one header precompiled for libraries (position-independent code), one for
# programs (the compiler's default, position-independent executables) and one for the test
# programs (CUDACTOR_TEST_CXX_FLAGS on top), and every target that uses CAF reuses one of them
# (REUSE_FROM): three precompilations instead of one per target, which would cost more than it
# saves for the tests' one-file programs.
#
# A reused header must have been built with the same code-generation options as its user (GCC
# checks: -fPIC against -fPIE, -O, -g, -fsanitize=); -Winvalid-pch, which CMake adds, and
# -Werror make any mismatch a build error rather than a silent full parse. Macros do not
# matter as long as the precompiled headers do not look at them, which CAF's do not.
#
# Not in it, on purpose:
#  - Boost.Test: each test defines BOOST_TEST_MODULE before <boost/test/unit_test.hpp>, and that
#    header's configuration turns it into the test's main() once; precompiled without it, no
#    test would have a main.
#  - gpu/ and metrics/ (and the tests of gpu/ alone): gpu/ knows nothing of CAF, and a header
#    included into every file would hide a file that uses CAF without including it.
#  - the documentation's snippets and the install test's consumer: they compile as a user's
#    code would, with the public headers alone.
#
# CUDACTOR_PCH=OFF compiles every file with its own includes only, which is also the check
# that each file includes what it uses.
option(CUDACTOR_PCH "Precompile CAF's headers once per build folder" ON)

set(_cudactor_pch_headers "$<$<COMPILE_LANGUAGE:CXX>:<caf/all.hpp$<ANGLE-R>>"
                          "$<$<COMPILE_LANGUAGE:CXX>:<caf/io/all.hpp$<ANGLE-R>>")

# cudactor_add_pch_donor(<kind> [<library>...]): cudactor_pch_<kind>, which compiles an empty
# file so that it owns a precompiled header, built with the options of what it links.
function(cudactor_add_pch_donor kind)
  if(NOT CUDACTOR_PCH)
    return()
  endif()
  set(source "${PROJECT_BINARY_DIR}/generated/precompiled_headers.cpp")
  if(NOT EXISTS "${source}")
    file(WRITE "${source}" "// The precompiled headers' owner (cmake/CudactorPrecompiledHeaders.cmake).\n")
  endif()
  add_library(cudactor_pch_${kind} OBJECT "${source}")
  target_link_libraries(cudactor_pch_${kind} PRIVATE CAF::core CAF::io cudactor_build_flags ${ARGN})
  target_precompile_headers(cudactor_pch_${kind} PRIVATE ${_cudactor_pch_headers})
endfunction()

cudactor_add_pch_donor(library)
cudactor_add_pch_donor(program)
if(TARGET cudactor_pch_library)
  set_target_properties(cudactor_pch_library PROPERTIES POSITION_INDEPENDENT_CODE ON)
endif()
# The test programs' donor: tests/CMakeLists.txt, with cudactor_test_common's options.

# cudactor_precompile_headers([TEST] <target>...): each target reuses the precompiled CAF
# headers of its kind: libraries (which cudactor builds position-independent) those for
# libraries, programs those for programs, and test programs (TEST: they link
# cudactor_test_common) those for tests.
function(cudactor_precompile_headers)
  if(NOT CUDACTOR_PCH)
    return()
  endif()
  set(test_programs FALSE)
  if(ARGV0 STREQUAL "TEST")
    set(test_programs TRUE)
    list(POP_FRONT ARGN)
  endif()
  foreach(target IN LISTS ARGN)
    get_target_property(type ${target} TYPE)
    if(test_programs)
      set(donor cudactor_pch_test)
    elseif(type STREQUAL "EXECUTABLE")
      set(donor cudactor_pch_program)
    else()
      get_target_property(pic ${target} POSITION_INDEPENDENT_CODE)
      if(NOT pic)
        message(FATAL_ERROR "cudactor_precompile_headers(${target}): a library must be built "
                            "position-independent (POSITION_INDEPENDENT_CODE ON)")
      endif()
      set(donor cudactor_pch_library)
    endif()
    target_precompile_headers(${target} REUSE_FROM ${donor})
  endforeach()
endfunction()
