#include "libs/journal/records.hpp"

#include <bit>
#include <limits>
#include <msgpack.hpp>
#include <optional>
#include <type_traits>

namespace tunebus::journal {

using nlohmann::json;

std::string EncodeRecord(const json& record) {
  std::string bytes;
  json::to_msgpack(record, bytes);
  return bytes;
}

Result<json> DecodeRecord(std::string_view bytes) {
  json j = json::from_msgpack(bytes.begin(), bytes.end(), /*strict=*/true,
                              /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("kind") || !j["kind"].is_string()) {
    return Status::Corruption("journal record is not a msgpack object with a 'kind'");
  }
  return j;
}

json CheckpointJson(const CheckpointRef& c) {
  return {{"checkpoint_id", c.checkpoint_id},
          {"training_iteration", c.training_iteration},
          {"time_total_s", c.time_total_s},
          {"score", c.score ? json(*c.score) : json(nullptr)},
          {"size_bytes", c.size_bytes}};
}

json ExperimentSubmitted(const std::string& experiment_id, const std::string& spec_yaml,
                         const std::string& base_dir, const std::string& source_name, uint64_t seed,
                         double submitted_at_s) {
  return {{"kind", "experiment_submitted"}, {"experiment_id", experiment_id},
          {"spec_yaml", spec_yaml},         {"base_dir", base_dir},
          {"source_name", source_name},     {"seed", seed},
          {"submitted_at", submitted_at_s}};
}

json TrialAdded(const Trial& t) {
  json r = {{"kind", "trial_added"},
            {"trial_id", t.trial_id},
            {"index", t.index},
            {"config", t.config},
            {"experiment_tag", t.experiment_tag},
            {"resources", t.resources.units_map()}};
  if (t.restore_checkpoint) r["restore_checkpoint"] = CheckpointJson(*t.restore_checkpoint);
  return r;
}

json SearcherState(const json& state) { return {{"kind", "searcher_state"}, {"state", state}}; }

json TrialStarted(const Trial& t) {
  return {{"kind", "trial_started"},
          {"trial_id", t.trial_id},
          {"attempt", t.attempt},
          {"worker_id", t.worker_id},
          {"gpu_ids", t.gpu_ids},
          {"restored_checkpoint_id", t.restored_checkpoint_id},
          {"restored_iteration", t.restored_iteration},
          {"restored_time_total_s", t.restored_time_total_s},
          {"start_time_s", t.start_time_s}};
}

namespace {
// msgpack-c's packer writing straight into a std::string (no sbuffer to copy from).
struct StringSink {
  std::string& bytes;
  void write(const char* data, size_t size) { bytes.append(data, size); }
};

// A record under construction: msgpack-c's packer over the record's bytes, with nlohmann's
// choices where msgpack-c would choose otherwise.
class RecordPacker {
 public:
  RecordPacker(std::string& bytes, uint32_t fields) : sink_{bytes}, pk_(sink_) {
    pk_.pack_map(fields);
  }
  template <typename T>
    requires(!std::is_convertible_v<const T&, std::string_view>)
  RecordPacker& Field(std::string_view key, const T& value) {
    pk_.pack(key);
    pk_.pack(value);
    return *this;
  }
  RecordPacker& Field(std::string_view key, std::string_view value) {
    pk_.pack(key);
    pk_.pack(value);
    return *this;
  }
  // As nlohmann::json::to_msgpack: a float32 when a float holds the value exactly, else a
  // float64 (msgpack-c's pack_double would write an integral value as an integer).
  RecordPacker& Field(std::string_view key, double value) {
    pk_.pack(key);
    const bool as_float = value >= double(std::numeric_limits<float>::lowest()) &&
                          value <= double(std::numeric_limits<float>::max()) &&
                          double(float(value)) == value;
    if (as_float) {
      PutBigEndian(char(0xca), std::bit_cast<uint32_t>(float(value)));
    } else {
      PutBigEndian(char(0xcb), std::bit_cast<uint64_t>(value));
    }
    return *this;
  }
  RecordPacker& JsonField(std::string_view key, const json& value) {
    pk_.pack(key);
    json::to_msgpack(value, sink_.bytes);  // appends
    return *this;
  }
  // A value already encoded as msgpack.
  RecordPacker& RawField(std::string_view key, std::string_view msgpack_bytes) {
    pk_.pack(key);
    sink_.write(msgpack_bytes.data(), msgpack_bytes.size());
    return *this;
  }

 private:
  template <typename Bits>
  void PutBigEndian(char prefix, Bits bits) {
    sink_.bytes.push_back(prefix);
    for (int shift = int(sizeof(Bits)) * 8 - 8; shift >= 0; shift -= 8) {
      sink_.bytes.push_back(char((bits >> shift) & 0xff));
    }
  }

  StringSink sink_;
  msgpack::packer<StringSink> pk_;
};
}  // namespace

namespace {
// The score of the checkpoint the result's decision asks for, if any (see ResultRecord).
std::optional<double> RequestedCheckpointScore(const Trial& t) {
  if (t.requested_checkpoints.empty()) return std::nullopt;
  const CheckpointRef& newest = t.requested_checkpoints.back();
  return newest.training_iteration == t.training_iteration ? newest.score : std::nullopt;
}
}  // namespace

json ResultRecord(const Trial& t, const json& result, Action decision) {
  json r = {{"kind", "result"},  {"trial_id", t.trial_id}, {"attempt", t.attempt},
            {"seq", t.last_seq}, {"result", result},       {"decision", ActionName(decision)}};
  if (auto score = RequestedCheckpointScore(t)) r["checkpoint_score"] = *score;
  return r;
}

std::string EncodeResultRecord(const Trial& t, std::string_view result_msgpack, Action decision) {
  std::string bytes;
  bytes.reserve(96 + t.trial_id.size() + result_msgpack.size());
  const std::optional<double> score = RequestedCheckpointScore(t);
  RecordPacker record(bytes, score ? 7 : 6);  // the keys in ResultRecord's (sorted) order
  record.Field("attempt", t.attempt);
  if (score) record.Field("checkpoint_score", *score);
  record.Field("decision", ActionName(decision))
      .Field("kind", "result")
      .RawField("result", result_msgpack)
      .Field("seq", t.last_seq)
      .Field("trial_id", t.trial_id);
  return bytes;
}

namespace {
// The failure_kind a trial_status record carries: set only when this attempt just failed of
// something other than a trainable error (FailureKind::kError is the default replay assumes).
const char* StatusFailureKind(const Trial& t) {
  const bool failed_now = !t.error.empty() && !t.failures.empty() &&
                          t.failures.back().attempt == t.attempt &&
                          t.failures.back().error == t.error;
  return failed_now && t.failures.back().kind != FailureKind::kError
             ? FailureKindName(t.failures.back().kind)
             : nullptr;
}
}  // namespace

json TrialStatusRecord(const Trial& t) {
  json r = {{"kind", "trial_status"}, {"trial_id", t.trial_id},
            {"attempt", t.attempt},   {"status", TrialStatusName(t.status)},
            {"error", t.error},       {"num_failures", t.num_failures}};
  if (t.num_worker_losses > 0) r["num_worker_losses"] = t.num_worker_losses;
  if (const char* kind = StatusFailureKind(t)) r["failure_kind"] = kind;
  return r;
}

json TrialSchedulerDelta(const json& delta) {
  return {{"kind", "trial_scheduler"}, {"delta", delta}};
}

json ExperimentEnded(ExperimentStatus status, const std::string& reason) {
  return {
      {"kind", "experiment_ended"}, {"status", ExperimentStatusName(status)}, {"reason", reason}};
}

json CheckpointSavedRecord(const Trial& t, const CheckpointRef& c) {
  json r = CheckpointJson(c);
  r["kind"] = "checkpoint_saved";
  r["trial_id"] = t.trial_id;
  r["attempt"] = t.attempt;
  return r;
}

json ExperimentResumed(double at_s, RerunMode rerun_errored) {
  return {{"kind", "experiment_resumed"},
          {"at", at_s},
          {"rerun_errored", RerunModeName(rerun_errored)}};
}

json CheckpointDeletedRecord(const Trial& t, const std::string& checkpoint_id) {
  return {
      {"kind", "checkpoint_deleted"}, {"trial_id", t.trial_id}, {"checkpoint_id", checkpoint_id}};
}

json TrialUpdated(const Trial& t, const json& change) {
  return {{"kind", "trial_updated"},
          {"trial_id", t.trial_id},
          {"config", t.config},
          {"resources", t.resources.units_map()},
          {"change", change}};
}

std::string EncodeTrialAdded(const Trial& t) {
  if (t.restore_checkpoint) return EncodeRecord(TrialAdded(t));  // rare: restore_from
  std::string bytes;
  bytes.reserve(128 + t.experiment_tag.size());
  RecordPacker(bytes, 6)  // the keys in TrialAdded's (sorted) order
      .JsonField("config", t.config)
      .Field("experiment_tag", t.experiment_tag)
      .Field("index", t.index)
      .Field("kind", "trial_added")
      .Field("resources", t.resources.units_map())
      .Field("trial_id", t.trial_id);
  return bytes;
}

std::string EncodeTrialStarted(const Trial& t) {
  std::string bytes;
  bytes.reserve(192);
  RecordPacker(bytes, 9)
      .Field("attempt", t.attempt)
      .Field("gpu_ids", t.gpu_ids)
      .Field("kind", "trial_started")
      .Field("restored_checkpoint_id", t.restored_checkpoint_id)
      .Field("restored_iteration", t.restored_iteration)
      .Field("restored_time_total_s", t.restored_time_total_s)
      .Field("start_time_s", t.start_time_s)
      .Field("trial_id", t.trial_id)
      .Field("worker_id", t.worker_id);
  return bytes;
}

std::string EncodeTrialStatusRecord(const Trial& t) {
  if (t.num_worker_losses > 0 || StatusFailureKind(t) != nullptr) {
    return EncodeRecord(TrialStatusRecord(t));  // rare: the optional fields
  }
  std::string bytes;
  bytes.reserve(96 + t.error.size());
  RecordPacker(bytes, 6)
      .Field("attempt", t.attempt)
      .Field("error", t.error)
      .Field("kind", "trial_status")
      .Field("num_failures", t.num_failures)
      .Field("status", TrialStatusName(t.status))
      .Field("trial_id", t.trial_id);
  return bytes;
}

std::string EncodeTrialSchedulerDelta(const json& delta) {
  std::string bytes;
  RecordPacker(bytes, 2).JsonField("delta", delta).Field("kind", "trial_scheduler");
  return bytes;
}

}  // namespace tunebus::journal
