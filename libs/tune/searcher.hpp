// Searcher: the experiment's search algorithm, fed by results (Ray Tune's `Searcher` API,
// ray.tune.search.Searcher in Ray 2.x; shared/seeds/003 shows how the trial runner drives it:
// next_trial / on_trial_result / on_trial_complete / is_finished / save / restore).
//
// The runner asks Suggest(trial_id) when it wants a new trial (a free slot, as Ray's
// _update_trial_queue), shows every accepted result to OnTrialResult and every trial that ends
// (TERMINATED, ERROR, or stopped by the trial scheduler) to OnTrialComplete. No I/O: an
// implementation that needs a remote process gets it through an object the scheduler owns.
//
// Journaling (DESIGN.md "Journal and recovery"), as the trial scheduler's: every callback that
// changes the state leaves a delta the runner takes with TakeStateDelta right after the call
// and journals (record "searcher") before any effect of it leaves; a snapshot holds SaveState.
// A resume calls RestoreState with the newest snapshot's state (or null) and then
// ApplyStateDelta for every delta journaled after it, in order: the resumed searcher then makes
// the suggestions the uninterrupted one would have made. A searcher whose randomness is drawn
// from its state (seed, number of suggestions) stays deterministic across a resume.
//
// Threading: one thread calls everything (the runner's).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "libs/core/status.hpp"
#include "libs/tune/training_result.hpp"

namespace tunebus {

/// What Searcher::Suggest answers: a config, not now (Ray's `None`: e.g. waiting for results
/// or a concurrency limit), or finished (Ray's `Searcher.FINISHED`: no trial will follow).
struct Suggestion {
  enum class Kind { kConfig, kNotNow, kFinished };
  Kind kind = Kind::kFinished;
  nlohmann::json config;  // kConfig: the resolved config (a JSON object)
  std::string tag;        // kConfig: "lr=0.0012,penalty=l2" (Variant.tag's form), may be ""

  static Suggestion Config(nlohmann::json config, std::string tag) {
    return {Kind::kConfig, std::move(config), std::move(tag)};
  }
  static Suggestion NotNow() { return {Kind::kNotNow, nullptr, ""}; }
  static Suggestion Finished() { return {Kind::kFinished, nullptr, ""}; }
};

class Searcher {
 public:
  virtual ~Searcher() = default;

  /// The name the experiment file uses ("random", "tpe", "bohb", "external").
  virtual const char* name() const = 0;

  /// Ray's set_search_properties(metric, mode, config): the metric to optimise, "max" or "min",
  /// and the param space (validated, VariantGenerator's conventions). Called once, before any
  /// Suggest. Errors: InvalidArgument when the searcher cannot search this space or needs a
  /// metric and mode it did not get (the message names the field).
  virtual Status SetSearchProperties(const std::string& metric, const std::string& mode,
                                     const nlohmann::json& param_space) = 0;

  /// The config of new trial `trial_id`, not now, or finished. Asked again for a trial id it
  /// already answered with a config (a resume whose journal lost the trial_added record after
  /// the searcher's delta), it should answer that config again.
  virtual Suggestion Suggest(const std::string& trial_id) = 0;

  /// Ray's add_evaluated_point(parameters, value): `config` was already evaluated elsewhere and
  /// reached `value` of the metric (the experiment's `evaluated_rewards`, or a
  /// points_to_evaluate trial that ended, fed by the wrapper that ran it). A searcher that learns
  /// from results counts it as an observation before it suggests; the default ignores it (a
  /// searcher whose suggestions do not depend on results). Errors: InvalidArgument when `config`
  /// is not a point of its space.
  virtual Status AddEvaluatedPoint(const nlohmann::json& config, double value) {
    (void)config;
    (void)value;
    return Status::Ok();
  }
  /// AddEvaluatedPoint for a trial of an earlier experiment (warm start, warm_start.hpp) whose
  /// last result, the one `value` comes from, was at `budget` (its training_iteration; NaN when
  /// unknown). A multi-fidelity searcher (bohb) keeps the observation at that budget; the default
  /// is AddEvaluatedPoint(config, value). Errors: as AddEvaluatedPoint.
  virtual Status AddEvaluatedPointAtBudget(const nlohmann::json& config, double value,
                                           double budget) {
    (void)budget;
    return AddEvaluatedPoint(config, value);
  }

  /// A result of `trial_id` was accepted (auto-filled keys included).
  virtual void OnTrialResult(const std::string& trial_id, const TrainingResult& result) {
    (void)trial_id;
    (void)result;
  }
  /// The runner also shows results and ends of trials the searcher did not suggest (`tunectl
  /// add`), and may show a trial's end twice (a resume that requeued it): ignore those.
  ///
  /// `trial_id` ended: `last_result` is its newest result (nullptr if it reported none),
  /// `error` true when it ended in ERROR (Ray's on_trial_complete(trial_id, result, error)).
  virtual void OnTrialComplete(const std::string& trial_id, const TrainingResult* last_result,
                               bool error) {
    (void)trial_id;
    (void)last_result;
    (void)error;
  }

  /// How many suggested trials may wait unstarted at once: the runner suggests only while
  /// fewer are PENDING. A model-based searcher answers 1, so every suggestion sees the newest
  /// results; the variant generator answers a window (suggestions do not depend on results).
  virtual int64_t MaxPendingSuggestions() const { return 1; }
  /// How many configs it will suggest in all, or -1 when unknown or unbounded.
  virtual int64_t Total() const = 0;
  /// How many configs Suggest returned so far.
  virtual int64_t suggested() const = 0;

  /// What `tunectl show` says of it: {"searcher": name(), ...} plus its own fields, e.g.
  /// {"searcher": "tpe", "phase": "startup" | "model", "observations": 12}.
  virtual nlohmann::json Describe() const { return {{"searcher", name()}}; }

  // ---- journaling (see the file comment) ---------------------------------------------------
  /// The whole state, for snapshots.
  virtual nlohmann::json SaveState() const = 0;
  /// Replaces the whole state; null means the initial state. Errors: InvalidArgument when
  /// `state` is not what SaveState returns.
  virtual Status RestoreState(const nlohmann::json& state) = 0;
  /// The changes since the last call, or null if none.
  virtual nlohmann::json TakeStateDelta() { return nullptr; }
  /// Replays one journaled delta. Errors: Corruption for a delta it does not understand.
  virtual Status ApplyStateDelta(const nlohmann::json& delta) {
    (void)delta;
    return Status::Ok();
  }
};

}  // namespace tunebus
