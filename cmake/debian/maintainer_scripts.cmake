# CPack pre-build script (CPACK_PRE_BUILD_SCRIPTS, cmake/Packaging.cmake): once CPack has
# installed the package's files into its staging folder, writes the control files the DEB
# generator then takes (CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA) into CPACK_TUNEBUS_CONTROL_DIR:
#   conffiles                 every file under /etc (Debian policy 10.7.2: all of them)
#   postinst, prerm, postrm   cmake/debian/*.in with the lists of the staged files:
#     @TUNEBUS_UNITS@           systemd units in /usr/lib/systemd/system or /lib/systemd/system,
#                               templates (name@.service) left out
#     @TUNEBUS_UNIT_INSTANCES@  a glob of each template's instances (name@*.service)
#     @TUNEBUS_SYSUSERS@        files in /usr/lib/sysusers.d
#     @TUNEBUS_TMPFILES@        files in /usr/lib/tmpfiles.d
# So the scripts follow what deploy/systemd/install.cmake installs, with nothing to keep in step.

if(NOT CPACK_TUNEBUS_DEBIAN_DIR OR NOT CPACK_TUNEBUS_CONTROL_DIR)
  message(FATAL_ERROR "maintainer_scripts.cmake: run by CPack with cmake/Packaging.cmake's "
    "CPACK_TUNEBUS_DEBIAN_DIR and CPACK_TUNEBUS_CONTROL_DIR")
endif()
set(_root "${CPACK_TEMPORARY_DIRECTORY}")
if(NOT IS_DIRECTORY "${_root}/usr")
  message(FATAL_ERROR "maintainer_scripts.cmake: no staged /usr in '${_root}'")
endif()

# Names of the files matching GLOB under each of FOLDERS (relative to the staging root).
function(_tunebus_names out glob)
  set(_names)
  foreach(_folder ${ARGN})
    file(GLOB _files LIST_DIRECTORIES false "${_root}/${_folder}/${glob}")
    foreach(_file ${_files})
      get_filename_component(_name "${_file}" NAME)
      list(APPEND _names "${_name}")
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES _names)
  list(SORT _names)
  set(${out} "${_names}" PARENT_SCOPE)
endfunction()

set(_units)
set(_instances)
_tunebus_names(_unit_files "*" usr/lib/systemd/system lib/systemd/system)
foreach(_unit ${_unit_files})
  if(_unit MATCHES "^(.+)@(\\.[a-z]+)$")
    list(APPEND _instances "${CMAKE_MATCH_1}@*${CMAKE_MATCH_2}")
  elseif(_unit MATCHES "\\.(service|socket|target|timer|path|mount)$")
    list(APPEND _units "${_unit}")
  endif()
endforeach()
_tunebus_names(_sysusers "*.conf" usr/lib/sysusers.d)
_tunebus_names(_tmpfiles "*.conf" usr/lib/tmpfiles.d)
list(JOIN _units " " TUNEBUS_UNITS)
list(JOIN _instances " " TUNEBUS_UNIT_INSTANCES)
list(JOIN _sysusers " " TUNEBUS_SYSUSERS)
list(JOIN _tmpfiles " " TUNEBUS_TMPFILES)

file(MAKE_DIRECTORY "${CPACK_TUNEBUS_CONTROL_DIR}")
foreach(_script postinst prerm postrm)
  configure_file("${CPACK_TUNEBUS_DEBIAN_DIR}/${_script}.in"
    "${CPACK_TUNEBUS_CONTROL_DIR}/${_script}" @ONLY
    FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ
    WORLD_EXECUTE)
endforeach()

set(_conffiles "")
set(_etc)
if(IS_DIRECTORY "${_root}/etc")
  file(GLOB_RECURSE _etc LIST_DIRECTORIES false RELATIVE "${_root}" "${_root}/etc/*")
  list(SORT _etc)
  foreach(_file ${_etc})
    string(APPEND _conffiles "/${_file}\n")
  endforeach()
endif()
file(WRITE "${CPACK_TUNEBUS_CONTROL_DIR}/conffiles" "${_conffiles}")

list(LENGTH _etc _conffile_count)
message(STATUS "tunebus maintainer scripts: units [${TUNEBUS_UNITS}], instances "
  "[${TUNEBUS_UNIT_INSTANCES}], sysusers [${TUNEBUS_SYSUSERS}], tmpfiles [${TUNEBUS_TMPFILES}], "
  "${_conffile_count} conffiles")
