// WarmStart: the `search:` section's `warm_start: [earlier-experiment, ...]` for a searcher that
// learns from results (tpe, bohb, external; docs/reference/search.md "Warm start"). Before its
// first suggestion the inner searcher is fed every observation of the named finished experiments
// (WarmStartSource: a finished trial's config and its last result's metric) through
// AddEvaluatedPointAtBudget, as Optuna's `study.add_trials` / Ray's `evaluated_rewards` seed a
// sampler with earlier trials; the observations themselves are not trials of this experiment.
//
// An observation outside this param space's domain (VariantGenerator::ValidatePoint: e.g. an lr
// beyond this space's bounds, a choice it does not offer), or one the searcher refuses, is
// skipped and counted, not an error: the rest still inform the model.
//
// Journaling: the observations come in the experiment's own record (ExperimentIdentity's
// warm_start, copied from the earlier experiments at submission), so a resume never reads the
// earlier experiments again and their deletion changes nothing. Feeding is one event, {"fed":
// n, "skipped": k}, journaled with the inner searcher's own events for the observations
// (SearcherWrapper): a resume replays both and feeds nothing twice.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/tune/searcher_wrapper.hpp"

namespace tunebus {

class WarmStart final : public SearcherWrapper {
 public:
  /// `experiments`: the names the experiment file gives; `sources`: WarmStartSource's entries
  /// (an array), or null when the names were not read (a spec check, or a journal without them):
  /// nothing is fed then. REQUIRES: inner != nullptr.
  WarmStart(std::unique_ptr<Searcher> inner, std::vector<std::string> experiments,
            nlohmann::json sources);

  Status SetSearchProperties(const std::string& metric, const std::string& mode,
                             const nlohmann::json& param_space) override;
  /// Feeds the observations first (once), then the inner searcher's answer.
  Suggestion Suggest(const std::string& trial_id) override;
  /// The inner searcher's, plus {"warm_start": {"experiments": [...], "observations": n,
  /// "skipped": k}} (n fed; k outside the param space; both 0 until the first suggestion).
  nlohmann::json Describe() const override;

  bool fed() const { return fed_; }
  int64_t observations() const { return observations_; }
  int64_t skipped() const { return skipped_; }

 protected:
  Status Apply(const nlohmann::json& event) override;
  nlohmann::json SaveOwn() const override;
  Status RestoreOwn(const nlohmann::json& own) override;

 private:
  void Feed();

  std::vector<std::string> experiments_;
  nlohmann::json sources_;
  nlohmann::json param_space_;

  // State (SaveOwn).
  bool fed_ = false;
  int64_t observations_ = 0;
  int64_t skipped_ = 0;
};

}  // namespace tunebus
