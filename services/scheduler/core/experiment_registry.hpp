// ExperimentRegistry: the scheduler's experiments and which one a message is for.
//
// Owns:
//   - the live experiments (unfinished and finished), in submission or resume order; a new one
//     comes from Submit (a parsed experiment file) or Resume (a journal replayed for resume);
//   - the retired ones (Forget: deleted, kept allocated until the process ends, because a late
//     callback, a timer or a store answer, may still name one; nothing reads them);
//   - routing: live experiments by experiment id, the prefix of their trial ids
//     (<experiment_id>_<index>), so a worker message finds its trial's experiment (ForTrial);
//     control requests by the experiment they name, else the only unfinished one (Target,
//     DefaultExperiment, FindExperiment);
//   - the release of finished experiments (ReleaseFinished): once one has ended and nothing of it
//     is in flight (journal durable, files written, no trial, request or timer pending) for
//     Options::release_after, its live state leaves memory; a read-only copy of it goes to the
//     finished cache when it fits, so reads come from memory until the cache drops it, then from
//     its journal;
//   - the read-only cache of finished experiments (a FinishedCache of at most
//     Options::finished_cache_bytes, least recently read dropped first): those released and
//     those loaded from their journals (LoadJournaled)
//     and the lsx rows of journals not in memory, cached by (journal, length) (JournalRow,
//     ListRows);
//   - name claims: the names of experiments whose submission or `tunectl resume` waits for the
//     checkpoint-store before it is adopted (Claim / Release), refused to any other (NameFree);
//   - the experiment_state.json pass: each unfinished experiment's state file rewritten every
//     Options::state_file_interval, or 20 times what building it cost the loop, built
//     kStateFileTrialsPerRound trials a round across the experiments (StepStateFiles).
//
// Threads: all of it runs on the scheduler's loop thread (no lock). Its journal reads go
// through the JournalReader it is given (asynchronous requests on the loop's store client):
// callbacks run later on the same thread, and look at the registry again there.
//
// Invariants:
//   - every live experiment is in the routing table under its experiment id (Adopt), and no two
//     live experiments share one (Submit draws an unused id; Resume refuses a taken one);
//   - names are unique among unfinished experiments and claimed names (NameFree, checked by
//     Submit's caller and by Resume);
//   - an Experiment* handed out stays valid while the callback it was handed to runs; a live one
//     until ReleaseFinished frees it (Forget retires it), a read-only one until the next
//     LoadJournaled or ReleaseFinished;
//   - a read-only experiment in the cache is the one loading its journal at the same length
//     gives (Experiment::LoadReadOnly of the replayed or of the released state), and counts
//     the same bytes (ReadOnlyBytes);
//   - after each read-only load's callback, the cache holds at most finished_cache_bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "libs/bus/event_loop.hpp"
#include "libs/core/clock.hpp"
#include "libs/core/status.hpp"
#include "libs/core/trial.hpp"
#include "libs/journal/replay.hpp"
#include "libs/spec/experiment_spec.hpp"
#include "proto/control.hpp"
#include "services/scheduler/core/finished_cache.hpp"
#include "services/scheduler/store/journal_reader.hpp"

namespace tunebus {

class Experiment;
struct ExperimentContext;

class ExperimentRegistry {
 public:
  struct Options {
    /// SchedulerOptions::results_dir (absolute), or "" (as the experiment file says).
    std::string results_dir;
    /// On start, ResumeAll resumes every unfinished experiment in the journals.
    bool resume = true;
    /// How long a resumed experiment waits for workers to report its RUNNING trials.
    bus::Duration reattach_grace{3000};
    /// The least period of the experiment_state.json rewrites.
    bus::Duration state_file_interval{1000};
    /// Bytes of finished experiments read back from their journals kept for the next reads
    /// (FinishedCache, estimated from their contents).
    size_t finished_cache_bytes = size_t(64) << 20;
    /// How long an ended experiment stays in memory with nothing in flight before its state is
    /// released (longer than any request's timeout, so no late answer finds it gone).
    bus::Duration release_after{15000};
  };
  /// Trials of state files built per round (StepStateFiles).
  static constexpr size_t kStateFileTrialsPerRound = 256;

  /// `clock` and `journals` outlive the registry.
  ExperimentRegistry(Options options, const Clock& clock, JournalReader& journals);
  ~ExperimentRegistry();
  ExperimentRegistry(const ExperimentRegistry&) = delete;
  ExperimentRegistry& operator=(const ExperimentRegistry&) = delete;

  // --- live experiments ---

  /// Starts a new experiment of `spec` wired to `ctx`: draws an unused experiment id, chooses its
  /// results folder (<name>, or <name>-<experiment id> when <name> holds an earlier run's files),
  /// checks it can be written, creates it, adopts it and journals experiment_submitted (with
  /// `warm_start`: the observations its search.warm_start read, or null).
  /// REQUIRES: NameFree(spec.name). Errors: IoError when the results folder cannot be written
  /// (nothing is journaled then); Experiment::Create's.
  Result<Experiment*> Submit(ExperimentContext& ctx, const proto::SubmitExperiment& msg,
                             ExperimentSpec spec, std::optional<CheckpointRef> restore_from,
                             nlohmann::json warm_start = nullptr);
  /// Resumes `journal_name` (an unfinished experiment at start, or one tunectl resumes) wired to
  /// `ctx`: adopted at once (Phase::kResuming) and, once its result files are complete, running
  /// unless it had ended; then `done` with it. `store_last_seq`: the journal's length in the
  /// store (appends continue after it). Errors (to `done`): FailedPrecondition when its
  /// experiment id or its name is taken by an unfinished experiment here; Experiment::Create's
  /// and Experiment::Resume's.
  void Resume(ExperimentContext& ctx, const std::string& journal_name,
              journal::ReplayedExperiment replayed, uint64_t store_last_seq,
              std::function<void(Result<Experiment*>)> done);
  /// At start (Options::resume): resumes every unfinished experiment in the store's journals,
  /// one after another (oldest first); one that fails is logged and the others still resume;
  /// then `done` (the journal list's error, else Ok).
  void ResumeAll(ExperimentContext& ctx, std::function<void(Status)> done);
  /// Takes a new live experiment into the list and the routing table.
  Experiment* Adopt(std::unique_ptr<Experiment> e);
  /// Drops every trace of journal `journal` in this process: live experiments (retired), the
  /// routing table, read-only loads, lsx rows and the JournalReader's lengths.
  void Forget(const std::string& journal);
  /// Live experiments, in submission or resume order.
  const std::vector<std::unique_ptr<Experiment>>& experiments() const { return experiments_; }
  /// Unfinished experiments (Phase kRunning or kResuming), oldest first.
  std::vector<Experiment*> Unfinished() const;
  /// Frees the state of each live experiment that ended and had nothing in flight for
  /// Options::release_after (Experiment::Quiet): it leaves the live list and the routing
  /// table, its lsx row stays (cached at its journal's length) and its trial counts stay in
  /// ReleasedCounts; malloc's free memory goes back to the system. When its read-only form's
  /// bytes fit the finished cache's budget, that form (built from memory, as LoadJournaled would
  /// build it from the journal) goes to the cache as the most recently read, dropping the least
  /// recently read others while over the budget; reads of it then come from the cache, else
  /// (or once dropped) from its journal (FindExperiment, LoadJournaled). `tunectl resume`
  /// replays its journal. Returns how many were released.
  size_t ReleaseFinished();
  /// Trials of the experiments released so far and not deleted, by status (the scheduler's
  /// metrics count them).
  std::map<TrialStatus, int64_t> ReleasedCounts() const;
  /// {"resident": live experiments in memory, "released": experiments released so far,
  ///  "finished_cache": {"entries", "bytes", "capacity_bytes"}}.
  nlohmann::json MemoryJson() const;

  // --- routing ---

  /// The live experiment of `trial_id` (by its experiment id prefix), or null.
  Experiment* ForTrial(const std::string& trial_id) const;
  /// The live experiment with experiment id `experiment_id`, or null.
  Experiment* ById(const std::string& experiment_id) const;
  /// The newest live experiment named `name` (its name or journal name), or null ("": null).
  Experiment* InMemory(const std::string& name) const;
  /// The experiment a request that names none means: the only unfinished one, else (none
  /// unfinished) the newest live one, else null. Errors: FailedPrecondition when several are
  /// unfinished (the message lists them and says to name one with -e/--experiment).
  Result<Experiment*> DefaultExperiment() const;
  /// The live experiment a request that changes one names: the one holding `trial_id` when given,
  /// else the one named `experiment` (name or journal name), else DefaultExperiment's. Errors:
  /// NotFound (no such trial, no such experiment here, "no experiment has been submitted"),
  /// NotFound when the named experiment does not hold the trial, DefaultExperiment's,
  /// FailedPrecondition while it is being resumed.
  Result<Experiment*> Target(const std::string& experiment, const std::string& trial_id = "") const;
  /// Calls `then` with the experiment a read request names: "" = DefaultExperiment's, else (none
  /// in this process) the newest journaled; a name or journal name = the newest such live
  /// experiment, else in the store's journals, loaded read-only (LoadJournaled) after the store
  /// answered; if the name is live by then (submitted or resumed meanwhile), that one. `then`
  /// runs at once for a live experiment, else from the loop; the pointer is valid during `then`.
  /// Errors: NotFound "no experiment has been submitted" (""), or naming the known experiments;
  /// DefaultExperiment's; the JournalReader's.
  void FindExperiment(const std::string& name, std::function<void(Result<Experiment*>)> then);

  // --- names ---

  /// FailedPrecondition when `name` is claimed, or an unfinished experiment here has it.
  Status NameFree(const std::string& name) const;
  bool Claimed(const std::string& name) const { return claimed_names_.contains(name); }
  /// Reserves `name` while its submission or resume waits for the store (Release after).
  void Claim(const std::string& name) { claimed_names_.insert(name); }
  void Release(const std::string& name) { claimed_names_.erase(name); }

  // --- journals not in memory ---

  /// Calls `then` with `journal` replayed into a read-only Experiment, kept in the finished cache
  /// while the journal has the same length and the cache has room (then at once). After `then`,
  /// the cache is trimmed to its budget and malloc's free memory goes back to the system. Appends
  /// nothing, cuts no torn tail, touches no result file or checkpoint.
  void LoadJournaled(const JournalSummary& journal, std::function<void(Result<Experiment*>)> then);
  /// The lsx row of a journal not in memory: {name, journal, status, counts, total,
  /// submitted_at}, from a replay; cached by (journal, last_seq).
  void JournalRow(const JournalLength& journal, std::function<void(Result<nlohmann::json>)> then);
  /// The lsx rows (an array, oldest submission first): one per live experiment, `live_extra`'s
  /// fields added, and one per other journal of `lengths` (JournalRow). `then` runs once all are
  /// in, or with the first error. Rows of journals no longer in `lengths` leave the cache.
  void ListRows(std::vector<JournalLength> lengths,
                std::function<nlohmann::json(const Experiment&)> live_extra,
                std::function<void(Result<nlohmann::json>)> then);
  /// <results directory>/<results_folder, or the experiment's name when "">: Options::results_dir
  /// replaces a results_dir that names a folder beside the experiment file.
  std::string ExperimentDir(const ExperimentSpec& spec, const std::string& results_folder) const;
  JournalReader& journals() { return journals_; }

  // --- rounds ---

  /// Steps each running experiment's runner; one whose runner finished is marked ended (and,
  /// when none is left unfinished, malloc's free memory goes back to the system).
  void StepRunning();
  /// Each live experiment's end of round (Experiment::AfterRound).
  void AfterRound(int64_t snapshot_every_records);
  /// Continues (or starts, when due) the experiment_state.json pass.
  void StepStateFiles();
  /// Writes every live experiment's experiment_state.json now (at stop).
  void WriteStateFiles();
  /// A journal batch waiting for its retry goes now (the store takes writes again).
  void RetryJournals();

 private:
  /// `replayed` (what journal `journal` holds at length `last_seq`, its trials included) as a
  /// read-only Experiment. Errors: the file text's (ParseExperimentYaml); LoadReadOnly's.
  Result<std::unique_ptr<Experiment>> ReadOnly(const std::string& journal, uint64_t last_seq,
                                               journal::ReplayedExperiment replayed);
  /// Puts the read-only form of `e` (ended, Quiet) in the finished cache when its bytes fit the
  /// budget; logs why not otherwise. Reads `e` only.
  void CacheReleased(const Experiment& e);
  /// Rows of the lsx `rows` (by journal), completed with the live experiments' rows.
  nlohmann::json LiveRows(std::map<std::string, nlohmann::json> rows,
                          const std::function<nlohmann::json(const Experiment&)>& live_extra) const;

  Options options_;
  const Clock& clock_;
  JournalReader& journals_;
  std::set<std::string> claimed_names_;
  std::vector<std::unique_ptr<Experiment>> experiments_;
  std::vector<std::unique_ptr<Experiment>> retired_;
  std::map<std::string, Experiment*, std::less<>> by_experiment_id_;
  FinishedCache<Experiment> journaled_;  // read-only loads by journal name
  /// Ended live experiments by when they became Quiet (ReleaseFinished).
  std::map<const Experiment*, SteadyTime> quiet_since_;
  size_t released_ = 0;  // experiments ReleaseFinished freed
  /// Trial counts by status of the released experiments, by journal name (Forget drops one).
  std::map<std::string, std::map<TrialStatus, int64_t>> released_counts_;
  /// lsx rows of journals not in memory by journal name, with the length they were read at.
  std::map<std::string, std::pair<uint64_t, nlohmann::json>> lsx_rows_;
  SteadyTime next_state_file_;
  /// The state files' pass in progress: when it started, what its rounds cost the loop, and
  /// the experiments whose file it has not written yet (the first one's text in progress).
  struct StateFilePass {
    SteadyTime started;
    SteadyTime::duration cost{};
    std::vector<Experiment*> waiting;
  };
  std::optional<StateFilePass> state_file_pass_;
};

}  // namespace tunebus
