# The Debian package tunebus_<version>-<revision>_amd64.deb (issue 46), made by CPack's DEB
# generator: `bash scripts/package` builds it and runs lintian on it, and scripts/install-test
# installs it into a fresh Debian 12 root. Included at the end of the root CMakeLists.txt, after
# every install rule, so its install(CODE) runs last. What the package holds:
#
#   /usr/bin/tunectl, /usr/bin/tunebus-<service>   the binaries; each services/<service>/
#                                                  CMakeLists.txt installs its target under the
#                                                  name tunebus-<service>, which the units in
#                                                  deploy/systemd run; stripped below
#   /usr/lib/python3/dist-packages/tunebus         clients/python/tunebus (with the Optuna searcher,
#                                                  `python3 -m tunebus.searcher`), for Debian's
#                                                  /usr/bin/python3; its
#                                                  driver finds /usr/bin/tunectl on PATH
#   /usr/share/man/man1/*.1.gz                     made by help2man from each binary's --help
#                                                  (cmake/manpage.cmake), when help2man is there
#   /usr/share/bash-completion/completions/tunectl scripts/completion/tunectl.bash
#   /usr/share/doc/tunebus                         README.md, docs/, proto/PROTOCOL.md (the
#                                                  source tree's layout, so the README's links
#                                                  work), copyright, changelog.Debian.gz
#   deploy/systemd/install.cmake's files           the units, sysusers.d/tunebus.conf, /etc/tunebus
#
# The maintainer scripts (cmake/debian/*.in) get the units, sysusers and tmpfiles files and the
# conffiles (every file under /etc) from the staged files at package time
# (cmake/debian/maintainer_scripts.cmake, a CPack pre-build script), so they follow whatever
# deploy/systemd installs.
#
# Depends: the shared libraries' packages (dpkg-shlibdeps) and what the Python driver imports at
# run time (clients/python/tunebus/_deps.py: zmq, msgpack, cloudpickle) plus adduser (the
# postinst's fallback without systemd-sysusers). Recommends: tabulate (CLIReporter's table).
# Suggests: scikit-learn (examples/digits), pandas (ResultGrid.get_dataframe), Optuna
# (OptunaSearch, tunebus.searcher), the deep-learning examples' frameworks, bash-completion.
# Not recommended, so that `apt install ./tunebus_*.deb` installs no -dev package: on Debian 12,
# python3-sklearn's python3-scipy Depends on python3-pythran, which Depends on g++, libboost-dev,
# python3-all-dev and more; python3-pandas Recommends python3-numba (through pandas-lib), whose
# llvm-14 Recommends llvm-14-dev (scripts/install-test checks what the package pulls in).

set(TUNEBUS_DEBIAN_DIR ${CMAKE_CURRENT_LIST_DIR}/debian)
set(TUNEBUS_PACKAGE_STAGING ${CMAKE_BINARY_DIR}/package)  # generated files and control scripts
set(TUNEBUS_MAINTAINER
  "Seed 46548820 maintainers <maintainers@users.noreply.a-seed-46548820.example>")
set(TUNEBUS_DEBIAN_REVISION 1)

# ---- Binaries: stripped as Debian's dh_strip strips executables ---------------------------------
# CPACK_STRIP_FILES makes CPack's install run with CMAKE_INSTALL_DO_STRIP, which install(TARGETS)
# honours and install(PROGRAMS ... RENAME) (the renamed services) does not; so every binary is
# stripped here, after the install rules that put them there. `cmake --install --strip` too.
set(TUNEBUS_INSTALLED_PROGRAMS tunectl tunebus-checkpoint-store tunebus-resource-manager
  tunebus-scheduler tunebus-trial-worker)
install(CODE "
  if(CMAKE_INSTALL_DO_STRIP)
    foreach(_tunebus_program ${TUNEBUS_INSTALLED_PROGRAMS})
      set(_tunebus_file \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/bin/\${_tunebus_program}\")
      if(EXISTS \"\${_tunebus_file}\")
        execute_process(COMMAND \"${CMAKE_STRIP}\" --remove-section=.comment --remove-section=.note
          \"\${_tunebus_file}\" RESULT_VARIABLE _tunebus_rc)
        if(NOT _tunebus_rc EQUAL 0)
          message(FATAL_ERROR \"strip \${_tunebus_file} failed (\${_tunebus_rc})\")
        endif()
      endif()
    endforeach()
  endif()
")

# ---- Python: the package for Debian's python3 ---------------------------------------------------
install(DIRECTORY ${CMAKE_SOURCE_DIR}/clients/python/tunebus DESTINATION lib/python3/dist-packages
  PATTERN __pycache__ EXCLUDE PATTERN "*.pyc" EXCLUDE)
# The version of the build the package comes from (cmake/Version.cmake), when that file is there.
if(COMMAND tunebus_install_python_version)
  tunebus_install_python_version(DESTINATION lib/python3/dist-packages/tunebus)
endif()

# ---- Shell completion ---------------------------------------------------------------------------
install(FILES ${CMAKE_SOURCE_DIR}/scripts/completion/tunectl.bash
  DESTINATION share/bash-completion/completions RENAME tunectl)

# ---- Man pages from --help ----------------------------------------------------------------------
# One per installed binary, named as installed, gzipped (-9n), when help2man is installed
# (scripts/install-deps package): the target tunebus_manpages, which scripts/package builds by
# name before CPack (which builds nothing with Ninja: it installs what the build folder has). Not
# part of ALL: other builds (sanitizers, fuzzing) never run help2man; an install without it has
# no man pages.
find_program(TUNEBUS_HELP2MAN help2man)
if(TUNEBUS_HELP2MAN)
  set(_tunebus_pages)
  foreach(_pair tunectl:tunectl tunebus-checkpoint-store:checkpoint-store
      tunebus-resource-manager:resource-manager tunebus-scheduler:scheduler
      tunebus-trial-worker:trial-worker)
    string(REPLACE ":" ";" _pair "${_pair}")
    list(GET _pair 0 _name)
    list(GET _pair 1 _target)
    set(_page ${TUNEBUS_PACKAGE_STAGING}/man/${_name}.1.gz)
    add_custom_command(OUTPUT ${_page}
      COMMAND ${CMAKE_COMMAND} -DHELP2MAN=${TUNEBUS_HELP2MAN} -DPROGRAM=$<TARGET_FILE:${_target}>
        -DNAME=${_name} -DVERSION=${PROJECT_VERSION} -DOUTPUT=${_page}
        -P ${CMAKE_CURRENT_LIST_DIR}/manpage.cmake
      DEPENDS ${_target} ${CMAKE_CURRENT_LIST_DIR}/manpage.cmake
      COMMENT "Man page ${_name}.1 (help2man)")
    list(APPEND _tunebus_pages ${_page})
  endforeach()
  add_custom_target(tunebus_manpages DEPENDS ${_tunebus_pages})
  install(FILES ${_tunebus_pages} DESTINATION share/man/man1 OPTIONAL)
else()
  message(STATUS "Man pages: none (no help2man; scripts/install-deps package installs it)")
endif()

# ---- Documentation ------------------------------------------------------------------------------
set(_tunebus_doc share/doc/tunebus)
install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${_tunebus_doc})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs DESTINATION ${_tunebus_doc}
  FILES_MATCHING PATTERN "*.md" PATTERN "*.png" PATTERN "*.svg")
install(FILES ${CMAKE_SOURCE_DIR}/proto/PROTOCOL.md DESTINATION ${_tunebus_doc}/proto)
install(FILES ${TUNEBUS_DEBIAN_DIR}/copyright DESTINATION ${_tunebus_doc})

# Tags lintian reports that are so by design, each with its reason.
install(FILES ${TUNEBUS_DEBIAN_DIR}/lintian-overrides DESTINATION share/lintian/overrides
  RENAME tunebus)

# changelog.Debian.gz: one entry for this version, dated by the commit the build is of (else now),
# so that rebuilding one commit gives the same file.
set(_tunebus_epoch "$ENV{SOURCE_DATE_EPOCH}")
if(NOT _tunebus_epoch)
  find_package(Git QUIET)
  if(GIT_FOUND)
    execute_process(COMMAND ${GIT_EXECUTABLE} log -1 --format=%ct
      WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} OUTPUT_VARIABLE _tunebus_epoch
      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  endif()
endif()
if(_tunebus_epoch MATCHES "^[0-9]+$")
  set(_tunebus_saved_epoch "$ENV{SOURCE_DATE_EPOCH}")
  set(ENV{SOURCE_DATE_EPOCH} "${_tunebus_epoch}")  # string(TIMESTAMP) reads it
  string(TIMESTAMP TUNEBUS_CHANGELOG_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
  set(ENV{SOURCE_DATE_EPOCH} "${_tunebus_saved_epoch}")
else()
  string(TIMESTAMP TUNEBUS_CHANGELOG_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
endif()
set(TUNEBUS_PACKAGE_VERSION "${PROJECT_VERSION}-${TUNEBUS_DEBIAN_REVISION}")
if(NOT DEFINED TUNEBUS_VERSION_COMMIT)
  set(TUNEBUS_VERSION_COMMIT "unknown")  # cmake/Version.cmake sets it
endif()
configure_file(${TUNEBUS_DEBIAN_DIR}/changelog.Debian.in ${TUNEBUS_PACKAGE_STAGING}/changelog.Debian
  @ONLY)
execute_process(COMMAND gzip -9nf ${TUNEBUS_PACKAGE_STAGING}/changelog.Debian
  RESULT_VARIABLE _tunebus_rc)
if(NOT _tunebus_rc EQUAL 0)
  message(FATAL_ERROR "gzip ${TUNEBUS_PACKAGE_STAGING}/changelog.Debian failed")
endif()
install(FILES ${TUNEBUS_PACKAGE_STAGING}/changelog.Debian.gz DESTINATION ${_tunebus_doc})

# ---- CPack --------------------------------------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tunebus)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "tunebus")
set(CPACK_PACKAGE_CONTACT "${TUNEBUS_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
# 0755 folders whatever the umask (lintian: non-standard-dir-perm).
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
  GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "hyperparameter tuning: Ray Tune's trial runner as services on a ZeroMQ bus")
set(CPACK_PACKAGE_DESCRIPTION [[
tunebus runs hyperparameter-tuning experiments: it turns a search space into
trials, places them on workers that have the resources they ask for, runs
each trial's trainable, feeds every reported result to a trial scheduler
(FIFO, ASHA, HyperBand, median stopping, PBT) that decides to continue, pause
or stop it, and keeps every state change in a journal, so a restarted
service resumes its experiments.

This package holds the four services (tunebus-scheduler,
tunebus-resource-manager, tunebus-checkpoint-store, tunebus-trial-worker)
with their systemd units, the command line tunectl (`tunectl run` runs all
four in one process), and the Python package tunebus: the trainable helper
and a driver with Ray Tune 2.x's API (Tuner.fit, tune.run).]])
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # tunebus_<version>-<revision>_amd64.deb
set(CPACK_DEBIAN_PACKAGE_RELEASE ${TUNEBUS_DEBIAN_REVISION})
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${TUNEBUS_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS
  "python3, python3-zmq, python3-msgpack, python3-cloudpickle, adduser")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-tabulate")
string(JOIN ", " CPACK_DEBIAN_PACKAGE_SUGGESTS python3-sklearn python3-pandas python3-optuna
  python3-torch python3-xgboost bash-completion)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)  # 0755 scripts, 0644 conffiles
set(_tunebus_control ${TUNEBUS_PACKAGE_STAGING}/control)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${_tunebus_control}/conffiles ${_tunebus_control}/postinst
  ${_tunebus_control}/prerm ${_tunebus_control}/postrm)
# Fills the files above in from the staged tree (CPack reads the CPACK_TUNEBUS_* variables).
set(CPACK_TUNEBUS_DEBIAN_DIR ${TUNEBUS_DEBIAN_DIR})
set(CPACK_TUNEBUS_CONTROL_DIR ${_tunebus_control})
set(CPACK_PRE_BUILD_SCRIPTS ${TUNEBUS_DEBIAN_DIR}/maintainer_scripts.cmake)
include(CPack)
