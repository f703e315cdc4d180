// ExperimentHandlers: the control requests about whole experiments (proto/control.hpp):
//   - submit_experiment, with a shipped working_dir (after the store said it holds the archive)
//     or restore_from (after the store named the checkpoint's iteration), and with
//     search.warm_start after the experiments it names were read (in memory or journals);
//   - resume_experiment_command: of one in memory, or one the journals hold (resumed, or
//     answered from a read-only load when it finished for good);
//   - list_experiments (`lsx`): rows of the experiments in memory and of every other journal;
//   - delete_experiment of a finished one: its results folder unless kept, then its journal and
//     checkpoints leave the checkpoint-store (proto::ExperimentDelete); retention deletes
//     through the same Delete;
//   - stop_experiment, get_experiment and set_experiment_weight of one experiment.
//
// Requests that wait for the store (lsx, resume of an experiment not in memory, delete, submit
// with a working_dir or restore_from) answer from the client's callback with a copy of what they
// need, and look at the experiments again there: the loop served others meanwhile.
//
// Invariants: a name claimed while a submission or resume waits for the store is released on
// every path that ends the wait (ExperimentRegistry::Claim / Release).
//
// Owns nothing; uses the ControlContext (which outlives it). Threads: the scheduler's loop.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "libs/bus/socket.hpp"
#include "libs/core/rerun_mode.hpp"
#include "libs/core/status.hpp"
#include "libs/core/trial.hpp"
#include "libs/spec/experiment_spec.hpp"
#include "proto/codec.hpp"
#include "proto/control.hpp"
#include "services/scheduler/control/control_context.hpp"
#include "services/scheduler/control/retention_sweeper.hpp"
#include "services/scheduler/store/journal_reader.hpp"

namespace tunebus {

class ExperimentHandlers {
 public:
  explicit ExperimentHandlers(ControlContext& control) : control_(control) {}
  ExperimentHandlers(const ExperimentHandlers&) = delete;
  ExperimentHandlers& operator=(const ExperimentHandlers&) = delete;

  // Reads (submit of the experiment already running is one: it follows it).
  Status HandleSubmit(bus::Incoming& in, const proto::Decoded& d);
  Status HandleListExperiments(bus::Incoming& in, const proto::Decoded& d);
  Status HandleGetExperiment(bus::Incoming& in, const proto::Decoded& d);
  // Changes (the dispatcher refuses them first while the store refuses writes).
  Status HandleResumeExperiment(bus::Incoming& in, const proto::Decoded& d);
  Status HandleStopExperiment(bus::Incoming& in, const proto::Decoded& d);
  Status HandleSetExperimentWeight(bus::Incoming& in, const proto::Decoded& d);
  Status HandleDeleteExperiment(bus::Incoming& in, const proto::Decoded& d);

  /// `tunectl delete NAME` (and retention's deletions, control/retention_sweeper.hpp): deletes
  /// the finished experiment `name` (name or journal name; the newest such) — its results
  /// folder unless `keep_results`, then its journal and checkpoints (the store's
  /// experiment_delete) — then `done` with {name, journal, records, checkpoints,
  /// store_bytes_before, store_bytes_after, compaction_s, results_dir, results_removed}, or the
  /// error. Errors (returned, `done` not called): InvalidArgument (no name), FailedPrecondition
  /// (being submitted or resumed, or not finished); to `done`: FindExperiment's, the store's.
  Status Delete(const std::string& name, bool keep_results,
                std::function<void(Result<nlohmann::json>)> done);
  /// lsx rows of finished experiments get `expires` from `retention` (outlives this; null:
  /// none).
  void set_retention(const RetentionSweeper* retention) { retention_ = retention; }

 private:
  /// Submits a parsed, checked experiment: with restore_from, after the store named the
  /// checkpoint's iteration; then StartExperiment.
  void SubmitParsed(const bus::Incoming& in, uint64_t id, const proto::SubmitExperiment& msg,
                    ExperimentSpec spec);
  /// Starts the experiment (ExperimentRegistry::Submit) and answers `in`; with
  /// search.warm_start, once ReadWarmStart has read the experiments it names.
  void StartExperiment(const bus::Incoming& in, uint64_t id, const proto::SubmitExperiment& msg,
                       ExperimentSpec spec, std::optional<CheckpointRef> restore_from);
  /// Reads search.warm_start's experiments `names[i..]` (by name: in memory, else the newest
  /// journal, ExperimentRegistry::FindExperiment) into `sources` (WarmStartSource's entries),
  /// then `done` with all of them, or with the first error, "search.warm_start[<i>]: ...".
  /// ExperimentRegistry::Submit with the warm start's observations (null: none), and the answer.
  void Submit(const bus::Incoming& in, uint64_t id, const proto::SubmitExperiment& msg,
              ExperimentSpec spec, std::optional<CheckpointRef> restore_from,
              nlohmann::json warm_start);
  void ReadWarmStart(const ExperimentSpec& spec, std::vector<std::string> names, size_t i,
                     nlohmann::json sources, std::function<void(Result<nlohmann::json>)> done);
  /// `tunectl resume` of an experiment found in memory (or just resumed from its journal):
  /// reopens an interrupted one, reruns its errored trials as `mode` says, and answers `in`.
  void ContinueResume(const bus::Incoming& in, uint64_t id, Experiment* e, RerunMode mode);
  /// Answers list_experiments (request `id` of `type` from `route`) with the registry's rows.
  void ListExperiments(const std::vector<std::string>& route, uint64_t id, const std::string& type,
                       std::vector<JournalLength> lengths);
  /// Deletes the finished experiment `e` (loaded from journal `journal`): its results folder
  /// unless `keep_results`, then the store's experiment_delete, then `done` (Delete's).
  void DeleteFinished(const Experiment& e, const std::string& journal, bool keep_results,
                      std::function<void(Result<nlohmann::json>)> done);

  /// Adds `expires` (RetentionSweeper::Expires; "-" until its next pass, "never" when no rule
  /// applies anywhere) to the finished experiments' lsx `rows`.
  void AddExpires(nlohmann::json& rows) const;

  ControlContext& control_;
  const RetentionSweeper* retention_ = nullptr;
};

}  // namespace tunebus
