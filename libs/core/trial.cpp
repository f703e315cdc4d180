#include "libs/core/trial.hpp"

namespace tunebus {

const char* TrialStatusName(TrialStatus status) {
  switch (status) {
    case TrialStatus::kPending: return "PENDING";
    case TrialStatus::kRunning: return "RUNNING";
    case TrialStatus::kPaused: return "PAUSED";
    case TrialStatus::kTerminated: return "TERMINATED";
    case TrialStatus::kError: return "ERROR";
  }
  return "UNKNOWN";
}

std::optional<TrialStatus> ParseTrialStatus(std::string_view name) {
  for (auto s : {TrialStatus::kPending, TrialStatus::kRunning, TrialStatus::kPaused,
                 TrialStatus::kTerminated, TrialStatus::kError}) {
    if (name == TrialStatusName(s)) return s;
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

const char* FailureKindName(FailureKind kind) { return kind == FailureKind::kWorkerLost ? "worker_lost" : "error"; }

void NoteFailure(Trial& t, FailureKind kind) {
  if (t.error.empty()) return;
  if (!t.failures.empty() && t.failures.back().attempt == t.attempt && t.failures.back().error == t.error) return;
  t.failures.push_back({t.attempt, t.error, t.status, kind});
  if (t.failures.size() > kMaxFailureHistory) t.failures.erase(t.failures.begin());
}

}  // namespace tunebus
