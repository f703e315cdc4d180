// AnalysisHandlers: the control socket's reads that look past one trial object, for the
// dashboard's analysis panels, tunectl and the Python package's ResultGrid and
// ExperimentAnalysis (proto/control.hpp):
//   - list_results: a trial's reported results, a page of its result.json (result_page.hpp);
//   - list_scheduler_decisions: the trial scheduler's decisions (in memory, the newest 2000);
//   - list_workers: the cluster's nodes as the resource-manager reports them.
// Each is answered at once, or after the store (an experiment only in the journals) or the
// resource-manager answered, with copies of what it needs.
//
// Owns nothing; uses the ControlContext (which outlives it). Threads: the scheduler's loop
// (list_results reads the trial's result file there: one pass over it).
#pragma once

#include "libs/bus/socket.hpp"
#include "libs/core/status.hpp"
#include "proto/codec.hpp"
#include "services/scheduler/control/control_context.hpp"

namespace tunebus {

class AnalysisHandlers {
 public:
  explicit AnalysisHandlers(ControlContext& control) : control_(control) {}
  AnalysisHandlers(const AnalysisHandlers&) = delete;
  AnalysisHandlers& operator=(const AnalysisHandlers&) = delete;

  Status HandleListResults(bus::Incoming& in, const proto::Decoded& d);
  Status HandleListSchedulerDecisions(bus::Incoming& in, const proto::Decoded& d);
  Status HandleListWorkers(bus::Incoming& in, const proto::Decoded& d);

 private:
  ControlContext& control_;
};

}  // namespace tunebus
