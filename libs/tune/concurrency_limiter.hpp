// ConcurrencyLimiter: Ray Tune 2.x's ray.tune.search.ConcurrencyLimiter(searcher, max_concurrent)
// without `batch`: wraps any searcher and answers NotNow while `max_concurrent` of the trials it
// suggested are unfinished (Ray's live_trials: suggested and not yet shown to OnTrialComplete).
// Results and ends of trials it did not suggest are not passed on (as Ray's).
//
// Experiment file: `search: {max_concurrent: N}` (N >= 1), with any search type.
// State: the live trial ids, journaled as events {"add": id} / {"remove": id} (SearcherWrapper).
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "libs/tune/searcher_wrapper.hpp"

namespace tunebus {

class ConcurrencyLimiter final : public SearcherWrapper {
 public:
  /// REQUIRES: inner != nullptr, max_concurrent >= 1.
  ConcurrencyLimiter(std::unique_ptr<Searcher> inner, int64_t max_concurrent);

  /// NotNow while max_concurrent trials it suggested are live; else the inner searcher's answer
  /// (a config makes `trial_id` live). A live trial asked again is answered by the inner searcher.
  Suggestion Suggest(const std::string& trial_id) override;
  void OnTrialResult(const std::string& trial_id, const TrainingResult& result) override;
  void OnTrialComplete(const std::string& trial_id, const TrainingResult* last_result,
                       bool error) override;
  /// The inner searcher's, plus {"max_concurrent": N, "live_trials": n}.
  nlohmann::json Describe() const override;

  int64_t max_concurrent() const { return max_concurrent_; }
  const std::set<std::string>& live_trials() const { return live_; }

 protected:
  Status Apply(const nlohmann::json& event) override;
  nlohmann::json SaveOwn() const override;  // {"live": [trial ids]}
  Status RestoreOwn(const nlohmann::json& own) override;

 private:
  int64_t max_concurrent_;
  std::set<std::string> live_;
};

}  // namespace tunebus
