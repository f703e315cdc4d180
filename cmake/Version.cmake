# The one version of tunebus: `project(tunebus VERSION x.y.z)` in the root CMakeLists.txt
# (PROJECT_VERSION). Everything else is generated from it, at configure time, into the build
# folder:
#
#   generated/version.cpp                  libs/core/version.hpp's Version() ("0.1.0") and
#                                          Commit() ("abc1234", "abc1234-dirty" or "unknown"),
#                                          the library tunebus_version: a new commit recompiles
#                                          this one file and relinks the binaries
#   generated/python/_version_installed.py `version = "0.1.0"` for an installed copy of
#                                          clients/python/tunebus (its _version.py reads the
#                                          root CMakeLists.txt in the source tree instead);
#                                          tunebus_install_python_version() installs it
#
# The commit is TUNEBUS_COMMIT when set (a build from a tarball or a Docker context without
# .git: -DTUNEBUS_COMMIT=$(git rev-parse --short HEAD)), else `git rev-parse --short HEAD` of the
# source tree, with "-dirty" when a tracked file differs from HEAD at that moment, else
# "unknown" (no git, or the source tree is not the top of a git work tree).
#
# When it comes from git, the files HEAD and the current branch's ref (and packed-refs) are
# CMAKE_CONFIGURE_DEPENDS: a commit, a checkout or a pull re-runs CMake at the next build by
# itself (a few seconds), which rewrites generated/version.cpp only when the commit changed.
# "-dirty" is decided at that configure: editing a file afterwards does not re-run CMake, so a
# build of an edited tree says "-dirty" only from the next commit or configure on.

set(TUNEBUS_COMMIT "" CACHE STRING
  "The commit --version names; empty: git rev-parse --short HEAD (+ -dirty) at configure time")

set(TUNEBUS_VERSION "${PROJECT_VERSION}")
set(TUNEBUS_VERSION_COMMIT "unknown")
if(TUNEBUS_COMMIT)
  # It goes into a C++ string, a Python file and the dashboard's HTML unescaped.
  if(NOT TUNEBUS_COMMIT MATCHES "^[A-Za-z0-9._+-]+$")
    message(FATAL_ERROR "TUNEBUS_COMMIT '${TUNEBUS_COMMIT}': only letters, digits and ._+- "
      "(e.g. -DTUNEBUS_COMMIT=$(git rev-parse --short HEAD))")
  endif()
  set(TUNEBUS_VERSION_COMMIT "${TUNEBUS_COMMIT}")
else()
  find_package(Git QUIET)
  if(GIT_FOUND)
    execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --show-toplevel --short HEAD
      WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} RESULT_VARIABLE _tunebus_git_rc
      OUTPUT_VARIABLE _tunebus_git_out ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
    string(REPLACE "\n" ";" _tunebus_git_out "${_tunebus_git_out}")
    list(LENGTH _tunebus_git_out _tunebus_git_lines)
    if(_tunebus_git_rc EQUAL 0 AND _tunebus_git_lines EQUAL 2)
      list(GET _tunebus_git_out 0 _tunebus_git_top)
      list(GET _tunebus_git_out 1 _tunebus_git_commit)
      file(REAL_PATH "${_tunebus_git_top}" _tunebus_git_top)
      file(REAL_PATH "${CMAKE_SOURCE_DIR}" _tunebus_source_real)
    endif()
    # Only the repository whose top is this source tree (not one this tree is vendored into).
    if(_tunebus_git_commit AND _tunebus_git_top STREQUAL _tunebus_source_real)
      set(TUNEBUS_VERSION_COMMIT "${_tunebus_git_commit}")
      # Compares file contents, writes nothing (no index refresh: other git commands in this
      # tree are not locked out).
      execute_process(COMMAND ${GIT_EXECUTABLE} --no-optional-locks diff --quiet HEAD --
        WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} RESULT_VARIABLE _tunebus_git_dirty
        OUTPUT_QUIET ERROR_QUIET)
      if(_tunebus_git_dirty EQUAL 1)
        string(APPEND TUNEBUS_VERSION_COMMIT "-dirty")
      endif()
      # Re-run CMake when HEAD moves: HEAD itself (a checkout), the branch it names (a commit)
      # and packed-refs (a branch packed by git gc). Only files that exist: a missing one would
      # make Ninja re-run CMake at every build.
      execute_process(COMMAND ${GIT_EXECUTABLE} symbolic-ref -q HEAD
        WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} OUTPUT_VARIABLE _tunebus_git_ref
        ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
      set(_tunebus_git_paths HEAD packed-refs ${_tunebus_git_ref})
      foreach(_tunebus_git_path ${_tunebus_git_paths})
        execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --git-path ${_tunebus_git_path}
          WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} OUTPUT_VARIABLE _tunebus_git_file
          ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
        if(_tunebus_git_file)
          get_filename_component(_tunebus_git_file "${_tunebus_git_file}" ABSOLUTE
            BASE_DIR ${CMAKE_SOURCE_DIR})
          if(EXISTS "${_tunebus_git_file}")
            set_property(DIRECTORY ${CMAKE_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
              "${_tunebus_git_file}")
          endif()
        endif()
      endforeach()
    endif()
  endif()
endif()
message(STATUS "tunebus ${TUNEBUS_VERSION} (commit ${TUNEBUS_VERSION_COMMIT})")

configure_file(${CMAKE_CURRENT_LIST_DIR}/version.cpp.in ${CMAKE_BINARY_DIR}/generated/version.cpp
  @ONLY)
add_library(tunebus_version STATIC ${CMAKE_BINARY_DIR}/generated/version.cpp)
target_include_directories(tunebus_version PUBLIC ${CMAKE_SOURCE_DIR})

# The version of an installed Python package (clients/python/tunebus/_version.py reads it when
# the package is not in the source tree).
set(TUNEBUS_PYTHON_VERSION_FILE ${CMAKE_BINARY_DIR}/generated/python/_version_installed.py)
configure_file(${CMAKE_CURRENT_LIST_DIR}/_version_installed.py.in ${TUNEBUS_PYTHON_VERSION_FILE}
  @ONLY)

# Installs generated/python/_version_installed.py into DESTINATION, the folder where the package
# clients/python/tunebus is installed (e.g. lib/python3/dist-packages/tunebus), with COMPONENT
# when given:
#   tunebus_install_python_version(DESTINATION lib/python3/dist-packages/tunebus)
function(tunebus_install_python_version)
  cmake_parse_arguments(ARG "" "DESTINATION;COMPONENT" "" ${ARGN})
  if(NOT ARG_DESTINATION)
    message(FATAL_ERROR "tunebus_install_python_version: DESTINATION is required")
  endif()
  if(ARG_COMPONENT)
    install(FILES ${TUNEBUS_PYTHON_VERSION_FILE} DESTINATION ${ARG_DESTINATION}
      COMPONENT ${ARG_COMPONENT})
  else()
    install(FILES ${TUNEBUS_PYTHON_VERSION_FILE} DESTINATION ${ARG_DESTINATION})
  endif()
endfunction()
