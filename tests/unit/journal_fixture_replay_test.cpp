// Upgrades (docs/how-to/upgrade.md): the journals earlier releases wrote,
// tests/fixtures/journal-<version>/journal.jsonl (stored records as hex, in seq order), replay in
// this build's JournalReplayer to the experiment that release showed (expected.json): every
// record applies, and the trials, their statuses, configs, failures and iterations and the
// experiment's end are the same. tests/integration/journal_fixture_test.cpp writes the fixtures
// and reads them through a scheduler and tunectl.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "libs/core/experiment_status.hpp"
#include "libs/core/trial.hpp"
#include "libs/journal/record_frame.hpp"
#include "libs/journal/replay.hpp"

namespace tunebus {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string Unhex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return out;
}

TEST(JournalFixtureReplayTest, JournalsOfEarlierReleasesReplayToTheSameExperiment) {
  // Every fixture folder, oldest version first; there is at least the one of release 0.1.0.
  const fs::path root = fs::path(TUNEBUS_TEST_SOURCE_DIR) / "tests" / "fixtures";
  std::vector<fs::path> fixtures;
  if (fs::is_directory(root)) {
    for (const auto& e : fs::directory_iterator(root)) {
      if (e.is_directory() && e.path().filename().string().rfind("journal-", 0) == 0)
        fixtures.push_back(e.path());
    }
  }
  std::sort(fixtures.begin(), fixtures.end());
  ASSERT_FALSE(fixtures.empty()) << "no journal fixtures under " << root;

  for (const fs::path& fixture : fixtures) {
    SCOPED_TRACE(fixture.string());
    const json expected = json::parse(ReadText(fixture / "expected.json"), nullptr, false);
    ASSERT_TRUE(expected.is_object());
    journal::JournalReplayer replayer;
    std::istringstream lines(ReadText(fixture / "journal.jsonl"));
    uint64_t seq = 0;
    for (std::string line; std::getline(lines, line);) {
      if (line.empty()) continue;
      const json r = json::parse(line);
      ASSERT_EQ(r.value("seq", uint64_t(0)), ++seq);
      auto record = journal::ReadStoredRecord(Unhex(r.value("stored_hex", "")));
      ASSERT_TRUE(record.ok()) << "seq " << seq << ": " << record.status().ToString();
      const Status applied = replayer.Apply(*record);
      ASSERT_TRUE(applied.ok()) << "seq " << seq << ": " << applied.ToString();
    }
    EXPECT_EQ(seq, expected.value("records", uint64_t(0)));
    const journal::ReplayedExperiment state = replayer.Take();
    EXPECT_EQ(state.records, seq);

    const json& experiment = expected["experiment"];
    ASSERT_TRUE(state.ended_status.has_value());
    EXPECT_EQ(ExperimentStatusName(*state.ended_status), experiment.value("status", ""));
    const json& trials = expected["trials"];
    ASSERT_EQ(state.trials.size(), trials.size());
    for (size_t i = 0; i < trials.size(); ++i) {
      const Trial& t = state.trials[i];
      const json& want = trials[i];
      SCOPED_TRACE(t.trial_id);
      EXPECT_EQ(t.trial_id, want.value("trial_id", ""));
      EXPECT_EQ(TrialStatusName(t.status), want.value("status", ""));
      EXPECT_EQ(t.config, want["config"]);
      EXPECT_EQ(t.num_failures, want.value("num_failures", int64_t(-1)));
      EXPECT_EQ(t.training_iteration, want.value("training_iteration", int64_t(-1)));
    }
  }
}

}  // namespace
}  // namespace tunebus
