// A real multi-host test: three network namespaces joined by veth links stand for three
// hosts. Host "c" runs the checkpoint-store, resource-manager and scheduler; hosts "a" and "b"
// each run a trial-worker that reaches c over its own link (10.77.1.0/24, 10.77.2.0/24). Every
// process runs with CURVE keys made by `tunectl keygen --suite`: the links carry only
// encrypted, authenticated traffic. An experiment runs across them; host a's link is cut mid-run
// (ip link set ... down): its worker is declared lost, its trials requeue on b and finish; the
// link comes back, the worker rejoins and receives new trials. Then a Python trainable whose
// folder is deleted right after `tunectl run --detach` uploaded it runs on both worker hosts from
// their working_dir caches (the namespaces share the filesystem, so only the deletion makes the
// store's copy the only one). A second test shows what CURVE keeps out: a stranger's key from
// host a gets nothing, and a service without keys refuses to bind c's address. Needs root and
// iproute2; skipped with a message otherwise.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// The trial's worker, "" when it has none (null in the JSON).
std::string WorkerOf(const json& t) {
  return t.contains("worker") && t["worker"].is_string() ? t["worker"].get<std::string>() : "";
}

bool Sh(const std::string& command) {
  return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
}

// Three namespaces and two veth links, removed again (with every process in them) on exit.
class Hosts {
 public:
  Hosts() : tag_(std::to_string(::getpid() % 100000)), keys_((dir_.path() / "keys").string()) {}
  ~Hosts() {
    processes_.clear();  // SIGKILL whatever still runs
    for (const char* h : {"c", "a", "b"}) Sh("ip netns del " + Ns(h));
  }
  std::string Ns(const std::string& host) const { return "tb" + tag_ + host; }
  std::string Veth(const std::string& host) const {
    return "tb" + tag_ + "c" + host;
  }  // c's end of host's link

  bool Create() {
    for (const char* h : {"c", "a", "b"}) {
      if (!Sh("ip netns add " + Ns(h)) || !Sh("ip netns exec " + Ns(h) + " ip link set lo up"))
        return false;
    }
    int subnet = 1;
    for (const char* h : {"a", "b"}) {
      const std::string c_end = Veth(h), far_end = "tb" + tag_ + h + "c";
      const std::string net = "10.77." + std::to_string(subnet++) + ".";
      if (!Sh("ip link add " + c_end + " netns " + Ns("c") + " type veth peer name " + far_end +
              " netns " + Ns(h)) ||
          !Sh("ip netns exec " + Ns("c") + " ip addr add " + net + "1/24 dev " + c_end) ||
          !Sh("ip netns exec " + Ns("c") + " ip link set " + c_end + " up") ||
          !Sh("ip netns exec " + Ns(h) + " ip addr add " + net + "2/24 dev " + far_end) ||
          !Sh("ip netns exec " + Ns(h) + " ip link set " + far_end + " up")) {
        return false;
      }
    }
    return true;
  }
  // The suite's keys (tunectl keygen --suite: the services', one worker key the workers share,
  // and tunectl's operator key), all in the allow-list keys()/authorized.
  bool MakeKeys() {
    const CommandResult r = RunTunectl({"keygen", "--suite", "--dir", keys_});
    EXPECT_EQ(r.exit_code, 0) << r.Describe();
    return r.exit_code == 0;
  }
  const std::string& keys() const { return keys_; }
  // Host c's services, each with the suite's keys. The store, the resource-manager's endpoint and
  // the scheduler's worker and control sockets listen on every address of c (CURVE guards them);
  // the event streams stay on loopback.
  void StartServices() {
    Start("c", "checkpoint-store", "checkpoint-store",
          {"--endpoint", "tcp://0.0.0.0:5557", "--data-dir", (dir_.path() / "store").string(),
           "--keys-dir", keys_});
    Start("c", "resource-manager", "resource-manager",
          {"--endpoint", "tcp://0.0.0.0:5556", "--events-endpoint", "tcp://127.0.0.1:5558",
           "--heartbeat-interval-ms", "200", "--liveness", "5", "--keys-dir", keys_});
    scheduler_ =
        Start("c", "scheduler", "scheduler",
              {"--control", "tcp://0.0.0.0:5555", "--workers", "tcp://0.0.0.0:5559", "--events",
               "tcp://127.0.0.1:5560", "--rm", "tcp://127.0.0.1:5556", "--rm-events",
               "tcp://127.0.0.1:5558", "--store", "tcp://127.0.0.1:5557", "--keys-dir", keys_});
  }
  Process* scheduler() const { return scheduler_; }
  bool SetLink(const std::string& host, bool up) {
    return Sh("ip netns exec " + Ns("c") + " ip link set " + Veth(host) + (up ? " up" : " down"));
  }
  Process* Start(const std::string& host, const std::string& name, const std::string& binary,
                 std::vector<std::string> args) {
    Process::Options o;
    o.name = name;
    o.binary = "/usr/sbin/ip";
    if (!fs::exists(o.binary)) o.binary = "/sbin/ip";
    o.args = {"netns", "exec", Ns(host), (BinDir() / binary).string()};
    o.args.insert(o.args.end(), args.begin(), args.end());
    o.log_dir = dir_.path() / "logs";
    processes_.push_back(Process::Spawn(o));
    return processes_.back().get();
  }
  // `tunectl -o json ARGS` on host c against the scheduler's control socket on loopback, with
  // the suite's operator key.
  json Ctl(const std::vector<std::string>& args) {
    std::vector<std::string> full = {"--connect", "tcp://127.0.0.1:5555", "--keys-dir", keys_, "-o",
                                     "json"};
    full.insert(full.end(), args.begin(), args.end());
    Process* p = Start("c", "tunectl-" + std::to_string(++calls_), "tunectl", full);
    if (!p->Wait(10s)) return nullptr;
    return json::parse(p->Stdout(), nullptr, /*allow_exceptions=*/false);
  }
  const fs::path& dir() const { return dir_.path(); }
  std::string Logs() {
    std::string out;
    for (const char* n : {"scheduler", "resource-manager", "w-a", "w-b"}) {
      out += std::string("----- ") + n + "\n" +
             Tail(dir_.path() / "logs" / (std::string(n) + ".stdout"), 15);
    }
    return out;
  }

 private:
  std::string tag_;
  TempDir dir_;
  std::string keys_;
  Process* scheduler_ = nullptr;
  int calls_ = 0;
  std::vector<std::unique_ptr<Process>> processes_;
};

// Skips the test (fails it under CI=true, where a skip would hide a broken namespace setup)
// unless this process is root and `hosts` could make its namespaces and links.
#define REQUIRE_HOSTS(hosts)                                                                \
  do {                                                                                      \
    const bool required =                                                                   \
        std::getenv("CI") != nullptr && std::string(std::getenv("CI")) == "true";           \
    if (::geteuid() != 0) {                                                                 \
      if (required) FAIL() << "CI=true but not root: network namespaces cannot be made";    \
      GTEST_SKIP() << "needs root to create network namespaces (ip netns)";                 \
    }                                                                                       \
    if (!(hosts).Create()) {                                                                \
      if (required) FAIL() << "CI=true but ip netns add / veth links failed";               \
      GTEST_SKIP() << "cannot create network namespaces and veth links here (ip netns add " \
                      "failed)";                                                            \
    }                                                                                       \
  } while (false)

TEST(MultiHostTest, CutWorkerHostIsLostItsTrialsFinishElsewhereAndItRejoins) {
  Hosts hosts;
  REQUIRE_HOSTS(hosts);
  ASSERT_TRUE(hosts.MakeKeys());
  hosts.StartServices();
  int subnet = 1;
  for (const char* h : {"a", "b"}) {
    const std::string c = "tcp://10.77." + std::to_string(subnet++) + ".1:";
    hosts.Start(h, std::string("w-") + h, "trial-worker",
                {"--worker-id", std::string("w-") + h, "--cpus", "2", "--heartbeat-interval-ms",
                 "200", "--scheduler", c + "5559", "--rm", c + "5556", "--store", c + "5557",
                 "--cache-dir", (hosts.dir() / "cache" / h).string(), "--keys-dir", hosts.keys()});
  }
  ASSERT_TRUE(WaitFor(
      [&] {
        const json w = hosts.Ctl({"workers"});
        int alive = 0;
        for (const json& x : w.is_array() ? w : json::array()) alive += x.value("alive", false);
        return alive == 2;
      },
      20s, 200ms))
      << hosts.Logs();

  const fs::path file = hosts.dir() / "multi.yaml";
  WriteFile(file,
            "name: multi\ntrainable: {builtin: mock}\n"
            "param_space:\n  lr: {uniform: [0.01, 0.1]}\n  mock_iterations: 30\n  sleep_s: 0.05\n"
            "num_samples: 12\nseed: 3\ncheckpoint_freq: 5\n"
            "resources_per_trial: {cpu: 1}\n"
            "results_dir: " +
                (hosts.dir() / "results").string() + "\n");
  const json submitted = hosts.Ctl({"run", "--detach", file.string()});
  ASSERT_TRUE(submitted.is_object()) << hosts.Logs();

  // Both hosts run trials; then host a is cut off.
  std::set<std::string> on_a;
  ASSERT_TRUE(WaitFor(
      [&] {
        on_a.clear();
        const json ls = hosts.Ctl({"ls", "--status", "RUNNING"});
        for (const json& t : ls.is_array() ? ls : json::array()) {
          if (WorkerOf(t) == "w-a") on_a.insert(t.value("trial_id", ""));
        }
        return on_a.size() == 2;
      },
      20s, 100ms))
      << hosts.Logs();
  ASSERT_TRUE(hosts.SetLink("a", false));
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const json& x : hosts.Ctl({"workers"})) {
          if (x.value("worker_id", "") == "w-a") return !x.value("alive", true);
        }
        return false;
      },
      10s, 200ms))
      << "w-a was not declared lost\n"
      << hosts.Logs();
  // Its trials run again on host b.
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const std::string& id : on_a) {
          const json t = hosts.Ctl({"show", id});
          if (t.value("status", "") != "TERMINATED" && WorkerOf(t) != "w-b") return false;
        }
        return true;
      },
      20s, 200ms))
      << hosts.Logs();

  // The link comes back: w-a rejoins and gets new trials.
  ASSERT_TRUE(hosts.SetLink("a", true));
  ASSERT_TRUE(WaitFor(
      [&] {
        const json ls = hosts.Ctl({"ls", "--status", "RUNNING"});
        for (const json& t : ls.is_array() ? ls : json::array()) {
          if (WorkerOf(t) == "w-a") return true;
        }
        return false;
      },
      20s, 100ms))
      << "w-a got no trial after it rejoined\n"
      << hosts.Logs();

  json status;
  ASSERT_TRUE(WaitFor(
      [&] {
        status = hosts.Ctl({"status"});
        return status.is_object() && status.value("finished", false);
      },
      60s, 250ms))
      << status.dump() << hosts.Logs();
  EXPECT_EQ(status.value("status", ""), "FINISHED");
  for (const json& t : hosts.Ctl({"ls"})) {
    EXPECT_EQ(t.value("status", ""), "TERMINATED") << t.dump();
    EXPECT_EQ(t.value("training_iteration", 0), 30) << t.dump();
    EXPECT_EQ(t.value("num_failures", -1), 0)
        << "a lost host is not a trainable failure: " << t.dump();
    if (on_a.contains(t.value("trial_id", ""))) {
      EXPECT_GE(t.value("attempt", 0), 2) << t.dump();
    }
  }

  // A Python trainable that exists only in the store once submitted: one trial per host (each
  // asks for both of a worker's cpus), each run in its host's cache.
  if (!Sh("command -v python3")) GTEST_SKIP() << "python3 is not on PATH";
  const fs::path project = hosts.dir() / "project";
  CopyTunebusPackage(project);
  WriteFile(project / "train.py",
            "import os, time\nimport tunebus\ncfg = tunebus.config()\n"
            "for i in range(10):\n"
            "    time.sleep(0.1)\n"
            "    tunebus.report(score=cfg['x'] * (i + 1), cwd=os.getcwd())\n");
  WriteFile(project / "exp.yaml",
            "name: shipped\ntrainable: {command: [python3, train.py]}\n"
            "param_space: {x: {grid_search: [1, 2]}}\n"
            "resources_per_trial: {cpu: 2}\n"
            "results_dir: " +
                (hosts.dir() / "results").string() + "\n");
  const json shipped = hosts.Ctl({"run", "--detach", (project / "exp.yaml").string()});
  ASSERT_TRUE(shipped.is_object()) << hosts.Logs();
  fs::remove_all(project);
  ASSERT_TRUE(WaitFor(
      [&] {
        status = hosts.Ctl({"status"});
        return status.is_object() && status.value("name", "") == "shipped" &&
               status.value("finished", false);
      },
      60s, 250ms))
      << status.dump() << hosts.Logs();
  EXPECT_EQ(status.value("status", ""), "FINISHED");
  std::set<std::string> caches;
  for (const json& t : hosts.Ctl({"ls"})) {
    EXPECT_EQ(t.value("status", ""), "TERMINATED") << t.dump();
    EXPECT_EQ(t.value("training_iteration", 0), 10) << t.dump();
    const std::string cwd = t["last_result"].value("cwd", "");
    for (const char* h : {"a", "b"}) {
      if (cwd.starts_with((hosts.dir() / "cache" / h).string() + "/")) caches.insert(h);
    }
  }
  EXPECT_EQ(caches, (std::set<std::string>{"a", "b"})) << "each host ran one trial in its cache";
}

TEST(MultiHostTest, AStrangerOnAnotherHostGetsNothingAndAServiceWithoutKeysRefusesToBind) {
  // Host c runs the suite with CURVE; its control socket listens on c's addresses. From host a, a
  // tunectl with the suite's operator key is answered (the route is there), while a tunectl with
  // a key made on a and never put in the allow-list (it knows the scheduler's public key, which
  // is no secret) and one without keys get no answer; the scheduler logs the stranger's drop with
  // a's address. A checkpoint-store started on c's link address without keys refuses to start.
  Hosts hosts;
  REQUIRE_HOSTS(hosts);
  ASSERT_TRUE(hosts.MakeKeys());
  hosts.StartServices();
  ASSERT_TRUE(WaitFor([&] { return hosts.Ctl({"workers"}).is_array(); }, 20s, 200ms))
      << hosts.Logs();

  const std::string control = "tcp://10.77.1.1:5555";
  // `tunectl ARGS` on host a; its exit code (-1 if it did not end within 15 s) and output.
  int calls = 0;
  auto from_a = [&](std::vector<std::string> args) {
    Process* p = hosts.Start("a", "tunectl-a-" + std::to_string(++calls), "tunectl", args);
    return std::make_pair(p->Wait(15s).value_or(-1), p->Output());
  };
  auto [op_code, op_out] = from_a({"--connect", control, "--keys-dir", hosts.keys(), "workers"});
  EXPECT_EQ(op_code, 0) << op_out;

  const fs::path stranger = hosts.dir() / "stranger-keys";
  const CommandResult made =
      RunTunectl({"keygen", "stranger", "--role", "operator", "--dir", stranger.string()});
  ASSERT_EQ(made.exit_code, 0) << made.Describe();
  fs::copy_file(fs::path(hosts.keys()) / "scheduler.key", stranger / "scheduler.key");
  auto [code, out] = from_a({"--connect", control, "--keys-dir", stranger.string(), "--key-name",
                             "stranger", "--timeout-ms", "1500", "ls"});
  EXPECT_EQ(code, 3) << "a stranger's key was answered:\n" << out;
  EXPECT_TRUE(WaitFor(
      [&] {
        const std::string log = hosts.scheduler()->Output();
        return log.find("Dropping connection to control from 10.77.1.2 because key ") !=
                   std::string::npos &&
               log.find("is not in the allow-list") != std::string::npos;
      },
      5s))
      << hosts.scheduler()->Output();
  auto [plain_code, plain_out] = from_a({"--connect", control, "--timeout-ms", "1500", "ls"});
  EXPECT_EQ(plain_code, 3) << "a plaintext client was answered:\n" << plain_out;

  Process* open = hosts.Start(
      "c", "store-without-keys", "checkpoint-store",
      {"--endpoint", "tcp://10.77.1.1:5600", "--data-dir", (hosts.dir() / "open").string()});
  EXPECT_EQ(open->Wait(10s), 1) << open->Output();
  EXPECT_NE(open->Output().find("refusing to bind tcp://10.77.1.1:5600 (checkpoint-store) "
                                "without CURVE keys"),
            std::string::npos)
      << open->Output();
}

}  // namespace
}  // namespace tunebus::testing
