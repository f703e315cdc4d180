// Scheduler resume (DESIGN.md "Journal and recovery"): at start, read the experiments' journals
// from the checkpoint-store, replay the newest unfinished one into a TrialRunner, reattach the
// trials workers still run, requeue the others, and give back allocations nobody owns.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include "libs/journal/records.hpp"
#include "libs/journal/replay.hpp"
#include "libs/journal/snapshot.hpp"
#include "proto/resources.hpp"
#include "proto/store.hpp"
#include "services/scheduler/experiment.hpp"
#include "services/scheduler/journal_reader.hpp"
#include "services/scheduler/result_files_repair.hpp"

namespace tunebus {

using nlohmann::json;

namespace {

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

Status Scheduler::ResumeFromJournals() {
  if (!options_.resume) return Status::Ok();
  JournalReader reader(ctx_, options_.store_endpoint,
                       std::chrono::milliseconds(options_.resume_timeout_ms));
  auto journals = reader.List();
  if (!journals.ok()) return journals.status();
  // The newest unfinished experiment (by submission time) is resumed.
  const JournalSummary* newest = nullptr;
  for (const JournalSummary& j : *journals) {
    if (j.ended) continue;
    if (newest == nullptr || j.submitted_at_s > newest->submitted_at_s) newest = &j;
  }
  if (newest == nullptr) return Status::Ok();
  uint64_t last_seq = newest->last_seq;
  auto replayed = reader.ReplayToResume(newest->journal, &last_seq);
  if (!replayed.ok()) return replayed.status();
  return ResumeExperiment(reader, newest->journal, std::move(*replayed), last_seq);
}

Status Scheduler::ResumeExperiment(JournalReader& reader, const std::string& journal_name,
                                   journal::ReplayedExperiment replayed, uint64_t store_last_seq) {
  const auto t0 = bus::Clock::now();
  auto spec = ParseExperimentYaml(replayed.spec_yaml, replayed.base_dir, replayed.source_name);
  if (!spec.ok()) return spec.status();
  auto built = BuildExperiment(std::move(*spec), replayed.experiment_id, replayed.seed,
                               replayed.restore_from);
  if (!built.ok()) return built.status();
  Experiment* e = *built;
  e->submitted_at_s = replayed.submitted_at_s;
  e->base_dir = replayed.base_dir;
  e->source_name = replayed.source_name;
  e->seed = replayed.seed;
  e->journal_base = store_last_seq;
  // The next snapshot is due snapshot_every_records after the one this resume started from, so
  // replay stays bounded even when the scheduler dies more often than that.
  e->last_snapshot_seq = replayed.snapshot_records;
  if (replayed.snapshot_records > 0)
    e->last_snapshot_id = journal::SnapshotId(journal_name, replayed.snapshot_records);
  e->journal->set_store_seq(store_last_seq);
  if (e->journal_name != journal_name) {
    return Status::Corruption(
        fmt::format("journal {} holds experiment {}", journal_name, e->journal_name));
  }
  for (const Trial& t : replayed.trials) {
    if (t.status == TrialStatus::kRunning) e->awaiting_reattach.insert(t.trial_id);
  }
  const size_t trials = replayed.trials.size();
  if (Status s = e->runner->Restore(std::move(replayed.trials), replayed.searcher_state,
                                    replayed.last_action, replayed.submitted_at_s,
                                    replayed.ended_status.value_or(ExperimentStatus::kRunning),
                                    replayed.ended_reason);
      !s.ok()) {
    return s;
  }
  if (Status s =
          e->runner->RestoreTrialScheduler(replayed.scheduler_state, replayed.scheduler_deltas);
      !s.ok()) {
    return s;
  }
  if (!e->runner->IsFinished()) {
    e->journal->Append(journal::ExperimentResumed(WallSeconds(), RerunMode::kNone));
    state_ = State::kRunning;
  }
  spdlog::info(
      "Resumed experiment {} from journal {}: {} records ({} from a snapshot), {} trials, {} "
      "running to "
      "reattach ({:.3f} s)",
      e->spec.name, journal_name, replayed.records, replayed.snapshot_records, trials,
      e->awaiting_reattach.size(), std::chrono::duration<double>(bus::Clock::now() - t0).count());
  RepairResultFiles(reader, *e, store_last_seq);
  e->recorder->WriteStateFile();
  ReconcileAllocations(*e);
  AdoptStoredCheckpoints(*e);
  loop_.AddTimer(bus::Duration{options_.reattach_grace_ms}, [this, e] { RequeueUnattached(*e); });
  return Status::Ok();
}

// Allocations of this experiment's trials that no RUNNING attempt owns (the scheduler died
// between a grant and its journal record, or while a trial left RUNNING) are given back.
void Scheduler::ReconcileAllocations(Experiment& e) {
  rm_->Request(proto::GetClusterView{}, [this, &e](Result<proto::Decoded> reply) {
    auto view =
        reply.ok() ? reply->As<proto::ClusterView>() : Result<proto::ClusterView>(reply.status());
    if (!view.ok()) {
      spdlog::warn("Cannot reconcile allocations: {}", view.status().ToString());
      return;
    }
    const std::string prefix = e.experiment_id + "_";
    for (const proto::NodeView& node : view->nodes) {
      for (const std::string& held : node.trials) {
        const auto slash = held.rfind('/');
        if (held.rfind(prefix, 0) != 0 || slash == std::string::npos) continue;
        const std::string trial_id = held.substr(0, slash);
        const int64_t attempt = std::strtoll(held.c_str() + slash + 1, nullptr, 10);
        const Trial* t = e.runner->FindTrial(trial_id);
        const bool owned = t && t->status == TrialStatus::kRunning && t->attempt == attempt &&
                           t->worker_id == node.worker_id;
        if (owned) continue;
        spdlog::info("Releasing {} on {}: no running attempt owns it after the restart", held,
                     node.worker_id);
        proto::Release release;
        release.trial_id = trial_id;
        release.attempt = attempt;
        rm_->Request(release, [](Result<proto::Decoded>) {});
        // Sent outside the executor's budget: its next placements may use the freed room.
        e.executor->Unblock();
      }
    }
  });
}

void Scheduler::RepairResultFiles(JournalReader& reader, Experiment& e, uint64_t last_seq) {
  const auto t0 = bus::Clock::now();
  ResultFilesRepair repair(e.experiment_dir, e.recorder->files());
  if (repair.Plan(e.runner->trials()) > 0) {
    Status read = reader.ForEachRecord(e.journal_name, 1, last_seq, [&](const json& r) {
      const std::string kind = r.value("kind", "");
      if (kind != "result" && kind != "trial_added" && kind != "trial_updated") return;
      const Trial* t = e.runner->FindTrial(r.value("trial_id", ""));
      if (t == nullptr) return;
      if (kind == "result" && r.contains("result")) repair.OnResultRecord(*t, r["result"]);
      if (kind != "result" && r.contains("config")) repair.OnConfigRecord(*t, r["config"]);
    });
    if (!read.ok())
      spdlog::error("Result files of {} stay incomplete: {}", e.spec.name, read.ToString());
  }
  const ResultFilesRepair::Summary& s = repair.summary();
  spdlog::info(
      "Result files of {} match the journal: {} trials, {} rows were missing ({} written), {} rows "
      "beyond "
      "the journal and {} torn lines cut, {} params.json written ({:.3f} s)",
      e.spec.name, s.trials, s.missing_rows, s.rows_written, s.surplus_rows, s.torn_lines,
      s.params_written, std::chrono::duration<double>(bus::Clock::now() - t0).count());
}

void Scheduler::AdoptStoredCheckpoints(Experiment& e) {
  proto::CheckpointList list;
  list.prefix = e.journal_name + "/";
  store_->Request(list, [this, &e](Result<proto::Decoded> reply) {
    auto listed = reply.ok() ? reply->As<proto::CheckpointListReply>()
                             : Result<proto::CheckpointListReply>(reply.status());
    if (!listed.ok()) {
      spdlog::warn("Cannot sweep the checkpoints of {}: {}", e.journal_name,
                   listed.status().ToString());
      return;
    }
    const std::string snapshots = journal::SnapshotPrefix(e.journal_name);
    int64_t kept = 0, adopted = 0, deleted = 0;
    const std::unordered_set<std::string> referenced = e.runner->ReferencedCheckpoints();
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
        s = e.runner->OnCheckpointSaved(
            meta["trial_id"].get<std::string>(), meta["attempt"].get<int64_t>(), id,
            meta["training_iteration"].get<int64_t>(), int64_t(info.size_bytes));
      }
      if (s.ok()) {
        ++adopted;
        spdlog::info("Adopted checkpoint {}: the journal holds its request", id);
        continue;
      }
      ++deleted;
      spdlog::info("Deleting checkpoint {} because {}", id, s.message());
      e.executor->DeleteCheckpoint(id);
    }
    spdlog::info("Checkpoints of {} after the takeover: {} kept, {} adopted, {} orphans deleted",
                 e.journal_name, kept, adopted, deleted);
  });
}

void Scheduler::RequeueUnattached(Experiment& e) {
  for (const std::string& trial_id : e.awaiting_reattach) {
    const Trial* t = e.runner->FindTrial(trial_id);
    if (t == nullptr || t->status != TrialStatus::kRunning) continue;
    spdlog::warn(
        "Trial {} was running on {} but no worker reported it after the restart; requeueing it",
        trial_id, t->worker_id);
    e.runner->RequeueLost(
        trial_id,
        fmt::format("not reported by worker {} after the scheduler restarted", t->worker_id));
  }
  e.awaiting_reattach.clear();
}

void Scheduler::MaybeSnapshot(Experiment& e) {
  const uint64_t seq = e.journal_base + e.journal->appended();
  if (e.snapshot_in_flight || seq < e.last_snapshot_seq + uint64_t(options_.snapshot_every_records))
    return;
  journal::ReplayedExperiment state;
  state.experiment_id = e.experiment_id;
  state.spec_yaml = e.spec.source_yaml;
  state.base_dir = e.base_dir;
  state.source_name = e.source_name;
  state.seed = e.seed;
  state.submitted_at_s = e.submitted_at_s;
  state.searcher_state = e.runner->SearcherState();
  state.scheduler_state = e.runner->TrialSchedulerState();
  state.last_action = e.runner->LastActions();
  state.restore_from = e.runner->options().restore_from;
  state.records = seq;
  auto bytes = std::make_shared<std::string>(journal::EncodeSnapshot(state, e.runner->trials()));
  const std::string id = journal::SnapshotId(e.journal_name, seq);
  e.snapshot_in_flight = true;
  // Stored once every record it covers is durable; chunks go one after another.
  e.journal->AfterDurable([this, &e, bytes, id, seq] {
    auto put = std::make_shared<std::function<void(uint32_t)>>();
    *put = [this, &e, bytes, id, seq, put](uint32_t chunk) {
      proto::CheckpointPut req;
      const size_t off = size_t(chunk) * proto::kCheckpointChunkBytes;
      const size_t n = std::min(proto::kCheckpointChunkBytes, bytes->size() - off);
      req.checkpoint_id = id;
      req.chunk_index = chunk;
      req.data.assign(bytes->begin() + off, bytes->begin() + off + n);
      req.last = off + n >= bytes->size();
      if (req.last) req.metadata_json = json{{"seq", seq}, {"kind", "journal_snapshot"}}.dump();
      store_->Request(
          req, [this, &e, id, seq, put, chunk, last = req.last](Result<proto::Decoded> reply) {
            if (!reply.ok() || reply->type() != proto::CheckpointPutAck::kType) {
              spdlog::warn("Snapshot {} was not stored ({}); the next one is tried later", id,
                           reply.ok() ? reply->type() : reply.status().ToString());
              e.snapshot_in_flight = false;
              *put = nullptr;  // `put` holds itself (and the snapshot's bytes): break the cycle
              return;
            }
            if (!last) return (*put)(chunk + 1);
            *put = nullptr;
            spdlog::info("Snapshot {} stored: a resume replays from seq {}", id, seq + 1);
            if (!e.last_snapshot_id.empty()) {
              proto::CheckpointDelete del;
              del.checkpoint_id = e.last_snapshot_id;
              store_->Request(del, [](Result<proto::Decoded>) {});
            }
            e.last_snapshot_id = id;
            e.last_snapshot_seq = seq;
            e.snapshot_in_flight = false;
          });
    };
    (*put)(0);
  });
}

}  // namespace tunebus
