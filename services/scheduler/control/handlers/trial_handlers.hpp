// TrialHandlers: the control requests about trials (proto/control.hpp): list and show them,
// stop, pause, resume, add and resize them, and export a trial's stored checkpoint.
//
// Requests that change a trial act on the experiment they or their trial name, if its journal
// takes writes (ControlContext::Target), and are answered once their records are durable
// (ReplyJson); reads may name any experiment, a finished one too, and are answered at once
// (AnswerRead). fetch_checkpoint is answered by the checkpoint-store's chunk (a
// CheckpointChunk), after the store answered.
//
// Owns nothing; uses the ControlContext (which outlives it). Threads: the scheduler's loop.
#pragma once

#include "libs/bus/socket.hpp"
#include "libs/core/status.hpp"
#include "proto/codec.hpp"
#include "services/scheduler/control/control_context.hpp"

namespace tunebus {

class TrialHandlers {
 public:
  explicit TrialHandlers(ControlContext& control) : control_(control) {}
  TrialHandlers(const TrialHandlers&) = delete;
  TrialHandlers& operator=(const TrialHandlers&) = delete;

  // Reads.
  Status HandleListTrials(bus::Incoming& in, const proto::Decoded& d);
  Status HandleShowTrial(bus::Incoming& in, const proto::Decoded& d);
  Status HandleFetchCheckpoint(bus::Incoming& in, const proto::Decoded& d);
  // Changes (the dispatcher refuses them first while the store refuses writes).
  Status HandleStopTrial(bus::Incoming& in, const proto::Decoded& d);
  Status HandlePauseTrial(bus::Incoming& in, const proto::Decoded& d);
  Status HandleResumeTrial(bus::Incoming& in, const proto::Decoded& d);
  Status HandleAddTrial(bus::Incoming& in, const proto::Decoded& d);
  Status HandleSetTrialResources(bus::Incoming& in, const proto::Decoded& d);

 private:
  ControlContext& control_;
};

}  // namespace tunebus
