// Scheduler (services/scheduler) in-process on a ManualClock: the real Scheduler, ResourceManager
// and CheckpointStore (RocksDB in a temporary folder) on their own threads over inproc://
// endpoints of one context, a trial-worker played by the test with two DEALERs (to the
// scheduler's worker socket and the resource-manager), and tunectl's control requests. Time
// moves only when a test advances the clock (Mesos' Clock::pause/advance), so the time budget
// and heartbeat losses are checked without sleeping; the test waits on states, bounded in real
// time.
#include "services/scheduler/scheduler.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "libs/bus/socket.hpp"
#include "libs/core/clock.hpp"
#include "proto/codec.hpp"
#include "proto/control.hpp"
#include "proto/resources.hpp"
#include "proto/worker.hpp"
#include "services/checkpoint-store/checkpoint_store.hpp"
#include "services/resource-manager/resource_manager.hpp"
#include "tests/support/wait_until.hpp"

namespace tunebus {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr auto kStateWait = 10s;  // real time a test waits for a state before failing

// The next message on `socket` within `wait` (real time), decoded; nullopt if none came.
std::optional<proto::Decoded> Next(zmq::socket_t& socket, std::chrono::milliseconds wait) {
  zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, wait) == 0) return std::nullopt;
  bus::Incoming in;
  if (!bus::Receive(socket, in)) return std::nullopt;
  Result<proto::Decoded> d = proto::Decode(in.payload.data(), in.payload.size());
  if (!d.ok()) return std::nullopt;
  return std::move(*d);
}

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "tunebus-scheduler-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    const std::string tag = std::to_string(reinterpret_cast<uintptr_t>(this));
    store_ep_ = "inproc://store-" + tag;
    rm_ep_ = "inproc://rm-" + tag;
    rm_events_ep_ = "inproc://rm-events-" + tag;

    CheckpointStoreOptions so;
    so.endpoint = store_ep_;
    so.data_dir = dir_ + "/store";
    so.sync = false;
    auto store = CheckpointStore::Create(ctx_, so);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);

    ResourceManagerOptions ro;
    ro.endpoint = rm_ep_;
    ro.events_endpoint = rm_events_ep_;
    ro.heartbeat_interval_ms = 1000;
    ro.liveness = 3;
    ro.clock = &clock_;
    auto rm = ResourceManager::Create(ctx_, ro);
    ASSERT_TRUE(rm.ok()) << rm.status().ToString();
    rm_ = std::move(*rm);

    SchedulerOptions sch;
    sch.control_endpoint = "inproc://control-" + tag;
    sch.worker_endpoint = "inproc://workers-" + tag;
    sch.events_endpoint = "inproc://events-" + tag;
    sch.rm_endpoint = rm_ep_;
    sch.rm_events_endpoint = rm_events_ep_;
    sch.store_endpoint = store_ep_;
    sch.resume = false;
    auto scheduler = Scheduler::Create(ctx_, sch, clock_);
    ASSERT_TRUE(scheduler.ok()) << scheduler.status().ToString();
    scheduler_ = std::move(*scheduler);

    threads_.emplace_back([p = store_.get()] { p->Run(); });
    threads_.emplace_back([p = rm_.get()] { p->Run(); });
    threads_.emplace_back([p = scheduler_.get()] { p->Run(); });

    auto control = bus::Connect(ctx_, zmq::socket_type::dealer, scheduler_->control_endpoint(),
                                *bus::Security::Plaintext(), {"scheduler", ""});
    ASSERT_TRUE(control.ok());
    control_ = std::move(*control);
  }

  void TearDown() override {
    if (scheduler_) scheduler_->Stop();
    if (threads_.size() > 2) threads_[2].join();
    if (rm_) rm_->Stop();
    if (threads_.size() > 1) threads_[1].join();
    if (store_) store_->Stop();
    if (!threads_.empty()) threads_[0].join();
    worker_rm_.close();
    worker_.close();
    control_.close();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // The trial-worker `id` with `cpus` CPUs: registered at the resource-manager and the scheduler.
  void StartWorker(const std::string& id, int64_t cpus) {
    worker_id_ = id;
    auto to_rm = bus::Connect(ctx_, zmq::socket_type::dealer, rm_ep_, *bus::Security::Plaintext(),
                              {"resource-manager", ""});
    ASSERT_TRUE(to_rm.ok());
    worker_rm_ = std::move(*to_rm);
    proto::RegisterNode node;
    node.id = 1;
    node.worker_id = id;
    node.hostname = id + ".local";
    node.capacity = {{"cpu", cpus * Resources::kScale}};
    ASSERT_TRUE(bus::SendMessage(worker_rm_, node));
    auto ack = Next(worker_rm_, 5s);
    ASSERT_TRUE(ack.has_value());
    ASSERT_EQ(ack->type(), proto::RegisterNodeAck::kType);

    bus::ConnectOptions named;
    named.routing_id = id;
    auto to_scheduler = bus::Connect(ctx_, zmq::socket_type::dealer, scheduler_->worker_endpoint(),
                                     *bus::Security::Plaintext(), {"scheduler", ""}, named);
    ASSERT_TRUE(to_scheduler.ok());
    worker_ = std::move(*to_scheduler);
    proto::RegisterWorker reg;
    reg.id = 1;
    reg.worker_id = id;
    reg.hostname = id + ".local";
    ASSERT_TRUE(bus::SendMessage(worker_, reg));
    auto reg_ack = Next(worker_, 5s);
    ASSERT_TRUE(reg_ack.has_value());
    ASSERT_EQ(reg_ack->type(), proto::RegisterWorkerAck::kType);
  }

  // The worker's heartbeats to both services (it is alive at the clock's time).
  void Heartbeat() {
    proto::NodeHeartbeat node;
    node.worker_id = worker_id_;
    EXPECT_TRUE(bus::SendMessage(worker_rm_, node));
    proto::WorkerHeartbeat hb;
    hb.worker_id = worker_id_;
    EXPECT_TRUE(bus::SendMessage(worker_, hb));
  }

  // Sends a control request and returns its reply's body, or the error reply's "code: message"
  // in `error` (null: an error reply fails the test).
  template <typename Request>
  json Control(Request request, std::string* error = nullptr) {
    request.id = ++control_id_;
    EXPECT_TRUE(bus::SendMessage(control_, request));
    for (auto deadline = std::chrono::steady_clock::now() + kStateWait;
         std::chrono::steady_clock::now() < deadline;) {
      auto d = Next(control_, 1s);
      if (!d.has_value() || d->id() != request.id) continue;
      if (d->type() == proto::ErrorReply::kType) {
        auto e = d->As<proto::ErrorReply>();
        if (error == nullptr) ADD_FAILURE() << request.type << ": " << e->message;
        if (error != nullptr) *error = e->code + ": " + e->message;
        return json();
      }
      auto reply = d->As<proto::ControlReply>();
      EXPECT_TRUE(reply.ok());
      EXPECT_EQ(error, nullptr) << request.type << " answered, an error was expected";
      return reply.ok() ? json::parse(reply->body_json) : json();
    }
    ADD_FAILURE() << request.type << ": no reply";
    return json();
  }
  // The error a control request is answered with ("code: message"; "" if it succeeded).
  template <typename Request>
  std::string ControlError(Request request) {
    std::string error;
    Control(std::move(request), &error);
    return error;
  }

  proto::SubmitExperiment SubmitRequest(const std::string& yaml) const {
    proto::SubmitExperiment submit;
    submit.spec_yaml = yaml;
    submit.base_dir = dir_;
    submit.source_name = "exp.yaml";
    return submit;
  }
  json Submit(const std::string& yaml) { return Control(SubmitRequest(yaml)); }
  json Experiment(const std::string& name = "") {
    proto::GetExperiment get;
    get.experiment = name;
    return Control(get);
  }

  // The worker reports that trial `start`'s trainable exited (`ok`: returned; else failed).
  void Exited(const proto::StartTrial& start, bool ok) {
    proto::TrialExited exited;
    exited.trial_id = start.trial_id;
    exited.attempt = start.attempt;
    exited.ok = ok;
    exited.exit_code = ok ? 0 : 1;
    exited.error = ok ? "" : "exit code 1";
    EXPECT_TRUE(bus::SendMessage(worker_, exited));
  }

  // The StartTrial messages the scheduler sends the worker until `n` came, within `wait` (real
  // time); fails the test unless `n` came when the wait is kStateWait.
  std::vector<proto::StartTrial> ExpectStarts(
      size_t n, std::chrono::milliseconds wait = std::chrono::milliseconds(kStateWait)) {
    std::vector<proto::StartTrial> starts;
    for (auto deadline = std::chrono::steady_clock::now() + wait;
         starts.size() < n && std::chrono::steady_clock::now() < deadline;) {
      auto d = Next(worker_, 200ms);
      if (d.has_value() && d->type() == proto::StartTrial::kType) {
        starts.push_back(*d->As<proto::StartTrial>());
      }
    }
    if (wait == kStateWait) {
      EXPECT_EQ(starts.size(), n);
    }
    return starts;
  }

  // Trial ids of the stop_trial requests the worker gets within `wait` (real time).
  std::vector<std::string> StopRequests(std::chrono::milliseconds wait, size_t until = SIZE_MAX) {
    std::vector<std::string> stopped;
    for (auto deadline = std::chrono::steady_clock::now() + wait;
         stopped.size() < until && std::chrono::steady_clock::now() < deadline;) {
      auto d = Next(worker_, 50ms);
      if (d.has_value() && d->type() == proto::StopTrialRequest::kType) {
        stopped.push_back(d->As<proto::StopTrialRequest>()->trial_id);
      }
    }
    return stopped;
  }

  // Waits (real time, bounded) until the experiment's (`name`; "": the default one) status is
  // `status`.
  ::testing::AssertionResult WaitForStatus(const std::string& status,
                                           const std::string& name = "") {
    return test_support::WaitUntil(
        "experiment '" + name + "' is " + status,
        [&] { return Experiment(name).value("status", "") == status; }, kStateWait, 20ms);
  }

  // Returns once the resource-manager has handled everything the worker sent it and run its
  // timers at the clock's present time, with whether it holds the worker alive then. A loop
  // runs a round's handlers, then its due timers (EventLoop::RunOnce): the answer to a second
  // request, sent after the first was answered, comes from a round after the one that ran them.
  bool WorkerAliveAtTheResourceManager() {
    bool alive = false;
    for (uint64_t id : {1001, 1002}) {
      proto::GetClusterView get;
      get.id = id;
      EXPECT_TRUE(bus::SendMessage(worker_rm_, get));
      std::optional<proto::Decoded> d;
      while ((d = Next(worker_rm_, kStateWait)).has_value() && d->id() != id) {
        ADD_FAILURE() << "the resource-manager sent the worker " << d->type();
      }
      if (!d.has_value() || d->type() != proto::ClusterView::kType) {
        ADD_FAILURE() << "no cluster_view from the resource-manager";
        return false;
      }
      alive = false;
      const Result<proto::ClusterView> view = d->As<proto::ClusterView>();
      EXPECT_TRUE(view.ok());
      if (!view.ok()) return false;
      for (const proto::NodeView& node : view->nodes) {
        if (node.worker_id == worker_id_) alive = node.alive;
      }
    }
    return alive;
  }

  // An experiment `name` of the mock trainable over `param_space` (YAML flow text).
  std::string Yaml(const std::string& param_space, const std::string& extra,
                   const std::string& name = "clocked") const {
    return "name: " + name +
           "\n"
           "trainable: {builtin: mock}\n"
           "param_space: " +
           param_space +
           "\n"
           "metric: score\n"
           "mode: max\n"
           "resources_per_trial: {cpu: 1}\n"
           "results_dir: " +
           dir_ + "/results\n" + extra;
  }

  ManualClock clock_;
  zmq::context_t ctx_;
  std::string dir_, store_ep_, rm_ep_, rm_events_ep_, worker_id_;
  std::unique_ptr<CheckpointStore> store_;
  std::unique_ptr<ResourceManager> rm_;
  std::unique_ptr<Scheduler> scheduler_;
  std::vector<std::thread> threads_;
  zmq::socket_t control_, worker_, worker_rm_;
  uint64_t control_id_ = 0;
};

// stop: {time_budget_s: 60} counts on the scheduler's clock: at 59 s of it the trials run on, at
// 60 s the experiment ends FINISHED and its running trials are told to stop, whatever the real
// time.
TEST_F(SchedulerTest, TheTimeBudgetEndsTheExperimentOnlyOnceItsClockPassesIt) {
  StartWorker("w1", 2);
  ASSERT_EQ(
      Submit(Yaml("{x: {grid_search: [1, 2]}}", "stop: {time_budget_s: 60}\n")).value("name", ""),
      "clocked");
  const std::vector<proto::StartTrial> starts = ExpectStarts(2);
  ASSERT_EQ(starts.size(), 2u);
  for (int s = 0; s < 59; ++s) {
    clock_.Advance(1s);
    Heartbeat();
  }
  EXPECT_TRUE(StopRequests(300ms).empty());
  json e = Experiment();
  EXPECT_EQ(e.value("status", ""), "RUNNING") << e.dump();
  EXPECT_EQ(e["counts"].value("RUNNING", 0), 2) << e.dump();

  clock_.Advance(1s);
  Heartbeat();
  std::vector<std::string> stopped = StopRequests(kStateWait, 2);
  std::sort(stopped.begin(), stopped.end());
  EXPECT_EQ(stopped, (std::vector<std::string>{starts[0].trial_id, starts[1].trial_id}));
  ASSERT_TRUE(WaitForStatus("FINISHED"));
  EXPECT_EQ(Experiment().value("reason", ""), "time budget of 60 s reached");
}

// A worker silent for the resource-manager's liveness (3 heartbeat intervals of 1 s on the same
// clock) is lost: its RUNNING trial goes back to PENDING (a worker loss, not a failure). While it
// heartbeats, no clock time loses it.
TEST_F(SchedulerTest, AWorkerSilentPastItsLivenessIsLostAndItsTrialRequeues) {
  StartWorker("w1", 1);
  ASSERT_EQ(Submit(Yaml("{x: 1}", "")).value("name", ""), "clocked");
  ASSERT_EQ(ExpectStarts(1).size(), 1u);
  for (int s = 0; s < 30; ++s) {
    clock_.Advance(1s);
    Heartbeat();
  }
  // The resource-manager, which alone declares a worker lost, has seen 30 s of the clock with
  // the heartbeats and keeps it alive; so the scheduler was told of no loss.
  EXPECT_TRUE(WorkerAliveAtTheResourceManager());
  EXPECT_EQ(Experiment()["counts"].value("RUNNING", 0), 1);

  clock_.Advance(5s);  // no heartbeat: past 3 intervals
  EXPECT_TRUE(test_support::WaitUntil(
      "the lost worker's trial is PENDING",
      [&] { return Experiment()["counts"].value("PENDING", 0) == 1; }, kStateWait, 20ms))
      << Experiment().dump();
  EXPECT_EQ(Experiment().value("status", ""), "RUNNING");
}

// Many experiments at once: each has its own trials, and every worker
// message reaches the experiment its trial id names. Resources one frees go to the other.
TEST_F(SchedulerTest, TwoExperimentsRunAtOnceAndEachWorkerMessageReachesItsTrialsExperiment) {
  StartWorker("w1", 4);
  ASSERT_EQ(Submit(Yaml("{x: {grid_search: [1, 2]}}", "", "a")).value("name", ""), "a");
  ASSERT_EQ(Submit(Yaml("{x: {grid_search: [1, 2, 3]}}", "", "b")).value("name", ""), "b");
  const std::string a_id = Experiment("a").value("experiment_id", "");
  const std::string b_id = Experiment("b").value("experiment_id", "");
  ASSERT_NE(a_id, b_id);
  std::vector<proto::StartTrial> starts = ExpectStarts(4);  // 4 CPUs: two of each
  ASSERT_EQ(starts.size(), 4u);
  std::vector<proto::StartTrial> of_a, of_b;
  for (const proto::StartTrial& st : starts) {
    (st.trial_id.rfind(a_id + "_", 0) == 0 ? of_a : of_b).push_back(st);
  }
  ASSERT_EQ(of_a.size(), 2u);
  ASSERT_EQ(of_b.size(), 2u);

  // A result of a's trial is a's: its best trial; b has none.
  proto::ReportResults results;
  results.results.push_back(
      proto::ResultItem{of_a[0].trial_id, of_a[0].attempt, 1, R"({"score": 0.5})", 0.1, {}});
  ASSERT_TRUE(bus::SendMessage(worker_, results));
  EXPECT_TRUE(test_support::WaitUntil(
      "a's result makes its trial a's best",
      [&] {
        const json best = Experiment("a")["best"];
        return best.is_object() && best.value("trial_id", "") == of_a[0].trial_id;
      },
      kStateWait, 20ms))
      << Experiment("a").dump();
  EXPECT_TRUE(Experiment("b")["best"].is_null()) << Experiment("b").dump();

  // a's trials return: a ends; b runs on and gets the freed CPUs for its third trial.
  for (const proto::StartTrial& st : of_a) Exited(st, true);
  ASSERT_TRUE(WaitForStatus("FINISHED", "a"));
  EXPECT_EQ(Experiment("a")["counts"].value("TERMINATED", 0), 2);
  const std::vector<proto::StartTrial> third = ExpectStarts(1);
  ASSERT_EQ(third.size(), 1u);
  EXPECT_EQ(third[0].trial_id.rfind(b_id + "_", 0), 0u) << third[0].trial_id;
  EXPECT_EQ(Experiment("b").value("status", ""), "RUNNING");
  for (const proto::StartTrial& st : of_b) Exited(st, true);
  Exited(third[0], true);
  ASSERT_TRUE(WaitForStatus("FINISHED", "b"));
  EXPECT_EQ(Experiment("b")["counts"].value("TERMINATED", 0), 3);
}

// One experiment's failure (fail_fast: raise on its errored trial) ends that experiment only:
// the other's trials run on and finish.
TEST_F(SchedulerTest, OneExperimentsFailureNeverTouchesAnother) {
  StartWorker("w1", 2);
  ASSERT_EQ(
      Submit(Yaml("{x: 1}", "max_failures: 0\nfail_fast: raise\n", "fragile")).value("name", ""),
      "fragile");
  ASSERT_EQ(Submit(Yaml("{x: 2}", "", "sturdy")).value("name", ""), "sturdy");
  const std::string fragile_id = Experiment("fragile").value("experiment_id", "");
  const std::vector<proto::StartTrial> starts = ExpectStarts(2);
  ASSERT_EQ(starts.size(), 2u);
  const bool first_is_fragile = starts[0].trial_id.rfind(fragile_id + "_", 0) == 0;
  const proto::StartTrial& fragile = starts[first_is_fragile ? 0 : 1];
  const proto::StartTrial& sturdy = starts[first_is_fragile ? 1 : 0];

  Exited(fragile, false);
  ASSERT_TRUE(WaitForStatus("ERROR", "fragile")) << Experiment("fragile").dump();
  EXPECT_TRUE(StopRequests(300ms).empty());  // nothing of sturdy's is stopped
  json other = Experiment("sturdy");
  EXPECT_EQ(other.value("status", ""), "RUNNING") << other.dump();
  EXPECT_EQ(other["counts"].value("RUNNING", 0), 1) << other.dump();
  Exited(sturdy, true);
  ASSERT_TRUE(WaitForStatus("FINISHED", "sturdy"));
  EXPECT_EQ(Experiment("sturdy")["counts"].value("TERMINATED", 0), 1);
}

// Names are unique among unfinished experiments; a finished one's name may run again.
TEST_F(SchedulerTest, SubmittingTheNameOfARunningExperimentIsAClearError) {
  StartWorker("w1", 1);
  ASSERT_EQ(Submit(Yaml("{x: 1}", "", "taken")).value("name", ""), "taken");
  const std::vector<proto::StartTrial> starts = ExpectStarts(1);
  ASSERT_EQ(starts.size(), 1u);
  const std::string error = ControlError(SubmitRequest(Yaml("{x: 7}", "", "taken")));
  EXPECT_NE(error.find("failed_precondition: experiment taken is still running"), std::string::npos)
      << error;
  Exited(starts[0], true);
  ASSERT_TRUE(WaitForStatus("FINISHED", "taken"));
  EXPECT_EQ(Submit(Yaml("{x: 7}", "", "taken")).value("status", ""), "RUNNING");
}

// Control requests name their experiment: a trial id names its own; without a name and with
// several running, the request is refused with the list; a named one must hold the trial.
TEST_F(SchedulerTest, ControlRequestsGoToTheExperimentTheyNameOrTheirTrialsOwn) {
  StartWorker("w1", 2);
  ASSERT_EQ(Submit(Yaml("{x: 1}", "", "a")).value("name", ""), "a");
  ASSERT_EQ(Submit(Yaml("{x: 2}", "", "b")).value("name", ""), "b");
  const std::string b_id = Experiment("b").value("experiment_id", "");
  const std::vector<proto::StartTrial> starts = ExpectStarts(2);
  ASSERT_EQ(starts.size(), 2u);
  const std::string b_trial =
      starts[0].trial_id.rfind(b_id + "_", 0) == 0 ? starts[0].trial_id : starts[1].trial_id;

  const std::string several =
      "failed_precondition: 2 experiments are running (a, b); name one "
      "with -e/--experiment";
  EXPECT_EQ(ControlError(proto::StopExperiment{}), several);
  EXPECT_EQ(ControlError(proto::GetExperiment{}), several);
  proto::AddTrialCommand add;
  add.config_json = R"({"x": 3})";
  EXPECT_EQ(ControlError(add), several);
  add.experiment = "b";
  EXPECT_EQ(Control(add).value("trial_id", "").rfind(b_id + "_", 0), 0u);

  proto::StopTrialCommand stop;
  stop.trial_id = b_trial;
  stop.experiment = "a";
  EXPECT_NE(ControlError(stop).find("not_found: no trial " + b_trial + " in experiment a"),
            std::string::npos);
  stop.experiment = "";
  EXPECT_EQ(Control(stop).value("trial_id", ""), b_trial);
  EXPECT_EQ(StopRequests(kStateWait, 1), std::vector<std::string>{b_trial});
  EXPECT_EQ(Experiment("a")["counts"].value("RUNNING", 0), 1);

  proto::StopExperiment stop_a;
  stop_a.experiment = "a";
  EXPECT_EQ(Control(stop_a).value("status", ""), "STOPPED");
  EXPECT_EQ(Experiment("b").value("status", ""), "RUNNING");
}

// Weighted DRF across experiments (services/scheduler/core/fair_share.hpp): `a`
// (weight 1) holds all 4 CPUs when `b` (weight 3) arrives; each CPU `a` frees goes to `b`
// until they hold 1 and 3, then `a` gets its one back. `set-weight a 3` makes it 2 and 2.
TEST_F(SchedulerTest, WeightsDivideTheCpusAsTheirRatioAsTrialsFinish) {
  StartWorker("w1", 4);
  const std::string grid = "{x: {grid_search: [1, 2, 3, 4, 5, 6, 7, 8]}}";
  ASSERT_EQ(Submit(Yaml(grid, "weight: 1\n", "a")).value("name", ""), "a");
  std::vector<proto::StartTrial> of_a = ExpectStarts(4);
  ASSERT_EQ(of_a.size(), 4u);
  ASSERT_EQ(Submit(Yaml(grid, "weight: 3\n", "b")).value("name", ""), "b");
  const std::string a_id = Experiment("a").value("experiment_id", "");
  auto owner = [&](const proto::StartTrial& st) {
    return st.trial_id.rfind(a_id + "_", 0) == 0 ? "a" : "b";
  };
  EXPECT_TRUE(ExpectStarts(1, 300ms).empty());  // no CPU is free
  std::vector<std::string> next_owners;
  std::vector<proto::StartTrial> of_b;
  for (int i = 0; i < 4; ++i) {
    Exited(of_a[size_t(i)], true);
    const std::vector<proto::StartTrial> next = ExpectStarts(1);
    ASSERT_EQ(next.size(), 1u) << "after a's trial " << i << " exited";
    next_owners.push_back(owner(next[0]));
    if (owner(next[0]) == std::string("b")) of_b.push_back(next[0]);
  }
  EXPECT_EQ(next_owners, (std::vector<std::string>{"b", "b", "b", "a"}));
  json a = Experiment("a"), b = Experiment("b");
  EXPECT_EQ(a.value("weight", 0.0), 1.0);
  EXPECT_EQ(b.value("weight", 0.0), 3.0);
  EXPECT_DOUBLE_EQ(a.value("share", 0.0), 0.25) << a.dump();
  EXPECT_DOUBLE_EQ(b.value("share", 0.0), 0.75) << b.dump();

  proto::SetExperimentWeight heavier;
  heavier.experiment = "a";
  heavier.weight = 3;
  EXPECT_EQ(Control(heavier).value("weight", 0.0), 3.0);
  Exited(of_b[0], true);
  const std::vector<proto::StartTrial> after = ExpectStarts(1);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(owner(after[0]), std::string("a"));  // equal weights: 2 and 2
  proto::SetExperimentWeight zero;
  zero.experiment = "a";
  zero.weight = 0;
  EXPECT_EQ(ControlError(zero), "invalid_argument: weight must be a number > 0, got 0");
}

// Slot-seconds of each experiment on a saturated 4-CPU worker over steps kFrom..kTo of the
// scheduler's clock (1 s each): the experiments (name, weight) are submitted in order with 200
// trials each, every trial runs 2 s, and each freed CPU is placed before the next trial exits. `a`
// holds all 4 CPUs before the others come.
struct SlotSeconds {
  std::map<std::string, int> of;
  int measured = 0;
  double Fraction(const std::string& name) const {
    return measured == 0 ? 0 : double(of.count(name) ? of.at(name) : 0) / double(measured);
  }
};

class SchedulerFairShareTest : public SchedulerTest {
 protected:
  static constexpr int kSteps = 60, kFrom = 10, kTo = 50;

  SlotSeconds RunSaturated(const std::vector<std::pair<std::string, int>>& weights) {
    StartWorker("w1", 4);
    std::map<std::string, std::string> by_id;  // experiment id -> name
    struct Running {
      proto::StartTrial start;
      std::string experiment;
      int ends_at = 0;  // step
    };
    std::vector<Running> running;
    auto track = [&](const std::vector<proto::StartTrial>& starts, int step) {
      for (const proto::StartTrial& st : starts) {
        running.push_back({st, by_id[st.trial_id.substr(0, st.trial_id.find('_'))], step + 2});
      }
    };
    for (const auto& [name, weight] : weights) {
      EXPECT_EQ(Submit(Yaml("{x: {uniform: [0, 1]}}",
                            "num_samples: 200\nweight: " + std::to_string(weight) + "\n", name))
                    .value("name", ""),
                name);
      by_id[Experiment(name).value("experiment_id", "")] = name;
    }
    track(ExpectStarts(4), 0);
    EXPECT_EQ(running.size(), 4u);
    // The scheduler has the worker's capacity (asked of the resource-manager on its node_added)
    // before the first trial exits: `a`'s 4 CPUs are its whole share.
    EXPECT_TRUE(test_support::WaitUntil(
        "the scheduler knows the worker's capacity",
        [&] { return Experiment(weights.front().first).value("share", 0.0) == 1.0; }, kStateWait,
        20ms))
        << Experiment(weights.front().first).dump();
    SlotSeconds slots;
    for (int step = 0; step < kSteps; ++step) {
      if (step >= kFrom && step < kTo) {
        for (const Running& r : running) ++slots.of[r.experiment];
        slots.measured += int(running.size());
      }
      clock_.Advance(1s);
      Heartbeat();
      // One exit at a time, each followed by the placement it frees: the scheduler sees the
      // same sequence of rounds in every run.
      std::vector<proto::StartTrial> ending;
      for (auto it = running.begin(); it != running.end();) {
        if (it->ends_at > step + 1) {
          ++it;
          continue;
        }
        ending.push_back(it->start);
        it = running.erase(it);
      }
      for (const proto::StartTrial& st : ending) {
        Exited(st, true);
        const std::vector<proto::StartTrial> next = ExpectStarts(1);
        EXPECT_EQ(next.size(), 1u) << "step " << step;
        track(next, step + 1);
      }
      if (running.size() != 4) break;
    }
    EXPECT_EQ(slots.measured, 4 * (kTo - kFrom));  // saturated throughout
    std::string line;
    for (const auto& [name, n] : slots.of) line += fmt::format(" {} {}", name, n);
    std::printf("slot-seconds over steps %d-%d:%s of %d\n", kFrom, kTo, line.c_str(),
                slots.measured);
    return slots;
  }
};

// Weights 1:1:2 hold 25%, 25% and 50% of the slot-seconds over the middle of
// the run (within 5 points).
TEST_F(SchedulerFairShareTest, WeightsOneOneTwoGetAQuarterAQuarterAndAHalfOfTheSlotSeconds) {
  const SlotSeconds slots = RunSaturated({{"a", 1}, {"b", 1}, {"c", 2}});
  EXPECT_NEAR(slots.Fraction("a"), 0.25, 0.05);
  EXPECT_NEAR(slots.Fraction("b"), 0.25, 0.05);
  EXPECT_NEAR(slots.Fraction("c"), 0.50, 0.05);
}

// 4 CPUs do not divide by 3 equal experiments: each instant one of them holds 2. The
// least-attained-service tie-break (fair_share.hpp) moves that CPU around, so each holds a
// third of the slot-seconds (within 5 points) instead of `a` always holding half.
TEST_F(SchedulerFairShareTest, TheRemainderOfAnUnevenDivisionRotatesToWhoeverHadLeast) {
  const SlotSeconds slots = RunSaturated({{"a", 1}, {"b", 1}, {"c", 1}});
  for (const char* name : {"a", "b", "c"}) EXPECT_NEAR(slots.Fraction(name), 1.0 / 3, 0.05);
}

}  // namespace
}  // namespace tunebus
