#include "libs/journal/replay.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <iterator>

#include "libs/core/fields.hpp"
#include "libs/core/trial_fields.hpp"
#include "libs/journal/records.hpp"
#include "libs/journal/trial_record_fields.hpp"

namespace tunebus::journal {

using nlohmann::json;

namespace {

std::optional<double> OptionalNumber(const json& v) {
  if (v.is_number()) return v.get<double>();
  return std::nullopt;
}

}  // namespace

Trial* JournalReplayer::Find(const std::string& trial_id) {
  auto it = index_.find(trial_id);
  return it == index_.end() ? nullptr : &state_.trials[it->second];
}

ReplayedExperiment JournalReplayer::Take() {
  for (auto& [index, result] : last_results_) state_.trials[index].SetLastResult(result);
  last_results_.clear();
  return std::move(state_);
}

void JournalReplayer::Reset(ReplayedExperiment state) {
  state_ = std::move(state);
  last_results_.clear();
  state_.snapshot_records = state_.records;
  index_.clear();
  for (size_t i = 0; i < state_.trials.size(); ++i) index_[state_.trials[i].trial_id] = i;
  submitted_ = true;
}

const JournalReplayer::Handler JournalReplayer::kHandlers[] = {
    {RecordKind::kExperimentSubmitted, &JournalReplayer::OnExperimentSubmitted},
    {RecordKind::kTrialAdded, &JournalReplayer::OnTrialAdded},
    {RecordKind::kSearcherState, &JournalReplayer::OnSearcherState},
    {RecordKind::kSearcherDelta, &JournalReplayer::OnSearcherDelta},
    {RecordKind::kTrialSchedulerDelta, &JournalReplayer::OnTrialSchedulerDelta},
    {RecordKind::kTrialStarted, nullptr, &JournalReplayer::OnTrialStarted},
    {RecordKind::kResult, nullptr, &JournalReplayer::OnResult},
    {RecordKind::kTrialStatus, nullptr, &JournalReplayer::OnTrialStatus},
    {RecordKind::kCheckpointSaved, nullptr, &JournalReplayer::OnCheckpointSaved},
    {RecordKind::kCheckpointDeleted, nullptr, &JournalReplayer::OnCheckpointDeleted},
    {RecordKind::kCheckpointFailed, nullptr, &JournalReplayer::OnCheckpointFailed},
    {RecordKind::kTrialUpdated, nullptr, &JournalReplayer::OnTrialUpdated},
    {RecordKind::kDriverDecision, nullptr, &JournalReplayer::OnDriverDecision},
    {RecordKind::kExperimentResumed, &JournalReplayer::OnExperimentResumed},
    {RecordKind::kWeightSet, &JournalReplayer::OnWeightSet},
    {RecordKind::kTrialsPreempted, &JournalReplayer::OnTrialsPreempted},
    {RecordKind::kExperimentEnded, &JournalReplayer::OnExperimentEnded},
};

Status JournalReplayer::Apply(const json& r) {
  const uint64_t position = state_.records + 1;
  const std::optional<RecordKind> kind = KindOf(r);
  if (!kind) {
    const auto name = r.find(kKindField);
    return Status::Corruption(fmt::format("journal record {} has unknown kind '{}'", position,
                                          name != r.end() && name->is_string()
                                              ? name->get_ref<const std::string&>()
                                              : std::string()));
  }
  if (Status s = Dispatch(*kind, r, position); !s.ok()) return s;
  state_.records = position;
  return Status::Ok();
}

Status JournalReplayer::Dispatch(RecordKind kind, const json& r, uint64_t position) {
  static_assert(std::size(kHandlers) == kRecordKindCount, "one replay handler per record kind");
  const Handler& handler = kHandlers[size_t(kind)];
  assert(handler.kind == kind);
  const char* name = RecordKindName(kind);
  if (!submitted_ && kind != RecordKind::kExperimentSubmitted) {
    return Status::Corruption(
        fmt::format("journal record {} ({}) comes before experiment_submitted", position, name));
  }
  try {
    if (handler.experiment != nullptr) return (this->*handler.experiment)(r);
    const std::string& trial_id = r.at("trial_id").get_ref<const std::string&>();
    Trial* t = Find(trial_id);
    if (t == nullptr) {
      return Status::Corruption(
          fmt::format("journal record {} ({}) names unknown trial {}", position, name, trial_id));
    }
    return (this->*handler.trial)(r, *t);
  } catch (const json::exception& e) {
    return Status::Corruption(
        fmt::format("journal record {} ({}) is malformed: {}", position, name, e.what()));
  }
}

Status JournalReplayer::OnExperimentSubmitted(const json& r) {
  state_.identity = {};
  VisitExperimentIdentityFields(state_.identity, fields::JsonReader{r});
  state_.spec_yaml = r.at("spec_yaml").get<std::string>();
  submitted_ = true;
  return Status::Ok();
}

Status JournalReplayer::OnTrialAdded(const json& r) {
  Trial t;
  VisitTrialAddedFields(t, fields::JsonReader{r});
  t.index = int64_t(state_.trials.size());  // trials are numbered in the order added
  if (t.restore_checkpoint && !state_.identity.restore_from) {
    state_.identity.restore_from = t.restore_checkpoint;
  }
  index_[t.trial_id] = state_.trials.size();
  state_.trials.push_back(std::move(t));
  return Status::Ok();
}

Status JournalReplayer::OnSearcherState(const json& r) {
  state_.searcher_state = r.at("state");
  state_.searcher_deltas.clear();  // the whole state holds them
  return Status::Ok();
}

Status JournalReplayer::OnSearcherDelta(const json& r) {
  state_.searcher_deltas.push_back(r.at("delta"));
  return Status::Ok();
}

Status JournalReplayer::OnTrialSchedulerDelta(const json& r) {
  state_.scheduler_deltas.push_back(r.at("delta"));
  return Status::Ok();
}

Status JournalReplayer::OnExperimentEnded(const json& r) {
  auto status = ParseExperimentStatus(r.at("status").get<std::string>());
  if (!status.ok()) {
    return Status::Corruption(fmt::format("journal record {} ({}): {}", state_.records + 1,
                                          RecordKindName(RecordKind::kExperimentEnded),
                                          status.status().message()));
  }
  state_.ended_status = *status;
  state_.ended_reason = r.value("reason", "");
  return Status::Ok();
}

Status JournalReplayer::OnExperimentResumed(const json&) {
  state_.ended_status.reset();  // reopened (e.g. to rerun errored trials)
  state_.ended_reason.clear();
  return Status::Ok();
}

Status JournalReplayer::OnWeightSet(const json& r) {
  const double weight = r.at("weight").get<double>();
  if (!(weight > 0)) {
    return Status::Corruption(fmt::format("journal record {} ({}): weight {} is not > 0",
                                          state_.records + 1,
                                          RecordKindName(RecordKind::kWeightSet), weight));
  }
  state_.weight = weight;
  return Status::Ok();
}

Status JournalReplayer::OnTrialsPreempted(const json& r) {
  state_.preempted = r.at("trial_ids").get<std::vector<std::string>>();
  return Status::Ok();
}

void JournalReplayer::MarkLastResultDone(const Trial& t) {
  auto it = last_results_.find(size_t(t.index));
  if (it == last_results_.end()) it = last_results_.emplace(size_t(t.index), t.LastResult()).first;
  if (it->second.is_object()) it->second["done"] = true;
}

Status JournalReplayer::OnTrialStarted(const json& r, Trial& t) {
  const double first_start_s = t.start_time_s;
  VisitTrialStartedFields(t, fields::JsonReader{r, fields::Absent::kDefault});
  if (first_start_s != 0) t.start_time_s = first_start_s;  // the trial's first start is kept
  t.status = TrialStatus::kRunning;
  t.last_seq = 0;
  t.returned = false;
  t.training_iteration = t.restored_iteration;
  t.time_total_s = t.restored_time_total_s;
  t.restore_checkpoint.reset();
  t.requested_checkpoints.clear();
  return Status::Ok();
}

Status JournalReplayer::OnResult(const json& r, Trial& t) {
  if (fields::GetInteger<int64_t>(r.at("attempt")) != t.attempt)
    return Status::Ok();  // written before a restart
  const json& result = r.at("result");
  if (IsReturnCopy(t.last_seq, r)) {  // an older journal's form of trial.returned: not a result
    last_results_[size_t(t.index)] = result;
    return Status::Ok();
  }
  t.last_seq = fields::GetInteger<int64_t>(r.at("seq"));
  t.training_iteration = result.value("training_iteration", t.training_iteration);
  t.time_total_s = result.value("time_total_s", t.time_total_s);
  last_results_[size_t(t.index)] = result;
  ++t.num_results;
  auto decision = ParseAction(r.value("decision", ActionName(Action::kContinue)));
  if (!decision.ok()) return Status::Corruption("result record: " + decision.status().message());
  if (SavesCheckpoint(*decision)) {
    CheckpointRef asked;  // the request the decision made (CheckpointManager::ActionFor)
    asked.training_iteration = t.training_iteration;
    asked.time_total_s = t.time_total_s;
    asked.score = OptionalNumber(r.value("checkpoint_score", json()));
    t.requested_checkpoints.push_back(asked);
  }
  state_.last_action[t.trial_id] = *decision;
  return Status::Ok();
}

Status JournalReplayer::OnTrialStatus(const json& r, Trial& t) {
  VisitTrialStatusFields(t, fields::JsonReader{r});
  if (t.returned) MarkLastResultDone(t);
  NoteFailure(t, FailureKindNamed(r.value("failure_kind", "")));
  // A successor must know where an attempt still storing its end checkpoint runs.
  if (t.status != TrialStatus::kRunning && !StoresEndCheckpoint(t)) {
    t.worker_id.clear();
    t.gpu_ids.clear();
  }
  return Status::Ok();
}

Status JournalReplayer::OnCheckpointSaved(const json& r, Trial& t) {
  CheckpointRef saved = r.get<CheckpointRef>();
  std::erase_if(t.requested_checkpoints, [&](const CheckpointRef& c) {
    return c.training_iteration <= saved.training_iteration;
  });
  t.checkpoints.push_back(std::move(saved));
  t.newest_checkpoint_has_config = true;
  if (t.status != TrialStatus::kRunning && !StoresEndCheckpoint(t)) t.worker_id.clear();
  return Status::Ok();
}

Status JournalReplayer::OnCheckpointFailed(const json& r, Trial& t) {
  // As TrialRunner::OnCheckpointFailed: the request (and every older one) is closed and the
  // trial notes the refusal; nothing joins its checkpoints.
  const int64_t iteration = fields::GetInteger<int64_t>(r.at("training_iteration"));
  std::erase_if(t.requested_checkpoints,
                [&](const CheckpointRef& c) { return c.training_iteration <= iteration; });
  NoteCheckpointNotStored(t, iteration, r.value("reason", ""));
  if (t.status != TrialStatus::kRunning && !StoresEndCheckpoint(t)) t.worker_id.clear();
  return Status::Ok();
}

Status JournalReplayer::OnDriverDecision(const json& r, Trial& t) {
  (void)fields::GetInteger<int64_t>(r.at("seq"));  // malformed without it
  state_.driver_answers[t.trial_id] = r;
  return Status::Ok();
}

Status JournalReplayer::OnCheckpointDeleted(const json& r, Trial& t) {
  const std::string id = r.at("checkpoint_id").get<std::string>();
  std::erase_if(t.checkpoints, [&](const CheckpointRef& c) { return c.checkpoint_id == id; });
  return Status::Ok();
}

Status JournalReplayer::OnTrialUpdated(const json& r, Trial& t) {
  t.config = r.at("config");
  t.resources = r.value("resources", json::object()).get<Resources>();
  const json& change = r.value("change", json::object());
  if (change.contains("pbt_exploit")) {
    t.newest_checkpoint_has_config = false;
    t.requested_checkpoints.clear();
    const json& e = change["pbt_exploit"];
    const std::string id = e.value("checkpoint_id", "");
    for (const Trial& donor : state_.trials) {
      for (const CheckpointRef& c : donor.checkpoints) {
        if (c.checkpoint_id == id) t.restore_checkpoint = c;
      }
    }
  }
  return Status::Ok();
}

}  // namespace tunebus::journal
