// Tests for ResultFilesRepair (services/scheduler/results/result_files_repair.hpp): after a
// scheduler kill a trial's files are short, torn or (killed while ending) longer than the journal;
// the repair leaves them holding exactly the journal's rows, in order, the same bytes a scheduler
// that was never killed writes, and a second repair changes nothing.
#include "services/scheduler/results/result_files_repair.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace tunebus {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Read(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void Write(const fs::path& file, const std::string& text) {
  std::ofstream(file, std::ios::trunc) << text;
}

json ResultAt(int64_t iteration) {
  return {{"training_iteration", iteration}, {"loss", 1.0 / double(iteration)}, {"note", "a,b"}};
}

// A journal's result record of attempt 1 with sequence number `seq`.
json ResultRecordAt(int64_t seq, const json& result) {
  return {{"kind", "result"}, {"attempt", 1}, {"seq", seq}, {"result", result}};
}

class ResultFilesRepairTest : public ::testing::Test {
 protected:
  ResultFilesRepairTest()
      : dir_(fs::temp_directory_path() /
             ("tunebus-repair-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    trial_.trial_id = "abc12_00000";
    trial_.experiment_tag = "0_lr=0.1";
    trial_.config = {{"lr", 0.1}};
    fs::create_directories(dir_ / "reference");
    fs::create_directories(dir_ / "repaired");
  }
  ~ResultFilesRepairTest() override { fs::remove_all(dir_); }

  // The files a scheduler that was never killed writes for results 1..n.
  fs::path Reference(int64_t n) {
    const fs::path trial_dir = dir_ / "reference" / trial_.DirName();
    ResultFiles files;
    files.WriteParams(0, trial_dir.string(), trial_.config);
    for (int64_t i = 1; i <= n; ++i) {
      std::string bytes;
      json::to_msgpack(ResultAt(i), bytes);
      if (i == switch_config_at_) files.WriteParams(0, trial_dir.string(), second_config_);
      files.AppendResult(0, trial_dir.string(), std::move(bytes), 0, &trial_.config);
    }
    files.Drain();
    return trial_dir;
  }

  // Repairs the "repaired" experiment folder against a journal of results 1..n (attempt 1, seq
  // i). `return_copy`: the journal also holds an older journal's copy of result n with done: true
  // (same seq), which replay does not count in num_results.
  ResultFilesRepair::Summary Repair(int64_t n, bool return_copy = false) {
    trial_.num_results = n;
    ResultFiles files;
    ResultFilesRepair repair((dir_ / "repaired").string(), files);
    if (repair.Plan({trial_}) > 0) {
      repair.OnConfigRecord(trial_, first_config_);  // trial_added
      for (int64_t i = 1; i <= n; ++i) {
        if (i == switch_config_at_) repair.OnConfigRecord(trial_, second_config_);  // a PBT exploit
        repair.OnResultRecord(trial_, ResultRecordAt(i, ResultAt(i)));
      }
      if (return_copy) {
        json copy = ResultAt(n);
        copy["done"] = true;
        repair.OnResultRecord(trial_, ResultRecordAt(n, copy));
      }
    }
    files.Drain();
    return repair.summary();
  }

  fs::path dir_;
  Trial trial_;
  int64_t switch_config_at_ = 0;       // from this result on the trial's config is second_config_
  json first_config_ = {{"lr", 0.1}};  // in the trial_added record
  json second_config_ = {{"lr", 0.5}};
};

// The trial's TensorBoard event file in `trial_dir` ("" if none).
std::string Events(const fs::path& trial_dir) { return FindEventFile(trial_dir.string()); }

TEST_F(ResultFilesRepairTest, ShortAndTornFilesAreCompletedToTheBytesOfAnUnkilledRun) {
  // The killed writer left 3 lines and half a fourth in result.json and 4 rows in progress.csv;
  // the journal holds 6 results. Both files end up as an unkilled run's, params.json included.
  const fs::path reference = Reference(6);
  const fs::path repaired = dir_ / "repaired" / trial_.DirName();
  fs::create_directories(repaired);
  const std::string json_text = Read(reference / "result.json");
  const std::string csv_text = Read(reference / "progress.csv");
  size_t cut = 0;
  for (int i = 0; i < 3; ++i) cut = json_text.find('\n', cut) + 1;
  Write(repaired / "result.json", json_text.substr(0, cut + 7));
  cut = 0;
  for (int i = 0; i < 5; ++i) cut = csv_text.find('\n', cut) + 1;  // the header and 4 rows
  Write(repaired / "progress.csv", csv_text.substr(0, cut));
  // The event file: its file version, 4 results and 5 bytes of a fifth.
  const std::string events_name = fs::path(Events(reference)).filename().string();
  const std::string events_text = Read(reference / events_name);
  size_t events_cut = 0;
  int records = 0;
  ScanTfRecords((reference / events_name).string(), [&](int64_t end) {
    events_cut = size_t(end);
    return ++records < 5;
  });
  Write(repaired / events_name, events_text.substr(0, events_cut + 5));

  const auto summary = Repair(6);
  EXPECT_EQ(summary.torn_lines, 2);
  EXPECT_EQ(summary.missing_rows, 3);
  EXPECT_EQ(summary.rows_written, 3);
  EXPECT_EQ(summary.params_written, 1);
  EXPECT_EQ(Read(repaired / "result.json"), json_text);
  EXPECT_EQ(Read(repaired / "progress.csv"), csv_text);
  EXPECT_EQ(Read(repaired / events_name), events_text);
  EXPECT_EQ(Read(repaired / "params.json"), Read(reference / "params.json"));

  const auto again = Repair(6);  // idempotent
  EXPECT_EQ(again.missing_rows + again.torn_lines + again.surplus_rows + again.params_written, 0);
  EXPECT_EQ(Read(repaired / "result.json"), json_text);
  EXPECT_EQ(Read(repaired / "progress.csv"), csv_text);
  EXPECT_EQ(Read(repaired / events_name), events_text);
}

TEST_F(ResultFilesRepairTest, RepairedRowsShowTheConfigTheJournalHadAtEachResult) {
  // A PBT exploit changed the trial's config before result 3; the files lost everything but
  // their event file's file version. The repaired rows show lr 0.1 in rows 1-2 and 0.5 in rows
  // 3-4, as live writing did: result.json's `config`, progress.csv's `config/lr`.
  switch_config_at_ = 3;
  const fs::path reference = Reference(4);
  const fs::path repaired = dir_ / "repaired" / trial_.DirName();
  fs::create_directories(repaired);
  const std::string events_name = fs::path(Events(reference)).filename().string();
  size_t version_end = 0;
  ScanTfRecords((reference / events_name).string(), [&](int64_t end) {
    version_end = size_t(end);
    return false;
  });
  Write(repaired / events_name, Read(reference / events_name).substr(0, version_end));
  trial_.config = second_config_;  // as replayed: the trial's current config
  Repair(4);
  trial_.config = {{"lr", 0.1}};
  EXPECT_EQ(Read(repaired / "result.json"), Read(reference / "result.json"));
  EXPECT_EQ(Read(repaired / "progress.csv"), Read(reference / "progress.csv"));
  EXPECT_EQ(Read(repaired / events_name), Read(reference / events_name));
  std::ifstream lines(repaired / "result.json");
  std::vector<double> lrs;
  for (std::string line; std::getline(lines, line);)
    lrs.push_back(json::parse(line)["config"]["lr"].get<double>());
  EXPECT_EQ(lrs, (std::vector<double>{0.1, 0.1, 0.5, 0.5}));
  EXPECT_NE(Read(repaired / "progress.csv").find("config/lr"), std::string::npos);
}

TEST_F(ResultFilesRepairTest, RowsBeyondTheJournalAreCut) {
  // Killed while ending the experiment: the files hold 5 rows, the durable journal 3.
  const fs::path reference = Reference(5);
  const fs::path repaired = dir_ / "repaired" / trial_.DirName();
  fs::copy(reference, repaired);
  const auto summary = Repair(3);
  EXPECT_EQ(summary.surplus_rows, 2);
  EXPECT_EQ(summary.missing_rows, 0);
  const std::string json_text = Read(repaired / "result.json");
  EXPECT_EQ(std::count(json_text.begin(), json_text.end(), '\n'), 3);
  EXPECT_EQ(CountRows((repaired / "progress.csv").string(), true).rows, 3);
  EXPECT_TRUE(CountRows((repaired / "progress.csv").string(), true).header);
}

TEST_F(ResultFilesRepairTest, AnOlderFoldersRowNobodyReportedIsCutAndNotWrittenAgain) {
  // A folder written before Trial::returned: 4 reported rows, then result 4 again with done: true
  // (the trainable returned). Its journal holds that copy as a fifth result record with seq 4;
  // replay counts 4 results. The repair cuts the fifth row, and the copy record writes none: the
  // files are those of the 4 reported results.
  const fs::path repaired = dir_ / "repaired" / trial_.DirName();
  fs::copy(Reference(5), repaired);  // its fifth row stands for the copy (cut by count)
  fs::remove_all(dir_ / "reference");
  const fs::path reference = Reference(4);
  const auto summary = Repair(4, /*return_copy=*/true);
  EXPECT_EQ(summary.surplus_rows, 1);
  EXPECT_EQ(summary.rows_written, 0);
  EXPECT_EQ(Read(repaired / "result.json"), Read(reference / "result.json"));
  EXPECT_EQ(Read(repaired / "progress.csv"), Read(reference / "progress.csv"));

  // Files short of a row: the missing reported row is written, the copy is not.
  Write(repaired / "result.json", "");
  fs::remove(repaired / "progress.csv");
  const auto again = Repair(4, /*return_copy=*/true);
  EXPECT_EQ(again.rows_written, 4);
  EXPECT_EQ(Read(repaired / "result.json"), Read(reference / "result.json"));
}

TEST_F(ResultFilesRepairTest, QuotedNewlinesInACsvRowDoNotCountAsRows) {
  const fs::path csv = dir_ / "quoted.csv";
  Write(csv, "a,b\n\"line one\nline two\",1\n2,\"x\"\"y\"\n3,\"torn\n");
  const FileRows rows = CountRows(csv.string(), true);
  EXPECT_TRUE(rows.header);
  EXPECT_EQ(rows.rows, 2);
  EXPECT_TRUE(rows.torn);
  ASSERT_TRUE(CutAfterRows(csv.string(), true, 1));
  EXPECT_EQ(Read(csv), "a,b\n\"line one\nline two\",1\n");
  const FileRows missing = CountRows((dir_ / "absent.csv").string(), true);
  EXPECT_EQ(missing.rows, 0);
  EXPECT_FALSE(missing.header || missing.torn);
}

TEST_F(ResultFilesRepairTest, FinishClosesTheFilesOfTheTrialsItWroteTo) {
  // No rows on disk, 4 in the journal: the repair opens the trial's files to write them, and
  // Finish closes them (a resumed experiment held 3 descriptors per repaired trial without it).
  trial_.num_results = 4;
  ResultFiles files;
  ResultFilesRepair repair((dir_ / "repaired").string(), files);
  ASSERT_EQ(repair.Plan({trial_}), 4);
  repair.OnConfigRecord(trial_, first_config_);
  for (int64_t i = 1; i <= 4; ++i) repair.OnResultRecord(trial_, ResultRecordAt(i, ResultAt(i)));
  EXPECT_TRUE(files.IsOpen(0));
  repair.Finish();
  EXPECT_FALSE(files.IsOpen(0));
  files.Drain();
  const std::string written = Read(dir_ / "repaired" / trial_.DirName() / "result.json");
  EXPECT_EQ(std::count(written.begin(), written.end(), '\n'), 4);
}

}  // namespace
}  // namespace tunebus
