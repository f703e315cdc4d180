#include "libs/tune/nsga2_searcher.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>

#include "libs/tune/searcher_params.hpp"

namespace tunebus {

using nlohmann::json;

Result<Nsga2Options> Nsga2Options::Parse(const json& params) {
  SearcherParams p(params, "nsga2");
  if (Status s = p.OnlyKnown({"population_size", "mutation_prob", "crossover_prob", "swapping_prob",
                              "tournament", "crossover", "sbx_eta"});
      !s.ok()) {
    return s;
  }
  Nsga2Options o;
  auto population = p.Int("population_size", o.population_size, 2);
  auto crossover = p.Number("crossover_prob", o.crossover_prob, 0);
  auto swapping = p.Number("swapping_prob", o.swapping_prob, 0);
  auto tournament = p.String("tournament", "crowded", {"crowded", "dominance"});
  auto crossover_kind = p.String("crossover", "uniform", {"uniform", "sbx"});
  auto eta = p.Number("sbx_eta", o.sbx_eta, 0, /*exclusive=*/true);
  Result<double> mutation = o.mutation_prob;
  if (params.is_object() && params.contains("mutation_prob") &&
      !params["mutation_prob"].is_null()) {
    mutation = p.Number("mutation_prob", 0, 0);
  }
  for (const Status& s :
       {population.status(), crossover.status(), swapping.status(), tournament.status(),
        mutation.status(), crossover_kind.status(), eta.status()}) {
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
  o.tournament = *tournament == "dominance" ? Tournament::kDominance : Tournament::kCrowded;
  o.crossover = *crossover_kind == "sbx" ? Crossover::kSbx : Crossover::kUniform;
  o.sbx_eta = *eta;
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
  std::vector<std::optional<json>> sbx;    // crossover sbx: the numeric params' values
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
    if (options_.crossover == Nsga2Options::Crossover::kSbx) {
      sbx = SimulatedBinaryCrossover(rng, trials()[pool[first]].config, trials()[second].config);
    }
  } else {
    std::fill(source.begin(), source.end(), pool[size_t(rng.Index(pool.size()))]);
  }
  const double mutation_prob = options_.mutation_prob >= 0
                                   ? options_.mutation_prob
                                   : 1.0 / std::max(1.0, double(num_params));
  for (size_t d = 0; d < num_params; ++d) {
    if (rng.Uniform01() < mutation_prob) continue;  // keeps the random draw
    if (d < sbx.size() && sbx[d]) {
      space().SetValue(child, d, *sbx[d]);
    } else if (const json* value = space().Value(trials()[source[d]].config, d)) {
      space().SetValue(child, d, *value);
    }
  }
  return child;
}

std::vector<std::optional<json>> Nsga2Searcher::SimulatedBinaryCrossover(SearchRng& rng,
                                                                         const json& first,
                                                                         const json& second) const {
  const size_t num_params = space().size();
  std::vector<double> x1(num_params), x2(num_params);
  space().Encode(first, x1.data());
  space().Encode(second, x2.data());
  const double eta = options_.sbx_eta;
  std::vector<std::optional<json>> out(num_params);
  for (size_t d = 0; d < num_params; ++d) {
    const SearchDim& dim = space().dims()[d];
    // Optuna 3.1.0's SBXCrossover draws u for every numeric param, then picks per param.
    const double u = rng.Uniform01();
    const double pick_child = rng.Uniform01(), pick_which = rng.Uniform01();
    if (dim.kind == SearchDim::Kind::kCategorical || dim.kind == SearchDim::Kind::kAny ||
        std::isnan(x1[d]) || std::isnan(x2[d])) {
      continue;  // uniform crossover (source)
    }
    const double low = dim.parzen.low, high = dim.parzen.high;
    const double lo = std::min(x1[d], x2[d]), hi = std::max(x1[d], x2[d]);
    const double diff = std::max(hi - lo, 1e-10);
    double t;
    if (pick_child < 0.5) {
      // Deb & Agrawal 1995 with the bounded spread of Deb's NSGA-II code (equations 3 to 5 in
      // Optuna's comments): beta from the distance to the nearer bound.
      auto betaq = [&](double beta) {
        const double alpha = 2 - std::pow(beta, -(eta + 1));
        return u > 1 / alpha ? std::pow(1 / (2 - u * alpha), 1 / (eta + 1))
                             : std::pow(u * alpha, 1 / (eta + 1));
      };
      t = pick_which < 0.5 ? 0.5 * ((lo + hi) - betaq(1 + 2 * (lo - low) / diff) * diff)
                           : 0.5 * ((lo + hi) + betaq(1 + 2 * (high - hi) / diff) * diff);
    } else {
      t = pick_which < 0.5 ? x1[d] : x2[d];
    }
    if (!std::isfinite(t)) continue;
    const double value = space().ToValue(d, std::clamp(t, low, high));
    out[d] = dim.kind == SearchDim::Kind::kInt ? json(int64_t(value)) : json(value);
  }
  return out;
}

json Nsga2Searcher::Describe() const {
  return {{"searcher", name()},
          {"generation", ParentPopulation().generation},
          {"observations", num_observations()},
          {"running", num_running()}};
}

}  // namespace tunebus
