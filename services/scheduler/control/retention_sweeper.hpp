// RetentionSweeper: applies the retention policy (core/retention_policy.hpp) to the finished
// experiments in the store's journals, deleting the ones it names through the same path as
// `tunectl delete` (ExperimentHandlers::Delete), one at a time, each with a log line naming
// the experiment and the rule. docs/how-to/retention.md.
//
// A pass (Sweep): list the journals (JournalReader::List: length, submission, end and its
// time); read the first record of each finished journal not seen before for its
// `retention:` (parsed from its spec, cached by journal); judge; delete. A journal is finished
// when its newest record is experiment_ended and no unfinished experiment here or pending
// submission/resume holds it; running and paused experiments are never judged, so never
// deleted nor counted. An end time missing from an older journal is taken as its submission.
//
// When passes run: at Start (after the scheduler resumed from the journals: a policy given at
// restart, or an experiment whose deletion a kill interrupted, is applied then), then, while a
// rule can apply (RetentionRules::any(), or a journal or a live experiment has `retention:`),
// every kPassInterval; with no rule anywhere it never lists again.
//
// Deletion order (ExperimentHandlers::Delete): the results folder first (unless kept), then the
// journal and checkpoints in one durable store write; a kill between the two leaves the
// experiment finished in the journals, and the pass after the restart deletes it again.
//
// Time: Clock::WallSeconds of the scheduler's clock (a ManualClock in tests).
// Threads: the scheduler's loop thread only. Owns nothing but its cache and verdicts.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "libs/bus/event_loop.hpp"
#include "libs/core/clock.hpp"
#include "libs/core/status.hpp"
#include "services/scheduler/core/retention_policy.hpp"
#include "services/scheduler/store/journal_reader.hpp"

namespace tunebus {

class ExperimentRegistry;

class RetentionSweeper {
 public:
  /// Deletes the finished experiment of `journal` (keeping its results folder when
  /// `keep_results`), then `done` with the outcome.
  using DeleteFn = std::function<void(const std::string& journal, bool keep_results,
                                      std::function<void(Status)> done)>;
  static constexpr bus::Duration kPassInterval{2000};

  /// `experiments` and `clock` outlive the sweeper.
  RetentionSweeper(RetentionRules rules, ExperimentRegistry& experiments, const Clock& clock,
                   DeleteFn delete_experiment);
  RetentionSweeper(const RetentionSweeper&) = delete;
  RetentionSweeper& operator=(const RetentionSweeper&) = delete;
  ~RetentionSweeper();

  /// A pass now, then the periodic ones on `loop` (which outlives the sweeper).
  void Start(bus::EventLoop& loop);
  /// Starts a pass unless one is in progress.
  void Sweep();
  /// `tunectl lsx`'s expires text of `journal` from the newest pass (RetentionExpiresText);
  /// "" for a journal it did not judge (unfinished, or not listed yet).
  std::string Expires(const std::string& journal) const;
  const RetentionRules& rules() const { return rules_; }
  /// True when a rule can apply: the scheduler's, or a journal's or a live experiment's
  /// `retention:`.
  bool active() const { return Active(); }
  /// Experiments it deleted since it started.
  int64_t deleted() const { return deleted_; }

 private:
  enum class State { kIdle, kListing, kReading, kDeleting };
  /// A journal's `retention:` as its spec says (nullopt days: none given).
  struct Section {
    std::optional<double> days;
    bool keep_results = false;
    bool given = false;
  };

  void Listed(std::vector<JournalSummary> journals);
  /// Reads the `retention:` of journals_[i..] not cached yet, then Judge.
  void ReadSections(size_t i);
  void Judge();
  /// Deletes doomed_[i..], one after another, then ends the pass.
  void DeleteNext(size_t i);
  void EndPass();
  bool Active() const;

  RetentionRules rules_;
  ExperimentRegistry& experiments_;
  const Clock& clock_;
  DeleteFn delete_;
  bus::EventLoop* loop_ = nullptr;
  bus::EventLoop::TimerId timer_ = 0;
  State state_ = State::kIdle;
  std::vector<JournalSummary> finished_;              // this pass's finished journals
  std::map<std::string, Section> sections_;           // by journal
  std::map<std::string, RetentionVerdict> verdicts_;  // the newest pass's, by journal
  std::vector<RetentionVerdict> doomed_;              // this pass's deletions
  bool any_section_ = false;                          // some journal had `retention:`
  int64_t deleted_ = 0;
};

}  // namespace tunebus
