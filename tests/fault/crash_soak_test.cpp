// Crash soak: what users READ survives SIGKILLs as
// completely as the journal, in each of three experiments that run at once.
//
// Scenario: three experiments run at once, alpha (weight 2, 30 trials), beta and gamma (weight
// 1, 15 trials each: their fair shares of the 4 CPUs, 2, 1 and 1, end them about together), 60
// trials in all of the ground-truth command trainable tests/fault/soak_trainable.py (12
// iterations, a checkpoint every 3 and at the end, the best 2 kept by score; one trial in five
// fails at iteration 8 once or twice and is retried from its checkpoint, max_failures 2),
// while the scheduler is SIGKILLed at TUNEBUS_SOAK_KILLS (default 20) seeded random moments
// and, in between, the checkpoint-store (twice), the resource-manager and each trial-worker
// (once), each restarted at once; every kill comes while all three run. The trainable logs,
// fsynced before it acts, every report, decision, checkpoint, restore and failure of every
// attempt, into its experiment's own ground-truth folder, each event and each reported result
// naming the experiment ($TUNEBUS_EXPERIMENT). At the end, per experiment, against its own
// ground truth:
//  - every event in its folder names it, and every result in its journal is one its own
//    trainables reported (a result that ends in another experiment is lost there and foreign
//    here); every trial its journal or its folder knows is one `tunectl ls -e NAME` lists;
//  - every result the trainable got `continue` or `checkpoint` for (acknowledged) is journaled,
//    exactly once, with the metrics it reported;
//  - result.json and progress.csv of each trial hold the journal's result records one to one,
//    in journal order (results of a lost attempt stay, marked by iterations_since_restore);
//    every line parses, progress.csv has one header; `tunectl show -e NAME` has the last result;
//  - the checkpoint-store holds under the experiment's journal exactly the checkpoints
//    `tunectl show` lists (no orphan, none missing); each checkpoint an attempt saved is listed
//    or was deleted by retention, unless the attempt's worker was lost; a trial whose last
//    decision was checkpoint_and_stop saved that checkpoint (unless its worker died first);
//    each restore got the state of the checkpoint the journal names;
//  - it resumed once per scheduler kill.
// The experiments must finish; the checks run also when one does not (a hang). It prints a
// summary line per experiment and one for the whole soak, then asserts.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "tests/fault/fault_support.hpp"
#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

using AttemptIt = std::pair<int64_t, int64_t>;      // (attempt, training_iteration)
using Row = std::tuple<int64_t, int64_t, int64_t>;  // + iterations_since_restore

int64_t Int(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<int64_t>() : -1;
}

// Per category a count and the first few examples, for the assertion message.
struct Tally {
  std::map<std::string, int> count;
  std::map<std::string, std::string> examples;
  void Add(const std::string& what, const std::string& example, int n = 1) {
    count[what] += n;
    std::string& e = examples[what];
    if (std::count(e.begin(), e.end(), '\n') < 8) e += "  " + example + "\n";
  }
  int operator[](const std::string& what) const {
    return count.contains(what) ? count.at(what) : 0;
  }
};

// One trial's ground truth, from <truth dir>/<trial>.jsonl (see soak_trainable.py).
struct Truth {
  std::map<AttemptIt, json> reported;  // metrics of every report
  std::set<AttemptIt> acked;         // answered continue / checkpoint (only the scheduler says so)
  std::set<AttemptIt> saved;         // checkpoints saved
  std::set<AttemptIt> worker_gone;   // the decision channel closed: the worker died
  std::map<int64_t, json> restores;  // attempt -> its restore event
};

// The ground truth of experiment `experiment`'s trials, from its folder `dir`; an event that says
// it is another experiment's is tallied as "truth of another experiment".
std::map<std::string, Truth> ReadTruth(const fs::path& dir, const std::string& experiment,
                                       Tally& tally) {
  std::map<std::string, Truth> truth;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".jsonl") continue;
    Truth& t = truth[entry.path().stem().string()];
    for (const std::string& line : ReadLines(entry.path())) {
      const json e = json::parse(line, nullptr, /*allow_exceptions=*/false);
      const std::string event = e.is_object() ? e.value("event", "") : "";
      if (e.is_object() && e.value("experiment", "") != experiment) {
        tally.Add("truth of another experiment", entry.path().string() + ": " + line);
      }
      const AttemptIt key{Int(e, "attempt"), Int(e, "iteration")};
      if (event == "report") t.reported[key] = e["metrics"];
      if (event == "decision" && (e["decision"] == "continue" || e["decision"] == "checkpoint")) {
        t.acked.insert(key);
      }
      if (event == "decision" && e["decision"] == "eof") t.worker_gone.insert(key);
      if (event == "checkpoint") t.saved.insert(key);
      if (event == "restore") t.restores[key.first] = e;
    }
  }
  return truth;
}

// One trial as its journal records have it.
struct Journaled {
  std::vector<Row> rows;              // result records, in order
  std::map<AttemptIt, json> results;  // the same, by (attempt, iteration)
  std::string last_decision;          // of the last result record
  int64_t last_attempt = 0;
  std::map<int64_t, int64_t> restored_iteration;  // attempt -> the iteration it restored
  std::map<int64_t, std::string> ended_by;        // attempt -> "worker_lost" | "error" | status
  std::set<std::string> deleted;                  // checkpoints retention deleted
};

struct JournalView {
  std::map<std::string, Journaled> trials;
  int results = 0, resumes = 0;
  int reattached = 0;  // (resume, trial) pairs: RUNNING at a resume, next result from that attempt
};

// Folds the records in order; a (trial, attempt, seq) or (trial, attempt, iteration) seen twice
// is tallied as "duplicated journal".
JournalView FoldJournal(const std::vector<json>& records, Tally& tally) {
  JournalView view;
  std::set<std::tuple<std::string, int64_t, int64_t>> seqs;
  std::map<std::string, int64_t> running, awaiting;  // trial -> attempt
  for (const json& r : records) {
    const std::string kind = r.value("kind", ""), id = r.value("trial_id", "");
    const int64_t attempt = Int(r, "attempt");
    Journaled& j = view.trials[id];
    if (kind == "experiment_resumed") {
      ++view.resumes;
      awaiting = running;
    } else if (kind == "trial_started") {
      j.last_attempt = attempt;
      j.restored_iteration[attempt] = Int(r, "restored_iteration");
      running[id] = attempt;
      awaiting.erase(id);
    } else if (kind == "trial_status") {
      const std::string status = r.value("error", "").empty() ? r.value("status", "") : "error";
      const std::string ended = r.value("failure_kind", status);
      // A TERMINATED attempt whose worker died before its end checkpoint was stored gets a
      // second status record saying so.
      if (ended == "worker_lost") {
        j.ended_by[attempt] = ended;
      } else {
        j.ended_by.emplace(attempt, ended);
      }
      running.erase(id);
      awaiting.erase(id);
    } else if (kind == "checkpoint_deleted") {
      j.deleted.insert(r.value("checkpoint_id", ""));
    } else if (kind == "result") {
      ++view.results;
      const json& result = r["result"];
      const AttemptIt key{attempt, Int(result, "training_iteration")};
      if (!seqs.insert({id, attempt, Int(r, "seq")}).second ||
          !j.results.emplace(key, result).second) {
        tally.Add("duplicated journal",
                  fmt::format("{} attempt {} iteration {}", id, attempt, key.second));
      }
      j.rows.emplace_back(attempt, key.second, Int(result, "iterations_since_restore"));
      j.last_decision = r.value("decision", "");
      if (auto a = awaiting.find(id); a != awaiting.end() && a->second == attempt) {
        ++view.reattached;
        awaiting.erase(a);
      }
    }
  }
  view.trials.erase("");
  return view;
}

// The rows of result.json or progress.csv, and what did not parse.
struct FileRows {
  std::vector<Row> rows;
  int torn = 0;     // lines that do not parse (or have the wrong number of CSV fields)
  int headers = 0;  // progress.csv header lines
};

FileRows ReadResultJson(const fs::path& path) {
  FileRows out;
  for (const std::string& line : ReadLines(path)) {
    const json r = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!r.is_object()) {
      ++out.torn;
      continue;
    }
    out.rows.emplace_back(Int(r, "soak_attempt"), Int(r, "training_iteration"),
                          Int(r, "iterations_since_restore"));
  }
  return out;
}

// The RFC 4180 fields of one line (results hold no line breaks); false if a quote is open.
bool SplitCsv(const std::string& line, std::vector<std::string>& fields) {
  fields.assign(1, "");
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return !quoted;
}

FileRows ReadProgressCsv(const fs::path& path) {
  FileRows out;
  const std::vector<std::string> lines = ReadLines(path);
  if (lines.empty()) return out;
  std::vector<std::string> header, fields;
  SplitCsv(lines[0], header);
  auto column = [&](const char* name) {
    return size_t(std::find(header.begin(), header.end(), name) - header.begin());
  };
  const size_t attempt = column("soak_attempt"), iteration = column("training_iteration"),
               since_restore = column("iterations_since_restore");
  auto number = [&](size_t i) {
    return i < fields.size() && !fields[i].empty()
               ? int64_t(std::strtoll(fields[i].c_str(), nullptr, 10))
               : int64_t(-1);
  };
  for (const std::string& line : lines) {
    if (line == lines[0]) {
      ++out.headers;
    } else if (!SplitCsv(line, fields) || fields.size() != header.size()) {
      ++out.torn;
    } else {
      out.rows.emplace_back(number(attempt), number(iteration), number(since_restore));
    }
  }
  return out;
}

std::string RowText(const std::string& trial, const Row& r) {
  return fmt::format("{} (attempt {}, iteration {}, since restore {})", trial, std::get<0>(r),
                     std::get<1>(r), std::get<2>(r));
}

// Tallies how a file's rows differ from the journal's: rows missing ("lost"), rows twice
// ("duplicated"), rows the journal does not have ("unjournaled"), else a different order.
void CompareRows(const std::string& file_name, const std::string& trial,
                 const std::vector<Row>& journal, const std::vector<Row>& file, Tally& tally) {
  std::map<Row, int> in_file, in_journal;
  for (const Row& r : file) ++in_file[r];
  for (const Row& r : journal) ++in_journal[r];
  bool counted = false;
  for (const auto& [row, n] : in_journal) {
    if (in_file[row] >= n) continue;
    tally.Add("lost " + file_name, RowText(trial, row));
    counted = true;
  }
  for (const auto& [row, n] : in_file) {
    if (n > 1) {
      tally.Add("duplicated " + file_name, RowText(trial, row), n - 1);
      counted = true;
    }
    if (!in_journal.contains(row)) {
      tally.Add("unjournaled rows", file_name + " " + RowText(trial, row));
      counted = true;
    }
  }
  if (!counted && file != journal) tally.Add("out of order " + file_name, trial);
}

std::string CheckpointId(const std::string& journal, const std::string& trial,
                         const AttemptIt& at) {
  return fmt::format("{}/{}/{:08d}-a{}", journal, trial, at.second, at.first);
}

// One trial of experiment `experiment` (journal `journal`): the journal against its ground
// truth, its files and `tunectl show` against the journal. Adds the checkpoints show lists to
// `listed`.
void CheckTrial(const std::string& experiment, const std::string& journal, const std::string& id,
                const json& shown, const Journaled& j, const Truth& truth, Tally& tally,
                std::set<std::string>& listed) {
  for (const AttemptIt& a : truth.acked) {
    if (!j.results.contains(a)) {
      tally.Add("lost journal", fmt::format("{} attempt {} iteration {}", id, a.first, a.second));
    }
  }
  for (const auto& [a, result] : j.results) {
    const auto reported = truth.reported.find(a);
    if (reported == truth.reported.end() ||
        reported->second.value("score", -1.0) != result.value("score", -2.0) ||
        Int(result, "soak_attempt") != a.first || Int(result, "soak_iteration") != a.second) {
      tally.Add("not reported", id + " " + result.dump());
    }
    if (result.value("soak_experiment", "") != experiment) {
      tally.Add("results of another experiment", journal + " " + id + " " + result.dump());
    }
  }
  for (const auto& [attempt, restore] : truth.restores) {
    const auto want = j.restored_iteration.find(attempt);
    if (!restore.value("state_ok", false) || want == j.restored_iteration.end() ||
        Int(restore, "from_iteration") != want->second) {
      tally.Add("bad restores", id + " " + restore.dump());
    }
  }

  const fs::path dir = shown.value("dir", "");
  const FileRows result_json = ReadResultJson(dir / "result.json");
  const FileRows csv = ReadProgressCsv(dir / "progress.csv");
  CompareRows("result.json", id, j.rows, result_json.rows, tally);
  CompareRows("progress.csv", id, j.rows, csv.rows, tally);
  if (result_json.torn + csv.torn > 0) tally.Add("torn lines", id, result_json.torn + csv.torn);
  if (csv.headers != 1) tally.Add("csv headers != 1", fmt::format("{}: {}", id, csv.headers));

  const json last = shown.value("last_result", json::object());
  if (j.rows.empty() || Int(last, "training_iteration") != std::get<1>(j.rows.back()) ||
      Int(last, "soak_attempt") != std::get<0>(j.rows.back())) {
    tally.Add("lost show", id + " last_result " + last.dump());
  }
  for (const json& c : shown.value("checkpoints", json::array())) {
    listed.insert(c.value("checkpoint_id", ""));
  }
  if (j.last_decision == "checkpoint_and_stop") {  // checkpoint_at_end: did the decision reach it?
    const AttemptIt end{std::get<0>(j.rows.back()), std::get<1>(j.rows.back())};
    if (!truth.saved.contains(end) && !truth.worker_gone.contains(end)) {
      tally.Add("end checkpoints never taken", CheckpointId(journal, id, end));
    }
  }
  for (const AttemptIt& saved : truth.saved) {
    const auto ended = j.ended_by.find(saved.first);
    const bool worker_lost = ended != j.ended_by.end() && ended->second == "worker_lost";
    if (worker_lost) continue;  // its worker may have died before the upload
    const std::string ck = CheckpointId(journal, id, saved);
    if (!listed.contains(ck) && !j.deleted.contains(ck)) {
      tally.Add("missing checkpoints", ck + " (saved, not listed)");
    }
  }
}

// One of the soak's experiments, and what the checks found in it.
struct SoakExperiment {
  std::string name;
  int weight = 1, trials_wanted = 0;
  fs::path truth_dir;  // its trainables' ground truth, and only theirs
  std::string journal;
  json summary;  // its last `tunectl status` once finished; empty if it did not finish
  Tally tally;
  JournalView view;
  size_t trials = 0;
  int acked = 0, restarted = 0, by_failure = 0, by_worker_loss = 0;

  int Lost() const {
    return tally["lost journal"] + tally["lost result.json"] + tally["lost progress.csv"] +
           tally["lost show"] + tally["trials not listed"];
  }
  int Duplicated() const {
    return tally["duplicated journal"] + tally["duplicated result.json"] +
           tally["duplicated progress.csv"];
  }
  int WrongExperiment() const {
    return tally["truth of another experiment"] + tally["results of another experiment"];
  }
};

// The experiment file of soak experiment `e`: e.trials_wanted trials of soak_trainable.py (a
// multiple of 5: one in five fails at iteration 8), its ground truth in e.truth_dir.
std::string SoakExperimentFile(const SoakExperiment& e, int seed, int iterations, double sleep_s,
                               const fs::path& results_dir) {
  const fs::path script = SourceDir() / "tests" / "fault" / "soak_trainable.py";
  return fmt::format(R"(name: {}
weight: {}
trainable:
  command: [python3, {}]
  env: {{SOAK_TRUTH_DIR: {}}}
working_dir: false
param_space:
  lr: {{uniform: [0.01, 0.3]}}
  fail_at: {{grid_search: [0, 0, 0, 0, 8]}}
  fail_times: {{choice: [1, 2]}}
  iterations: {}
  sleep_s: {}
num_samples: {}
seed: {}
metric: score
mode: max
stop: {{training_iteration: {}}}
checkpoint_freq: 3
checkpoint_at_end: true
keep_checkpoints_num: 2
checkpoint_score_attr: score
max_failures: 2
results_dir: {}
)",
                     e.name, e.weight, script.string(), e.truth_dir.string(), iterations, sleep_s,
                     e.trials_wanted / 5, seed, iterations, results_dir.string());
}

// Checks experiment `e`, finished or not, against its own ground truth: its journal, its trials
// as `tunectl ls -e` and `show -e` give them, their files, and its checkpoints in the store.
void CheckExperiment(Cluster& cluster, SoakExperiment& e) {
  e.view = FoldJournal(ReadJournal(cluster.store(), e.journal), e.tally);
  const std::map<std::string, Truth> truth = ReadTruth(e.truth_dir, e.name, e.tally);
  const CommandResult ls = cluster.Ctl({"-o", "json", "ls", "-e", e.name});
  const json trials = ls.Json();
  if (!trials.is_array()) {
    ADD_FAILURE() << e.name << ": " << ls.Describe() << cluster.LogTails();
    return;
  }
  e.trials = trials.size();
  std::set<std::string> ids;                            // the trials `ls` lists
  std::map<std::string, std::set<std::string>> listed;  // trial -> the checkpoints show lists
  for (const json& t : trials) {
    const std::string id = t.value("trial_id", "");
    ids.insert(id);
    const CommandResult show = cluster.Ctl({"-o", "json", "show", "-e", e.name, id});
    const json shown = show.Json();
    if (!shown.is_object()) {
      ADD_FAILURE() << e.name << ": " << show.Describe();
      continue;
    }
    EXPECT_EQ(shown.value("status", ""), "TERMINATED") << e.name << ": " << shown.dump();
    const Journaled& j = e.view.trials.contains(id) ? e.view.trials.at(id) : Journaled{};
    const Truth& tr = truth.contains(id) ? truth.at(id) : Truth{};
    EXPECT_FALSE(tr.reported.empty()) << id << ": no ground truth in " << e.truth_dir;
    CheckTrial(e.name, e.journal, id, shown, j, tr, e.tally, listed[id]);
    e.acked += int(tr.acked.size());
    e.restarted += j.last_attempt > 1;
    for (int64_t a = 1; a < j.last_attempt; ++a) {  // why each attempt before the last ended
      const auto ended = j.ended_by.find(a);
      ++(ended != j.ended_by.end() && ended->second == "worker_lost" ? e.by_worker_loss
                                                                     : e.by_failure);
    }
  }
  // Every trial its journal or its ground truth knows is one of its own that `ls` lists.
  for (const auto& [id, j] : e.view.trials) {
    if (!ids.contains(id)) e.tally.Add("trials not listed", id + " (journaled)");
  }
  for (const auto& [id, t] : truth) {
    if (!ids.contains(id)) e.tally.Add("trials not listed", id + " (in the ground truth)");
  }
  std::set<std::string> stored;
  for (const std::string& ck : ListCheckpoints(cluster.store(), e.journal + "/")) {
    if (ck.starts_with(e.journal + "/snapshot-")) continue;
    stored.insert(ck);
    const size_t from = e.journal.size() + 1;
    if (!listed[ck.substr(from, ck.find('/', from) - from)].contains(ck)) {
      e.tally.Add("orphaned checkpoints", ck);
    }
  }
  for (const auto& [trial, checkpoints] : listed) {
    for (const std::string& ck : checkpoints) {
      if (!stored.contains(ck)) e.tally.Add("missing checkpoints", ck + " (listed, not stored)");
    }
  }
}

TEST(CrashSoakTest, EveryAcknowledgedResultAndCheckpointSurvivesKills) {
  const char* env = std::getenv("TUNEBUS_SOAK_KILLS");
  const int scheduler_kills = std::max(1, env ? std::atoi(env) : 20);
  ClusterOptions o;
  o.cpus_per_worker = 2;
  o.rm_liveness = 5;  // x 200 ms: a killed worker that does not come back is lost after 1 s
  o.scheduler_args = {"--snapshot-every", "300"};  // some resumes start from a snapshot
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());

  // alpha, submitted first, starts on all 4 CPUs; from then on their fair shares are 2, 1 and 1,
  // so the three end within a few seconds of each other, long after the last kill.
  constexpr int kIterations = 12;
  const double sleep_s = 0.08 * std::max(1, scheduler_kills / 20);  // outlast the kill plan
  std::vector<SoakExperiment> experiments;
  std::vector<std::string> names;
  int all_trials = 0;
  for (const auto& [name, weight, trials, seed] :
       {std::tuple{"alpha", 2, 30, 18}, {"beta", 1, 15, 19}, {"gamma", 1, 15, 20}}) {
    SoakExperiment& e = experiments.emplace_back();
    e.name = name;
    e.weight = weight;
    e.trials_wanted = trials;
    all_trials += trials;
    e.truth_dir = cluster.dir() / "truth" / name;
    fs::create_directories(e.truth_dir);
    const fs::path file = cluster.dir() / (e.name + ".yaml");
    WriteFile(file, SoakExperimentFile(e, seed, kIterations, sleep_s, cluster.dir() / "results"));
    e.journal = SubmitDetached(cluster, file, name);
    ASSERT_FALSE(e.journal.empty());
    names.push_back(name);
  }

  // The kill plan, in a seeded random order with 80..400 ms between kills, while all three run.
  std::vector<std::string> plan(size_t(scheduler_kills), "scheduler");
  for (const char* v : {"checkpoint-store", "checkpoint-store", "resource-manager", "w1", "w2"}) {
    plan.push_back(v);
  }
  const auto killed = RunKillPlan(cluster, RandomKillPlan(plan, 18042, 80ms, 400ms), names);
  ASSERT_TRUE(killed.has_value()) << cluster.LogTails();
  std::map<std::string, int> kills = *killed;
  kills["trial-worker"] = kills["w1"] + kills["w2"];
  int total_kills = 0;
  for (const auto& [victim, n] : *killed) total_kills += n;
  // The rest takes at most all trials x 12 iterations / 4 slots x sleep_s. Unfinished after twice
  // that plus a minute (a hang) is a failure; what they wrote is checked all the same.
  const auto deadline = std::chrono::steady_clock::now() +
                        Millis{60000 + int64_t(2 * all_trials * kIterations / 4 * sleep_s * 1000)};
  for (SoakExperiment& e : experiments) {
    const auto left =
        std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
    e.summary = WaitFinished(cluster, std::max(left, Millis{0}), e.name);
    EXPECT_FALSE(e.summary.empty()) << e.name << " did not finish\n" << cluster.LogTails();
  }

  std::map<std::string, int> sum;  // over the three experiments
  std::string statuses, resumes, problems;
  for (SoakExperiment& e : experiments) {
    CheckExperiment(cluster, e);
    const std::string status = e.summary.value("status", "unfinished");
    std::printf(
        "soak %s (weight %d): %s trials=%zu results=%d acked=%d resumes=%d reattached=%d "
        "restarted=%d "
        "lost=%d duplicated=%d wrong_experiment=%d orphaned_checkpoints=%d "
        "missing_checkpoints=%d\n",
        e.journal.c_str(), e.weight, status.c_str(), e.trials, e.view.results, e.acked,
        e.view.resumes, e.view.reattached, e.restarted, e.Lost(), e.Duplicated(),
        e.WrongExperiment(), e.tally["orphaned checkpoints"], e.tally["missing checkpoints"]);
    statuses += fmt::format("{}{} {}", statuses.empty() ? "" : ", ", e.name, status);
    resumes += fmt::format("{}{}", resumes.empty() ? "" : "/", e.view.resumes);
    sum["lost"] += e.Lost();
    sum["duplicated"] += e.Duplicated();
    sum["wrong experiment"] += e.WrongExperiment();
    sum["reattached"] += e.view.reattached;
    sum["restarted"] += e.restarted;
    sum["results"] += e.view.results;
    sum["trials"] += int(e.trials);
    sum["acked"] += e.acked;
    sum["by failure"] += e.by_failure;
    sum["by worker loss"] += e.by_worker_loss;
    for (const auto& [what, n] : e.tally.count) {
      sum[what] += n;
      problems += fmt::format("{} {}: {}\n{}", e.name, what, n, e.tally.examples.at(what));
    }
  }
  std::printf(
      "soak: kills=%d lost=%d duplicated=%d orphaned_checkpoints=%d reattached=%d restarted=%d "
      "results=%d trials=%d | experiments %s, kills scheduler=%d checkpoint-store=%d "
      "resource-manager=%d trial-worker=%d, resumes=%s, attempts restarted after failure=%d "
      "after worker loss=%d, acked=%d, lost journal=%d result.json=%d progress.csv=%d show=%d "
      "trials_not_listed=%d, missing_checkpoints=%d end_checkpoints_never_taken=%d "
      "unjournaled_rows=%d torn=%d bad_restores=%d wrong_experiment=%d\n",
      total_kills, sum["lost"], sum["duplicated"], sum["orphaned checkpoints"], sum["reattached"],
      sum["restarted"], sum["results"], sum["trials"], statuses.c_str(), kills["scheduler"],
      kills["checkpoint-store"], kills["resource-manager"], kills["trial-worker"], resumes.c_str(),
      sum["by failure"], sum["by worker loss"], sum["acked"], sum["lost journal"],
      sum["lost result.json"], sum["lost progress.csv"], sum["lost show"], sum["trials not listed"],
      sum["missing checkpoints"], sum["end checkpoints never taken"], sum["unjournaled rows"],
      sum["torn lines"], sum["bad restores"], sum["wrong experiment"]);
  std::fflush(stdout);

  EXPECT_EQ(total_kills, int(plan.size())) << "an experiment ended before the kill plan did";
  for (const SoakExperiment& e : experiments) {
    EXPECT_EQ(e.summary.value("status", "unfinished"), "FINISHED") << e.name;
    EXPECT_EQ(e.trials, size_t(e.trials_wanted)) << e.name;
    EXPECT_EQ(e.view.resumes, kills["scheduler"]) << e.name;
    EXPECT_GE(e.by_failure, 1) << e.name << ": no trial was retried after a failure";
    EXPECT_GE(e.acked, e.trials_wanted * (kIterations - 1))
        << e.name << ": the ground truth is incomplete";
  }
  EXPECT_TRUE(problems.empty()) << problems;
  EXPECT_EQ(sum["lost"], 0);
  EXPECT_EQ(sum["duplicated"], 0);
  EXPECT_EQ(sum["wrong experiment"], 0);
  EXPECT_EQ(sum["orphaned checkpoints"], 0);
  EXPECT_EQ(sum["missing checkpoints"], 0);
}

}  // namespace
}  // namespace tunebus::testing
