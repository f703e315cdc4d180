#include "tests/fault/fault_support.hpp"

#include <algorithm>
#include <random>
#include <thread>

#include "libs/journal/record_frame.hpp"
#include "libs/journal/records.hpp"
#include "proto/codec.hpp"
#include "proto/store.hpp"

namespace tunebus::testing {

using nlohmann::json;
using namespace std::chrono_literals;

namespace {

// `tunectl status`, of `experiment` unless it is "".
std::vector<std::string> StatusArgs(const std::string& experiment) {
  if (experiment.empty()) return {"status"};
  return {"status", "-e", experiment};
}

json StatusOf(Cluster& cluster, const std::string& experiment) {
  std::vector<std::string> args = {"-o", "json"};
  for (std::string& a : StatusArgs(experiment)) args.push_back(std::move(a));
  return cluster.Ctl(args, 10s).Json();
}

}  // namespace

std::string SubmitDetached(Cluster& cluster, const fs::path& file, const std::string& name) {
  auto submit = cluster.Ctl({"-o", "json", "run", "--detach", file.string()});
  EXPECT_EQ(submit.exit_code, 0) << submit.Describe();
  if (submit.exit_code != 0) return "";
  return name + "-" + submit.Json().value("experiment_id", "");
}

bool PythonImports(const fs::path& log_dir, const std::string& modules) {
  if (!fs::exists("/usr/bin/python3")) return false;
  auto p = Process::Spawn({.name = "python-check",
                           .binary = "/usr/bin/python3",
                           .args = {"-c", "import " + modules},
                           .log_dir = log_dir});
  return p->Wait(60s) == 0;
}

json WaitFinished(Cluster& cluster, Millis timeout, const std::string& experiment) {
  json status;
  const bool finished = WaitFor(
      [&] {
        status = StatusOf(cluster, experiment);
        return status.is_object() && status.value("finished", false);
      },
      timeout, 200ms);
  return finished ? status : json::object();
}

bool AnyFinished(Cluster& cluster, const std::vector<std::string>& experiments) {
  return std::any_of(experiments.begin(), experiments.end(), [&](const std::string& e) {
    const json status = StatusOf(cluster, e);
    return status.is_object() && status.value("finished", false);
  });
}

bool RestartScheduler(Cluster& cluster, const std::vector<std::string>& experiments) {
  const ::testing::AssertionResult restarted = cluster.Restart("scheduler");
  EXPECT_TRUE(restarted);  // SIGKILL, then the same binary and flags
  if (!restarted) return false;
  for (const std::string& e : experiments) {
    const bool answers =
        WaitFor([&] { return cluster.Ctl(StatusArgs(e), 2s).exit_code == 0; }, 20s, 100ms);
    EXPECT_TRUE(answers) << "tunectl status " << e << "\n" << cluster.LogTails();
    if (!answers) return false;
  }
  return true;
}

std::string ExternalSearchExperiment(const std::string& name, int trials, const std::string& search,
                                     const fs::path& results_dir) {
  return "name: " + name +
         "\n"
         "trainable: {builtin: mock}\n"
         "param_space:\n"
         "  lr: {loguniform: [0.001, 0.1]}\n"
         "  sleep_s: {uniform: [0.1, 0.15]}\n"
         "  mock_iterations: 8\n"
         "num_samples: " +
         std::to_string(trials) +
         "\n"
         "seed: 3\n"
         "metric: mean_accuracy\n"
         "mode: max\n"
         "search:\n" +
         search + "results_dir: " + results_dir.string() + "\n";
}

int64_t TrialsAdded(const json& summary) {
  if (!summary.is_object() || !summary.contains("counts")) return 0;
  int64_t added = 0;
  for (const auto& [status, count] : summary["counts"].items()) added += count.get<int64_t>();
  return added;
}

std::vector<Kill> RandomKillPlan(std::vector<std::string> victims, uint32_t seed, Millis min_pause,
                                 Millis max_pause) {
  std::mt19937 rng(seed);
  std::shuffle(victims.begin(), victims.end(), rng);
  std::uniform_int_distribution<int> pause_ms(int(min_pause.count()), int(max_pause.count()));
  std::vector<Kill> plan;
  for (std::string& victim : victims) plan.push_back({std::move(victim), Millis(pause_ms(rng))});
  return plan;
}

std::optional<std::map<std::string, int>> RunKillPlan(
    Cluster& cluster, const std::vector<Kill>& plan, const std::vector<std::string>& experiments,
    const std::function<void(const std::string&)>& after_kill) {
  std::map<std::string, int> kills;
  for (const Kill& kill : plan) {
    // A wait on time by design: the kill lands at a seeded random moment of the run.
    std::this_thread::sleep_for(kill.pause);
    if (AnyFinished(cluster, experiments)) break;
    if (kill.victim == "scheduler") {
      if (!RestartScheduler(cluster, experiments)) return std::nullopt;
    } else {
      const ::testing::AssertionResult restarted = cluster.Restart(kill.victim);
      EXPECT_TRUE(restarted) << kill.victim;  // SIGKILL, then the same binary and flags
      if (!restarted) return std::nullopt;
    }
    ++kills[kill.victim];
    if (after_kill) after_kill(kill.victim);
  }
  return kills;
}

int KillSchedulerWhileRunning(Cluster& cluster, const std::vector<Millis>& pauses,
                              const std::vector<std::string>& experiments) {
  std::vector<Kill> plan;
  for (const Millis pause : pauses) plan.push_back({"scheduler", pause});
  std::optional<std::map<std::string, int>> kills = RunKillPlan(cluster, plan, experiments);
  return kills ? (*kills)["scheduler"] : -1;
}

std::map<int64_t, json> TrialConfigs(const std::vector<json>& records) {
  std::map<int64_t, json> configs;
  for (const json& r : records) {
    if (r.value("kind", "") == "trial_added") configs[r.value("index", int64_t(-1))] = r["config"];
  }
  return configs;
}

std::vector<json> ReadJournal(const std::string& store_endpoint, const std::string& journal) {
  DealerClient store(store_endpoint);
  std::vector<json> records;
  for (uint64_t from = 1;;) {
    proto::JournalRead read;
    read.id = from;
    read.experiment = journal;
    read.from_seq = from;
    read.max_records = 5000;
    store.Send(proto::Encode(read));
    auto frame = store.Receive(5s);
    if (!frame) break;
    auto d = proto::Decode(frame->data(), frame->size());
    auto reply =
        d.ok() ? d->As<proto::JournalReadReply>() : Result<proto::JournalReadReply>(d.status());
    if (!reply.ok() || reply->records.empty()) break;
    for (const std::string& bytes : reply->records) {
      auto r = journal::ReadStoredRecord(bytes);
      if (r.ok()) records.push_back(*r);
    }
    from = reply->first_seq + reply->records.size();
  }
  return records;
}

uint64_t AppendJournal(const std::string& store_endpoint, const std::string& journal,
                       const std::vector<json>& records) {
  DealerClient store(store_endpoint);
  proto::JournalAppend append;
  append.id = 1;
  append.experiment = journal;
  for (const json& r : records) {
    append.records.push_back(journal::FrameRecord(journal::EncodeRecord(r)));
  }
  store.Send(proto::Encode(append));
  auto frame = store.Receive(10s);
  auto d = frame ? proto::Decode(frame->data(), frame->size())
                 : Result<proto::Decoded>(Status::Unavailable("no reply"));
  auto ack =
      d.ok() ? d->As<proto::JournalAppendAck>() : Result<proto::JournalAppendAck>(d.status());
  EXPECT_TRUE(ack.ok()) << "journal_append " << journal << ": " << ack.status().ToString();
  return ack.ok() ? ack->last_seq : 0;
}

std::vector<std::string> ListCheckpoints(const std::string& store_endpoint,
                                         const std::string& prefix) {
  DealerClient store(store_endpoint);
  proto::CheckpointList list;
  list.id = 1;
  list.prefix = prefix;
  store.Send(proto::Encode(list));
  auto frame = store.Receive(10s);
  auto d = frame ? proto::Decode(frame->data(), frame->size())
                 : Result<proto::Decoded>(Status::Unavailable("no reply"));
  auto reply =
      d.ok() ? d->As<proto::CheckpointListReply>() : Result<proto::CheckpointListReply>(d.status());
  EXPECT_TRUE(reply.ok()) << "checkpoint_list " << prefix << ": " << reply.status().ToString();
  std::vector<std::string> ids;
  if (reply.ok()) {
    for (const proto::CheckpointInfo& c : reply->checkpoints) ids.push_back(c.checkpoint_id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace tunebus::testing
