// The field lists of a trial's parts (libs/core/fields.hpp), shared by every shape that holds
// them: the control socket's trial view, the journal's records and snapshots. Also the
// nlohmann::json conversions of the trial's types, which the JSON visitors use:
//   CheckpointRef  {checkpoint_id, score (number or null), size_bytes, time_total_s (seconds),
//                   training_iteration}
//   TrialFailure   {attempt, error, kind (FailureKindName), then (a trial status)}
//   CheckpointNotStored  {reason, training_iteration}
//   TrialStatus    its name ("RUNNING"); reading accepts any case
//   FailureKind    its name (failure_kind.hpp); reading an unknown name gives kError
//   Resources      its units ({"cpu": 1000, ...}, Resources::units_map), the exact form
// Errors: reading throws nlohmann::json exceptions (an unknown trial status is other_error 501).
#pragma once

#include <nlohmann/json.hpp>

#include "libs/core/fields.hpp"
#include "libs/core/resources.hpp"
#include "libs/core/trial.hpp"

namespace tunebus {

/// A checkpoint's fields, in key order.
template <class C, class V>  // C: CheckpointRef or const CheckpointRef
void VisitCheckpointFields(C& c, V&& v) {
  v("checkpoint_id", c.checkpoint_id, fields::kRequired);
  v("score", c.score);
  v("size_bytes", c.size_bytes);
  v("time_total_s", c.time_total_s);
  v("training_iteration", c.training_iteration, fields::kRequired);
}

/// A failure history entry's fields, in key order.
template <class F, class V>  // F: TrialFailure or const TrialFailure
void VisitFailureFields(F& f, V&& v) {
  v("attempt", f.attempt);
  v("error", f.error);
  v("kind", f.kind);
  v("then", f.then);
}

/// A refused checkpoint's fields, in key order.
template <class C, class V>  // C: CheckpointNotStored or const CheckpointNotStored
void VisitCheckpointNotStoredFields(C& c, V&& v) {
  v("reason", c.reason);
  v("training_iteration", c.training_iteration, fields::kRequired);
}

void to_json(nlohmann::json& j, const CheckpointRef& c);
void from_json(const nlohmann::json& j, CheckpointRef& c);
void to_json(nlohmann::json& j, const CheckpointNotStored& c);
void from_json(const nlohmann::json& j, CheckpointNotStored& c);
void to_json(nlohmann::json& j, const TrialFailure& f);
void from_json(const nlohmann::json& j, TrialFailure& f);
void to_json(nlohmann::json& j, TrialStatus s);
void from_json(const nlohmann::json& j, TrialStatus& s);
void to_json(nlohmann::json& j, FailureKind k);
void from_json(const nlohmann::json& j, FailureKind& k);
void to_json(nlohmann::json& j, const Resources& r);
/// Lenient: keys whose value is not an integer are skipped; units Resources::FromUnits refuses
/// give no resources.
void from_json(const nlohmann::json& j, Resources& r);

}  // namespace tunebus
