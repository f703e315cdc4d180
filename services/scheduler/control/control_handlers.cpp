// The scheduler's control socket (tunectl): the dispatch table and the control handlers (resume
// and lsx are in scheduler_experiments.cpp). Every request gets exactly one reply: ControlReply
// with a JSON body, or ErrorReply. Replies wait for the journal (write-ahead). Requests that
// change the experiment act on the current one; read requests may name any experiment, a finished
// one too (FindExperiment). A request that reads journals from the store (lsx, resume of an
// experiment not in memory, reads of one only in the store) answers from the JournalReader's
// completion callback, with a copy of what it needs to reply, and looks at the scheduler's state
// again there: the loop served others meanwhile.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <string_view>
#include <utility>

#include "libs/core/sha256.hpp"
#include "libs/core/version.hpp"
#include "libs/journal/records.hpp"
#include "proto/control.hpp"
#include "proto/dashboard.hpp"
#include "proto/resources.hpp"
#include "proto/store.hpp"
#include "services/scheduler/core/experiment.hpp"
#include "services/scheduler/store/journal_reader.hpp"
#include "services/scheduler/scheduler.hpp"
#include "services/scheduler/control/trial_json.hpp"
#include "services/scheduler/control/trial_page.hpp"

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

bus::Incoming Scheduler::ReplyTo(const std::vector<std::string>& route) {
  bus::Incoming to;
  to.route = route;
  return to;
}

void Scheduler::ReplyJson(Experiment* e, const bus::Incoming& in, uint64_t id, const json& body) {
  proto::ControlReply reply;
  reply.id = id;
  reply.body_json = body.dump();
  auto send = [this, in_route = in.route, payload = proto::Encode(reply)] {
    bus::Incoming route;
    route.route = in_route;
    bus::Reply(control_, route, payload);
  };
  // A request's records are durable once every record its experiment appended so far is.
  if (e != nullptr && !e->read_only()) {
    e->journal().AfterDurable(std::move(send));
  } else {
    send();
  }
}

void Scheduler::ReplyRead(const bus::Incoming& in, uint64_t id, const json& body) {
  proto::ControlReply reply;
  reply.id = id;
  reply.body_json = body.dump();
  bus::Reply(control_, in, proto::Encode(reply));
}

json Scheduler::JournalHealthJson(const Experiment& e) {
  const journal::JournalWriter& w = e.journal();
  const bool failing = w.state() == journal::JournalWriter::State::kFailing;
  json health = {{"state", failing ? "failing" : "ok"},
                 {"not_durable_records", w.appended() - w.durable()}};
  if (failing) {
    health["since_unix_s"] = w.failing_since_wall_s();
    health["error"] = w.last_error().ToString();
    health["failed_tries"] = w.failed_tries();
  }
  return health;
}

void Scheduler::MarkNotDurable(const Experiment& e, const Trial& t, json& view) {
  if (!e.read_only() && !e.recorder().IsDurable(t)) view["durable"] = false;
}

Status Scheduler::JournalWritable(const Experiment* e) {
  if (e != nullptr && !e->read_only() &&
      e->journal().state() == journal::JournalWriter::State::kFailing) {
    return Status::Unavailable(fmt::format(
        "journal writes of experiment {} are failing since {}: {}; nothing acknowledged is "
        "lost; try again once the checkpoint-store takes writes",
        e->name(), FormatTimeOfDayUtc(e->journal().failing_since_wall_s()),
        e->journal().last_error().ToString()));
  }
  if (store_health_->state() == StoreHealth::State::kDegraded) {
    const json h = store_health_->ToJson();
    return Status::Unavailable(fmt::format(
        "the checkpoint-store refuses writes (degraded since {}: {}); try again once it recovers",
        FormatTimeOfDayUtc(h["since_unix_s"].get<double>()), h["reason"].get<std::string>()));
  }
  return Status::Ok();
}

void Scheduler::ReplyError(const bus::Incoming& in, uint64_t id, const std::string& type,
                           const Status& status) {
  control_dispatcher_->Refuse(in, id, type, status);
}

void Scheduler::AddControlHandlers() {
  // A request that changes state is refused (unavailable, naming the cause) while the store
  // refuses writes, or (Target) while its experiment's journal cannot take its record; reads
  // are always answered (ReplyRead). HandleSubmit checks itself: following the running
  // experiment is a read.
  const auto mutating = [this](Handler handler) {
    return [this, handler](bus::Incoming& in, const proto::Decoded& d) {
      if (Status s = JournalWritable(nullptr); !s.ok()) return s;
      return (this->*handler)(in, d);
    };
  };
  // Reads are the viewers' (the dispatcher's default roles, bus::kViewers); everything that
  // submits, uploads or changes state needs an operator key (docs/security.md).
  const bus::RoleSet ops = bus::kOperators;
  control_dispatcher_->On(proto::SubmitExperiment::kType, ops, this, &Scheduler::HandleSubmit)
      .On(proto::ListTrials::kType, this, &Scheduler::HandleListTrials)
      .On(proto::ShowTrial::kType, this, &Scheduler::HandleShowTrial)
      .On(proto::GetExperiment::kType, this, &Scheduler::HandleGetExperiment)
      .On(proto::ListSchedulerDecisions::kType, this, &Scheduler::HandleListSchedulerDecisions)
      .On(proto::ListWorkers::kType, this, &Scheduler::HandleListWorkers)
      .On(proto::ListExperiments::kType, this, &Scheduler::HandleListExperiments)
      .On(proto::FetchCheckpoint::kType, this, &Scheduler::HandleFetchCheckpoint)
      .On(proto::WorkingDirStat::kType, ops, this, &Scheduler::HandleWorkingDirStat)
      .On(proto::WorkingDirPut::kType, ops, this, &Scheduler::HandleWorkingDirPut)
      .On(proto::StopTrialCommand::kType, ops, mutating(&Scheduler::HandleStopTrial))
      .On(proto::StopExperiment::kType, ops, mutating(&Scheduler::HandleStopExperiment))
      .On(proto::ResumeExperimentCommand::kType, ops, mutating(&Scheduler::HandleResumeExperiment))
      .On(proto::PauseTrialCommand::kType, ops, mutating(&Scheduler::HandlePauseTrial))
      .On(proto::ResumeTrialCommand::kType, ops, mutating(&Scheduler::HandleResumeTrial))
      .On(proto::AddTrialCommand::kType, ops, mutating(&Scheduler::HandleAddTrial))
      .On(proto::SetTrialResourcesCommand::kType, ops,
          mutating(&Scheduler::HandleSetTrialResources))
      .On(proto::SetExperimentWeight::kType, ops, mutating(&Scheduler::HandleSetExperimentWeight))
      .On(proto::DeleteExperiment::kType, ops, mutating(&Scheduler::HandleDeleteExperiment))
      // The dashboard (a viewer) checks tokens; its actions carry an operator's token.
      .On(proto::IssueDashboardToken::kType, ops, this, &Scheduler::HandleIssueDashboardToken)
      .On(proto::VerifyDashboardToken::kType, this, &Scheduler::HandleVerifyDashboardToken)
      .On(proto::DashboardAction::kType, this, &Scheduler::HandleDashboardAction);
}

void Scheduler::OnControlReadable() {
  bus::Incoming in;
  while (bus::Receive(control_, in)) control_dispatcher_->Dispatch(in);
}

Status Scheduler::HandleSubmit(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::SubmitExperiment>();
  if (!msg.ok()) return msg.status();
  for (Experiment* running : Unfinished()) {
    if (running->phase() != Experiment::Phase::kRunning ||
        running->spec().source_yaml != msg->spec_yaml) {
      continue;
    }
    // The same experiment is already running (e.g. resumed after a restart): follow it.
    ReplyRead(in, d.id(),
              ExperimentToJson(running->name(), running->runner(), running->experiment_dir(),
                               running->ElapsedS()));
    return Status::Ok();
  }
  if (Status s = JournalWritable(nullptr); !s.ok()) return s;
  auto spec = ParseExperimentYaml(msg->spec_yaml, msg->base_dir, msg->source_name);
  if (!spec.ok()) return spec.status();
  if (Status s = NameFree(spec->name); !s.ok()) return s;
  if (msg->working_dir_digest.empty()) {
    SubmitParsed(in, d.id(), *msg, std::move(*spec));
    return Status::Ok();
  }
  // A shipped working_dir: the store must hold its archive before anything is journaled.
  if (!IsSha256Hex(msg->working_dir_digest)) {
    return Status::InvalidArgument(
        fmt::format("working_dir_digest '{}' is not a SHA-256 (64 lowercase hex digits)",
                    msg->working_dir_digest.substr(0, 80)));
  }
  claimed_names_.insert(spec->name);
  StatWorkingDir(msg->working_dir_digest, [this, route = in.route, id = d.id(), type = d.type(),
                                           msg = *msg, spec = std::move(*spec)](
                                              Result<std::optional<int64_t>> size) mutable {
    claimed_names_.erase(spec.name);
    bus::Incoming back;
    back.route = route;
    if (!size.ok()) return ReplyError(back, id, type, size.status());
    if (!size->has_value()) {
      return ReplyError(
          back, id, type,
          Status::NotFound(fmt::format("working_dir {} is not in the checkpoint-store; upload it "
                                       "with working_dir_put before submitting",
                                       msg.working_dir_digest.substr(0, 12))));
    }
    SubmitParsed(back, id, msg, std::move(spec));
  });
  return Status::Ok();
}

void Scheduler::SubmitParsed(const bus::Incoming& in, uint64_t id,
                             const proto::SubmitExperiment& msg, ExperimentSpec spec) {
  if (spec.restore_from.empty()) return StartExperiment(in, id, msg, std::move(spec), std::nullopt);
  // restore_from: learn the checkpoint's training_iteration from the store first.
  proto::CheckpointList list;
  list.prefix = spec.restore_from;
  claimed_names_.insert(spec.name);
  store_->Request(list, [this, route = in.route, id, type = std::string(msg.kType), msg,
                         spec = std::move(spec)](Result<proto::Decoded> reply) mutable {
    claimed_names_.erase(spec.name);
    bus::Incoming back;
    back.route = route;
    auto listed = reply.ok() ? reply->As<proto::CheckpointListReply>()
                             : Result<proto::CheckpointListReply>(reply.status());
    if (!listed.ok()) return ReplyError(back, id, type, listed.status());
    for (const proto::CheckpointInfo& info : listed->checkpoints) {
      if (info.checkpoint_id != spec.restore_from) continue;
      json meta = json::parse(info.metadata_json, nullptr, /*allow_exceptions=*/false);
      CheckpointRef ref;
      ref.checkpoint_id = info.checkpoint_id;
      ref.size_bytes = int64_t(info.size_bytes);
      if (meta.is_object()) {
        ref.training_iteration = meta.value("training_iteration", int64_t(0));
        ref.time_total_s = meta.value("time_total_s", 0.0);
      }
      return StartExperiment(back, id, msg, std::move(spec), ref);
    }
    ReplyError(back, id, type,
               Status::NotFound("restore_from: no checkpoint '" + spec.restore_from +
                                "' in the checkpoint-store"));
  });
}

Status Scheduler::HandleListTrials(bus::Incoming& in, const proto::Decoded& d) {
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
  AnswerRead(in, d, msg->experiment,
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
                   if (e->runner().IsPausing(trials[i])) body.back()["pausing"] = true;
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
                   if (e->runner().IsPausing(t)) body.back()["pausing"] = true;
                   MarkNotDurable(*e, t, body.back());
                 }
               }
               return body;
             });
  return Status::Ok();
}

Status Scheduler::HandleShowTrial(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::ShowTrial>();
  if (!msg.ok()) return msg.status();
  AnswerRead(in, d, msg->experiment, [msg = *msg](Result<Experiment*> e) -> Result<json> {
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
    if ((*e)->runner().IsPausing(*t)) body["pausing"] = true;
    MarkNotDurable(**e, *t, body);
    return body;
  });
  return Status::Ok();
}

Status Scheduler::HandleStopTrial(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::StopTrialCommand>();
  if (!msg.ok()) return msg.status();
  auto target = Target(msg->experiment, msg->trial_id);
  if (!target.ok()) return target.status();
  Experiment* e = *target;
  auto r = e->runner().StopTrialByUser(msg->trial_id);
  if (!r.ok()) return r.status();
  const Trial* t = e->runner().FindTrial(msg->trial_id);
  ReplyJson(e, in, d.id(),
            {{"trial_id", msg->trial_id}, {"status", TrialStatusName(t->status)}, {"message", *r}});
  return Status::Ok();
}

Status Scheduler::HandleStopExperiment(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::StopExperiment>();
  if (!msg.ok()) return msg.status();
  auto target = Target(msg->experiment);
  if (!target.ok()) return target.status();
  Experiment* e = *target;
  if (msg->interrupt) {
    e->runner().InterruptExperiment("interrupted by the user");
  } else {
    e->runner().StopExperiment("stopped by the user");
  }
  ReplyJson(e, in, d.id(),
            ExperimentToJson(e->name(), e->runner(), e->experiment_dir(), e->ElapsedS()));
  return Status::Ok();
}

Status Scheduler::HandleGetExperiment(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::GetExperiment>();
  if (!msg.ok()) return msg.status();
  AnswerRead(in, d, msg->experiment, [this](Result<Experiment*> found) -> Result<json> {
    if (!found.ok()) return found.status();
    const Experiment* e = *found;
    json body = ExperimentToJson(e->name(), e->runner(), e->experiment_dir(), e->ElapsedS());
    // Finished once its end is journaled (`tunectl run` returns then): a scheduler stopped
    // right after resumes nothing of it.
    if (!e->read_only() && !e->recorder().end_durable()) body["finished"] = false;
    body["journal"] = e->journal_name();
    body["read_only"] = e->read_only();
    if (!e->read_only()) body.update(ShareJson(*e));
    body["events_endpoint"] = events_bound_;  // where `tunectl watch` subscribes
    if (!e->read_only()) body["journal_health"] = JournalHealthJson(*e);
    body["store"] = store_health_->ToJson();
    body["version"] = Version();  // this scheduler's (since v1.12)
    return body;
  });
  return Status::Ok();
}

Status Scheduler::HandleListWorkers(bus::Incoming& in, const proto::Decoded& d) {
  const uint64_t id = d.id();
  const std::string type = d.type();
  rm_->Request(proto::GetClusterView{},
               [this, route = in.route, id, type](Result<proto::Decoded> reply) {
                 bus::Incoming back;
                 back.route = route;
                 auto view = reply.ok() ? reply->As<proto::ClusterView>()
                                        : Result<proto::ClusterView>(reply.status());
                 if (!view.ok()) return ReplyError(back, id, type, view.status());
                 json body = json::array();
                 for (const auto& n : view->nodes) {
                   auto cap = Resources::FromUnits(n.capacity);
                   auto used = Resources::FromUnits(n.committed);
                   if (!cap.ok() || !used.ok()) continue;
                   Resources free = *cap;
                   if (used->FitsIn(free)) free -= *used;
                   body.push_back({{"worker_id", n.worker_id},
                                   {"hostname", n.hostname},
                                   {"alive", n.alive},
                                   {"capacity", cap->ToAmounts()},
                                   {"committed", used->ToAmounts()},
                                   {"free", free.ToAmounts()},
                                   {"trials", n.trials},
                                   {"connected", worker_registry_.IsConnected(n.worker_id)}});
                 }
                 ReplyRead(back, id, body);
               });
  return Status::Ok();
}

Status Scheduler::HandlePauseTrial(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::PauseTrialCommand>();
  if (!msg.ok()) return msg.status();
  auto target = Target(msg->experiment, msg->trial_id);
  if (!target.ok()) return target.status();
  Experiment* e = *target;
  auto r = e->runner().PauseTrial(msg->trial_id);
  if (!r.ok()) return r.status();
  ReplyJson(e, in, d.id(), TrialReply(e->runner(), msg->trial_id, *r));
  return Status::Ok();
}

Status Scheduler::HandleResumeTrial(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::ResumeTrialCommand>();
  if (!msg.ok()) return msg.status();
  auto target = Target(msg->experiment, msg->trial_id);
  if (!target.ok()) return target.status();
  Experiment* e = *target;
  if (Status s = e->runner().UnpauseTrial(msg->trial_id); !s.ok()) return s;
  e->runner().Step();
  ReplyJson(e, in, d.id(),
            TrialReply(e->runner(), msg->trial_id, "trial " + msg->trial_id + " resumed"));
  return Status::Ok();
}

Status Scheduler::HandleAddTrial(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::AddTrialCommand>();
  if (!msg.ok()) return msg.status();
  auto target = Target(msg->experiment);
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
  auto added = e->runner().AddTrial(std::move(config));
  if (!added.ok()) return added.status();
  const std::string trial_id = (*added)->trial_id;
  e->runner().Step();
  ReplyJson(e, in, d.id(), TrialToJson(*e->runner().FindTrial(trial_id), e->experiment_dir()));
  return Status::Ok();
}

Status Scheduler::HandleSetTrialResources(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::SetTrialResourcesCommand>();
  if (!msg.ok()) return msg.status();
  auto target = Target(msg->experiment, msg->trial_id);
  if (!target.ok()) return target.status();
  Experiment* e = *target;
  // Without a trial id, Target names the default experiment, which holds no trial "".
  const Trial* t = e->runner().FindTrial(msg->trial_id);
  if (t == nullptr) return Status::NotFound("no trial " + msg->trial_id);
  std::map<std::string, double> amounts = t->resources.ToAmounts();
  for (const auto& [name, amount] : msg->resources) amounts[name] = amount;
  auto resources = Resources::FromAmounts(amounts);
  if (!resources.ok()) return resources.status();
  if (Status s = e->runner().SetTrialResources(msg->trial_id, *resources); !s.ok()) {
    return s;
  }
  e->runner().Step();
  ReplyJson(e, in, d.id(), TrialToJson(*e->runner().FindTrial(msg->trial_id), e->experiment_dir()));
  return Status::Ok();
}

Status Scheduler::HandleSetExperimentWeight(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::SetExperimentWeight>();
  if (!msg.ok()) return msg.status();
  if (!(msg->weight > 0) || !std::isfinite(msg->weight)) {
    return Status::InvalidArgument(fmt::format("weight must be a number > 0, got {}", msg->weight));
  }
  auto target = Target(msg->experiment);
  if (!target.ok()) return target.status();
  Experiment* e = *target;
  if (e->phase() == Experiment::Phase::kEnded) {
    return Status::FailedPrecondition(fmt::format("experiment {} is finished", e->name()));
  }
  spdlog::info("Experiment {}: weight {} -> {} (tunectl set-weight)", e->name(), e->weight(),
               msg->weight);
  e->SetWeight(msg->weight);
  json body = ExperimentToJson(e->name(), e->runner(), e->experiment_dir(), e->ElapsedS());
  body.update(ShareJson(*e));
  ReplyJson(e, in, d.id(), body);
  return Status::Ok();
}

void Scheduler::AnswerRead(const bus::Incoming& in, const proto::Decoded& d,
                           const std::string& experiment,
                           std::function<Result<json>(Result<Experiment*>)> answer) {
  FindExperiment(experiment, [this, route = in.route, id = d.id(), type = d.type(),
                              answer = std::move(answer)](Result<Experiment*> e) {
    Result<json> body = answer(std::move(e));
    if (!body.ok()) return ReplyError(ReplyTo(route), id, type, body.status());
    ReplyRead(ReplyTo(route), id, *body);
  });
}

Status Scheduler::HandleFetchCheckpoint(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::FetchCheckpoint>();
  if (!msg.ok()) return msg.status();
  FindExperiment(msg->experiment, [this, route = in.route, id = d.id(), type = d.type(),
                                   msg = *msg](Result<Experiment*> e) {
    bus::Incoming back;
    back.route = route;
    if (!e.ok()) return ReplyError(back, id, type, e.status());
    const Trial* t = (*e)->runner().FindTrial(msg.trial_id);
    if (t == nullptr) {
      return ReplyError(back, id, type,
                        Status::NotFound(fmt::format("no trial {} in experiment {}", msg.trial_id,
                                                     (*e)->journal_name())));
    }
    auto checkpoint = ChooseCheckpoint(*t, msg.checkpoint_id);
    if (!checkpoint.ok()) return ReplyError(back, id, type, checkpoint.status());
    proto::CheckpointGet get;
    get.checkpoint_id = checkpoint->checkpoint_id;
    get.chunk_index = msg.chunk_index;
    proto::CheckpointChunk chunk;
    chunk.id = id;
    chunk.experiment = (*e)->journal_name();
    chunk.trial_id = t->trial_id;
    chunk.checkpoint_id = checkpoint->checkpoint_id;
    chunk.training_iteration = checkpoint->training_iteration;
    // Captures values only: a read-only experiment may leave the cache before the store answers.
    store_->Request(
        get, [this, route, type, chunk = std::move(chunk)](Result<proto::Decoded> reply) mutable {
          bus::Incoming back = ReplyTo(route);
          auto got = reply.ok() ? reply->As<proto::CheckpointGetReply>()
                                : Result<proto::CheckpointGetReply>(reply.status());
          if (!got.ok()) {
            spdlog::warn("Checkpoint {} chunk {} was not fetched for export: {}",
                         chunk.checkpoint_id, chunk.chunk_index, got.status().ToString());
            return ReplyError(back, chunk.id, type,
                              Status(got.status().code(),
                                     fmt::format("checkpoint-store: {}", got.status().message())));
          }
          chunk.chunk_index = got->chunk_index;
          chunk.num_chunks = got->num_chunks;
          chunk.data = std::move(got->data);
          bus::Reply(control_, back, proto::Encode(chunk));
        });
  });
  return Status::Ok();
}

}  // namespace tunebus
