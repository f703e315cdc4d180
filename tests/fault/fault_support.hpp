// Helpers shared by the fault tests: submit an experiment and wait for its end over tunectl,
// and read an experiment's journal straight from the checkpoint-store (the journal is the
// truth the tests check against).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tests/integration/harness.hpp"

namespace tunebus::testing {

/// An experiment file for the external-searcher tests: `name`, the mock trainable (8 iterations
/// of 0.1-0.15 s), lr and sleep_s sampled, `trials` samples, seed 3, mean_accuracy max, the
/// `search:` lines `search` (each indented by two spaces, ending in a newline), results under
/// `results_dir`.
std::string ExternalSearchExperiment(const std::string& name, int trials, const std::string& search,
                                     const fs::path& results_dir);

/// How many trials a `tunectl -o json status` summary counts (all statuses); 0 without counts.
int64_t TrialsAdded(const nlohmann::json& summary);

/// `tunectl run --detach FILE`; returns the experiment's journal name ("<name>-<id>"), or ""
/// after adding a test failure.
std::string SubmitDetached(Cluster& cluster, const fs::path& file, const std::string& name);

/// True if /usr/bin/python3 can run `import <modules>` (e.g. "zmq, msgpack"): the fault tests
/// that start a Python peer skip without Debian's python3-* packages. Its output goes to
/// `log_dir`.
bool PythonImports(const fs::path& log_dir, const std::string& modules);

/// Polls `tunectl status [-e experiment]` ("" = the only one) until the experiment is finished;
/// returns the last status (an empty object after `timeout`).
nlohmann::json WaitFinished(Cluster& cluster, Millis timeout, const std::string& experiment = "");

/// True if `tunectl status -e NAME` says one of `experiments` ("" = the only one) is finished.
bool AnyFinished(Cluster& cluster, const std::vector<std::string>& experiments);

/// SIGKILLs the scheduler and starts it again (the same binary and flags), then waits until it
/// answers `tunectl status -e NAME` for each of `experiments` ("" = the only one). Adds a test
/// failure and returns false if the restart failed or it did not answer within 20 s.
bool RestartScheduler(Cluster& cluster, const std::vector<std::string>& experiments);

/// One step of a kill plan: `victim` (a Cluster process name) is SIGKILLed and restarted after
/// `pause` of real time.
struct Kill {
  std::string victim;
  Millis pause{0};
};

/// A seeded kill plan: `victims` in an order shuffled by std::mt19937(seed), each after a pause
/// drawn uniformly from [min_pause, max_pause] by the same generator (drawn after the shuffle).
std::vector<Kill> RandomKillPlan(std::vector<std::string> victims, uint32_t seed, Millis min_pause,
                                 Millis max_pause);

/// Runs `plan` while every one of `experiments` (their names; {""} = the only one) runs: after
/// each pause, stops early if one of them is finished, else SIGKILLs the victim and starts it
/// again (the scheduler through RestartScheduler, so it answers for each experiment before the
/// next step) and calls `after_kill(victim)`. The pauses are the point: the kills land at
/// seeded random moments of the run, whatever it is doing. Returns the kills made by victim,
/// or nullopt after adding a test failure (a restart that failed or a scheduler that never
/// answered).
std::optional<std::map<std::string, int>> RunKillPlan(
    Cluster& cluster, const std::vector<Kill>& plan,
    const std::vector<std::string>& experiments = {""},
    const std::function<void(const std::string&)>& after_kill = {});

/// SIGKILLs the scheduler after each pause of `pauses` while every one of `experiments` (their
/// names; {""} = the only one) runs, each time restarting it (RunKillPlan). Returns how many
/// kills it made, or -1 after adding a test failure.
int KillSchedulerWhileRunning(Cluster& cluster, const std::vector<Millis>& pauses,
                              const std::vector<std::string>& experiments = {""});

/// The trials' configs by index (trial_added records' `index` and `config`), from `records`.
std::map<int64_t, nlohmann::json> TrialConfigs(const std::vector<nlohmann::json>& records);

/// Every decodable record of `journal`, in order, read from the checkpoint-store at
/// `store_endpoint` (5,000 records a request).
std::vector<nlohmann::json> ReadJournal(const std::string& store_endpoint,
                                        const std::string& journal);

/// Appends `records` (journal records as documents, libs/journal/records.hpp) to `journal` in the
/// checkpoint-store at `store_endpoint`, framed as the scheduler stores them. Returns the last
/// seq written, or 0 after adding a test failure.
uint64_t AppendJournal(const std::string& store_endpoint, const std::string& journal,
                       const std::vector<nlohmann::json>& records);

/// Ids of the checkpoints the checkpoint-store at `store_endpoint` holds under `prefix` (sorted;
/// empty after adding a test failure if the store does not answer).
std::vector<std::string> ListCheckpoints(const std::string& store_endpoint,
                                         const std::string& prefix);

}  // namespace tunebus::testing
