// Scheduler resume (DESIGN.md "Journal and recovery"): at start, read the experiments' journals
// from the checkpoint-store, replay the newest unfinished one into a TrialRunner, reattach the
// trials workers still run, requeue the others, and give back allocations nobody owns.
#include <chrono>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "libs/journal/records.hpp"
#include "libs/journal/replay.hpp"
#include "proto/resources.hpp"
#include "proto/store.hpp"
#include "services/scheduler/experiment.hpp"
#include "services/scheduler/journal_reader.hpp"

namespace tunebus {

using nlohmann::json;

namespace {

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

Status Scheduler::ResumeFromJournals() {
  if (!options_.resume) return Status::Ok();
  JournalReader reader(ctx_, options_.store_endpoint, std::chrono::milliseconds(options_.resume_timeout_ms));
  auto journals = reader.List();
  if (!journals.ok()) return journals.status();
  // The newest unfinished experiment (by submission time) is resumed.
  const JournalSummary* newest = nullptr;
  for (const JournalSummary& j : *journals) {
    if (j.ended) continue;
    if (newest == nullptr || j.submitted_at_s > newest->submitted_at_s) newest = &j;
  }
  if (newest == nullptr) return Status::Ok();
  auto records = reader.ReadAll(newest->journal, newest->last_seq);
  if (!records.ok()) return records.status();
  return ResumeExperiment(newest->journal, std::move(*records), newest->last_seq);
}

Status Scheduler::ResumeExperiment(const std::string& journal_name, std::vector<json> records,
                                   uint64_t store_last_seq) {
  const auto t0 = bus::Clock::now();
  journal::JournalReplayer replayer;
  for (const json& r : records) {
    if (Status s = replayer.Apply(r); !s.ok()) {
      spdlog::error("Journal {}: {}; replaying what came before", journal_name, s.message());
      break;
    }
  }
  journal::ReplayedExperiment replayed = replayer.Take();
  auto spec = ParseExperimentYaml(replayed.spec_yaml, replayed.base_dir, replayed.source_name);
  if (!spec.ok()) return spec.status();
  auto built = BuildExperiment(std::move(*spec), replayed.experiment_id, replayed.seed, replayed.restore_from);
  if (!built.ok()) return built.status();
  Experiment* e = *built;
  e->submitted_at_s = replayed.submitted_at_s;
  e->journal->set_store_seq(store_last_seq);
  if (e->journal_name != journal_name) {
    return Status::Corruption(fmt::format("journal {} holds experiment {}", journal_name, e->journal_name));
  }
  for (const Trial& t : replayed.trials) {
    if (t.status == TrialStatus::kRunning) e->awaiting_reattach.insert(t.trial_id);
  }
  const size_t trials = replayed.trials.size();
  if (Status s = e->runner->Restore(std::move(replayed.trials), replayed.searcher_state, replayed.last_action,
                                    replayed.submitted_at_s, replayed.ended_status, replayed.ended_reason);
      !s.ok()) {
    return s;
  }
  if (!e->runner->IsFinished()) {
    e->journal->Append(journal::ExperimentResumed(WallSeconds(), ""));
    state_ = State::kRunning;
  }
  spdlog::info("Resumed experiment {} from journal {}: {} records, {} trials, {} running to reattach ({:.3f} s)",
               e->spec.name, journal_name, replayed.records, trials, e->awaiting_reattach.size(),
               std::chrono::duration<double>(bus::Clock::now() - t0).count());
  ReconcileAllocations(*e);
  loop_.AddTimer(bus::Duration{options_.reattach_grace_ms}, [this, e] { RequeueUnattached(*e); });
  return Status::Ok();
}

// Allocations of this experiment's trials that no RUNNING attempt owns (the scheduler died
// between a grant and its journal record, or while a trial left RUNNING) are given back.
void Scheduler::ReconcileAllocations(Experiment& e) {
  rm_->Request(proto::GetClusterView{}, [this, &e](Result<proto::Decoded> reply) {
    auto view = reply.ok() ? reply->As<proto::ClusterView>() : Result<proto::ClusterView>(reply.status());
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
        const bool owned = t && t->status == TrialStatus::kRunning && t->attempt == attempt && t->worker_id == node.worker_id;
        if (owned) continue;
        spdlog::info("Releasing {} on {}: no running attempt owns it after the restart", held, node.worker_id);
        proto::Release release;
        release.trial_id = trial_id;
        release.attempt = attempt;
        rm_->Request(release, [](Result<proto::Decoded>) {});
      }
    }
  });
}

void Scheduler::RequeueUnattached(Experiment& e) {
  for (const std::string& trial_id : e.awaiting_reattach) {
    const Trial* t = e.runner->FindTrial(trial_id);
    if (t == nullptr || t->status != TrialStatus::kRunning) continue;
    spdlog::warn("Trial {} was running on {} but no worker reported it after the restart; requeueing it", trial_id,
                 t->worker_id);
    e.runner->RequeueLost(trial_id, fmt::format("not reported by worker {} after the scheduler restarted",
                                                t->worker_id));
  }
  e.awaiting_reattach.clear();
}

}  // namespace tunebus
