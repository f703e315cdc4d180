// Nsga2Searcher: NSGA-II (Deb, Pratap, Agarwal, Meyarivan, "A fast and elitist multiobjective
// genetic algorithm: NSGA-II", IEEE TEC 6(2) 2002) as Optuna 3.1.0's NSGAIISampler
// (optuna/samplers/nsgaii/_sampler.py, _crossover.py) with its defaults and behaviour:
//
// - Generations: a suggestion belongs to generation g + 1 when g is the newest generation whose
//   parent population is known (-1 before any: generation 0, drawn at random, as the variant
//   generator draws). Generation g's population is known once population_size of its trials
//   are complete: its completed trials plus generation g - 1's parent population, cut to
//   population_size by elitist selection (section III-C): whole fronts of the non-dominated sort
//   while they fit, then the next front by descending crowding distance (ties: oldest first).
//   Trials still running when their generation closes join no population.
// - A child (section III-C's "usual binary tournament selection, recombination, and mutation"):
//   with probability crossover_prob, uniform crossover (Syswerda 1989; Optuna's
//   UniformCrossover) of two parents, each param from the second with probability
//   swapping_prob; else a copy of one parent drawn uniformly. Each parent is the winner of a
//   binary tournament between two members drawn uniformly (with replacement; the second parent
//   from the population without the first): tournament "crowded" (default: the paper's
//   crowded-comparison operator, section III-B: lower front rank, then larger crowding distance,
//   else the second) or "dominance" (Optuna 3.1.0's _select_parent: the first if it dominates
//   the second, else the second). The multi-objective benchmark (docs/reference/search.md "Many
//   objectives") measured crowded's median hypervolume above dominance's on ZDT1-3 and DTLZ2. Then
//   each param is mutated with probability mutation_prob (default 1 / number of params, Optuna's):
//   redrawn at random from its sampling function. Every sampling function of the param space works
//   (log, quantised, int, choice, nested keys): params are copied as values, never encoded.
//   crossover "sbx": numeric params by simulated binary crossover (Deb, Agrawal, Complex Systems 9,
//   1995; the operator of the NSGA-II paper's section V; Optuna 3.1.0's SBXCrossover, eta =
//   sbx_eta) in model coordinates (log params in log space), snapped to the param's values; choices
//   by uniform crossover (as Optuna).
// - Observations, determinism and journaling: MultiObjectiveSearcher's (a suggest event carries
//   its generation). Random numbers are tunebus' own, so a seed does not reproduce Optuna's
//   sequence. points_to_evaluate and evaluated points join no generation (Optuna's add_trial
//   trials carry no generation either).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "libs/core/status.hpp"
#include "libs/tune/multiobjective_searcher.hpp"

namespace tunebus {

/// NSGAIISampler's arguments (Optuna 3.1.0 defaults) and the tournament and crossover (see the
/// file comment; the tournament's default is the paper's, not Optuna's).
struct Nsga2Options {
  enum class Tournament { kDominance, kCrowded };
  enum class Crossover { kUniform, kSbx };
  int64_t population_size = 50;                  // >= 2
  double mutation_prob = -1;                     // in [0, 1]; < 0: 1 / number of params
  double crossover_prob = 0.9;                   // in [0, 1]
  double swapping_prob = 0.5;                    // in [0, 1]
  Tournament tournament = Tournament::kCrowded;  // Optuna 3.1.0: kDominance (file comment)
  Crossover crossover = Crossover::kUniform;
  double sbx_eta = 20;  // > 0; Optuna's SBXCrossover default with several objectives

  /// From the experiment file's `search:` map (JSON) with the keys above (mutation_prob: a number
  /// or null; tournament: "dominance" or "crowded"; crossover: "uniform" or "sbx"). The runner's
  /// keys are ignored. Errors: InvalidArgument "<key>: <what is wrong>", e.g. "population_size:
  /// must be >= 2, got 1".
  static Result<Nsga2Options> Parse(const nlohmann::json& params);
};

class Nsga2Searcher final : public MultiObjectiveSearcher {
 public:
  Nsga2Searcher(Nsga2Options options, std::vector<Objective> objectives, int64_t num_samples,
                uint64_t seed);

  const char* name() const override { return "nsga2"; }
  /// {"searcher": "nsga2", "generation": newest closed generation (-1: none), "observations",
  /// "running"}.
  nlohmann::json Describe() const override;

  /// The newest generation whose population is known (-1: none) and that population (indices
  /// into trials(), elite first: fronts in order, the last cut by crowding distance).
  struct Population {
    int64_t generation = -1;
    std::vector<size_t> members;
  };
  Population ParentPopulation() const;
  const Nsga2Options& options() const { return options_; }

 protected:
  nlohmann::json NewConfig(SearchRng& rng, int64_t* generation) override;

 private:
  // Elitist selection of population_size of `candidates` (indices into trials()).
  std::vector<size_t> SelectElite(const std::vector<size_t>& candidates) const;
  // Binary tournament among `pool` (indices into trials()); rank/crowding per pool entry.
  size_t Tournament(SearchRng& rng, const std::vector<size_t>& pool,
                    const std::vector<size_t>& rank, const std::vector<double>& crowding) const;

  // Crossover "sbx": the child's value of each numeric param of parents `first` and `second`
  // (nullopt: a choice, or a value missing).
  std::vector<std::optional<nlohmann::json>> SimulatedBinaryCrossover(
      SearchRng& rng, const nlohmann::json& first, const nlohmann::json& second) const;

  Nsga2Options options_;
};

}  // namespace tunebus
