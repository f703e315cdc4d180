// Upgrades (docs/how-to/upgrade.md): a journal written by an earlier release is read by
// this one. Each folder tests/fixtures/journal-<version>/ holds the journal of one small experiment
// as that release's scheduler stored it (journal.jsonl: every stored record's bytes, in seq
// order) and what that release's tunectl showed of it (expected.json). This test puts each
// journal into a checkpoint-store, starts a scheduler on that store (as after an upgrade) and
// checks that `tunectl` shows the same experiment, trials and results, read from the journal.
//
// A release adds its fixture with the generator below (DISABLED_, so only on demand; the
// command is in docs/how-to/upgrade.md):
//   build/bin/process_tests --gtest_also_run_disabled_tests
//                           --gtest_filter='JournalFixtureTest.DISABLED_*'
// with TUNEBUS_BIN_DIR=build/bin and TUNEBUS_SOURCE_DIR=<the source tree> in the environment.
// It runs the experiment kFixtureSpec on a fresh suite and writes
// tests/fixtures/journal-<Version()>/ (refusing to replace a folder that exists).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "libs/core/version.hpp"
#include "libs/journal/record_frame.hpp"
#include "proto/codec.hpp"
#include "proto/store.hpp"
#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// The fixture's experiment: the mock trainable on 8 grid points, ASHA, checkpoints (with
// retention), an error retried once (persistent_error false) or for good (true): most record
// kinds (experiment_submitted, trial_added, searcher_state, trial_scheduler, trial_started,
// result, trial_status, checkpoint_saved, checkpoint_deleted, experiment_ended).
constexpr const char* kFixtureSpec =
    "name: fixture\n"
    "trainable: {builtin: mock}\n"
    "param_space:\n"
    "  lr: {grid_search: [0.1, 0.3]}\n"
    "  mock_error: {grid_search: [false, true]}\n"
    "  persistent_error: {grid_search: [false, true]}\n"
    "  mock_error_iteration: 3\n"
    "  mock_iterations: 4\n"
    "  sleep_s: 0.05\n"
    "metric: mean_accuracy\n"
    "mode: max\n"
    "scheduler: {type: asha, time_attr: training_iteration, max_t: 4, grace_period: 2, "
    "reduction_factor: 2}\n"
    "max_failures: 1\n"
    "checkpoint_freq: 2\n"
    "checkpoint_at_end: true\n"
    "keep_checkpoints_num: 1\n"
    "max_concurrent_trials: 2\n";

std::string Hex(const std::string& bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::string Unhex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return out;
}

// What the fixture keeps of each trial object `tunectl -o json ls` prints: the fields a newer
// release must still show the same (its objects may have more).
json TrialShown(const json& t) {
  json kept = {{"trial_id", t.value("trial_id", "")},
               {"status", t.value("status", "")},
               {"config", t.value("config", json::object())},
               {"num_failures", t.value("num_failures", 0)},
               {"training_iteration", t.value("training_iteration", 0)},
               {"checkpoints", json::array()}};
  const json& last = t.value("last_result", json::object());
  kept["last_result"] = json::object();
  for (const char* key : {"training_iteration", "mean_accuracy", "loss", "done"}) {
    if (last.contains(key)) kept["last_result"][key] = last[key];
  }
  for (const json& c : t.value("checkpoints", json::array())) {
    kept["checkpoints"].push_back({{"checkpoint_id", c.value("checkpoint_id", "")},
                                   {"training_iteration", c.value("training_iteration", 0)}});
  }
  return kept;
}

// `actual` cut down to the keys `expected` has (objects), element by element (arrays): what a
// fixture written by an older release can be compared with.
json Projected(const json& actual, const json& expected) {
  if (expected.is_object() && actual.is_object()) {
    json out = json::object();
    for (const auto& [key, value] : expected.items()) {
      if (actual.contains(key)) out[key] = Projected(actual[key], value);
    }
    return out;
  }
  if (expected.is_array() && actual.is_array() && expected.size() == actual.size()) {
    json out = json::array();
    for (size_t i = 0; i < actual.size(); ++i) out.push_back(Projected(actual[i], expected[i]));
    return out;
  }
  return actual;
}

// Appends `records` (stored bytes, as they are) to the new journal `journal`.
::testing::AssertionResult AppendStoredRecords(const std::string& store, const std::string& journal,
                                               const std::vector<std::string>& records) {
  DealerClient client(store);
  proto::JournalAppend append;
  append.id = 1;
  append.experiment = journal;
  append.records = records;
  append.expected_first_seq = 1;
  client.Send(proto::Encode(append));
  auto frame = client.Receive(10s);
  if (!frame) return ::testing::AssertionFailure() << "no journal_append_ack";
  auto d = proto::Decode(frame->data(), frame->size());
  auto ack =
      d.ok() ? d->As<proto::JournalAppendAck>() : Result<proto::JournalAppendAck>(d.status());
  if (!ack.ok()) return ::testing::AssertionFailure() << ack.status().ToString();
  if (ack->last_seq != records.size())
    return ::testing::AssertionFailure() << "appended through seq " << ack->last_seq;
  return ::testing::AssertionSuccess();
}

json ReadJsonFile(const fs::path& path) {
  return json::parse(ReadFile(path), nullptr, /*allow_exceptions=*/false);
}

std::vector<fs::path> Fixtures() {
  std::vector<fs::path> found;
  const fs::path root = SourceDir() / "tests" / "fixtures";
  if (!fs::is_directory(root)) return found;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("journal-", 0) == 0)
      found.push_back(entry.path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

TEST(JournalFixtureTest, JournalsOfEarlierReleasesReadTheSameAfterAnUpgrade) {
  // Each release's fixture journal goes into the store of a fresh suite; the scheduler is then
  // restarted on that store (this build's scheduler meeting a journal it did not write). The
  // experiment is finished, so it is read from its journal (read-only, nothing appended):
  // `lsx` lists it, and `status`, `ls` and `best` show what the writing release showed.
  const std::vector<fs::path> fixtures = Fixtures();
  ASSERT_FALSE(fixtures.empty()) << "no tests/fixtures/journal-*/ under " << SourceDir();
  ClusterOptions options;
  options.workers = 0;
  Cluster cluster(options);
  ASSERT_TRUE(cluster.Start());
  std::vector<std::pair<fs::path, json>> loaded;
  for (const fs::path& fixture : fixtures) {
    SCOPED_TRACE(fixture.string());
    const json expected = ReadJsonFile(fixture / "expected.json");
    ASSERT_TRUE(expected.is_object()) << "expected.json does not parse";
    std::vector<std::string> records;
    for (const std::string& line : ReadLines(fixture / "journal.jsonl")) {
      if (line.empty()) continue;
      const json r = json::parse(line);
      ASSERT_EQ(r.value("seq", uint64_t(0)), records.size() + 1) << line.substr(0, 80);
      records.push_back(Unhex(r.value("stored_hex", "")));
      // The record is the one the line names (its frame's CRC holds, its kind is the same).
      auto decoded = journal::ReadStoredRecord(records.back());
      ASSERT_TRUE(decoded.ok()) << "seq " << records.size() << ": " << decoded.status().ToString();
      EXPECT_EQ(decoded->value("kind", ""), r.value("kind", ""));
    }
    ASSERT_EQ(records.size(), expected.value("records", size_t(0)));
    ASSERT_TRUE(AppendStoredRecords(cluster.store(), expected.value("journal", ""), records));
    loaded.emplace_back(fixture, expected);
  }
  ASSERT_TRUE(cluster.Restart("scheduler"));
  ASSERT_TRUE(WaitFor([&] { return cluster.Ctl({"lsx"}, 2s).exit_code == 0; }, 20s, 100ms))
      << cluster.LogTails();

  const CommandResult lsx = cluster.Ctl({"-o", "json", "lsx"});
  ASSERT_EQ(lsx.exit_code, 0) << lsx.Describe();
  for (const auto& [fixture, expected] : loaded) {
    SCOPED_TRACE(fixture.string() + " (written by " + expected.value("written_by", "") + ")");
    const std::string journal = expected.value("journal", "");
    bool listed = false;
    for (const json& row : lsx.Json()) listed = listed || row.value("journal", "") == journal;
    EXPECT_TRUE(listed) << lsx.out;

    const CommandResult status = cluster.Ctl({"-o", "json", "status", "-e", journal});
    ASSERT_EQ(status.exit_code, 0) << status.Describe() << cluster.LogTails();
    EXPECT_TRUE(status.Json().value("read_only", false)) << status.out;
    EXPECT_EQ(status.Json().value("version", ""), Version()) << status.out;  // the reader's
    EXPECT_EQ(Projected(status.Json(), expected["experiment"]), expected["experiment"]);

    const CommandResult ls = cluster.Ctl({"-o", "json", "ls", "-e", journal});
    ASSERT_EQ(ls.exit_code, 0) << ls.Describe();
    json trials = json::array();
    for (const json& t : ls.Json()) trials.push_back(TrialShown(t));
    EXPECT_EQ(Projected(trials, expected["trials"]), expected["trials"]) << ls.out;

    const CommandResult best = cluster.Ctl({"-o", "json", "best", "-e", journal});
    ASSERT_EQ(best.exit_code, 0) << best.Describe();
    EXPECT_EQ(best.Json().value("trial_id", ""), expected.value("best_trial_id", ""));

    // Read-only: the reads appended nothing to the old journal.
    EXPECT_EQ(ReadStoredRecords(cluster.store(), journal).size(),
              expected.value("records", size_t(0)));
  }
}

TEST(JournalFixtureTest, DISABLED_WriteTheFixtureOfThisRelease) {
  // Not a test: writes tests/fixtures/journal-<Version()>/ (see the file comment). The
  // experiment runs on a fresh suite of 2 workers; its journal is read back from the store as
  // stored bytes, and what `tunectl -o json` shows of it becomes expected.json.
  const fs::path out = SourceDir() / "tests" / "fixtures" / (std::string("journal-") + Version());
  ASSERT_FALSE(fs::exists(out)) << out << " exists: a release's fixture is not rewritten";
  ClusterOptions options;
  options.workers = 2;
  Cluster cluster(options);
  ASSERT_TRUE(cluster.Start());
  const fs::path file = cluster.dir() / "fixture.yaml";
  WriteFile(file, std::string(kFixtureSpec) +
                      "results_dir: " + (cluster.dir() / "results").string() + "\n");
  const CommandResult run = cluster.Ctl({"run", file.string()}, 120s);
  ASSERT_TRUE(run.exit_code == 0 || run.exit_code == 1) << run.Describe();  // 1: ERROR trials

  const CommandResult status = cluster.Ctl({"-o", "json", "status", "-e", "fixture"});
  ASSERT_EQ(status.exit_code, 0) << status.Describe();
  ASSERT_TRUE(status.Json().value("finished", false)) << status.out;
  const std::string journal = status.Json().value("journal", "");
  const CommandResult ls = cluster.Ctl({"-o", "json", "ls", "-e", journal});
  ASSERT_EQ(ls.exit_code, 0) << ls.Describe();
  const CommandResult best = cluster.Ctl({"-o", "json", "best", "-e", journal});
  ASSERT_EQ(best.exit_code, 0) << best.Describe();
  const std::vector<std::string> records = ReadStoredRecords(cluster.store(), journal);
  ASSERT_FALSE(records.empty());

  json expected = {{"written_by", std::string("tunebus ") + VersionText()},
                   {"journal", journal},
                   {"records", records.size()},
                   {"best_trial_id", best.Json().value("trial_id", "")},
                   {"trials", json::array()}};
  json experiment = json::object();
  for (const char* key : {"name", "status", "counts", "total", "created", "metric", "mode"}) {
    experiment[key] = status.Json()[key];
  }
  expected["experiment"] = experiment;
  for (const json& t : ls.Json()) expected["trials"].push_back(TrialShown(t));

  fs::create_directories(out);
  std::ofstream lines(out / "journal.jsonl");
  for (size_t i = 0; i < records.size(); ++i) {
    auto decoded = journal::ReadStoredRecord(records[i]);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    lines << json{{"seq", i + 1},
                  {"kind", decoded->value("kind", "")},
                  {"stored_hex", Hex(records[i])}}
                 .dump()
          << "\n";
  }
  WriteFile(out / "expected.json", expected.dump(1) + "\n");
  std::cout << "wrote " << out << ": " << records.size() << " records of journal " << journal
            << ", " << expected["trials"].size() << " trials\n";
}

}  // namespace
}  // namespace tunebus::testing
