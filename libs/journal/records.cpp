#include "libs/journal/records.hpp"

#include <msgpack.hpp>

namespace tunebus::journal {

using nlohmann::json;

std::string EncodeRecord(const json& record) {
  std::string bytes;
  json::to_msgpack(record, bytes);
  return bytes;
}

Result<json> DecodeRecord(const std::string& bytes) {
  json j = json::from_msgpack(bytes, /*strict=*/true, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("kind") || !j["kind"].is_string()) {
    return Status::Corruption("journal record is not a msgpack object with a 'kind'");
  }
  return j;
}

json CheckpointJson(const CheckpointRef& c) {
  return {{"checkpoint_id", c.checkpoint_id}, {"training_iteration", c.training_iteration},
          {"time_total_s", c.time_total_s}, {"score", c.score ? json(*c.score) : json(nullptr)},
          {"size_bytes", c.size_bytes}};
}

json ExperimentSubmitted(const std::string& experiment_id, const std::string& spec_yaml, const std::string& base_dir,
                         const std::string& source_name, uint64_t seed, double submitted_at_s) {
  return {{"kind", "experiment_submitted"}, {"experiment_id", experiment_id}, {"spec_yaml", spec_yaml},
          {"base_dir", base_dir}, {"source_name", source_name}, {"seed", seed}, {"submitted_at", submitted_at_s}};
}

json TrialAdded(const Trial& t) {
  json r = {{"kind", "trial_added"}, {"trial_id", t.trial_id}, {"index", t.index}, {"config", t.config},
            {"experiment_tag", t.experiment_tag}, {"resources", t.resources.units_map()}};
  if (t.restore_checkpoint) r["restore_checkpoint"] = CheckpointJson(*t.restore_checkpoint);
  return r;
}

json SearcherState(const json& state) { return {{"kind", "searcher_state"}, {"state", state}}; }

json TrialStarted(const Trial& t) {
  return {{"kind", "trial_started"}, {"trial_id", t.trial_id}, {"attempt", t.attempt},
          {"worker_id", t.worker_id}, {"gpu_ids", t.gpu_ids},
          {"restored_checkpoint_id", t.restored_checkpoint_id}, {"restored_iteration", t.restored_iteration},
          {"restored_time_total_s", t.restored_time_total_s}, {"start_time_s", t.start_time_s}};
}

json ResultRecord(const Trial& t, const json& result, const char* decision) {
  return {{"kind", "result"}, {"trial_id", t.trial_id}, {"attempt", t.attempt}, {"seq", t.last_seq},
          {"result", result}, {"decision", decision}};
}

namespace {
// msgpack-c's packer writing straight into a std::string (no sbuffer to copy from).
struct StringSink {
  std::string& bytes;
  void write(const char* data, size_t size) { bytes.append(data, size); }
};
}  // namespace

std::string EncodeResultRecord(const Trial& t, std::string_view result_msgpack, const char* decision) {
  std::string bytes;
  bytes.reserve(96 + t.trial_id.size() + result_msgpack.size());
  StringSink buf{bytes};
  msgpack::packer<StringSink> pk(buf);
  pk.pack_map(6);  // the keys in ResultRecord's (sorted) order
  pk.pack(std::string_view("attempt"));
  pk.pack(t.attempt);
  pk.pack(std::string_view("decision"));
  pk.pack(std::string_view(decision));
  pk.pack(std::string_view("kind"));
  pk.pack(std::string_view("result"));
  pk.pack(std::string_view("result"));
  buf.write(result_msgpack.data(), result_msgpack.size());
  pk.pack(std::string_view("seq"));
  pk.pack(t.last_seq);
  pk.pack(std::string_view("trial_id"));
  pk.pack(t.trial_id);
  return bytes;
}

json TrialStatusRecord(const Trial& t) {
  json r = {{"kind", "trial_status"}, {"trial_id", t.trial_id}, {"attempt", t.attempt},
            {"status", TrialStatusName(t.status)}, {"error", t.error}, {"num_failures", t.num_failures}};
  if (t.num_worker_losses > 0) r["num_worker_losses"] = t.num_worker_losses;
  const bool failed_now = !t.error.empty() && !t.failures.empty() && t.failures.back().attempt == t.attempt &&
                          t.failures.back().error == t.error;
  if (failed_now && t.failures.back().kind != FailureKind::kError) {
    r["failure_kind"] = FailureKindName(t.failures.back().kind);
  }
  return r;
}

json TrialSchedulerDelta(const json& delta) { return {{"kind", "trial_scheduler"}, {"delta", delta}}; }

json ExperimentEnded(const std::string& status, const std::string& reason) {
  return {{"kind", "experiment_ended"}, {"status", status}, {"reason", reason}};
}

json CheckpointSavedRecord(const Trial& t, const CheckpointRef& c) {
  json r = CheckpointJson(c);
  r["kind"] = "checkpoint_saved";
  r["trial_id"] = t.trial_id;
  r["attempt"] = t.attempt;
  return r;
}

json ExperimentResumed(double at_s, const std::string& rerun_errored) {
  return {{"kind", "experiment_resumed"}, {"at", at_s}, {"rerun_errored", rerun_errored}};
}

json CheckpointDeletedRecord(const Trial& t, const std::string& checkpoint_id) {
  return {{"kind", "checkpoint_deleted"}, {"trial_id", t.trial_id}, {"checkpoint_id", checkpoint_id}};
}

json TrialUpdated(const Trial& t, const json& change) {
  return {{"kind", "trial_updated"}, {"trial_id", t.trial_id}, {"config", t.config},
          {"resources", t.resources.units_map()}, {"change", change}};
}

}  // namespace tunebus::journal
