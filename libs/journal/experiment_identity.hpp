// Who an experiment is: the fields its experiment_submitted record (libs/journal/records.hpp)
// and its snapshot (libs/journal/snapshot.hpp) hold, written once as a field list
// (libs/core/fields.hpp). The scheduler builds an Experiment from it (services/scheduler/
// experiment.hpp) and replay gives it back (libs/journal/replay.hpp).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "libs/core/fields.hpp"
#include "libs/core/trial.hpp"
#include "libs/core/trial_fields.hpp"

namespace tunebus::journal {

struct ExperimentIdentity {
  std::string experiment_id;  // 5 hex digits, the prefix of its trial ids
  uint64_t seed = 0;
  double submitted_at_s = 0;  // wall clock of the submission, seconds since the epoch
  std::string base_dir;       // the experiment file's folder, as submitted
  std::string source_name;    // the experiment file's name, as submitted
  /// The checkpoint every first trial restores (`restore_from`). Journals written before it was
  /// a field of experiment_submitted give it through their first trial_added's
  /// restore_checkpoint (libs/journal/replay.cpp).
  std::optional<CheckpointRef> restore_from;
  /// The folder under the results directory the run writes to; "" = the experiment's name
  /// (a new run of a name whose folder holds an earlier run gets another one).
  std::string results_folder;
  std::string working_dir_digest;      // the shipped working_dir's SHA-256; "" = not shipped
  int64_t working_dir_size_bytes = 0;  // its archive's size
  /// The observations `search.warm_start` read from earlier experiments at submission
  /// (libs/tune/warm_start_source.hpp: an array of sources), or null: none named.
  nlohmann::json warm_start;
};

/// The identity's fields under their record keys, in sorted order (T: ExperimentIdentity or
/// const ExperimentIdentity). Readers of journals written before a field existed get its
/// default: only experiment_id, base_dir, source_name and seed are required.
template <class T, class V>
void VisitExperimentIdentityFields(T& x, V&& v) {
  v("base_dir", x.base_dir, fields::kRequired);
  v("experiment_id", x.experiment_id, fields::kRequired);
  v("restore_from", x.restore_from, fields::kOmitDefault);
  v("results_folder", x.results_folder, fields::kOmitDefault);
  v("seed", x.seed, fields::kRequired);
  v("source_name", x.source_name, fields::kRequired);
  v("submitted_at", x.submitted_at_s, fields::kOmitDefault);
  v("warm_start", x.warm_start, fields::kOmitDefault);
  v("working_dir_digest", x.working_dir_digest, fields::kOmitDefault);
  v("working_dir_size_bytes", x.working_dir_size_bytes, fields::kOmitDefault);
}

}  // namespace tunebus::journal
