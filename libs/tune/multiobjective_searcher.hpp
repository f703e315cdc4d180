// MultiObjectiveSearcher: what the multi-objective searchers (nsga2, motpe) share: the
// objectives, the param space, and the trials with their loss vectors, kept as TpeSearcher keeps
// its trials (journaled as events, so a resume replays them).
//
// - Objectives: given at construction (the experiment's `metric: [a, b]` / `mode: [max, min]`),
//   or, when none are, the one of SetSearchProperties(metric, mode).
// - Observations: a trial's value is the loss vector (pareto.hpp's Losses: a "max" metric
//   negated) of its last result when it ends; a trial that ended in ERROR, or whose last result
//   misses a metric or holds a non-finite one, is no observation (Optuna ignores failed trials).
// - Determinism: suggestion k draws its randomness from SearchRng(seed, k), so the state is just
//   the trials (in suggestion order: id, config, generation, running / complete losses /
//   dropped), changed only by Apply through three events:
//     {"suggest": trial_id, "config": {...}(, "generation": g)}   a suggestion was made
//     {"complete": trial_id, "losses": [x, ...] | null}           it ended (null: no observation)
//     {"evaluated": {...config}, "losses": [x]}                   a point evaluated elsewhere
//   The same seed and the same events in the same order give the same suggestions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "libs/core/status.hpp"
#include "libs/tune/journaled_searcher.hpp"
#include "libs/tune/pareto.hpp"
#include "libs/tune/search_rng.hpp"
#include "libs/tune/search_space.hpp"

namespace tunebus {

class MultiObjectiveSearcher : public JournaledSearcher {
 public:
  enum class TrialState {
    kRunning,   // suggested, not ended
    kComplete,  // ended with a loss vector: an observation
    kDropped,   // ended without one (error, missing metric)
  };
  struct Trial {
    std::string id;  // "" for an evaluated point
    nlohmann::json config;
    int64_t generation = -1;  // nsga2's generation (-1: none)
    TrialState state = TrialState::kRunning;
    std::vector<double> losses;  // kComplete: one per objective, minimised
  };

  /// objectives: empty (one, from SetSearchProperties) or the experiment's; num_samples: how many
  /// configs to suggest in all, -1 for unbounded.
  MultiObjectiveSearcher(std::vector<Objective> objectives, int64_t num_samples, uint64_t seed);

  /// Errors: InvalidArgument "metric: ..." / "mode: ..." without objectives and without a metric
  /// and a mode max or min (or an objective whose mode is neither), and SearchSpace::Create's.
  Status SetSearchProperties(const std::string& metric, const std::string& mode,
                             const nlohmann::json& param_space) override;
  /// A config (NewConfig's), or Finished after num_samples (or before SetSearchProperties
  /// succeeded). A trial_id it already suggested for gets the same config again, and nothing
  /// changes. An empty trial_id gets NotNow.
  Suggestion Suggest(const std::string& trial_id) override;
  void OnTrialComplete(const std::string& trial_id, const TrainingResult* last_result,
                       bool error) override;
  /// With one objective: `config` reached `value` of it elsewhere (a completed observation, in
  /// order with the trials). A non-finite value is ignored. Errors: FailedPrecondition before
  /// SetSearchProperties; InvalidArgument "evaluated_rewards: ..." with 2+ objectives (one
  /// number cannot give a loss vector) and "<param>: ..." when `config` has no value of a param.
  Status AddEvaluatedPoint(const nlohmann::json& config, double value) override;

  int64_t Total() const override { return num_samples_; }
  int64_t suggested() const override { return suggested_; }

  /// {"trials": [{"id", "config", "generation", "state": "running" | "complete" | "dropped",
  /// "losses"}...]}.
  nlohmann::json SaveState() const override;
  Status RestoreState(const nlohmann::json& state) override;

  const std::vector<Objective>& objectives() const { return objectives_; }
  const std::vector<Trial>& trials() const { return trials_; }
  int64_t num_observations() const { return complete_; }
  int64_t num_running() const { return running_; }

 protected:
  /// The config of suggestion number k (rng: SearchRng(seed, k)); sets *generation when the
  /// searcher has generations. REQUIRES: SetSearchProperties succeeded.
  virtual nlohmann::json NewConfig(SearchRng& rng, int64_t* generation) = 0;
  Status Apply(const nlohmann::json& event) override;
  const SearchSpace& space() const { return *space_; }

 private:
  void Reset();

  std::vector<Objective> objectives_;
  bool objectives_given_;
  int64_t num_samples_;
  uint64_t seed_;
  std::optional<SearchSpace> space_;
  std::vector<Trial> trials_;  // in suggestion order
  std::unordered_map<std::string, size_t> index_;
  int64_t suggested_ = 0, complete_ = 0, running_ = 0;
};

}  // namespace tunebus
