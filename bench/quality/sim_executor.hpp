// SimExecutor: a deterministic, in-process TrialExecutor for the tuning and search quality
// benchmarks. It drives the real TrialRunner (libs/tune) with the experiment's real searcher and
// trial scheduler on a simulated clock: every trainable follows a SimModel (the synthetic curves
// of bench/quality/synthetic_curve.hpp, or a test function of bench/quality/test_functions.hpp
// reported once), and every executor effect becomes an event on a time-ordered queue that Run()
// plays back (no threads, no sockets, no wall clock), so a seed gives the same run on every
// machine.
//
// Worker semantics kept from the real trial-worker (proto/PROTOCOL.md): a placement is granted
// at once (max_concurrent_trials bounds the cluster); a launched trial restores its checkpoint
// (its own, or a PBT donor's) and continues the curve from the stored quality with its current
// config; each result is answered with a worker action, and "checkpoint", "pause" and
// "checkpoint_and_stop" store a checkpoint (iteration + quality) before going on or exiting.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <queue>
#include <string>
#include <vector>

#include "bench/quality/synthetic_curve.hpp"
#include "libs/core/clock.hpp"
#include "libs/tune/trial_runner.hpp"

namespace tunebus::bench {

/// What a simulated trainable does. Qualities and values are in the metric's units.
struct SimModel {
  /// The quality after one more training iteration from quality `s` under `config` (s is 0
  /// before the first iteration). REQUIRES: deterministic in (s, config).
  std::function<double(double s, const nlohmann::json& config)> step;
  /// The noise on the value trial `index` reports at `iteration` for the experiment's `seed`.
  std::function<double(uint64_t seed, int64_t index, int64_t iteration)> noise;
  /// Simulated seconds one iteration of trial `index` with `config` takes (> 0).
  std::function<double(uint64_t seed, int64_t index, const nlohmann::json& config)> seconds;

  /// The curve family of tuning_quality: CurveFamily::Step, Noise, IterationSeconds.
  static SimModel Curves(const CurveFamily& curves);
};

/// One reported result, in the order the simulation produced them: the k-th (from 0) is the
/// (k + 1)-th training iteration run in the experiment.
struct SimReport {
  int64_t index = 0;      // the trial's index (creation order, 0-based)
  int64_t iteration = 0;  // its training_iteration
  double value = 0;       // what it reported (quality + noise)
  double s = 0;           // the noise-free quality
};

/// What one simulated experiment produced.
struct SimFigures {
  /// Best reported metric at training_iteration == max_t among the trials that reached it; when
  /// none did, the best last reported value (reached_max_t is then 0). Accuracy units.
  double best_final = 0;
  /// The noise-free quality s of the trial behind best_final, at that point (accuracy units).
  double best_final_true = 0;
  /// The best value any trial reported at any iteration (Ray Tune's best result, scope "all");
  /// differs from best_final for schedulers that end trials before max_t (HyperBand).
  double best_reported = 0;
  int64_t reached_max_t = 0;  // trials with a result at max_t
  int64_t iterations = 0;     // training iterations the trainables ran (= results reported)
  int64_t trials = 0;
  int64_t checkpoints = 0;         // checkpoints stored
  int64_t restores = 0;            // launches that restored a checkpoint (unpause, PBT exploit)
  int64_t exploits = 0;            // PBT exploits
  double sim_time_s = 0;           // simulated makespan, seconds
  std::string status;              // the experiment's end status ("FINISHED", ...)
  std::vector<SimReport> reports;  // every result, in simulated time order
};

class SimExecutor final : public TrialExecutor, public RunnerObserver, public Clock {
 public:
  /// `model`: what every trainable does; `seed` keys the noise; `metric` is the reported key;
  /// `max_t` the iteration that counts as final.
  SimExecutor(SimModel model, uint64_t seed, std::string metric, int64_t max_t);

  /// Plays the experiment to its end. REQUIRES: set_runner was called. Errors: Internal if the
  /// runner stalls (no event left while unfinished) or rejects a result.
  Result<SimFigures> Run();
  void set_runner(TrialRunner* runner) { runner_ = runner; }

  // ---- Clock: the simulated time, seconds from 0 (WallSeconds) ----
  SteadyTime Now() const override {
    return SteadyTime(
        std::chrono::duration_cast<SteadyTime::duration>(std::chrono::duration<double>(now_)));
  }
  double WallSeconds() const override { return now_; }

  // ---- TrialExecutor ----
  bool CanPlace() const override { return true; }
  void PlaceTrial(const Trial& trial, int64_t attempt) override;
  void LaunchTrial(const Trial& trial) override;
  void SendDecision(const Trial& trial, int64_t seq, Action action) override;
  void StopTrial(const Trial& trial) override;
  void ReleaseResources(const Trial& trial) override { (void)trial; }
  void DeleteCheckpoint(const std::string& checkpoint_id) override {
    checkpoints_.erase(checkpoint_id);
  }

  // ---- RunnerObserver ----
  void OnTrialUpdated(const Trial& trial, const nlohmann::json& change) override;

 private:
  struct Attempt {  // the live attempt of a trial's simulated trainable
    int64_t attempt = 0;
    int64_t index = 0;
    nlohmann::json config;
    double s = 0;           // quality now
    int64_t iteration = 0;  // training_iteration now
    int64_t seq = 0;        // results sent in this attempt
    bool live = false;
  };
  struct Stored {  // a checkpoint: where the curve was
    int64_t iteration = 0;
    double s = 0;
  };
  struct Event {
    double time = 0;
    uint64_t order = 0;
    std::function<void()> fire;
    bool operator>(const Event& o) const {
      return time != o.time ? time > o.time : order > o.order;
    }
  };

  void At(double time, std::function<void()> fire);
  Attempt* Live(const std::string& trial_id, int64_t attempt);
  void NextResult(const std::string& trial_id, int64_t attempt);
  void Report(const std::string& trial_id, int64_t attempt);
  void Act(const std::string& trial_id, int64_t attempt, int64_t seq, Action action);
  void SaveCheckpoint(const std::string& trial_id, Attempt& a);

  SimModel model_;
  uint64_t seed_;
  std::string metric_;
  int64_t max_t_;
  TrialRunner* runner_ = nullptr;
  double now_ = 0;
  uint64_t order_ = 0;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  std::map<std::string, Attempt> attempts_;  // trial_id -> its current attempt
  std::map<std::string, Stored> checkpoints_;
  std::vector<std::string> errors_;
  SimFigures figures_;
  double best_last_ = -1e300, best_last_true_ = 0;  // best value reported at any iteration, its s
};

}  // namespace tunebus::bench
