// WorkerService's handlers, one per message type of trial-workers (proto/worker.hpp).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "libs/tune/runner_queries.hpp"
#include "proto/worker.hpp"
#include "services/scheduler/core/experiment.hpp"
#include "services/scheduler/core/experiment_registry.hpp"
#include "services/scheduler/workers/worker_service.hpp"

namespace tunebus {

namespace {

constexpr size_t kFailureLogLines = 10;  // stderr lines a failure's log line shows

// The last `n` lines of a trainable's stderr tail, each on its own indented line ("" if none).
std::string StderrLastLines(const std::string& tail, size_t n) {
  std::vector<std::string_view> lines;
  std::string_view rest(tail);
  while (!rest.empty()) {
    const size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    if (!line.empty()) lines.push_back(line);
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  std::string out;
  for (size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); ++i) {
    out.append("\n    | ").append(lines[i]);
  }
  return out;
}

}  // namespace

Status WorkerService::HandleRegisterWorker(bus::Incoming& in, const proto::Decoded& d) {
  const std::string peer = in.peer();
  auto msg = d.As<proto::RegisterWorker>();
  if (!msg.ok()) return msg.status();
  proto::RegisterWorkerAck ack;
  ack.id = d.id();
  registry_.Register(peer);
  // Each experiment hears of every registration (its trials on `peer` that are not reported are
  // gone); a reported trial of no experiment here must be killed.
  std::map<Experiment*, std::vector<proto::RunningTrial>> reported;
  for (proto::RunningTrial& r : msg->running) {
    Experiment* e = experiments_.ForTrial(r.trial_id);
    if (e == nullptr) {
      ack.stale_trials.push_back(r.trial_id);
    } else {
      reported[e].push_back(std::move(r));
    }
  }
  for (auto& e : experiments_.experiments())
    e->OnWorkerRegistered(peer, reported[e.get()], ack.stale_trials);
  spdlog::info("Worker {} ({}) connected, running {} trial(s)", peer, msg->hostname,
               msg->running.size());
  dispatcher_.Reply(in, ack);
  return Status::Ok();
}

Status WorkerService::HandleReportResult(bus::Incoming& in, const proto::Decoded& d) {
  const std::string peer = in.peer();
  auto msg = d.As<proto::ReportResult>();
  if (!msg.ok()) return msg.status();
  HandleResult(peer, proto::ResultItem{std::move(msg->trial_id), msg->attempt, msg->seq,
                                       std::move(msg->metrics_json), msg->time_this_iter_s,
                                       std::move(msg->metrics)});
  return Status::Ok();
}

Status WorkerService::HandleReportResults(bus::Incoming& in, const proto::Decoded& d) {
  const std::string peer = in.peer();
  auto msg = d.As<proto::ReportResults>();
  if (!msg.ok()) return msg.status();
  results_received_ += msg->results.size();
  for (proto::ResultItem& r : msg->results) HandleResult(peer, std::move(r));
  return Status::Ok();
}

Status WorkerService::HandleWorkerHeartbeat(bus::Incoming&, const proto::Decoded&) {
  // Liveness is the resource-manager's job; the dispatcher's table noted the worker as seen.
  return Status::Ok();
}

void WorkerService::HandleResult(const std::string& peer, proto::ResultItem r) {
  Experiment* e = experiments_.ForTrial(r.trial_id);
  if (e == nullptr) {
    spdlog::warn("Dropping result of {} from {} because no experiment here holds it", r.trial_id,
                 peer);
    return;
  }
  const bool text = !r.metrics_json.empty();  // a client that sends JSON text (PROTOCOL.md)
  auto metrics = text ? TrainingResult::FromJsonText(r.metrics_json)
                 : r.metrics.decoded.type == msgpack::type::MAP
                     ? TrainingResult::FromMsgpack(r.metrics.decoded)
                     : TrainingResult::FromMsgpack(r.metrics.bytes);
  Status st = metrics.ok() ? e->runner().OnResult(r.trial_id, r.attempt, r.seq, std::move(*metrics),
                                                  r.time_this_iter_s)
                           : Status::InvalidArgument((text ? "metrics_json " : "metrics ") +
                                                     metrics.status().message());
  if (st.ok()) return;
  spdlog::warn("Dropping result {} of {} attempt {} from {} because {}", r.seq, r.trial_id,
               r.attempt, peer, st.message());
  const Trial* t = e->runner().FindTrial(r.trial_id);
  if (t && r.attempt < t->attempt) {
    // A late result of a dead attempt: make sure that trainable stops.
    proto::StopTrialRequest stop;
    stop.trial_id = r.trial_id;
    stop.attempt = r.attempt;
    outbox_.Send(peer, proto::Encode(stop));
  }
}

Status WorkerService::HandleTrialExited(bus::Incoming& in, const proto::Decoded& d) {
  const std::string peer = in.peer();
  auto msg = d.As<proto::TrialExited>();
  if (!msg.ok()) return msg.status();
  Experiment* e = experiments_.ForTrial(msg->trial_id);
  if (e == nullptr) return Status::Ok();
  const Trial* t = e->runner().FindTrial(msg->trial_id);
  if (t == nullptr || t->attempt != msg->attempt) return Status::Ok();
  if (msg->worker_shutdown && !msg->stopped) {
    if (t->status != TrialStatus::kRunning) return Status::Ok();  // it had already finished
    spdlog::warn("Trial {} attempt {}: worker {} shut down; requeueing it", msg->trial_id,
                 msg->attempt, peer);
    e->runner().RequeueLost(msg->trial_id, msg->error);
    return Status::Ok();
  }
  const bool ok = msg->ok || msg->stopped;
  const bool failed = !ok && t->status == TrialStatus::kRunning;
  if (failed) {
    std::string text = msg->error;
    if (!msg->stderr_tail.empty()) text += "\n--- stderr (tail) ---\n" + msg->stderr_tail;
    e->recorder().WriteErrorFile(*t, text);
  }
  e->runner().OnTrialExited(msg->trial_id, msg->attempt, ok, msg->error, msg->start_failed);
  if (failed) LogTrialFailure(*e, *t, peer, *msg);
  return Status::Ok();
}

void WorkerService::LogTrialFailure(const Experiment& e, const Trial& t, const std::string& worker,
                                    const proto::TrialExited& exited) const {
  const std::string then =
      t.status == TrialStatus::kError
          ? fmt::format("ERROR, see {}/{}/error.txt", e.experiment_dir(), t.DirName())
          : fmt::format(
                "{}, requeued (failure {} of max_failures {})", TrialStatusName(t.status),
                t.num_failures,
                e.spec().max_failures < 0 ? "unlimited" : std::to_string(e.spec().max_failures));
  spdlog::warn("Trial {} attempt {} failed on {}: {}; {}{}", exited.trial_id, exited.attempt,
               worker, exited.error, then, StderrLastLines(exited.stderr_tail, kFailureLogLines));
}

Status WorkerService::HandleCheckpointSaved(bus::Incoming& in, const proto::Decoded& d) {
  const std::string peer = in.peer();
  auto msg = d.As<proto::CheckpointSaved>();
  if (!msg.ok()) return msg.status();
  Experiment* e = experiments_.ForTrial(msg->trial_id);
  if (e == nullptr) {
    spdlog::warn(
        "Checkpoint {} from {} is of trial {}, of no experiment here; it stays in the "
        "store",
        msg->checkpoint_id, peer, msg->trial_id);
    return Status::Ok();
  }
  Status s = e->runner().OnCheckpointSaved(msg->trial_id, msg->attempt, msg->checkpoint_id,
                                           msg->training_iteration, msg->size_bytes);
  if (s.ok()) return Status::Ok();
  if (ReferencedCheckpoints(e->runner().trials()).contains(msg->checkpoint_id)) {
    spdlog::debug("Checkpoint {} from {} is already kept (adopted at the takeover)",
                  msg->checkpoint_id, peer);
    return Status::Ok();
  }
  // No trial will ever restore it: delete it rather than leak it in the store.
  spdlog::warn("Deleting checkpoint {} from {} because {}", msg->checkpoint_id, peer, s.message());
  e->executor().DeleteCheckpoint(msg->checkpoint_id);
  return Status::Ok();
}

Status WorkerService::HandleCheckpointFailed(bus::Incoming& in, const proto::Decoded& d) {
  const std::string peer = in.peer();
  auto msg = d.As<proto::CheckpointFailed>();
  if (!msg.ok()) return msg.status();
  Experiment* e = experiments_.ForTrial(msg->trial_id);
  if (e == nullptr) {
    spdlog::warn("Checkpoint {} from {} was not stored ({}); no experiment here holds trial {}",
                 msg->checkpoint_id, peer, msg->error, msg->trial_id);
    return Status::Ok();
  }
  e->OnCheckpointFailed(peer, *msg);
  return Status::Ok();
}

}  // namespace tunebus
