#include "services/scheduler/control/trial_page.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <msgpack.hpp>

namespace tunebus {

using nlohmann::json;

namespace {

// A trial's sort value: rank 0 a number, 1 a string, 2 none; `index` breaks ties.
struct SortEntry {
  int rank = 2;
  double number = 0;
  std::string_view text;  // into the trial, or into the owned strings of result.NAME
  size_t index = 0;
};

// A config value: a number or a string (viewed in place); anything else is no value.
void SetFromJson(SortEntry& e, const json& v) {
  if (v.is_number()) {
    const double x = v.get<double>();
    if (std::isnan(x)) return;
    e.rank = 0;
    e.number = x;
  } else if (v.is_string()) {
    e.rank = 1;
    e.text = v.get_ref<const std::string&>();
  }
}

void SetNumber(SortEntry& e, double x) {
  if (std::isnan(x)) return;
  e.rank = 0;
  e.number = x;
}

// The value of top-level key `name` of a trial's newest result (msgpack map bytes, as
// Trial::last_result_msgpack holds it), read in place with msgpack-c: no JSON document of the
// result (a DOM decode of every trial's result costs ~30 us each on the event loop). Bytes that
// are not a msgpack map give no value.
void SetFromResult(SortEntry& e, const std::string& bytes, const std::string& name,
                   std::deque<std::string>& owned) {
  msgpack::object_handle handle;
  try {
    handle = msgpack::unpack(bytes.data(), bytes.size());
  } catch (const std::exception&) {
    return;
  }
  const msgpack::object& map = handle.get();
  if (map.type != msgpack::type::MAP) return;
  for (uint32_t i = 0; i < map.via.map.size; ++i) {
    const msgpack::object_kv& kv = map.via.map.ptr[i];
    if (kv.key.type != msgpack::type::STR ||
        std::string_view(kv.key.via.str.ptr, kv.key.via.str.size) != name) {
      continue;
    }
    const msgpack::object& v = kv.val;
    switch (v.type) {
      case msgpack::type::POSITIVE_INTEGER:
        return SetNumber(e, double(v.via.u64));
      case msgpack::type::NEGATIVE_INTEGER:
        return SetNumber(e, double(v.via.i64));
      case msgpack::type::FLOAT32:
      case msgpack::type::FLOAT64:
        return SetNumber(e, v.via.f64);
      case msgpack::type::STR:
        e.rank = 1;
        e.text = owned.emplace_back(v.via.str.ptr, v.via.str.size);
        return;
      default:
        return;
    }
  }
}

}  // namespace

Result<TrialSort> ParseTrialSort(std::string_view text) {
  TrialSort sort;
  if (text.starts_with('-')) {
    sort.descending = true;
    text.remove_prefix(1);
  }
  using K = TrialSort::Key;
  if (text == "trial_id") {
    sort.key = K::kTrialId;
  } else if (text == "status") {
    sort.key = K::kStatus;
  } else if (text == "training_iteration") {
    sort.key = K::kTrainingIteration;
  } else if (text == "time_total_s") {
    sort.key = K::kTimeTotalS;
  } else if (text == "metric") {
    sort.key = K::kMetric;
  } else if (text.starts_with("config.") && text.size() > 7) {
    sort.key = K::kConfig;
    sort.name = std::string(text.substr(7));
  } else if (text.starts_with("result.") && text.size() > 7) {
    sort.key = K::kResult;
    sort.name = std::string(text.substr(7));
  } else {
    return Status::InvalidArgument(fmt::format(
        "sort '{}' is not one of trial_id, status, training_iteration, time_total_s, metric, "
        "config.NAME, result.NAME (a leading '-' sorts descending)",
        text));
  }
  return sort;
}

std::vector<size_t> TrialPageIndices(const std::vector<Trial>& trials,
                                     std::optional<TrialStatus> filter, const TrialSort& sort,
                                     int64_t offset, int64_t limit, size_t* matching) {
  using K = TrialSort::Key;
  std::vector<SortEntry> entries;
  entries.reserve(filter ? trials.size() / 2 : trials.size());
  std::deque<std::string> owned;  // result.NAME strings (the decoded result is a temporary)
  for (size_t i = 0; i < trials.size(); ++i) {
    const Trial& t = trials[i];
    if (filter && t.status != *filter) continue;
    SortEntry& e = entries.emplace_back();
    e.index = i;
    switch (sort.key) {
      case K::kTrialId:
        e.rank = 1;
        e.text = t.trial_id;
        break;
      case K::kStatus:
        e.rank = 1;
        e.text = TrialStatusName(t.status);
        break;
      case K::kTrainingIteration:
        SetNumber(e, double(t.training_iteration));
        break;
      case K::kTimeTotalS:
        SetNumber(e, t.time_total_s);
        break;
      case K::kMetric:
        if (t.last_metric) SetNumber(e, *t.last_metric);
        break;
      case K::kConfig:
        if (auto it = t.config.find(sort.name); t.config.is_object() && it != t.config.end()) {
          SetFromJson(e, *it);
        }
        break;
      case K::kResult:
        if (!t.last_result_msgpack.empty())
          SetFromResult(e, t.last_result_msgpack, sort.name, owned);
        break;
    }
  }
  if (matching != nullptr) *matching = entries.size();
  const auto n = int64_t(entries.size());
  if (offset >= n) return {};
  const int64_t end = limit > 0 ? std::min(n, offset + limit) : n;
  const bool desc = sort.descending;
  const auto before = [desc](const SortEntry& a, const SortEntry& b) {
    if (a.rank != b.rank) return a.rank < b.rank;
    if (a.rank == 0 && a.number != b.number)
      return desc ? a.number > b.number : a.number < b.number;
    if (a.rank == 1 && a.text != b.text) return desc ? a.text > b.text : a.text < b.text;
    return a.index < b.index;
  };
  if (offset > 0)
    std::nth_element(entries.begin(), entries.begin() + offset, entries.end(), before);
  std::partial_sort(entries.begin() + offset, entries.begin() + end, entries.end(), before);
  std::vector<size_t> page;
  page.reserve(size_t(end - offset));
  for (int64_t i = offset; i < end; ++i) page.push_back(entries[size_t(i)].index);
  return page;
}

}  // namespace tunebus
