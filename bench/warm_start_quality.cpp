// Warm start against cold start (docs/reference/search.md "Warm start"): on each single-fidelity
// test function of bench/quality/test_functions.hpp, for each seed s, an earlier experiment (the
// searcher cold, seed s + 10000, --earlier-trials trials) runs first; then the same searcher runs
// --trials trials cold (seed s) and warm-started from the earlier one (seed s,
// `warm_start: [earlier]`, the observations as the scheduler reads them: WarmStartSource). The
// figure is the best value of the run's own trials after --trials (the earlier experiment's
// trials do not count), its median over the seeds, and the one-sided Mann-Whitney U test that the
// warm runs' bests are better (normal approximation with tie and continuity corrections, as
// scipy.stats.mannwhitneyu(method="asymptotic")).
//
// Searchers run as MakeSearcher builds them (WarmStart around the type's searcher), strictly
// sequential (each suggestion after the previous trial ended, as Optuna's study.optimize).
//
// Usage: warm_start_quality [--quick] [--seeds N] [--trials N] [--earlier-trials N] [--search TYPE]
//          [--functions F,...]
//   defaults: 20 seeds, 20 trials, 20 earlier trials, search tpe (its defaults), every
//   noise-free function; --quick: 3 seeds (bench/run's CI size). Reports, never fails.
// Prints a markdown table and one JSON line per function ("warm_start_quality").
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/quality/test_functions.hpp"
#include "libs/core/trial.hpp"
#include "libs/spec/experiment_spec.hpp"
#include "libs/tune/make_searcher.hpp"
#include "libs/tune/warm_start_source.hpp"

namespace {

using nlohmann::json;
using namespace tunebus;
using namespace tunebus::bench;

struct Options {
  int seeds = 20, trials = 20, earlier_trials = 20;
  std::string search = "tpe";
  std::vector<std::string> functions;
};

// The function's param space as the experiment file's parser gives it.
json ParamSpace(const TestFunction& f) {
  const std::string yaml = fmt::format(
      "name: f\ntrainable: {{builtin: noop}}\nparam_space: {}\nmetric: value\nmode: {}\n",
      f.param_space_yaml, f.mode);
  auto spec = ParseExperimentYaml(yaml, "/", "f.yaml");
  if (!spec.ok()) {
    fmt::print(stderr, "{}: {}\n", f.name, spec.status().ToString());
    std::exit(2);
  }
  return spec->param_space;
}

SearchSetup Setup(const TestFunction& f, const json& space, uint64_t seed, int trials,
                  const json& warm_sources) {
  SearchSetup setup;
  setup.param_space = space;
  setup.num_samples = trials;
  setup.metric = "value";
  setup.mode = f.mode;
  setup.seed = seed;
  setup.max_concurrent_trials = 1;
  setup.warm_start = warm_sources;
  return setup;
}

// Why the searcher refuses the function's param space (MakeSearcher's error), or "".
std::string Refusal(const TestFunction& f, const json& space, const Options& o) {
  auto searcher = MakeSearcher(o.search, json::object(), Setup(f, space, 1, 1, nullptr));
  return searcher.ok() ? "" : searcher.status().message();
}

// One experiment: `trials` trials of the searcher, sequential; its trials as the runner keeps
// them (TERMINATED, the config, one result).
std::vector<Trial> Run(const TestFunction& f, const json& space, const Options& o, uint64_t seed,
                       int trials, const json& warm_sources) {
  json config = json::object();
  const std::string& type = o.search;
  if (!warm_sources.is_null()) config["warm_start"] = {"earlier"};
  auto searcher = MakeSearcher(type, config, Setup(f, space, seed, trials, warm_sources));
  if (!searcher.ok()) {
    fmt::print(stderr, "{}: {}\n", f.name, searcher.status().ToString());
    std::exit(2);
  }
  std::vector<Trial> out;
  for (int i = 0; i < trials; ++i) {
    const std::string id = fmt::format("t{}", i);
    Suggestion s = (*searcher)->Suggest(id);
    if (s.kind != Suggestion::Kind::kConfig) break;
    const double value = f.value(s.config);
    const json result = {{"value", value}, {"training_iteration", 1}};
    const TrainingResult r = TrainingResult::FromJson(result);
    (*searcher)->OnTrialResult(id, r);
    (*searcher)->OnTrialComplete(id, &r, false);
    Trial t;
    t.trial_id = id;
    t.config = s.config;
    t.status = TrialStatus::kTerminated;
    t.SetLastResult(result);
    out.push_back(std::move(t));
  }
  return out;
}

double Best(const std::vector<Trial>& trials, const std::string& mode) {
  double best = mode == "min" ? INFINITY : -INFINITY;
  for (const Trial& t : trials) {
    const double v = t.LastResult()["value"].get<double>();
    best = mode == "min" ? std::min(best, v) : std::max(best, v);
  }
  return best;
}

double Median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  const size_t n = xs.size();
  return n % 2 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

// One-sided Mann-Whitney U: p that `a` is stochastically less than `b` (scipy's
// mannwhitneyu(a, b, alternative="less", method="asymptotic"): tie-corrected variance,
// continuity correction 0.5).
double MannWhitneyLess(const std::vector<double>& a, const std::vector<double>& b) {
  struct Item {
    double v;
    int group;
  };
  std::vector<Item> all;
  for (double v : a) all.push_back({v, 0});
  for (double v : b) all.push_back({v, 1});
  std::sort(all.begin(), all.end(), [](const Item& x, const Item& y) { return x.v < y.v; });
  const double n1 = double(a.size()), n2 = double(b.size()), n = n1 + n2;
  double rank_sum_a = 0, tie_term = 0;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j < all.size() && all[j].v == all[i].v) ++j;
    const double rank = (double(i + 1) + double(j)) / 2;  // average rank of the tie group
    const double t = double(j - i);
    tie_term += t * t * t - t;
    for (size_t k = i; k < j; ++k) {
      if (all[k].group == 0) rank_sum_a += rank;
    }
    i = j;
  }
  const double u = rank_sum_a - n1 * (n1 + 1) / 2;
  const double mu = n1 * n2 / 2;
  const double sigma = std::sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))));
  if (sigma == 0) return 1.0;
  const double z = (u - mu + 0.5) / sigma;
  return 0.5 * std::erfc(-z / std::sqrt(2.0));
}

bool Wanted(const Options& o, const std::string& name) {
  return o.functions.empty() ||
         std::find(o.functions.begin(), o.functions.end(), name) != o.functions.end();
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        fmt::print(stderr, "{} needs a value\n", a);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--quick") {
      o.seeds = 3;
    } else if (a == "--seeds") {
      o.seeds = std::atoi(next().c_str());
    } else if (a == "--trials") {
      o.trials = std::atoi(next().c_str());
    } else if (a == "--earlier-trials") {
      o.earlier_trials = std::atoi(next().c_str());
    } else if (a == "--search") {
      o.search = next();
    } else if (a == "--functions") {
      std::string list = next();
      for (size_t p = 0; p <= list.size();) {
        const size_t comma = std::min(list.find(',', p), list.size());
        o.functions.push_back(list.substr(p, comma - p));
        p = comma + 1;
      }
    } else {
      fmt::print(
          stderr,
          "usage: warm_start_quality [--quick] [--seeds N] [--trials N] [--earlier-trials N] "
          "[--search TYPE] [--functions F,...]\n");
      return 2;
    }
  }
  fmt::print(
      "| function | cold: median best | warm: median best | warm better | p (one-sided "
      "Mann-Whitney) |\n| --- | --- | --- | --- | --- |\n");
  int better = 0, functions = 0;
  std::vector<std::string> lines;
  for (const TestFunction& f : kTestFunctions) {
    // The noise-free functions: a noisy one's best of 20 would measure the noise's extremes.
    if (!Wanted(o, f.name) || f.noise_sd > 0) continue;
    const json space = ParamSpace(f);
    // A searcher that models a fixed set of params refuses a conditional space: reported, not
    // measured.
    if (std::string why = Refusal(f, space, o); !why.empty()) {
      fmt::print("| {} | — | — | refused: {} | — |\n", f.name, why);
      lines.push_back(json({{"kind", "warm_start_quality_refused"},
                            {"function", f.name},
                            {"search", o.search},
                            {"error", why}})
                          .dump());
      continue;
    }
    std::vector<double> cold, warm;  // bests as losses (negated for mode max)
    const double sign = std::string(f.mode) == "min" ? 1 : -1;
    for (int s = 1; s <= o.seeds; ++s) {
      const std::vector<Trial> earlier =
          Run(f, space, o, uint64_t(s) + 10000, o.earlier_trials, nullptr);
      WarmStartExperiment source{.name = "earlier",
                                 .journal = "earlier-00000",
                                 .param_space = space,
                                 .metric = "value",
                                 .ended = true,
                                 .trials = &earlier};
      auto collected = CollectWarmStart(source, {space, "value"}, 0);
      if (!collected.ok()) {
        fmt::print(stderr, "{}\n", collected.status().ToString());
        return 2;
      }
      cold.push_back(sign * Best(Run(f, space, o, uint64_t(s), o.trials, nullptr), f.mode));
      warm.push_back(
          sign * Best(Run(f, space, o, uint64_t(s), o.trials, json::array({*collected})), f.mode));
    }
    const double p = MannWhitneyLess(warm, cold);
    const double mc = sign * Median(cold), mw = sign * Median(warm);
    const bool wins = Median(warm) < Median(cold);
    better += wins;
    ++functions;
    fmt::print("| {} | {:.4g} | {:.4g} | {} | {:.2g} |\n", f.name, mc, mw, wins ? "yes" : "no", p);
    lines.push_back(json({{"kind", "warm_start_quality"},
                          {"function", f.name},
                          {"search", o.search},
                          {"seeds", o.seeds},
                          {"trials", o.trials},
                          {"earlier_trials", o.earlier_trials},
                          {"cold_best", cold},
                          {"warm_best", warm},
                          {"p_warm_better", p}})
                        .dump());
  }
  fmt::print("\nwarm start better in median on {} of {} functions\n", better, functions);
  for (const std::string& l : lines) fmt::print("{}\n", l);
  return 0;
}
