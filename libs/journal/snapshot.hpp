// Journal snapshots: the whole replayed state of an experiment as one msgpack document, so a
// resume reads the newest snapshot and only the journal records after it (replay = snapshot +
// tail, DESIGN.md "Journal and recovery"). The scheduler stores snapshots in the
// checkpoint-store as "<journal>/snapshot-<seq:012>" (metadata {"seq"}), keeping the newest.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "libs/core/status.hpp"
#include "libs/journal/replay.hpp"

namespace tunebus::journal {

/// Records between two snapshots of one experiment.
inline constexpr uint64_t kSnapshotEveryRecords = 100000;

/// The checkpoint-store id of the snapshot covering records 1..seq of `journal`.
std::string SnapshotId(const std::string& journal, uint64_t seq);
/// The prefix every snapshot id of `journal` starts with (for CheckpointList).
std::string SnapshotPrefix(const std::string& journal);

/// msgpack bytes of `state` (covering state.records records).
std::string EncodeSnapshot(const ReplayedExperiment& state);
/// Same with `trials` in place of state.trials (the runner's own, not copied).
std::string EncodeSnapshot(const ReplayedExperiment& state, const std::vector<Trial>& trials);
/// Errors: Corruption if the bytes are not a snapshot of this version.
Result<ReplayedExperiment> DecodeSnapshot(const std::string& bytes);

}  // namespace tunebus::journal
