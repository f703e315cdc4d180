// Scheduler handlers for the control socket (tunectl). Every request gets exactly one reply:
// ControlReply with a JSON body, or ErrorReply. Replies wait for the journal (write-ahead).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <random>

#include "libs/bus/service_guard.hpp"
#include "libs/journal/records.hpp"
#include "libs/tune/make_trial_scheduler.hpp"
#include "proto/control.hpp"
#include "proto/resources.hpp"
#include "proto/store.hpp"
#include "services/scheduler/experiment.hpp"
#include "services/scheduler/trial_json.hpp"

namespace tunebus {

using nlohmann::json;

namespace {

// Result file tasks (about two per trial) behind which placement waits for the file writer.
constexpr size_t kMaxFileBacklogToPlace = 8192;

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

RunnerOptions MakeRunnerOptions(const ExperimentSpec& spec, const std::string& experiment_id,
                                const Resources& resources_per_trial,
                                std::optional<CheckpointRef> restore_from) {
  RunnerOptions ro;
  ro.experiment_id = experiment_id;
  ro.metric = spec.metric;
  ro.mode = spec.mode;
  ro.stop = spec.stop.thresholds;
  ro.time_budget_s = spec.stop.time_budget_s;
  ro.max_concurrent_trials = spec.max_concurrent_trials;
  ro.max_failures = spec.max_failures;
  ro.max_worker_losses = spec.max_worker_losses;
  ro.fail_fast = spec.fail_fast;
  ro.queue_trials = spec.queue_trials;
  ro.resources_per_trial = resources_per_trial;
  ro.checkpoint_freq = spec.checkpoint_freq;
  ro.checkpoint_at_end = spec.checkpoint_at_end;
  ro.keep_checkpoints_num = spec.keep_checkpoints_num;
  ro.checkpoint_score_attr = spec.checkpoint_score_attr;
  ro.restore_from = std::move(restore_from);
  return ro;
}

void Scheduler::ReplyJson(const bus::Incoming& in, uint64_t id, const json& body) {
  proto::ControlReply reply;
  reply.id = id;
  reply.body_json = body.dump();
  auto send = [this, in_route = in.route, payload = proto::Encode(reply)] {
    bus::Incoming route;
    route.route = in_route;
    bus::Reply(control_, route, payload);
  };
  Experiment* e = Current();
  if (e) {
    e->journal->AfterDurable(std::move(send));
  } else {
    send();
  }
}

void Scheduler::ReplyError(const bus::Incoming& in, uint64_t id, const std::string& type,
                           const Status& status) {
  bus::Reply(control_, in, proto::Encode(proto::MakeError(status, id, type)));
}

void Scheduler::OnControlReadable() {
  bus::Incoming in;
  while (bus::Receive(control_, in)) {
    auto d = proto::Decode(in.payload.data(), in.payload.size());
    if (!d.ok()) {
      counters_["invalid"]++;
      spdlog::warn("Rejecting control request because it is malformed: {}", d.status().ToString());
      bus::Reply(
          control_, in,
          proto::Encode(proto::MakeDecodeError(in.payload.data(), in.payload.size(), d.status())));
      continue;
    }
    counters_[d->type()]++;
    const std::string& type = d->type();
    if (type == proto::SubmitExperiment::kType) {
      HandleSubmit(in, *d);
    } else if (type == proto::ListTrials::kType) {
      HandleListTrials(in, *d);
    } else if (type == proto::ShowTrial::kType) {
      HandleShowTrial(in, *d);
    } else if (type == proto::StopTrialCommand::kType) {
      HandleStopTrial(in, *d);
    } else if (type == proto::StopExperiment::kType) {
      HandleStopExperiment(in, *d);
    } else if (type == proto::GetExperiment::kType) {
      HandleGetExperiment(in, *d);
    } else if (type == proto::ListWorkers::kType) {
      HandleListWorkers(in, *d);
    } else if (type == proto::ResumeExperimentCommand::kType) {
      HandleResumeExperiment(in, *d);
    } else if (type == proto::ListExperiments::kType) {
      HandleListExperiments(in, *d);
    } else if (type == proto::PauseTrialCommand::kType) {
      HandlePauseTrial(in, *d);
    } else if (type == proto::ResumeTrialCommand::kType) {
      HandleResumeTrial(in, *d);
    } else if (type == proto::AddTrialCommand::kType) {
      HandleAddTrial(in, *d);
    } else if (type == proto::SetTrialResourcesCommand::kType) {
      HandleSetTrialResources(in, *d);
    } else if (type == proto::FetchCheckpoint::kType) {
      HandleFetchCheckpoint(in, *d);
    } else {
      ReplyError(in, d->id(), type,
                 Status::InvalidArgument("unknown control request type '" + type + "'"));
    }
  }
}

void Scheduler::HandleSubmit(const bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::SubmitExperiment>();
  if (!msg.ok()) return ReplyError(in, d.id(), d.type(), msg.status());
  if (Experiment* current = Current();
      state_ == State::kRunning && current->spec.source_yaml == msg->spec_yaml) {
    // The same experiment is already running (e.g. resumed after a restart): follow it.
    return ReplyJson(in, d.id(),
                     ExperimentToJson(current->spec.name, *current->runner, current->experiment_dir,
                                      current->ElapsedS()));
  }
  if (state_ == State::kRunning || submitting_) {
    return ReplyError(in, d.id(), d.type(),
                      Status::FailedPrecondition(
                          submitting_ ? std::string("another experiment is being submitted")
                                      : fmt::format("experiment {} is still running; stop it first",
                                                    Current()->spec.name)));
  }
  auto spec = ParseExperimentYaml(msg->spec_yaml, msg->base_dir, msg->source_name);
  if (!spec.ok()) return ReplyError(in, d.id(), d.type(), spec.status());
  if (spec->restore_from.empty())
    return StartExperiment(in, d.id(), *msg, std::move(*spec), std::nullopt);
  // restore_from: learn the checkpoint's training_iteration from the store first.
  proto::CheckpointList list;
  list.prefix = spec->restore_from;
  submitting_ = true;
  store_->Request(list, [this, route = in.route, id = d.id(), type = d.type(), msg = *msg,
                         spec = std::move(*spec)](Result<proto::Decoded> reply) mutable {
    submitting_ = false;
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

void Scheduler::StartExperiment(const bus::Incoming& in, uint64_t id,
                                const proto::SubmitExperiment& msg, ExperimentSpec spec,
                                std::optional<CheckpointRef> restore_from) {
  // The folder is checked before anything is journaled: an experiment whose results cannot be
  // written is refused, and the scheduler goes on serving.
  if (Status s = bus::MakeWritableDir(ExperimentDir(spec), "the results folder"); !s.ok()) {
    spdlog::warn("Refusing experiment {}: {}", spec.name, s.message());
    return ReplyError(in, id, proto::SubmitExperiment::kType,
                      Status::IoError(fmt::format(
                          "{} on the scheduler's host; set a results_dir it can write in the "
                          "experiment file, or start the scheduler with --results-dir "
                          "(TUNEBUS_RESULTS_DIR)",
                          s.message())));
  }
  std::random_device rd;
  const std::string experiment_id = fmt::format("{:05x}", rd() & 0xfffff);
  const uint64_t seed = spec.seed.value_or((uint64_t(rd()) << 32) | rd());
  auto built = BuildExperiment(std::move(spec), experiment_id, seed, std::move(restore_from));
  if (!built.ok()) return ReplyError(in, id, proto::SubmitExperiment::kType, built.status());
  Experiment* e = *built;
  e->submitted_at_s = WallSeconds();
  e->base_dir = msg.base_dir;
  e->source_name = msg.source_name;
  e->seed = seed;
  e->journal->Append(journal::ExperimentSubmitted(experiment_id, msg.spec_yaml, msg.base_dir,
                                                  msg.source_name, seed, e->submitted_at_s));
  state_ = State::kRunning;
  spdlog::info("Experiment {} ({} trials{}) submitted; journal {}", e->spec.name,
               e->runner->TotalTrials(), e->spec.seed ? fmt::format(", seed {}", seed) : "",
               e->journal_name);
  e->runner->Step();
  ReplyJson(in, id, ExperimentToJson(e->spec.name, *e->runner, e->experiment_dir, 0));
}

Result<std::unique_ptr<Scheduler::Experiment>> Scheduler::NewExperiment(
    ExperimentSpec spec, const std::string& experiment_id, uint64_t seed,
    std::optional<CheckpointRef> restore_from, bool read_only) {
  auto scheduler =
      MakeTrialScheduler(spec.scheduler, spec.scheduler_config, spec.metric, spec.mode, seed);
  if (!scheduler.ok()) return scheduler.status();
  auto resources = Resources::FromAmounts(spec.resources_per_trial);
  if (!resources.ok()) return resources.status();

  auto e = std::make_unique<Experiment>();
  e->spec = std::move(spec);
  e->experiment_id = experiment_id;
  e->journal_name = e->spec.name + "-" + e->experiment_id;
  e->experiment_dir = ExperimentDir(e->spec);
  e->started = bus::Clock::now();
  e->read_only = read_only;
  TrialExecutor* executor = &NoEffects::Instance();
  RunnerObserver* observer = &NoEffects::Instance();
  if (!read_only) {
    e->journal = std::make_unique<journal::JournalWriter>(loop_, *store_, e->journal_name);
    e->recorder = std::make_unique<ExperimentRecorder>(e->spec.name, e->experiment_dir, *e->journal,
                                                       *publisher_);
    e->executor = std::make_unique<BusExecutor>(loop_, *rm_, *store_, *outbox_, *e->journal,
                                                e->spec, e->experiment_dir, e->journal_name);
    executor = e->executor.get();
    observer = e->recorder.get();
  }
  RunnerOptions ro =
      MakeRunnerOptions(e->spec, e->experiment_id, *resources, std::move(restore_from));
  auto generator =
      std::make_unique<VariantGenerator>(e->spec.param_space, e->spec.num_samples, seed);
  e->runner =
      std::make_unique<TrialRunner>(std::move(ro), std::move(generator), std::move(*scheduler),
                                    *executor, *observer, WallSeconds);
  return e;
}

Result<Scheduler::Experiment*> Scheduler::BuildExperiment(
    ExperimentSpec spec, const std::string& experiment_id, uint64_t seed,
    std::optional<CheckpointRef> restore_from) {
  auto built = NewExperiment(std::move(spec), experiment_id, seed, std::move(restore_from),
                             /*read_only=*/false);
  if (!built.ok()) return built.status();
  std::unique_ptr<Experiment>& e = *built;
  e->executor->set_runner(e->runner.get());
  e->recorder->set_runner(e->runner.get());
  Experiment* raw = e.get();
  e->executor->set_on_unreachable([raw](const Trial& t) {
    const Trial* now = raw->runner->FindTrial(t.trial_id);
    if (now == nullptr || now->attempt != t.attempt || now->status != TrialStatus::kRunning) return;
    raw->runner->RequeueLost(t.trial_id, fmt::format("worker {} is not connected", t.worker_id));
  });
  e->executor->set_is_registered(
      [this](const std::string& worker) { return registered_.contains(worker); });
  // No trial starts while its result files would queue behind many others (a slow disk).
  e->executor->set_may_place(
      [raw] { return raw->recorder->FileBacklog() < kMaxFileBacklogToPlace; });
  experiments_.push_back(std::move(e));
  return raw;
}

std::string Scheduler::ExperimentDir(const ExperimentSpec& spec) const {
  const bool deployed = !options_.results_dir.empty() && spec.results_dir_beside_file;
  return (deployed ? options_.results_dir : spec.results_dir) + "/" + spec.name;
}

void Scheduler::HandleListTrials(const bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::ListTrials>();
  if (!msg.ok()) return ReplyError(in, d.id(), d.type(), msg.status());
  std::optional<TrialStatus> filter;
  if (!msg->status.empty()) {
    filter = ParseTrialStatus(msg->status);
    if (!filter) {
      return ReplyError(in, d.id(), d.type(),
                        Status::InvalidArgument(
                            "unknown status '" + msg->status +
                            "'; one of PENDING, RUNNING, PAUSED, TERMINATED, ERROR (any case)"));
    }
  }
  if (msg->offset < 0 || msg->limit < 0) {
    return ReplyError(in, d.id(), d.type(),
                      Status::InvalidArgument("offset and limit must be >= 0"));
  }
  json body = json::array();
  auto found = FindExperiment(msg->experiment);
  // No experiment at all: an empty list, unless one was named.
  if (!found.ok() && (!msg->experiment.empty() || found.status().code() != StatusCode::kNotFound)) {
    return ReplyError(in, d.id(), d.type(), found.status());
  }
  if (Experiment* e = found.ok() ? *found : nullptr) {
    int64_t skip = msg->offset;
    for (const Trial& t : e->runner->trials()) {
      if (filter && t.status != *filter) continue;
      if (skip > 0) {
        --skip;
        continue;
      }
      if (msg->limit > 0 && int64_t(body.size()) >= msg->limit) break;
      body.push_back(TrialToJson(t, e->experiment_dir));
      if (e->runner->IsPausing(t)) body.back()["pausing"] = true;
    }
  }
  ReplyJson(in, d.id(), body);
}

void Scheduler::HandleShowTrial(const bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::ShowTrial>();
  if (!msg.ok()) return ReplyError(in, d.id(), d.type(), msg.status());
  auto e = FindExperiment(msg->experiment);
  if (!e.ok()) {
    return ReplyError(in, d.id(), d.type(),
                      e.status().code() == StatusCode::kNotFound && msg->experiment.empty()
                          ? Status::NotFound("no trial " + msg->trial_id)
                          : e.status());
  }
  const Trial* t = (*e)->runner->FindTrial(msg->trial_id);
  if (t == nullptr) {
    return ReplyError(in, d.id(), d.type(),
                      Status::NotFound(fmt::format("no trial {} in experiment {}", msg->trial_id,
                                                   (*e)->journal_name)));
  }
  json body = TrialToJson(*t, (*e)->experiment_dir);
  if ((*e)->runner->IsPausing(*t)) body["pausing"] = true;
  ReplyJson(in, d.id(), body);
}

void Scheduler::HandleStopTrial(const bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::StopTrialCommand>();
  if (!msg.ok()) return ReplyError(in, d.id(), d.type(), msg.status());
  Experiment* e = Current();
  if (e == nullptr)
    return ReplyError(in, d.id(), d.type(), Status::NotFound("no trial " + msg->trial_id));
  auto r = e->runner->StopTrialByUser(msg->trial_id);
  if (!r.ok()) return ReplyError(in, d.id(), d.type(), r.status());
  const Trial* t = e->runner->FindTrial(msg->trial_id);
  ReplyJson(in, d.id(),
            {{"trial_id", msg->trial_id}, {"status", TrialStatusName(t->status)}, {"message", *r}});
}

void Scheduler::HandleStopExperiment(const bus::Incoming& in, const proto::Decoded& d) {
  Experiment* e = Current();
  if (e == nullptr)
    return ReplyError(in, d.id(), d.type(), Status::NotFound("no experiment has been submitted"));
  auto msg = d.As<proto::StopExperiment>();
  if (!msg.ok()) return ReplyError(in, d.id(), d.type(), msg.status());
  if (msg->interrupt) {
    e->runner->InterruptExperiment("interrupted by the user");
  } else {
    e->runner->StopExperiment("stopped by the user");
  }
  ReplyJson(in, d.id(),
            ExperimentToJson(e->spec.name, *e->runner, e->experiment_dir, e->ElapsedS()));
}

void Scheduler::HandleGetExperiment(const bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::GetExperiment>();
  if (!msg.ok()) return ReplyError(in, d.id(), d.type(), msg.status());
  auto found = FindExperiment(msg->experiment);
  if (!found.ok()) return ReplyError(in, d.id(), d.type(), found.status());
  const Experiment* e = *found;
  json body = ExperimentToJson(e->spec.name, *e->runner, e->experiment_dir, e->ElapsedS());
  body["journal"] = e->journal_name;
  body["read_only"] = e->read_only;
  body["events_endpoint"] = events_bound_;  // where `tunectl watch` subscribes
  ReplyJson(in, d.id(), body);
}

void Scheduler::HandleListWorkers(const bus::Incoming& in, const proto::Decoded& d) {
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
                                   {"connected", workers_seen_.count(n.worker_id) > 0}});
                 }
                 ReplyJson(back, id, body);
               });
}

}  // namespace tunebus
