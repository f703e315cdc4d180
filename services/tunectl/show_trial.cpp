#include "services/tunectl/show_trial.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "services/tunectl/progress_table.hpp"

namespace tunebus {

using nlohmann::json;

namespace {

// `reason` cut to kMaxNotStoredReasonBytes at a UTF-8 character boundary, with "…" appended.
std::string ShortReason(const std::string& reason) {
  if (reason.size() <= kMaxNotStoredReasonBytes) return reason;
  size_t end = kMaxNotStoredReasonBytes;
  while (end > 0 && (static_cast<unsigned char>(reason[end]) & 0xC0) == 0x80) --end;
  return reason.substr(0, end) + "…";
}

// A run of refused checkpoints with one reason.
struct Run {
  int64_t first = 0, last = 0;
  int64_t count = 0;
  std::string reason;
};

std::string RunLine(const Run& run) {
  const std::string reason = ShortReason(run.reason);
  if (run.count == 1) return fmt::format("checkpoint {} not stored: {}", run.first, reason);
  if (run.last - run.first + 1 == run.count) {
    return fmt::format("checkpoints {}–{} not stored: {}", run.first, run.last, reason);
  }
  return fmt::format("checkpoints {}–{} not stored ({} checkpoints): {}", run.first, run.last,
                     run.count, reason);
}

}  // namespace

std::vector<std::string> RenderCheckpointsNotStored(const json& trial) {
  const json& listed = Field(trial, "checkpoints_not_stored");
  std::vector<std::string> lines;
  if (!listed.is_array()) return lines;
  std::vector<int64_t> stored;
  if (const json& checkpoints = Field(trial, "checkpoints"); checkpoints.is_array()) {
    for (const json& c : checkpoints) {
      const json& it = Field(c, "training_iteration");
      if (it.is_number_integer()) stored.push_back(it.get<int64_t>());
    }
  }
  // A stored checkpoint strictly between two refused iterations splits their run.
  auto stored_between = [&](int64_t a, int64_t b) {
    return std::any_of(stored.begin(), stored.end(), [&](int64_t s) { return s > a && s < b; });
  };
  std::vector<Run> runs;
  for (const json& entry : listed) {
    const json& iteration = Field(entry, "training_iteration");
    if (!iteration.is_number_integer()) continue;
    const int64_t i = iteration.get<int64_t>();
    const std::string reason = StringField(entry, "reason");
    if (!runs.empty() && runs.back().reason == reason && i > runs.back().last &&
        !stored_between(runs.back().last, i)) {
      runs.back().last = i;
      ++runs.back().count;
    } else {
      runs.push_back({i, i, 1, reason});
    }
  }
  int64_t shown = 0;
  for (const Run& run : runs) shown += run.count;
  const int64_t total = IntField(trial, "num_checkpoints_not_stored", shown);
  if (total > shown) {
    lines.push_back(fmt::format("{} earlier checkpoint{} not stored (not listed)", total - shown,
                                total - shown == 1 ? "" : "s"));
  }
  for (const Run& run : runs) lines.push_back(RunLine(run));
  return lines;
}

}  // namespace tunebus
