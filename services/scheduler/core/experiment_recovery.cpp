// Experiment's recovery work (DESIGN.md "Journal and recovery"): snapshots that bound replay,
// and what a takeover does after the replay — complete the result files from the journal, give
// back allocations nobody owns, sweep the stored checkpoints, requeue trials no worker reported.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cassert>
#include <functional>
#include <memory>
#include <set>

#include "libs/core/fields.hpp"
#include "libs/journal/records.hpp"
#include "libs/journal/snapshot.hpp"
#include "libs/tune/runner_queries.hpp"
#include "proto/resources.hpp"
#include "proto/store.hpp"
#include "services/scheduler/core/experiment.hpp"
#include "services/scheduler/results/result_files_repair.hpp"

namespace tunebus {

using nlohmann::json;

void Experiment::ReconcileAllocations() {
  ctx_->rm.Request(proto::GetClusterView{}, [this](Result<proto::Decoded> reply) {
    auto view =
        reply.ok() ? reply->As<proto::ClusterView>() : Result<proto::ClusterView>(reply.status());
    if (!view.ok()) {
      spdlog::warn("Cannot reconcile allocations: {}", view.status().ToString());
      return;
    }
    const std::string prefix = identity_.experiment_id + "_";
    for (const proto::NodeView& node : view->nodes) {
      for (const std::string& held : node.trials) {
        const auto slash = held.rfind('/');
        if (held.rfind(prefix, 0) != 0 || slash == std::string::npos) continue;
        const std::string trial_id = held.substr(0, slash);
        const int64_t attempt = std::strtoll(held.c_str() + slash + 1, nullptr, 10);
        if (HoldsAllocation(*runner_, trial_id, attempt, node.worker_id)) continue;
        spdlog::info("Releasing {} on {}: no running attempt owns it after the restart", held,
                     node.worker_id);
        proto::Release release;
        release.trial_id = trial_id;
        release.attempt = attempt;
        ctx_->rm.Request(release, [](Result<proto::Decoded>) {});
        // Sent outside the executor's budget: its next placements may use the freed room.
        executor_->Unblock();
      }
    }
  });
}

void Experiment::OnWorkerRegistered(const std::string& worker,
                                    const std::vector<proto::RunningTrial>& running,
                                    std::vector<std::string>& stale) {
  std::set<std::string> reported, may_run;
  for (const proto::RunningTrial& r : running) {
    if (!runner_->AttemptMayRun(r.trial_id, r.attempt, worker)) {
      stale.push_back(r.trial_id);
      continue;
    }
    // One still saving the checkpoint its decision asked for goes on to store it and exit.
    may_run.insert(r.trial_id);
    if (runner_->FindTrial(r.trial_id)->status == TrialStatus::kRunning)
      reported.insert(r.trial_id);
  }
  // One that was saving here and is not reported died with the worker's previous process.
  runner_->EndSavingGoneFrom(worker, may_run, fmt::format("worker {} restarted", worker));
  std::vector<std::string> lost;
  for (const Trial& t : runner_->trials()) {
    if (t.status != TrialStatus::kRunning || t.worker_id != worker) continue;
    if (executor_->StartUnsent(t.trial_id, t.attempt)) continue;  // its StartTrial follows
    if (!reported.contains(t.trial_id)) {
      lost.push_back(t.trial_id);
    } else if (awaiting_reattach_.contains(t.trial_id)) {
      spdlog::info("Reattached trial {} attempt {} on {}", t.trial_id, t.attempt, worker);
    }
  }
  for (const std::string& trial_id : lost) {
    spdlog::warn("Worker {} registered without trial {}; requeueing it", worker, trial_id);
    runner_->RequeueLost(trial_id, fmt::format("worker {} no longer runs it", worker));
  }
  // Reported or gone: no longer awaiting reattachment.
  for (const std::string& trial_id : may_run) awaiting_reattach_.erase(trial_id);
  for (const std::string& trial_id : lost) awaiting_reattach_.erase(trial_id);
}

void Experiment::RepairResultFiles(JournalReader& reader, uint64_t last_seq,
                                   std::function<void()> done) {
  const SteadyTime t0 = clock_.Now();
  auto repair = std::make_shared<ResultFilesRepair>(experiment_dir_, recorder_->files());
  const auto finish = [this, repair, t0, done = std::move(done)](Status read) {
    if (!read.ok())
      spdlog::error("Result files of {} stay incomplete: {}", spec_.name, read.ToString());
    repair->Finish();
    const ResultFilesRepair::Summary& s = repair->summary();
    spdlog::info(
        "Result files of {} match the journal: {} trials, {} rows were missing ({} written), {} "
        "rows beyond the journal and {} torn lines cut, {} params.json written ({:.3f} s)",
        spec_.name, s.trials, s.missing_rows, s.rows_written, s.surplus_rows, s.torn_lines,
        s.params_written, clock_.SecondsSince(t0));
    done();
  };
  if (repair->Plan(runner_->trials()) == 0) return finish(Status::Ok());
  reader.ForEachRecord(
      journal_name_, 1, last_seq,
      [this, repair](const json& r) {
        using journal::RecordKind;
        const std::optional<RecordKind> kind = journal::KindOf(r);
        const bool result = kind == RecordKind::kResult;
        if (!result && kind != RecordKind::kTrialAdded && kind != RecordKind::kTrialUpdated) return;
        const Trial* t = runner_->FindTrial(r.value("trial_id", ""));
        if (t == nullptr) return;
        if (result && r.contains("result")) repair->OnResultRecord(*t, r);
        if (!result && r.contains("config")) repair->OnConfigRecord(*t, r["config"]);
      },
      finish);
}

void Experiment::AdoptStoredCheckpoints() {
  proto::CheckpointList list;
  list.prefix = journal_name_ + "/";
  ctx_->store.Request(list, [this](Result<proto::Decoded> reply) {
    auto listed = reply.ok() ? reply->As<proto::CheckpointListReply>()
                             : Result<proto::CheckpointListReply>(reply.status());
    if (!listed.ok()) {
      spdlog::warn("Cannot sweep the checkpoints of {}: {}", journal_name_,
                   listed.status().ToString());
      return;
    }
    const std::string snapshots = journal::SnapshotPrefix(journal_name_);
    int64_t kept = 0, adopted = 0, deleted = 0;
    const std::unordered_set<std::string> referenced = ReferencedCheckpoints(runner_->trials());
    for (const proto::CheckpointInfo& info : listed->checkpoints) {
      const std::string& id = info.checkpoint_id;
      if (id.rfind(snapshots, 0) == 0) continue;
      if (referenced.contains(id)) {
        ++kept;
        continue;
      }
      const json meta = json::parse(info.metadata_json, nullptr, /*allow_exceptions=*/false);
      Status s = Status::InvalidArgument("its metadata names no trial, attempt and iteration");
      if (meta.is_object() && meta.value("trial_id", json()).is_string() &&
          meta.value("attempt", json()).is_number_integer() &&
          meta.value("training_iteration", json()).is_number_integer()) {
        s = runner_->OnCheckpointSaved(
            meta["trial_id"].get<std::string>(), fields::GetInteger<int64_t>(meta["attempt"]), id,
            fields::GetInteger<int64_t>(meta["training_iteration"]), int64_t(info.size_bytes));
      }
      if (s.ok()) {
        ++adopted;
        spdlog::info("Adopted checkpoint {}: the journal holds its request", id);
        continue;
      }
      ++deleted;
      spdlog::info("Deleting checkpoint {} because {}", id, s.message());
      executor_->DeleteCheckpoint(id);
    }
    spdlog::info("Checkpoints of {} after the takeover: {} kept, {} adopted, {} orphans deleted",
                 journal_name_, kept, adopted, deleted);
  });
}

void Experiment::RequeueUnattached() {
  for (const std::string& trial_id : awaiting_reattach_) {
    const Trial* t = runner_->FindTrial(trial_id);
    if (t != nullptr && t->status == TrialStatus::kTerminated) {
      if (runner_->EndSavingLost(trial_id,
                                 "not reported by its worker after the scheduler restarted")) {
        spdlog::warn("Trial {} was storing its end checkpoint; no worker reported it", trial_id);
      }
      continue;
    }
    if (t == nullptr || t->status != TrialStatus::kRunning) continue;
    spdlog::warn(
        "Trial {} was running on {} but no worker reported it after the restart; requeueing it",
        trial_id, t->worker_id);
    runner_->RequeueLost(
        trial_id,
        fmt::format("not reported by worker {} after the scheduler restarted", t->worker_id));
  }
  awaiting_reattach_.clear();
}

void Experiment::MaybeSnapshot(int64_t every_records) {
  const uint64_t seq = journal_base_ + journal_->appended();
  if (snapshot_in_flight_ || seq < last_snapshot_seq_ + uint64_t(every_records)) return;
  journal::ReplayedExperiment state = SnapshotState();
  state.scheduler_state = runner_->trial_scheduler().SaveState();
  state.records = seq;
  auto bytes = std::make_shared<std::string>(journal::EncodeSnapshot(state, runner_->trials()));
  const std::string id = journal::SnapshotId(journal_name_, seq);
  snapshot_in_flight_ = true;
  // Stored once every record it covers is durable; chunks go one after another.
  journal_->AfterDurable([this, bytes, id, seq] {
    auto put = std::make_shared<std::function<void(uint32_t)>>();
    *put = [this, bytes, id, seq, put](uint32_t chunk) {
      proto::CheckpointPut req;
      const size_t off = size_t(chunk) * proto::kCheckpointChunkBytes;
      const size_t n = std::min(proto::kCheckpointChunkBytes, bytes->size() - off);
      req.checkpoint_id = id;
      req.chunk_index = chunk;
      req.data.assign(bytes->begin() + off, bytes->begin() + off + n);
      req.last = off + n >= bytes->size();
      if (req.last) req.metadata_json = json{{"seq", seq}, {"kind", "journal_snapshot"}}.dump();
      ctx_->store.Request(
          req, [this, id, seq, put, chunk, last = req.last](Result<proto::Decoded> reply) {
            if (!reply.ok() || reply->type() != proto::CheckpointPutAck::kType) {
              spdlog::warn("Snapshot {} was not stored ({}); the next one is tried later", id,
                           reply.ok() ? reply->type() : reply.status().ToString());
              snapshot_in_flight_ = false;
              *put = nullptr;  // `put` holds itself (and the snapshot's bytes): break the cycle
              return;
            }
            if (!last) return (*put)(chunk + 1);
            *put = nullptr;
            spdlog::info("Snapshot {} stored: a resume replays from seq {}", id, seq + 1);
            if (!last_snapshot_id_.empty()) {
              proto::CheckpointDelete del;
              del.checkpoint_id = last_snapshot_id_;
              ctx_->store.Request(del, [](Result<proto::Decoded>) {});
            }
            last_snapshot_id_ = id;
            last_snapshot_seq_ = seq;
            snapshot_in_flight_ = false;
          });
    };
    (*put)(0);
  });
}

journal::ReplayedExperiment Experiment::SnapshotState() const {
  journal::ReplayedExperiment state;
  state.identity = identity_;
  state.spec_yaml = spec_.source_yaml;
  if (weight_ != spec_.weight) state.weight = weight_;
  state.preempted = preempted_;
  state.searcher_state = runner_->searcher().SaveState();
  state.last_action = LastActions(*runner_);
  return state;
}

journal::ReplayedExperiment Experiment::EndedState() const {
  assert(Quiet());
  journal::ReplayedExperiment state = SnapshotState();
  state.ended_status = runner_->status();
  state.ended_reason = runner_->end_reason();
  state.records = journal_->store_seq();
  return state;
}

}  // namespace tunebus
