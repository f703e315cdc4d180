#include <string>
#include <string_view>

#include "fuzz/fuzz_targets.hpp"
#include "libs/journal/record_frame.hpp"
#include "libs/journal/replay.hpp"
#include "libs/journal/snapshot.hpp"

namespace tunebus::fuzz {

namespace {

// Encodes `state` as a snapshot; the snapshot must decode to the same records count and trials.
void CheckSnapshotRoundTrip(const journal::ReplayedExperiment& state) {
  const std::string bytes = journal::EncodeSnapshot(state);
  Result<journal::ReplayedExperiment> again = journal::DecodeSnapshot(bytes);
  Check(again.ok(), "a replayed state's snapshot does not decode: " + again.status().ToString());
  Check(again->records == state.records, "snapshot round trip changed the records count");
  Check(again->trials.size() == state.trials.size(), "snapshot round trip changed the trials");
}

}  // namespace

int FuzzJournalRecord(const uint8_t* data, size_t size) {
  const std::string_view stored(reinterpret_cast<const char*>(data), size);
  Result<std::string_view> payload = journal::UnframeRecord(stored);
  (void)journal::ReadStoredRecord(stored);
  if (payload.ok()) {
    const std::string framed = journal::FrameRecord(*payload);
    Result<std::string_view> again = journal::UnframeRecord(framed);
    Check(again.ok() && *again == *payload, "a framed payload does not unframe to itself");
  }
  return 0;
}

int FuzzJournalReplay(const uint8_t* data, size_t size) {
  journal::JournalReplayer replayer;
  size_t at = 0;
  while (at + 2 <= size) {
    const size_t n = std::min<size_t>(size - at - 2, size_t(data[at]) | size_t(data[at + 1]) << 8);
    const std::string_view stored(reinterpret_cast<const char*>(data + at + 2), n);
    at += 2 + n;
    Result<nlohmann::json> record = journal::ReadStoredRecord(stored);
    if (!record.ok()) continue;  // replay stops at a corrupt record; later ones are tried too
    (void)replayer.Apply(*record);
  }
  CheckSnapshotRoundTrip(replayer.state());
  (void)replayer.Take();
  return 0;
}

int FuzzSnapshot(const uint8_t* data, size_t size) {
  Result<journal::ReplayedExperiment> state =
      journal::DecodeSnapshot(std::string(reinterpret_cast<const char*>(data), size));
  if (!state.ok()) return 0;
  CheckSnapshotRoundTrip(*state);
  journal::JournalReplayer replayer;
  replayer.Reset(std::move(*state));
  (void)replayer.Apply(nlohmann::json{
      {journal::kKindField, journal::RecordKindName(journal::RecordKind::kExperimentEnded)},
      {"status", "TERMINATED"},
      {"reason", "fuzz"}});
  (void)replayer.Take();
  return 0;
}

}  // namespace tunebus::fuzz
