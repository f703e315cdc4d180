// Replay benchmark: how long a resuming scheduler takes to rebuild an
// experiment of T trials and R results from its journal. A resume reads the newest snapshot
// (the scheduler stores one every --snapshot-every records) and folds the records after it;
// the worst case is a tail of snapshot_every - 1 records. Prints one JSON object:
//   {"benchmark": "replay", "trials", "results", "records", "snapshot_every", "tail_records",
//    "snapshot_bytes", "resume_s" (decode the snapshot + check, decode and apply the tail),
//    "full_replay_s" (the baseline, same run: check, decode and apply every record, no
//    snapshot),
//    "ratio_to_baseline", "target_s", "meets_target", "machine"}
// Usage: replay_bench [--trials N] [--results-per-trial N] [--snapshot-every N]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/machine.hpp"
#include "libs/journal/record_frame.hpp"
#include "libs/journal/records.hpp"
#include "libs/journal/replay.hpp"
#include "libs/journal/snapshot.hpp"

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// The stored records a real experiment writes (framed, as JournalWriter stores them):
// submitted, per trial added + started, its results (10 metrics each, as a scheduler journals
// them) and its final status.
std::vector<std::string> MakeJournal(int trials, int results_per_trial) {
  using namespace tunebus;
  std::vector<std::string> out;
  auto store = [&out](const json& record) {
    out.push_back(journal::FrameRecord(journal::EncodeRecord(record)));
  };
  store(journal::ExperimentSubmitted({"abcde", 1, 0, "/tmp", "b.yaml"}, "name: bench\n"));
  for (int i = 0; i < trials; ++i) {
    Trial t;
    t.trial_id = "abcde_" + std::to_string(i);
    t.index = i;
    t.config = {{"lr", 0.001 * i}, {"layers", i % 4}};
    store(journal::TrialAdded(t));
    t.attempt = 1;
    t.worker_id = "w1";
    store(journal::TrialStarted(t));
    for (int k = 1; k <= results_per_trial; ++k) {
      json result = {{"training_iteration", k},
                     {"time_total_s", 0.1 * k},
                     {"time_this_iter_s", 0.1},
                     {"mean_accuracy", 0.5 + k * 1e-4},
                     {"loss", 1.0 / k},
                     {"done", false},
                     {"trial_id", t.trial_id},
                     {"timestamp", 1795366691},
                     {"iterations_since_restore", k},
                     {"time_since_restore", 0.1 * k}};
      t.last_seq = k;
      store(journal::ResultRecord(t, result, Action::kContinue));
    }
    t.status = TrialStatus::kTerminated;
    store(journal::TrialStatusRecord(t));
  }
  return out;
}

}  // namespace

// Decodes and applies records[from..] to `replayer`; false (with a message) on a bad record.
bool Fold(tunebus::journal::JournalReplayer& replayer, const std::vector<std::string>& records,
          size_t from) {
  for (size_t i = from; i < records.size(); ++i) {
    auto r = tunebus::journal::ReadStoredRecord(records[i]);
    if (!r.ok() || !replayer.Apply(*r).ok()) {
      std::fprintf(stderr, "replay failed at record %zu\n", i + 1);
      return false;
    }
  }
  return true;
}

int main(int argc, char** argv) {
  int trials = 10000, per_trial = 100;
  size_t snapshot_every = tunebus::journal::kSnapshotEveryRecords;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--trials")) trials = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--results-per-trial")) per_trial = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--snapshot-every")) snapshot_every = size_t(std::atoll(argv[i + 1]));
  }
  const std::vector<std::string> records = MakeJournal(trials, per_trial);

  // Baseline: the whole journal, record by record.
  auto t0 = Clock::now();
  tunebus::journal::JournalReplayer full;
  if (!Fold(full, records, 0)) return 1;
  const double full_s = Seconds(t0);

  // The snapshot a scheduler would have stored last, leaving the longest possible tail.
  const size_t cut = records.size() > snapshot_every ? records.size() - (snapshot_every - 1) : 0;
  std::string snapshot;
  if (cut > 0) {
    tunebus::journal::JournalReplayer head;
    if (!Fold(head, {records.begin(), records.begin() + long(cut)}, 0)) return 1;
    snapshot = tunebus::journal::EncodeSnapshot(head.state());
  }
  t0 = Clock::now();
  tunebus::journal::JournalReplayer resumed;
  if (cut > 0) {
    auto state = tunebus::journal::DecodeSnapshot(snapshot);
    if (!state.ok()) {
      std::fprintf(stderr, "%s\n", state.status().ToString().c_str());
      return 1;
    }
    resumed.Reset(std::move(*state));
  }
  if (!Fold(resumed, records, cut)) return 1;
  const double resume_s = Seconds(t0);
  if (resumed.state().records != full.state().records ||
      resumed.state().trials.size() != full.state().trials.size()) {
    std::fprintf(stderr, "snapshot + tail disagrees with the full replay\n");
    return 1;
  }

  json out = {{"benchmark", "replay"},
              {"trials", trials},
              {"results", int64_t(trials) * per_trial},
              {"records", records.size()},
              {"snapshot_every", snapshot_every},
              {"tail_records", records.size() - cut},
              {"snapshot_bytes", snapshot.size()},
              {"resume_s", resume_s},
              {"full_replay_s", full_s},
              {"ratio_to_baseline", resume_s / full_s},
              {"target_s", 1.0},
              {"meets_target", resume_s <= 1.0},
              {"machine", tunebus::bench::Machine()}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
