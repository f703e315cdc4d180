// PointsToEvaluate: the experiment file's `points_to_evaluate` and `evaluated_rewards` for any
// searcher (Ray Tune 2.x gives both to each searcher: BasicVariantGenerator(points_to_evaluate),
// OptunaSearch / HyperOptSearch(points_to_evaluate, evaluated_rewards)).
//
// Points to run (no evaluated_rewards): the first trials are the points, in order, before the
// inner searcher is asked. A point is a partial or full config: its keys replace the param
// space's, the keys it leaves out are sampled at random (seeded from the experiment's seed and
// the point's index), and a grid_search key it leaves out expands the point over that grid, as
// Ray's BasicVariantGenerator does (count_variants: a point takes the place of one sample). When a
// point's trial ends with the metric in its last result, the inner searcher hears of it as
// AddEvaluatedPoint(config, metric value) (it did not suggest that trial, so it is not shown the
// trial's results or end otherwise).
//
// Points with rewards (evaluated_rewards, one per point, each point a full config): known
// results, fed to the inner searcher with AddEvaluatedPoint before its first suggestion; they are
// not run (Ray's OptunaSearch / HyperOptSearch).
//
// State: whether the rewards were fed, the point being served and how many of its variants were,
// and the point trials that have not ended (id -> config, tag), journaled as events
// {"fed": true}, {"serve": id, "config", "tag"}, {"done": id} (SearcherWrapper).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/tune/searcher_wrapper.hpp"
#include "libs/tune/variant_generator.hpp"

namespace tunebus {

class PointsToEvaluate final : public SearcherWrapper {
 public:
  /// `points`: configs (objects); `rewards`: empty, or one metric value per point. `seed` draws
  /// the keys points leave out. REQUIRES: inner != nullptr; rewards empty or points.size() long.
  PointsToEvaluate(std::unique_ptr<Searcher> inner, std::vector<nlohmann::json> points,
                   std::vector<double> rewards, uint64_t seed);

  /// Validates every point against `param_space` (VariantGenerator::ValidatePoint; with rewards,
  /// every sampled key must be given) and passes the properties on. Errors: InvalidArgument
  /// "points_to_evaluate[<i>].<path>: <why>", or the inner searcher's.
  Status SetSearchProperties(const std::string& metric, const std::string& mode,
                             const nlohmann::json& param_space) override;
  /// The next point's next variant while points are left, then the inner searcher's answer. Feeds
  /// the rewards to the inner searcher first (once).
  Suggestion Suggest(const std::string& trial_id) override;
  void OnTrialResult(const std::string& trial_id, const TrainingResult& result) override;
  void OnTrialComplete(const std::string& trial_id, const TrainingResult* last_result,
                       bool error) override;
  /// The points' trials (their grid expansions) plus the inner searcher's total; -1 if that is.
  int64_t Total() const override;
  int64_t suggested() const override { return served_ + inner_->suggested(); }
  /// The inner searcher's (its `suggested` and `total`, when it has them, counting the points'
  /// trials), plus {"points_to_evaluate": P, "points_served": n} or {"evaluated_rewards": P}.
  nlohmann::json Describe() const override;

 protected:
  Status Apply(const nlohmann::json& event) override;
  nlohmann::json SaveOwn() const override;
  Status RestoreOwn(const nlohmann::json& own) override;

 private:
  struct PointTrial {
    nlohmann::json config;
    std::string tag;
  };
  bool RunsPoints() const { return rewards_.empty(); }
  /// The variant generator of point `i` (its keys fixed, the rest sampled, one sample).
  std::unique_ptr<VariantGenerator> PointGenerator(size_t i) const;
  void FeedRewards();

  std::vector<nlohmann::json> points_;
  std::vector<double> rewards_;
  uint64_t seed_;
  std::string metric_;
  nlohmann::json param_space_;
  std::vector<int64_t> expansions_;  // variants per point (its grid expansion), once validated

  // State (SaveOwn).
  bool fed_ = false;
  int64_t point_ = 0;                       // the point being served
  int64_t within_ = 0;                      // its variants served so far
  int64_t served_ = 0;                      // point trials suggested in all
  std::map<std::string, PointTrial> live_;  // point trials that have not ended

  // Cache: the generator of point current_point_ (rebuilt when it is not point_'s at within_).
  std::unique_ptr<VariantGenerator> current_;
  int64_t current_point_ = -1;
};

}  // namespace tunebus
