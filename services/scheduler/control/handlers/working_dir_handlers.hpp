// WorkingDirHandlers: the control requests that upload a shipped working_dir (proto/control.hpp
// WorkingDirStat, WorkingDirPut). The scheduler relays them to the checkpoint-store, where the
// archive is stored as proto::WorkingDirBlobId(digest) and its digest checked before it is
// committed: the only endpoint tunectl knows is the scheduler's control socket.
//
// Owns nothing; uses the ControlContext (which outlives it). Threads: the scheduler's loop.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "libs/bus/request_client.hpp"
#include "libs/bus/socket.hpp"
#include "libs/core/status.hpp"
#include "proto/codec.hpp"
#include "services/scheduler/control/control_context.hpp"

namespace tunebus {

/// Asks the store (over `store`, the loop's client) for the working_dir archive `digest`: `done`
/// gets its size in bytes, nullopt when the store does not hold it, or the store's error
/// (prefixed "checkpoint-store: "). `done` runs on the loop thread, after the store answered.
void StatWorkingDir(bus::RequestClient& store, const std::string& digest,
                    std::function<void(Result<std::optional<int64_t>>)> done);

class WorkingDirHandlers {
 public:
  explicit WorkingDirHandlers(ControlContext& control) : control_(control) {}
  WorkingDirHandlers(const WorkingDirHandlers&) = delete;
  WorkingDirHandlers& operator=(const WorkingDirHandlers&) = delete;

  Status HandleWorkingDirStat(bus::Incoming& in, const proto::Decoded& d);
  Status HandleWorkingDirPut(bus::Incoming& in, const proto::Decoded& d);

 private:
  ControlContext& control_;
};

}  // namespace tunebus
