// ResourceManager (services/resource-manager): the real service on tcp://127.0.0.1:0 in a
// thread, driven over the wire by a DEALER (as workers and the scheduler do) and a SUB.
#include "services/resource-manager/resource_manager.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "libs/bus/socket.hpp"
#include "proto/resources.hpp"

namespace tunebus {
namespace {

using namespace std::chrono_literals;
constexpr int64_t kScale = Resources::kScale;

/// A msgpack map of string keys to ints or strings, for hand-made (bad) messages.
std::string PackMap(const std::map<std::string, std::variant<int64_t, std::string>>& fields) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(uint32_t(fields.size()));
  for (const auto& [k, v] : fields) {
    pk.pack(k);
    std::visit([&pk](const auto& x) { pk.pack(x); }, v);
  }
  return std::string(buf.data(), buf.size());
}

class ResourceManagerTest : public ::testing::Test {
 protected:
  void Start(int64_t heartbeat_interval_ms, const Clock* clock = &Clock::Real()) {
    ResourceManagerOptions o;
    o.clock = clock;
    o.endpoint = "tcp://127.0.0.1:0";
    o.events_endpoint = "tcp://127.0.0.1:0";
    o.heartbeat_interval_ms = heartbeat_interval_ms;
    o.liveness = 3;
    auto rm = ResourceManager::Create(ctx_, o);
    ASSERT_TRUE(rm.ok()) << rm.status().ToString();
    rm_ = std::move(*rm);
    auto dealer = bus::Connect(ctx_, zmq::socket_type::dealer, rm_->endpoint(),
                               *bus::Security::Plaintext(), {"test", ""});
    ASSERT_TRUE(dealer.ok());
    dealer_ = std::move(*dealer);
    thread_ = std::thread([this] { rm_->Run(); });
  }
  void TearDown() override {
    if (rm_) rm_->Stop();
    if (thread_.joinable()) thread_.join();
  }

  /// Sends raw bytes and returns the decoded reply (fails the test after 3 s).
  Result<proto::Decoded> RoundTrip(const std::string& bytes) {
    EXPECT_TRUE(bus::Send(dealer_, bytes));
    return NextReply();
  }
  Result<proto::Decoded> NextReply() {
    zmq::pollitem_t item{dealer_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, 3000ms) == 0) return Status::Unavailable("no reply within 3 s");
    bus::Incoming in;
    if (!bus::Receive(dealer_, in)) return Status::Unavailable("no reply frame");
    return proto::Decode(in.payload.data(), in.payload.size());
  }
  /// Sends `request` and converts the reply to `Reply` (an ErrorReply fails the test).
  template <typename Reply, typename Request>
  Reply Call(Request request) {
    request.id = next_id_++;
    Result<proto::Decoded> d = RoundTrip(proto::Encode(request));
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    if (!d.ok()) return Reply{};
    const proto::Decoded& msg = *d;
    if (msg.type() == proto::ErrorReply::kType) {
      ADD_FAILURE() << request.type << " failed: " << msg.As<proto::ErrorReply>()->message;
      return Reply{};
    }
    EXPECT_EQ(msg.type(), Reply::kType);
    EXPECT_EQ(msg.id(), request.id);
    auto r = msg.template As<Reply>();
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : Reply{};
  }
  proto::ErrorReply ExpectError(const std::string& bytes) {
    auto d = RoundTrip(bytes);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    if (!d.ok()) return {};
    EXPECT_EQ(d->type(), proto::ErrorReply::kType);
    auto e = d->As<proto::ErrorReply>();
    EXPECT_TRUE(e.ok());
    return e.ok() ? *e : proto::ErrorReply{};
  }

  proto::RegisterNodeAck Register(const std::string& worker, int64_t cpus, int64_t gpus = 0) {
    proto::RegisterNode r;
    r.worker_id = worker;
    r.hostname = worker + ".local";
    r.capacity = {{"cpu", cpus * kScale}};
    if (gpus > 0) r.capacity["gpu"] = gpus * kScale;
    return Call<proto::RegisterNodeAck>(r);
  }
  proto::AllocateReply Allocate(const std::string& trial, proto::ResourceUnits ask) {
    proto::Allocate a;
    a.trial_id = trial;
    a.attempt = 1;
    a.request = std::move(ask);
    return Call<proto::AllocateReply>(a);
  }
  bool Release(const std::string& trial) {
    proto::Release r;
    r.trial_id = trial;
    r.attempt = 1;
    return Call<proto::ReleaseReply>(r).released;
  }
  void Heartbeat(const std::string& worker) {
    proto::NodeHeartbeat hb;
    hb.worker_id = worker;
    EXPECT_TRUE(bus::SendMessage(dealer_, hb));
  }
  proto::NodeView ViewOf(const std::string& worker) {
    for (const auto& n : Call<proto::ClusterView>(proto::GetClusterView{}).nodes) {
      if (n.worker_id == worker) return n;
    }
    ADD_FAILURE() << "no node " << worker << " in the cluster view";
    return {};
  }

  ManualClock manual_clock_;  // for tests that Start(..., &manual_clock_): outlives rm_
  zmq::context_t ctx_;
  std::unique_ptr<ResourceManager> rm_;
  zmq::socket_t dealer_;
  std::thread thread_;
  uint64_t next_id_ = 1;
};

/// Subscribes to node events and reads them with a deadline.
class EventReader {
 public:
  EventReader(zmq::context_t& ctx, const std::string& endpoint) : sub_(ctx, zmq::socket_type::sub) {
    sub_.set(zmq::sockopt::linger, 0);
    sub_.set(zmq::sockopt::subscribe, "node");
    sub_.connect(endpoint);
  }
  /// The next event matching `pred` within `timeout`, skipping others; nullopt on timeout.
  template <typename Pred>
  std::optional<proto::NodeEvent> WaitFor(Pred pred, std::chrono::milliseconds timeout,
                                          const std::function<void()>& while_waiting = {}) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (while_waiting) while_waiting();
      zmq::pollitem_t item{sub_.handle(), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, 10ms) == 0) continue;
      zmq::message_t topic, payload;
      EXPECT_TRUE(sub_.recv(topic));
      EXPECT_EQ(topic.to_string(), "node");
      EXPECT_TRUE(topic.more());
      EXPECT_TRUE(sub_.recv(payload));
      auto d = proto::Decode(payload.data(), payload.size());
      EXPECT_TRUE(d.ok());
      if (!d.ok()) continue;
      auto e = d->As<proto::NodeEvent>();
      EXPECT_TRUE(e.ok());
      if (e.ok() && pred(*e)) return *e;
    }
    return std::nullopt;
  }

 private:
  zmq::socket_t sub_;
};

TEST_F(ResourceManagerTest, AllocateAndReleaseOverTheWireShowInTheClusterView) {
  // Two workers register; a GPU trial lands on the GPU worker, the view shows it committed,
  // and a release returns it exactly once.
  Start(1000);
  EXPECT_EQ(Register("w1", 4, 1).heartbeat_interval_ms, 1000);
  Register("w2", 8);

  auto a = Allocate("t1", {{"cpu", 2 * kScale}, {"gpu", kScale}});
  EXPECT_TRUE(a.granted) << a.reason;
  EXPECT_EQ(a.trial_id, "t1");
  EXPECT_EQ(a.worker_id, "w1");
  EXPECT_EQ(a.gpu_ids, std::vector<std::string>{"0"});
  auto view = ViewOf("w1");
  EXPECT_EQ(view.committed, (proto::ResourceUnits{{"cpu", 2 * kScale}, {"gpu", kScale}}));
  EXPECT_EQ(view.trials, std::vector<std::string>{"t1/1"});
  EXPECT_EQ(view.hostname, "w1.local");

  auto wait = Allocate("t2", {{"gpu", kScale}});
  EXPECT_FALSE(wait.granted);
  EXPECT_FALSE(wait.infeasible);
  auto never = Allocate("t3", {{"cpu", 16 * kScale}});
  EXPECT_FALSE(never.granted);
  EXPECT_TRUE(never.infeasible);
  EXPECT_EQ(never.reason, "trial t3 asks cpu=16 but the largest worker offers cpu=8 (w2)");

  EXPECT_TRUE(Release("t1"));
  EXPECT_FALSE(Release("t1"));
  EXPECT_TRUE(ViewOf("w1").committed.empty());
  EXPECT_TRUE(Allocate("t2", {{"gpu", kScale}}).granted);
}

TEST_F(ResourceManagerTest, PublishesNodeAddedNodeLostAndResourcesFreed) {
  // Heartbeats every 50 ms x 3: w1 goes silent and is reported lost with its trial; w2 keeps
  // beating and stays; a release on w2 publishes resources_freed.
  Start(50);
  EventReader events(ctx_, rm_->events_endpoint());
  // Wait until the subscription is live: register probes until one's node_added arrives.
  bool subscribed = false;
  for (int i = 0; i < 50 && !subscribed; ++i) {
    Register("probe-" + std::to_string(i), 1);
    subscribed =
        events.WaitFor([](const auto& e) { return e.event == "node_added"; }, 100ms).has_value();
  }
  ASSERT_TRUE(subscribed);

  auto is = [](const std::string& event, const std::string& worker) {
    return [=](const proto::NodeEvent& e) { return e.event == event && e.worker_id == worker; };
  };
  Register("w1", 4);
  Register("w2", 2);
  ASSERT_TRUE(events.WaitFor(is("node_added", "w1"), 3s));
  ASSERT_TRUE(events.WaitFor(is("node_added", "w2"), 3s));
  ASSERT_EQ(Allocate("t1", {{"cpu", 4 * kScale}}).worker_id, "w1");
  ASSERT_EQ(Allocate("t2", {{"cpu", 2 * kScale}}).worker_id, "w2");

  auto lost = events.WaitFor(is("node_lost", "w1"), 5s, [&] { Heartbeat("w2"); });
  ASSERT_TRUE(lost);
  EXPECT_EQ(lost->trials, std::vector<std::string>{"t1/1"});
  Heartbeat("w2");
  EXPECT_FALSE(ViewOf("w1").alive);
  EXPECT_TRUE(ViewOf("w1").committed.empty());
  EXPECT_TRUE(ViewOf("w2").alive);
  EXPECT_FALSE(Release("t1"));  // dropped with w1

  // The lost worker's heartbeat is refused so it re-registers; then it is added again.
  Heartbeat("w1");
  auto refused = NextReply();
  ASSERT_TRUE(refused.ok());
  ASSERT_EQ(refused->type(), "error");
  EXPECT_EQ(refused->As<proto::ErrorReply>()->code, "not_found");
  Register("w1", 4);
  EXPECT_TRUE(events.WaitFor(is("node_added", "w1"), 3s));

  Heartbeat("w2");
  EXPECT_TRUE(Release("t2"));
  auto freed = events.WaitFor(is("resources_freed", "w2"), 3s);
  ASSERT_TRUE(freed);
  EXPECT_EQ(freed->trials, std::vector<std::string>{"t2/1"});
}

TEST_F(ResourceManagerTest, AWorkerIsLostOnlyOnceThePausedClockPassesItsLiveness) {
  // The resource-manager runs on a ManualClock (heartbeats 1000 ms x 3): w1 never beats after
  // registering, w2 beats every 500 ms of clock time. Nothing sleeps: each step advances the
  // clock, and a second view request proves the loop ran the timers due at the first.
  ManualClock& clock = manual_clock_;
  Start(1000, &clock);
  Register("w1", 2);
  Register("w2", 2);
  for (int step = 1; step <= 5; ++step) {  // w1 silent for 0.5 .. 2.5 s: alive
    clock.Advance(500ms);
    Heartbeat("w2");
    ViewOf("w1");
    EXPECT_TRUE(ViewOf("w1").alive) << "after " << step * 500 << " ms";
  }
  clock.Advance(600ms);  // w1 silent for 3.1 s, w2 for 0.6 s
  ViewOf("w1");
  EXPECT_FALSE(ViewOf("w1").alive);
  EXPECT_TRUE(ViewOf("w2").alive);
}

TEST_F(ResourceManagerTest, MalformedMessagesGetErrorRepliesAndStateIsKept) {
  // Garbage, a non-map, an unknown type, a wrong version and wrong field types each get an
  // ErrorReply; afterwards the service answers normally with its allocations intact.
  Start(1000);
  Register("w1", 4);
  ASSERT_TRUE(Allocate("t1", {{"cpu", 3 * kScale}}).granted);

  EXPECT_EQ(ExpectError("\xc1 this is not msgpack").code, "invalid_argument");
  EXPECT_EQ(ExpectError("").code, "invalid_argument");
  EXPECT_EQ(ExpectError(std::string("\x01", 1)).code, "invalid_argument");  // an int, not a map

  auto unknown = ExpectError(PackMap({{"v", 1}, {"type", "frobnicate"}, {"id", 77}}));
  EXPECT_EQ(unknown.code, "invalid_argument");
  EXPECT_EQ(unknown.id, 77u);
  EXPECT_EQ(unknown.request_type, "frobnicate");

  proto::Allocate future;
  future.v = 2;
  future.trial_id = "t9";
  future.request = {{"cpu", kScale}};
  auto version = ExpectError(proto::Encode(future));
  EXPECT_EQ(version.code, "failed_precondition");
  EXPECT_NE(version.message.find("version 2"), std::string::npos) << version.message;

  auto shape = ExpectError(PackMap({{"v", 1}, {"type", "allocate"}, {"id", 9}, {"trial_id", 5}}));
  EXPECT_EQ(shape.code, "invalid_argument");
  EXPECT_EQ(shape.id, 9u);
  EXPECT_EQ(shape.request_type, "allocate");

  proto::Allocate negative;
  negative.id = 10;
  negative.trial_id = "t9";
  negative.request = {{"cpu", -kScale}};
  EXPECT_EQ(ExpectError(proto::Encode(negative)).code, "invalid_argument");

  proto::RegisterNode bad_gpus;
  bad_gpus.worker_id = "w9";
  bad_gpus.capacity = {{"gpu", 2 * kScale}};
  bad_gpus.gpu_ids = {"0"};
  EXPECT_EQ(ExpectError(proto::Encode(bad_gpus)).code, "invalid_argument");

  proto::NodeHeartbeat stranger;
  stranger.worker_id = "nobody";
  auto nf = ExpectError(proto::Encode(stranger));
  EXPECT_EQ(nf.code, "not_found");
  EXPECT_EQ(nf.request_type, "node_heartbeat");

  // State intact: one worker, t1 still holds 3 CPUs, and requests still work.
  auto view = Call<proto::ClusterView>(proto::GetClusterView{});
  ASSERT_EQ(view.nodes.size(), 1u);
  EXPECT_EQ(view.nodes[0].committed, (proto::ResourceUnits{{"cpu", 3 * kScale}}));
  EXPECT_EQ(view.nodes[0].trials, std::vector<std::string>{"t1/1"});
  EXPECT_FALSE(Allocate("t2", {{"cpu", 2 * kScale}}).granted);
  EXPECT_TRUE(Release("t1"));
  EXPECT_TRUE(Allocate("t2", {{"cpu", 2 * kScale}}).granted);
}

TEST_F(ResourceManagerTest, AllocateRetryOverTheWireGetsTheSameGrant) {
  // The scheduler resends an allocate whose reply it missed: same worker, nothing more taken.
  Start(1000);
  Register("w1", 2);
  Register("w2", 2);
  auto first = Allocate("t1", {{"cpu", kScale}});
  auto again = Allocate("t1", {{"cpu", kScale}});
  EXPECT_TRUE(again.granted);
  EXPECT_EQ(again.worker_id, first.worker_id);
  EXPECT_EQ(ViewOf(first.worker_id).committed.at("cpu"), kScale);
}

TEST_F(ResourceManagerTest, AllocateBatchHandOverAndReleaseBatchKeepTheAccounting) {
  // The scheduler's batched forms: a batch is decided item by item in order; a hand-over moves
  // one attempt's allocation to another on the same worker; a release batch returns several.
  Start(1000);
  Register("w1", 2, 1);
  proto::AllocateBatch batch;
  batch.items = {{"t1", 1, {{"cpu", kScale}, {"gpu", kScale}}},
                 {"t2", 1, {{"cpu", kScale}}},
                 {"t3", 1, {{"cpu", kScale}}},
                 {"t4", 1, {{"cpu", 8 * kScale}}}};
  auto got = Call<proto::AllocateBatchReply>(batch);
  ASSERT_EQ(got.items.size(), 4u);
  EXPECT_TRUE(got.items[0].granted);
  EXPECT_EQ(got.items[0].gpu_ids, std::vector<std::string>{"0"});
  EXPECT_TRUE(got.items[1].granted);
  EXPECT_FALSE(got.items[2].granted);  // no room now
  EXPECT_FALSE(got.items[2].infeasible);
  EXPECT_TRUE(got.items[3].infeasible);

  // t1 ended; t3 takes its cpu and gpu over on w1.
  proto::AllocateBatch handover;
  handover.items = {{"t3", 1, {{"cpu", kScale}, {"gpu", kScale}}, "t1", 1, "w1", {"0"}}};
  auto handed = Call<proto::AllocateBatchReply>(handover);
  ASSERT_EQ(handed.items.size(), 1u);
  EXPECT_TRUE(handed.items[0].granted) << handed.items[0].reason;
  auto view = ViewOf("w1");
  EXPECT_EQ(view.trials, (std::vector<std::string>{"t2/1", "t3/1"}));
  EXPECT_EQ(view.committed, (proto::ResourceUnits{{"cpu", 2 * kScale}, {"gpu", kScale}}));

  // A hand-over that does not fit (nothing to release, the worker is full) is refused.
  proto::AllocateBatch too_much;
  too_much.items = {{"t5", 1, {{"cpu", kScale}}, "t9", 1, "w1", {}}};
  EXPECT_FALSE(Call<proto::AllocateBatchReply>(too_much).items.at(0).granted);

  proto::ReleaseBatch release;
  release.items = {{"t2", 1}, {"t3", 1}, {"t1", 1}};
  EXPECT_EQ(Call<proto::ReleaseBatchReply>(release).released,
            (std::vector<bool>{true, true, false}));
  EXPECT_TRUE(ViewOf("w1").committed.empty());
}

TEST_F(ResourceManagerTest, MalformedBatchesAreRefusedWholeAndChangeNothing) {
  // An item without a trial_id, a hand-over without a worker, and an empty batch: each an error
  // reply, nothing allocated.
  Start(1000);
  Register("w1", 2);
  for (auto items : std::vector<std::vector<proto::AllocateItem>>{
           {{"t1", 1, {{"cpu", kScale}}}, {"", 1, {{"cpu", kScale}}}},
           {{"t1", 1, {{"cpu", kScale}}}, {"t2", 1, {{"cpu", kScale}}, "t0", 1, "", {}}},
           {}}) {
    proto::AllocateBatch batch;
    batch.id = next_id_++;
    batch.items = items;
    const proto::ErrorReply e = ExpectError(proto::Encode(batch));
    EXPECT_EQ(e.code, "invalid_argument") << e.message;
  }
  proto::ReleaseBatch empty;
  empty.id = next_id_++;
  EXPECT_EQ(ExpectError(proto::Encode(empty)).code, "invalid_argument");
  EXPECT_TRUE(ViewOf("w1").committed.empty());
}

TEST(ResourceManagerCreateTest, RejectsBadOptionsAndABusyEndpoint) {
  // Options are validated and a bind failure is an Unavailable error, not an exception.
  zmq::context_t ctx;
  ResourceManagerOptions o;
  o.endpoint = "tcp://127.0.0.1:0";
  o.events_endpoint = "tcp://127.0.0.1:0";
  o.heartbeat_interval_ms = 0;
  EXPECT_EQ(ResourceManager::Create(ctx, o).status().code(), StatusCode::kInvalidArgument);
  o.heartbeat_interval_ms = 100;
  o.liveness = 0;
  EXPECT_EQ(ResourceManager::Create(ctx, o).status().code(), StatusCode::kInvalidArgument);
  o.liveness = 3;
  auto first = ResourceManager::Create(ctx, o);
  ASSERT_TRUE(first.ok());
  o.endpoint = (*first)->endpoint();
  EXPECT_EQ(ResourceManager::Create(ctx, o).status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace tunebus
