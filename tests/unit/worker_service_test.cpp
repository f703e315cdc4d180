// WorkerService alone (services/scheduler/workers/worker_service.hpp) on a ManualClock: its
// workers ROUTER bound by the test, a trial-worker played by a DEALER named by its worker id,
// the resource-manager's node events by a PUB, experiments in the registry it is handed
// (SchedulerPartsHarness). What is checked is that each worker message reaches its handler
// (answered, routed to its trial's experiment) or is dropped with the protocol's answer.
#include "services/scheduler/workers/worker_service.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "libs/bus/socket.hpp"
#include "proto/resources.hpp"
#include "proto/worker.hpp"
#include "services/scheduler/core/experiment.hpp"
#include "services/scheduler/core/fair_share_arbiter.hpp"
#include "tests/unit/scheduler_parts_harness.hpp"

namespace tunebus {
namespace {

using namespace std::chrono_literals;
using testing::SchedulerPartsHarness;

class WorkerServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    zmq::socket_t router(h_.ctx, zmq::socket_type::router);
    router.set(zmq::sockopt::linger, 0);
    const std::string endpoint = "inproc://parts-worker-service-" + h_.tag;
    router.bind(endpoint);
    node_events_ = zmq::socket_t(h_.ctx, zmq::socket_type::pub);
    node_events_.set(zmq::sockopt::linger, 0);
    node_events_.bind("inproc://parts-node-events-" + h_.tag);
    zmq::socket_t sub(h_.ctx, zmq::socket_type::sub);
    sub.set(zmq::sockopt::linger, 0);
    sub.connect("inproc://parts-node-events-" + h_.tag);
    service_ = std::make_unique<WorkerService>(std::move(router), std::move(sub),
                                               bus::Security::Plaintext(), h_.loop, h_.clock,
                                               *h_.registry, arbiter_);
    service_->Start([this] { ++between_batches_; });
    worker_ = zmq::socket_t(h_.ctx, zmq::socket_type::dealer);
    worker_.set(zmq::sockopt::linger, 0);
    worker_.set(zmq::sockopt::routing_id, std::string("w1"));
    worker_.connect(endpoint);
  }

  // Sends `message` from worker w1 and returns the answer, if one comes within `wait`.
  template <typename Message>
  std::optional<proto::Decoded> Send(Message message, std::chrono::milliseconds wait = 5s) {
    EXPECT_TRUE(bus::SendMessage(worker_, message));
    return testing::NextWhileLooping(h_.loop, worker_, wait);
  }
  // Runs the loop until `handled` messages of `type` were dispatched (bounded in real time).
  bool Handled(const std::string& type, uint64_t handled) {
    for (auto deadline = std::chrono::steady_clock::now() + 5s;
         std::chrono::steady_clock::now() < deadline;) {
      h_.loop.RunOnce(bus::Duration{10});
      const auto& counts = service_->dispatcher().counts();
      if (auto it = counts.find(type); it != counts.end() && it->second >= handled) return true;
    }
    return false;
  }

  SchedulerPartsHarness h_;
  FairShareArbiter arbiter_{*h_.registry, *h_.rm, h_.loop, h_.clock};
  std::unique_ptr<WorkerService> service_;
  zmq::socket_t node_events_, worker_;
  int between_batches_ = 0;
};

// A worker registers reporting two running trials: the one of no experiment here is named stale
// in the answer (the worker kills it); the worker is then registered and connected.
TEST_F(WorkerServiceTest, RegisteringNamesTheReportedTrialsOfNoExperimentStale) {
  Experiment* a = h_.Submit("alpha", 2);
  proto::RegisterWorker reg;
  reg.id = 7;
  reg.worker_id = "w1";
  reg.hostname = "w1.local";
  proto::RunningTrial gone;
  gone.trial_id = "fffff_00001";
  gone.attempt = 1;
  reg.running.push_back(gone);
  auto ack = Send(reg);
  ASSERT_TRUE(ack.has_value());
  ASSERT_EQ(ack->type(), proto::RegisterWorkerAck::kType);
  EXPECT_EQ(ack->id(), 7u);
  auto body = ack->As<proto::RegisterWorkerAck>();
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(body->stale_trials, std::vector<std::string>{"fffff_00001"});
  EXPECT_TRUE(service_->workers().IsRegistered("w1"));
  EXPECT_TRUE(service_->workers().IsConnected("w1"));
  EXPECT_NE(a, nullptr);

  // The resource-manager reports it lost: no longer connected (still registered).
  proto::NodeEvent lost;
  lost.event = "node_lost";
  lost.worker_id = "w1";
  for (auto deadline = std::chrono::steady_clock::now() + 5s;
       service_->node_events() == 0 && std::chrono::steady_clock::now() < deadline;) {
    // As the resource-manager publishes: topic "node", then the event; a SUB joins late, so
    // it is resent until one arrives.
    const std::string payload = proto::Encode(lost);
    node_events_.send(zmq::buffer(std::string_view("node")), zmq::send_flags::sndmore);
    node_events_.send(zmq::buffer(payload), zmq::send_flags::none);
    h_.loop.RunOnce(bus::Duration{20});
  }
  EXPECT_GE(service_->node_events(), 1u);
  EXPECT_FALSE(service_->workers().IsConnected("w1"));
  EXPECT_TRUE(service_->workers().IsRegistered("w1"));
}

// A worker that has not registered with this process is answered not_found (so it registers
// and reports its trials) and its message is still handled; a result of a trial no experiment
// here holds is dropped without an answer.
TEST_F(WorkerServiceTest, AnUnregisteredWorkerIsToldToRegisterAndStrayResultsAreDropped) {
  h_.Submit("alpha", 1);
  proto::WorkerHeartbeat hb;
  hb.id = 3;
  hb.worker_id = "w1";
  auto answer = Send(hb);
  ASSERT_TRUE(answer.has_value());
  ASSERT_EQ(answer->type(), proto::ErrorReply::kType);
  auto error = answer->As<proto::ErrorReply>();
  EXPECT_EQ(error->code, "not_found");
  EXPECT_EQ(error->message, "worker w1 is not registered");
  EXPECT_TRUE(service_->workers().IsConnected("w1"));
  EXPECT_FALSE(service_->workers().IsRegistered("w1"));

  proto::RegisterWorker reg;
  reg.id = 4;
  reg.worker_id = "w1";
  ASSERT_TRUE(Send(reg).has_value());

  proto::ReportResults results;
  proto::ResultItem stray;
  stray.trial_id = "fffff_00000";
  stray.attempt = 1;
  stray.seq = 1;
  stray.metrics_json = R"({"score": 1})";
  results.results = {stray, stray};
  EXPECT_FALSE(Send(results, 200ms).has_value());  // dropped: no answer
  ASSERT_TRUE(Handled(proto::ReportResults::kType, 1));
  EXPECT_EQ(service_->results_received(), 2u);
  EXPECT_TRUE(h_.outbox != nullptr);
}

// Messages of an unknown type are refused by the table, counted as such.
TEST_F(WorkerServiceTest, AnUnknownMessageIsRefused) {
  proto::ControlReply odd;  // a control socket's message, not a worker's
  odd.id = 9;
  auto answer = Send(odd);
  ASSERT_TRUE(answer.has_value());
  ASSERT_EQ(answer->type(), proto::ErrorReply::kType);
  EXPECT_EQ(answer->As<proto::ErrorReply>()->code, "invalid_argument");
  EXPECT_EQ(service_->dispatcher().counts().at(service::MessageDispatcher::kUnknown), 1u);
}

}  // namespace
}  // namespace tunebus
