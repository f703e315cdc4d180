// Experiment: one submitted experiment inside the scheduler. It owns its TrialRunner (with the
// variant generator and trial scheduler), its journal writer, its recorder (result files,
// experiment_state.json, events) and its executor, wired together, and does the experiment's
// own bookkeeping on the bus: snapshots, the takeover's allocation reconcile and checkpoint
// sweep, the result-file repair, and the requeue of trials no worker reattached.
//
// The Scheduler owns its experiments and never destroys a live one while the process runs, so
// late callbacks (placement replies, journal acks) always find it alive.
//
// A read-only experiment (read_only()) is one loaded from its journal to answer read requests
// (ExperimentRegistry::FindExperiment): it has a restored runner only (no journal writer, recorder
// or executor; the runner's executor and observer are NoEffects), is never current, is never
// stepped, and may be dropped at any time (nothing calls back into it).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "libs/bus/event_loop.hpp"
#include "libs/bus/request_client.hpp"
#include "libs/core/clock.hpp"
#include "libs/journal/journal_writer.hpp"
#include "libs/journal/replay.hpp"
#include "libs/spec/experiment_spec.hpp"
#include "libs/tune/driver_link.hpp"
#include "libs/tune/searcher_link.hpp"
#include "libs/tune/trial_runner.hpp"
#include "proto/worker.hpp"
#include "services/scheduler/core/fair_share.hpp"
#include "services/scheduler/results/event_publisher.hpp"
#include "services/scheduler/results/experiment_recorder.hpp"
#include "services/scheduler/search/searcher_process.hpp"
#include "services/scheduler/store/bus_journal_sink.hpp"
#include "services/scheduler/store/journal_reader.hpp"
#include "services/scheduler/workers/bus_executor.hpp"
#include "services/scheduler/workers/worker_outbox.hpp"

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

/// What a live experiment uses of its scheduler. Owned by the Scheduler; outlives every
/// experiment.
struct ExperimentContext {
  bus::EventLoop& loop;
  bus::RequestClient& rm;        // resource-manager
  PlacementBatcher& placements;  // every experiment's allocations and releases, sent per round
  bus::RequestClient& store;     // checkpoint-store
  JournalAppendBatcher& journal_appends;  // every experiment's journal appends, sent per round
  WorkerOutbox& outbox;
  EventPublisher& publisher;
  ResultFileWriter& result_files;  // every experiment's result files
  const Clock& clock;
  /// Whether a worker registered with this scheduler process.
  std::function<bool(const std::string& worker_id)> is_registered;
  /// Links external searchers (`search: {type: external}`) to their processes.
  SearcherLinkFactory connect_searcher;
  /// Links the experiment's Python driver (`driver:`, proto/PROTOCOL.md section 7b).
  SearcherLinkFactory connect_driver;
};

using journal::ExperimentIdentity;

class Experiment {
 public:
  /// Where a live experiment is in the scheduler's loop (a read-only one stays kEnded).
  ///   kResuming -> kRunning | kEnded   Resume's result-file repair is done (`resumed`)
  ///   kRunning  -> kEnded              MarkEnded: the round that saw the runner finish
  ///   kEnded    -> kRunning            MarkRunning: `tunectl resume` reopened it
  /// Submit starts in kRunning, Resume in kResuming.
  enum class Phase {
    kResuming,  // the runner does not step; control requests that change it are refused
    kRunning,   // the runner steps every round
    kEnded,     // the runner finished; reads, resume and delete remain
  };

  /// A live experiment, wired to `ctx`: its runner steps, its journal appends. Writes no record
  /// (Submit or Resume does). `experiment_dir` is <results folder>/<name>.
  /// Errors: the spec's trial scheduler or resources_per_trial are invalid.
  static Result<std::unique_ptr<Experiment>> Create(ExperimentContext& ctx, ExperimentSpec spec,
                                                    std::string experiment_dir,
                                                    ExperimentIdentity identity);
  /// A read-only experiment restored from `replayed` (its journal held `journal_length` records):
  /// nothing is appended, no file is touched. Errors: as Create; Corruption when the journal's
  /// name is not this experiment's; the runner's Restore errors.
  static Result<std::unique_ptr<Experiment>> LoadReadOnly(
      ExperimentSpec spec, std::string experiment_dir, const std::string& journal_name,
      journal::ReplayedExperiment replayed, uint64_t journal_length, const Clock& clock);
  ~Experiment();

  /// Journals experiment_submitted with the file's text and steps the runner once.
  void Submit(const std::string& spec_yaml);
  /// Restores the runner from `replayed` (the journal `journal_name` holds `store_last_seq`
  /// records; appends continue after them) and journals experiment_resumed unless it had ended;
  /// then completes the result files from the journal (`reader`, which outlives the call; its
  /// reads are asynchronous, so this part may finish after the call returns), rewrites
  /// experiment_state.json, gives back stale allocations, sweeps the stored checkpoints, calls
  /// `resumed` and, after `reattach_grace`, requeues RUNNING trials no worker reported. The
  /// runner must not step before `resumed` (rows it records would come before the repaired
  /// ones). A journal that cannot be read leaves the result files incomplete (logged).
  /// Errors (then `resumed` is never called): Corruption when the journal's name is not this
  /// experiment's; the runner's Restore and RestoreTrialScheduler errors.
  Status Resume(JournalReader& reader, const std::string& journal_name,
                journal::ReplayedExperiment replayed, uint64_t store_last_seq,
                bus::Duration reattach_grace, std::function<void()> resumed);
  /// One poll round's end: flushes the executor's placements and releases, stores a snapshot
  /// every `snapshot_every_records` journal records, sends the journal batch, and hands durable
  /// rows to the result-file writer.
  void AfterRound(int64_t snapshot_every_records);
  /// Flushes the executor only (an experiment that is no longer current may still release).
  void FlushExecutor() { executor_->Flush(); }

  /// Marks the end of the run (the round that saw the runner finished) and stops the searcher
  /// process the scheduler started for it, if any: kEnded.
  void MarkEnded();
  /// `tunectl resume` reopened the ended experiment: kRunning again, its elapsed time counting.
  /// REQUIRES: phase() == kEnded and !runner().IsFinished().
  void MarkRunning();
  Phase phase() const { return phase_; }
  /// True when this live experiment ended and nothing of it is in flight: its end record and
  /// every other record durable, its files written, no trial running or saving, nothing pending
  /// in its executor, no snapshot being stored, no trial awaiting reattachment (so, after the
  /// longest request timeout, no callback can still come to it). False for a read-only one.
  bool Quiet() const;
  /// Seconds from the start to the end (or to now while it runs).
  double ElapsedS() const;
  /// What a replay of its journal gives, from memory: its identity, file text, weight, preempted
  /// trials, searcher state (Searcher::SaveState, no deltas), last actions, end status and reason,
  /// records = its journal's length in the store; without its trials (a caller that wants them
  /// copies runner().trials()) and without its trial scheduler's state (a read-only experiment
  /// does not restore it). LoadReadOnly of it with the trials is what loading the journal gives.
  /// REQUIRES: Quiet() (every record it appended is in the store, the end record last).
  journal::ReplayedExperiment EndedState() const;

  /// Worker `worker` registered (again) reporting `running`, its trials of this experiment:
  /// attempts that may not run here are appended to `stale` (the worker kills them); a trial
  /// still saving the checkpoint its decision asked for goes on; reported RUNNING ones are
  /// reattached; this experiment's RUNNING trials on `worker` it does not report are requeued
  /// (not a failure: the worker restarted, or the scheduler resumed from its journal).
  void OnWorkerRegistered(const std::string& worker,
                          const std::vector<proto::RunningTrial>& running,
                          std::vector<std::string>& stale);
  /// A worker (`worker`) could not store a checkpoint of a trial of this experiment
  /// (checkpoint_failed): the runner notes it on the trial and applies the spec's
  /// checkpoint_failure (TrialRunner::OnCheckpointFailed). One warning says what the trial does
  /// next; a failure that requeues the trial is appended to its error.txt (an ERROR trial gets
  /// its line from the recorder). One the runner refuses (stale attempt, never asked for, the
  /// experiment has ended) is logged and dropped. REQUIRES: !read_only().
  void OnCheckpointFailed(const std::string& worker, const proto::CheckpointFailed& failed);
  /// Its fair-share weight (> 0): the file's `weight`, or the newest SetWeight (journaled).
  double weight() const { return weight_; }
  /// Sets the weight and journals it (weight_set). REQUIRES: weight > 0, !read_only().
  void SetWeight(double weight);
  /// The trials it claims of the cluster now (FairShareDemand::wanted): those it holds plus
  /// those waiting to be placed, capped by max_concurrent_trials.
  int64_t Wanted() const;
  /// Its attained service so far (FairShareDemand::attained, dominant-share-seconds).
  double attained() const { return attained_; }
  /// Adds `seconds` of holding the trials it held at the previous call (RUNNING or saving their
  /// end checkpoint: placed, not merely asked for), each worth `trial_share` (one trial's
  /// dominant share of the cluster), to its attained service (dominant-share-seconds; in memory
  /// only: a restarted scheduler starts every experiment from 0), then notes what it holds now.
  /// Called once a round, after its placements. A placement still in flight at the
  /// resource-manager holds nothing yet, so when its grant or deferral comes back does not change
  /// the service.
  void AccrueService(double trial_share, double seconds) {
    attained_ += trial_share * double(holding_) * seconds;
    holding_ = runner_->phases().running() + runner_->phases().saving();
  }
  /// The most trials it may hold at once (its fair share across experiments,
  /// WeightedDrfQuotas); nullopt = no cap. Checked before each placement.
  void set_trial_quota(std::optional<int64_t> quota) { trial_quota_ = quota; }
  std::optional<int64_t> trial_quota() const { return trial_quota_; }
  /// The resources its RUNNING trials hold (what `lsx` shows as usage).
  Resources Held() const;
  /// What `tunectl resume` or `tunectl run` of this finished experiment is told: a
  /// FailedPrecondition naming its end reason and, if trials errored, --rerun-errored.
  Status FinishedError() const;
  /// Preemption of a `preemptible: true` experiment above its quota: pauses (TrialRunner::
  /// PauseTrial: checkpoint at the next result, then free) its newest-started RUNNING trials
  /// until those not pausing fit the quota. Returns how many it paused now.
  int64_t Preempt(int64_t quota);
  /// Unpauses the trials Preempt paused (they continue from their checkpoint) while its trials
  /// in flight stay under `quota` (nullopt: all of them); only while it runs. The list survives
  /// a scheduler restart (journal record trials_preempted).
  void Readmit(std::optional<int64_t> quota);

  /// Gives back allocations of this experiment's trials that no RUNNING attempt owns (the
  /// scheduler died between a grant and its journal record, or while a trial left RUNNING).
  void ReconcileAllocations();

  const ExperimentSpec& spec() const { return spec_; }
  const std::string& name() const { return spec_.name; }
  const ExperimentIdentity& identity() const { return identity_; }
  const std::string& experiment_id() const { return identity_.experiment_id; }
  /// "<name>-<experiment_id>": the journal's key in the store.
  const std::string& journal_name() const { return journal_name_; }
  /// <results folder>/<name>.
  const std::string& experiment_dir() const { return experiment_dir_; }
  bool read_only() const { return read_only_; }
  /// Records the journal held before this process appended (a read-only one: when loaded).
  uint64_t journal_base() const { return journal_base_; }

  TrialRunner& runner() { return *runner_; }
  const TrialRunner& runner() const { return *runner_; }
  /// The driver link (proto/PROTOCOL.md section 7b), null when the experiment has none.
  const DriverLink* driver() const { return driver_.get(); }
  /// REQUIRES: !read_only() (also recorder() and executor()).
  journal::JournalWriter& journal() { return *journal_; }
  const journal::JournalWriter& journal() const { return *journal_; }
  ExperimentRecorder& recorder() { return *recorder_; }
  const ExperimentRecorder& recorder() const { return *recorder_; }
  BusExecutor& executor() { return *executor_; }

 private:
  Experiment(ExperimentSpec spec, std::string experiment_dir, ExperimentIdentity identity,
             const Clock& clock, ExperimentContext* ctx);
  /// The runner (and, when live, the journal writer, recorder and executor, wired).
  Status Build();
  /// The link of an external searcher: ctx_'s link to `target`'s endpoint, or, with a command,
  /// to the SearcherProcess this experiment then owns (started in the experiment file's folder,
  /// logging to <experiment dir>/searcher.log). Errors: SearcherProcess::Create's.
  Result<std::unique_ptr<SearcherLink>> LinkSearcher(const SearcherTarget& target);
  /// SampleFromResolver's way to the driver: DriverLink::Sample, then a runner Step once the
  /// values came (an `error` answer is logged); without a driver link `done` gets an error.
  void AskDriverSamples(const std::string& trial_id, nlohmann::json config,
                        std::vector<DriverLink::KeyPath> paths, DriverLink::SampleCallback done);
  /// Writes the result-file rows and params.json the journal (records 1..last_seq, read with
  /// `reader`) has and the files miss, then calls `done` (also when the journal cannot be read:
  /// logged, the files stay incomplete).
  void RepairResultFiles(JournalReader& reader, uint64_t last_seq, std::function<void()> done);
  /// The takeover's checkpoint sweep: every checkpoint the store holds under the experiment's
  /// journal is kept if a trial lists it, adopted if it answers a journaled request of its
  /// trial's current attempt (TrialRunner::OnCheckpointSaved), else deleted.
  void AdoptStoredCheckpoints();
  /// Requeues the trials still awaiting reattachment (the reattach grace is over).
  void RequeueUnattached();
  /// Every `every_records` records: stores a snapshot of the experiment (replay = snapshot +
  /// tail) once the records it covers are durable.
  void MaybeSnapshot(int64_t every_records);
  /// The state a snapshot and EndedState share (no trials, no trial scheduler state, records 0).
  journal::ReplayedExperiment SnapshotState() const;

  ExperimentSpec spec_;
  std::string experiment_dir_;
  ExperimentIdentity identity_;
  std::string journal_name_;
  const Clock& clock_;
  ExperimentContext* ctx_;  // null when read-only
  bool read_only_;
  Phase phase_;
  double weight_;
  std::optional<int64_t> trial_quota_;
  double attained_ = 0;                 // dominant-share-seconds (AccrueService)
  int64_t holding_ = 0;                 // trials held at the previous AccrueService
  std::vector<std::string> preempted_;  // trials Preempt paused, oldest first
  SteadyTime started_;
  std::optional<SteadyTime> ended_;
  uint64_t journal_base_ = 0;
  uint64_t last_snapshot_seq_ = 0;  // journal seq the newest snapshot covers (or resumed at)
  std::string last_snapshot_id_;
  bool snapshot_in_flight_ = false;
  std::unique_ptr<journal::JournalWriter> journal_;
  std::unique_ptr<ExperimentRecorder> recorder_;
  std::unique_ptr<BusExecutor> executor_;
  /// The searcher process of `search: {type: external, command: [...]}` (else null). Declared
  /// before runner_: the runner's searcher links to it, so it goes after the runner.
  std::unique_ptr<SearcherProcess> searcher_process_;
  std::unique_ptr<TrialRunner> runner_;
  /// The driver link (`driver: {on_result: true}` of a live experiment), else null. After
  /// runner_: destroyed first, so no answer reaches a destroyed runner.
  std::unique_ptr<DriverLink> driver_;
  /// Resumed experiments: trials the journal says are RUNNING that no worker has reported yet.
  std::set<std::string> awaiting_reattach_;
};

}  // namespace tunebus
