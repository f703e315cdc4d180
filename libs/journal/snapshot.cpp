#include "libs/journal/snapshot.hpp"

#include <fmt/format.h>

#include <msgpack.hpp>

#include "libs/core/resources.hpp"
#include "libs/journal/records.hpp"

namespace tunebus::journal {

using nlohmann::json;

namespace {

constexpr int kSnapshotVersion = 1;

json TrialJson(const Trial& t) {
  json checkpoints = json::array();
  for (const CheckpointRef& c : t.checkpoints) checkpoints.push_back(CheckpointJson(c));
  json j = {{"trial_id", t.trial_id},
            {"config", t.config},
            {"experiment_tag", t.experiment_tag},
            {"resources", t.resources.units_map()},
            {"status", TrialStatusName(t.status)},
            {"attempt", t.attempt},
            {"num_failures", t.num_failures},
            {"num_worker_losses", t.num_worker_losses},
            {"worker_id", t.worker_id},
            {"gpu_ids", t.gpu_ids},
            {"last_result", t.LastResult()},
            {"num_results", t.num_results},
            {"error", t.error},
            {"start_time_s", t.start_time_s},
            {"training_iteration", t.training_iteration},
            {"time_total_s", t.time_total_s},
            {"last_seq", t.last_seq},
            {"checkpoints", std::move(checkpoints)},
            {"restored_checkpoint_id", t.restored_checkpoint_id},
            {"restored_iteration", t.restored_iteration},
            {"restored_time_total_s", t.restored_time_total_s},
            {"newest_checkpoint_has_config", t.newest_checkpoint_has_config}};
  if (t.restore_checkpoint) j["restore_checkpoint"] = CheckpointJson(*t.restore_checkpoint);
  if (!t.requested_checkpoints.empty()) {
    json requested = json::array();
    for (const CheckpointRef& c : t.requested_checkpoints) requested.push_back(CheckpointJson(c));
    j["requested_checkpoints"] = std::move(requested);
  }
  json failures = json::array();
  for (const TrialFailure& f : t.failures) {
    failures.push_back({f.attempt, f.error, TrialStatusName(f.then), FailureKindName(f.kind)});
  }
  j["failures"] = std::move(failures);
  return j;
}

CheckpointRef CheckpointFrom(const json& j) {
  CheckpointRef c;
  c.checkpoint_id = j.at("checkpoint_id").get<std::string>();
  c.training_iteration = j.at("training_iteration").get<int64_t>();
  c.time_total_s = j.value("time_total_s", 0.0);
  if (j.contains("score") && j["score"].is_number()) c.score = j["score"].get<double>();
  c.size_bytes = j.value("size_bytes", int64_t(0));
  return c;
}

Trial TrialFrom(const json& j, int64_t index) {
  Trial t;
  t.trial_id = j.at("trial_id").get<std::string>();
  t.index = index;
  t.config = j.at("config");
  t.experiment_tag = j.value("experiment_tag", "");
  auto units = j.at("resources").get<std::map<std::string, int64_t>>();
  if (auto r = Resources::FromUnits(units); r.ok()) t.resources = *r;
  t.status = ParseTrialStatus(j.at("status").get<std::string>()).value_or(TrialStatus::kPending);
  t.attempt = j.at("attempt").get<int64_t>();
  t.num_failures = j.at("num_failures").get<int64_t>();
  t.num_worker_losses = j.value("num_worker_losses", int64_t{0});
  t.worker_id = j.at("worker_id").get<std::string>();
  t.gpu_ids = j.at("gpu_ids").get<std::vector<std::string>>();
  t.SetLastResult(j.at("last_result"));
  t.num_results = j.at("num_results").get<int64_t>();
  t.error = j.at("error").get<std::string>();
  t.start_time_s = j.at("start_time_s").get<double>();
  t.training_iteration = j.at("training_iteration").get<int64_t>();
  t.time_total_s = j.at("time_total_s").get<double>();
  t.last_seq = j.at("last_seq").get<int64_t>();
  for (const json& c : j.at("checkpoints")) t.checkpoints.push_back(CheckpointFrom(c));
  t.restored_checkpoint_id = j.at("restored_checkpoint_id").get<std::string>();
  t.restored_iteration = j.at("restored_iteration").get<int64_t>();
  t.restored_time_total_s = j.at("restored_time_total_s").get<double>();
  // Snapshots older than the field: a trial's newest checkpoint was taken as its config's.
  t.newest_checkpoint_has_config = j.value("newest_checkpoint_has_config", !t.checkpoints.empty());
  if (j.contains("restore_checkpoint"))
    t.restore_checkpoint = CheckpointFrom(j["restore_checkpoint"]);
  for (const json& c : j.value("requested_checkpoints", json::array())) {
    t.requested_checkpoints.push_back(CheckpointFrom(c));
  }
  for (const json& f : j.value("failures", json::array())) {
    const bool lost = f.size() > 3 && f.at(3) == "worker_lost";
    t.failures.push_back(
        {f.at(0).get<int64_t>(), f.at(1).get<std::string>(),
         ParseTrialStatus(f.at(2).get<std::string>()).value_or(TrialStatus::kPending),
         lost ? FailureKind::kWorkerLost : FailureKind::kError});
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
            {"experiment_id", s.experiment_id},
            {"spec_yaml", s.spec_yaml},
            {"base_dir", s.base_dir},
            {"source_name", s.source_name},
            {"seed", s.seed},
            {"submitted_at", s.submitted_at_s},
            {"searcher_state", s.searcher_state},
            {"last_action", ActionNames(s.last_action)},
            {"scheduler_state", s.scheduler_state},
            {"ended_status", s.ended_status ? ExperimentStatusName(*s.ended_status) : ""},
            {"ended_reason", s.ended_reason},
            {"records", s.records}};
  if (s.restore_from) j["restore_from"] = CheckpointJson(*s.restore_from);
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
    s.experiment_id = j.at("experiment_id").get<std::string>();
    s.spec_yaml = j.at("spec_yaml").get<std::string>();
    s.base_dir = j.at("base_dir").get<std::string>();
    s.source_name = j.at("source_name").get<std::string>();
    s.seed = j.at("seed").get<uint64_t>();
    s.submitted_at_s = j.at("submitted_at").get<double>();
    int64_t index = 0;
    for (const json& t : j.at("trials")) s.trials.push_back(TrialFrom(t, index++));
    s.searcher_state = j.at("searcher_state");
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
    s.records = j.at("records").get<uint64_t>();
    if (j.contains("restore_from")) s.restore_from = CheckpointFrom(j["restore_from"]);
    return s;
  } catch (const json::exception& e) {
    return Status::Corruption(std::string("malformed journal snapshot: ") + e.what());
  }
}

}  // namespace tunebus::journal
