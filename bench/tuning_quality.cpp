// Tuning quality benchmark: FIFO, ASHA, HyperBand, median stopping and PBT on the
// synthetic learning curves of bench/quality/synthetic_curve.hpp (known optimum 0.95), each run
// through the real TrialRunner and trial scheduler on a simulated executor and clock, over
// several seeds with the same num_samples (and the same sampled configs and noise) for every
// scheduler.
//
// Prints one JSON object per scheduler (parameters, figures, ratios to FIFO from this run,
// machine), then a criterion line; exits 1 if ASHA misses the bar: mean best final
// metric within 1% of FIFO's with at most 1/3 of FIFO's training iterations.
//
// Usage: tuning_quality [--quick] [--seeds N] [--num-samples N] [--max-t N] [--max-concurrent N]
//                       [--asha-grace-period N] [--tau-lr-exponent X]
//   --quick: 10 seeds of 32 trials (CI, a few seconds); default 20 seeds of 64 trials. ASHA runs
//   with reduction_factor 4 and grace_period 4 (--asha-grace-period; why:
//   docs/reference/schedulers.md).
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

#include "bench/machine.hpp"
#include "bench/quality/quality_experiment.hpp"
#include "bench/quality/synthetic_curve.hpp"

namespace {

using nlohmann::json;
using tunebus::bench::QualitySetup;
using tunebus::bench::SimFigures;

struct Case {
  std::string scheduler;  // its name in the experiment file
  std::string yaml;       // the experiment file's `scheduler:` value
};

std::vector<Case> Cases(int64_t max_t, int64_t asha_grace) {
  return {
      {"fifo", "fifo"},
      {"asha",
       fmt::format("{{type: asha, time_attr: training_iteration, max_t: {}, grace_period: {}, "
                   "reduction_factor: 4, brackets: 1}}",
                   max_t, asha_grace)},
      {"hyperband",
       fmt::format(
           "{{type: hyperband, time_attr: training_iteration, max_t: {}, reduction_factor: 3}}",
           max_t)},
      {"median_stopping",
       "{type: median_stopping, time_attr: training_iteration, grace_period: 10, "
       "min_samples_required: 3}"},
      {"pbt",
       "{type: pbt, time_attr: training_iteration, perturbation_interval: 10, "
       "hyperparam_mutations: {lr: {loguniform: [1.0e-4, 1.0e-1]}, dropout: {uniform: [0.0, "
       "0.5]}}}"},
  };
}

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / double(v.size());
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// x rounded to `digits` decimals (so the JSON prints short).
double Round(double x, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(x * scale) / scale;
}

// Per scheduler, per seed.
struct Series {
  std::vector<double> best_final, best_final_true, best_reported, iterations, sim_time_s,
      checkpoints, restores, exploits;
  double wall_s = 0;
};

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  int64_t seeds = 20, asha_grace = 4;
  tunebus::bench::CurveFamily curves;
  QualitySetup setup;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
      seeds = 10;
      setup.num_samples = 32;
    } else if (!std::strcmp(argv[i], "--seeds") && has_value) {
      seeds = std::atoll(argv[++i]);
    } else if (!std::strcmp(argv[i], "--num-samples") && has_value) {
      setup.num_samples = std::atoll(argv[++i]);
    } else if (!std::strcmp(argv[i], "--max-t") && has_value) {
      setup.max_t = std::atoll(argv[++i]);
    } else if (!std::strcmp(argv[i], "--max-concurrent") && has_value) {
      setup.max_concurrent_trials = std::atoll(argv[++i]);
    } else if (!std::strcmp(argv[i], "--tau-lr-exponent") && has_value) {
      curves.tau_lr_exponent = std::atof(argv[++i]);
    } else if (!std::strcmp(argv[i], "--asha-grace-period") && has_value) {
      asha_grace = std::atoll(argv[++i]);
    } else {
      std::fprintf(
          stderr,
          "usage: %s [--quick] [--seeds N] [--num-samples N] [--max-t N] [--max-concurrent N] "
          "[--asha-grace-period N] [--tau-lr-exponent X]\n",
          argv[0]);
      return 2;
    }
  }
  const json machine = tunebus::bench::Machine();
  const std::vector<Case> cases = Cases(setup.max_t, asha_grace);
  std::vector<Series> series(cases.size());
  for (size_t c = 0; c < cases.size(); ++c) {
    const auto start = std::chrono::steady_clock::now();
    for (int64_t seed = 1; seed <= seeds; ++seed) {
      auto figures = tunebus::bench::RunExperiment(
          tunebus::bench::ExperimentYaml(cases[c].yaml, setup, uint64_t(seed)), curves);
      if (!figures.ok()) {
        std::fprintf(stderr, "tuning_quality: %s seed %lld: %s\n", cases[c].scheduler.c_str(),
                     (long long)seed, figures.status().ToString().c_str());
        return 2;
      }
      Series& s = series[c];
      s.best_final.push_back(figures->best_final);
      s.best_final_true.push_back(figures->best_final_true);
      s.best_reported.push_back(figures->best_reported);
      s.iterations.push_back(double(figures->iterations));
      s.sim_time_s.push_back(figures->sim_time_s);
      s.checkpoints.push_back(double(figures->checkpoints));
      s.restores.push_back(double(figures->restores));
      s.exploits.push_back(double(figures->exploits));
    }
    series[c].wall_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  const Series& fifo = series[0];
  for (size_t c = 0; c < cases.size(); ++c) {
    const Series& s = series[c];
    std::vector<double> seed_ratio;  // best_final / FIFO's, per seed
    for (size_t i = 0; i < s.best_final.size(); ++i)
      seed_ratio.push_back(s.best_final[i] / fifo.best_final[i]);
    json line = {
        {"benchmark", "tuning_quality"},
        {"scheduler", cases[c].scheduler},
        {"scheduler_yaml", cases[c].yaml},
        {"parameters",
         {{"seeds", seeds},
          {"num_samples", setup.num_samples},
          {"max_t", setup.max_t},
          {"max_concurrent_trials", setup.max_concurrent_trials},
          {"quick", quick},
          {"curve", "s(t) = f(c) * (1 - exp(-t / tau(c))) + N(0, 0.005)"},
          {"tau_lr_exponent", curves.tau_lr_exponent},
          {"param_space", tunebus::bench::kParamSpaceYaml},
          {"optimum", tunebus::bench::kOptimum}}},
        {"best_final_mean", Round(Mean(s.best_final), 5)},
        {"best_final_median", Round(Median(s.best_final), 5)},
        {"best_final_min", Round(*std::min_element(s.best_final.begin(), s.best_final.end()), 5)},
        {"best_final_true_mean", Round(Mean(s.best_final_true), 5)},
        {"best_reported_mean", Round(Mean(s.best_reported), 5)},
        {"regret_true_mean", Round(tunebus::bench::kOptimum - Mean(s.best_final_true), 5)},
        {"iterations_mean", Round(Mean(s.iterations), 1)},
        {"iterations_median", Round(Median(s.iterations), 1)},
        {"best_final_ratio_to_fifo", Round(Mean(s.best_final) / Mean(fifo.best_final), 5)},
        {"best_final_ratio_to_fifo_min_seed",
         Round(*std::min_element(seed_ratio.begin(), seed_ratio.end()), 5)},
        {"iterations_ratio_to_fifo", Round(Mean(s.iterations) / Mean(fifo.iterations), 5)},
        {"sim_time_s_mean", Round(Mean(s.sim_time_s), 1)},
        {"checkpoints_mean", Round(Mean(s.checkpoints), 1)},
        {"restores_mean", Round(Mean(s.restores), 1)},
        {"exploits_mean", Round(Mean(s.exploits), 1)},
        {"wall_time_s", Round(s.wall_s, 3)},
        {"machine", machine}};
    std::printf("%s\n", line.dump().c_str());
  }
  const Series& asha = series[1];
  const double quality = Mean(asha.best_final) / Mean(fifo.best_final);
  const double cost = Mean(asha.iterations) / Mean(fifo.iterations);
  int64_t seeds_passing = 0;
  for (size_t i = 0; i < asha.best_final.size(); ++i) {
    seeds_passing += asha.best_final[i] >= 0.99 * fifo.best_final[i] &&
                     asha.iterations[i] * 3 <= fifo.iterations[i];
  }
  const bool within = quality >= 0.99, third = cost <= 1.0 / 3;
  json verdict = {{"benchmark", "tuning_quality_criterion"},
                  {"asha_best_final_ratio_to_fifo", Round(quality, 5)},
                  {"asha_iterations_ratio_to_fifo", Round(cost, 5)},
                  {"seeds", seeds},
                  {"seeds_passing_alone", seeds_passing},
                  {"asha_within_1pct_of_fifo", within},
                  {"asha_iterations_le_third_of_fifo", third},
                  {"machine", machine}};
  std::printf("%s\n", verdict.dump().c_str());
  return within && third ? 0 : 1;
}
