// SearcherWrapper: a Searcher that wraps another (Ray Tune's ConcurrencyLimiter pattern) and adds
// a little state of its own, journaled with the inner searcher's.
//
// The wrapper's own state changes only through events (small JSON objects of its own shape)
// applied by Apply, live and when a resume replays the journal, as JournaledTrialScheduler's. Its
// journaling composes with the inner searcher's (searcher.hpp "Journaling"):
//   SaveState()      = {"own": SaveOwn(), "inner": inner.SaveState()}
//   TakeStateDelta() = {"events": [...], "inner": inner.TakeStateDelta()} (a part only when it
//                      changed; null when neither did)
// so a resumed wrapper and its inner searcher reach the state they had, whatever they are.
//
// Everything a wrapper does not override goes to the inner searcher: name(), search properties,
// results, MaxPendingSuggestions(), Total(), suggested(), AddEvaluatedPoint() and
// AddEvaluatedPointAtBudget(), Describe().
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "libs/tune/searcher.hpp"

namespace tunebus {

class SearcherWrapper : public Searcher {
 public:
  /// REQUIRES: inner != nullptr.
  explicit SearcherWrapper(std::unique_ptr<Searcher> inner) : inner_(std::move(inner)) {}

  const char* name() const override { return inner_->name(); }
  Status SetSearchProperties(const std::string& metric, const std::string& mode,
                             const nlohmann::json& param_space) override {
    return inner_->SetSearchProperties(metric, mode, param_space);
  }
  Suggestion Suggest(const std::string& trial_id) override { return inner_->Suggest(trial_id); }
  Status AddEvaluatedPoint(const nlohmann::json& config, double value) override {
    return inner_->AddEvaluatedPoint(config, value);
  }
  Status AddEvaluatedPointAtBudget(const nlohmann::json& config, double value,
                                   double budget) override {
    return inner_->AddEvaluatedPointAtBudget(config, value, budget);
  }
  void OnTrialResult(const std::string& trial_id, const TrainingResult& result) override {
    inner_->OnTrialResult(trial_id, result);
  }
  void OnTrialComplete(const std::string& trial_id, const TrainingResult* last_result,
                       bool error) override {
    inner_->OnTrialComplete(trial_id, last_result, error);
  }
  int64_t MaxPendingSuggestions() const override { return inner_->MaxPendingSuggestions(); }
  int64_t Total() const override { return inner_->Total(); }
  int64_t suggested() const override { return inner_->suggested(); }
  nlohmann::json Describe() const override { return inner_->Describe(); }

  nlohmann::json SaveState() const final;
  /// Null: the initial state, the inner searcher's too. Errors: InvalidArgument when `state` is
  /// not what SaveState returns, or from the inner searcher.
  Status RestoreState(const nlohmann::json& state) final;
  nlohmann::json TakeStateDelta() final;
  /// Errors: Corruption for a delta that is not what TakeStateDelta returns, an event Apply does
  /// not know, or from the inner searcher.
  Status ApplyStateDelta(const nlohmann::json& delta) final;

  const Searcher& inner() const { return *inner_; }

 protected:
  /// The one place the wrapper's own state changes. Errors: Corruption for an unknown event.
  virtual Status Apply(const nlohmann::json& event) = 0;
  /// The wrapper's own state, and its inverse (null: the initial state).
  virtual nlohmann::json SaveOwn() const = 0;
  virtual Status RestoreOwn(const nlohmann::json& own) = 0;
  /// Applies `event` and keeps it for the next delta.
  void Record(nlohmann::json event);

  std::unique_ptr<Searcher> inner_;

 private:
  nlohmann::json events_ = nlohmann::json::array();
};

}  // namespace tunebus
