#include "libs/journal/replay.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "libs/core/fields.hpp"
#include "libs/core/trial_fields.hpp"
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

Status JournalReplayer::Apply(const json& r) {
  const std::string kind = r.value("kind", "");
  const uint64_t position = state_.records + 1;
  try {
    if (kind == "experiment_submitted") {
      state_.identity = {};
      VisitExperimentIdentityFields(state_.identity, fields::JsonReader{r});
      state_.spec_yaml = r.at("spec_yaml").get<std::string>();
      submitted_ = true;
    } else if (!submitted_) {
      return Status::Corruption(
          fmt::format("journal record {} ({}) comes before experiment_submitted", position, kind));
    } else if (kind == "trial_added") {
      Trial t;
      VisitTrialAddedFields(t, fields::JsonReader{r});
      t.index = int64_t(state_.trials.size());  // trials are numbered in the order added
      if (t.restore_checkpoint && !state_.identity.restore_from) {
        state_.identity.restore_from = t.restore_checkpoint;
      }
      index_[t.trial_id] = state_.trials.size();
      state_.trials.push_back(std::move(t));
    } else if (kind == "searcher_state") {
      state_.searcher_state = r.at("state");
      state_.searcher_deltas.clear();  // the whole state holds them
    } else if (kind == "searcher") {
      state_.searcher_deltas.push_back(r.at("delta"));
    } else if (kind == "trial_scheduler") {
      state_.scheduler_deltas.push_back(r.at("delta"));
    } else if (kind == "experiment_ended") {
      auto status = ParseExperimentStatus(r.at("status").get<std::string>());
      if (!status.ok()) {
        return Status::Corruption(
            fmt::format("journal record {} ({}): {}", position, kind, status.status().message()));
      }
      state_.ended_status = *status;
      state_.ended_reason = r.value("reason", "");
    } else if (kind == "experiment_resumed") {
      state_.ended_status.reset();  // reopened (e.g. to rerun errored trials)
      state_.ended_reason.clear();
    } else if (kind == "weight_set") {
      const double weight = r.at("weight").get<double>();
      if (!(weight > 0)) {
        return Status::Corruption(
            fmt::format("journal record {} (weight_set): weight {} is not > 0", position, weight));
      }
      state_.weight = weight;
    } else if (kind == "trials_preempted") {
      state_.preempted = r.at("trial_ids").get<std::vector<std::string>>();
    } else {
      Trial* t = Find(r.at("trial_id").get<std::string>());
      if (t == nullptr) {
        return Status::Corruption(fmt::format("journal record {} ({}) names unknown trial {}",
                                              position, kind, r.at("trial_id").get<std::string>()));
      }
      if (Status s = ApplyTrialRecord(kind, r, *t); !s.ok()) return s;
    }
  } catch (const json::exception& e) {
    return Status::Corruption(
        fmt::format("journal record {} ({}) is malformed: {}", position, kind, e.what()));
  }
  state_.records = position;
  return Status::Ok();
}

void JournalReplayer::MarkLastResultDone(const Trial& t) {
  auto it = last_results_.find(size_t(t.index));
  if (it == last_results_.end()) it = last_results_.emplace(size_t(t.index), t.LastResult()).first;
  if (it->second.is_object()) it->second["done"] = true;
}

Status JournalReplayer::ApplyTrialRecord(const std::string& kind, const json& r, Trial& t) {
  if (kind == "trial_started") {
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
  } else if (kind == "result") {
    if (r.at("attempt").get<int64_t>() != t.attempt)
      return Status::Ok();  // written before a restart
    const json& result = r.at("result");
    if (IsReturnCopy(t.last_seq, r)) {  // an older journal's form of trial.returned: not a result
      last_results_[size_t(t.index)] = result;
      return Status::Ok();
    }
    t.last_seq = r.at("seq").get<int64_t>();
    t.training_iteration = result.value("training_iteration", t.training_iteration);
    t.time_total_s = result.value("time_total_s", t.time_total_s);
    last_results_[size_t(t.index)] = result;
    ++t.num_results;
    auto decision = ParseAction(r.value("decision", ActionName(Action::kContinue)));
    if (!decision.ok()) return Status::Corruption("result record: " + decision.status().message());
    if (SavesCheckpoint(*decision)) {
      CheckpointRef asked;  // the request the decision made (TrialRunner::ActionFor)
      asked.training_iteration = t.training_iteration;
      asked.time_total_s = t.time_total_s;
      asked.score = OptionalNumber(r.value("checkpoint_score", json()));
      t.requested_checkpoints.push_back(asked);
    }
    state_.last_action[t.trial_id] = *decision;
  } else if (kind == "trial_status") {
    VisitTrialStatusFields(t, fields::JsonReader{r});
    if (t.returned) MarkLastResultDone(t);
    NoteFailure(t, r.value("failure_kind", "") == "worker_lost" ? FailureKind::kWorkerLost
                                                                : FailureKind::kError);
    // A successor must know where an attempt still storing its end checkpoint runs.
    if (t.status != TrialStatus::kRunning && !StoresEndCheckpoint(t)) {
      t.worker_id.clear();
      t.gpu_ids.clear();
    }
  } else if (kind == "checkpoint_saved") {
    CheckpointRef saved = r.get<CheckpointRef>();
    std::erase_if(t.requested_checkpoints, [&](const CheckpointRef& c) {
      return c.training_iteration <= saved.training_iteration;
    });
    t.checkpoints.push_back(std::move(saved));
    t.newest_checkpoint_has_config = true;
    if (t.status != TrialStatus::kRunning && !StoresEndCheckpoint(t)) t.worker_id.clear();
  } else if (kind == "checkpoint_failed") {
    // As TrialRunner::OnCheckpointFailed: the request (and every older one) is closed and the
    // trial notes the refusal; nothing joins its checkpoints.
    const int64_t iteration = r.at("training_iteration").get<int64_t>();
    std::erase_if(t.requested_checkpoints,
                  [&](const CheckpointRef& c) { return c.training_iteration <= iteration; });
    NoteCheckpointNotStored(t, iteration, r.value("reason", ""));
    if (t.status != TrialStatus::kRunning && !StoresEndCheckpoint(t)) t.worker_id.clear();
  } else if (kind == "driver_decision") {
    (void)r.at("seq").get<int64_t>();  // malformed without it
    state_.driver_answers[t.trial_id] = r;
  } else if (kind == "checkpoint_deleted") {
    const std::string id = r.at("checkpoint_id").get<std::string>();
    std::erase_if(t.checkpoints, [&](const CheckpointRef& c) { return c.checkpoint_id == id; });
  } else if (kind == "trial_updated") {
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
  } else {
    return Status::Corruption(
        fmt::format("journal record {} has unknown kind '{}'", state_.records + 1, kind));
  }
  return Status::Ok();
}

}  // namespace tunebus::journal
