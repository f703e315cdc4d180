// Tests of the trial-worker service: a real TrialWorker runs in a thread against a fake scheduler
// ROUTER and a fake resource-manager ROUTER owned by the test (inproc, shared context).
#include "services/trial-worker/trial_worker.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <optional>
#include <set>
#include <thread>
#include <type_traits>

#include "libs/bus/socket.hpp"
#include "libs/core/resources.hpp"
#include "proto/resources.hpp"
#include "proto/worker.hpp"

namespace tunebus {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// The RM's answer to a heartbeat (any non-error reply will do for the worker).
struct NodeHeartbeatAck {
  TUNEBUS_ENVELOPE("node_heartbeat_ack");
  MSGPACK_DEFINE_MAP(v, type, id)
};

struct Message {
  std::string type;
  std::string payload;
  template <typename M>
  M As() const {
    auto d = proto::Decode(payload.data(), payload.size());
    EXPECT_TRUE(d.ok());
    auto m = d->As<M>();
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    if constexpr (std::is_same_v<M, proto::ReportResult>) {
      if (m.ok())
        m->metrics = proto::MsgpackMap{m->metrics.Encoded(), {}};  // the view dies with `d`
    }
    return m.ok() ? *m : M{};
  }
};

class TrialWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static int n = 0;
    const std::string suffix = std::to_string(::getpid()) + "-" + std::to_string(++n);
    sched_ = std::move(bus::Bind(ctx_, zmq::socket_type::router, "inproc://sched-" + suffix,
                                 *bus::Security::Plaintext(), {"test", bus::RoleSet::Any()}))
                 .value();
    rm_ = std::move(bus::Bind(ctx_, zmq::socket_type::router, "inproc://rm-" + suffix,
                              *bus::Security::Plaintext(), {"test", bus::RoleSet::Any()}))
              .value();
    store_ = std::move(bus::Bind(ctx_, zmq::socket_type::router, "inproc://store-" + suffix,
                                 *bus::Security::Plaintext(), {"test", bus::RoleSet::Any()}))
                 .value();
    options_.worker_id = "w1";
    options_.scheduler_endpoint = "inproc://sched-" + suffix;
    options_.rm_endpoint = "inproc://rm-" + suffix;
    options_.store_endpoint = "inproc://store-" + suffix;
    options_.cpus = 2;
    options_.gpus = 1;
    options_.custom = {{"tpu", 4}};
    options_.heartbeat_interval_ms = 50;
    options_.stop_grace_ms = 300;
    std::string tmpl = (fs::temp_directory_path() / "tunebus_worker_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }

  void StartWorker() {
    auto w = TrialWorker::Create(ctx_, options_);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    worker_ = std::move(w).value();
    thread_ = std::thread([w = worker_.get()] { w->Run(); });
  }

  void TearDown() override {
    if (worker_) {
      worker_->Stop();
      thread_.join();
      worker_.reset();
    }
    fs::remove_all(dir_);
  }

  // Polls the fake peers once: answers the RM, acks RegisterWorker (if ack_ is set), refuses
  // every checkpoint_put with store_refusal_, queues every scheduler-side message in inbox_.
  void PumpOnce() {
    zmq::pollitem_t items[] = {{sched_.handle(), 0, ZMQ_POLLIN, 0},
                               {rm_.handle(), 0, ZMQ_POLLIN, 0},
                               {store_.handle(), 0, ZMQ_POLLIN, 0}};
    zmq::poll(items, 3, std::chrono::milliseconds(10));
    bus::Incoming in;
    while (bus::Receive(store_, in)) {
      auto d = proto::Decode(in.payload.data(), in.payload.size());
      ASSERT_TRUE(d.ok());
      ++store_requests_;
      bus::ReplyMessage(store_, in, proto::MakeError(store_refusal_, d->id(), d->type()));
    }
    while (bus::Receive(rm_, in)) {
      auto d = proto::Decode(in.payload.data(), in.payload.size());
      ASSERT_TRUE(d.ok());
      rm_log_.push_back(Message{d->type(), in.payload.to_string()});
      if (d->type() == proto::RegisterNode::kType) {
        proto::RegisterNodeAck ack;
        ack.id = d->id();
        bus::ReplyMessage(rm_, in, ack);
      } else if (d->type() == proto::NodeHeartbeat::kType) {
        if (rm_forget_) {
          rm_forget_ = false;
          bus::ReplyMessage(rm_, in,
                            proto::MakeError(Status::NotFound("unknown worker w1"), d->id(),
                                             proto::NodeHeartbeat::kType));
        } else {
          NodeHeartbeatAck ack;
          ack.id = d->id();
          bus::ReplyMessage(rm_, in, ack);
        }
      }
    }
    while (bus::Receive(sched_, in)) {
      auto d = proto::Decode(in.payload.data(), in.payload.size());
      ASSERT_TRUE(d.ok());
      EXPECT_EQ(in.peer(), "w1");
      if (d->type() == proto::RegisterWorker::kType) {
        ++register_worker_count_;
        last_register_ = Message{d->type(), in.payload.to_string()};
        if (ack_) bus::SendMessageTo(sched_, "w1", proto::RegisterWorkerAck{});
        continue;
      }
      if (d->type() == proto::WorkerHeartbeat::kType) {
        ++heartbeat_count_;
        continue;
      }
      if (d->type() == proto::ReportResults::kType) {
        // A batch: each result is checked as the ReportResult it stands for.
        ++report_batches_;
        auto batch = d->As<proto::ReportResults>();
        ASSERT_TRUE(batch.ok());
        for (const proto::ResultItem& r : batch->results) {
          proto::ReportResult one;
          one.trial_id = r.trial_id;
          one.attempt = r.attempt;
          one.seq = r.seq;
          one.metrics_json = r.metrics_json;
          one.metrics = r.metrics;
          one.time_this_iter_s = r.time_this_iter_s;
          inbox_.push_back(Message{one.type, proto::Encode(one)});
        }
        continue;
      }
      inbox_.push_back(Message{d->type(), in.payload.to_string()});
    }
  }

  // Pumps until a scheduler-side message of `type` arrives (or the deadline passes).
  std::optional<Message> WaitFor(const std::string& type, std::chrono::milliseconds timeout = 5s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      for (auto it = inbox_.begin(); it != inbox_.end(); ++it) {
        if (it->type == type) {
          Message m = *it;
          inbox_.erase(it);
          return m;
        }
      }
      PumpOnce();
    }
    return std::nullopt;
  }

  bool PumpUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout = 5s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      PumpOnce();
    }
    return true;
  }

  template <typename M>
  void Send(const M& m) {
    ASSERT_TRUE(bus::SendMessageTo(sched_, "w1", m));
  }

  void WaitRegistered() {
    ASSERT_TRUE(PumpUntil([&] { return heartbeat_count_ > 0; })) << "worker never registered";
  }

  proto::StartTrial Start(const std::string& trial_id, nlohmann::json config,
                          const std::string& builtin = "mock") {
    proto::StartTrial s;
    s.experiment = "exp";
    s.trial_id = trial_id;
    s.attempt = 1;
    s.config_json = config.dump();
    s.trainable.builtin = builtin;
    s.trial_dir = (dir_ / trial_id).string();
    return s;
  }

  proto::Decision DecisionFor(const proto::ReportResult& r,
                              const std::string& action = "continue") {
    proto::Decision d;
    d.trial_id = r.trial_id;
    d.attempt = r.attempt;
    d.seq = r.seq;
    d.action = action;
    return d;
  }

  zmq::context_t ctx_{1};
  zmq::socket_t sched_;
  zmq::socket_t rm_;
  zmq::socket_t store_;  // the checkpoint-store: refuses every request with store_refusal_
  Status store_refusal_ = Status::IoError("RocksDB write failed: No space left on device");
  int store_requests_ = 0;
  TrialWorkerOptions options_;
  fs::path dir_;
  std::unique_ptr<TrialWorker> worker_;
  std::thread thread_;
  bool ack_ = true;
  bool rm_forget_ = false;
  int register_worker_count_ = 0;
  int heartbeat_count_ = 0;
  int report_batches_ = 0;  // ReportResults messages received
  std::optional<Message> last_register_;
  std::deque<Message> inbox_;
  std::vector<Message> rm_log_;
};

int Count(const std::vector<Message>& log, const std::string& type) {
  return static_cast<int>(
      std::count_if(log.begin(), log.end(), [&](const Message& m) { return m.type == type; }));
}

TEST_F(TrialWorkerTest, RegistersWithResourceManagerAndScheduler) {
  // On start the worker registers its capacity with the RM and itself with the scheduler, then
  // heartbeats both.
  StartWorker();
  WaitRegistered();
  ASSERT_TRUE(PumpUntil([&] { return Count(rm_log_, proto::NodeHeartbeat::kType) > 0; }));
  ASSERT_GE(Count(rm_log_, proto::RegisterNode::kType), 1);
  auto reg = rm_log_.front().As<proto::RegisterNode>();
  EXPECT_EQ(reg.worker_id, "w1");
  EXPECT_EQ(reg.capacity["cpu"], 2 * Resources::kScale);
  EXPECT_EQ(reg.capacity["gpu"], 1 * Resources::kScale);
  EXPECT_EQ(reg.capacity["tpu"], 4 * Resources::kScale);
  EXPECT_EQ(reg.capacity.count("memory"), 0u);
  EXPECT_EQ(reg.gpu_ids, std::vector<std::string>{"0"});
  EXPECT_EQ(last_register_->As<proto::RegisterWorker>().worker_id, "w1");
}

TEST_F(TrialWorkerTest, RegisterWorkerIsRepeatedUntilTheSchedulerAnswers) {
  // A scheduler that starts after the worker learns about it: RegisterWorker repeats each
  // heartbeat until acknowledged, then WorkerHeartbeats follow.
  ack_ = false;
  StartWorker();
  ASSERT_TRUE(PumpUntil([&] { return register_worker_count_ >= 3; }));
  EXPECT_EQ(heartbeat_count_, 0);
  ack_ = true;
  WaitRegistered();
  const int registers = register_worker_count_;
  ASSERT_TRUE(PumpUntil([&] { return heartbeat_count_ >= 3; }));
  EXPECT_LE(register_worker_count_, registers + 1);
}

TEST_F(TrialWorkerTest, ResourceManagerNotFoundMakesItRegisterAgain) {
  // The RM forgot the worker (answers a heartbeat with not_found): the worker registers again.
  StartWorker();
  ASSERT_TRUE(PumpUntil([&] { return Count(rm_log_, proto::NodeHeartbeat::kType) > 0; }));
  rm_forget_ = true;
  ASSERT_TRUE(PumpUntil([&] { return Count(rm_log_, proto::RegisterNode::kType) >= 2; }));
}

TEST_F(TrialWorkerTest, MockTrialReportsWaitForDecisionsThenExitsOk) {
  // A 3-iteration mock sends ReportResult seq 1..3, each only after the previous decision, and
  // then TrialExited ok with last_seq 3.
  StartWorker();
  WaitRegistered();
  Send(Start("t1", {{"mock_iterations", 3}, {"lr", 0.1}}));
  for (int64_t seq = 1; seq <= 3; ++seq) {
    auto msg = WaitFor(proto::ReportResult::kType);
    ASSERT_TRUE(msg.has_value()) << "seq " << seq;
    auto r = msg->As<proto::ReportResult>();
    EXPECT_EQ(r.trial_id, "t1");
    EXPECT_EQ(r.attempt, 1);
    EXPECT_EQ(r.seq, seq);
    const auto metrics = nlohmann::json::from_msgpack(r.metrics.Encoded());
    EXPECT_TRUE(metrics.contains("mean_accuracy"));
    EXPECT_EQ(metrics.value("done", false), seq == 3);
    EXPECT_GE(r.time_this_iter_s, 0.0);
    if (seq == 1) {  // nothing more arrives until the decision does
      EXPECT_FALSE(WaitFor(proto::ReportResult::kType, 200ms).has_value());
    }
    Send(DecisionFor(r));
  }
  auto exited = WaitFor(proto::TrialExited::kType);
  ASSERT_TRUE(exited.has_value());
  auto e = exited->As<proto::TrialExited>();
  EXPECT_EQ(e.trial_id, "t1");
  EXPECT_TRUE(e.ok) << e.error;
  EXPECT_FALSE(e.stopped);
  EXPECT_EQ(e.last_seq, 3);
}

TEST_F(TrialWorkerTest, OneDecisionsBatchGetsTheNextReportsInOneReportResults) {
  // Four noop trials (they report as soon as a decision arrives): one Decisions message with a
  // "continue" for each makes their next four results, which leave in one ReportResults.
  StartWorker();
  WaitRegistered();
  for (int i = 0; i < 4; ++i)
    Send(Start("n" + std::to_string(i), {{"mock_iterations", 5}}, "noop"));
  proto::Decisions batch;
  for (int i = 0; i < 4; ++i) {
    auto msg = WaitFor(proto::ReportResult::kType);
    ASSERT_TRUE(msg.has_value()) << i;
    auto r = msg->As<proto::ReportResult>();
    EXPECT_EQ(r.seq, 1);
    batch.decisions.push_back(proto::DecisionItem{r.trial_id, r.attempt, r.seq, "continue"});
  }
  const int batches_before = report_batches_;
  Send(batch);
  std::set<std::string> next;
  for (int i = 0; i < 4; ++i) {
    auto msg = WaitFor(proto::ReportResult::kType);
    ASSERT_TRUE(msg.has_value()) << i;
    auto r = msg->As<proto::ReportResult>();
    EXPECT_EQ(r.seq, 2);
    next.insert(r.trial_id);
  }
  EXPECT_EQ(next.size(), 4u);
  EXPECT_EQ(report_batches_, batches_before + 1);
}

TEST_F(TrialWorkerTest, MissingCommandGivesTrialExitedNamingIt) {
  // A command that does not exist fails the attempt with an error naming the command.
  StartWorker();
  WaitRegistered();
  auto s = Start("t2", nlohmann::json::object(), "");
  s.trainable.command = {"tunebus-missing-command-abc", "train.py"};
  s.trainable.working_dir = dir_.string();
  Send(s);
  auto exited = WaitFor(proto::TrialExited::kType);
  ASSERT_TRUE(exited.has_value());
  auto e = exited->As<proto::TrialExited>();
  EXPECT_FALSE(e.ok);
  EXPECT_NE(e.error.find("tunebus-missing-command-abc"), std::string::npos) << e.error;
}

TEST_F(TrialWorkerTest, StopTrialRequestMidRunGivesTrialExitedStopped) {
  // A trial waiting for its decision is told to stop by StopTrialRequest and exits "stopped".
  StartWorker();
  WaitRegistered();
  Send(Start("t3", {{"mock_iterations", 100}}));
  auto msg = WaitFor(proto::ReportResult::kType);
  ASSERT_TRUE(msg.has_value());
  proto::StopTrialRequest stop;
  stop.trial_id = "t3";
  stop.attempt = 1;
  Send(stop);
  auto exited = WaitFor(proto::TrialExited::kType);
  ASSERT_TRUE(exited.has_value());
  auto e = exited->As<proto::TrialExited>();
  EXPECT_TRUE(e.stopped);
  EXPECT_TRUE(e.ok) << e.error;
  EXPECT_EQ(e.last_seq, 1);
}

TEST_F(TrialWorkerTest, StopTrialRequestKillsABusyCommandAfterTheGrace) {
  // A command that never reports is killed (process group) after the stop grace period.
  StartWorker();
  WaitRegistered();
  auto s = Start("t4", nlohmann::json::object(), "");
  s.trainable.command = {"/bin/sh", "-c", "sleep 30"};
  Send(s);
  ASSERT_FALSE(WaitFor(proto::TrialExited::kType, 100ms).has_value());
  proto::StopTrialRequest stop;
  stop.trial_id = "t4";
  stop.attempt = 1;
  const auto t0 = std::chrono::steady_clock::now();
  Send(stop);
  auto exited = WaitFor(proto::TrialExited::kType);
  ASSERT_TRUE(exited.has_value());
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 250ms);
  auto e = exited->As<proto::TrialExited>();
  EXPECT_TRUE(e.stopped);
  EXPECT_TRUE(e.ok);
  EXPECT_EQ(e.exit_code, -9);
}

TEST_F(TrialWorkerTest, GarbageFromTheSchedulerDoesNotCrashIt) {
  // Garbage, unknown types, wrong versions and stray decisions are dropped; the next StartTrial
  // is still served.
  StartWorker();
  WaitRegistered();
  ASSERT_TRUE(bus::SendTo(sched_, "w1", "\xc1\xff garbage"));
  ASSERT_TRUE(bus::SendTo(sched_, "w1", ""));
  proto::ErrorReply unknown;
  unknown.type = "launch_missiles";
  Send(unknown);
  proto::StartTrial old_version = Start("bad", nlohmann::json::object());
  old_version.v = 99;
  Send(old_version);
  proto::Decision stray;
  stray.trial_id = "nope";
  stray.attempt = 1;
  stray.seq = 5;
  stray.action = "continue";
  Send(stray);
  auto bad_config = Start("t5bad", nlohmann::json::object());
  bad_config.config_json = "[1, 2";
  Send(bad_config);
  auto failed = WaitFor(proto::TrialExited::kType);
  ASSERT_TRUE(failed.has_value());
  EXPECT_FALSE(failed->As<proto::TrialExited>().ok);

  Send(Start("t5", {{"mock_iterations", 1}}, "noop"));
  auto msg = WaitFor(proto::ReportResult::kType);
  ASSERT_TRUE(msg.has_value());
  auto r = msg->As<proto::ReportResult>();
  EXPECT_EQ(r.trial_id, "t5");
  // The report, plus Ray Tune's auto-filled keys only the worker knows (a built-in runs in the
  // worker's own process).
  nlohmann::json reported = nlohmann::json::from_msgpack(r.metrics.Encoded());
  EXPECT_EQ(reported.value("pid", int64_t(0)), int64_t(::getpid()));
  EXPECT_FALSE(reported.value("hostname", "").empty());
  EXPECT_FALSE(reported.value("node_ip", "").empty());
  for (const char* key : {"pid", "hostname", "node_ip"}) reported.erase(key);
  EXPECT_EQ(reported, (nlohmann::json{{"value", 1}, {"done", true}}));
  Send(DecisionFor(r));
  auto exited = WaitFor(proto::TrialExited::kType);
  ASSERT_TRUE(exited.has_value());
  EXPECT_TRUE(exited->As<proto::TrialExited>().ok);
}

TEST_F(TrialWorkerTest, UnackedResultsAreResentAfterReRegistration) {
  // A restarted scheduler (answers not_found) gets a new RegisterWorker listing the running
  // trial and then the unacknowledged result again.
  StartWorker();
  WaitRegistered();
  Send(Start("t6", {{"mock_iterations", 5}}));
  auto first = WaitFor(proto::ReportResult::kType);
  ASSERT_TRUE(first.has_value());
  const int registers = register_worker_count_;
  Send(proto::MakeError(Status::NotFound("unknown worker w1"), 0, proto::WorkerHeartbeat::kType));
  ASSERT_TRUE(PumpUntil([&] { return register_worker_count_ > registers; }));
  auto reg = last_register_->As<proto::RegisterWorker>();
  ASSERT_EQ(reg.running.size(), 1u);
  EXPECT_EQ(reg.running[0].trial_id, "t6");
  auto again = WaitFor(proto::ReportResult::kType);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->As<proto::ReportResult>().seq, 1);
  // The decision for seq 1 continues the trial as usual.
  Send(DecisionFor(again->As<proto::ReportResult>()));
  auto next = WaitFor(proto::ReportResult::kType);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->As<proto::ReportResult>().seq, 2);
}

TEST_F(TrialWorkerTest, ACheckpointTheStoreRefusesIsReportedAndTheTrialRunsOn) {
  // The store's disk is full: it answers the upload of the checkpoint asked at seq 1 io_error
  // (not retried: only unavailable is). The worker reports checkpoint_failed once, with the
  // store's error, removes its local copy, and the trainable goes on: its next reports arrive
  // and are answered, and the attempt exits ok.
  StartWorker();
  WaitRegistered();
  auto start = Start("t8", {{"mock_iterations", 3}});
  start.checkpoint_prefix = "exp-abcde/t8/";
  Send(start);
  auto first = WaitFor(proto::ReportResult::kType);
  ASSERT_TRUE(first.has_value());
  Send(DecisionFor(first->As<proto::ReportResult>(), "checkpoint"));
  auto failed = WaitFor(proto::CheckpointFailed::kType);
  ASSERT_TRUE(failed.has_value()) << "no checkpoint_failed";
  const auto f = failed->As<proto::CheckpointFailed>();
  EXPECT_EQ(f.trial_id, "t8");
  EXPECT_EQ(f.attempt, 1);
  EXPECT_EQ(f.training_iteration, 1);
  EXPECT_EQ(f.checkpoint_id, "exp-abcde/t8/00000001-a1");
  EXPECT_EQ(f.error, "io_error: RocksDB write failed: No space left on device");
  EXPECT_GE(store_requests_, 1);
  for (int64_t seq = 2; seq <= 3; ++seq) {
    auto r = WaitFor(proto::ReportResult::kType);
    ASSERT_TRUE(r.has_value()) << "seq " << seq;
    EXPECT_EQ(r->As<proto::ReportResult>().seq, seq);
    Send(DecisionFor(r->As<proto::ReportResult>()));
  }
  auto exited = WaitFor(proto::TrialExited::kType);
  ASSERT_TRUE(exited.has_value());
  EXPECT_TRUE(exited->As<proto::TrialExited>().ok);
  EXPECT_FALSE(WaitFor(proto::CheckpointFailed::kType, 200ms).has_value());  // reported once
  EXPECT_FALSE(fs::exists(dir_ / "t8" / "checkpoint_00000001"));  // the local copy is removed
}

TEST_F(TrialWorkerTest, DecisionStopEndsTheTrialAsStopped) {
  // A "stop" decision (e.g. from ASHA) ends a command trainable cleanly: TrialExited stopped, ok.
  StartWorker();
  WaitRegistered();
  auto s = Start("t7", nlohmann::json::object(), "");
  s.trainable.command = {
      "/bin/sh", "-c",
      R"(while true; do echo '{"acc": 0.5}' >&3; read d <&4; [ "$d" = stop ] && exit 0; done)"};
  Send(s);
  auto msg = WaitFor(proto::ReportResult::kType);
  ASSERT_TRUE(msg.has_value());
  Send(DecisionFor(msg->As<proto::ReportResult>(), "stop"));
  auto exited = WaitFor(proto::TrialExited::kType);
  ASSERT_TRUE(exited.has_value());
  auto e = exited->As<proto::TrialExited>();
  EXPECT_TRUE(e.ok) << e.error;
  EXPECT_TRUE(e.stopped);
  EXPECT_EQ(e.exit_code, 0);
  EXPECT_TRUE(fs::exists(dir_ / "t7" / "stdout"));
}

}  // namespace
}  // namespace tunebus
