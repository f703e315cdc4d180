// The field lists (libs/core/fields.hpp) of the journal's per-trial records, without their
// "kind": records.cpp writes them (as documents and straight as msgpack), replay.cpp reads them
// and snapshot.cpp stores a trial as the union of the three plus its own fields. Each list is in
// key order, so that a streaming writer gives the bytes of nlohmann's sorted document.
#pragma once

#include "libs/core/fields.hpp"
#include "libs/core/trial.hpp"
#include "libs/core/trial_fields.hpp"

namespace tunebus::journal {

/// trial_added: what the searcher made of the trial. "index" is informative: replay numbers
/// trials in the order they were added.
template <class T, class V>  // T: Trial or const Trial
void VisitTrialAddedFields(T& t, V&& v) {
  v("config", t.config, fields::kRequired);
  v("experiment_tag", t.experiment_tag);
  v("index", t.index);
  v("resources", t.resources);
  v("restore_checkpoint", t.restore_checkpoint, fields::kOmitDefault);
  v("trial_id", t.trial_id, fields::kRequired);
}

/// trial_started: an attempt placed on a worker, and what it restored.
template <class T, class V>
void VisitTrialStartedFields(T& t, V&& v) {
  v("attempt", t.attempt, fields::kRequired);
  v("gpu_ids", t.gpu_ids);
  v("restored_checkpoint_id", t.restored_checkpoint_id);
  v("restored_iteration", t.restored_iteration);
  v("restored_time_total_s", t.restored_time_total_s);  // seconds
  v("start_time_s", t.start_time_s);                    // seconds since the epoch
  v("trial_id", t.trial_id, fields::kRequired);
  v("worker_id", t.worker_id, fields::kRequired);
}

/// trial_status: a status change and the trial's failure counts.
template <class T, class V>
void VisitTrialStatusFields(T& t, V&& v) {
  v("attempt", t.attempt);
  v("error", t.error);
  v("num_failures", t.num_failures);
  v("num_worker_losses", t.num_worker_losses, fields::kOmitDefault);
  v("returned", t.returned, fields::kOmitDefault);
  v("status", t.status, fields::kRequired);
  v("trial_id", t.trial_id, fields::kRequired);
}

}  // namespace tunebus::journal
