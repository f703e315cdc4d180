// Tests for JournalWriter: write-ahead ordering against a fake checkpoint-store (a test-owned
// ROUTER on inproc) that acknowledges, delays or fails each JournalAppend (DESIGN.md "Journal
// and recovery"). The test thread drives the writer's EventLoop with RunOnce.
#include "libs/journal/journal_writer.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/bus/event_loop.hpp"
#include "libs/bus/request_client.hpp"
#include "libs/bus/socket.hpp"
#include "libs/journal/records.hpp"
#include "proto/codec.hpp"
#include "proto/store.hpp"

namespace tunebus::journal {
namespace {

using json = nlohmann::json;

json Rec(int n) { return {{"kind", "trial_added"}, {"n", n}}; }

// The `n` of each record bytes (as encoded by EncodeRecord).
std::vector<int> Ns(const std::vector<std::string>& records) {
  std::vector<int> out;
  for (const std::string& bytes : records) {
    auto r = DecodeRecord(bytes);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    out.push_back(r.ok() ? (*r)["n"].get<int>() : -1);
  }
  return out;
}

// A checkpoint-store stand-in: receives JournalAppend requests and answers them only when the
// test says so (ack, typed error or raw bytes). Acked records form `journal`, in store order.
class FakeStore {
 public:
  struct Request {
    std::vector<std::string> route;
    proto::JournalAppend append;
    bool answered = false;
  };

  FakeStore(zmq::context_t& ctx, const std::string& endpoint) {
    auto s = bus::Bind(ctx, zmq::socket_type::router, endpoint);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (s.ok()) router_ = std::move(*s);
  }

  // Takes every request waiting on the socket, without blocking.
  void Poll() {
    bus::Incoming in;
    while (bus::Receive(router_, in)) {
      auto d = proto::Decode(in.payload.data(), in.payload.size());
      ASSERT_TRUE(d.ok()) << d.status().ToString();
      ASSERT_EQ(d->type(), proto::JournalAppend::kType);
      auto m = d->As<proto::JournalAppend>();
      ASSERT_TRUE(m.ok()) << m.status().ToString();
      requests.push_back({in.route, *m, false});
      int outstanding = 0;
      for (const Request& r : requests) outstanding += !r.answered;
      max_outstanding = std::max(max_outstanding, outstanding);
    }
  }

  // Makes request `i` durable: assigns the next seqs and answers JournalAppendAck.
  void Ack(size_t i) {
    Request& r = requests.at(i);
    proto::JournalAppendAck ack;
    ack.id = r.append.id;
    ack.experiment = r.append.experiment;
    ack.first_seq = journal.size() + 1;
    for (const std::string& rec : r.append.records) journal.push_back(rec);
    ack.last_seq = journal.size();
    Answer(r, proto::Encode(ack));
  }
  // Answers request `i` with a typed error; nothing is written.
  void Fail(size_t i, const Status& status) {
    Request& r = requests.at(i);
    Answer(r, proto::Encode(proto::MakeError(status, r.append.id, proto::JournalAppend::kType)));
  }
  // Answers request `i` with arbitrary bytes built from its id.
  void AnswerRaw(size_t i, const std::function<std::string(uint64_t id)>& make) {
    Request& r = requests.at(i);
    Answer(r, make(r.append.id));
  }

  std::vector<Request> requests;
  std::vector<std::string> journal;  // durable records, in store order
  int max_outstanding = 0;           // most requests ever received but not answered

 private:
  void Answer(Request& r, const std::string& payload) {
    ASSERT_FALSE(r.answered);
    bus::Incoming to;
    to.route = r.route;
    ASSERT_TRUE(bus::Reply(router_, to, payload));
    r.answered = true;
  }
  zmq::socket_t router_;
};

int g_endpoint_counter = 0;

class JournalWriterTest : public ::testing::Test {
 protected:
  JournalWriterTest()
      : endpoint_("inproc://journal-writer-test-" + std::to_string(g_endpoint_counter++)),
        store_(ctx_, endpoint_) {
    auto dealer = bus::Connect(ctx_, zmq::socket_type::dealer, endpoint_);
    EXPECT_TRUE(dealer.ok()) << dealer.status().ToString();
    client_ = std::make_unique<bus::RequestClient>(loop_, std::move(*dealer), "checkpoint-store");
    writer_ = std::make_unique<JournalWriter>(loop_, *client_, "exp1", bus::Duration{20});
    loop_.SetIdleHook([this] { writer_->Flush(); });  // as the scheduler does
  }
  ~JournalWriterTest() override {
    loop_.SetIdleHook(nullptr);
    writer_.reset();
    client_.reset();
  }

  // One loop round (at most 10 ms), then the store takes what arrived.
  void Spin(int rounds = 1) {
    for (int i = 0; i < rounds; ++i) {
      loop_.RunOnce(bus::Duration{10});
      store_.Poll();
    }
  }
  // Spins until `done` holds (at most ~2 s, normally a round or two).
  bool SpinUntil(const std::function<bool()>& done) {
    const auto deadline = bus::Clock::now() + std::chrono::seconds(2);
    while (!done() && bus::Clock::now() < deadline) Spin();
    return done();
  }
  bool WaitForRequests(size_t n) {
    return SpinUntil([&] { return store_.requests.size() >= n; });
  }

  zmq::context_t ctx_;
  std::string endpoint_;
  FakeStore store_;
  bus::EventLoop loop_;
  std::unique_ptr<bus::RequestClient> client_;
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
  EXPECT_TRUE(store_.requests.empty());

  writer_->Append(Rec(1));
  ASSERT_TRUE(WaitForRequests(1));
  store_.Ack(0);
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
  EXPECT_EQ(store_.requests[0].append.experiment, "exp1");
  EXPECT_EQ(Ns(store_.requests[0].append.records), (std::vector<int>{1, 2}));
  Spin(3);  // the store is slow
  EXPECT_FALSE(ran);
  EXPECT_EQ(writer_->durable(), 0u);
  store_.Ack(0);
  ASSERT_TRUE(SpinUntil([&] { return ran; }));
  EXPECT_EQ(writer_->durable(), 2u);
  EXPECT_EQ(writer_->store_seq(), 2u);
  EXPECT_EQ(store_.requests.size(), 1u);
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
  EXPECT_EQ(store_.requests.size(), 1u);
  store_.Ack(0);
  ASSERT_TRUE(WaitForRequests(2));
  EXPECT_EQ(writer_->durable(), 1u);
  EXPECT_FALSE(ran);
  EXPECT_EQ(Ns(store_.requests[1].append.records), (std::vector<int>{2, 3}));
  store_.Ack(1);
  ASSERT_TRUE(SpinUntil([&] { return ran; }));
  EXPECT_EQ(writer_->durable(), 3u);
  EXPECT_EQ(writer_->store_seq(), 3u);
  EXPECT_EQ(Ns(store_.journal), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(store_.max_outstanding, 1);
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
    EXPECT_EQ(store_.requests.size(), batch + 1)
        << "a second batch went before the first was acked";
    const auto& records = store_.requests[batch].append.records;
    size_t bytes = 0;
    for (const std::string& r : records) bytes += r.size();
    EXPECT_LE(bytes, JournalWriter::kMaxBatchBytes);
    EXPECT_GE(records.size(), 1u);
    for (int x : Ns(records)) sent.push_back(x);
    EXPECT_FALSE(ran);
    store_.Ack(batch);
  }
  ASSERT_TRUE(SpinUntil([&] { return ran; }));
  EXPECT_GT(store_.requests.size(), 2u);
  std::vector<int> expected;
  for (int i = 1; i <= n; ++i) expected.push_back(i);
  EXPECT_EQ(sent, expected);
  EXPECT_EQ(Ns(store_.journal), expected);
  EXPECT_EQ(writer_->durable(), uint64_t(n));
  EXPECT_EQ(store_.max_outstanding, 1);
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
  store_.Ack(0);
  ASSERT_TRUE(SpinUntil([&] { return !order.empty(); }));
  ASSERT_TRUE(WaitForRequests(2));
  Spin(2);
  EXPECT_EQ(order, (std::vector<int>{1}));
  store_.Ack(1);
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
  store_.Fail(0, Status::IoError("rocksdb: disk full"));
  writer_->Append(Rec(3));
  ASSERT_TRUE(WaitForRequests(2));
  EXPECT_FALSE(ran);
  EXPECT_EQ(writer_->durable(), 0u);
  EXPECT_EQ(Ns(store_.requests[1].append.records), (std::vector<int>{1, 2}));
  store_.Fail(1, Status::Unavailable("busy"));
  ASSERT_TRUE(WaitForRequests(3));
  EXPECT_FALSE(ran);
  EXPECT_EQ(Ns(store_.requests[2].append.records), (std::vector<int>{1, 2}));
  EXPECT_EQ(store_.max_outstanding, 1);
  store_.Ack(2);
  ASSERT_TRUE(SpinUntil([&] { return ran; }));
  EXPECT_EQ(writer_->durable(), 2u);
  ASSERT_TRUE(WaitForRequests(4));
  EXPECT_EQ(Ns(store_.requests[3].append.records), (std::vector<int>{3}));
  store_.Ack(3);
  ASSERT_TRUE(SpinUntil([&] { return writer_->durable() == 3; }));
  EXPECT_EQ(Ns(store_.journal), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(store_.max_outstanding, 1);
}

TEST_F(JournalWriterTest, MalformedAckIsNotTakenAsDurable) {
  // An ack whose fields have the wrong types cannot prove durability: the batch is retried.
  writer_->Append(Rec(1));
  bool ran = false;
  writer_->AfterDurable([&] { ran = true; });
  ASSERT_TRUE(WaitForRequests(1));
  store_.AnswerRaw(0, [](uint64_t id) {
    msgpack::sbuffer buf;
    msgpack::packer<msgpack::sbuffer> p(buf);
    p.pack_map(4);
    p.pack(std::string("v"));
    p.pack(proto::kProtocolVersion);
    p.pack(std::string("type"));
    p.pack(std::string(proto::JournalAppendAck::kType));
    p.pack(std::string("id"));
    p.pack(id);
    p.pack(std::string("last_seq"));
    p.pack(std::string("one"));
    return std::string(buf.data(), buf.size());
  });
  ASSERT_TRUE(WaitForRequests(2));
  EXPECT_FALSE(ran);
  EXPECT_EQ(Ns(store_.requests[1].append.records), (std::vector<int>{1}));
  store_.Ack(1);
  ASSERT_TRUE(SpinUntil([&] { return ran; }));
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
  store_.Ack(0);
  ASSERT_TRUE(WaitForRequests(2));
  EXPECT_EQ(order, (std::vector<int>{1}));
  EXPECT_EQ(Ns(store_.requests[1].append.records), (std::vector<int>{2}));
  store_.Ack(1);
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
        EXPECT_GE(store_.journal.size(), need)
            << "effect " << effect << " ran before its record was durable";
        ran.push_back(effect);
      });
    }
    Spin();
    for (size_t i = 0; i < store_.requests.size(); ++i) {
      if (store_.requests[i].answered) continue;
      if (++answers % 3 == 0) {
        store_.Fail(i, Status::IoError("flaky"));
      } else {
        store_.Ack(i);
      }
    }
  }
  ASSERT_TRUE(SpinUntil([&] {
    for (size_t i = 0; i < store_.requests.size(); ++i) {
      if (!store_.requests[i].answered) store_.Ack(i);
    }
    return writer_->durable() == uint64_t(appended);
  }));
  ASSERT_EQ(ran.size(), size_t(appended));
  for (int i = 0; i < appended; ++i) EXPECT_EQ(ran[size_t(i)], i + 1);
  std::vector<int> expected;
  for (int i = 1; i <= appended; ++i) expected.push_back(i);
  EXPECT_EQ(Ns(store_.journal), expected);
  EXPECT_EQ(store_.max_outstanding, 1);
  EXPECT_EQ(writer_->store_seq(), uint64_t(appended));
}

}  // namespace
}  // namespace tunebus::journal
