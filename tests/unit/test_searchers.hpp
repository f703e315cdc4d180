// A deterministic, stateful searcher for tests of the Searcher plumbing (runner, wrappers,
// journal): MeanSearcher suggests {"x": mean of the observed x + a seeded offset}, so what it
// suggests depends on every observation it was shown and on how many it suggested, and its state
// is journaled as deltas like a model-based searcher's (TPE). It also logs every call (not state).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "libs/tune/searcher.hpp"

namespace tunebus {
namespace {

class MeanSearcher final : public Searcher {
 public:
  MeanSearcher(int64_t num_samples, uint64_t seed) : num_samples_(num_samples), seed_(seed) {}

  const char* name() const override { return "mean"; }
  Status SetSearchProperties(const std::string& metric, const std::string& mode,
                             const nlohmann::json& param_space) override {
    metric_ = metric;
    (void)mode;
    (void)param_space;
    return Status::Ok();
  }
  Suggestion Suggest(const std::string& trial_id) override {
    calls.push_back("suggest " + trial_id);
    if (auto it = pending_.find(trial_id); it != pending_.end()) return Config(it->second);
    if (num_samples_ >= 0 && n_ >= num_samples_) return Suggestion::Finished();
    if (not_now) return Suggestion::NotNow();
    double sum = 0;
    for (const auto& [x, value] : observations_) sum += x;
    const double mean = observations_.empty() ? 0 : sum / double(observations_.size());
    const double x = mean + Offset(n_);
    Record({{"suggest", trial_id}, {"x", x}});
    return Config(x);
  }
  Status AddEvaluatedPoint(const nlohmann::json& config, double value) override {
    calls.push_back(fmt::format("point {} {}", config.dump(), value));
    Record({{"point", config.value("x", 0.0)}, {"value", value}});
    return Status::Ok();
  }
  void OnTrialResult(const std::string& trial_id, const TrainingResult& result) override {
    calls.push_back(
        fmt::format("result {} {}", trial_id, result.Number("training_iteration").value_or(-1)));
  }
  void OnTrialComplete(const std::string& trial_id, const TrainingResult* last_result,
                       bool error) override {
    std::optional<double> value;
    if (last_result != nullptr && !metric_.empty()) value = last_result->Number(metric_);
    calls.push_back(fmt::format("complete {} error={} value={}", trial_id, error,
                                value ? fmt::format("{}", *value) : "none"));
    if (!pending_.contains(trial_id)) return;  // not ours, or told twice
    Record({{"complete", trial_id},
            {"value", value ? nlohmann::json(*value) : nullptr},
            {"error", error}});
  }
  int64_t Total() const override { return num_samples_; }
  int64_t suggested() const override { return n_; }
  nlohmann::json Describe() const override {
    return {{"searcher", name()}, {"observations", observations_.size()}};
  }

  nlohmann::json SaveState() const override {
    nlohmann::json obs = nlohmann::json::array();
    for (const auto& [x, v] : observations_) obs.push_back({x, v});
    return {{"n", n_}, {"observations", obs}, {"pending", pending_}};
  }
  Status RestoreState(const nlohmann::json& state) override {
    n_ = 0;
    observations_.clear();
    pending_.clear();
    events_ = nlohmann::json::array();
    if (state.is_null()) return Status::Ok();
    n_ = state.at("n").get<int64_t>();
    for (const auto& o : state.at("observations"))
      observations_.emplace_back(o[0].get<double>(), o[1].get<double>());
    pending_ = state.at("pending").get<std::map<std::string, double>>();
    return Status::Ok();
  }
  nlohmann::json TakeStateDelta() override {
    if (events_.empty()) return nullptr;
    return std::exchange(events_, nlohmann::json::array());
  }
  Status ApplyStateDelta(const nlohmann::json& delta) override {
    if (!delta.is_array()) return Status::Corruption("mean searcher: a delta is an array");
    for (const auto& e : delta) Apply(e);
    return Status::Ok();
  }

  bool not_now = false;            // answer NotNow (test control, not state)
  std::vector<std::string> calls;  // every call, in order (not state)

 private:
  static Suggestion Config(double x) {
    return Suggestion::Config({{"x", x}}, fmt::format("x={:.4g}", x));
  }
  // A value in [-1, 1) from the seed and the suggestion's number (SplitMix64).
  double Offset(int64_t n) const {
    uint64_t z = seed_ + 0x9e3779b97f4a7c15ULL * uint64_t(n + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return double(z >> 11) * 0x1.0p-52 - 1.0;
  }
  void Record(nlohmann::json event) {
    Apply(event);
    events_.push_back(std::move(event));
  }
  void Apply(const nlohmann::json& e) {
    if (e.contains("suggest")) {
      pending_[e["suggest"].get<std::string>()] = e["x"].get<double>();
      ++n_;
    } else if (e.contains("point")) {
      observations_.emplace_back(e["point"].get<double>(), e["value"].get<double>());
    } else if (e.contains("complete")) {
      const std::string id = e["complete"].get<std::string>();
      auto it = pending_.find(id);
      if (it == pending_.end()) return;
      if (!e["error"].get<bool>() && e["value"].is_number())
        observations_.emplace_back(it->second, e["value"].get<double>());
      pending_.erase(it);
    }
  }

  int64_t num_samples_;
  uint64_t seed_;
  std::string metric_;
  int64_t n_ = 0;
  std::vector<std::pair<double, double>> observations_;  // (x, metric value)
  std::map<std::string, double> pending_;                // suggested, not ended: id -> x
  nlohmann::json events_ = nlohmann::json::array();
};

}  // namespace
}  // namespace tunebus
