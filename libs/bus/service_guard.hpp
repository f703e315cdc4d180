// What every service needs from a bad environment: a folder it must write is
// checked up front and its failure is a Status naming the folder and the reason, and an exception
// that escapes a service's main (a library error no handler caught) is a logged message and exit
// code 1, never std::terminate's abort (exit 134).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "libs/core/status.hpp"

namespace tunebus::bus {

/// Creates `dir` (and its parents) if missing; a folder that existed is checked writable by this
/// process (access(2) W_OK | X_OK, no file is created: a trial start pays one stat, not an inode).
/// `what` names the folder in the message ("results folder", "trial dir"). Errors: IoError "cannot
/// create <what> <dir>: <reason>" or "cannot write in <what> <dir>: <reason>" (e.g. "Permission
/// denied" for a folder owned by another user, "Read-only file system"). Never throws.
Status MakeWritableDir(const std::string& dir, std::string_view what);

/// Runs `body` (a service's main after flag parsing) and returns its exit code. An exception that
/// escapes it is logged as "<service> failed: <what>" and gives exit code 1.
int GuardMain(std::string_view service, const std::function<int()>& body);

}  // namespace tunebus::bus
