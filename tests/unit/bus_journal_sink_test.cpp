// Tests for BusJournalSink and JournalAppendBatcher: JournalWriters over the bus, against a
// checkpoint-store stand-in (a test-owned ROUTER on inproc) that acknowledges, fails or garbles
// each JournalAppendMany. The test thread drives the writers' EventLoop with RunOnce. The
// writer's ordering and retry rules are journal_writer_test.cpp's, over an in-memory sink.
#include "services/scheduler/store/bus_journal_sink.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "libs/bus/event_loop.hpp"
#include "libs/bus/request_client.hpp"
#include "libs/bus/socket.hpp"
#include "libs/journal/journal_writer.hpp"
#include "libs/journal/record_frame.hpp"
#include "libs/journal/records.hpp"
#include "proto/codec.hpp"
#include "proto/store.hpp"

namespace tunebus {
namespace {

using json = nlohmann::json;

json Rec(int n) { return {{"kind", "trial_added"}, {"n", n}}; }

// The `n` of each stored record (as JournalWriter frames EncodeRecord's bytes).
std::vector<int> Ns(const std::vector<std::string>& records) {
  std::vector<int> out;
  for (const std::string& bytes : records) {
    auto r = journal::ReadStoredRecord(bytes);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    out.push_back(r.ok() ? (*r)["n"].get<int>() : -1);
  }
  return out;
}

// A checkpoint-store stand-in: receives JournalAppendMany requests and answers them only when
// the test says so (ack, typed error or raw bytes). Acked records form `journal`, in store order
// (all journals together).
class FakeStore {
 public:
  struct Request {
    std::vector<std::string> route;
    proto::JournalAppendMany append;
    bool answered = false;
  };

  FakeStore(zmq::context_t& ctx, const std::string& endpoint) {
    auto s = bus::Bind(ctx, zmq::socket_type::router, endpoint, *bus::Security::Plaintext(),
                       {"test", bus::RoleSet::Any()});
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (s.ok()) router_ = std::move(*s);
  }

  // Takes every request waiting on the socket, without blocking.
  void Poll() {
    bus::Incoming in;
    while (bus::Receive(router_, in)) {
      auto d = proto::Decode(in.payload.data(), in.payload.size());
      ASSERT_TRUE(d.ok()) << d.status().ToString();
      ASSERT_EQ(d->type(), proto::JournalAppendMany::kType);
      auto m = d->As<proto::JournalAppendMany>();
      ASSERT_TRUE(m.ok()) << m.status().ToString();
      requests.push_back({in.route, *m, false});
    }
  }

  // Makes request `i` durable, but for the part `fenced` (if any), which gets
  // failed_precondition: assigns each journal's next seqs and answers JournalAppendManyAck.
  void Ack(size_t i, std::optional<size_t> fenced = std::nullopt) {
    Request& r = requests.at(i);
    proto::JournalAppendManyAck ack;
    ack.id = r.append.id;
    for (size_t k = 0; k < r.append.parts.size(); ++k) {
      const proto::JournalAppendPart& part = r.append.parts[k];
      proto::JournalAppendPartAck& a = ack.parts.emplace_back();
      a.experiment = part.experiment;
      if (fenced == k) {
        a.error_code = "failed_precondition";
        a.error = "another writer appended to it";
        continue;
      }
      uint64_t& last = last_seqs[part.experiment];
      a.first_seq = last + 1;
      for (const std::string& rec : part.records) journal.push_back(rec);
      last += part.records.size();
      a.last_seq = last;
    }
    Answer(r, proto::Encode(ack));
  }
  // Answers request `i` with a typed error; nothing is written.
  void Fail(size_t i, const Status& status) {
    Request& r = requests.at(i);
    Answer(r,
           proto::Encode(proto::MakeError(status, r.append.id, proto::JournalAppendMany::kType)));
  }
  // Answers request `i` with arbitrary bytes built from its id.
  void AnswerRaw(size_t i, const std::function<std::string(uint64_t id)>& make) {
    Request& r = requests.at(i);
    Answer(r, make(r.append.id));
  }

  std::vector<Request> requests;
  std::vector<std::string> journal;           // durable records, in store order
  std::map<std::string, uint64_t> last_seqs;  // journal -> its last seq

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

class BusJournalSinkTest : public ::testing::Test {
 protected:
  BusJournalSinkTest()
      : endpoint_("inproc://bus-journal-sink-test-" + std::to_string(g_endpoint_counter++)),
        store_(ctx_, endpoint_) {
    auto dealer = bus::Connect(ctx_, zmq::socket_type::dealer, endpoint_,
                               *bus::Security::Plaintext(), {"test", ""});
    EXPECT_TRUE(dealer.ok()) << dealer.status().ToString();
    client_ = std::make_unique<bus::RequestClient>(loop_, std::move(*dealer), "checkpoint-store");
    batcher_ = std::make_unique<JournalAppendBatcher>(*client_);
    writer_ = NewWriter("exp1");
    // As the scheduler's AfterRound: every writer flushes, then the round's appends go at once.
    loop_.SetIdleHook([this] {
      writer_->Flush();
      if (second_) second_->Flush();
      batcher_->Send();
    });
  }
  ~BusJournalSinkTest() override {
    loop_.SetIdleHook(nullptr);
    writer_.reset();
    second_.reset();
    batcher_.reset();
    client_.reset();
  }
  std::unique_ptr<journal::JournalWriter> NewWriter(const std::string& journal) {
    return std::make_unique<journal::JournalWriter>(
        std::make_unique<BusJournalSink>(loop_, *batcher_), journal, std::chrono::milliseconds{20});
  }

  // One loop round (at most 10 ms), then the store takes what arrived.
  void Spin() {
    loop_.RunOnce(bus::Duration{10});
    store_.Poll();
  }
  // Spins until `done` holds, for at most 2 s (normally a round or two). Bounded by time, not
  // rounds: a round returns at once while a timer is due, so rounds can be much shorter than
  // 10 ms, and the writer's retry waits 20 ms.
  bool SpinUntil(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{2};
    while (!done() && std::chrono::steady_clock::now() < deadline) Spin();
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
  std::unique_ptr<JournalAppendBatcher> batcher_;
  std::unique_ptr<journal::JournalWriter> writer_;
  std::unique_ptr<journal::JournalWriter>
      second_;  // another experiment's journal, if a test adds it
};

TEST_F(BusJournalSinkTest, ABatchGoesAsOnePartAndItsAckMakesItDurable) {
  // Two records: one JournalAppendMany whose one part, for journal "exp1" from seq 1, carries
  // both framed records; the store's ack (last_seq 2) makes them durable and runs the waiting
  // effect.
  writer_->Append(Rec(1));
  writer_->Append(Rec(2));
  bool ran = false;
  writer_->AfterDurable([&] { ran = true; });
  ASSERT_TRUE(WaitForRequests(1));
  ASSERT_EQ(store_.requests[0].append.parts.size(), 1u);
  const proto::JournalAppendPart& part = store_.requests[0].append.parts[0];
  EXPECT_EQ(part.experiment, "exp1");
  EXPECT_EQ(part.expected_first_seq, 1u);
  EXPECT_EQ(Ns(part.records), (std::vector<int>{1, 2}));
  store_.Ack(0);
  ASSERT_TRUE(SpinUntil([&] { return ran; }));
  EXPECT_EQ(writer_->durable(), 2u);
  EXPECT_EQ(writer_->store_seq(), 2u);
}

TEST_F(BusJournalSinkTest, AnErrorReplyIsRetriedWithTheSameRecords) {
  // The store answers ErrorReply: the writer resends the same batch after its retry delay.
  writer_->Append(Rec(1));
  ASSERT_TRUE(WaitForRequests(1));
  store_.Fail(0, Status::IoError("rocksdb: disk full"));
  ASSERT_TRUE(WaitForRequests(2));
  EXPECT_EQ(writer_->durable(), 0u);
  EXPECT_EQ(Ns(store_.requests[1].append.parts.at(0).records), (std::vector<int>{1}));
  EXPECT_EQ(store_.requests[1].append.parts.at(0).expected_first_seq, 1u);
  store_.Ack(1);
  ASSERT_TRUE(SpinUntil([&] { return writer_->durable() == 1; }));
  EXPECT_EQ(Ns(store_.journal), (std::vector<int>{1}));
}

TEST_F(BusJournalSinkTest, MalformedAckIsNotTakenAsDurable) {
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
    p.pack(std::string(proto::JournalAppendManyAck::kType));
    p.pack(std::string("id"));
    p.pack(id);
    p.pack(std::string("parts"));
    p.pack(std::string("one"));
    return std::string(buf.data(), buf.size());
  });
  ASSERT_TRUE(WaitForRequests(2));
  EXPECT_FALSE(ran);
  EXPECT_EQ(Ns(store_.requests[1].append.parts.at(0).records), (std::vector<int>{1}));
  store_.Ack(1);
  ASSERT_TRUE(SpinUntil([&] { return ran; }));
}

TEST_F(BusJournalSinkTest, TwoJournalsOfARoundShareOneRequestAndAFencedPartIsRetriedAlone) {
  // Two experiments' writers append in the same round: one request with a part each. The store
  // fences exp2's part: exp1's records are durable, exp2's writer retries its batch alone (a
  // request of one part, same records, same expected seq) and it is durable once acked.
  second_ = NewWriter("exp2");
  writer_->Append(Rec(1));
  second_->Append(Rec(20));
  second_->Append(Rec(21));
  ASSERT_TRUE(WaitForRequests(1));
  ASSERT_EQ(store_.requests[0].append.parts.size(), 2u);
  EXPECT_EQ(store_.requests[0].append.parts[0].experiment, "exp1");
  EXPECT_EQ(store_.requests[0].append.parts[1].experiment, "exp2");
  store_.Ack(0, /*fenced=*/1);
  ASSERT_TRUE(SpinUntil([&] { return writer_->durable() == 1; }));
  ASSERT_TRUE(WaitForRequests(2));
  EXPECT_EQ(second_->durable(), 0u);
  EXPECT_EQ(second_->state(), journal::JournalWriter::State::kFailing);
  ASSERT_EQ(store_.requests[1].append.parts.size(), 1u);
  EXPECT_EQ(store_.requests[1].append.parts[0].experiment, "exp2");
  EXPECT_EQ(store_.requests[1].append.parts[0].expected_first_seq, 1u);
  EXPECT_EQ(Ns(store_.requests[1].append.parts[0].records), (std::vector<int>{20, 21}));
  store_.Ack(1);
  ASSERT_TRUE(SpinUntil([&] { return second_->durable() == 2; }));
  EXPECT_EQ(Ns(store_.journal), (std::vector<int>{1, 20, 21}));
}

}  // namespace
}  // namespace tunebus
