// Security as a user meets it: keys made with `tunectl keygen`, the four services as
// processes on loopback with CURVE on every socket (--keys-dir), and tunectl with different
// keys. A viewer reads but cannot submit or stop; an operator can; a stranger's key, a worker's
// key and a plaintext client get nothing from the control socket and the scheduler logs each
// drop; an unknown key gets nothing from any server socket; a key removed from the allow-list
// stops working after SIGHUP; a service refuses a non-loopback bind without keys unless
// --insecure, and refuses a secret key file others can read.
#include "libs/bus/security.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>
#include <string>

#include "libs/bus/socket.hpp"
#include "proto/control.hpp"
#include "proto/resources.hpp"
#include "tests/fault/fault_support.hpp"
#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using namespace std::chrono_literals;

// `tunectl keygen` as a user runs it; fails the test if it does not exit 0.
void Keygen(const std::vector<std::string>& args) {
  std::vector<std::string> full = {"keygen"};
  full.insert(full.end(), args.begin(), args.end());
  auto r = RunTunectl(full);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
}

// A folder of keys: the suite's (all authorized), a viewer (authorized), a stranger (not).
std::string MakeKeys(const fs::path& dir) {
  const std::string keys = (dir / "keys").string();
  Keygen({"--suite", "--dir", keys});
  Keygen({"viewer", "--role", "viewer", "--authorize", "--dir", keys});
  Keygen({"stranger", "--role", "operator", "--dir", keys});
  return keys;
}

// An experiment of 2 trials that report 3 results each.
fs::path WriteExperiment(Cluster& cluster) {
  WriteFile(cluster.dir() / "train.sh",
            "for i in 1 2 3; do\n"
            "  echo \"{\\\"score\\\": $i}\" >&$TUNEBUS_REPORT_FD\n"
            "  read -r decision <&$TUNEBUS_DECISION_FD\n"
            "  [ \"$decision\" = stop ] && exit 0\n"
            "  sleep 0.2\n"
            "done\n");
  const fs::path file = cluster.dir() / "secure.yaml";
  WriteFile(file,
            "name: secure\n"
            "trainable: {command: [sh, train.sh]}\n"
            "working_dir: false\n"
            "param_space: {x: {grid_search: [1, 2]}}\n"
            "metric: score\nmode: max\n"
            "results_dir: " +
                (cluster.dir() / "results").string() + "\n");
  return file;
}

std::string SchedulerLog(Cluster& cluster) { return cluster.process("scheduler")->Output(); }

// Keys made by MakeKeys and a cluster of one worker with CURVE on every socket (the worker
// registered with its worker key).
class SecureClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ClusterOptions o;
    o.workers = 1;
    o.keys_dir = keys_ = MakeKeys(keys_dir_.path());
    cluster_ = std::make_unique<Cluster>(o);
    ASSERT_TRUE(cluster_->Start());
  }
  TempDir keys_dir_;
  std::string keys_;
  std::unique_ptr<Cluster> cluster_;
};

TEST_F(SecureClusterTest, RolesDecideWhoMayReadSubmitAndStopAndStrangersGetNothing) {
  const fs::path file = WriteExperiment(*cluster_);

  // A viewer cannot submit: a typed forbidden error naming the role needed, and a log line.
  auto submit = cluster_->Ctl({"--key-name", "viewer", "run", file.string(), "--detach"});
  EXPECT_EQ(submit.exit_code, 1) << submit.Describe();
  EXPECT_NE(submit.err.find("forbidden"), std::string::npos) << submit.Describe();
  EXPECT_NE(submit.err.find("key viewer has role viewer; submit_experiment needs operator"),
            std::string::npos)
      << submit.Describe();
  EXPECT_TRUE(WaitFor(
      [&] {
        return SchedulerLog(*cluster_).find("Dropping submit_experiment") != std::string::npos &&
               SchedulerLog(*cluster_).find("because forbidden: key viewer has role viewer") !=
                   std::string::npos;
      },
      5s))
      << SchedulerLog(*cluster_);

  // The operator key (tunectl's default name) can; the viewer then reads.
  ASSERT_FALSE(SubmitDetached(*cluster_, file, "secure").empty());
  auto ls = cluster_->Ctl({"--key-name", "viewer", "-o", "json", "ls"});
  ASSERT_EQ(ls.exit_code, 0) << ls.Describe();
  EXPECT_EQ(ls.Json().size(), 2u) << ls.out;
  auto stop = cluster_->Ctl({"--key-name", "viewer", "stop-experiment"});
  EXPECT_EQ(stop.exit_code, 1) << stop.Describe();
  EXPECT_NE(stop.err.find("needs operator"), std::string::npos) << stop.Describe();

  // A stranger's key, a worker's key and a plaintext client get no answer at all.
  auto stranger = cluster_->Ctl({"--key-name", "stranger", "--timeout-ms", "1500", "ls"});
  EXPECT_EQ(stranger.exit_code, 3) << stranger.Describe();
  auto worker = cluster_->Ctl({"--key-name", "worker", "--timeout-ms", "1500", "ls"});
  EXPECT_EQ(worker.exit_code, 3) << worker.Describe();
  auto plaintext = RunTunectl({"--connect", cluster_->control(), "--timeout-ms", "1500", "ls"});
  EXPECT_EQ(plaintext.exit_code, 3) << plaintext.Describe();
  const std::string log = SchedulerLog(*cluster_);
  EXPECT_NE(log.find("Dropping connection to control from 127.0.0.1 because key "),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("is not in the allow-list"), std::string::npos) << log;
  EXPECT_NE(log.find("because key worker has role worker; control needs viewer or operator"),
            std::string::npos)
      << log;

  // The run itself is not disturbed: the operator stops it (an operator may).
  auto stopped = cluster_->Ctl({"stop-experiment"});
  EXPECT_EQ(stopped.exit_code, 0) << stopped.Describe();
}

// Dashboard login tokens (docs/how-to/dashboard.md "Control"): only an operator's key gets one,
// named after that key; the scheduler signs them with a secret it keeps in its keys folder (0600).
TEST_F(SecureClusterTest, OnlyAnOperatorKeyGetsADashboardLoginToken) {
  auto viewer = cluster_->Ctl({"--key-name", "viewer", "dashboard-token"});
  EXPECT_EQ(viewer.exit_code, 1) << viewer.Describe();
  EXPECT_NE(viewer.err.find("key viewer has role viewer; issue_dashboard_token needs operator"),
            std::string::npos)
      << viewer.Describe();
  auto op = cluster_->Ctl({"-o", "json", "dashboard-token", "--role", "viewer", "--ttl", "5m"});
  ASSERT_EQ(op.exit_code, 0) << op.Describe();
  const nlohmann::json body = op.Json();
  EXPECT_EQ(body["name"], "tunectl") << op.out;
  EXPECT_EQ(body["role"], "viewer") << op.out;
  EXPECT_EQ(body["expires_at"].get<int64_t>() - body["issued_at"].get<int64_t>(), 300) << op.out;
  EXPECT_TRUE(body["token"].get<std::string>().starts_with("tbt1.")) << op.out;
  EXPECT_EQ(body["login_url"], "") << op.out;  // this scheduler serves no dashboard
  struct stat st {};
  const std::string secret = (fs::path(keys_) / "dashboard_token.secret").string();
  ASSERT_EQ(::stat(secret.c_str(), &st), 0) << secret;
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_NE(SchedulerLog(*cluster_).find(
                "Dashboard login token for tunectl (viewer) issued by tunectl, valid until"),
            std::string::npos)
      << SchedulerLog(*cluster_);
}

TEST_F(SecureClusterTest, AnUnknownKeyGetsNothingFromAnySocketAndEachServerLogsTheDrop) {
  auto stranger = bus::Security::Load({.keys_dir = keys_, .key_name = "stranger"}, "");
  ASSERT_TRUE(stranger.ok()) << stranger.status().ToString();
  zmq::context_t ctx;
  struct Target {
    std::string endpoint, server, process, domain;
  };
  const std::vector<Target> targets = {
      {cluster_->control(), "scheduler", "scheduler", "control"},
      {cluster_->worker_endpoint(), "scheduler", "scheduler", "workers"},
      {cluster_->rm(), "resource-manager", "resource-manager", "resource-manager"},
      {cluster_->store(), "checkpoint-store", "checkpoint-store", "checkpoint-store"}};
  for (const Target& t : targets) {
    auto dealer = bus::Connect(ctx, zmq::socket_type::dealer, t.endpoint, **stranger,
                               {t.server, ""}, {.routing_id = "w1"});
    ASSERT_TRUE(dealer.ok()) << dealer.status().ToString();
    proto::ListWorkers request;  // any message: none gets through the handshake
    request.id = 1;
    EXPECT_TRUE(bus::SendMessage(*dealer, request));
    zmq::pollitem_t item{dealer->handle(), 0, ZMQ_POLLIN, 0};
    EXPECT_EQ(zmq::poll(&item, 1, 1000ms), 0) << t.domain << " answered a stranger";
    EXPECT_TRUE(WaitFor(
        [&] {
          return cluster_->process(t.process)->Output().find(
                     "Dropping connection to " + t.domain + " from 127.0.0.1") != std::string::npos;
        },
        5s))
        << t.process << ":\n"
        << cluster_->process(t.process)->Output();
  }
  // A plaintext DEALER to the store gets nothing either.
  DealerClient plaintext(cluster_->store());
  plaintext.Send("\x81\xa4type\xacstore_status");
  EXPECT_FALSE(plaintext.Receive(1000ms).has_value());

  // A second, authorized worker key cannot register as worker w1: the id is w1's key's.
  Keygen({"worker-b", "--role", "worker", "--authorize", "--dir", keys_});
  cluster_->process("resource-manager")->Signal(SIGHUP);
  ASSERT_TRUE(WaitFor(
      [&] {
        return cluster_->process("resource-manager")->Output().find("reloaded: 7 keys") !=
               std::string::npos;
      },
      5s))
      << cluster_->process("resource-manager")->Output();
  auto impostor = bus::Security::Load({.keys_dir = keys_, .key_name = "worker-b"}, "");
  ASSERT_TRUE(impostor.ok()) << impostor.status().ToString();
  auto dealer = bus::Connect(ctx, zmq::socket_type::dealer, cluster_->rm(), **impostor,
                             {"resource-manager", ""}, {.routing_id = "w1-impostor"});
  ASSERT_TRUE(dealer.ok());
  proto::RegisterNode take_over;
  take_over.id = 7;
  take_over.worker_id = "w1";
  take_over.hostname = "elsewhere";
  take_over.capacity = {{"cpu", 10000}};
  ASSERT_TRUE(bus::SendMessage(*dealer, take_over));
  zmq::pollitem_t item{dealer->handle(), 0, ZMQ_POLLIN, 0};
  ASSERT_EQ(zmq::poll(&item, 1, 5000ms), 1);
  bus::Incoming reply;
  ASSERT_TRUE(bus::Receive(*dealer, reply));
  auto decoded = proto::Decode(reply.payload.data(), reply.payload.size());
  ASSERT_TRUE(decoded.ok());
  auto error = decoded->As<proto::ErrorReply>();
  ASSERT_TRUE(error.ok()) << decoded->type();
  EXPECT_EQ(error->code, "forbidden");
  EXPECT_NE(error->message.find("worker w1 belongs to key"), std::string::npos) << error->message;
  auto workers = cluster_->Workers();
  ASSERT_EQ(workers.size(), 1u) << workers.dump();
  EXPECT_EQ(workers.dump().find("elsewhere"), std::string::npos) << workers.dump();
}

TEST_F(SecureClusterTest, AKeyRemovedFromTheAllowListStopsWorkingAfterSighup) {
  auto before = cluster_->Ctl({"--key-name", "viewer", "workers"});
  ASSERT_EQ(before.exit_code, 0) << before.Describe();
  ASSERT_TRUE(fs::remove(fs::path(keys_) / "authorized" / "viewer.key"));
  // Without SIGHUP the running scheduler still lets it in.
  auto unchanged = cluster_->Ctl({"--key-name", "viewer", "workers"});
  EXPECT_EQ(unchanged.exit_code, 0) << unchanged.Describe();
  cluster_->process("scheduler")->Signal(SIGHUP);
  ASSERT_TRUE(WaitFor(
      [&] { return SchedulerLog(*cluster_).find("reloaded: 5 keys") != std::string::npos; }, 5s))
      << SchedulerLog(*cluster_);
  auto after = cluster_->Ctl({"--key-name", "viewer", "--timeout-ms", "1500", "workers"});
  EXPECT_EQ(after.exit_code, 3) << after.Describe();
  EXPECT_NE(SchedulerLog(*cluster_).find("is not in the allow-list"), std::string::npos);
  // The others still work: the scheduler kept running and serving.
  auto op = cluster_->Ctl({"workers"});
  EXPECT_EQ(op.exit_code, 0) << op.Describe();
}

TEST(SecurityTest, ServicesRefuseNonLoopbackBindsWithoutKeysAndReadableSecretKeys) {
  TempDir dir;
  Process::Options o;
  o.name = "store-open";
  o.binary = BinDir() / "checkpoint-store";
  o.args = {"--endpoint", "tcp://0.0.0.0:0", "--data-dir", (dir.path() / "store").string()};
  o.log_dir = dir.path() / "logs";
  auto refused = Process::Spawn(o);
  EXPECT_EQ(refused->Wait(10000ms), 1);
  EXPECT_NE(refused->Output().find("refusing to bind tcp://0.0.0.0:0 (checkpoint-store) without "
                                   "CURVE keys"),
            std::string::npos)
      << refused->Output();

  o.name = "store-insecure";
  o.args.push_back("--insecure");
  const fs::path ready = dir.path() / "insecure.json";
  std::unique_ptr<Process> insecure;
  Ready reported;
  ASSERT_TRUE(SpawnReady(o, ready, insecure, reported));
  EXPECT_NE(insecure->Output().find("INSECURE"), std::string::npos) << insecure->Output();
  insecure->Stop();

  const std::string keys = MakeKeys(dir.path());
  ASSERT_EQ(::chmod((fs::path(keys) / "checkpoint-store.key_secret").c_str(), 0644), 0);
  o.name = "store-readable-key";
  o.args = {"--endpoint", "tcp://127.0.0.1:0",
            "--data-dir", (dir.path() / "store").string(),
            "--keys-dir", keys};
  auto readable = Process::Spawn(o);
  EXPECT_EQ(readable->Wait(10000ms), 1);
  EXPECT_NE(readable->Output().find("has mode 0644: group or others may read it; chmod 600 it"),
            std::string::npos)
      << readable->Output();
}

}  // namespace
}  // namespace tunebus::testing
