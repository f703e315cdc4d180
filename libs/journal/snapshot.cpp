#include "libs/journal/snapshot.hpp"

#include <fmt/format.h>

#include <msgpack.hpp>

#include "libs/core/fields.hpp"
#include "libs/core/trial_fields.hpp"
#include "libs/journal/trial_record_fields.hpp"

namespace tunebus::journal {

using nlohmann::json;

namespace {

constexpr int kSnapshotVersion = 1;

// A snapshot's trial: the fields of its trial_added, trial_started and trial_status records and
// the state the others fold into it.
template <class T, class V>  // T: Trial or const Trial
void VisitTrialSnapshotFields(T& t, V&& v) {
  VisitTrialAddedFields(t, v);
  VisitTrialStartedFields(t, v);
  VisitTrialStatusFields(t, v);
  v("checkpoints", t.checkpoints, fields::kRequired);
  v("checkpoints_not_stored", t.checkpoints_not_stored, fields::kOmitDefault);
  v("last_seq", t.last_seq, fields::kRequired);
  v("newest_checkpoint_has_config", t.newest_checkpoint_has_config);
  v("num_checkpoints_not_stored", t.num_checkpoints_not_stored, fields::kOmitDefault);
  v("num_results", t.num_results, fields::kRequired);
  v("requested_checkpoints", t.requested_checkpoints, fields::kOmitDefault);
  v("time_total_s", t.time_total_s, fields::kRequired);
  v("training_iteration", t.training_iteration, fields::kRequired);
}

json TrialJson(const Trial& t) {
  json j = json::object();
  VisitTrialSnapshotFields(t, fields::JsonWriter{j});
  j["last_result"] = t.LastResult();
  // Failures as [attempt, error, then, kind] arrays (the snapshot's first form).
  json failures = json::array();
  for (const TrialFailure& f : t.failures) {
    failures.push_back({f.attempt, f.error, TrialStatusName(f.then), FailureKindName(f.kind)});
  }
  j["failures"] = std::move(failures);
  return j;
}

Trial TrialFrom(const json& j, int64_t index) {
  Trial t;
  VisitTrialSnapshotFields(t, fields::JsonReader{j});
  t.index = index;
  t.SetLastResult(j.at("last_result"));
  // Snapshots older than the field: a trial's newest checkpoint was taken as its config's.
  if (!j.contains("newest_checkpoint_has_config")) {
    t.newest_checkpoint_has_config = !t.checkpoints.empty();
  }
  for (const json& f : j.value("failures", json::array())) {
    t.failures.push_back({fields::GetInteger<int64_t>(f.at(0)), f.at(1).get<std::string>(),
                          f.at(2).get<TrialStatus>(),
                          f.size() > 3 ? f.at(3).get<FailureKind>() : FailureKind::kError});
  }
  return t;
}

// trial_id -> the action's name, as the snapshot stores it.
json ActionNames(const std::map<std::string, Action>& actions) {
  json out = json::object();
  for (const auto& [trial_id, action] : actions) out[trial_id] = ActionName(action);
  return out;
}

}  // namespace

std::string SnapshotPrefix(const std::string& journal) { return journal + "/snapshot-"; }

std::string SnapshotId(const std::string& journal, uint64_t seq) {
  return fmt::format("{}{:012d}", SnapshotPrefix(journal), seq);
}

std::string EncodeSnapshot(const ReplayedExperiment& s) { return EncodeSnapshot(s, s.trials); }

std::string EncodeSnapshot(const ReplayedExperiment& s, const std::vector<Trial>& trials) {
  json j = {{"snapshot_version", kSnapshotVersion},
            {"spec_yaml", s.spec_yaml},
            {"searcher_state", s.searcher_state},
            {"searcher_deltas", s.searcher_deltas},
            {"last_action", ActionNames(s.last_action)},
            {"scheduler_state", s.scheduler_state},
            {"ended_status", s.ended_status ? ExperimentStatusName(*s.ended_status) : ""},
            {"ended_reason", s.ended_reason},
            {"records", s.records}};
  VisitExperimentIdentityFields(s.identity, fields::JsonWriter{j});
  if (s.weight) j["weight"] = *s.weight;
  if (!s.preempted.empty()) j["preempted"] = s.preempted;
  // A msgpack map of j's entries plus "trials", written trial by trial: no document of every
  // trial is ever built (at 100,000 trials that document alone is hundreds of MB of small nodes).
  std::string out;
  msgpack::sbuffer head;
  msgpack::packer<msgpack::sbuffer> pk(head);
  pk.pack_map(uint32_t(j.size() + 1));
  out.append(head.data(), head.size());
  for (const auto& [key, value] : j.items()) {
    json::to_msgpack(json(key), out);
    json::to_msgpack(value, out);
  }
  json::to_msgpack(json("trials"), out);
  head.clear();
  pk.pack_array(uint32_t(trials.size()));
  out.append(head.data(), head.size());
  for (const Trial& t : trials) json::to_msgpack(TrialJson(t), out);
  return out;
}

Result<ReplayedExperiment> DecodeSnapshot(const std::string& bytes) {
  json j = json::from_msgpack(bytes, /*strict=*/true, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || j.value("snapshot_version", 0) != kSnapshotVersion) {
    return Status::Corruption("not a journal snapshot of version " +
                              std::to_string(kSnapshotVersion));
  }
  try {
    ReplayedExperiment s;
    VisitExperimentIdentityFields(s.identity, fields::JsonReader{j});
    if (auto it = j.find("weight"); it != j.end() && it->is_number() && it->get<double>() > 0)
      s.weight = it->get<double>();
    if (auto it = j.find("preempted"); it != j.end())
      s.preempted = it->get<std::vector<std::string>>();
    s.spec_yaml = j.at("spec_yaml").get<std::string>();
    int64_t index = 0;
    for (const json& t : j.at("trials")) s.trials.push_back(TrialFrom(t, index++));
    s.searcher_state = j.at("searcher_state");
    if (auto it = j.find("searcher_deltas"); it != j.end() && it->is_array()) {
      for (const json& d : *it) s.searcher_deltas.push_back(d);
    }
    s.scheduler_state = j.at("scheduler_state");
    for (const auto& [trial_id, word] : j.at("last_action").items()) {
      auto action = ParseAction(word.get<std::string>());
      if (!action.ok()) return Status::Corruption("journal snapshot: " + action.status().message());
      s.last_action[trial_id] = *action;
    }
    if (const std::string ended = j.at("ended_status").get<std::string>(); !ended.empty()) {
      auto status = ParseExperimentStatus(ended);
      if (!status.ok()) return Status::Corruption("journal snapshot: " + status.status().message());
      s.ended_status = *status;
    }
    s.ended_reason = j.at("ended_reason").get<std::string>();
    s.records = fields::GetInteger<uint64_t>(j.at("records"));
    return s;
  } catch (const json::exception& e) {
    return Status::Corruption(std::string("malformed journal snapshot: ") + e.what());
  }
}

}  // namespace tunebus::journal
