// scheduler_crosscheck: feeds reported learning curves to one of our trial schedulers through the
// real TrialRunner (every trial RUNNING, results numbered and auto-filled as the runner does), and
// prints each decision, so tests/crosscheck/optuna_crosscheck.py can compare it with Optuna's
// pruners decision by decision (docs/explanation/schedulers-optuna-crosscheck.md).
//
// Usage: scheduler_crosscheck [FILE]    reads FILE, or stdin when absent; answers on stdout.
//
// Input, JSON lines. The first line sets up the experiment:
//   {"scheduler": "asha" | "median_stopping", "config": {<the experiment file's scheduler map>},
//    "mode": "max" | "min", "num_trials": N}
// The metric is "value"; the trials are 0 .. N-1, all RUNNING from the start (nothing waits, so
// median stopping never time-slices). Then one event per line, in the order they happen:
//   {"trial": i, "step": t, "value": v}   trial i reports value v as its result number t
//                                          (training_iteration t, time_this_iter_s 1, so
//                                          time_total_s t): answered
//                                          {"trial": i, "step": t, "decision":
//                                          "continue"|"stop"|"pause"}, or "decision": "skipped"
//                                          when the trial has finished (a stopped trial reports
//                                          nothing more).
//   {"trial": i, "end": "complete"}       its trainable returned (the curve ended): TERMINATED, the
//                                          scheduler hears OnTrialComplete. Answered {"trial": i,
//                                          "status": ...}.
//   {"trial": i, "end": "stop"}           stopped from outside (Ray Tune's stop_trial), likewise.
// Or, instead of events, the first line may also hold "curves": [[v_1, v_2, ...], ...] (one per
// trial, value at step 1, 2, ...) and "order": [i, ...] (each entry: trial i's next step); each
// trial is completed after its last value, and a stopped trial's remaining entries are skipped.
//
// Exit status: 0, or 2 for malformed input (message on stderr).
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/tune/make_trial_scheduler.hpp"
#include "libs/tune/trial_runner.hpp"

namespace tunebus {
namespace {

using nlohmann::json;

// Grants every placement at once (the runner asks for one per PENDING trial) and keeps the
// action that answered each trial's newest result.
class CrosscheckExecutor final : public TrialExecutor {
 public:
  bool CanPlace() const override { return true; }
  void PlaceTrial(const Trial& trial, int64_t attempt) override {
    open.push_back({trial.trial_id, attempt});
  }
  void LaunchTrial(const Trial&) override {}
  void SendDecision(const Trial& trial, int64_t, Action action) override {
    last_action[trial.trial_id] = ActionName(action);
  }
  void StopTrial(const Trial&) override {}
  void ReleaseResources(const Trial&) override {}
  void DeleteCheckpoint(const std::string&) override {}

  std::vector<std::pair<std::string, int64_t>> open;  // placements not granted yet
  std::map<std::string, std::string> last_action;
};

class NullObserver final : public RunnerObserver {};

class Crosscheck {
 public:
  /// Errors: InvalidArgument for a bad setup line or scheduler parameters.
  Status Setup(const json& setup) {
    num_trials_ = setup.at("num_trials").get<int64_t>();
    if (num_trials_ < 1 || num_trials_ > 100000)
      return Status::InvalidArgument("num_trials: must be in 1..100000");
    const std::string mode = setup.value("mode", "max");
    auto scheduler = MakeTrialScheduler(setup.at("scheduler").get<std::string>(),
                                        setup.value("config", json::object()), "value", mode,
                                        setup.value("seed", uint64_t{0}));
    if (!scheduler.ok()) return scheduler.status();
    RunnerOptions o;
    o.experiment_id = "xc";
    o.metric = "value";
    o.mode = mode;
    json values = json::array();
    for (int64_t i = 0; i < num_trials_; ++i) values.push_back(i);
    runner_ = std::make_unique<TrialRunner>(
        std::move(o),
        std::make_unique<VariantGenerator>(json{{"trial", {{"grid_search", values}}}}, 1, 0),
        std::move(*scheduler), executor_, observer_, clock_);
    runner_->Step();
    for (const auto& [id, attempt] : executor_.open) runner_->OnTrialPlaced(id, attempt, "w", {});
    executor_.open.clear();
    return Status::Ok();
  }

  /// One event line -> its answer. Errors: InvalidArgument for an event that does not fit.
  Result<json> Event(const json& e) {
    const int64_t i = e.at("trial").get<int64_t>();
    if (i < 0 || i >= num_trials_)
      return Status::InvalidArgument(fmt::format("trial {}: no such trial", i));
    const Trial& t = *runner_->FindTrial(Id(i));
    if (e.contains("end")) {
      const std::string how = e["end"].get<std::string>();
      if (t.status == TrialStatus::kRunning && how == "complete") {
        runner_->OnTrialExited(t.trial_id, t.attempt, true, "");
      } else if (how == "stop") {
        // The trial scheduler's stop (noted as its decision), not the user's.
        TrialSchedulerContext& context = runner_->scheduler_context();
        if (Status s = context.StopTrial(t.trial_id); !s.ok()) return s;
      } else if (how != "complete") {
        return Status::InvalidArgument("end: \"complete\" or \"stop\", got " + how);
      }
      return json{{"trial", i}, {"status", TrialStatusName(runner_->FindTrial(Id(i))->status)}};
    }
    const int64_t step = e.at("step").get<int64_t>();
    if (t.status != TrialStatus::kRunning) {
      return json{{"trial", i},
                  {"step", step},
                  {"decision", "skipped"},
                  {"status", TrialStatusName(t.status)}};
    }
    if (step != t.training_iteration + 1) {
      return Status::InvalidArgument(
          fmt::format("trial {}: step {} is not its next training_iteration {}", i, step,
                      t.training_iteration + 1));
    }
    if (Status s = runner_->OnResult(
            t.trial_id, t.attempt, step,
            TrainingResult::FromJson({{"value", e.at("value").get<double>()}}), 1.0);
        !s.ok()) {
      return s;
    }
    return json{{"trial", i}, {"step", step}, {"decision", executor_.last_action.at(Id(i))}};
  }

  /// The "curves" + "order" form: every event of the order, each trial completed after its last
  /// value.
  Result<std::vector<json>> Batch(const json& setup) {
    const auto curves = setup.at("curves").get<std::vector<std::vector<double>>>();
    if (int64_t(curves.size()) != num_trials_)
      return Status::InvalidArgument("curves: one per trial");
    std::vector<size_t> next(curves.size(), 0);
    std::vector<json> out;
    for (const json& entry : setup.at("order")) {
      const int64_t i = entry.get<int64_t>();
      if (i < 0 || i >= num_trials_ || next[size_t(i)] >= curves[size_t(i)].size()) {
        return Status::InvalidArgument(fmt::format("order: trial {} has no further value", i));
      }
      const size_t k = next[size_t(i)]++;
      auto answer = Event({{"trial", i}, {"step", k + 1}, {"value", curves[size_t(i)][k]}});
      if (!answer.ok()) return answer.status();
      out.push_back(*answer);
      if (k + 1 == curves[size_t(i)].size()) (void)Event({{"trial", i}, {"end", "complete"}});
    }
    return out;
  }

 private:
  static std::string Id(int64_t i) { return fmt::format("xc_{:05d}", i); }

  int64_t num_trials_ = 0;
  ManualClock clock_{0.0};  // never advanced
  CrosscheckExecutor executor_;
  NullObserver observer_;
  std::unique_ptr<TrialRunner> runner_;
};

int Fail(const std::string& message) {
  std::cerr << "scheduler_crosscheck: " << message << "\n";
  return 2;
}

int Main(std::istream& in) {
  Crosscheck check;
  std::string line;
  if (!std::getline(in, line)) return Fail("no setup line");
  try {
    const json setup = json::parse(line);
    if (Status s = check.Setup(setup); !s.ok()) return Fail(s.ToString());
    if (setup.contains("curves")) {
      auto answers = check.Batch(setup);
      if (!answers.ok()) return Fail(answers.status().ToString());
      for (const json& a : *answers) std::cout << a.dump() << "\n";
      return 0;
    }
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      auto answer = check.Event(json::parse(line));
      if (!answer.ok()) return Fail(answer.status().ToString());
      std::cout << answer->dump() << std::endl;  // flushed: the script waits for each answer
    }
  } catch (const json::exception& ex) {
    return Fail(std::string("malformed input: ") + ex.what());
  }
  return 0;
}

}  // namespace
}  // namespace tunebus

int main(int argc, char** argv) {
  if (argc > 2) return tunebus::Fail("usage: scheduler_crosscheck [FILE]");
  if (argc == 2) {
    std::ifstream file(argv[1]);
    if (!file) return tunebus::Fail(std::string("cannot open ") + argv[1]);
    return tunebus::Main(file);
  }
  return tunebus::Main(std::cin);
}
