// Pareto dominance over several objectives: the loss vectors of results, non-dominated sorting,
// crowding distance and the hypervolume indicator. The multi-objective searchers (nsga2, motpe),
// `tunectl best` and the benchmark share them. Every function is pure; losses are minimised.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace tunebus {

/// One objective of an experiment: a metric of its results and whether to maximise it.
struct Objective {
  std::string metric;
  std::string mode;  // "max" | "min"
};

/// A result's loss vector over `objectives` (a "max" metric negated, so every entry is minimised),
/// or std::nullopt when a metric is missing or not a finite number (a JSON bool is not a number).
/// `result` is a result as a JSON object (TrainingResult::ToJson); metrics are its top-level keys.
std::optional<std::vector<double>> Losses(const std::vector<Objective>& objectives,
                                          const nlohmann::json& result);

/// a dominates b: a <= b in every entry and < in one (minimisation). Precondition: same size.
bool Dominates(const std::vector<double>& a, const std::vector<double>& b);

/// Fast non-dominated sort (Deb, Pratap, Agarwal, Meyarivan, "A fast and elitist multiobjective
/// genetic algorithm: NSGA-II", IEEE TEC 6(2) 2002, section III-A): the indices of `losses` by
/// front, front 0 the Pareto front (no point dominates its members); each front's indices in
/// ascending order. Equal vectors do not dominate each other, so they share a front. O(M N^2).
std::vector<std::vector<size_t>> NonDominatedSort(const std::vector<std::vector<double>>& losses);

/// NonDominatedSort(...)[0] (empty input: empty).
std::vector<size_t> ParetoFront(const std::vector<std::vector<double>>& losses);

/// Crowding distance of each member of one front (Deb et al. 2002, section III-B), in `front`'s
/// order: per objective, the members sorted by it (stable), the two extremes get +infinity and
/// each other member the gap between its neighbours divided by the objective's range (max - min);
/// an objective on which every member is equal adds nothing (no division by zero). The sums over
/// the objectives. As Optuna 3.1.0's _calc_crowding_distance for finite values.
std::vector<double> CrowdingDistance(const std::vector<std::vector<double>>& losses,
                                     const std::vector<size_t>& front);

/// The hypervolume dominated by `points` and bounded by `reference` (minimisation): the Lebesgue
/// measure of the union of the boxes [p, reference]. Points not strictly better than the
/// reference in every entry contribute nothing. Exact: 1 and 2 objectives by a sweep
/// (O(N log N)), 3+ by WFG (While, Bradstreet, Barone, "A fast way of calculating exact
/// hypervolumes", IEEE TEC 16(1) 2012; Optuna 3.1.0's optuna._hypervolume.WFG): the sum of each
/// point's exclusive hypervolume, its box minus the hypervolume of the later points limited to
/// it. Precondition: every point has reference.size() entries.
double Hypervolume(const std::vector<std::vector<double>>& points,
                   const std::vector<double>& reference);

}  // namespace tunebus
