// Fault tests: a journal whose tail is corrupt. The scheduler is SIGKILLed, bad records are
// appended to its journal behind its back, and it is started again: the resume reports the bad
// tail (with its seqs), cuts it from the store, continues from the last good record, and the
// experiment finishes; a second restart replays the whole (clean) journal. The bad records are
// bytes that never were a record, a record of an unknown kind, and a record with one flipped
// byte that still decodes (only its CRC-32C tells; docs/reference/journal-format.md).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "libs/journal/record_frame.hpp"
#include "libs/journal/records.hpp"
#include "proto/codec.hpp"
#include "proto/store.hpp"
#include "tests/fault/fault_support.hpp"
#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// Appends raw `records` to `journal` as another writer would (no fencing).
void AppendRaw(Cluster& cluster, const std::string& journal, std::vector<std::string> records) {
  DealerClient store(cluster.store());
  proto::JournalAppend append;
  append.id = 1;
  append.experiment = journal;
  append.records = std::move(records);
  store.Send(proto::Encode(append));
  auto frame = store.Receive(5s);
  ASSERT_TRUE(frame.has_value());
  auto d = proto::Decode(frame->data(), frame->size());
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->type(), proto::JournalAppendAck::kType);
}

// Submits a 3-trial experiment named `name` (25 iterations of 40 ms each), lets it run for
// half a second and SIGKILLs the scheduler. Returns the journal's name ("" on failure).
std::string SubmitAndKillTheScheduler(Cluster& cluster, const std::string& name) {
  const fs::path file = cluster.dir() / (name + ".yaml");
  WriteFile(file, "name: " + name +
                      "\n"
                      "trainable: {builtin: mock}\n"
                      "param_space:\n"
                      "  lr: {grid_search: [0.01, 0.02, 0.03]}\n"
                      "  mock_iterations: 25\n"
                      "  sleep_s: 0.04\n"
                      "results_dir: " +
                      (cluster.dir() / "results").string() + "\n");
  const std::string journal = SubmitDetached(cluster, file, name);
  if (journal.empty()) return "";
  const bool some_results = WaitFor(  // every trial journaled a few results
      [&] {
        const json ls = cluster.Ctl({"-o", "json", "ls"}).Json();
        if (!ls.is_array() || ls.size() != 3) return false;
        for (const json& t : ls)
          if (t.value("training_iteration", 0) < 2) return false;
        return true;
      },
      20s, 50ms);
  cluster.process("scheduler")->Kill();
  if (!some_results) return "";
  return journal;
}

TEST(TornJournalTest, CorruptTailIsReportedCutAndTheExperimentGoesOn) {
  Cluster cluster;
  ASSERT_TRUE(cluster.Start());
  const std::string journal = SubmitAndKillTheScheduler(cluster, "torn");
  ASSERT_FALSE(journal.empty());
  const size_t good = ReadJournal(cluster.store(), journal).size();
  // Undecodable bytes, then a record of an unknown kind: nothing from the bad one on is applied.
  AppendRaw(cluster, journal,
            {std::string("\xc1\xc1 torn"), journal::EncodeRecord({{"kind", "no_such_kind"}})});

  ASSERT_TRUE(cluster.Restart("scheduler"));
  const json summary = WaitFinished(cluster, 60s);
  ASSERT_FALSE(summary.empty()) << cluster.LogTails();
  EXPECT_EQ(summary.value("status", ""), "FINISHED") << summary.dump();
  const std::string log = cluster.process("scheduler")->Stdout();
  const std::string expected = "records " + std::to_string(good + 1) + ".." +
                               std::to_string(good + 2) + " are torn or corrupt";
  EXPECT_NE(log.find(expected), std::string::npos) << log;

  // The journal now decodes record by record to the end, and a fresh replay of it agrees.
  const std::vector<json> records = ReadJournal(cluster.store(), journal);
  DealerClient store(cluster.store());
  proto::JournalList list;
  list.id = 2;
  store.Send(proto::Encode(list));
  auto frame = store.Receive(5s);
  ASSERT_TRUE(frame.has_value());
  auto listed = proto::Decode(frame->data(), frame->size())->As<proto::JournalListReply>();
  ASSERT_TRUE(listed.ok());
  for (size_t i = 0; i < listed->experiments.size(); ++i) {
    if (listed->experiments[i] == journal) {
      EXPECT_EQ(listed->last_seqs[i], records.size()) << "undecodable records remain";
    }
  }
  EXPECT_EQ(records.back().value("kind", ""), "experiment_ended");
  ASSERT_TRUE(cluster.Restart("scheduler"));
  ASSERT_TRUE(WaitFor([&] { return cluster.Ctl({"status"}, 2s).exit_code != 3; }, 20s, 100ms));
  auto resumed = cluster.Ctl({"-o", "json", "resume", "torn"});
  EXPECT_EQ(resumed.exit_code, 1) << resumed.Describe();  // finished: nothing to resume
  EXPECT_NE(resumed.err.find("is finished"), std::string::npos) << resumed.Describe();
  const json ls = cluster.Ctl({"-o", "json", "ls"}).Json();
  ASSERT_EQ(ls.size(), 3u) << ls.dump();
  for (const json& t : ls) EXPECT_EQ(t.value("training_iteration", 0), 25) << t.dump();
}

TEST(TornJournalTest, ARecordWithAFlippedByteIsCaughtByItsCrcAndCut) {
  // A framed experiment_ended record with one byte of its reason flipped: its payload still
  // decodes to a valid record (replayed, it would end the experiment as STOPPED), but its CRC
  // no longer matches, so the resume reports it with its seq, cuts it, and the experiment
  // goes on to FINISHED.
  Cluster cluster;
  ASSERT_TRUE(cluster.Start());
  const std::string journal = SubmitAndKillTheScheduler(cluster, "flipped");
  ASSERT_FALSE(journal.empty());
  const size_t good = ReadJournal(cluster.store(), journal).size();
  std::string record = journal::FrameRecord(journal::EncodeRecord(
      journal::ExperimentEnded(ExperimentStatus::kStopped, "a reason to flip")));
  const size_t at = record.find("flip");
  ASSERT_NE(at, std::string::npos);
  record[at] = 'F';
  ASSERT_FALSE(journal::UnframeRecord(record).ok());
  ASSERT_TRUE(journal::DecodeRecord(std::string_view(record).substr(1, record.size() - 5)).ok());
  AppendRaw(cluster, journal, {record});

  ASSERT_TRUE(cluster.Restart("scheduler"));
  const json summary = WaitFinished(cluster, 60s);
  ASSERT_FALSE(summary.empty()) << cluster.LogTails();
  EXPECT_EQ(summary.value("status", ""), "FINISHED") << summary.dump();
  const std::string log = cluster.process("scheduler")->Stdout();
  const std::string seq = std::to_string(good + 1);
  EXPECT_NE(log.find("record " + seq + " is torn or corrupt"), std::string::npos) << log;
  EXPECT_NE(log.find("fails its CRC-32C"), std::string::npos) << log;
  EXPECT_NE(log.find("records " + seq + ".." + seq + " are torn or corrupt"), std::string::npos)
      << log;
  const std::vector<json> records = ReadJournal(cluster.store(), journal);
  for (const json& r : records) EXPECT_NE(r.value("reason", ""), "a reason to Flip") << r.dump();
  EXPECT_EQ(records.back().value("kind", ""), "experiment_ended");
  EXPECT_EQ(records.back().value("status", ""), "FINISHED");
}

}  // namespace
}  // namespace tunebus::testing
