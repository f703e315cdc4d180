// StopCriteria: the experiment's `stop` dict (Ray Tune's tune.run(stop={...}), RunnerOptions::
// stop): a trial stops at the first result in which some key reaches its threshold
// (value >= threshold). Ray Tune's Trial.should_stop also refuses a result that lacks a stop key
// ("Stopping criteria X not provided in result dict"): a key no result has carried yet is a typo
// (Validate refuses it), while a key some accepted result carried is a metric reported now and
// then (e.g. every few epochs) and may be missing.
//
// Invariants: the keys seen are keys of `stop`, and a key once seen stays seen.
// Cost: O(|stop| log |stop|) per result; no allocation unless Validate refuses.
// Thread-compatibility: owned by the runner's thread.
#pragma once

#include <map>
#include <set>
#include <string>

#include "libs/core/status.hpp"
#include "libs/tune/training_result.hpp"

namespace tunebus {

class StopCriteria {
 public:
  /// `stop`: result key -> threshold (the trial stops once the key's value is >= it).
  explicit StopCriteria(std::map<std::string, double> stop) : stop_(std::move(stop)) {}

  /// Ray Tune's check that every stop key is in `result`, kept for keys no result has carried
  /// yet; notes the keys `result` carries. Errors: InvalidArgument naming the key, its near miss
  /// and the result's keys.
  Status Validate(const TrainingResult& result);
  /// True if some stop key of `result` is a number at or over its threshold.
  bool Met(const TrainingResult& result) const;
  /// Every key counts as seen (a restored experiment whose trials had accepted results: each of
  /// them carried every key).
  void MarkAllSeen();

 private:
  std::map<std::string, double> stop_;
  std::set<std::string> seen_;  // stop keys some accepted result carried
};

}  // namespace tunebus
