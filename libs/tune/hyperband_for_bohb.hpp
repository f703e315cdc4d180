// HyperBandForBohb: the HyperBand side of BOHB (Falkner, Klein, Hutter, "BOHB: Robust and
// Efficient Hyperparameter Optimization at Scale", ICML 2018, section 3 and Algorithm 1's
// budgets), with Ray Tune 2.x's HyperBandForBOHB semantics (ray/tune/schedulers/hb_bohb.py on top
// of hyperband.py), experiment file name `hyperband_bohb`. Parameters and defaults are
// HyperBandScheduler's (time_attr, metric, mode, max_t 81, reduction_factor 3,
// stop_last_trials true). It differs from HyperBand in three places, as Ray's:
//
// - Brackets are filled largest first: a band's brackets are s = s_max, s_max - 1, ..., 0 (the
//   most successive halvings, the most trials at the smallest budget first), so the searcher
//   gets many cheap observations early.
// - A trial that reaches its bracket's milestone is PAUSEd unless the bracket holds its full
//   size and every other live trial of it is paused already; then the rung is halved at once
//   (the best ceil(n / eta) are unpaused, the rest stopped). So trials pause even while the
//   bracket is not filled, which lets the searcher add trials to it.
// - The next trial to run is the first PENDING trial of the oldest bracket (creation order, no
//   sorting by completion). When nothing is PENDING or RUNNING and the searcher has nothing now
//   (ChoosePausedTrialToRun), every bracket with a paused trial is processed: a complete rung of
//   an unfilled bracket (the searcher finished, or a concurrency limit) is halved all the same.
//
// Every result of a trial in a bracket gets `hyperband_info: {}`, and a result at a milestone
// `hyperband_info: {"budget": <milestone>}` (Ray's result["hyperband_info"]["budget"] =
// bracket._cumul_r): BohbSearcher takes exactly those results as its observations, at that
// budget (TuneBOHB.on_trial_result). Ray's TuneBOHB.on_pause / on_unpause hack (its own
// max_concurrent counts running trials only) has no counterpart here: the experiment's
// max_concurrent_trials already counts running trials only (paused ones hold no resources).
//
// Journaled as HyperBandScheduler (its events and state); a resume needs the same scheduler type.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "libs/tune/hyperband_scheduler.hpp"

namespace tunebus {

/// The key HyperBandForBohb writes into every result of its trials (Ray Tune 2.x's
/// `hyperband_info`): {} between milestones, {"budget": milestone} at one; BohbSearcher
/// observes exactly the results that carry a budget.
inline constexpr const char* kHyperBandInfo = "hyperband_info";

class HyperBandForBohb final : public HyperBandScheduler {
 public:
  /// Errors: InvalidArgument "<param>: ..." (the parameters of HyperBandScheduler).
  static Result<std::unique_ptr<TrialScheduler>> Create(const nlohmann::json& config,
                                                        const std::string& metric,
                                                        const std::string& mode);
  explicit HyperBandForBohb(Options options) : HyperBandScheduler(std::move(options)) {}

  const char* name() const override { return "hyperband_bohb"; }
  /// CONTINUE below the milestone; at it, PAUSE or (the rung complete) the halving's verdict.
  Decision OnTrialResult(const Trial& trial, const TrainingResult& result) override;
  int64_t ChooseTrialToRun(const std::set<int64_t>& pending) override;
  /// Processes the brackets that have paused trials when no trial runs (see the file comment);
  /// always nullopt: the trials a halving keeps are PENDING already.
  std::optional<std::string> ChoosePausedTrialToRun() override;

 protected:
  /// Largest bracket first: s = s_max - in_band.
  int64_t BracketS(int64_t in_band) const override { return s_max_1_ - 1 - in_band; }
};

}  // namespace tunebus
