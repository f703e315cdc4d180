#include "libs/core/trial.hpp"

#include <algorithm>
#include <cctype>
#include <ctime>

namespace tunebus {

std::string RayDate(int64_t epoch_s) {
  const std::time_t t = std::time_t(epoch_s);
  std::tm local{};
  ::localtime_r(&t, &local);
  char buf[64];
  const size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%d_%H-%M-%S", &local);
  return std::string(buf, n);
}

const char* TrialStatusName(TrialStatus status) {
  switch (status) {
    case TrialStatus::kPending:
      return "PENDING";
    case TrialStatus::kRunning:
      return "RUNNING";
    case TrialStatus::kPaused:
      return "PAUSED";
    case TrialStatus::kTerminated:
      return "TERMINATED";
    case TrialStatus::kError:
      return "ERROR";
  }
  return "UNKNOWN";
}

std::optional<TrialStatus> ParseTrialStatus(std::string_view name) {
  for (auto s : {TrialStatus::kPending, TrialStatus::kRunning, TrialStatus::kPaused,
                 TrialStatus::kTerminated, TrialStatus::kError}) {
    const std::string_view word = TrialStatusName(s);
    const bool same = name.size() == word.size() &&
                      std::equal(name.begin(), name.end(), word.begin(), [](char a, char b) {
                        return std::toupper(static_cast<unsigned char>(a)) == b;
                      });
    if (same) return s;
  }
  return std::nullopt;
}

std::string Trial::DirName() const {
  std::string name = trial_id;
  if (!experiment_tag.empty()) name += "_" + experiment_tag;
  if (name.size() > 120) name.resize(120);
  for (char& c : name) {
    const bool safe = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
                      c == '.' || c == '=' || c == ',';
    if (!safe) c = '_';
  }
  return name;
}

nlohmann::json Trial::LastResult() const {
  if (last_result_msgpack.empty()) return nullptr;
  nlohmann::json j = nlohmann::json::from_msgpack(last_result_msgpack, /*strict=*/true,
                                                  /*allow_exceptions=*/false);
  return j.is_object() ? j : nlohmann::json(nullptr);
}

void Trial::SetLastResult(const nlohmann::json& result) {
  if (!result.is_object()) {
    last_result_msgpack.clear();
    return;
  }
  // Encoded into a scratch buffer, then copied: the trial's block is sized to the result (an
  // append would leave it up to twice as large).
  thread_local std::string scratch;
  scratch.clear();
  nlohmann::json::to_msgpack(result, scratch);
  last_result_msgpack.assign(scratch);
}

void NoteFailure(Trial& t, FailureKind kind) {
  if (t.error.empty()) return;
  if (!t.failures.empty() && t.failures.back().attempt == t.attempt &&
      t.failures.back().error == t.error)
    return;
  t.failures.push_back({t.attempt, t.error, t.status, kind});
  if (t.failures.size() > kMaxFailureHistory) t.failures.erase(t.failures.begin());
}

void NoteCheckpointNotStored(Trial& t, int64_t training_iteration, std::string reason) {
  t.checkpoints_not_stored.push_back({training_iteration, std::move(reason)});
  if (t.checkpoints_not_stored.size() > kMaxCheckpointsNotStored)
    t.checkpoints_not_stored.erase(t.checkpoints_not_stored.begin());
  ++t.num_checkpoints_not_stored;
}

}  // namespace tunebus
