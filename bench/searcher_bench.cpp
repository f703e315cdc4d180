// Searcher latency: how long TpeSearcher::Suggest (and BohbSearcher::Suggest) takes with 1,000
// observations, the target being well under 1 ms at p99. The searcher is brought to
// 1,000 completed trials (random configs on a quadratic, replayed as journal events), then
// makes --suggestions suggestions, each completed before the next (so the model sees 1,000 ..
// 1,000 + N observations) while --running trials stay running (constant liar). The history is
// random configs, or ("history": "its own run") the searcher's own 1,000 suggestions, which
// crowd the optimum. Prints one JSON object per case:
//   {"benchmark": "searcher_latency", "searcher", "case", "history", "dims", "observations",
//   "running",
//    "suggestions", "p50_ms", "p99_ms", "max_ms" (wall clock), "cpu_p50_ms", "cpu_p99_ms"
//    (the thread's CPU time: what the figure is without preemption on a shared host),
//    "target_p99_ms": 1, "meets_target" (cpu_p99_ms below the target), "machine"}
// Usage: searcher_bench [--observations N] [--suggestions N] [--running N] [--case I] (only the
// I-th case, from 0)

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/latency.hpp"
#include "bench/machine.hpp"
#include "libs/tune/bohb_searcher.hpp"
#include "libs/tune/search_space.hpp"
#include "libs/tune/tpe_searcher.hpp"

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace tunebus;
using namespace tunebus::bench;

double Objective(const json& config) {
  double loss = 0;
  for (const auto& [key, value] : config.items()) {
    if (value.is_number()) loss += std::pow(std::log1p(std::abs(value.get<double>())) - 1, 2);
    if (value.is_string()) loss += value == "b" ? 0 : 1;
  }
  return loss;
}

struct Case {
  const char* name;
  json space;
  bool bohb;
  bool multivariate;
  bool converged = false;  // the history is the searcher's own run, not random configs
};

json Run(const Case& c, int observations, int suggestions, int running) {
  std::unique_ptr<Searcher> searcher;
  if (c.bohb) {
    searcher = std::make_unique<BohbSearcher>(BohbOptions{}, -1, 42);
  } else {
    TpeOptions o;
    o.multivariate = c.multivariate;
    searcher = std::make_unique<TpeSearcher>(o, -1, 42);
  }
  if (!searcher->SetSearchProperties("loss", "min", c.space).ok()) std::abort();
  // The history, as journal events: random configs and their losses (BOHB: at budget 1).
  auto space = SearchSpace::Create(c.space, "bench");
  json delta = json::array();
  for (int i = 0; i < observations + running; ++i) {
    const std::string id = fmt::format("h{}", i);
    const json config = space->RandomConfig(uint64_t(i) + 1);
    delta.push_back({{"suggest", id}, {"config", config}});
    if (i >= observations) continue;
    if (c.bohb) delta.push_back({{"result", id}, {"budget", 1}, {"value", Objective(config)}});
    delta.push_back(c.bohb ? json{{"complete", id}}
                           : json{{"complete", id}, {"value", Objective(config)}});
  }
  if (c.converged) {  // the searcher's own 1,000 trials: observations crowd the optimum
    delta = json::array();
    for (int i = 0; i < observations + running; ++i) {
      const std::string id = fmt::format("h{}", i);
      const json config = searcher->Suggest(id).config;
      if (i >= observations) continue;
      TrainingResult r;
      r.SetDouble("loss", Objective(config));
      r.SetInt("training_iteration", 1);
      searcher->OnTrialResult(id, r);
      searcher->OnTrialComplete(id, &r, false);
    }
    (void)searcher->TakeStateDelta();
  }
  if (!searcher->ApplyStateDelta(delta).ok()) std::abort();

  std::vector<double> ms, cpu_ms;
  for (int i = 0; i < suggestions; ++i) {
    const std::string id = fmt::format("s{}", i);
    const double cpu_start = ThreadCpuMs();
    const auto start = Clock::now();
    Suggestion s = searcher->Suggest(id);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    cpu_ms.push_back(ThreadCpuMs() - cpu_start);
    (void)searcher->TakeStateDelta();
    TrainingResult r;
    r.SetDouble("loss", Objective(s.config));
    r.SetInt("training_iteration", 1);
    searcher->OnTrialResult(id, r);
    searcher->OnTrialComplete(id, &r, false);
    (void)searcher->TakeStateDelta();
  }
  std::sort(ms.begin(), ms.end());
  std::sort(cpu_ms.begin(), cpu_ms.end());
  return {{"benchmark", "searcher_latency"},
          {"searcher", c.bohb ? "bohb" : "tpe"},
          {"case", c.name},
          {"history", c.converged ? "its own run" : "random configs"},
          {"dims", space->size()},
          {"observations", observations},
          {"running", running},
          {"suggestions", suggestions},
          {"p50_ms", At(ms, 0.5)},
          {"p99_ms", At(ms, 0.99)},
          {"max_ms", ms.back()},
          {"cpu_p50_ms", At(cpu_ms, 0.5)},
          {"cpu_p99_ms", At(cpu_ms, 0.99)},
          {"target_p99_ms", 1.0},
          {"meets_target", At(cpu_ms, 0.99) < 1.0},
          {"machine", bench::Machine()}};
}

}  // namespace

int main(int argc, char** argv) {
  int observations = 1000, suggestions = 300, running = 8, only = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--observations")) observations = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--suggestions")) suggestions = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--running")) running = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--case")) only = std::atoi(argv[i + 1]);
  }
  const json one = {{"x", {{"uniform", {-10, 10}}}}};
  const json four = {{"x", {{"uniform", {-10, 10}}}},
                     {"lr", {{"loguniform", {1e-5, 1}}}},
                     {"units", {{"randint", {1, 100}}}},
                     {"opt", {{"choice", {"a", "b", "c", "d"}}}}};
  json eight = four;
  eight["y"] = {{"uniform", {0, 1}}};
  eight["wd"] = {{"loguniform", {1e-6, 1e-2}}};
  eight["layers"] = {{"qrandint", {1, 32, 1}}};
  eight["act"] = {{"choice", {"relu", "tanh"}}};
  const Case cases[] = {{"1 float", one, false, false},
                        {"float, log, int, choice", four, false, false},
                        {"8 mixed", eight, false, false},
                        {"float, log, int, choice (multivariate)", four, false, true},
                        {"float, log, int, choice", four, false, false, true},
                        {"float, log, int, choice", four, true, false}};
  for (int i = 0; i < int(std::size(cases)); ++i) {
    if (only >= 0 && i != only) continue;
    std::printf("%s\n", Run(cases[i], observations, suggestions, running).dump().c_str());
  }
  return 0;
}
