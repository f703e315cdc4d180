# Makes the man page of one tunebus binary with help2man, named as the package installs it
# (cmake/Packaging.cmake runs it at build time):
#   cmake -DHELP2MAN=/usr/bin/help2man -DPROGRAM=build/bin/scheduler -DNAME=tunebus-scheduler
#         -DVERSION=0.1.0 -DOUTPUT=build/package/man/tunebus-scheduler.1.gz -P cmake/manpage.cmake
# help2man runs NAME --help through a folder of symbolic links on PATH, so the page (and the
# usage line, which shows argv[0]) says the installed name, not the build's. The version is the
# first line of `PROGRAM --version` after its name ("0.1.0 (commit abc1234)"), or VERSION when the
# binary has no --version. tunectl's page also gets a SUBCOMMANDS section: every subcommand's
# --help. Dated by SOURCE_DATE_EPOCH when set (help2man reads it). gzip -9n: no name, no time.

foreach(_var HELP2MAN PROGRAM NAME VERSION OUTPUT)
  if(NOT ${_var})
    message(FATAL_ERROR "manpage.cmake: -D${_var}=... is required")
  endif()
endforeach()

get_filename_component(_out_dir "${OUTPUT}" DIRECTORY)
set(_links "${_out_dir}/.bin-${NAME}")
file(REMOVE_RECURSE "${_links}")
file(MAKE_DIRECTORY "${_links}")
file(CREATE_LINK "${PROGRAM}" "${_links}/${NAME}" SYMBOLIC)
set(ENV{PATH} "${_links}:$ENV{PATH}")

# The version: the binary's own --version when it has one.
execute_process(COMMAND "${NAME}" --version RESULT_VARIABLE _rc OUTPUT_VARIABLE _version_out
  ERROR_QUIET)
set(_version "${VERSION}")
if(_rc EQUAL 0 AND _version_out MATCHES "^[^ \n]+ ([^\n]+)")
  set(_version "${CMAKE_MATCH_1}")
endif()

# The description, for the NAME section: the first line of --help after its "name: "
# ("tunebus scheduler: runs experiments and their trials" gives "runs experiments and ...").
execute_process(COMMAND "${NAME}" --help RESULT_VARIABLE _rc OUTPUT_VARIABLE _help ERROR_QUIET)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${NAME} --help (${PROGRAM}) failed: ${_rc}")
endif()
string(REGEX MATCH "^[^\n]*" _description "${_help}")
string(REGEX REPLACE "^[^:]*: " "" _description "${_description}")

set(_include_args)
if(NAME STREQUAL "tunectl")
  # Each subcommand's --help, as printed, in a SUBCOMMANDS section (roff: backslashes doubled,
  # a leading . or ' escaped, no filling).
  string(REGEX MATCH "\nSubcommands:\n.*" _list "${_help}")
  string(REGEX MATCHALL "\n  [a-z][a-z0-9-]*" _subcommands "${_list}")
  set(_roff "[SUBCOMMANDS]\nEach subcommand's \\fB\\-\\-help\\fR:\n")
  foreach(_sub ${_subcommands})
    string(STRIP "${_sub}" _sub)
    execute_process(COMMAND "${NAME}" "${_sub}" --help OUTPUT_VARIABLE _sub_help ERROR_QUIET
      RESULT_VARIABLE _rc)
    if(NOT _rc EQUAL 0)
      message(FATAL_ERROR "${NAME} ${_sub} --help failed: ${_rc}")
    endif()
    string(REPLACE "\\" "\\e" _sub_help "${_sub_help}")
    string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" _sub_help "${_sub_help}")
    string(REGEX REPLACE "\n+$" "" _sub_help "${_sub_help}")
    string(APPEND _roff ".SS \"${NAME} ${_sub}\"\n.nf\n${_sub_help}\n.fi\n")
  endforeach()
  file(WRITE "${_out_dir}/${NAME}.h2m" "${_roff}")
  set(_include_args --include "${_out_dir}/${NAME}.h2m")
endif()

execute_process(
  COMMAND "${HELP2MAN}" --no-info --no-discard-stderr --section 1 --name "${_description}"
    --version-string "${NAME} ${_version}" ${_include_args} --output "${_out_dir}/${NAME}.1"
    "${NAME}"
  RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "help2man ${NAME} failed: ${_rc}")
endif()
execute_process(COMMAND gzip -9nf "${_out_dir}/${NAME}.1" RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "gzip ${_out_dir}/${NAME}.1 failed: ${_rc}")
endif()
file(REMOVE_RECURSE "${_links}")
