#include "libs/tune/runner_queries.hpp"

#include <fmt/format.h>

#include <optional>

#include "libs/tune/trial_runner.hpp"

namespace tunebus {

const Trial* BestTrial(const TrialRunner& runner) {
  const RunnerOptions& options = runner.options();
  if (options.metric.empty()) return nullptr;
  const Trial* best = nullptr;
  double best_value = 0;
  for (const Trial& t : runner.trials()) {
    if (!t.last_metric) continue;
    const double v = *t.last_metric;
    const bool better = options.mode == "min" ? v < best_value : v > best_value;
    if (best == nullptr || better) {
      best = &t;
      best_value = v;
    }
  }
  return best;
}

std::map<TrialStatus, int64_t> CountByStatus(const std::vector<Trial>& trials) {
  std::map<TrialStatus, int64_t> counts;
  for (const Trial& t : trials) counts[t.status]++;
  return counts;
}

std::unordered_set<std::string> ReferencedCheckpoints(const std::vector<Trial>& trials) {
  std::unordered_set<std::string> ids;
  for (const Trial& t : trials) {
    if (t.restore_checkpoint) ids.insert(t.restore_checkpoint->checkpoint_id);
    for (const CheckpointRef& c : t.checkpoints) ids.insert(c.checkpoint_id);
  }
  return ids;
}

bool HoldsAllocation(const TrialRunner& runner, const std::string& trial_id, int64_t attempt,
                     const std::string& worker_id) {
  const Trial* t = runner.FindTrial(trial_id);
  if (t == nullptr || t->attempt != attempt) return false;
  if (t->status == TrialStatus::kRunning) return t->worker_id == worker_id;
  const TrialPhase& p = runner.phases().at(t->index);
  return p.phase == RunnerPhase::kSaving && p.attempt == attempt && p.worker_id == worker_id;
}

std::map<std::string, Action> LastActions(const TrialRunner& runner) {
  std::map<std::string, Action> out;
  for (const Trial& t : runner.trials()) {
    if (const std::optional<Action>& a = runner.slot(t.index).last_action; a) out[t.trial_id] = *a;
  }
  return out;
}

Status CheckSlots(const TrialRunner& runner) {
  const std::vector<Trial>& trials = runner.trials();
  if (runner.phases().size() != trials.size()) {
    return Status::Internal(
        fmt::format("{} trials but {} phases", trials.size(), runner.phases().size()));
  }
  for (const Trial& t : trials) {
    const TrialSlot& slot = runner.slot(t.index);
    if (const std::optional<HeldResult>& held = slot.held; held) {
      if (t.status != TrialStatus::kRunning || held->attempt != t.attempt ||
          held->seq <= t.last_seq) {
        return Status::Internal(fmt::format(
            "trial {} ({}, attempt {}, last seq {}) holds result {} of attempt {}", t.trial_id,
            TrialStatusName(t.status), t.attempt, t.last_seq, held->seq, held->attempt));
      }
    }
    if (const std::optional<JournaledAnswer>& j = slot.journaled_answer;
        j && j->attempt > t.attempt) {
      return Status::Internal(fmt::format("trial {} (attempt {}) keeps an answer for attempt {}",
                                          t.trial_id, t.attempt, j->attempt));
    }
    if (!slot.exploit_note.is_null() && !slot.exploit_note.is_object()) {
      return Status::Internal(fmt::format("trial {}'s exploit note is not an object", t.trial_id));
    }
  }
  return Status::Ok();
}

}  // namespace tunebus
