#include "libs/journal/records.hpp"

#include <bit>
#include <limits>
#include <msgpack.hpp>
#include <optional>
#include <span>
#include <type_traits>

#include "libs/journal/trial_record_fields.hpp"

namespace tunebus::journal {

using nlohmann::json;

std::string EncodeRecord(const json& record) {
  std::string bytes;
  json::to_msgpack(record, bytes);
  return bytes;
}

std::optional<RecordKind> KindOf(const json& record) {
  const auto it = record.find(kKindField);
  if (it == record.end() || !it->is_string()) return std::nullopt;
  return FindRecordKind(it->get_ref<const std::string&>());
}

Result<json> DecodeRecord(std::string_view bytes) {
  json j = json::from_msgpack(bytes.begin(), bytes.end(), /*strict=*/true,
                              /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains(kKindField) || !j[kKindField].is_string()) {
    return Status::Corruption("journal record is not a msgpack object with a 'kind'");
  }
  return j;
}

json ExperimentSubmitted(const ExperimentIdentity& identity, const std::string& spec_yaml) {
  json r = {{kKindField, RecordKindName(RecordKind::kExperimentSubmitted)},
            {"spec_yaml", spec_yaml}};
  VisitExperimentIdentityFields(identity, fields::JsonWriter{r});
  return r;
}

json SearcherState(const json& state) {
  return {{kKindField, RecordKindName(RecordKind::kSearcherState)}, {"state", state}};
}

json SearcherDelta(const json& delta) {
  return {{kKindField, RecordKindName(RecordKind::kSearcherDelta)}, {"delta", delta}};
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
  json r = {{kKindField, RecordKindName(RecordKind::kResult)},
            {"trial_id", t.trial_id},
            {"attempt", t.attempt},
            {"seq", t.last_seq},
            {"result", result},
            {"decision", ActionName(decision)}};
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
      .Field(kKindField, RecordKindName(RecordKind::kResult))
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

json TrialSchedulerDelta(const json& delta) {
  return {{kKindField, RecordKindName(RecordKind::kTrialSchedulerDelta)}, {"delta", delta}};
}

json ExperimentEnded(ExperimentStatus status, const std::string& reason, double at_s) {
  json r = {{kKindField, RecordKindName(RecordKind::kExperimentEnded)},
            {"status", ExperimentStatusName(status)},
            {"reason", reason}};
  if (at_s > 0) r["at"] = at_s;
  return r;
}

json CheckpointSavedRecord(const Trial& t, const CheckpointRef& c) {
  json r = c;
  r[kKindField] = RecordKindName(RecordKind::kCheckpointSaved);
  r["trial_id"] = t.trial_id;
  r["attempt"] = t.attempt;
  return r;
}

json ExperimentResumed(double at_s, RerunMode rerun_errored) {
  return {{kKindField, RecordKindName(RecordKind::kExperimentResumed)},
          {"at", at_s},
          {"rerun_errored", RerunModeName(rerun_errored)}};
}

json WeightSet(double weight) {
  return {{kKindField, RecordKindName(RecordKind::kWeightSet)}, {"weight", weight}};
}

json TrialsPreempted(const std::vector<std::string>& trial_ids) {
  return {{kKindField, RecordKindName(RecordKind::kTrialsPreempted)}, {"trial_ids", trial_ids}};
}

json CheckpointDeletedRecord(const Trial& t, const std::string& checkpoint_id) {
  return {{kKindField, RecordKindName(RecordKind::kCheckpointDeleted)},
          {"trial_id", t.trial_id},
          {"checkpoint_id", checkpoint_id}};
}

json CheckpointFailedRecord(const Trial& t, const CheckpointNotStored& failed) {
  return {{kKindField, RecordKindName(RecordKind::kCheckpointFailed)},
          {"trial_id", t.trial_id},
          {"attempt", t.attempt},
          {"training_iteration", failed.training_iteration},
          {"reason", failed.reason}};
}

json DriverDecisionRecord(const Trial& t, int64_t seq, const json& answer) {
  json r = {{kKindField, RecordKindName(RecordKind::kDriverDecision)},
            {"trial_id", t.trial_id},
            {"attempt", t.attempt},
            {"seq", seq}};
  for (const char* key : {"stop_trial", "stop_all", "should_checkpoint", "samples"}) {
    if (answer.contains(key)) r[key] = answer[key];
  }
  return r;
}

json TrialUpdated(const Trial& t, const json& change) {
  return {{kKindField, RecordKindName(RecordKind::kTrialUpdated)},
          {"trial_id", t.trial_id},
          {"config", t.config},
          {"resources", t.resources.units_map()},
          {"change", change}};
}

namespace {

// A string field a trial record has besides its field list ("kind", "failure_kind").
struct ExtraField {
  std::string_view key, value;
};

// Writes a field list with a RecordPacker, and `extras` (in key order) at their places among the
// list's keys: the bytes of the record's document.
class PackFields {
 public:
  PackFields(RecordPacker& packer, std::span<const ExtraField> extras)
      : packer_(packer), extras_(extras) {}

  template <typename T>
  void operator()(std::string_view key, const T& v, unsigned flags = fields::kNone) {
    if (fields::Omitted(v, flags)) return;
    ExtrasBefore(key);
    Pack(key, v);
  }
  // The extras after the list's last key.
  void Finish() {
    for (; next_ < extras_.size(); ++next_) packer_.Field(extras_[next_].key, extras_[next_].value);
  }

 private:
  void ExtrasBefore(std::string_view key) {
    for (; next_ < extras_.size() && extras_[next_].key < key; ++next_) {
      packer_.Field(extras_[next_].key, extras_[next_].value);
    }
  }
  template <typename T>
  void Pack(std::string_view key, const T& v) {
    packer_.Field(key, v);
  }
  void Pack(std::string_view key, TrialStatus v) {
    packer_.Field(key, std::string_view(TrialStatusName(v)));
  }
  void Pack(std::string_view key, const Resources& v) { packer_.Field(key, v.units_map()); }
  void Pack(std::string_view key, const json& v) { packer_.JsonField(key, v); }
  void Pack(std::string_view key, const std::optional<CheckpointRef>& v) {
    packer_.JsonField(key, json(*v));  // present: an empty one is omitted (kOmitDefault)
  }

  RecordPacker& packer_;
  std::span<const ExtraField> extras_;
  size_t next_ = 0;
};

// The record of `visit`'s fields of `t` (visit(t, visitor) calls a field list) and `extras`, as
// a document.
template <typename Visit>
json TrialRecord(const Trial& t, std::span<const ExtraField> extras, Visit visit) {
  json r = json::object();
  for (const ExtraField& e : extras) r[std::string(e.key)] = e.value;
  visit(t, fields::JsonWriter{r});
  return r;
}

// The same record as msgpack bytes, packed field by field. REQUIRES: `extras` in key order.
template <typename Visit>
std::string EncodeTrialRecord(const Trial& t, std::span<const ExtraField> extras, Visit visit,
                              size_t reserve) {
  uint32_t n = uint32_t(extras.size());
  visit(t, [&n](std::string_view, const auto& v, unsigned flags = fields::kNone) {
    if (!fields::Omitted(v, flags)) ++n;
  });
  std::string bytes;
  bytes.reserve(reserve);
  RecordPacker packer(bytes, n);
  PackFields pack(packer, extras);
  visit(t, pack);
  pack.Finish();
  return bytes;
}

constexpr ExtraField kTrialAddedKind[] = {{kKindField, RecordKindName(RecordKind::kTrialAdded)}};
constexpr auto kTrialAddedFields = [](const Trial& t, auto&& v) { VisitTrialAddedFields(t, v); };
constexpr ExtraField kTrialStartedKind[] = {
    {kKindField, RecordKindName(RecordKind::kTrialStarted)}};
constexpr auto kTrialStartedFields = [](const Trial& t, auto&& v) {
  VisitTrialStartedFields(t, v);
};
constexpr auto kTrialStatusFields = [](const Trial& t, auto&& v) { VisitTrialStatusFields(t, v); };

// trial_status's extras: its kind, after failure_kind when the record carries one.
struct TrialStatusExtras {
  explicit TrialStatusExtras(const Trial& t) {
    const char* kind = StatusFailureKind(t);
    all[0] = {"failure_kind", kind ? kind : ""};
    all[1] = {kKindField, RecordKindName(RecordKind::kTrialStatus)};
    used = std::span<const ExtraField>(all).subspan(kind ? 0 : 1);
  }
  ExtraField all[2];
  std::span<const ExtraField> used;
};

}  // namespace

json TrialAdded(const Trial& t) { return TrialRecord(t, kTrialAddedKind, kTrialAddedFields); }

json TrialStarted(const Trial& t) { return TrialRecord(t, kTrialStartedKind, kTrialStartedFields); }

json TrialStatusRecord(const Trial& t) {
  return TrialRecord(t, TrialStatusExtras(t).used, kTrialStatusFields);
}

std::string EncodeTrialAdded(const Trial& t) {
  return EncodeTrialRecord(t, kTrialAddedKind, kTrialAddedFields, 128 + t.experiment_tag.size());
}

std::string EncodeTrialStarted(const Trial& t) {
  return EncodeTrialRecord(t, kTrialStartedKind, kTrialStartedFields, 192);
}

std::string EncodeTrialStatusRecord(const Trial& t) {
  return EncodeTrialRecord(t, TrialStatusExtras(t).used, kTrialStatusFields, 96 + t.error.size());
}

std::string EncodeTrialSchedulerDelta(const json& delta) {
  std::string bytes;
  RecordPacker(bytes, 2)
      .JsonField("delta", delta)
      .Field(kKindField, RecordKindName(RecordKind::kTrialSchedulerDelta));
  return bytes;
}

std::string EncodeSearcherDelta(const json& delta) {
  std::string bytes;
  RecordPacker(bytes, 2)
      .JsonField("delta", delta)
      .Field(kKindField, RecordKindName(RecordKind::kSearcherDelta));
  return bytes;
}

}  // namespace tunebus::journal
