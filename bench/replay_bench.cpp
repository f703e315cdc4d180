// Replay benchmark (issues 4 and 6): how long a resuming scheduler takes to fold an experiment's
// journal of T trials and R results back into its state. Prints one JSON object:
//   {"benchmark": "replay", "trials", "results", "records", "decode_s", "replay_s", "total_s",
//    "records_per_s", "baseline_decode_only_s", "ratio_to_baseline", "machine": {...}}
// The baseline, measured in the same run, is decoding the records alone (msgpack -> JSON)
// without applying them. Usage: replay_bench [--trials N] [--results-per-trial N]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/machine.hpp"
#include "libs/journal/records.hpp"
#include "libs/journal/replay.hpp"

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

// The records a real experiment writes: submitted, per trial added + started, its results
// (10 metrics each, as a scheduler journals them) and its final status.
std::vector<std::string> MakeJournal(int trials, int results_per_trial) {
  using namespace tunebus;
  std::vector<std::string> out;
  out.push_back(journal::EncodeRecord(journal::ExperimentSubmitted("abcde", "name: bench\n", "/tmp", "b.yaml", 1, 0)));
  for (int i = 0; i < trials; ++i) {
    Trial t;
    t.trial_id = "abcde_" + std::to_string(i);
    t.index = i;
    t.config = {{"lr", 0.001 * i}, {"layers", i % 4}};
    out.push_back(journal::EncodeRecord(journal::TrialAdded(t)));
    t.attempt = 1;
    t.worker_id = "w1";
    out.push_back(journal::EncodeRecord(journal::TrialStarted(t)));
    for (int k = 1; k <= results_per_trial; ++k) {
      json result = {{"training_iteration", k}, {"time_total_s", 0.1 * k}, {"time_this_iter_s", 0.1},
                     {"mean_accuracy", 0.5 + k * 1e-4}, {"loss", 1.0 / k}, {"done", false},
                     {"trial_id", t.trial_id}, {"timestamp", 1795366691}, {"iterations_since_restore", k},
                     {"time_since_restore", 0.1 * k}};
      t.last_seq = k;
      out.push_back(journal::EncodeRecord(journal::ResultRecord(t, result, "continue")));
    }
    t.status = TrialStatus::kTerminated;
    out.push_back(journal::EncodeRecord(journal::TrialStatusRecord(t)));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int trials = 10000, per_trial = 100;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--trials")) trials = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--results-per-trial")) per_trial = std::atoi(argv[i + 1]);
  }
  const std::vector<std::string> records = MakeJournal(trials, per_trial);

  auto t0 = Clock::now();
  size_t kinds = 0;
  for (const std::string& bytes : records) kinds += tunebus::journal::DecodeRecord(bytes).ok();
  const double baseline_s = Seconds(t0);

  t0 = Clock::now();
  tunebus::journal::JournalReplayer replayer;
  for (const std::string& bytes : records) {
    auto r = tunebus::journal::DecodeRecord(bytes);
    if (!r.ok() || !replayer.Apply(*r).ok()) {
      std::fprintf(stderr, "replay failed at record %zu\n", size_t(replayer.state().records + 1));
      return 1;
    }
  }
  const double total_s = Seconds(t0);
  json out = {{"benchmark", "replay"},
              {"trials", trials},
              {"results", int64_t(trials) * per_trial},
              {"records", records.size()},
              {"total_s", total_s},
              {"records_per_s", double(records.size()) / total_s},
              {"baseline_decode_only_s", baseline_s},
              {"ratio_to_baseline", total_s / baseline_s},
              {"target_s", 1.0},
              {"meets_target", total_s <= 1.0},
              {"decoded", kinds},
              {"machine", tunebus::bench::Machine()}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
