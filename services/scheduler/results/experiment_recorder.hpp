// ExperimentRecorder: the scheduler's RunnerObserver. For every state change of the runner it
//   1. appends the journal record (write-ahead: before any effect the change causes),
//   2. writes the trial's files in Ray Tune's layout under <results_dir>/<experiment>/:
//      <trial>/params.json, <trial>/result.json (JSON lines), <trial>/progress.csv,
//      <trial>/error.txt, and experiment_state.json (for humans; the journal is the truth),
//   3. publishes a SchedulerEvent on the event stream (built only if someone subscribed).
// File errors are logged and never stop the experiment (the journal holds the results).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "libs/core/clock.hpp"
#include "libs/journal/journal_writer.hpp"
#include "libs/tune/trial_executor.hpp"
#include "services/scheduler/results/event_publisher.hpp"
#include "services/scheduler/results/result_files.hpp"

namespace tunebus {

class TrialRunner;

class ExperimentRecorder final : public RunnerObserver {
 public:
  /// `experiment_dir` is <results_dir>/<experiment name>; created if missing. `files` writes the
  /// result files (the scheduler's writer thread). `clock` dates experiment_state.json.
  ExperimentRecorder(std::string name, std::string experiment_dir, journal::JournalWriter& journal,
                     EventPublisher& events, ResultFileWriter& files, const Clock& clock);
  ~ExperimentRecorder() override;

  /// The runner whose summary experiment_state.json shows (set once it exists).
  void set_runner(const TrialRunner* runner) { runner_ = runner; }

  void OnTrialAdded(const Trial& trial) override;
  void OnTrialStarted(const Trial& trial) override;
  void OnTrialResult(const Trial& trial, const TrainingResult& result, Action decision) override;
  void OnTrialStatus(const Trial& trial) override;
  void OnCheckpointSaved(const Trial& trial, const CheckpointRef& ref) override;
  void OnCheckpointDeleted(const Trial& trial, const std::string& checkpoint_id) override;
  /// Journals checkpoint_failed (what the trial does about it follows as its own records).
  void OnCheckpointFailed(const Trial& trial, const CheckpointNotStored& failed) override;
  void OnTrialUpdated(const Trial& trial, const nlohmann::json& change) override;
  void OnDriverDecision(const Trial& trial, int64_t seq, const nlohmann::json& answer) override;
  void OnSearcherState(const nlohmann::json& state) override;
  void OnSearcherDelta(const nlohmann::json& delta) override;
  void OnTrialSchedulerState(const nlohmann::json& delta) override;
  /// Writes experiment_state.json and hands every staged file task to the writer; the
  /// experiment_ended record and event follow once the writer has written them (CompleteEnd).
  void OnExperimentEnded(ExperimentStatus status, const std::string& reason) override;
  /// Journals the end OnExperimentEnded deferred, if its files are written, and publishes its
  /// event once that record is durable; with `wait`, waits for the writer first. The files are
  /// complete before the journal says the experiment ended: a scheduler killed before that
  /// record is durable resumes the experiment, and the resume completes the files. The loop does
  /// not wait at each end: with 50 experiments ending in a run, each wait for the writer (at nice
  /// 19) stalled every other experiment's decisions. Returns whether no end is pending after the
  /// call.
  bool CompleteEnd(bool wait);
  /// True from OnExperimentEnded until CompleteEnd journals the end.
  bool ending() const { return pending_end_.has_value(); }
  /// True once the experiment_ended record is durable (its event is published then): a
  /// scheduler stopped or killed after that finds the experiment finished.
  bool end_durable() const { return end_durable_; }

  /// Appends "attempt N: <text>" ("not started: <text>" before a first attempt) to
  /// <trial>/error.txt (the reason and the trainable's stderr tail). A trial that becomes ERROR
  /// without one for its attempt (infeasible, a result that breaks a check, too many worker losses)
  /// gets its error written by OnTrialStatus, so every ERROR trial has the file Ray Tune users look
  /// for.
  void WriteErrorFile(const Trial& trial, const std::string& text);
  /// Hands the result files' work whose journal records are durable to their writer thread (once
  /// per poll round).
  void FlushFiles() { files_.Flush(journal_.durable()); }
  /// Whether every journal record of `t`'s changes is durable: false while a change that a
  /// read reply shows (a result, a status) waits for the journal (read replies mark such
  /// trials, proto/PROTOCOL.md §2).
  bool IsDurable(const Trial& t) const;
  /// Result file tasks not written yet (see ResultFiles::Backlog).
  size_t FileBacklog() const { return files_.Backlog(); }
  /// Every result file task of this experiment is written (ResultFiles::Idle).
  bool FilesWritten() const { return files_.Idle(); }
  /// Hands the durable result file work to the writer and has it replace experiment_state.json
  /// (the runner's current state, for humans): the text is built here, on the calling thread;
  /// the write and its fsync happen on the writer thread (ResultFiles::ReplaceFile).
  void WriteStateFile();
  /// WriteStateFile in slices, for the periodic write while trials run: each call appends up to
  /// `budget` trials to the text in progress, taking them off `budget` (a new text starts, with
  /// the summary as of that call, when none is in progress) and, once every trial is in, hands
  /// it to the writer as WriteStateFile does and returns true. Each trial is written as it was
  /// at the call that wrote it. The loop's cost per call is O(budget), never O(trials): at 8,000
  /// trials a whole text took it ~18 ms at once (docs/explanation/performance/cluster.md "Cluster
  /// scale"). WriteStateFile drops a text in progress.
  bool StepStateFile(size_t& budget);
  const std::string& experiment_dir() const { return experiment_dir_; }
  /// The result file writer (ResultFilesRepair stages the rows a resume completes on it).
  ResultFiles& files() { return files_; }

 private:
  std::string TrialDir(const Trial& trial) const;
  /// Remembers `record` (a JournalWriter position) as `t`'s newest.
  void NoteRecord(const Trial& t, uint64_t record);

  std::string name_;
  std::string experiment_dir_;
  journal::JournalWriter& journal_;
  EventPublisher& events_;
  const Clock& clock_;
  const TrialRunner* runner_ = nullptr;
  ResultFiles files_;
  double started_at_ = 0;
  std::unordered_map<int64_t, int64_t>
      error_file_attempt_;             // trial index -> attempt last in error.txt
  std::vector<uint64_t> last_record_;  // trial index -> its newest record's position
  /// The end OnExperimentEnded deferred, and the writer's task count it waits for.
  struct PendingEnd {
    ExperimentStatus status;
    std::string reason;
    uint64_t files_through = 0;
  };
  std::optional<PendingEnd> pending_end_;
  bool end_durable_ = false;
  /// StepStateFile's text in progress (empty: none) and the index of the next trial it takes.
  std::string state_text_;
  size_t state_next_trial_ = 0;
};

}  // namespace tunebus
