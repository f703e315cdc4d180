// Tests for PlacementBatcher (services/scheduler/workers/placement_batcher.hpp): several owners'
// runs of allocations and releases leave as one request per step (releases and allocations
// alternate), each owner's runs in their order, and each run's callback gets its own items' answers
// or its request's error. Against a resource-manager stand-in (a test-owned ROUTER on inproc) that
// the test answers; the test thread drives the EventLoop with RunOnce.
#include "services/scheduler/workers/placement_batcher.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "libs/bus/event_loop.hpp"
#include "libs/bus/request_client.hpp"
#include "libs/bus/socket.hpp"
#include "proto/codec.hpp"

namespace tunebus {
namespace {

int g_endpoint_counter = 0;

proto::AllocateItem Alloc(const std::string& trial) { return {trial, 1, {{"cpu", 1000}}}; }
proto::ReleaseItem Rel(const std::string& trial) { return {trial, 1}; }

// A request the stand-in received: its type, its items' trial ids, and where to answer.
struct Received {
  std::vector<std::string> route;
  uint64_t id = 0;
  std::string type;
  std::vector<std::string> trials;
};

class PlacementBatcherTest : public ::testing::Test {
 protected:
  PlacementBatcherTest()
      : endpoint_("inproc://placement-batcher-test-" + std::to_string(g_endpoint_counter++)) {
    auto router = bus::Bind(ctx_, zmq::socket_type::router, endpoint_, *bus::Security::Plaintext(),
                            {"test", bus::RoleSet::Any()});
    EXPECT_TRUE(router.ok()) << router.status().ToString();
    router_ = std::move(*router);
    auto dealer = bus::Connect(ctx_, zmq::socket_type::dealer, endpoint_,
                               *bus::Security::Plaintext(), {"test", ""});
    EXPECT_TRUE(dealer.ok()) << dealer.status().ToString();
    client_ = std::make_unique<bus::RequestClient>(loop_, std::move(*dealer), "resource-manager");
    batcher_ = std::make_unique<PlacementBatcher>(*client_);
  }

  // Spins the loop and takes requests until `n` arrived (at most 2 s).
  std::vector<Received> Take(size_t n) {
    std::vector<Received> out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{2};
    while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
      loop_.RunOnce(bus::Duration{10});
      bus::Incoming in;
      while (bus::Receive(router_, in)) {
        auto d = proto::Decode(in.payload.data(), in.payload.size());
        EXPECT_TRUE(d.ok());
        Received r{in.route, d->id(), d->type(), {}};
        if (d->type() == proto::AllocateBatch::kType) {
          Result<proto::AllocateBatch> m = d->As<proto::AllocateBatch>();
          EXPECT_TRUE(m.ok());
          if (m.ok())
            for (const auto& item : m->items) r.trials.push_back(item.trial_id);
        } else {
          Result<proto::ReleaseBatch> m = d->As<proto::ReleaseBatch>();
          EXPECT_TRUE(m.ok());
          if (m.ok())
            for (const auto& item : m->items) r.trials.push_back(item.trial_id);
        }
        out.push_back(std::move(r));
      }
    }
    return out;
  }
  // Grants every item of allocation request `r` on worker "w" (only `grant` items when given).
  void Grant(const Received& r, std::optional<size_t> items = std::nullopt) {
    proto::AllocateBatchReply reply;
    reply.id = r.id;
    for (size_t i = 0; i < items.value_or(r.trials.size()); ++i)
      reply.items.push_back({r.trials[i], 1, true, "w", {}, false, ""});
    Answer(r, proto::Encode(reply));
  }
  void Answer(const Received& r, const std::string& payload) {
    bus::Incoming to;
    to.route = r.route;
    ASSERT_TRUE(bus::Reply(router_, to, payload));
  }
  void SpinUntil(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{2};
    while (!done() && std::chrono::steady_clock::now() < deadline) loop_.RunOnce(bus::Duration{10});
  }

  zmq::context_t ctx_;
  std::string endpoint_;
  zmq::socket_t router_;
  bus::EventLoop loop_;
  std::unique_ptr<bus::RequestClient> client_;
  std::unique_ptr<PlacementBatcher> batcher_;
};

// The trial ids a run's callback got, or "error: <message>".
using Answers = std::vector<std::string>;
PlacementBatcher::AllocateDone Collect(Answers& out) {
  return [&out](Result<std::vector<proto::Allocation>> r) {
    if (!r.ok()) return out.push_back("error: " + r.status().message());
    for (const auto& a : *r) out.push_back(a.trial_id + (a.granted ? "@" + a.worker_id : ""));
  };
}

TEST_F(PlacementBatcherTest, OwnersRunsMergeIntoOneRequestPerKindAndPassInTheirOrder) {
  // Owner A: a release, then two allocation calls (one run). Owner B: an allocation, a release.
  // Step 1 sends A's release, step 2 A's and B's allocations, step 3 B's release: three requests
  // where one per call would be five, and B's release never overtakes B's allocation.
  int a = 0, b = 0;
  Answers a_alloc, b_alloc;
  int released = 0;
  batcher_->Release(&a, {Rel("a0")}, [&](const Status& s) { released += s.ok(); });
  batcher_->Allocate(&a, {Alloc("a1")}, Collect(a_alloc));
  batcher_->Allocate(&b, {Alloc("b1"), Alloc("b2")}, Collect(b_alloc));
  batcher_->Allocate(&a, {Alloc("a2")}, Collect(a_alloc));
  batcher_->Release(&b, {Rel("b0")}, [&](const Status& s) { released += s.ok(); });
  batcher_->Send();
  EXPECT_EQ(batcher_->requests_sent(), 3u);
  std::vector<Received> got = Take(3);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].type, proto::ReleaseBatch::kType);
  EXPECT_EQ(got[0].trials, (std::vector<std::string>{"a0"}));
  EXPECT_EQ(got[1].type, proto::AllocateBatch::kType);
  EXPECT_EQ(got[1].trials, (std::vector<std::string>{"a1", "a2", "b1", "b2"}));
  EXPECT_EQ(got[2].type, proto::ReleaseBatch::kType);
  EXPECT_EQ(got[2].trials, (std::vector<std::string>{"b0"}));
  Grant(got[1]);
  for (size_t i : {0, 2}) {
    proto::ReleaseBatchReply reply;
    reply.id = got[i].id;
    reply.released = {true};
    Answer(got[i], proto::Encode(reply));
  }
  SpinUntil([&] { return released == 2 && a_alloc.size() == 2 && b_alloc.size() == 2; });
  EXPECT_EQ(a_alloc, (Answers{"a1@w", "a2@w"}));  // each caller its own slice
  EXPECT_EQ(b_alloc, (Answers{"b1@w", "b2@w"}));
  EXPECT_EQ(released, 2);
}

TEST_F(PlacementBatcherTest, ARequestsErrorOrShortReplyReachesEveryRunItCarried) {
  // An ErrorReply to the merged allocation fails both owners' runs; a reply with fewer items than
  // asked fails them too (no caller gets another's answers).
  int a = 0, b = 0;
  Answers a_alloc, b_alloc;
  batcher_->Allocate(&a, {Alloc("a1")}, Collect(a_alloc));
  batcher_->Allocate(&b, {Alloc("b1")}, Collect(b_alloc));
  batcher_->Send();
  std::vector<Received> got = Take(1);
  ASSERT_EQ(got.size(), 1u);
  Answer(got[0], proto::Encode(proto::MakeError(Status::Unavailable("resource-manager restarting"),
                                                got[0].id, proto::AllocateBatch::kType)));
  SpinUntil([&] { return a_alloc.size() == 1 && b_alloc.size() == 1; });
  EXPECT_EQ(a_alloc, (Answers{"error: resource-manager restarting"}));
  EXPECT_EQ(b_alloc, (Answers{"error: resource-manager restarting"}));

  a_alloc.clear();
  b_alloc.clear();
  batcher_->Allocate(&a, {Alloc("a2")}, Collect(a_alloc));
  batcher_->Allocate(&b, {Alloc("b2")}, Collect(b_alloc));
  batcher_->Send();
  got = Take(1);
  ASSERT_EQ(got.size(), 1u);
  Grant(got[0], /*items=*/1);
  SpinUntil([&] { return a_alloc.size() == 1 && b_alloc.size() == 1; });
  EXPECT_EQ(a_alloc, (Answers{"error: allocate_batch_reply has 1 items for 2"}));
  EXPECT_EQ(b_alloc, a_alloc);
}

TEST_F(PlacementBatcherTest, APassOverTheItemLimitIsSplitBetweenRuns) {
  // Two owners' allocations of 6,000 items each: 12,000 > kMaxPlacementBatchItems, so the step
  // goes as two requests, split between the runs; nothing is sent twice or lost.
  int a = 0, b = 0;
  Answers a_alloc, b_alloc;
  std::vector<proto::AllocateItem> items_a, items_b;
  for (int i = 0; i < 6000; ++i) {
    items_a.push_back(Alloc("a" + std::to_string(i)));
    items_b.push_back(Alloc("b" + std::to_string(i)));
  }
  batcher_->Allocate(&a, std::move(items_a), Collect(a_alloc));
  batcher_->Allocate(&b, std::move(items_b), Collect(b_alloc));
  batcher_->Send();
  std::vector<Received> got = Take(2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].trials.size(), 6000u);
  EXPECT_EQ(got[0].trials.front(), "a0");
  EXPECT_EQ(got[1].trials.front(), "b0");
  for (const Received& r : got) Grant(r);
  SpinUntil([&] { return a_alloc.size() == 6000 && b_alloc.size() == 6000; });
  EXPECT_EQ(a_alloc.back(), "a5999@w");
  EXPECT_EQ(b_alloc.back(), "b5999@w");
  batcher_->Send();  // nothing queued: nothing sent
  EXPECT_EQ(batcher_->requests_sent(), 2u);
}

}  // namespace
}  // namespace tunebus
