// The version of this build. There is one: `project(tunebus VERSION x.y.z)` in the root
// CMakeLists.txt; cmake/Version.cmake generates the definitions into the build folder
// (generated/version.cpp, library tunebus_version), so a new commit recompiles that one file.
// Every binary's --version prints "<program> " + VersionText(); the scheduler's get_experiment
// answer and its dashboard carry it too.
#pragma once

namespace tunebus {

/// The project's version, "0.1.0".
const char* Version();
/// The short git commit of the source tree when CMake last ran: "abc1234", "abc1234-dirty"
/// (a tracked file differed from it then), the TUNEBUS_COMMIT cache variable when set, or
/// "unknown" (no git). cmake/Version.cmake says when it is refreshed.
const char* Commit();
/// "0.1.0 (commit abc1234)".
const char* VersionText();

}  // namespace tunebus
