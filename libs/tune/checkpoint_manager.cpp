#include "libs/tune/checkpoint_manager.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iterator>
#include <utility>

namespace tunebus {

CheckpointManager::CheckpointManager(int64_t checkpoint_freq, bool checkpoint_at_end,
                                     int64_t keep_checkpoints_num,
                                     std::string checkpoint_score_attr)
    : checkpoint_freq_(checkpoint_freq),
      checkpoint_at_end_(checkpoint_at_end),
      keep_(keep_checkpoints_num),
      score_attr_(std::move(checkpoint_score_attr)),
      minimise_(score_attr_.rfind("min-", 0) == 0) {
  if (minimise_) score_attr_ = score_attr_.substr(4);
}

Action CheckpointManager::ActionFor(Trial& t, const TrainingResult& result, Decision decision,
                                    bool requested) const {
  // Ray Tune's _process_trial_result: the periodic (or asked) checkpoint is taken whatever the
  // decision, a stopped trial's last iteration included; checkpoint_at_end adds one at a stop.
  const bool at_end = decision == Decision::kStop && checkpoint_at_end_;
  const bool periodic =
      requested || (checkpoint_freq_ > 0 && t.training_iteration % checkpoint_freq_ == 0);
  const bool checkpoint = decision == Decision::kPause || at_end || periodic;
  if (checkpoint) {
    CheckpointRef asked;
    asked.training_iteration = t.training_iteration;
    asked.time_total_s = t.time_total_s;
    if (!score_attr_.empty()) asked.score = result.Number(score_attr_);
    t.requested_checkpoints.push_back(std::move(asked));
  }
  switch (decision) {
    case Decision::kContinue:
      return checkpoint ? Action::kCheckpoint : Action::kContinue;
    case Decision::kPause:
      return Action::kPause;
    case Decision::kStop:
      return checkpoint ? Action::kCheckpointAndStop : Action::kStop;
  }
  return Action::kContinue;
}

Result<CheckpointRef> CheckpointManager::Close(Trial& t, int64_t attempt,
                                               int64_t training_iteration,
                                               std::string_view what) const {
  if (attempt != t.attempt) {
    return Status::FailedPrecondition(fmt::format("{} of {} attempt {} is stale (current {})", what,
                                                  t.trial_id, attempt, t.attempt));
  }
  auto& asked = t.requested_checkpoints;
  auto it = std::find_if(asked.begin(), asked.end(), [&](const CheckpointRef& c) {
    return c.training_iteration == training_iteration;
  });
  if (it == asked.end()) {
    return Status::FailedPrecondition(fmt::format(
        "checkpoint of {} at iteration {} was never asked for", t.trial_id, training_iteration));
  }
  CheckpointRef ref = *it;
  asked.erase(asked.begin(), std::next(it));
  return ref;
}

// Ray Tune's CheckpointManager: keep the best keep_checkpoints_num by checkpoint_score_attr
// (newest are best without one); the newest is always kept since the trial restores from it.
std::optional<std::string> CheckpointManager::DropOne(Trial& t,
                                                      const std::vector<Trial>& trials) const {
  if (keep_ <= 0 || int64_t(t.checkpoints.size()) <= keep_) return std::nullopt;
  const bool scored = !score_attr_.empty();
  // Rank all but the newest; a checkpoint without a score ranks below every scored one.
  auto worse = [&](const CheckpointRef& a, const CheckpointRef& b) {
    if (!scored) return a.training_iteration < b.training_iteration;
    if (a.score.has_value() != b.score.has_value()) return !a.score.has_value();
    if (!a.score) return a.training_iteration < b.training_iteration;
    return minimise_ ? *a.score > *b.score : *a.score < *b.score;
  };
  auto victim = std::min_element(t.checkpoints.begin(), std::prev(t.checkpoints.end()), worse);
  std::string id = victim->checkpoint_id;
  const bool in_use = std::any_of(trials.begin(), trials.end(), [&](const Trial& other) {
    return other.restore_checkpoint && other.restore_checkpoint->checkpoint_id == id;
  });
  if (in_use) return std::nullopt;  // a pending exploit restores it
  t.checkpoints.erase(victim);
  return id;
}

std::string CheckpointManager::LostWith(const Trial& t) {
  if (t.requested_checkpoints.empty()) return "";
  std::vector<int64_t> iterations;
  for (const CheckpointRef& c : t.requested_checkpoints) iterations.push_back(c.training_iteration);
  return fmt::format(
      "; the checkpoint of iteration {} it was saving was not stored, so the trial "
      "goes on from {}",
      fmt::join(iterations, ", "),
      t.checkpoints.empty() ? std::string("the start")
                            : fmt::format("iteration {}", t.checkpoints.back().training_iteration));
}

}  // namespace tunebus
