#include "libs/tune/nsga2_searcher.hpp"

#include <algorithm>
#include <map>
#include <numeric>

#include "libs/tune/searcher_params.hpp"

namespace tunebus {

using nlohmann::json;

Result<Nsga2Options> Nsga2Options::Parse(const json& params) {
  SearcherParams p(params, "nsga2");
  if (Status s = p.OnlyKnown(
          {"population_size", "mutation_prob", "crossover_prob", "swapping_prob", "tournament"});
      !s.ok()) {
    return s;
  }
  Nsga2Options o;
  auto population = p.Int("population_size", o.population_size, 2);
  auto crossover = p.Number("crossover_prob", o.crossover_prob, 0);
  auto swapping = p.Number("swapping_prob", o.swapping_prob, 0);
  auto tournament = p.String("tournament", "dominance", {"dominance", "crowded"});
  Result<double> mutation = o.mutation_prob;
  if (params.is_object() && params.contains("mutation_prob") &&
      !params["mutation_prob"].is_null()) {
    mutation = p.Number("mutation_prob", 0, 0);
  }
  for (const Status& s : {population.status(), crossover.status(), swapping.status(),
                          tournament.status(), mutation.status()}) {
    if (!s.ok()) return s;
  }
  for (const auto& [key, value] : {std::pair<const char*, double>{"crossover_prob", *crossover},
                                   {"swapping_prob", *swapping},
                                   {"mutation_prob", *mutation}}) {
    if (value > 1) {
      return SearcherParams::Error(key,
                                   "must be a probability in [0, 1], got " + json(value).dump());
    }
  }
  o.population_size = *population;
  o.crossover_prob = *crossover;
  o.swapping_prob = *swapping;
  o.mutation_prob = *mutation;
  o.tournament = *tournament == "crowded" ? Tournament::kCrowded : Tournament::kDominance;
  return o;
}

Nsga2Searcher::Nsga2Searcher(Nsga2Options options, std::vector<Objective> objectives,
                             int64_t num_samples, uint64_t seed)
    : MultiObjectiveSearcher(std::move(objectives), num_samples, seed), options_(options) {}

std::vector<size_t> Nsga2Searcher::SelectElite(const std::vector<size_t>& candidates) const {
  const size_t size = size_t(options_.population_size);
  std::vector<std::vector<double>> losses;
  losses.reserve(candidates.size());
  for (size_t i : candidates) losses.push_back(trials()[i].losses);
  std::vector<size_t> elite;
  for (const std::vector<size_t>& front : NonDominatedSort(losses)) {
    if (elite.size() + front.size() < size) {
      for (size_t j : front) elite.push_back(candidates[j]);
      continue;
    }
    const std::vector<double> distance = CrowdingDistance(losses, front);
    std::vector<size_t> order(front.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      if (distance[a] != distance[b]) return distance[a] > distance[b];
      return candidates[front[a]] < candidates[front[b]];
    });
    for (size_t r = 0; elite.size() < size; ++r) elite.push_back(candidates[front[order[r]]]);
    break;
  }
  return elite;
}

Nsga2Searcher::Population Nsga2Searcher::ParentPopulation() const {
  std::map<int64_t, std::vector<size_t>> by_generation;
  for (size_t i = 0; i < trials().size(); ++i) {
    const Trial& t = trials()[i];
    if (t.generation >= 0 && t.state == TrialState::kComplete) {
      by_generation[t.generation].push_back(i);
    }
  }
  Population parents;
  for (int64_t g = 0;; ++g) {
    auto it = by_generation.find(g);
    if (it == by_generation.end() || int64_t(it->second.size()) < options_.population_size) break;
    std::vector<size_t> candidates = it->second;
    candidates.insert(candidates.end(), parents.members.begin(), parents.members.end());
    parents.members = SelectElite(candidates);
    parents.generation = g;
  }
  return parents;
}

size_t Nsga2Searcher::Tournament(SearchRng& rng, const std::vector<size_t>& pool,
                                 const std::vector<size_t>& rank,
                                 const std::vector<double>& crowding) const {
  const size_t a = size_t(rng.Index(pool.size()));
  const size_t b = size_t(rng.Index(pool.size()));
  if (options_.tournament == Nsga2Options::Tournament::kDominance) {
    return Dominates(trials()[pool[a]].losses, trials()[pool[b]].losses) ? a : b;
  }
  if (rank[a] != rank[b]) return rank[a] < rank[b] ? a : b;
  return crowding[a] > crowding[b] ? a : b;
}

json Nsga2Searcher::NewConfig(SearchRng& rng, int64_t* generation) {
  const Population parents = ParentPopulation();
  *generation = parents.generation + 1;
  json child = space().RandomConfig(rng.Next());
  if (parents.generation < 0) return child;
  const std::vector<size_t>& pool = parents.members;
  // Front rank and crowding distance of each member within the population (crowded tournament).
  std::vector<size_t> rank(pool.size(), 0);
  std::vector<double> crowding(pool.size(), 0.0);
  if (options_.tournament == Nsga2Options::Tournament::kCrowded) {
    std::vector<std::vector<double>> losses;
    for (size_t i : pool) losses.push_back(trials()[i].losses);
    const auto fronts = NonDominatedSort(losses);
    for (size_t r = 0; r < fronts.size(); ++r) {
      const std::vector<double> distance = CrowdingDistance(losses, fronts[r]);
      for (size_t j = 0; j < fronts[r].size(); ++j) {
        rank[fronts[r][j]] = r;
        crowding[fronts[r][j]] = distance[j];
      }
    }
  }
  const size_t num_params = space().size();
  std::vector<size_t> source(num_params);  // the trial each param comes from
  if (rng.Uniform01() < options_.crossover_prob) {
    const size_t first = Tournament(rng, pool, rank, crowding);
    std::vector<size_t> rest, rest_rank;
    std::vector<double> rest_crowding;
    for (size_t j = 0; j < pool.size(); ++j) {
      if (j == first) continue;
      rest.push_back(pool[j]);
      rest_rank.push_back(rank[j]);
      rest_crowding.push_back(crowding[j]);
    }
    const size_t second = rest[Tournament(rng, rest, rest_rank, rest_crowding)];
    for (size_t d = 0; d < num_params; ++d) {
      source[d] = rng.Uniform01() >= options_.swapping_prob ? second : pool[first];
    }
  } else {
    std::fill(source.begin(), source.end(), pool[size_t(rng.Index(pool.size()))]);
  }
  const double mutation_prob = options_.mutation_prob >= 0
                                   ? options_.mutation_prob
                                   : 1.0 / std::max(1.0, double(num_params));
  for (size_t d = 0; d < num_params; ++d) {
    if (rng.Uniform01() < mutation_prob) continue;  // keeps the random draw
    if (const json* value = space().Value(trials()[source[d]].config, d)) {
      space().SetValue(child, d, *value);
    }
  }
  return child;
}

json Nsga2Searcher::Describe() const {
  return {{"searcher", name()},
          {"generation", ParentPopulation().generation},
          {"observations", num_observations()},
          {"running", num_running()}};
}

}  // namespace tunebus
