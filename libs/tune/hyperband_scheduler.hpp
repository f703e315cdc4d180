// HyperBandScheduler: synchronous HyperBand (Li et al., "Hyperband: A Novel Bandit-Based
// Approach to Hyperparameter Optimization", JMLR 18(185), 2018, Algorithm 1) with Ray Tune's
// HyperBandScheduler semantics and parameter names:
//
//   time_attr          result key measuring progress (default training_iteration)
//   metric, mode       what is compared (default: the experiment's)
//   max_t              R: the most time_attr a trial gets (default 81)
//   reduction_factor   eta (default 3)
//   stop_last_trials   stop trials at the end of their last rung (default true)
//
// s_max + 1 = round(log_eta(max_t)) + 1 brackets form a band. Bracket s holds
// n0 = ceil((s_max + 1) / (s + 1) * eta^s) trials that first run to r0 = floor(max_t * eta^-s).
// New trials fill the current bracket, then the next (s = 0, 1, ...), then a new band. A trial
// that reaches its bracket's current milestone is PAUSEd (checkpoint saved, resources freed)
// until every live trial of the bracket has; then successive halving keeps the best
// ceil(n / eta), which are unpaused and continue from their checkpoints to the next milestone
// (min(r * eta, max_t - milestone), as Ray Tune), and stops the rest. After the last halving
// the bracket's trials stop at their milestone. choose_trial_to_run prefers pending trials of
// the least complete bracket of the oldest band.
//
// HyperBandForBohb (hyperband_for_bohb.hpp) derives from it, as Ray Tune's HyperBandForBOHB
// derives from HyperBandScheduler: the bracket order (BracketS), the pause rule and the choice
// of the next trial differ; the brackets, halving and journaled events are these.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "libs/tune/trial_scheduler.hpp"

namespace tunebus {

class HyperBandScheduler : public JournaledTrialScheduler {
 public:
  struct Options {
    std::string time_attr = "training_iteration";
    std::string metric;
    std::string mode = "max";
    double max_t = 81;
    double reduction_factor = 3;
    bool stop_last_trials = true;
  };
  /// Errors: InvalidArgument "<param>: ...".
  static Result<std::unique_ptr<TrialScheduler>> Create(const nlohmann::json& config,
                                                        const std::string& metric,
                                                        const std::string& mode);
  explicit HyperBandScheduler(Options options);
  /// The parameters above from the `scheduler:` map of the scheduler named `name`. Errors:
  /// InvalidArgument "<param>: ...".
  static Result<Options> ParseOptions(const nlohmann::json& config, const std::string& metric,
                                      const std::string& mode, const char* name);
  /// The trials one band holds (the n0 of its brackets with r0 >= 1), e.g. 143 for max_t 100
  /// and reduction_factor 3 (81 + 34 + 15 + 8 + 5).
  static int64_t BandTrials(double max_t, double reduction_factor);

  const char* name() const override { return "hyperband"; }
  Status ValidateResult(const TrainingResult& result) const override;
  void OnTrialAdd(const Trial& trial) override;
  Decision OnTrialResult(const Trial& trial, const TrainingResult& result) override;
  void OnTrialComplete(const Trial& trial, const TrainingResult& result) override;
  void OnTrialRemove(const Trial& trial) override;
  void OnTrialError(const Trial& trial) override;
  int64_t ChooseTrialToRun(const std::set<int64_t>& pending) override;

  nlohmann::json SaveState() const override;
  Status RestoreState(const nlohmann::json& state) override;

  /// For tests: (band, s, n, r, milestone, live trial ids) of every bracket, in creation order.
  struct BracketView {
    size_t band = 0;
    int64_t s = 0, n = 0, r = 0, halves = 0;
    double milestone = 0;
    std::vector<std::string> live;
  };
  std::vector<BracketView> Brackets() const;

 protected:
  struct Live {
    double time = 0;   // time_attr of its newest result (0 before any)
    double value = 0;  // metric * sign of its newest result
    bool has_result = false;
  };
  struct Bracket {
    size_t band = 0;
    int64_t s = 0;
    int64_t n0 = 0, n = 0;  // trials it holds at first / keeps after the last halving
    int64_t r = 0;          // time units of the current rung
    double milestone = 0;   // time_attr the live trials must reach (Ray Tune's _cumul_r)
    int64_t halves = 0;     // halvings left
    int64_t added = 0;      // trials ever added
    double total_work = 0, completed = 0;
    std::vector<std::string> order;  // live trial ids in the order they were added
    std::map<std::string, Live> live;
  };

  bool Filled(const Bracket& b) const { return b.added == b.n0; }
  bool CurIterDone(const Bracket& b) const;
  bool Finished(const Bracket& b) const {
    return options_.stop_last_trials && b.halves == 0 && CurIterDone(b);
  }
  bool ContinueTrial(const Bracket& b, const std::string& trial_id) const;
  /// Records a result of `trial_id` (its time_attr and signed metric) in its bracket.
  void RecordResult(const std::string& trial_id, const TrainingResult& result);
  /// Ray Tune's _process_bracket: halve a completed rung, stop the bad, unpause the good.
  Decision ProcessBracket(size_t bracket, const std::string& current);
  int64_t N0(int64_t s) const;
  int64_t R0(int64_t s) const;
  /// The s of the bracket a band creates after `in_band` brackets (Ray Tune's on_trial_add:
  /// s = len(cur_band), the smallest brackets first).
  virtual int64_t BracketS(int64_t in_band) const { return in_band; }
  /// Ray Tune's _Bracket.filled: it holds as many live trials as its current size n.
  static bool HoldsItsSize(const Bracket& b) { return b.live.size() == size_t(b.n); }

  /// The one place state changes (live and in replay):
  ///   {"add": trial_id}  {"res": [trial_id, time, value]}  {"halve": bracket}  {"del": trial_id}
  Status Apply(const nlohmann::json& event) override;

  Options options_;
  double sign_ = 1;
  int64_t s_max_1_ = 1;
  std::vector<Bracket> brackets_;  // creation order
  std::map<std::string, size_t> trial_bracket_;
  size_t bands_ = 0;         // bands started
  bool processing_ = false;  // inside ProcessBracket (re-entrant removes)
};

}  // namespace tunebus
