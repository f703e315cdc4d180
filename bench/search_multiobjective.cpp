// Multi-objective search benchmark, tunebus' side (docs/reference/search.md "Many objectives"): the
// searchers nsga2 and motpe, built by MakeSearcher from a SearchSetup with two or three
// objectives, on ZDT1, ZDT2, ZDT3 (Zitzler, Deb, Thiele, "Comparison of multiobjective
// evolutionary algorithms: empirical results", Evolutionary Computation 8(2), 2000) and DTLZ2
// (Deb, Thiele, Laumanns, Zitzler, "Scalable multi-objective optimization test problems", CEC
// 2002; 3 objectives, k = 10), every param uniform in [0, 1]. Each trial reports its objective
// values once; trials run strictly one after another (as Optuna's study.optimize), the searcher
// fed directly (Suggest, then OnTrialComplete with the result), without the cluster.
//
// Prints one JSON line per (method, function), the shape of bench/multiobjective_optuna.py's:
//   {"benchmark": "multiobjective_run", "side": "tunebus", "method", "function", "dims",
//    "objectives", "first_seed", "seeds", "trials", "reference", "hypervolume": [final
//    hypervolume of all trials' values per seed], "seconds"}
// bench/multiobjective_report.py compares both sides.
//
// Usage: search_multiobjective [--quick] [--seeds N] [--trials N] [--first-seed N]
//          [--functions zdt1,...] [--methods nsga2,motpe,...] [--method NAME=SEARCH_JSON]
//   --quick: CI-sized (2 seeds of 60 trials). --method: one more method, its `search:` section
//   as JSON, e.g. 'nsga2_crowded={"type": "nsga2", "tournament": "crowded"}'.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <numbers>
#include <sstream>
#include <string>
#include <vector>

#include "libs/tune/make_searcher.hpp"
#include "libs/tune/pareto.hpp"

namespace {

using nlohmann::json;
using tunebus::Objective;

// ZDT1-3 with n = 10 (the papers use 30; 10 keeps Optuna's TPE side within the benchmark's time:
// bench/multiobjective_optuna.py takes about 80 s per run of 250 trials at n = 30).
constexpr int kZdtDims = 10;
constexpr int kDtlz2Dims = 12;  // M + k - 1 with M = 3, k = 10 (Deb et al. 2002's k)

double ZdtG(const std::vector<double>& x) {
  double sum = 0;
  for (size_t i = 1; i < x.size(); ++i) sum += x[i];
  return 1 + 9 * sum / double(x.size() - 1);
}

std::vector<double> Zdt1(const std::vector<double>& x) {
  const double g = ZdtG(x);
  return {x[0], g * (1 - std::sqrt(x[0] / g))};
}
std::vector<double> Zdt2(const std::vector<double>& x) {
  const double g = ZdtG(x);
  return {x[0], g * (1 - (x[0] / g) * (x[0] / g))};
}
std::vector<double> Zdt3(const std::vector<double>& x) {
  const double g = ZdtG(x);
  const double h = 1 - std::sqrt(x[0] / g) - (x[0] / g) * std::sin(10 * std::numbers::pi * x[0]);
  return {x[0], g * h};
}
std::vector<double> Dtlz2(const std::vector<double>& x) {
  const size_t m = 3;
  double g = 0;
  for (size_t i = m - 1; i < x.size(); ++i) g += (x[i] - 0.5) * (x[i] - 0.5);
  std::vector<double> f(m);
  for (size_t i = 0; i < m; ++i) {
    double v = 1 + g;
    for (size_t j = 0; j + 1 + i < m; ++j) v *= std::cos(x[j] * std::numbers::pi / 2);
    if (i > 0) v *= std::sin(x[m - 1 - i] * std::numbers::pi / 2);
    f[i] = v;
  }
  return f;
}

struct Function {
  std::string name;
  std::vector<double> (*f)(const std::vector<double>&);
  int dims;
  std::vector<double> reference;  // fixed per function, the same on Optuna's side
};

const std::vector<Function>& Functions() {
  static const std::vector<Function> functions = {
      {"zdt1", Zdt1, kZdtDims, {1.1, 11.0}},
      {"zdt2", Zdt2, kZdtDims, {1.1, 11.0}},
      {"zdt3", Zdt3, kZdtDims, {1.1, 11.0}},
      {"dtlz2", Dtlz2, kDtlz2Dims, {2.5, 2.5, 2.5}},
  };
  return functions;
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// The final hypervolume of one run of `search` (a `search:` section as JSON) on `f`.
double Run(const Function& f, const json& search, uint64_t seed, int trials) {
  tunebus::SearchSetup setup;
  for (int i = 0; i < f.dims; ++i) {
    setup.param_space[fmt::format("x{}", i)] = {{"uniform", {0.0, 1.0}}};
  }
  setup.num_samples = trials;
  setup.seed = seed;
  for (size_t i = 0; i < f.reference.size(); ++i) {
    setup.objectives.push_back({fmt::format("f{}", i + 1), "min"});
  }
  setup.metric = setup.objectives[0].metric;
  setup.mode = "min";
  const std::string type = search.value("type", "random");
  json params = search;
  params.erase("type");
  auto searcher = tunebus::MakeSearcher(type, params, setup);
  if (!searcher.ok()) {
    std::fprintf(stderr, "search_multiobjective: %s\n", searcher.status().ToString().c_str());
    std::exit(2);
  }
  std::vector<std::vector<double>> values;
  for (int t = 0; t < trials; ++t) {
    const std::string id = fmt::format("t{}", t);
    tunebus::Suggestion s = (*searcher)->Suggest(id);
    if (s.kind != tunebus::Suggestion::Kind::kConfig) {
      std::fprintf(stderr, "search_multiobjective: no config for trial %d\n", t);
      std::exit(2);
    }
    std::vector<double> x(size_t(f.dims));
    for (int i = 0; i < f.dims; ++i) x[size_t(i)] = s.config[fmt::format("x{}", i)].get<double>();
    const std::vector<double> y = f.f(x);
    tunebus::TrainingResult r;
    for (size_t i = 0; i < y.size(); ++i) r.SetDouble(fmt::format("f{}", i + 1), y[i]);
    r.SetInt("training_iteration", 1);
    (*searcher)->OnTrialComplete(id, &r, false);
    values.push_back(y);
  }
  return tunebus::Hypervolume(values, f.reference);
}

}  // namespace

int main(int argc, char** argv) {
  int seeds = 20, trials = 200, first_seed = 1;
  std::vector<std::string> functions = {"zdt1", "zdt2", "zdt3", "dtlz2"};
  std::vector<std::pair<std::string, json>> methods = {{"nsga2", {{"type", "nsga2"}}},
                                                       {"motpe", {{"type", "motpe"}}}};
  std::vector<std::string> only_methods;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "search_multiobjective: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--quick") {
      seeds = 2;
      trials = 60;
    } else if (arg == "--seeds") {
      seeds = std::stoi(next());
    } else if (arg == "--trials") {
      trials = std::stoi(next());
    } else if (arg == "--first-seed") {
      first_seed = std::stoi(next());
    } else if (arg == "--functions") {
      functions = Split(next());
    } else if (arg == "--methods") {
      only_methods = Split(next());
    } else if (arg == "--method") {
      const std::string spec = next();
      const size_t eq = spec.find('=');
      if (eq == std::string::npos) {
        std::fprintf(stderr, "search_multiobjective: --method NAME=SEARCH_JSON\n");
        return 2;
      }
      methods.emplace_back(spec.substr(0, eq), json::parse(spec.substr(eq + 1)));
    } else {
      std::fprintf(stderr, "search_multiobjective: unknown flag %s\n", arg.c_str());
      return 2;
    }
  }
  for (const auto& [method, search] : methods) {
    if (!only_methods.empty() &&
        std::find(only_methods.begin(), only_methods.end(), method) == only_methods.end()) {
      continue;
    }
    for (const std::string& name : functions) {
      const Function* f = nullptr;
      for (const Function& candidate : Functions()) {
        if (candidate.name == name) f = &candidate;
      }
      if (f == nullptr) {
        std::fprintf(stderr, "search_multiobjective: unknown function %s\n", name.c_str());
        return 2;
      }
      const auto start = std::chrono::steady_clock::now();
      std::vector<double> volumes;
      for (int s = first_seed; s < first_seed + seeds; ++s) {
        volumes.push_back(Run(*f, search, uint64_t(s), trials));
      }
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const json line = {{"benchmark", "multiobjective_run"},
                         {"side", "tunebus"},
                         {"method", method},
                         {"search", search},
                         {"function", name},
                         {"dims", f->dims},
                         {"objectives", f->reference.size()},
                         {"first_seed", first_seed},
                         {"seeds", seeds},
                         {"trials", trials},
                         {"reference", f->reference},
                         {"hypervolume", volumes},
                         {"seconds", std::round(seconds * 10) / 10}};
      std::printf("%s\n", line.dump().c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}
