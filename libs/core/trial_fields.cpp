#include "libs/core/trial_fields.hpp"

#include <map>
#include <string>

namespace tunebus {

using nlohmann::json;

void to_json(json& j, const CheckpointRef& c) {
  j = json::object();
  VisitCheckpointFields(c, fields::JsonWriter{j});
}

void from_json(const json& j, CheckpointRef& c) {
  c = CheckpointRef{};
  VisitCheckpointFields(c, fields::JsonReader{j});
}

void to_json(json& j, const CheckpointNotStored& c) {
  j = json::object();
  VisitCheckpointNotStoredFields(c, fields::JsonWriter{j});
}

void from_json(const json& j, CheckpointNotStored& c) {
  c = CheckpointNotStored{};
  VisitCheckpointNotStoredFields(c, fields::JsonReader{j});
}

void to_json(json& j, const TrialFailure& f) {
  j = json::object();
  VisitFailureFields(f, fields::JsonWriter{j});
}

void from_json(const json& j, TrialFailure& f) {
  f = TrialFailure{};
  VisitFailureFields(f, fields::JsonReader{j});
}

void to_json(json& j, TrialStatus s) { j = TrialStatusName(s); }

void from_json(const json& j, TrialStatus& s) {
  const auto status = ParseTrialStatus(j.get_ref<const std::string&>());
  if (!status) throw json::other_error::create(501, "unknown trial status " + j.dump(), &j);
  s = *status;
}

void to_json(json& j, FailureKind k) { j = FailureKindName(k); }

void from_json(const json& j, FailureKind& k) {
  k = FailureKindNamed(j.get_ref<const std::string&>());
}

void to_json(json& j, const Resources& r) { j = r.units_map(); }

void from_json(const json& j, Resources& r) {
  std::map<std::string, int64_t> units;
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      if (v.is_number_integer()) units[k] = v.get<int64_t>();
    }
  }
  auto parsed = Resources::FromUnits(units);
  r = parsed.ok() ? *parsed : Resources();
}

}  // namespace tunebus
