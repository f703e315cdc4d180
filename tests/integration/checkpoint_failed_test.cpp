// "Nothing silent" on real processes: a trial-worker whose checkpoint-store
// refuses every checkpoint (its disk is full) reports each refusal to the scheduler, which
// journals it on the trial, shows it in `tunectl show` and applies the experiment's
// checkpoint_failure. The worker's store is a fake in this process that answers io_error; the
// scheduler journals in the real checkpoint-store.
#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "libs/bus/socket.hpp"
#include "proto/codec.hpp"
#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kDiskFull =
    "RocksDB write failed: IO error: While appending to file: /data/000042.log: No space left "
    "on device";

// A checkpoint-store whose disk is full: every request gets io_error (a worker sends it only
// checkpoint_put and checkpoint_get).
class FullStore {
 public:
  FullStore() : socket_(ctx_, zmq::socket_type::router) {
    socket_.bind("tcp://127.0.0.1:*");
    endpoint_ = socket_.get(zmq::sockopt::last_endpoint);
    thread_ = std::thread([this] { Serve(); });
  }
  ~FullStore() {
    stop_ = true;
    thread_.join();
  }
  const std::string& endpoint() const { return endpoint_; }
  int refused() const { return refused_; }

 private:
  void Serve() {
    while (!stop_) {
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(50));
      bus::Incoming in;
      while (bus::Receive(socket_, in)) {
        auto d = proto::Decode(in.payload.data(), in.payload.size());
        if (!d.ok()) continue;
        ++refused_;
        bus::ReplyMessage(socket_, in,
                          proto::MakeError(Status::IoError(kDiskFull), d->id(), d->type()));
      }
    }
  }

  zmq::context_t ctx_{1};
  zmq::socket_t socket_;
  std::string endpoint_;
  std::atomic<bool> stop_{false};
  std::atomic<int> refused_{0};
  std::thread thread_;
};

// A cluster without workers plus one trial-worker "w1" whose checkpoint-store is `store`.
class CheckpointFailedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster_.Start());
    Process::Options o;
    o.name = "w1";
    o.binary = BinDir() / "trial-worker";
    o.args = {"--worker-id",
              "w1",
              "--scheduler",
              cluster_.worker_endpoint(),
              "--rm",
              cluster_.rm(),
              "--store",
              store_.endpoint(),
              "--cpus",
              "1",
              "--heartbeat-interval-ms",
              "200"};
    o.log_dir = cluster_.dir() / "logs";
    Ready ready;
    ASSERT_TRUE(SpawnReady(o, cluster_.dir() / "ready" / "w1.json", worker_, ready));
    ASSERT_TRUE(WaitFor(
        [&] {
          const json view = cluster_.Workers();
          return view.is_array() && view.size() == 1 && view[0].value("alive", false) &&
                 view[0].value("connected", false);
        },
        15s, 100ms))
        << cluster_.LogTails();
  }
  void TearDown() override {
    if (worker_) worker_->Stop();
  }

  // Runs an experiment of the mock trainable (6 iterations, a checkpoint every 2) with the
  // extra `fields` to its end (`tunectl run` exits `exit_code`: 1 when a trial ends in ERROR);
  // returns its one trial as `tunectl -o json ls` shows it.
  json RunOneTrial(const std::string& name, const std::string& fields, int exit_code = 0) {
    const fs::path file = cluster_.dir() / (name + ".yaml");
    WriteFile(file, "name: " + name + "\nresults_dir: " + (cluster_.dir() / "results").string() +
                        "\ntrainable: {builtin: mock}\n"
                        "param_space: {mock_iterations: 6, sleep_s: 0.02}\n"
                        "checkpoint_freq: 2\n" +
                        fields);
    auto run = cluster_.Ctl({"-o", "json", "run", file.string()}, 60s);
    EXPECT_EQ(run.exit_code, exit_code) << run.Describe() << cluster_.LogTails();
    const json trials = cluster_.Ctl({"-o", "json", "ls"}).Json();
    return trials.is_array() && !trials.empty() ? trials[0] : json();
  }

  ClusterOptions Options() {
    ClusterOptions o;
    o.workers = 0;
    return o;
  }

  Cluster cluster_{Options()};
  FullStore store_;
  std::unique_ptr<Process> worker_;
};

TEST_F(CheckpointFailedTest, RefusedCheckpointsAreJournaledShownAndTheTrialRunsOn) {
  // checkpoint_failure left at its default (continue): the checkpoints of 2, 4 and 6 are all
  // refused; the trial runs to its end (TERMINATED, every result), keeps no checkpoint, lists
  // the three refusals with the store's reason, and `tunectl show` says so in one line.
  const json t = RunOneTrial("refused", "");
  ASSERT_TRUE(t.is_object()) << cluster_.LogTails();
  EXPECT_EQ(t.value("status", ""), "TERMINATED") << t.dump();
  EXPECT_EQ(t.value("training_iteration", -1), 6);
  EXPECT_EQ(t.value("num_failures", -1), 0);
  EXPECT_TRUE(t["checkpoints"].empty()) << t.dump();
  const std::string reason = std::string("io_error: ") + kDiskFull;
  json expected = json::array();
  for (int i : {2, 4, 6}) expected.push_back({{"training_iteration", i}, {"reason", reason}});
  EXPECT_EQ(t["checkpoints_not_stored"], expected) << t.dump();
  EXPECT_EQ(t.value("num_checkpoints_not_stored", -1), 3);
  EXPECT_GE(store_.refused(), 3);

  const auto show = cluster_.Ctl({"show", t.value("trial_id", "")});
  ASSERT_EQ(show.exit_code, 0) << show.Describe();
  EXPECT_NE(show.out.find("checkpoints 2–6 not stored (3 checkpoints): " + reason),
            std::string::npos)
      << show.out;
  const std::string log = cluster_.process("scheduler")->Output();
  EXPECT_NE(log.find("checkpoint at iteration 2 was not stored on worker w1: " + reason +
                     "; the trial runs on (checkpoint_failure: continue)"),
            std::string::npos)
      << Tail(cluster_.process("scheduler")->stdout_path());
}

TEST_F(CheckpointFailedTest, WithCheckpointFailureFailTheTrialErrorsNamingTheIteration) {
  // checkpoint_failure: fail, max_failures 0: the refusal of the checkpoint of 2 fails the trial
  // at once; it is ERROR with the error naming the iteration and the store's reason, which its
  // error.txt holds too.
  const json t = RunOneTrial("failing", "checkpoint_failure: fail\n", /*exit_code=*/1);
  ASSERT_TRUE(t.is_object()) << cluster_.LogTails();
  const std::string error =
      std::string("checkpoint at iteration 2 not stored: io_error: ") + kDiskFull;
  EXPECT_EQ(t.value("status", ""), "ERROR") << t.dump();
  EXPECT_EQ(t.value("error", ""), error);
  EXPECT_EQ(t.value("num_failures", -1), 1);
  const std::string error_txt = ReadFile(fs::path(t.value("dir", "")) / "error.txt");
  EXPECT_NE(error_txt.find("attempt 1: " + error), std::string::npos) << error_txt;
}

}  // namespace
}  // namespace tunebus::testing
