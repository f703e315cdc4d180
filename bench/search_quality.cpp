// Search quality benchmark, tunebus' side (docs/reference/search.md "Search quality
// benchmark"). Every experiment runs through the real spec parser, MakeSearcher, TrialRunner and
// trial scheduler on the simulated executor and clock of bench/quality (so the results are
// what a user's run would get, and deterministic per seed):
//
// - single-fidelity: the test functions of bench/quality/test_functions.hpp (Branin, six-hump
//   camel, Hartmann-6 with and without noise, Styblinski-Tang 8-d, the 10-d mixed space, the
//   conditional space, Levy 20-d) and the digits model (bench/quality/digits_objective.py,
//   evaluated by a Python child process, see --python); each trial reports the value once.
//   Methods (kMethods): random (the variant generator), tpe (the default TpeOptions,
//   n_startup_trials 10) and its variants, each at every --concurrency: 1 is strictly
//   sequential (ConcurrencyLimiter max_concurrent 1, as Optuna's study.optimize), c > 1 runs c
//   trials at once (max_concurrent_trials and max_concurrent c): c suggestions before any
//   result, trial i taking 0.5-1.5 simulated seconds (a hash of seed and i, so results come in
//   a fixed mixed order), one new suggestion per result; bench/search_optuna.py plays the same
//   protocol with Optuna's ask and tell.
// - multi-fidelity: the learning curves of bench/quality/synthetic_curve.hpp (optimum 0.95),
//   asha_random (ASHA, grace 4, reduction 4, random search) vs bohb (the BOHB searcher under
//   kBohbScheduler, in whole HyperBand iterations of 143 trials), counting training iterations;
//   hyperband_random (HyperBand with random search) and bohb_asha (the BOHB searcher under
//   asha_random's ASHA) beside them.
// - latency: TpeSearcher::Suggest with --latency-observations completed random configs of
//   each function (and no running trial), each suggestion completed before the next.
//
// Prints JSON lines: "search_function_check" (each function at a few configs, so
// bench/search_report.py can check that Optuna's side computes the same values),
// "search_quality_run" (per function and method: every seed's values in trial order, or for
// multi-fidelity the (iterations so far, value) of every result at max_t), "search_latency".
// bench/search_report.py turns them (and bench/search_optuna.py's) into figures and criteria.
//
// Usage: search_quality [--quick] [--seeds N] [--trials N] [--digits-seeds N]
//          [--digits-trials N] [--concurrency C,...] [--mf-seeds N] [--mf-samples N]
//          [--latency-observations N] [--latency-suggestions N] [--python PATH] [--no-digits]
//          [--first-seed N] [--functions F,...] [--methods M,...] [--method NAME=SEARCH_YAML]
//          [--no-mf] [--no-latency]
//   --quick: CI-sized (3 seeds of 30 trials, digits 1 seed of 12, 200 observations).
//   --first-seed: seeds N .. N + seeds - 1 (default 1), e.g. to check a change on seeds the
//   full run does not use. --functions / --methods: only these single-fidelity functions
//   (test_functions.hpp's names, digits) / methods. --method: one more single-fidelity TPE
//   method, NAME=OPTIONS with OPTIONS the inside of a `search:` flow map (e.g.
//   "x=multivariate: true"), run at every --concurrency (default 1,16) after type: tpe,
//   n_startup_trials: 10 and max_concurrent.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/latency.hpp"
#include "bench/machine.hpp"
#include "bench/quality/pipe_objective.hpp"
#include "bench/quality/quality_experiment.hpp"
#include "bench/quality/synthetic_curve.hpp"
#include "bench/quality/test_functions.hpp"
#include "libs/spec/experiment_spec.hpp"
#include "libs/tune/hyperband_scheduler.hpp"
#include "libs/tune/search_space.hpp"
#include "libs/tune/tpe_searcher.hpp"

namespace {

using nlohmann::json;
using namespace tunebus;
using namespace tunebus::bench;

// The trial scheduler BOHB runs under: Ray Tune pairs TuneBOHB with HyperBandForBOHB.
constexpr const char* kBohbScheduler = "hyperband_bohb";

// n_startup_trials of both TPEs (tunebus' and Optuna's, bench/search_optuna.py): Optuna's default.
constexpr int kStartupTrials = 10;

struct Options {
  bool quick = false;
  int seeds = 20, trials = 100;
  int digits_seeds = 20, digits_trials = 50;
  std::vector<int> concurrency = {1, 16};
  int mf_seeds = 20, mf_samples = 64;
  int latency_observations = 1000, latency_suggestions = 200;
  std::string python = "/usr/bin/python3";
  std::string digits_script = "bench/quality/digits_objective.py";
  bool digits = true;
  int first_seed = 1;
  std::vector<std::string> functions, methods;                     // empty: all
  std::vector<std::pair<std::string, std::string>> extra_methods;  // name, search YAML
  bool multi_fidelity = true, latency = true;

  static bool Selected(const std::vector<std::string>& names, const std::string& name) {
    return names.empty() || std::find(names.begin(), names.end(), name) != names.end();
  }
};

std::vector<std::string> SplitCommas(const std::string& list) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= list.size()) {
    const size_t end = std::min(list.find(',', begin), list.size());
    if (end > begin) out.push_back(list.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

// The param space (JSON) of a param_space YAML flow map, as the spec parser reads it.
json ParamSpace(const std::string& param_space_yaml) {
  ExperimentShape shape;
  shape.param_space_yaml = param_space_yaml;
  auto spec = ParseExperimentYaml(ExperimentYaml(shape, 1), "/tmp", "search_quality.yaml");
  if (!spec.ok()) {
    std::fprintf(stderr, "search_quality: %s\n", spec.status().ToString().c_str());
    std::exit(2);
  }
  return spec->param_space;
}

// A single-fidelity trainable: reports value(config) once, plus TrialNoise(seed, trial,
// noise_sd) when noise_sd > 0, and takes 0.5-1.5 simulated seconds (a hash of seed and trial;
// bench/search_optuna.py's trial_seconds), so parallel trials end in a mixed order.
SimModel SingleFidelity(std::function<double(const json&)> value, double noise_sd = 0) {
  return {[value](double, const json& config) { return value(config); },
          [noise_sd](uint64_t seed, int64_t index, int64_t) {
            return noise_sd > 0 ? TrialNoise(seed, index, noise_sd) : 0.0;
          },
          [](uint64_t seed, int64_t index, const json&) {
            return 0.5 + double(Mix(Mix(seed) ^ uint64_t(index)) >> 11) * 0x1.0p-53;
          }};
}

struct Method {
  std::string name;
  std::string search_yaml;
  int64_t max_concurrent_trials;
};

// A single-fidelity method: its name and the TPE options after type, n_startup_trials and
// max_concurrent ("" for the defaults), or, for random, no options.
struct MethodTemplate {
  const char* name;
  const char* tpe_options;  // nullptr: search: random (sequential only)
};

// The default methods: random; tpe, the default TpeOptions; tpe_optuna31, Optuna 3.1.0's
// TPESampler defaults (univariate, its gamma, ramp weights, bandwidths and magic clip) with
// the constant liar (tunebus' defaults before Watanabe 2023's components); tpe_univariate_ei,
// the defaults but univariate.
constexpr MethodTemplate kMethods[] = {
    {"random", nullptr},
    {"tpe", ""},
    {"tpe_optuna31", "multivariate: false, weight_strategy: old-decay, constant_liar: true"},
    {"tpe_univariate_ei", "multivariate: false"},
};

Method TpeMethod(const std::string& name, const std::string& options, int concurrency) {
  return {name,
          fmt::format("{{type: tpe, n_startup_trials: {}, max_concurrent: {}{}{}}}", kStartupTrials,
                      concurrency, options.empty() ? "" : ", ", options),
          concurrency};
}

// Runs `method` on a single-fidelity function over `seeds` seeds and prints its
// search_quality_run line. Returns false on an error (printed).
bool RunSingleFidelity(const std::string& function, const std::string& param_space_yaml,
                       const std::string& metric, const std::string& mode, double optimum,
                       double noise_sd, const SimModel& model, const Method& method, int first_seed,
                       int seeds, int trials, const json& machine) {
  ExperimentShape shape;
  shape.param_space_yaml = param_space_yaml;
  shape.metric = metric;
  shape.mode = mode;
  shape.search_yaml = method.search_yaml;
  shape.setup.num_samples = trials;
  shape.setup.max_t = 1;
  shape.setup.max_concurrent_trials = method.max_concurrent_trials;
  json values = json::array(), true_values = json::array(), orders = json::array();
  const auto start = std::chrono::steady_clock::now();
  for (int seed = first_seed; seed < first_seed + seeds; ++seed) {
    auto figures = RunExperiment(ExperimentYaml(shape, uint64_t(seed)), model);
    if (!figures.ok() || int64_t(figures->reports.size()) != trials) {
      std::fprintf(stderr, "search_quality: %s %s seed %d: %s\n", function.c_str(),
                   method.name.c_str(), seed,
                   figures.ok() ? "not one report per trial" : figures.status().ToString().c_str());
      return false;
    }
    std::vector<double> by_index(size_t(trials), std::nan("")), true_by_index = by_index;
    std::vector<int64_t> order;  // trial indices in the order their results came
    for (const SimReport& r : figures->reports) {
      by_index[size_t(r.index)] = r.value;
      true_by_index[size_t(r.index)] = r.s;
      order.push_back(r.index);
    }
    values.push_back(by_index);
    true_values.push_back(true_by_index);
    orders.push_back(order);
  }
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  json line = {{"benchmark", "search_quality_run"},
               {"side", "tunebus"},
               {"function", function},
               {"method", method.name},
               {"search_yaml", method.search_yaml},
               {"max_concurrent_trials", method.max_concurrent_trials},
               {"mode", mode},
               {"optimum", std::isnan(optimum) ? json() : json(optimum)},
               {"seeds", seeds},
               {"first_seed", first_seed},
               {"trials", trials},
               {"values", std::move(values)},
               {"wall_s", wall_s},
               {"machine", machine}};
  if (noise_sd > 0) {
    line["noise_sd"] = noise_sd;
    line["true_values"] = std::move(true_values);
  }
  if (method.max_concurrent_trials > 1) line["completion_order"] = std::move(orders);
  std::printf("%s\n", line.dump().c_str());
  std::fflush(stdout);
  return true;
}

// ASHA + random vs BOHB on the synthetic learning curves.
bool RunMultiFidelity(const Options& o, const json& machine) {
  const int64_t max_t = 100;
  const double hyperband_eta = 3;
  const std::string asha = fmt::format(
      "{{type: asha, time_attr: training_iteration, max_t: {}, grace_period: 4, "
      "reduction_factor: 4, brackets: 1}}",
      max_t);
  // stop_last_trials false: a bracket's last rung trains on to max_t (Ray's milestones stop it
  // at max_t minus the previous milestone, 73 of 100 here, and the criteria read values at max_t).
  auto hyperband = [max_t, hyperband_eta](const char* type) {
    return fmt::format(
        "{{type: {}, time_attr: training_iteration, max_t: {}, reduction_factor: {}, "
        "stop_last_trials: false}}",
        type, max_t, hyperband_eta);
  };
  // bohb runs whole HyperBand iterations (bands), at least --mf-samples trials: BOHB (Falkner et
  // al., ICML 2018, Algorithm 1; HpBandSter's run(n_iterations)) runs every bracket of an
  // iteration, and HyperBandForBohb fills the largest bracket first: with fewer trials than its
  // 81 the first bracket is never filled, its rungs are halved only once the searcher is done,
  // and one trial reaches max_t. The criterion counts training iterations, not trials; the other
  // methods run --mf-samples trials.
  const int64_t band = HyperBandScheduler::BandTrials(double(max_t), hyperband_eta);
  const int64_t bohb_trials = (o.mf_samples + band - 1) / band * band;
  // bohb is the pair the criterion judges; hyperband_random and bohb_asha separate the
  // searcher's share from the trial scheduler's.
  const std::vector<Method> methods = {
      {"asha_random", "random", 8},
      {"bohb", "bohb", 8},
      {"hyperband_random", "random", 8},
      {"bohb_asha", "bohb", 8},
  };
  const std::vector<std::string> schedulers = {
      asha,
      hyperband(kBohbScheduler),
      hyperband("hyperband"),
      asha,
  };
  const SimModel model = SimModel::Curves(CurveFamily{});
  for (size_t m = 0; m < methods.size(); ++m) {
    ExperimentShape shape;
    shape.search_yaml = methods[m].search_yaml;
    shape.scheduler_yaml = schedulers[m];
    const int64_t trials = methods[m].name == "bohb" ? bohb_trials : o.mf_samples;
    shape.setup.num_samples = trials;
    shape.setup.max_t = max_t;
    shape.setup.max_concurrent_trials = methods[m].max_concurrent_trials;
    json finals = json::array(), iterations = json::array();
    const auto start = std::chrono::steady_clock::now();
    for (int seed = o.first_seed; seed < o.first_seed + o.mf_seeds; ++seed) {
      auto figures = RunExperiment(ExperimentYaml(shape, uint64_t(seed)), model);
      if (!figures.ok()) {
        std::fprintf(stderr, "search_quality: curves %s seed %d: %s\n", methods[m].name.c_str(),
                     seed, figures.status().ToString().c_str());
        return false;
      }
      json at_max_t = json::array();  // [iterations run so far, value, noise-free value]
      for (size_t k = 0; k < figures->reports.size(); ++k) {
        const SimReport& r = figures->reports[k];
        if (r.iteration == max_t) at_max_t.push_back({int64_t(k) + 1, r.value, r.s});
      }
      finals.push_back(std::move(at_max_t));
      iterations.push_back(figures->iterations);
    }
    const double wall_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    json line = {{"benchmark", "search_quality_run"},
                 {"side", "tunebus"},
                 {"function", "curves"},
                 {"method", methods[m].name},
                 {"search_yaml", methods[m].search_yaml},
                 {"scheduler_yaml", schedulers[m]},
                 {"max_concurrent_trials", methods[m].max_concurrent_trials},
                 {"mode", "max"},
                 {"optimum", kOptimum},
                 {"seeds", o.mf_seeds},
                 {"first_seed", o.first_seed},
                 {"trials", trials},
                 {"max_t", max_t},
                 {"param_space", kParamSpaceYaml},
                 {"curve", "s(t) = f(c) * (1 - exp(-t / tau(c))) + N(0, 0.005)"},
                 {"at_max_t", std::move(finals)},
                 {"iterations", std::move(iterations)},
                 {"wall_s", wall_s},
                 {"machine", machine}};
    std::printf("%s\n", line.dump().c_str());
    std::fflush(stdout);
  }
  return true;
}

// TpeSearcher::Suggest latency with `observations` completed random configs of `f`.
void RunLatency(const TestFunction& f, const Options& o, const json& machine) {
  const json space_json = ParamSpace(f.param_space_yaml);
  auto space = SearchSpace::Create(space_json, "bench");
  TpeOptions options;
  options.n_startup_trials = kStartupTrials;
  TpeSearcher searcher(options, -1, 42);
  if (!searcher.SetSearchProperties("value", f.mode, space_json).ok()) std::abort();
  json delta = json::array();  // the history as journal events
  for (int i = 0; i < o.latency_observations; ++i) {
    const std::string id = fmt::format("h{}", i);
    const json config = space->RandomConfig(uint64_t(i) + 1);
    delta.push_back({{"suggest", id}, {"config", config}});
    delta.push_back({{"complete", id}, {"value", f.value(config)}});
  }
  if (!searcher.ApplyStateDelta(delta).ok()) std::abort();
  std::vector<double> ms, cpu_ms;
  for (int i = 0; i < o.latency_suggestions; ++i) {
    const std::string id = fmt::format("s{}", i);
    const double cpu_start = ThreadCpuMs();
    const auto start = std::chrono::steady_clock::now();
    Suggestion s = searcher.Suggest(id);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
    cpu_ms.push_back(ThreadCpuMs() - cpu_start);
    TrainingResult r;
    r.SetDouble("value", f.value(s.config));
    searcher.OnTrialComplete(id, &r, false);
    (void)searcher.TakeStateDelta();
  }
  std::sort(ms.begin(), ms.end());
  std::sort(cpu_ms.begin(), cpu_ms.end());
  json line = {{"benchmark", "search_latency"},
               {"side", "tunebus"},
               {"function", f.name},
               {"dims", space->size()},
               {"observations", o.latency_observations},
               {"suggestions", o.latency_suggestions},
               {"what", "TpeSearcher::Suggest (the defaults, n_ei_candidates 24)"},
               {"p50_ms", At(ms, 0.5)},
               {"p99_ms", At(ms, 0.99)},
               {"max_ms", ms.back()},
               {"cpu_p50_ms", At(cpu_ms, 0.5)},
               {"cpu_p99_ms", At(cpu_ms, 0.99)},
               {"machine", machine}};
  std::printf("%s\n", line.dump().c_str());
  std::fflush(stdout);
}

// Each function's value at 8 random configs, so bench/search_report.py can check that the
// Python side (bench/search_optuna.py) computes the same function.
void PrintFunctionCheck(const TestFunction& f) {
  auto space = SearchSpace::Create(ParamSpace(f.param_space_yaml), "bench");
  json configs = json::array(), values = json::array();
  for (uint64_t i = 1; i <= 8; ++i) {
    json config = space->RandomConfig(i);
    values.push_back(f.value(config));
    configs.push_back(std::move(config));
  }
  json line = {{"benchmark", "search_function_check"},
               {"function", f.name},
               {"configs", std::move(configs)},
               {"values", std::move(values)}};
  if (f.noise_sd > 0) {
    // TrialNoise of seeds 1-2 at trials 0-3: [seed, trial, noise].
    json noise = json::array();
    for (uint64_t seed = 1; seed <= 2; ++seed) {
      for (int64_t index = 0; index < 4; ++index) {
        noise.push_back({seed, index, TrialNoise(seed, index, f.noise_sd)});
      }
    }
    line["noise_sd"] = f.noise_sd;
    line["noise"] = std::move(noise);
  }
  std::printf("%s\n", line.dump().c_str());
}

int Usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--quick] [--seeds N] [--trials N] [--digits-seeds N] "
               "[--digits-trials N] [--concurrency C,...] [--mf-seeds N] [--mf-samples N] "
               "[--latency-observations N] [--latency-suggestions N] [--python PATH] "
               "[--no-digits] [--first-seed N] [--functions F,...] [--methods M,...] "
               "[--method NAME=SEARCH_YAML] [--no-mf] [--no-latency]\n",
               argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--quick") {
      o.quick = true;
      o.seeds = 3, o.trials = 30;
      o.digits_seeds = 1, o.digits_trials = 12;
      o.mf_seeds = 3, o.mf_samples = 32;
      o.latency_observations = 200, o.latency_suggestions = 20;
    } else if (a == "--no-digits") {
      o.digits = false;
    } else if (a == "--no-mf") {
      o.multi_fidelity = false;
    } else if (a == "--no-latency") {
      o.latency = false;
    } else if (!has_value) {
      return Usage(argv[0]);
    } else if (a == "--python") {
      o.python = argv[++i];
    } else if (a == "--concurrency") {
      o.concurrency.clear();
      for (const std::string& c : SplitCommas(argv[++i]))
        o.concurrency.push_back(std::atoi(c.c_str()));
      if (o.concurrency.empty() ||
          std::any_of(o.concurrency.begin(), o.concurrency.end(), [](int c) { return c < 1; })) {
        return Usage(argv[0]);
      }
    } else if (a == "--functions") {
      o.functions = SplitCommas(argv[++i]);
    } else if (a == "--methods") {
      o.methods = SplitCommas(argv[++i]);
    } else if (a == "--method") {
      const std::string v = argv[++i];
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) return Usage(argv[0]);
      o.extra_methods.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else {
      int* target = a == "--seeds"                  ? &o.seeds
                    : a == "--trials"               ? &o.trials
                    : a == "--digits-seeds"         ? &o.digits_seeds
                    : a == "--digits-trials"        ? &o.digits_trials
                    : a == "--mf-seeds"             ? &o.mf_seeds
                    : a == "--mf-samples"           ? &o.mf_samples
                    : a == "--latency-observations" ? &o.latency_observations
                    : a == "--latency-suggestions"  ? &o.latency_suggestions
                    : a == "--first-seed"           ? &o.first_seed
                                                    : nullptr;
      if (target == nullptr) return Usage(argv[0]);
      *target = std::atoi(argv[++i]);
    }
  }
  const json machine = Machine();
  for (const TestFunction& f : kTestFunctions) PrintFunctionCheck(f);
  // Every method at every concurrency (random once: it does not depend on it).
  std::vector<Method> methods;
  for (const MethodTemplate& m : kMethods) {
    if (!Options::Selected(o.methods, m.name)) continue;
    if (m.tpe_options == nullptr) {
      methods.push_back({m.name, "random", 1});
      continue;
    }
    for (int c : o.concurrency) methods.push_back(TpeMethod(m.name, m.tpe_options, c));
  }
  for (const auto& [name, options] : o.extra_methods) {
    for (int c : o.concurrency) methods.push_back(TpeMethod(name, options, c));
  }
  for (const TestFunction& f : kTestFunctions) {
    if (!Options::Selected(o.functions, f.name)) continue;
    const SimModel model = SingleFidelity(f.value, f.noise_sd);
    for (const Method& m : methods) {
      if (!RunSingleFidelity(f.name, f.param_space_yaml, "value", f.mode, f.optimum, f.noise_sd,
                             model, m, o.first_seed, o.seeds, o.trials, machine)) {
        return 2;
      }
    }
  }
  if (o.digits && Options::Selected(o.functions, "digits")) {
    PipeObjective digits;
    if (Status s = digits.Start({o.python, o.digits_script, "--serve"}); !s.ok()) {
      std::fprintf(stderr, "search_quality: digits: %s\n", s.ToString().c_str());
      return 2;
    }
    std::string error;
    const SimModel model = SingleFidelity([&digits, &error](const json& config) {
      Result<double> v = digits.Evaluate(config);
      if (!v.ok() && error.empty()) error = v.status().ToString();
      return v.ok() ? *v : std::nan("");
    });
    // The model costs tens of milliseconds per config (2 cores): random and the default tpe
    // only (the variants are shown on the cheap functions).
    for (const Method& m : methods) {
      if (m.name != "random" && m.name != "tpe") continue;
      if (!RunSingleFidelity("digits", kDigitsParamSpaceYaml, "val_accuracy", "max", std::nan(""),
                             0, model, m, o.first_seed, o.digits_seeds, o.digits_trials, machine) ||
          !error.empty()) {
        std::fprintf(stderr, "search_quality: digits: %s\n", error.c_str());
        return 2;
      }
    }
  }
  if (o.multi_fidelity && !RunMultiFidelity(o, machine)) return 2;
  if (!o.latency) return 0;
  for (const TestFunction& f : kTestFunctions) {
    if (Options::Selected(o.functions, f.name)) RunLatency(f, o, machine);
  }
  return 0;
}
