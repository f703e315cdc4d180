// The system `tar` as a child process fed or drained through a pipe: how checkpoint folders
// and working_dirs become the byte streams the checkpoint-store keeps, and back
// (CheckpointTransfer on a worker, `tunectl checkpoint export`, PackWorkingDir). Callers ignore
// SIGPIPE, so a tar that dies fails a write with EPIPE instead of killing them.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "libs/core/status.hpp"

namespace tunebus {

/// Starts `tar args...` with one end of a pipe as its stdout (`child_writes`) or stdin; returns
/// the pid and our end of the pipe (close-on-exec). Errors: IoError.
Result<std::pair<pid_t, int>> SpawnTar(const std::vector<std::string>& args, bool child_writes);
/// Waits for tar `pid` to exit. Errors: IoError naming its exit code or signal.
Status ReapTar(pid_t pid);
/// Writes all `size` bytes to `fd` (blocking; retried on EINTR). Errors: IoError.
Status WriteAll(int fd, const char* data, size_t size);

}  // namespace tunebus
