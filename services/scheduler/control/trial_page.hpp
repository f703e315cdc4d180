// One page of an experiment's trials in a sort order, cut on the scheduler's loop for the
// control socket's ListTrials (`sort`, `offset`, `limit`; proto/control.hpp) so that a page of
// the dashboard's trial table moves only its rows, at any number of trials. Pure functions of
// the trials, unit-tested (tests/unit/trial_page_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libs/core/status.hpp"
#include "libs/core/trial.hpp"

namespace tunebus {

/// A sort order of ListTrials, parsed from "KEY" or "-KEY" (descending).
struct TrialSort {
  enum class Key {
    kTrialId,            // trial_id (creation order: ids end in the zero-padded index)
    kStatus,             // the status name
    kTrainingIteration,  // training_iteration
    kTimeTotalS,         // time_total_s (s)
    kMetric,             // the experiment's metric in the newest result (Trial::last_metric)
    kConfig,             // config.NAME
    kResult,             // result.NAME: a key of the newest result (decodes every trial's)
  };
  Key key = Key::kTrialId;
  std::string name;  // NAME of config.NAME / result.NAME
  bool descending = false;
};

/// Parses a sort key: trial_id, status, training_iteration, time_total_s, metric, config.NAME,
/// result.NAME, with a leading '-' for descending. Errors: InvalidArgument naming the keys.
Result<TrialSort> ParseTrialSort(std::string_view text);

/// The indices into `trials` of rows [offset, offset + limit) (limit 0: to the end) of the
/// trials whose status is `filter` (every trial when unset), ordered by `sort`: numbers before
/// strings, each by value (descending reverses the values only), then the trials without a
/// value (missing, null, NaN, another JSON kind), ties in creation order. The same order as
/// dashboard::SortRows over the trials' table rows, except that `metric` compares the numeric
/// last_metric only (a string metric value counts as missing). `matching` (optional) is set to
/// the number of trials that pass the filter. Cost: O(n) keys (a msgpack decode per trial for
/// result.NAME), nth_element to `offset`, then a partial sort of the page: O(n + limit log n).
std::vector<size_t> TrialPageIndices(const std::vector<Trial>& trials,
                                     std::optional<TrialStatus> filter, const TrialSort& sort,
                                     int64_t offset, int64_t limit, size_t* matching = nullptr);

}  // namespace tunebus
