// RequestClient (libs/bus/request_client.hpp) against a test-owned ROUTER on inproc, the test
// thread driving the loop with RunOnce: a client may be destroyed while the loop runs, also
// from one of its own callbacks, as the scheduler frees an ended experiment's searcher and
// driver links (ExperimentRegistry::ReleaseFinished).
#include "libs/bus/request_client.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "libs/bus/event_loop.hpp"
#include "libs/bus/socket.hpp"
#include "proto/codec.hpp"

namespace tunebus {
namespace {

class RequestClientTest : public ::testing::Test {
 protected:
  RequestClientTest() {
    auto router = bus::Bind(ctx_, zmq::socket_type::router, kEndpoint, *bus::Security::Plaintext(),
                            {"test", bus::RoleSet::Any()});
    EXPECT_TRUE(router.ok()) << router.status().ToString();
    router_ = std::move(*router);
    auto dealer = bus::Connect(ctx_, zmq::socket_type::dealer, kEndpoint,
                               *bus::Security::Plaintext(), {"test", ""});
    EXPECT_TRUE(dealer.ok()) << dealer.status().ToString();
    client_ = std::make_unique<bus::RequestClient>(loop_, std::move(*dealer), "peer");
  }

  // Sends a request whose callback records its code and then runs `then`.
  void Ask(std::function<void()> then = {}) {
    proto::ErrorReply request;  // any enveloped message: the peer answers by id
    client_->Request(request, [this, then](Result<proto::Decoded> r) {
      answered_.push_back(r.ok() ? "ok" : StatusCodeName(r.status().code()));
      if (then) then();
    });
  }

  // Takes `n` requests off the ROUTER (at most 2 s), then answers each with an ErrorReply
  // `unavailable` of its id, all queued before the loop reads any.
  void AnswerAll(size_t n) {
    std::vector<bus::Incoming> requests;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{2};
    while (requests.size() < n && std::chrono::steady_clock::now() < deadline) {
      bus::Incoming in;
      if (bus::Receive(router_, in)) {
        requests.push_back(std::move(in));
      } else {
        loop_.RunOnce(bus::Duration{5});
      }
    }
    ASSERT_EQ(requests.size(), n);
    for (const bus::Incoming& in : requests) {
      auto d = proto::Decode(in.payload.data(), in.payload.size());
      ASSERT_TRUE(d.ok());
      proto::ErrorReply reply;
      reply.id = d->id();
      reply.code = "unavailable";
      ASSERT_TRUE(bus::Reply(router_, in, proto::Encode(reply)));
    }
  }

  static constexpr const char* kEndpoint = "inproc://request-client-test";
  zmq::context_t ctx_;
  bus::EventLoop loop_;
  zmq::socket_t router_;
  std::unique_ptr<bus::RequestClient> client_;
  std::vector<std::string> answered_;
};

// Destroyed with requests in flight: its socket leaves the loop at once and none of its
// callbacks runs, not at a reply and not at a timeout.
TEST_F(RequestClientTest, ADestroyedClientLeavesTheLoopAndCallsNothing) {
  EXPECT_EQ(loop_.sources(), 1u);
  Ask();
  Ask();
  AnswerAll(2);
  client_.reset();
  EXPECT_EQ(loop_.sources(), 0u);
  for (int round = 0; round < 20; ++round) ASSERT_TRUE(loop_.RunOnce(bus::Duration{5}));
  EXPECT_TRUE(answered_.empty());
}

// Two replies are waiting in one read; the first one's callback destroys the client: the second
// is not read or called, and the loop goes on polling only what is left.
TEST_F(RequestClientTest, ACallbackMayDestroyItsOwnClient) {
  Ask([this] { client_.reset(); });
  Ask();
  AnswerAll(2);
  for (int round = 0; round < 200 && answered_.empty(); ++round) loop_.RunOnce(bus::Duration{5});
  EXPECT_EQ(answered_, (std::vector<std::string>{"unavailable"}));
  EXPECT_EQ(client_, nullptr);
  EXPECT_EQ(loop_.sources(), 0u);
  for (int round = 0; round < 20; ++round) ASSERT_TRUE(loop_.RunOnce(bus::Duration{5}));
  EXPECT_EQ(answered_.size(), 1u);
}

}  // namespace
}  // namespace tunebus
