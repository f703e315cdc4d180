// CheckpointManager: the runner's checkpoint policy for every trial (Ray Tune's
// checkpoint_freq / checkpoint_at_end / keep_checkpoints_num / checkpoint_score_attr and its
// CheckpointManager, shared/seeds). Pure: it changes only the Trial it is given
// (trial.requested_checkpoints and trial.checkpoints); the runner journals and tells the
// executor what it decides.
//
// What it keeps in a Trial:
//   - requested_checkpoints: the checkpoints asked of the current attempt, oldest first, each
//     with the training_iteration, time_total_s and score (checkpoint_score_attr's value) of the
//     result that asked for it. ActionFor appends; Close removes the answered request and every
//     older one (a worker uploads oldest first).
//   - checkpoints: the stored ones, oldest first. DropOne removes the worst one past
//     keep_checkpoints_num, never the newest (the trial restores from it) and never one that a
//     trial will restore (restore_checkpoint, a pending PBT exploit).
//
// Errors are values (Close). Cost: ActionFor O(1); Close O(requests); DropOne
// O(checkpoints + trials). Thread-compatibility: owned by the runner's thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libs/core/action.hpp"
#include "libs/core/status.hpp"
#include "libs/core/trial.hpp"
#include "libs/tune/trial_scheduler.hpp"

namespace tunebus {

class CheckpointManager {
 public:
  /// `checkpoint_freq`: every N training iterations (0: never); `keep_checkpoints_num`: 0 keeps
  /// all; `checkpoint_score_attr`: the result key that ranks checkpoints, "min-" prefixed when
  /// lower is better ("" ranks by iteration: newest are best).
  CheckpointManager(int64_t checkpoint_freq, bool checkpoint_at_end, int64_t keep_checkpoints_num,
                    std::string checkpoint_score_attr);

  /// The worker action for `decision` at the trial's current result (its training_iteration
  /// and time_total_s already counted), with checkpointing: a pause, a stop with
  /// checkpoint_at_end, every checkpoint_freq-th iteration and a `requested` one (the result's
  /// should_checkpoint, the trial scheduler's or the driver's request) ask for a checkpoint,
  /// appended to trial.requested_checkpoints.
  Action ActionFor(Trial& trial, const TrainingResult& result, Decision decision,
                   bool requested) const;
  /// The worker's answer (`what`: "checkpoint", "refused checkpoint") to the request of
  /// `attempt` at `training_iteration`: removes it and the older requests of the attempt and
  /// returns it. Errors: FailedPrecondition for a stale attempt or no such open request.
  Result<CheckpointRef> Close(Trial& trial, int64_t attempt, int64_t training_iteration,
                              std::string_view what) const;
  /// Retention: removes the worst of trial.checkpoints when it keeps more than
  /// keep_checkpoints_num, and returns its id; nullopt when nothing is to go now (within the
  /// limit, or the worst is what a trial of `trials` will restore: retention runs again at the
  /// next stored checkpoint). Call until nullopt.
  std::optional<std::string> DropOne(Trial& trial, const std::vector<Trial>& trials) const;
  /// "" or "; the checkpoint of iteration 4 it was saving was not stored, so the trial goes on
  /// from iteration 2": the checkpoints asked of the current attempt and never reported stored,
  /// lost with its worker. A worker keeps a checkpoint it could not upload only on its own disk
  /// and uploads nothing of an attempt after its own restart: the loss is journaled (in the
  /// trial_status record's error and the failure history), not recovered.
  static std::string LostWith(const Trial& trial);

 private:
  int64_t checkpoint_freq_;
  bool checkpoint_at_end_;
  int64_t keep_;
  std::string score_attr_;  // without its "min-" prefix
  bool minimise_;           // checkpoint_score_attr had the "min-" prefix
};

}  // namespace tunebus
