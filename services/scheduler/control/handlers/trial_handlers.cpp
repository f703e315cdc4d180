// TrialHandlers: the control requests about trials: list, show, stop, pause, resume, add and
// resize them, and export a trial's checkpoint. Requests that change an experiment act on the
// one they or their trial name (Target); reads may name any experiment, a finished one too
// (FindExperiment).
#include "services/scheduler/control/handlers/trial_handlers.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <string_view>
#include <utility>

#include "proto/control.hpp"
#include "proto/store.hpp"
#include "services/scheduler/control/trial_json.hpp"
#include "services/scheduler/control/trial_page.hpp"
#include "services/scheduler/core/experiment.hpp"
#include "services/scheduler/core/experiment_registry.hpp"

namespace tunebus {

using nlohmann::json;

namespace {

json TrialReply(const TrialRunner& runner, const std::string& trial_id,
                const std::string& message) {
  const Trial* t = runner.FindTrial(trial_id);
  return {{"trial_id", trial_id},
          {"status", t ? TrialStatusName(t->status) : "UNKNOWN"},
          {"message", message}};
}

// The trial's checkpoint `wanted`: "" = the newest; else its full id or the part after the
// trial's prefix ("00000020-a1"). Errors: FailedPrecondition when it has none, NotFound naming
// the ones it keeps.
Result<CheckpointRef> ChooseCheckpoint(const Trial& t, const std::string& wanted) {
  if (t.checkpoints.empty()) {
    return Status::FailedPrecondition(
        fmt::format("trial {} has no stored checkpoint (checkpoints are saved with checkpoint_freq "
                    "or checkpoint_at_end)",
                    t.trial_id));
  }
  if (wanted.empty()) return t.checkpoints.back();
  std::vector<std::string> kept;
  for (const CheckpointRef& c : t.checkpoints) {
    const std::string& id = c.checkpoint_id;
    if (id == wanted || (id.size() > wanted.size() && id.ends_with("/" + wanted))) return c;
    kept.push_back(id);
  }
  return Status::NotFound(fmt::format("trial {} keeps no checkpoint {}; it keeps {}", t.trial_id,
                                      wanted, fmt::join(kept, ", ")));
}

}  // namespace

Status TrialHandlers::HandleListTrials(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::ListTrials>();
  if (!msg.ok()) return msg.status();
  std::optional<TrialStatus> filter;
  if (!msg->status.empty()) {
    filter = ParseTrialStatus(msg->status);
    if (!filter) {
      return Status::InvalidArgument(
          "unknown status '" + msg->status +
          "'; one of PENDING, RUNNING, PAUSED, TERMINATED, ERROR (any case)");
    }
  }
  if (msg->offset < 0 || msg->limit < 0) {
    return Status::InvalidArgument("offset and limit must be >= 0");
  }
  std::optional<TrialSort> sort;
  if (!msg->sort.empty()) {
    auto parsed = ParseTrialSort(msg->sort);
    if (!parsed.ok()) return parsed.status();
    sort = std::move(*parsed);
  }
  control_.AnswerRead(
      in, d, msg->experiment,
      [msg = *msg, filter, sort](Result<Experiment*> found) -> Result<json> {
        json body = json::array();
        // No experiment at all: an empty list, unless one was named.
        if (!found.ok() &&
            (!msg.experiment.empty() || found.status().code() != StatusCode::kNotFound)) {
          return found.status();
        }
        Experiment* e = found.ok() ? *found : nullptr;
        if (e != nullptr && sort) {
          // Only the page's trials become JSON (trial_page.hpp).
          const std::vector<Trial>& trials = e->runner().trials();
          for (size_t i : TrialPageIndices(trials, filter, *sort, msg.offset, msg.limit)) {
            body.push_back(TrialToJson(trials[i], e->experiment_dir()));
            if (e->runner().phases().IsPausing(int64_t(i))) body.back()["pausing"] = true;
            MarkNotDurable(*e, trials[i], body.back());
          }
        } else if (e != nullptr) {
          int64_t skip = msg.offset;
          for (const Trial& t : e->runner().trials()) {
            if (filter && t.status != *filter) continue;
            if (skip > 0) {
              --skip;
              continue;
            }
            if (msg.limit > 0 && int64_t(body.size()) >= msg.limit) break;
            body.push_back(TrialToJson(t, e->experiment_dir()));
            if (e->runner().phases().IsPausing(t.index)) body.back()["pausing"] = true;
            MarkNotDurable(*e, t, body.back());
          }
        }
        return body;
      });
  return Status::Ok();
}

Status TrialHandlers::HandleShowTrial(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::ShowTrial>();
  if (!msg.ok()) return msg.status();
  control_.AnswerRead(in, d, msg->experiment, [msg = *msg](Result<Experiment*> e) -> Result<json> {
    if (!e.ok()) {
      return e.status().code() == StatusCode::kNotFound && msg.experiment.empty()
                 ? Status::NotFound("no trial " + msg.trial_id)
                 : e.status();
    }
    const Trial* t = (*e)->runner().FindTrial(msg.trial_id);
    if (t == nullptr) {
      return Status::NotFound(
          fmt::format("no trial {} in experiment {}", msg.trial_id, (*e)->journal_name()));
    }
    json body = TrialToJson(*t, (*e)->experiment_dir());
    if ((*e)->runner().phases().IsPausing(t->index)) body["pausing"] = true;
    MarkNotDurable(**e, *t, body);
    return body;
  });
  return Status::Ok();
}

Status TrialHandlers::HandleStopTrial(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::StopTrialCommand>();
  if (!msg.ok()) return msg.status();
  auto target = control_.Target(msg->experiment, msg->trial_id);
  if (!target.ok()) return target.status();
  Experiment* e = *target;
  auto r = TrialControl(e->runner()).StopTrial(msg->trial_id);
  if (!r.ok()) return r.status();
  const Trial* t = e->runner().FindTrial(msg->trial_id);
  control_.ReplyJson(
      e, in, d.id(),
      {{"trial_id", msg->trial_id}, {"status", TrialStatusName(t->status)}, {"message", *r}});
  return Status::Ok();
}

Status TrialHandlers::HandlePauseTrial(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::PauseTrialCommand>();
  if (!msg.ok()) return msg.status();
  auto target = control_.Target(msg->experiment, msg->trial_id);
  if (!target.ok()) return target.status();
  Experiment* e = *target;
  auto r = TrialControl(e->runner()).PauseTrial(msg->trial_id);
  if (!r.ok()) return r.status();
  control_.ReplyJson(e, in, d.id(), TrialReply(e->runner(), msg->trial_id, *r));
  return Status::Ok();
}

Status TrialHandlers::HandleResumeTrial(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::ResumeTrialCommand>();
  if (!msg.ok()) return msg.status();
  auto target = control_.Target(msg->experiment, msg->trial_id);
  if (!target.ok()) return target.status();
  Experiment* e = *target;
  if (Status s = TrialControl(e->runner()).UnpauseTrial(msg->trial_id); !s.ok()) return s;
  e->runner().Step();
  control_.ReplyJson(e, in, d.id(),
                     TrialReply(e->runner(), msg->trial_id, "trial " + msg->trial_id + " resumed"));
  return Status::Ok();
}

Status TrialHandlers::HandleAddTrial(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::AddTrialCommand>();
  if (!msg.ok()) return msg.status();
  auto target = control_.Target(msg->experiment);
  if (!target.ok()) {
    return target.status().code() == StatusCode::kNotFound && msg->experiment.empty()
               ? Status::FailedPrecondition("no experiment is running")
               : target.status();
  }
  Experiment* e = *target;
  if (e->runner().IsFinished()) {
    return Status::FailedPrecondition(fmt::format("experiment {} is finished", e->name()));
  }
  json config = json::parse(msg->config_json, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) {
    return Status::InvalidArgument("config_json is not valid JSON");
  }
  auto added = TrialControl(e->runner()).AddTrial(std::move(config));
  if (!added.ok()) return added.status();
  const std::string trial_id = (*added)->trial_id;
  e->runner().Step();
  control_.ReplyJson(e, in, d.id(),
                     TrialToJson(*e->runner().FindTrial(trial_id), e->experiment_dir()));
  return Status::Ok();
}

Status TrialHandlers::HandleSetTrialResources(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::SetTrialResourcesCommand>();
  if (!msg.ok()) return msg.status();
  auto target = control_.Target(msg->experiment, msg->trial_id);
  if (!target.ok()) return target.status();
  Experiment* e = *target;
  // Without a trial id, Target names the default experiment, which holds no trial "".
  const Trial* t = e->runner().FindTrial(msg->trial_id);
  if (t == nullptr) return Status::NotFound("no trial " + msg->trial_id);
  std::map<std::string, double> amounts = t->resources.ToAmounts();
  for (const auto& [name, amount] : msg->resources) amounts[name] = amount;
  auto resources = Resources::FromAmounts(amounts);
  if (!resources.ok()) return resources.status();
  if (Status s = TrialControl(e->runner()).SetTrialResources(msg->trial_id, *resources); !s.ok()) {
    return s;
  }
  e->runner().Step();
  control_.ReplyJson(e, in, d.id(),
                     TrialToJson(*e->runner().FindTrial(msg->trial_id), e->experiment_dir()));
  return Status::Ok();
}

Status TrialHandlers::HandleFetchCheckpoint(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::FetchCheckpoint>();
  if (!msg.ok()) return msg.status();
  control_.experiments().FindExperiment(msg->experiment, [this, route = in.route, id = d.id(),
                                                          type = d.type(),
                                                          msg = *msg](Result<Experiment*> e) {
    bus::Incoming back;
    back.route = route;
    if (!e.ok()) return control_.ReplyError(back, id, type, e.status());
    const Trial* t = (*e)->runner().FindTrial(msg.trial_id);
    if (t == nullptr) {
      return control_.ReplyError(back, id, type,
                                 Status::NotFound(fmt::format("no trial {} in experiment {}",
                                                              msg.trial_id, (*e)->journal_name())));
    }
    auto checkpoint = ChooseCheckpoint(*t, msg.checkpoint_id);
    if (!checkpoint.ok()) return control_.ReplyError(back, id, type, checkpoint.status());
    proto::CheckpointGet get;
    get.checkpoint_id = checkpoint->checkpoint_id;
    get.chunk_index = msg.chunk_index;
    proto::CheckpointChunk chunk;
    chunk.id = id;
    chunk.experiment = (*e)->journal_name();
    chunk.trial_id = t->trial_id;
    chunk.checkpoint_id = checkpoint->checkpoint_id;
    chunk.training_iteration = checkpoint->training_iteration;
    // Captures values only: a read-only experiment may leave the cache before the store
    // answers.
    control_.parts().store.Request(
        get, [this, route, type, chunk = std::move(chunk)](Result<proto::Decoded> reply) mutable {
          bus::Incoming back = ControlContext::ReplyTo(route);
          auto got = reply.ok() ? reply->As<proto::CheckpointGetReply>()
                                : Result<proto::CheckpointGetReply>(reply.status());
          if (!got.ok()) {
            spdlog::warn("Checkpoint {} chunk {} was not fetched for export: {}",
                         chunk.checkpoint_id, chunk.chunk_index, got.status().ToString());
            return control_.ReplyError(
                back, chunk.id, type,
                Status(got.status().code(),
                       fmt::format("checkpoint-store: {}", got.status().message())));
          }
          chunk.chunk_index = got->chunk_index;
          chunk.num_chunks = got->num_chunks;
          chunk.data = std::move(got->data);
          control_.ReplyEncoded(back, proto::Encode(chunk));
        });
  });
  return Status::Ok();
}

}  // namespace tunebus
