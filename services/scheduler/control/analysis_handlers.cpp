// The control socket's reads for the dashboard's analysis panels (docs/dashboard.md):
// ListSchedulerDecisions.
#include "proto/control.hpp"
#include "services/scheduler/control/control_service.hpp"
#include "services/scheduler/core/experiment.hpp"

namespace tunebus {

using nlohmann::json;

Status ControlService::HandleListSchedulerDecisions(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::ListSchedulerDecisions>();
  if (!msg.ok()) return msg.status();
  AnswerRead(in, d, msg->experiment, [](Result<Experiment*> found) -> Result<json> {
    if (!found.ok()) return found.status();
    const Experiment* e = *found;
    json body = e->runner().scheduler_decisions().ToJson();
    body["experiment"] = e->journal_name();
    body["scheduler"] = e->spec().scheduler;
    return body;
  });
  return Status::Ok();
}

}  // namespace tunebus
