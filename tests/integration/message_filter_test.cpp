// MessageFilter (message_filter.hpp) on its own, between a DEALER client with the routing id
// "w1" and a ROUTER playing the service, both in this process on loopback: everything passes
// both ways in order with the client's id kept; a drop rule discards exactly the messages of
// its type after its skip and up to its count; a duplicate rule forwards one message twice; a
// delay rule holds one message for its delay while the ones behind it pass; WaitFired fails
// naming the rule when it never acts. Every wait is on a message or on the rule, bounded.
#include "tests/integration/message_filter.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "proto/codec.hpp"
#include "proto/worker.hpp"

namespace tunebus::testing {
namespace {

using namespace std::chrono_literals;

constexpr auto kWait = 5s;  // real time a message may take before the test fails

// One received message: the routing id the service saw ("" on the client) and its type and id.
struct Got {
  std::string peer;
  std::string type;
  uint64_t id = 0;
};

// The next message on `socket` within `wait`, or nullopt. `router`: the first frame is the
// sender's routing id.
std::optional<Got> Next(zmq::socket_t& socket, bool router, std::chrono::milliseconds wait) {
  zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, wait) == 0) return std::nullopt;
  std::vector<zmq::message_t> frames;
  bool more = true;
  while (more) {
    zmq::message_t frame;
    EXPECT_TRUE(socket.recv(frame, zmq::recv_flags::none));
    more = frame.more();
    frames.push_back(std::move(frame));
  }
  Got got;
  if (router) got.peer = frames.front().to_string();
  const proto::PeekedEnvelope env = proto::PeekEnvelope(frames.back().data(), frames.back().size());
  got.type = env.type;
  got.id = env.id;
  return got;
}

template <typename M>
std::string Message(uint64_t id) {
  M m;
  m.id = id;
  return proto::Encode(m);
}

class MessageFilterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    service_.set(zmq::sockopt::linger, 0);
    service_.bind("tcp://127.0.0.1:*");
    filter_.Connect(service_.get(zmq::sockopt::last_endpoint));
    client_.set(zmq::sockopt::linger, 0);
    client_.set(zmq::sockopt::routing_id, "w1");
    client_.connect(filter_.endpoint());
  }

  void FromClient(const std::string& payload) {
    ASSERT_TRUE(client_.send(zmq::buffer(payload), zmq::send_flags::none));
  }
  void ToClient(const std::string& payload) {
    ASSERT_TRUE(service_.send(zmq::str_buffer("w1"), zmq::send_flags::sndmore));
    ASSERT_TRUE(service_.send(zmq::buffer(payload), zmq::send_flags::none));
  }
  // "type:id" of each message the service gets until one of `last_type` came (within kWait each).
  std::vector<std::string> ServiceGetsThrough(const std::string& last_type) {
    std::vector<std::string> got;
    while (auto m = Next(service_, true, kWait)) {
      EXPECT_EQ(m->peer, "w1");
      got.push_back(m->type + ":" + std::to_string(m->id));
      if (m->type == last_type) return got;
    }
    ADD_FAILURE() << "no " << last_type << " reached the service; it got " << got.size();
    return got;
  }
  std::vector<std::string> ClientGetsThrough(const std::string& last_type) {
    std::vector<std::string> got;
    while (auto m = Next(client_, false, kWait)) {
      got.push_back(m->type + ":" + std::to_string(m->id));
      if (m->type == last_type) return got;
    }
    ADD_FAILURE() << "no " << last_type << " reached the client; it got " << got.size();
    return got;
  }

  zmq::context_t ctx_;
  zmq::socket_t service_{ctx_, zmq::socket_type::router};
  zmq::socket_t client_{ctx_, zmq::socket_type::dealer};
  MessageFilter filter_{"test"};
};

TEST_F(MessageFilterTest, ForwardsBothWaysInOrderKeepingTheClientsRoutingId) {
  for (uint64_t id = 1; id <= 3; ++id) FromClient(Message<proto::ReportResults>(id));
  FromClient(Message<proto::WorkerHeartbeat>(4));
  EXPECT_EQ(ServiceGetsThrough(proto::WorkerHeartbeat::kType),
            (std::vector<std::string>{"report_results:1", "report_results:2", "report_results:3",
                                      "worker_heartbeat:4"}));
  ToClient(Message<proto::Decisions>(5));
  ToClient(Message<proto::StopTrialRequest>(6));
  EXPECT_EQ(ClientGetsThrough(proto::StopTrialRequest::kType),
            (std::vector<std::string>{"decisions:5", "stop_trial:6"}));
  EXPECT_EQ(filter_.Count(FilterDirection::kToService, "report_results"), 3);
  EXPECT_EQ(filter_.Count(FilterDirection::kToClient, "decisions"), 1);
}

TEST_F(MessageFilterTest, DropRuleDiscardsItsCountOfItsTypeAfterItsSkip) {
  // Drop the 2nd and 3rd report_results; heartbeats between them and the 1st, 4th and 5th pass.
  const int rule = filter_.Add({.direction = FilterDirection::kToService,
                                .type = proto::ReportResults::kType,
                                .action = FilterAction::kDrop,
                                .count = 2,
                                .skip = 1});
  for (uint64_t id = 1; id <= 5; ++id) {
    FromClient(Message<proto::ReportResults>(id));
    FromClient(Message<proto::WorkerHeartbeat>(10 + id));
  }
  FromClient(Message<proto::TrialExited>(99));
  EXPECT_EQ(
      ServiceGetsThrough(proto::TrialExited::kType),
      (std::vector<std::string>{"report_results:1", "worker_heartbeat:11", "worker_heartbeat:12",
                                "worker_heartbeat:13", "report_results:4", "worker_heartbeat:14",
                                "report_results:5", "worker_heartbeat:15", "trial_exited:99"}));
  EXPECT_TRUE(filter_.WaitFired(rule, kWait));
  EXPECT_EQ(filter_.Fired(rule), 2);
  EXPECT_EQ(filter_.Count(FilterDirection::kToService, "report_results"), 5);
}

TEST_F(MessageFilterTest, DuplicateRuleForwardsOneMessageTwice) {
  const int rule = filter_.Add({.direction = FilterDirection::kToClient,
                                .type = proto::Decisions::kType,
                                .action = FilterAction::kDuplicate});
  FromClient(Message<proto::RegisterWorker>(0));  // the filter opens w1's link to the service
  ASSERT_EQ(ServiceGetsThrough(proto::RegisterWorker::kType).size(), 1u);
  ToClient(Message<proto::Decisions>(1));
  ToClient(Message<proto::Decisions>(2));
  ToClient(Message<proto::StopTrialRequest>(3));
  EXPECT_EQ(
      ClientGetsThrough(proto::StopTrialRequest::kType),
      (std::vector<std::string>{"decisions:1", "decisions:1", "decisions:2", "stop_trial:3"}));
  EXPECT_EQ(filter_.Fired(rule), 1);
}

TEST_F(MessageFilterTest, DelayRuleHoldsOneMessageWhileTheOnesBehindItPass) {
  // The first heartbeat is held 300 ms: the second overtakes it, and it arrives no earlier.
  const int rule = filter_.Add({.direction = FilterDirection::kToService,
                                .type = proto::WorkerHeartbeat::kType,
                                .action = FilterAction::kDelay,
                                .delay = 300ms});
  const auto sent = std::chrono::steady_clock::now();
  FromClient(Message<proto::WorkerHeartbeat>(1));
  FromClient(Message<proto::WorkerHeartbeat>(2));
  ASSERT_TRUE(filter_.WaitFired(rule, kWait));
  EXPECT_EQ(ServiceGetsThrough(proto::WorkerHeartbeat::kType),
            (std::vector<std::string>{"worker_heartbeat:2"}));
  EXPECT_EQ(ServiceGetsThrough(proto::WorkerHeartbeat::kType),
            (std::vector<std::string>{"worker_heartbeat:1"}));
  EXPECT_GE(std::chrono::steady_clock::now() - sent, 300ms);
}

TEST_F(MessageFilterTest, WaitFiredFailsNamingTheRuleThatNeverActed) {
  const int rule = filter_.Add({.direction = FilterDirection::kToClient,
                                .type = proto::Decisions::kType,
                                .action = FilterAction::kDrop});
  FromClient(Message<proto::WorkerHeartbeat>(1));
  ASSERT_EQ(ServiceGetsThrough(proto::WorkerHeartbeat::kType).size(), 1u);
  const ::testing::AssertionResult fired = filter_.WaitFired(rule, 50ms);
  EXPECT_FALSE(fired);
  EXPECT_NE(std::string(fired.message()).find("drop decisions to the client"), std::string::npos)
      << fired.message();
}

}  // namespace
}  // namespace tunebus::testing
