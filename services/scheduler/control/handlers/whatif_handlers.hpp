// WhatIfHandlers: the control socket's `whatif` (proto/control.hpp WhatIf): what another trial
// scheduler, or a grid of its parameters, would have done with a finished experiment's recorded
// results (libs/tune/whatif.hpp, libs/tune/whatif_sweep.hpp).
//
// A request goes through three steps:
//   1. on the loop: the request is checked (the scheduler and sweep parse, the scheduler builds
//      with the experiment's metric and mode, pbt is refused), the experiment is found
//      (ExperimentRegistry::FindExperiment, a finished one only) and its journal's stored
//      records are read from the checkpoint-store, 10,000 a request (JournalReader::ReadStored:
//      asynchronous; the loop only moves the bytes);
//   2. on a thread of its own, at nice kReplayNice: the records are decoded and folded
//      (WhatIfJournal) and replayed (ReplayExperiment, or SweepExperiment for a sweep);
//   3. on the loop again: a periodic check (every kPollInterval while a replay runs) joins the
//      thread and answers the request (ReplyRead).
// So a replay of 100,000 results costs the loop the store's pages only, and other experiments'
// results and decisions go on meanwhile. At most proto::kMaxWhatIfReplays run at once; another
// request is refused (resource_exhausted) until one ends.
//
// Owns the replays under way (their threads). The destructor asks each to stop (a sweep stops
// between settings) and joins it. Uses the ControlContext (which outlives it). Threads: the
// loop's, except the replay threads, which share nothing with the loop but their Replay, read
// by the loop only once its `done` is set.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "libs/bus/event_loop.hpp"
#include "libs/bus/socket.hpp"
#include "libs/core/status.hpp"
#include "proto/codec.hpp"
#include "services/scheduler/control/control_context.hpp"

namespace tunebus {

class WhatIfHandlers {
 public:
  explicit WhatIfHandlers(ControlContext& control);
  ~WhatIfHandlers();
  WhatIfHandlers(const WhatIfHandlers&) = delete;
  WhatIfHandlers& operator=(const WhatIfHandlers&) = delete;

  Status HandleWhatIf(bus::Incoming& in, const proto::Decoded& d);

  /// How often the loop looks for ended replays while one runs.
  static constexpr bus::Duration kPollInterval{5};
  /// The replay threads' nice value: the loop's decisions take the CPU first.
  static constexpr int kReplayNice = 5;

 private:
  struct Replay;
  /// Step 2 for `replay`, on its own thread.
  static void Run(Replay& replay);
  /// Step 3: answers the replays that ended; stops polling once none runs.
  void Poll();

  ControlContext& control_;
  std::vector<std::unique_ptr<Replay>> replays_;  // under way (reading or replaying)
  std::optional<bus::EventLoop::TimerId> poll_;
};

}  // namespace tunebus
