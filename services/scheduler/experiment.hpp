// One submitted experiment inside the scheduler: its spec, journal writer, recorder, executor
// and runner, wired together. Owned by Scheduler; never destroyed while the process runs, so
// late callbacks (placement replies, journal acks) always find it alive.
//
// A read-only experiment (read_only) is one loaded from its journal to answer read requests
// (Scheduler::FindExperiment): it has a restored runner only (no journal writer, recorder or
// executor; the runner's executor and observer are NoEffects), is never current, is never
// stepped, and is dropped when the cache of them is full (nothing calls back into it).
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>

#include "libs/journal/journal_writer.hpp"
#include "libs/spec/experiment_spec.hpp"
#include "libs/tune/trial_runner.hpp"
#include "services/scheduler/bus_executor.hpp"
#include "services/scheduler/experiment_recorder.hpp"
#include "services/scheduler/scheduler.hpp"

namespace tunebus {

/// The executor and observer of a read-only experiment's runner: no effect at all. Nothing
/// steps such a runner; a call is logged as a bug and ignored.
class NoEffects final : public TrialExecutor, public RunnerObserver {
 public:
  static NoEffects& Instance();
  bool CanPlace() const override { return false; }
  void PlaceTrial(const Trial& trial, int64_t attempt) override;
  void LaunchTrial(const Trial& trial) override { Refuse("LaunchTrial", trial); }
  void SendDecision(const Trial& trial, int64_t, Action) override { Refuse("SendDecision", trial); }
  void StopTrial(const Trial& trial) override { Refuse("StopTrial", trial); }
  void ReleaseResources(const Trial& trial) override { Refuse("ReleaseResources", trial); }
  void DeleteCheckpoint(const std::string& checkpoint_id) override;

 private:
  static void Refuse(const char* what, const Trial& trial);
};

/// The runner options an experiment file asks for (resources_per_trial already converted).
RunnerOptions MakeRunnerOptions(const ExperimentSpec& spec, const std::string& experiment_id,
                                const Resources& resources_per_trial,
                                std::optional<CheckpointRef> restore_from);

struct Scheduler::Experiment {
  ExperimentSpec spec;
  std::string experiment_id;   // 5 hex digits, prefix of trial ids
  std::string journal_name;    // "<name>-<experiment_id>": the journal's key in the store
  std::string experiment_dir;  // <results_dir>/<name>
  bus::Clock::time_point started;
  std::optional<bus::Clock::time_point> ended;  // set by the round that sees the runner finished
  /// Seconds from the start to the end (or to now while it runs).
  double ElapsedS() const {
    return std::chrono::duration<double>(ended.value_or(bus::Clock::now()) - started).count();
  }
  double submitted_at_s = 0;  // wall clock of the submission, seconds since the epoch
  std::string base_dir;       // as submitted (for snapshots)
  std::string source_name;
  uint64_t seed = 0;
  uint64_t journal_base = 0;       // records the journal held before this process appended
  uint64_t last_snapshot_seq = 0;  // journal seq the newest snapshot covers (or resumed at)
  std::string last_snapshot_id;
  bool snapshot_in_flight = false;
  /// Loaded from its journal for reads only (see the top of this file); the journal held
  /// journal_base records then.
  bool read_only = false;
  std::unique_ptr<journal::JournalWriter> journal;  // null when read_only (also recorder, executor)
  std::unique_ptr<ExperimentRecorder> recorder;
  std::unique_ptr<BusExecutor> executor;
  std::unique_ptr<TrialRunner> runner;
  /// Resumed experiments: trials the journal says are RUNNING that no worker has reported yet.
  std::set<std::string> awaiting_reattach;
};

}  // namespace tunebus
