// Tests for WorkerOutbox over a real ROUTER/DEALER pair (inproc): what a round queues for a
// worker leaves at Flush in the order it was made, consecutive decisions as one Decisions
// message; nothing leaves before Flush; a message for a worker that is not connected is
// reported unsent to its callback; Send goes out at once, after what was queued.
#include "services/scheduler/workers/worker_outbox.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "libs/bus/socket.hpp"
#include "proto/codec.hpp"

namespace tunebus {
namespace {

class WorkerOutboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto router = bus::Bind(ctx_, zmq::socket_type::router, "inproc://outbox-test",
                            *bus::Security::Plaintext(), {"test", bus::RoleSet::Any()});
    ASSERT_TRUE(router.ok()) << router.status().ToString();
    router_ = std::move(*router);
    auto dealer = bus::Connect(ctx_, zmq::socket_type::dealer, "inproc://outbox-test",
                               *bus::Security::Plaintext(), {"test", ""}, {.routing_id = "w1"});
    ASSERT_TRUE(dealer.ok()) << dealer.status().ToString();
    dealer_ = std::move(*dealer);
    // The ROUTER learns the worker's routing id from its first message.
    dealer_.send(zmq::str_buffer("hello"), zmq::send_flags::none);
    zmq::message_t id, body;
    ASSERT_TRUE(router_.recv(id));
    ASSERT_TRUE(router_.recv(body));
  }

  // The types of the messages w1 has received (decisions as "decisions:<seqs>"): those waiting
  // now, and while fewer than `at_least` came, the next ones within 5 s each.
  std::vector<std::string> Received(size_t at_least = 0) {
    std::vector<std::string> out;
    zmq::message_t m;
    zmq::pollitem_t item{dealer_.handle(), 0, ZMQ_POLLIN, 0};
    while (dealer_.recv(m, zmq::recv_flags::dontwait) ||
           (out.size() < at_least && zmq::poll(&item, 1, std::chrono::milliseconds(5000)) > 0 &&
            dealer_.recv(m, zmq::recv_flags::dontwait))) {
      auto d = proto::Decode(m.data(), m.size());
      EXPECT_TRUE(d.ok());
      std::string what = d->type();
      if (what == proto::Decisions::kType) {
        what += ":";
        const Result<proto::Decisions> batch = d->As<proto::Decisions>();
        EXPECT_TRUE(batch.ok());
        const std::vector<proto::DecisionItem> items =
            batch.ok() ? batch->decisions : std::vector<proto::DecisionItem>{};
        for (const proto::DecisionItem& item : items) what += std::to_string(item.seq);
      }
      out.push_back(what);
    }
    return out;
  }

  static proto::DecisionItem Decision(int64_t seq) {
    return proto::DecisionItem{"t1", 1, seq, "continue"};
  }
  static std::string Stop() {
    proto::StopTrialRequest stop;
    stop.trial_id = "t2";
    stop.attempt = 1;
    return proto::Encode(stop);
  }

  zmq::context_t ctx_;
  zmq::socket_t router_, dealer_;
};

TEST_F(WorkerOutboxTest, ARoundLeavesAtFlushInOrderWithRunsOfDecisionsMerged) {
  WorkerOutbox outbox(router_);
  std::vector<bool> sent;
  auto record = [&](bool ok, std::string payload) {
    sent.push_back(ok);
    EXPECT_EQ(payload, Stop());  // handed back
  };
  outbox.QueueDecision("w1", Decision(1));
  outbox.QueueDecision("w1", Decision(2));
  outbox.Queue("w1", Stop(), record);
  outbox.QueueDecision("w1", Decision(3));
  outbox.Queue("nobody", Stop(), record);
  // Queue sends nothing (the outbox has no thread of its own, and what an inproc send passes
  // is readable at once).
  EXPECT_TRUE(Received().empty());  // nothing before Flush
  EXPECT_TRUE(sent.empty());

  outbox.Flush();
  EXPECT_EQ(Received(3), (std::vector<std::string>{"decisions:12", "stop_trial", "decisions:3"}));
  EXPECT_EQ(sent, (std::vector<bool>{true, false}));  // w1's stop left; "nobody" is not connected

  outbox.Flush();  // nothing is left: the next message w1 gets is one sent after this Flush
  EXPECT_TRUE(outbox.Send("w1", Stop()));
  EXPECT_EQ(Received(1), (std::vector<std::string>{"stop_trial"}));
}

TEST_F(WorkerOutboxTest, SendLeavesAtOnceAfterWhatIsQueued) {
  WorkerOutbox outbox(router_);
  outbox.QueueDecision("w1", Decision(7));
  EXPECT_TRUE(outbox.Send("w1", Stop()));
  EXPECT_FALSE(outbox.Send("nobody", Stop()));
  EXPECT_EQ(Received(2), (std::vector<std::string>{"decisions:7", "stop_trial"}));
}

}  // namespace
}  // namespace tunebus
