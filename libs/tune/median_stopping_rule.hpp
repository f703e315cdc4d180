// MedianStoppingRule: the median stopping rule of Golovin et al., "Google Vizier: A Service for
// Black-Box Optimization", KDD 2017, §3.2.2, with Ray Tune's MedianStoppingRule semantics and
// parameter names:
//
//   time_attr             result key measuring time (default time_total_s)
//   metric, mode          what is compared (default: the experiment's)
//   grace_period          no trial is stopped before time_attr reaches it (default 60)
//   min_samples_required  other trials that must have reached this time (default 3)
//   min_time_slice        time a trial runs between two time-slicing pauses (default 0)
//   hard_stop             STOP a trial below the median (default true); false: PAUSE it
//
// At each result past the grace period, a trial whose best result so far is worse than the
// median of the other trials' running means (their results with grace_period <= time <= now,
// among trials that have reached now) is stopped. Otherwise, as Ray Tune, it is PAUSEd to let a
// waiting (PENDING or PAUSED) trial run once it has run min_time_slice since its last pause; a
// PAUSEd trial runs again when nothing is PENDING (ChoosePausedTrialToRun, Ray Tune's FIFO
// fallback to PAUSED trials). A trial soft-stopped (hard_stop false) that runs again is never
// judged again.
//
// Cost per result: O(trials) to find the other trials that reached `time` (their newest times
// side by side in one array), O(log results) per such trial for its running mean (prefix sums
// over its results past the grace period, while its times do not decrease; a scan otherwise),
// and O(trials) for the median (nth_element). The decisions are those of the plain scan: the
// same sums in the same order, the same middle values.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "libs/tune/trial_scheduler.hpp"

namespace tunebus {

class MedianStoppingRule final : public JournaledTrialScheduler {
 public:
  struct Options {
    std::string time_attr = "time_total_s";
    std::string metric;
    std::string mode = "max";
    double grace_period = 60;
    int64_t min_samples_required = 3;
    double min_time_slice = 0;
    bool hard_stop = true;
  };
  /// Errors: InvalidArgument "<param>: ...".
  static Result<std::unique_ptr<TrialScheduler>> Create(const nlohmann::json& config,
                                                        const std::string& metric,
                                                        const std::string& mode);
  explicit MedianStoppingRule(Options options);
  MedianStoppingRule(const MedianStoppingRule&) = delete;  // states_ points into trials_
  MedianStoppingRule& operator=(const MedianStoppingRule&) = delete;

  const char* name() const override { return "median_stopping"; }
  Status ValidateResult(const TrainingResult& result) const override;
  Decision OnTrialResult(const Trial& trial, const TrainingResult& result) override;
  void OnTrialComplete(const Trial& trial, const TrainingResult& result) override;
  void OnTrialRemove(const Trial& trial) override;
  void OnTrialError(const Trial& trial) override;
  int64_t ChooseTrialToRun(const std::set<int64_t>& pending) override { return *pending.begin(); }
  std::optional<std::string> ChoosePausedTrialToRun() override;

  nlohmann::json SaveState() const override;
  Status RestoreState(const nlohmann::json& state) override;

 private:
  struct TrialState {
    std::vector<std::pair<double, double>> results;  // (time, metric * sign)
    double last_pause = -1e300;
    bool stopped = false;  // judged below the median once
    bool paused_by_us = false;
    // Derived from `results` (AddResult), so that RunningMean and the best so far take no scan:
    size_t slot = 0;       // its position in states_ and newest_times_
    bool monotone = true;  // every time >= the one before (NaN breaks it)
    double best = 0;       // the largest value so far (as std::max over results in order)
    std::vector<double> graced_times;  // the times >= grace_period, in order (while monotone)
    std::vector<double> graced_sums;   // graced_sums[k]: the sum of their first k + 1 values
  };
  Decision OnInsufficientSamples(const std::string& trial_id, double time);
  /// The mean of `s`'s results with grace_period <= time_attr <= `time`; nullopt when it has
  /// none there (Ray Tune: np.mean([]) is NaN, which makes the median NaN and the trial continue).
  std::optional<double> RunningMean(const TrialState& s, double time) const;
  /// The state of `trial_id`, made (with its slot) on first use.
  TrialState& State(const std::string& trial_id);
  /// Appends a result to `s` and its derived fields.
  void AddResult(TrialState& s, double time, double value);
  /// The one place state changes (live and in replay):
  ///   {"r": [trial_id, time, value]}  {"stop": trial_id}  {"pause": [trial_id, time]}
  ///   {"del": trial_id}
  Status Apply(const nlohmann::json& event) override;

  Options options_;
  double sign_ = 1;
  std::map<std::string, TrialState> trials_;
  std::vector<TrialState*> states_;   // every trial's state, by slot (map nodes do not move)
  std::vector<double> newest_times_;  // by slot: its newest result's time (-inf: none yet)
  std::vector<double> means_;         // OnTrialResult's running means (kept for its capacity)
};

}  // namespace tunebus
