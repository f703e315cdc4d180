// TrialWorker: trial handlers (StartTrial, Decision, StopTrialRequest) and trainable events.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <utility>

#include "libs/bus/service_guard.hpp"
#include "libs/bus/socket.hpp"
#include "libs/core/action.hpp"
#include "libs/core/resources.hpp"
#include "libs/core/trial.hpp"
#include "services/trial-worker/report_encoding.hpp"
#include "services/trial-worker/trial_worker.hpp"

namespace tunebus {

namespace fs = std::filesystem;

TrialRun* TrialWorker::FindRun(const std::string& trial_id, int64_t attempt) {
  auto it = runs_.find(RunKey{trial_id, attempt});
  return it == runs_.end() ? nullptr : it->second.get();
}

void TrialWorker::FailStart(const proto::StartTrial& start, const std::string& error,
                            bool start_failed) {
  spdlog::warn("Trial {} attempt {} could not start: {}", start.trial_id, start.attempt, error);
  proto::TrialExited exited;
  exited.trial_id = start.trial_id;
  exited.attempt = start.attempt;
  exited.ok = false;
  exited.error = fmt::format("{} (worker {} on host {})", error, options_.worker_id, hostname_);
  exited.start_failed = start_failed;
  SendToScheduler(exited);
}

void TrialWorker::HandleStartTrial(const proto::Decoded& msg) {
  auto start = msg.As<proto::StartTrial>();
  if (!start.ok()) {
    spdlog::warn("Dropping StartTrial: {}", start.status().ToString());
    return;
  }
  if (state_ == State::kShutDown) {
    spdlog::warn("Dropping StartTrial for {} because worker {} shuts down", start->trial_id,
                 options_.worker_id);
    return;
  }
  if (start->trial_id.empty()) {
    spdlog::warn("Dropping StartTrial without a trial_id");
    return;
  }
  for (const auto& [key, run] : runs_) {
    if (key.first != start->trial_id) continue;
    if (key.second == start->attempt) {
      spdlog::warn(
          "Dropping StartTrial for {} attempt {} because that attempt is already on worker {}",
          key.first, key.second, options_.worker_id);
      return;
    }
    if (key.second > start->attempt && !run->has_exited()) {
      spdlog::warn("Dropping StartTrial for {} attempt {} because newer attempt {} runs", key.first,
                   start->attempt, key.second);
      return;
    }
  }
  // Validate.
  nlohmann::json config =
      nlohmann::json::parse(start->config_json, nullptr, /*allow_exceptions=*/false);
  if (start->config_json.empty()) config = nlohmann::json::object();
  if (config.is_discarded() || !config.is_object()) {
    return FailStart(*start, "config_json is not a JSON object");
  }
  if (start->trial_dir.empty() || !fs::path(start->trial_dir).is_absolute()) {
    return FailStart(*start,
                     fmt::format("trial_dir must be an absolute path, got '{}'", start->trial_dir));
  }
  const proto::TrainableDef& def = start->trainable;
  if (!def.working_dir.empty() && !fs::path(def.working_dir).is_absolute()) {
    return FailStart(
        *start, fmt::format("working_dir must be an absolute path, got '{}'", def.working_dir));
  }
  // Act: older attempts of this trial are stale now.
  std::vector<RunKey> older;
  for (const auto& [key, run] : runs_) {
    if (key.first == start->trial_id && key.second < start->attempt) older.push_back(key);
  }
  for (const auto& key : older) {
    KillStale(*runs_[key], fmt::format("attempt {} starts", start->attempt));
    EraseIfDone(key);
  }
  // An unwritable trial dir (a results folder of another user, a read-only mount) fails this
  // trial only.
  if (Status made = bus::MakeWritableDir(start->trial_dir, "trial dir"); !made.ok()) {
    return FailStart(*start, made.message());
  }
  const RunKey key{start->trial_id, start->attempt};
  // Older attempts' restore folders (a killed worker's); a first attempt has none, and scans none.
  if (start->attempt > 1) RemoveRestoreDirs(start->trial_dir, start->attempt);
  if (start->working_dir_digest.empty()) return RestoreAndStart(*start, std::move(config));
  // The shipped working_dir first: the trainable runs in the cache's copy.
  restoring_[key] = false;
  working_dirs_->Acquire(
      start->working_dir_digest,
      [this, key, start = *start, config = std::move(config)](Result<std::string> folder) mutable {
        if (!EndWait(key)) return;
        if (!folder.ok()) {
          return FailStart(start, folder.status().message(),
                           /*start_failed=*/false);
        }
        start.trainable.working_dir = *folder;
        RestoreAndStart(start, std::move(config));
      });
}

bool TrialWorker::EndWait(const RunKey& key) {
  const bool cancelled = restoring_[key];
  restoring_.erase(key);
  if (!cancelled && state_ != State::kShutDown) return true;
  proto::TrialExited exited;
  exited.trial_id = key.first;
  exited.attempt = key.second;
  exited.stopped = true;
  if (state_ != State::kShutDown) SendToScheduler(exited);
  return false;
}

void TrialWorker::RestoreAndStart(const proto::StartTrial& start_msg, nlohmann::json config) {
  const proto::StartTrial* start = &start_msg;
  const RunKey key{start->trial_id, start->attempt};
  if (start->restore_checkpoint_id.empty()) return StartRun(*start, std::move(config), "");
  // Restore first: fetch the checkpoint (saved on any worker) into the trial dir.
  const std::string restore_dir = RestoreDir(start->trial_dir, start->attempt);
  restoring_[key] = false;
  spdlog::info("Trial {} attempt {}: restoring checkpoint {}", key.first, key.second,
               start->restore_checkpoint_id);
  transfer_->Download(start->restore_checkpoint_id, restore_dir,
                      [this, key, start = *start, config = std::move(config),
                       restore_dir](Result<int64_t> bytes) mutable {
                        if (!EndWait(key)) return;
                        if (!bytes.ok()) {
                          std::error_code rm_ec;
                          fs::remove_all(restore_dir, rm_ec);
                          return FailStart(start, fmt::format("cannot restore checkpoint {}: {}",
                                                              start.restore_checkpoint_id,
                                                              bytes.status().message()));
                        }
                        StartRun(start, std::move(config), restore_dir);
                      });
}

void TrialWorker::StartRun(const proto::StartTrial& start_msg, nlohmann::json config,
                           std::string restore_dir) {
  const proto::StartTrial* start = &start_msg;
  const proto::TrainableDef& def = start->trainable;
  trainable::TrainableDef tdef;
  tdef.command = def.command;
  tdef.builtin = def.builtin;
  tdef.working_dir = def.working_dir;
  tdef.env.assign(def.env.begin(), def.env.end());
  trainable::TrialSetup setup;
  setup.experiment = start->experiment;
  setup.trial_id = start->trial_id;
  setup.attempt = start->attempt;
  setup.config = std::move(config);
  setup.trial_dir = start->trial_dir;
  setup.gpu_ids = start->gpu_ids;
  // Units the resource-manager granted (never negative: it checked them); in whole units.
  if (auto allocated = Resources::FromUnits(start->resources); allocated.ok()) {
    setup.resources = allocated->ToAmounts();
  }
  setup.worker_id = options_.worker_id;
  setup.start_iteration = start->start_iteration;
  setup.restore_dir = std::move(restore_dir);
  setup.clock = &loop_.clock();
  setup.allowed_commands = &allowed_commands_;
  auto made = trainable::MakeTrainable(tdef, std::move(setup));
  if (!made.ok()) return FailStart(*start, made.status().message());
  if (Status s = (*made)->Start(); !s.ok()) {
    // A refused program fails this attempt only: another worker may allow it.
    return FailStart(*start, s.message(),
                     /*start_failed=*/s.code() != StatusCode::kForbidden);
  }

  auto run = std::make_unique<TrialRun>();
  run->trial_id = start->trial_id;
  run->attempt = start->attempt;
  run->trainable = std::move(made).value();
  run->setup.start_iteration = start->start_iteration;
  run->setup.trial_dir = start->trial_dir;
  run->setup.checkpoint_prefix = start->checkpoint_prefix;
  run->setup.resources = start->resources;
  run->setup.gpu_ids = start->gpu_ids;
  run->reports.acked_time_total_s = start->start_time_total_s;
  run->watch.timeout_s = start->report_timeout_s;
  const RunKey key{start->trial_id, start->attempt};
  TrialRun& ref = *run;
  runs_[key] = std::move(run);
  if (ref.watch.timeout_s > 0) ArmReportTimer(ref);
  spdlog::info("Started trial {} attempt {} ({}) in {}", key.first, key.second,
               def.builtin.empty() ? fmt::format("command {}", fmt::join(def.command, " "))
                                   : "builtin " + def.builtin,
               start->trial_dir);
  AfterTrainableEvent(ref);
  EraseIfDone(key);
}

void TrialWorker::HandleDecision(const proto::Decoded& msg) {
  auto d = msg.As<proto::Decision>();
  if (!d.ok()) {
    spdlog::warn("Dropping Decision: {}", d.status().ToString());
    return;
  }
  ApplyDecision(proto::DecisionItem{d->trial_id, d->attempt, d->seq, d->action});
  DrainBackpressured();
}

void TrialWorker::HandleDecisions(const proto::Decoded& msg) {
  auto batch = msg.As<proto::Decisions>();
  if (!batch.ok()) {
    spdlog::warn("Dropping Decisions: {}", batch.status().ToString());
    return;
  }
  for (const proto::DecisionItem& d : batch->decisions) ApplyDecision(d);
  DrainBackpressured();
}

void TrialWorker::ApplyDecision(const proto::DecisionItem& item) {
  const proto::DecisionItem* d = &item;
  TrialRun* run = FindRun(d->trial_id, d->attempt);
  if (run == nullptr) {
    spdlog::info(
        "Dropping Decision for {} attempt {} seq {} because that attempt is not on worker {}",
        d->trial_id, d->attempt, d->seq, options_.worker_id);
    return;
  }
  if (d->seq < 1 || d->seq > run->reports.last_seq) {
    spdlog::warn("Dropping Decision for {} attempt {} because seq {} was never sent (last {})",
                 d->trial_id, d->attempt, d->seq, run->reports.last_seq);
    return;
  }
  auto decided = ParseAction(d->action);
  if (!decided.ok()) {
    spdlog::warn("Dropping Decision for {} attempt {} seq {}: {}", d->trial_id, d->attempt, d->seq,
                 decided.status().message());
    return;
  }
  // pause and checkpoint_and_stop: the trainable saves a checkpoint, then stops.
  const bool save_then_stop = StopsAfterSaving(*decided);
  const Action action = save_then_stop ? Action::kCheckpoint : *decided;
  // The decision acknowledges every result up to its seq.
  TrialRun::Reports& reports = run->reports;
  while (!reports.unacked.empty() && reports.unacked.begin()->first <= d->seq) {
    reports.acked_time_total_s += reports.unacked.begin()->second.time_this_iter_s;
    reports.unacked.erase(reports.unacked.begin());
    --total_unacked_;
  }
  const RunKey key{d->trial_id, d->attempt};
  if (d->seq > reports.answered_seq && run->phase == RunPhase::kRunning) {
    const int64_t answers = d->seq - reports.answered_seq;
    reports.answered_seq = d->seq;
    if (action == Action::kCheckpoint) {
      using Then = TrialRun::CheckpointCapture::Then;
      run->capture = {save_then_stop ? Then::kStop : Then::kContinue,
                      run->setup.start_iteration + d->seq, reports.acked_time_total_s};
    }
    if (action == Action::kStop) {
      BeginStopping(*run, fmt::format("decision {} for seq {}", d->action, d->seq));
    } else {
      for (int64_t i = 0; i < answers && run->trainable->awaiting_decisions() > 0; ++i) {
        if (Status s = run->trainable->SendDecision(action); !s.ok()) {
          spdlog::debug("Trial {} attempt {}: decision not delivered: {}", key.first, key.second,
                        s.message());
        }
      }
    }
    AfterTrainableEvent(*run);
  }
  EraseIfDone(key);
}

void TrialWorker::HandleStopTrial(const proto::Decoded& msg) {
  auto req = msg.As<proto::StopTrialRequest>();
  if (!req.ok()) {
    spdlog::warn("Dropping StopTrialRequest: {}", req.status().ToString());
    return;
  }
  if (auto r = restoring_.find(RunKey{req->trial_id, req->attempt}); r != restoring_.end()) {
    r->second = true;  // cancelled: TrialExited(stopped) once the download ends
    return;
  }
  TrialRun* run = FindRun(req->trial_id, req->attempt);
  if (run == nullptr) {
    spdlog::info(
        "StopTrialRequest for {} attempt {}, which is not on worker {}: answering it has exited",
        req->trial_id, req->attempt, options_.worker_id);
    proto::TrialExited exited;
    exited.trial_id = req->trial_id;
    exited.attempt = req->attempt;
    exited.stopped = true;
    exited.error = fmt::format("not running on worker {}", options_.worker_id);
    SendToScheduler(exited);
    return;
  }
  if (run->has_exited()) {
    SendToScheduler(run->exited);
    return;
  }
  if (run->phase != RunPhase::kRunning) {
    spdlog::info("Dropping StopTrialRequest for {} attempt {} because it is already stopping",
                 req->trial_id, req->attempt);
    return;
  }
  const RunKey key{req->trial_id, req->attempt};
  BeginStopping(*run, "StopTrialRequest");
  AfterTrainableEvent(*run);
  EraseIfDone(key);
}

void TrialWorker::KillStale(TrialRun& run, const std::string& why) {
  total_unacked_ -= static_cast<int64_t>(run.reports.unacked.size());
  run.reports.unacked.clear();
  if (run.has_exited()) {
    run.MoveTo(RunPhase::kStaleExited);
    return;
  }
  spdlog::info("Killing trial {} attempt {} because {}", run.trial_id, run.attempt, why);
  run.MoveTo(RunPhase::kStale);
  run.trainable->Kill();
  AfterTrainableEvent(run);
}

void TrialWorker::BeginStopping(TrialRun& run, const std::string& why) {
  if (run.phase != RunPhase::kRunning) return;
  run.MoveTo(RunPhase::kStopping);
  if (run.trainable->awaiting_decisions() > 0) {
    run.reports.answered_seq = run.reports.last_seq;
    if (Status s = run.trainable->SendDecision(Action::kStop); !s.ok()) {
      spdlog::debug("Trial {} attempt {}: stop not delivered: {}", run.trial_id, run.attempt,
                    s.message());
    }
  }
  spdlog::info("Stopping trial {} attempt {} ({}); killing it if it still runs in {} ms",
               run.trial_id, run.attempt, why, options_.stop_grace_ms);
  const RunKey key{run.trial_id, run.attempt};
  run.kill_timer = loop_.AddTimer(bus::Duration{options_.stop_grace_ms}, [this, key] {
    TrialRun* r = FindRun(key.first, key.second);
    if (r == nullptr) return;
    r->kill_timer = 0;
    if (r->phase != RunPhase::kStopping && r->phase != RunPhase::kStale) return;
    spdlog::warn("Killing trial {} attempt {} because it did not stop within {} ms", key.first,
                 key.second, options_.stop_grace_ms);
    r->trainable->Kill();
    AfterTrainableEvent(*r);
    EraseIfDone(key);
  });
}

void TrialWorker::ArmReportTimer(TrialRun& run) {
  const RunKey key{run.trial_id, run.attempt};
  const auto period = std::chrono::duration_cast<bus::Duration>(
      std::chrono::duration<double>(run.watch.timeout_s / 4));
  run.watch.timer =
      loop_.AddTimer(std::max(period, bus::Duration{1}), [this, key] { CheckReportTimeout(key); });
}

void TrialWorker::CheckReportTimeout(const RunKey& key) {
  TrialRun* run = FindRun(key.first, key.second);
  if (run == nullptr) return;
  TrialRun::ReportWatch& watch = run->watch;
  watch.timer = 0;
  if (run->phase != RunPhase::kRunning || !run->trainable) return;
  // Quiet only while the trainable could report: not while its report waits for a decision.
  const int64_t last_seq = run->reports.last_seq;
  const bool moved =
      last_seq != watch.seq_at_last_check || run->trainable->awaiting_decisions() > 0;
  watch.seq_at_last_check = last_seq;
  watch.quiet_s = moved ? 0 : watch.quiet_s + watch.timeout_s / 4;
  if (watch.quiet_s + 1e-9 < watch.timeout_s) return ArmReportTimer(*run);
  run->failure = fmt::format("reported no result for {:g} s (report_timeout_s {:g}); killed",
                             watch.quiet_s, watch.timeout_s);
  spdlog::info("Killing trial {} attempt {}: {}", key.first, key.second, run->failure);
  run->MoveTo(RunPhase::kTimedOut);
  run->trainable->Kill();
  AfterTrainableEvent(*run);
  EraseIfDone(key);
}

void TrialWorker::OnTrainableEvent(const RunKey& key) {
  TrialRun* run = FindRun(key.first, key.second);
  if (run == nullptr || !run->trainable) return;  // removed earlier in this poll round
  run->trainable->OnReadable();
  AfterTrainableEvent(*run);
  EraseIfDone(key);
}

void TrialWorker::AfterTrainableEvent(TrialRun& run) {
  if (!run.trainable) return;
  trainable::Trainable& t = *run.trainable;
  while (t.has_report()) {
    if (!run.stale() && total_unacked_ >= options_.max_unacked_results) {
      spdlog::warn("Holding reports of trial {} attempt {}: {} results are unacknowledged",
                   run.trial_id, run.attempt, total_unacked_);
      held_.insert(RunKey{run.trial_id, run.attempt});
      break;
    }
    trainable::Report report = *t.TakeReport();
    if (run.capture.asked()) {
      // The trainable saved before this report: the checkpoint is complete.
      const bool stop = run.capture.then == TrialRun::CheckpointCapture::Then::kStop;
      CaptureCheckpoint(run);
      if (stop) {  // paused or stopped at the checkpointed iteration: this report is not kept
        BeginStopping(run, "checkpoint saved before stopping");
        if (t.awaiting_decisions() > 0) (void)t.SendDecision(Action::kStop);
        continue;
      }
    }
    proto::ResultItem result;
    result.trial_id = run.trial_id;
    result.attempt = run.attempt;
    result.seq = ++run.reports.last_seq;
    // As msgpack (keys sorted, numbers as they are), with Ray Tune's auto-filled keys that only
    // the worker knows (they replace reported ones): the scheduler takes the entries without
    // parsing text.
    const int64_t pid = t.process_id();
    AppendReportMetrics(report.metrics, hostname_, node_ip_, pid > 0 ? pid : pid_,
                        result.metrics.bytes);
    result.time_this_iter_s = report.time_this_iter_s;
    if (!run.stale()) {
      ++total_unacked_;
      const proto::ResultItem& kept = run.reports.unacked[result.seq] = std::move(result);
      QueueResult(kept);
    }
    if (run.phase != RunPhase::kRunning) {  // stopping: answer "stop" right here
      run.reports.answered_seq = run.reports.last_seq;
      if (t.awaiting_decisions() > 0) (void)t.SendDecision(Action::kStop);
    }
  }
  if (t.exited()) {
    OnTrainableExited(run);
  } else {
    SyncFds(run);
  }
}

void TrialWorker::OnTrainableExited(TrialRun& run) {
  if (run.kill_timer != 0) loop_.CancelTimer(run.kill_timer);
  run.kill_timer = 0;
  if (run.watch.timer != 0) loop_.CancelTimer(run.watch.timer);
  run.watch.timer = 0;
  for (int fd : run.fds) loop_.RemoveFd(fd);
  run.fds.clear();
  const trainable::ExitStatus& es = run.trainable->exit_status();
  proto::TrialExited& exited = run.exited;
  exited.trial_id = run.trial_id;
  exited.attempt = run.attempt;
  exited.stopped = run.told_to_stop();
  exited.ok = run.failure.empty() && (es.ok || (exited.stopped && es.killed));
  exited.exit_code = es.exit_code;
  exited.error = exited.ok ? "" : run.failure.empty() ? es.error : run.failure;
  exited.stderr_tail = exited.ok ? "" : es.stderr_tail;
  exited.last_seq = run.reports.last_seq;
  run.trainable.reset();
  const bool stale = run.stale();
  if (run.capture.asked() && !stale) CaptureCheckpoint(run);
  RemoveScratchDirs(run);
  if (stale) {
    run.MoveTo(RunPhase::kStaleExited);
    if (run.uploads.count == 0)
      spdlog::info("Stale trial {} attempt {} exited", run.trial_id, run.attempt);
    return;
  }
  if (run.uploads.count > 0) {
    run.MoveTo(RunPhase::kExitWaits);  // sent once the checkpoint is stored (CheckpointSaved first)
    return;
  }
  run.MoveTo(RunPhase::kExited);
  if (exited.ok) {
    spdlog::info("Trial {} attempt {} exited ok{} after {} results", run.trial_id, run.attempt,
                 exited.stopped ? " (stopped)" : "", exited.last_seq);
  } else {
    // The scheduler logs the failure for users (with the stderr tail and what happens next).
    spdlog::info("Trial {} attempt {} failed: {}", run.trial_id, run.attempt, exited.error);
  }
  SendToScheduler(exited);
}

std::string TrialWorker::RestoreDir(const std::string& trial_dir, int64_t attempt) {
  return fmt::format("{}/restore_a{}", trial_dir, attempt);
}

void TrialWorker::RemoveRestoreDirs(const std::string& trial_dir, int64_t through_attempt) {
  std::error_code ec;
  for (fs::directory_iterator it(trial_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    int64_t attempt = 0;
    if (name.rfind("restore_a", 0) != 0 ||
        std::from_chars(name.data() + 9, name.data() + name.size(), attempt).ec != std::errc() ||
        attempt > through_attempt) {
      continue;
    }
    std::error_code rm_ec;
    fs::remove_all(it->path(), rm_ec);
  }
}

void TrialWorker::RemoveScratchDirs(const TrialRun& run) {
  std::error_code ec;
  fs::remove_all(RestoreDir(run.setup.trial_dir, run.attempt), ec);
  for (const auto& [key, other] : runs_) {
    if (key.first == run.trial_id && other.get() != &run && other->trainable)
      return;  // it may save there
  }
  const fs::path tmp = fs::path(run.setup.trial_dir) / "checkpoint_tmp";
  if (fs::is_directory(tmp, ec) && fs::is_empty(tmp, ec) && !ec) fs::remove(tmp, ec);
}

void TrialWorker::CaptureCheckpoint(TrialRun& run) {
  const TrialRun::CheckpointCapture capture = std::exchange(run.capture, {});
  const int64_t iteration = capture.iteration;
  const fs::path tmp = fs::path(run.setup.trial_dir) / "checkpoint_tmp";
  std::error_code ec;
  if (!fs::exists(tmp, ec) || fs::is_empty(tmp, ec)) {
    spdlog::warn(
        "Trial {} attempt {} was asked for a checkpoint at iteration {} but saved nothing in {}",
        run.trial_id, run.attempt, iteration, tmp.string());
    return;
  }
  // Move it aside so the trainable can save the next one while this one uploads.
  const fs::path saved =
      fs::path(run.setup.trial_dir) / fmt::format("checkpoint_{:08d}", iteration);
  fs::remove_all(saved, ec);
  fs::rename(tmp, saved, ec);
  if (ec) {
    spdlog::warn("Trial {}: cannot move checkpoint {}: {}", run.trial_id, tmp.string(),
                 ec.message());
    return;
  }
  fs::create_directories(tmp, ec);
  const std::string id =
      fmt::format("{}{:08d}-a{}", run.setup.checkpoint_prefix, iteration, run.attempt);
  nlohmann::json meta = {{"trial_id", run.trial_id},
                         {"attempt", run.attempt},
                         {"training_iteration", iteration},
                         {"time_total_s", capture.time_total_s},
                         {"worker_id", options_.worker_id}};
  if (++run.uploads.count > 1) {
    run.uploads.queued.push_back({saved.string(), id, iteration, std::move(meta)});
    return;
  }
  UploadCheckpoint(RunKey{run.trial_id, run.attempt}, saved.string(), id, iteration,
                   std::move(meta), kUploadTries);
}

void TrialWorker::UploadCheckpoint(const RunKey& key, const std::string& saved,
                                   const std::string& id, int64_t iteration,
                                   nlohmann::json metadata, int tries_left) {
  transfer_->Upload(
      saved, id, metadata,
      [this, key, id, iteration, saved, metadata, tries_left](Result<int64_t> bytes) mutable {
        if (!bytes.ok() && bytes.status().code() == StatusCode::kUnavailable && tries_left > 1) {
          spdlog::warn(
              "Trial {} attempt {}: checkpoint {} not stored yet ({}); trying again in 1 s",
              key.first, key.second, id, bytes.status().message());
          loop_.AddTimer(bus::Duration{1000}, [this, key, id, iteration, saved, metadata,
                                               tries_left]() mutable {
            UploadCheckpoint(key, saved, id, iteration, std::move(metadata), tries_left - 1);
          });
          return;
        }
        const bool retried = tries_left < kUploadTries;
        if (retried && !bytes.ok() && bytes.status().code() == StatusCode::kFailedPrecondition &&
            bytes.status().message().find("already committed") != std::string::npos) {
          // The store committed an earlier try and died before it answered: the checkpoint is
          // there.
          int64_t size = 0;
          std::error_code walk_ec;
          // increment(ec), not a range-for: its operator++ throws on an unreadable subfolder.
          for (fs::recursive_directory_iterator it(saved, walk_ec), end; !walk_ec && it != end;
               it.increment(walk_ec)) {
            if (it->is_regular_file(walk_ec)) size += int64_t(it->file_size(walk_ec));
          }
          bytes = size;
        }
        std::error_code rm_ec;
        fs::remove_all(saved, rm_ec);
        if (bytes.ok()) {
          proto::CheckpointSaved msg;
          msg.trial_id = key.first;
          msg.attempt = key.second;
          msg.checkpoint_id = id;
          msg.training_iteration = iteration;
          msg.size_bytes = *bytes;
          spdlog::info("Trial {} attempt {}: checkpoint {} stored ({} bytes)", key.first,
                       key.second, id, *bytes);
          SendToScheduler(msg);
        } else {
          // The trainable runs on; the scheduler notes the refusal on the trial and applies the
          // experiment's checkpoint_failure.
          proto::CheckpointFailed msg;
          msg.trial_id = key.first;
          msg.attempt = key.second;
          msg.checkpoint_id = id;
          msg.training_iteration = iteration;
          msg.error = bytes.status().ToString();
          spdlog::warn("Trial {} attempt {}: checkpoint {} was not stored: {}", key.first,
                       key.second, id, msg.error);
          SendToScheduler(msg);
        }
        TrialRun* r = FindRun(key.first, key.second);
        if (r == nullptr) return;
        --r->uploads.count;
        if (!r->uploads.queued.empty()) {
          TrialRun::Uploads::Queued next = std::move(r->uploads.queued.front());
          r->uploads.queued.pop_front();
          UploadCheckpoint(key, next.saved, next.id, next.iteration, std::move(next.metadata),
                           kUploadTries);
        }
        if (r->uploads.count == 0 && r->phase == RunPhase::kExitWaits) {
          r->MoveTo(RunPhase::kExited);
          SendToScheduler(r->exited);
        }
        EraseIfDone(key);
      });
}

void TrialWorker::SyncFds(TrialRun& run) {
  std::vector<int> wanted = run.trainable ? run.trainable->fds() : std::vector<int>{};
  if (wanted == run.fds) return;
  for (int fd : run.fds) loop_.RemoveFd(fd);
  const RunKey key{run.trial_id, run.attempt};
  for (int fd : wanted) loop_.AddFd(fd, [this, key] { OnTrainableEvent(key); });
  run.fds = std::move(wanted);
}

void TrialWorker::DrainBackpressured() {
  while (!held_.empty() && total_unacked_ < options_.max_unacked_results) {
    const RunKey key = *held_.begin();
    held_.erase(held_.begin());
    if (TrialRun* run = FindRun(key.first, key.second))
      AfterTrainableEvent(*run);  // may hold it again
    EraseIfDone(key);
  }
}

void TrialWorker::EraseIfDone(const RunKey& key) {
  auto it = runs_.find(key);
  if (it == runs_.end()) return;
  TrialRun& run = *it->second;
  const bool exited = run.phase == RunPhase::kExited || run.phase == RunPhase::kStaleExited;
  if (exited && run.reports.unacked.empty() && run.uploads.count == 0) runs_.erase(it);
}

}  // namespace tunebus
