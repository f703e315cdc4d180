// Tests for JournalWriter: write-ahead ordering against an in-memory JournalSink that
// acknowledges, delays or fails each batch when the test says so (DESIGN.md "Journal and
// recovery"). The test plays the scheduler's event loop: a round fires the sink's due retry
// timers, then flushes the writer as the loop's idle hook does. The writer over the bus
// (BusJournalSink and a ZeroMQ stand-in for the checkpoint-store) is bus_journal_sink_test.cpp.
#include "libs/journal/journal_writer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/core/clock.hpp"
#include "libs/journal/record_frame.hpp"
#include "libs/journal/records.hpp"

namespace tunebus::journal {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;

json Rec(int n) { return {{"kind", "trial_added"}, {"n", n}}; }

// The `n` of each stored record (as JournalWriter frames EncodeRecord's bytes).
std::vector<int> Ns(const std::vector<std::string>& records) {
  std::vector<int> out;
  for (const std::string& bytes : records) {
    auto r = ReadStoredRecord(bytes);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    out.push_back(r.ok() ? (*r)["n"].get<int>() : -1);
  }
  return out;
}

// A checkpoint-store stand-in behind the JournalSink interface: keeps every batch the writer
// hands it and answers it only when the test says so (ack or error). Acked records form
// `journal`, in store order. Retry timers wait for the test's next round (their delays are
// kept in `timer_delays`), so nothing sleeps.
class FakeSink final : public JournalSink {
 public:
  struct Request {
    std::string journal;
    uint64_t expected_first_seq = 0;
    std::vector<std::string> records;
    AppendDone done;
    bool answered = false;
  };

  void Append(const std::string& journal, uint64_t expected_first_seq,
              std::vector<std::string>& records, AppendDone done) override {
    requests.push_back({journal, expected_first_seq, records, std::move(done), false});
    int outstanding = 0;
    for (const Request& r : requests) outstanding += !r.answered;
    max_outstanding = std::max(max_outstanding, outstanding);
  }
  void AddTimer(milliseconds delay, std::function<void()> fn) override {
    timer_delays.push_back(delay);
    timers_.push_back(std::move(fn));
  }

  // Makes request `i` durable: assigns the next seqs and acknowledges the last one.
  void Ack(size_t i) {
    for (const std::string& rec : requests.at(i).records) journal.push_back(rec);
    Answer(i, uint64_t(journal.size()));
  }
  // Answers request `i` with an error; nothing is written.
  void Fail(size_t i, const Status& status) { Answer(i, status); }
  // Runs the retry timers set so far (the ones they set wait for the next call).
  void FireTimers() {
    std::vector<std::function<void()>> due;
    due.swap(timers_);
    for (auto& fn : due) fn();
  }

  std::vector<Request> requests;
  std::vector<std::string> journal;        // durable records, in store order
  int max_outstanding = 0;                 // most requests ever received but not answered
  std::vector<milliseconds> timer_delays;  // every retry delay asked for, in order

 private:
  void Answer(size_t i, Result<uint64_t> outcome) {
    Request& r = requests.at(i);
    ASSERT_FALSE(r.answered);
    r.answered = true;
    AppendDone done = std::move(r.done);  // `r` may move: the writer may append from `done`
    done(std::move(outcome));
  }
  std::vector<std::function<void()>> timers_;
};

class JournalWriterTest : public ::testing::Test {
 protected:
  JournalWriterTest() {
    auto sink = std::make_unique<FakeSink>();
    sink_ = sink.get();
    writer_ = std::make_unique<JournalWriter>(std::move(sink), "exp1", milliseconds{20}, clock_);
  }

  // One loop round: the due retry timers, then the idle hook's Flush (as the scheduler does).
  void Spin(int rounds = 1) {
    for (int i = 0; i < rounds; ++i) {
      sink_->FireTimers();
      writer_->Flush();
    }
  }
  // Spins until `done` holds (at most 100 rounds, normally a round or two).
  bool SpinUntil(const std::function<bool()>& done) {
    for (int round = 0; round < 100 && !done(); ++round) Spin();
    return done();
  }
  bool WaitForRequests(size_t n) {
    return SpinUntil([&] { return sink_->requests.size() >= n; });
  }

  ManualClock clock_;
  FakeSink* sink_ = nullptr;  // owned by writer_
  std::unique_ptr<JournalWriter> writer_;
};

TEST(JournalRecordsTest, EncodedResultRecordDecodesToTheResultRecord) {
  Trial t;
  t.trial_id = "abc_00007";
  t.attempt = 3;
  t.last_seq = 300;  // wider than a fixint
  const json result = {
      {"training_iteration", 300}, {"loss", 0.25}, {"done", false}, {"note", "x,y"}};
  std::string result_msgpack;
  json::to_msgpack(result, result_msgpack);
  const std::string bytes = EncodeResultRecord(t, result_msgpack, Action::kCheckpoint);
  auto decoded = DecodeRecord(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, ResultRecord(t, result, Action::kCheckpoint));
  EXPECT_EQ(bytes,
            EncodeRecord(ResultRecord(t, result, Action::kCheckpoint)));  // the same bytes, too
}

TEST(JournalRecordsTest, AResultWhoseDecisionAsksForAScoredCheckpointCarriesTheScore) {
  // The request's journal entry: checkpoint_score rides on the result record, written straight
  // or through the document alike; a request at another iteration is not this result's.
  Trial t;
  t.trial_id = "abc_00001";
  t.attempt = 1;
  t.last_seq = t.training_iteration = 6;
  t.requested_checkpoints.push_back({"", 6, 6.0, 0.125, 0});
  const json result = {{"training_iteration", 6}, {"acc", 0.125}};
  std::string result_msgpack;
  json::to_msgpack(result, result_msgpack);
  const std::string bytes = EncodeResultRecord(t, result_msgpack, Action::kCheckpoint);
  EXPECT_EQ(bytes, EncodeRecord(ResultRecord(t, result, Action::kCheckpoint)));
  EXPECT_EQ(DecodeRecord(bytes)->value("checkpoint_score", -1.0), 0.125);
  t.training_iteration = 7;
  EXPECT_FALSE(ResultRecord(t, result, Action::kContinue).contains("checkpoint_score"));
}

// The per-trial records written straight from the trial are the bytes of the record documents,
// across the msgpack widths (fixint/uint16, fixstr/str8, float32/float64, empty/filled arrays)
// and the optional fields that fall back to the document.
TEST(JournalRecordsTest, TrialRecordsWrittenStraightAreTheBytesOfTheirDocuments) {
  Trial t;
  t.trial_id = "abc_00007";
  t.index = 7;
  t.config = {{"lr", 0.001}, {"layers", {64, 32}}, {"opt", "adam"}, {"nested", {{"a", nullptr}}}};
  t.experiment_tag = "7_lr=0.001,opt=adam,a_tag_longer_than_thirty_one_characters";
  t.resources = *Resources::FromAmounts({{"cpu", 1}, {"gpu", 0.5}, {"disk", 2}});
  std::vector<Trial> cases;
  cases.push_back(t);  // freshly added: attempt 0, no worker, no error
  t.attempt = 300;     // wider than a fixint
  t.worker_id = "w1";
  t.gpu_ids = {"0", "3"};
  t.start_time_s = 1764000000.123456;  // needs a float64
  t.restored_checkpoint_id = "ck_1";
  t.restored_iteration = 12;
  t.restored_time_total_s = 1.5;  // a float32 holds it exactly
  t.status = TrialStatus::kRunning;
  cases.push_back(t);
  t.status = TrialStatus::kError;
  t.error = "trainable exited with code 1";
  t.num_failures = 2;
  t.failures.push_back({t.attempt, t.error, TrialStatus::kError, FailureKind::kError});
  cases.push_back(t);
  t.failures.back().kind = FailureKind::kWorkerLost;  // failure_kind and num_worker_losses
  t.num_worker_losses = 1;
  cases.push_back(t);
  t.restore_checkpoint = CheckpointRef{"ck_0", 3, 2.5, 0.9, 100};
  cases.push_back(t);
  for (size_t i = 0; i < cases.size(); ++i) {
    const Trial& c = cases[i];
    EXPECT_EQ(EncodeTrialAdded(c), EncodeRecord(TrialAdded(c))) << i;
    EXPECT_EQ(EncodeTrialStarted(c), EncodeRecord(TrialStarted(c))) << i;
    EXPECT_EQ(EncodeTrialStatusRecord(c), EncodeRecord(TrialStatusRecord(c))) << i;
  }
  for (const json& delta : {json::array({{{"add", {"abc_00007", 2}}}}), json::array()}) {
    EXPECT_EQ(EncodeTrialSchedulerDelta(delta), EncodeRecord(TrialSchedulerDelta(delta)))
        << delta.dump();
  }
}

TEST_F(JournalWriterTest, EffectRunsAtOnceWhenEverythingIsDurable) {
  // Nothing appended yet (or everything acked): AfterDurable runs the effect immediately.
  int ran = 0;
  writer_->AfterDurable([&] { ++ran; });
  EXPECT_EQ(ran, 1);
  writer_->Flush();  // nothing queued: no request
  Spin(2);
  EXPECT_TRUE(sink_->requests.empty());

  writer_->Append(Rec(1));
  ASSERT_TRUE(WaitForRequests(1));
  sink_->Ack(0);
  ASSERT_TRUE(SpinUntil([&] { return writer_->durable() == 1; }));
  writer_->AfterDurable([&] { ++ran; });
  EXPECT_EQ(ran, 2);
}

TEST_F(JournalWriterTest, EffectWaitsForTheAckCoveringEveryEarlierAppend) {
  // Two records then an effect: the effect stays queued while the store delays its answer and
  // runs once the batch holding both records is acknowledged.
  EXPECT_EQ(writer_->Append(Rec(1)), 1u);
  EXPECT_EQ(writer_->Append(Rec(2)), 2u);
  bool ran = false;
  writer_->AfterDurable([&] { ran = true; });
  EXPECT_FALSE(ran);
  EXPECT_EQ(writer_->appended(), 2u);
  ASSERT_TRUE(WaitForRequests(1));
  EXPECT_EQ(sink_->requests[0].journal, "exp1");
  EXPECT_EQ(Ns(sink_->requests[0].records), (std::vector<int>{1, 2}));
  Spin(3);  // the store is slow
  EXPECT_FALSE(ran);
  EXPECT_EQ(writer_->durable(), 0u);
  sink_->Ack(0);
  ASSERT_TRUE(SpinUntil([&] { return ran; }));
  EXPECT_EQ(writer_->durable(), 2u);
  EXPECT_EQ(writer_->store_seq(), 2u);
  EXPECT_EQ(sink_->requests.size(), 1u);
}

TEST_F(JournalWriterTest, OnlyOneBatchInFlightAndAppendsDuringItFormTheNextBatch) {
  // Group commit: while batch 1 is in flight, new records wait; after its ack they go out
  // together as batch 2.
  writer_->Append(Rec(1));
  ASSERT_TRUE(WaitForRequests(1));
  writer_->Append(Rec(2));
  writer_->Append(Rec(3));
  bool ran = false;
  writer_->AfterDurable([&] { ran = true; });
  Spin(3);
  EXPECT_EQ(sink_->requests.size(), 1u);
  sink_->Ack(0);
  ASSERT_TRUE(WaitForRequests(2));
  EXPECT_EQ(writer_->durable(), 1u);
  EXPECT_FALSE(ran);
  EXPECT_EQ(Ns(sink_->requests[1].records), (std::vector<int>{2, 3}));
  sink_->Ack(1);
  ASSERT_TRUE(SpinUntil([&] { return ran; }));
  EXPECT_EQ(writer_->durable(), 3u);
  EXPECT_EQ(writer_->store_seq(), 3u);
  EXPECT_EQ(Ns(sink_->journal), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(sink_->max_outstanding, 1);
}

TEST_F(JournalWriterTest, ABacklogLargerThanOneBatchGoesAsBoundedBatchesInOrder) {
  // Records of ~10 KiB: at most kMaxBatchBytes go per batch, the next part only after the ack
  // of the previous one, and an effect after the last record waits for the last part.
  const std::string pad(10 * 1024, 'x');
  const int n = 20;
  for (int i = 1; i <= n; ++i)
    writer_->Append(json{{"kind", "trial_added"}, {"n", i}, {"pad", pad}});
  bool ran = false;
  writer_->AfterDurable([&] { ran = true; });
  std::vector<int> sent;
  for (size_t batch = 0; sent.size() < size_t(n); ++batch) {
    ASSERT_TRUE(WaitForRequests(batch + 1)) << "batch " << batch;
    Spin(2);
    EXPECT_EQ(sink_->requests.size(), batch + 1)
        << "a second batch went before the first was acked";
    const auto& records = sink_->requests[batch].records;
    size_t bytes = 0;
    for (const std::string& r : records) bytes += r.size();
    EXPECT_LE(bytes, JournalWriter::kMaxBatchBytes);
    EXPECT_GE(records.size(), 1u);
    for (int x : Ns(records)) sent.push_back(x);
    EXPECT_FALSE(ran);
    sink_->Ack(batch);
  }
  ASSERT_TRUE(SpinUntil([&] { return ran; }));
  EXPECT_GT(sink_->requests.size(), 2u);
  std::vector<int> expected;
  for (int i = 1; i <= n; ++i) expected.push_back(i);
  EXPECT_EQ(sent, expected);
  EXPECT_EQ(Ns(sink_->journal), expected);
  EXPECT_EQ(writer_->durable(), uint64_t(n));
  EXPECT_EQ(sink_->max_outstanding, 1);
}
TEST_F(JournalWriterTest, EffectsRunInCallOrderEachAfterItsOwnRecords) {
  // e1 follows record 1; e2 and e3 follow record 2. The ack of batch 1 runs only e1; the ack
  // of batch 2 runs e2 then e3.
  std::vector<int> order;
  writer_->Append(Rec(1));
  writer_->AfterDurable([&] { order.push_back(1); });
  ASSERT_TRUE(WaitForRequests(1));
  writer_->Append(Rec(2));
  writer_->AfterDurable([&] { order.push_back(2); });
  writer_->AfterDurable([&] { order.push_back(3); });
  sink_->Ack(0);
  ASSERT_TRUE(SpinUntil([&] { return !order.empty(); }));
  ASSERT_TRUE(WaitForRequests(2));
  Spin(2);
  EXPECT_EQ(order, (std::vector<int>{1}));
  sink_->Ack(1);
  ASSERT_TRUE(SpinUntil([&] { return order.size() == 3; }));
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST_F(JournalWriterTest, FailedAppendIsRetriedWithTheSameRecordsWhileEffectsWait) {
  // The store answers ErrorReply twice: the same batch is resent each time (after the retry
  // delay), records appended meanwhile wait for the next batch, and the effect waits for the
  // ack; the journal ends up in Append order with no record twice.
  writer_->Append(Rec(1));
  writer_->Append(Rec(2));
  bool ran = false;
  writer_->AfterDurable([&] { ran = true; });
  ASSERT_TRUE(WaitForRequests(1));
  sink_->Fail(0, Status::IoError("rocksdb: disk full"));
  writer_->Append(Rec(3));
  ASSERT_TRUE(WaitForRequests(2));
  EXPECT_FALSE(ran);
  EXPECT_EQ(writer_->durable(), 0u);
  EXPECT_EQ(Ns(sink_->requests[1].records), (std::vector<int>{1, 2}));
  sink_->Fail(1, Status::Unavailable("busy"));
  ASSERT_TRUE(WaitForRequests(3));
  EXPECT_FALSE(ran);
  EXPECT_EQ(Ns(sink_->requests[2].records), (std::vector<int>{1, 2}));
  EXPECT_EQ(sink_->max_outstanding, 1);
  sink_->Ack(2);
  ASSERT_TRUE(SpinUntil([&] { return ran; }));
  EXPECT_EQ(writer_->durable(), 2u);
  ASSERT_TRUE(WaitForRequests(4));
  EXPECT_EQ(Ns(sink_->requests[3].records), (std::vector<int>{3}));
  sink_->Ack(3);
  ASSERT_TRUE(SpinUntil([&] { return writer_->durable() == 3; }));
  EXPECT_EQ(Ns(sink_->journal), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(sink_->max_outstanding, 1);
  // Every try of the first batch asks for seq 1 (so the store writes it once), the next for 3.
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(sink_->requests[i].expected_first_seq, 1u) << i;
  EXPECT_EQ(sink_->requests[3].expected_first_seq, 3u);
  EXPECT_EQ(sink_->timer_delays, (std::vector<milliseconds>{milliseconds{20}, milliseconds{40}}));
}

TEST_F(JournalWriterTest, AFailingWriterSaysSinceWhenWhyAndHowManyTries) {
  // A degraded store (disk full) answers every append with io_error: the writer is kFailing
  // from the first failure, keeps its since-time, the newest error and its tries, and is kOk
  // again at the ack.
  writer_->Append(Rec(1));
  EXPECT_EQ(writer_->state(), JournalWriter::State::kOk);
  const double start = clock_.WallSeconds();
  for (size_t i = 0; i < 5; ++i) {
    ASSERT_TRUE(WaitForRequests(i + 1));
    sink_->Fail(i, Status::IoError("RocksDB write: IO error: No space left on device"));
    EXPECT_EQ(writer_->state(), JournalWriter::State::kFailing);
    clock_.Advance(milliseconds{500});
  }
  EXPECT_DOUBLE_EQ(writer_->failing_since_wall_s(), start);
  EXPECT_EQ(writer_->failed_tries(), 5u);
  EXPECT_EQ(writer_->last_error().code(), StatusCode::kIoError);
  EXPECT_EQ(sink_->timer_delays,
            (std::vector<milliseconds>{milliseconds{20}, milliseconds{40}, milliseconds{80},
                                       milliseconds{160}, milliseconds{320}}));
  ASSERT_TRUE(WaitForRequests(6));
  sink_->Ack(5);
  EXPECT_EQ(writer_->state(), JournalWriter::State::kOk);
  EXPECT_EQ(writer_->failed_tries(), 0u);
  EXPECT_EQ(writer_->durable(), 1u);
  EXPECT_EQ(Ns(sink_->journal), (std::vector<int>{1}));
}

TEST_F(JournalWriterTest, RetryNowSendsTheFailedBatchAtOnceAndItsTimerThenDoesNothing) {
  // The store was down (back-off at 30 s) and says it is back: RetryNow sends the batch at
  // once; the timer set for that retry fires later and sends nothing more.
  writer_->Append(Rec(1));
  ASSERT_TRUE(WaitForRequests(1));
  sink_->Fail(0, Status::Unavailable("the checkpoint-store did not answer"));
  EXPECT_EQ(sink_->requests.size(), 1u);
  writer_->RetryNow();
  ASSERT_EQ(sink_->requests.size(), 2u);
  EXPECT_EQ(Ns(sink_->requests[1].records), (std::vector<int>{1}));
  writer_->RetryNow();  // nothing waits for a retry now: no third request
  Spin(3);              // fires the stale timer
  EXPECT_EQ(sink_->requests.size(), 2u);
  sink_->Ack(1);
  EXPECT_EQ(writer_->durable(), 1u);
  EXPECT_EQ(sink_->max_outstanding, 1);
}

TEST_F(JournalWriterTest, RetryDelayDoublesPerFailureUpTo30sAndAnAckResetsIt) {
  // A store down for a long time: the delay before each retry doubles from retry_delay and
  // stops at 30 s; once a batch is acknowledged, the next failure waits retry_delay again.
  writer_->Append(Rec(1));
  for (size_t i = 0; i < 14; ++i) {
    ASSERT_TRUE(WaitForRequests(i + 1));
    sink_->Fail(i, Status::Unavailable("the checkpoint-store did not answer"));
  }
  ASSERT_TRUE(WaitForRequests(15));
  sink_->Ack(14);
  writer_->Append(Rec(2));
  ASSERT_TRUE(WaitForRequests(16));
  sink_->Fail(15, Status::IoError("flaky"));
  std::vector<milliseconds> expected;
  for (int64_t delay = 20; delay < 30000; delay *= 2) expected.push_back(milliseconds{delay});
  while (expected.size() < 14) expected.push_back(milliseconds{30000});
  expected.push_back(milliseconds{20});
  EXPECT_EQ(sink_->timer_delays, expected);
  EXPECT_EQ(writer_->durable(), 1u);
}

TEST_F(JournalWriterTest, AppendLatencyIsTheTimeFromHandingTheBatchOverToItsAck) {
  // The writer times a batch on its clock: from the try that succeeded to the ack.
  writer_->Append(Rec(1));
  ASSERT_TRUE(WaitForRequests(1));
  clock_.Advance(milliseconds{7});
  sink_->Ack(0);
  EXPECT_DOUBLE_EQ(writer_->last_append_latency_s(), 0.007);
}

TEST_F(JournalWriterTest, EffectsMayAppendAndWaitAgain) {
  // An effect that appends a record and registers a follow-up effect (as a handler releasing
  // one step and journaling the next would): the follow-up waits for the new record's ack.
  std::vector<int> order;
  writer_->Append(Rec(1));
  writer_->AfterDurable([&] {
    order.push_back(1);
    writer_->Append(Rec(2));
    writer_->AfterDurable([&] { order.push_back(2); });
  });
  ASSERT_TRUE(WaitForRequests(1));
  sink_->Ack(0);
  ASSERT_TRUE(WaitForRequests(2));
  EXPECT_EQ(order, (std::vector<int>{1}));
  EXPECT_EQ(Ns(sink_->requests[1].records), (std::vector<int>{2}));
  sink_->Ack(1);
  ASSERT_TRUE(SpinUntil([&] { return order.size() == 2; }));
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST_F(JournalWriterTest, EveryEffectSeesItsRecordsDurableUnderMixedAcksAndFailures) {
  // 60 records with effects in between, the store failing every third answer: each effect
  // runs only when every record appended before it is in the store's journal, effects run in
  // call order, the journal equals the Append order, and one batch at most is ever in flight.
  std::vector<int> ran;
  int appended = 0;
  int answers = 0;
  for (int round = 0; round < 20; ++round) {
    for (int k = 0; k < 3; ++k) {
      writer_->Append(Rec(++appended));
      const size_t need = size_t(appended);
      const int effect = appended;
      writer_->AfterDurable([&, need, effect] {
        EXPECT_GE(sink_->journal.size(), need)
            << "effect " << effect << " ran before its record was durable";
        ran.push_back(effect);
      });
    }
    Spin();
    for (size_t i = 0; i < sink_->requests.size(); ++i) {
      if (sink_->requests[i].answered) continue;
      if (++answers % 3 == 0) {
        sink_->Fail(i, Status::IoError("flaky"));
      } else {
        sink_->Ack(i);
      }
    }
  }
  ASSERT_TRUE(SpinUntil([&] {
    for (size_t i = 0; i < sink_->requests.size(); ++i) {
      if (!sink_->requests[i].answered) sink_->Ack(i);
    }
    return writer_->durable() == uint64_t(appended);
  }));
  ASSERT_EQ(ran.size(), size_t(appended));
  for (int i = 0; i < appended; ++i) EXPECT_EQ(ran[size_t(i)], i + 1);
  std::vector<int> expected;
  for (int i = 1; i <= appended; ++i) expected.push_back(i);
  EXPECT_EQ(Ns(sink_->journal), expected);
  EXPECT_EQ(sink_->max_outstanding, 1);
  EXPECT_EQ(writer_->store_seq(), uint64_t(appended));
}

}  // namespace
}  // namespace tunebus::journal
