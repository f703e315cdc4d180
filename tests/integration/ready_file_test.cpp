// Ports known only after binding (issue "First impressions", point 6): a service given
// `tcp://127.0.0.1:*` endpoints and `--metrics-port *` binds ports the kernel picks and writes
// them to its --ready-file (libs/service/ready_file.hpp); the harness starts every process test's
// services that way, so tests running in parallel cannot take each other's ports. A restart
// reuses the reported ports, and one whose port was taken meanwhile is retried.
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <regex>
#include <string>
#include <thread>

#include "tests/fault/fault_support.hpp"
#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using namespace std::chrono_literals;

// The port of a "tcp://127.0.0.1:N" endpoint, or 0 if it is not one with a port.
int PortOf(const std::string& endpoint) {
  std::smatch m;
  if (!std::regex_match(endpoint, m, std::regex(R"(tcp://127\.0\.0\.1:(\d+))"))) return 0;
  return std::stoi(m[1]);
}

// Something accepts TCP connections on 127.0.0.1:port.
bool Listening(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

// GET /healthz on the metrics port answers "ok" (the service's loop publishes) within 10 s.
bool HealthzOk(int port) {
  return WaitFor(
      [&] {
        httplib::Client client("127.0.0.1", port);
        client.set_connection_timeout(2);
        auto res = client.Get("/healthz");
        return res && res->status == 200 && res->body == "ok\n";
      },
      10s, 100ms);
}

Process::Options Service(const fs::path& dir, const std::string& binary,
                         std::vector<std::string> args) {
  return {.name = binary,
          .binary = BinDir() / binary,
          .args = std::move(args),
          .log_dir = dir / "logs",
          .cwd = dir};
}

TEST(ReadyFileTest, EveryServiceStartedOnWildcardPortsReportsPortsThatAnswer) {
  // Each binary on `tcp://127.0.0.1:*` and `--metrics-port *` writes a ready file naming real
  // ports, each bound socket under its flag's name, and those ports answer as that service: the
  // store lists checkpoints, the resource-manager answers a malformed request with an error,
  // tunectl reaches the scheduler's control socket, /healthz answers on every metrics port.
  TempDir dir;
  std::unique_ptr<Process> store, rm, scheduler, worker;
  Ready store_ready, rm_ready, scheduler_ready, worker_ready;
  Process::Options o = Service(dir.path(), "checkpoint-store",
                               {"--endpoint", kAnyLoopback, "--data-dir",
                                (dir.path() / "store").string(), "--metrics-port", "*"});
  ASSERT_TRUE(SpawnReady(o, dir.path() / "store.json", store, store_ready));
  EXPECT_EQ(store_ready.endpoints.size(), 1u);
  const std::string store_ep = store_ready.endpoint("endpoint");
  ASSERT_GT(PortOf(store_ep), 0) << store_ep;
  EXPECT_TRUE(ListCheckpoints(store_ep, "nothing/").empty());  // answers (else a failure)
  EXPECT_TRUE(HealthzOk(store_ready.metrics_port)) << store_ready.metrics_port;

  o = Service(
      dir.path(), "resource-manager",
      {"--endpoint", kAnyLoopback, "--events-endpoint", kAnyLoopback, "--metrics-port", "*"});
  ASSERT_TRUE(SpawnReady(o, dir.path() / "rm.json", rm, rm_ready));
  const std::string rm_ep = rm_ready.endpoint("endpoint");
  const std::string rm_events = rm_ready.endpoint("events-endpoint");
  ASSERT_GT(PortOf(rm_ep), 0) << rm_ep;
  ASSERT_GT(PortOf(rm_events), 0) << rm_events;
  EXPECT_NE(rm_ep, rm_events);
  DealerClient rm_client(rm_ep);
  rm_client.Send("not msgpack");
  EXPECT_TRUE(rm_client.Receive(5s).has_value()) << rm->Output();
  EXPECT_TRUE(Listening(PortOf(rm_events)));
  EXPECT_TRUE(HealthzOk(rm_ready.metrics_port)) << rm_ready.metrics_port;

  o = Service(
      dir.path(), "scheduler",
      {"--control", kAnyLoopback, "--workers", kAnyLoopback, "--events", kAnyLoopback, "--rm",
       rm_ep, "--rm-events", rm_events, "--store", store_ep, "--metrics-port", "*"});
  ASSERT_TRUE(SpawnReady(o, dir.path() / "scheduler.json", scheduler, scheduler_ready));
  const std::string control = scheduler_ready.endpoint("control");
  const std::string workers = scheduler_ready.endpoint("workers");
  ASSERT_GT(PortOf(control), 0) << control;
  ASSERT_GT(PortOf(workers), 0) << workers;
  ASSERT_GT(PortOf(scheduler_ready.endpoint("events")), 0);
  EXPECT_TRUE(Listening(PortOf(scheduler_ready.endpoint("events"))));
  EXPECT_TRUE(HealthzOk(scheduler_ready.metrics_port)) << scheduler_ready.metrics_port;
  // The flags now hold the reported ports: the same options start it again on them.
  EXPECT_NE(std::find(o.args.begin(), o.args.end(), control), o.args.end());
  EXPECT_EQ(std::find(o.args.begin(), o.args.end(), std::string(kAnyLoopback)), o.args.end());

  // A worker binds no socket: its ready file names only its metrics port.
  o = Service(dir.path(), "trial-worker",
              {"--worker-id", "w1", "--scheduler", workers, "--rm", rm_ep, "--store", store_ep,
               "--cpus", "1", "--heartbeat-interval-ms", "200", "--metrics-port", "*"});
  ASSERT_TRUE(SpawnReady(o, dir.path() / "w1.json", worker, worker_ready));
  EXPECT_TRUE(worker_ready.endpoints.empty());
  EXPECT_TRUE(HealthzOk(worker_ready.metrics_port)) << worker_ready.metrics_port;
  const bool joined = WaitFor(
      [&] {
        auto r = RunTunectl({"--connect", control, "-o", "json", "workers"}, 5s);
        return r.exit_code == 0 && r.Json().is_array() && r.Json().size() == 1 &&
               r.Json()[0].value("alive", false) && r.Json()[0].value("connected", false);
      },
      15s, 100ms);
  EXPECT_TRUE(joined) << scheduler->Output() << worker->Output();

  const std::set<int> ports = {
      PortOf(store_ep),         PortOf(rm_ep),         PortOf(rm_events),
      PortOf(control),          PortOf(workers),       PortOf(scheduler_ready.endpoint("events")),
      store_ready.metrics_port, rm_ready.metrics_port, scheduler_ready.metrics_port,
      worker_ready.metrics_port};
  EXPECT_EQ(ports.size(), 10u) << "every socket on a port of its own";
  for (Process* p : {worker.get(), scheduler.get(), rm.get(), store.get()}) {
    EXPECT_EQ(p->Stop(), 0) << p->Output();
  }
}

TEST(ReadyFileTest, ARestartedServiceListensAgainOnThePortsItsFirstStartReported) {
  // SIGKILL each service in turn and start it again: it binds the endpoints and the metrics port
  // of its first start, the workers and tunectl reconnect there, and the cluster works on.
  ClusterOptions options;
  options.workers = 1;
  options.metrics = true;
  Cluster cluster(options);
  ASSERT_TRUE(cluster.Start());
  const std::string control = cluster.control(), store = cluster.store(), rm = cluster.rm();
  std::map<std::string, int> metrics;
  for (const char* name : {"checkpoint-store", "resource-manager", "scheduler", "w1"})
    metrics[name] = cluster.metrics_port(name);
  for (const char* name : {"checkpoint-store", "resource-manager", "scheduler", "w1"}) {
    ASSERT_TRUE(cluster.Restart(name)) << name;
    EXPECT_EQ(cluster.metrics_port(name), metrics[name]) << name;
    EXPECT_TRUE(HealthzOk(metrics[name])) << name;
  }
  EXPECT_EQ(cluster.control(), control);
  EXPECT_EQ(cluster.store(), store);
  EXPECT_EQ(cluster.rm(), rm);
  const bool rejoined = WaitFor(
      [&] {
        const auto w = cluster.Workers();
        return w.is_array() && w.size() == 1 && w[0].value("alive", false) &&
               w[0].value("connected", false);
      },
      20s, 100ms);
  EXPECT_TRUE(rejoined) << cluster.Workers().dump() << cluster.LogTails();
  const fs::path file = cluster.dir() / "noop.yaml";
  WriteFile(file, "name: again\ntrainable: {builtin: noop}\nresults_dir: " +
                      (cluster.dir() / "results").string() + "\n");
  auto run = cluster.Ctl({"run", file.string()}, 60s);
  EXPECT_EQ(run.exit_code, 0) << run.Describe();
}

TEST(ReadyFileTest, AStartOnAPortTakenMeanwhileIsRetriedUntilThePortIsFree) {
  // A restart binds a port reported earlier; another process may hold it by then. SpawnReady
  // starts the service again (it exits 1, "Address already in use") until the port is free.
  TempDir dir;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string taken = "tcp://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  // The port is freed once the first start has failed on it (its log says so; the next start
  // moves that log to .stdout.1).
  const fs::path log = dir.path() / "logs" / "checkpoint-store.stdout";
  std::thread release([fd, log] {
    PollUntil(
        [&] {
          return ReadFile(log).find("Address already in use") != std::string::npos ||
                 fs::exists(log.string() + ".1");
        },
        15s);
    ::close(fd);
  });
  Process::Options o =
      Service(dir.path(), "checkpoint-store",
              {"--endpoint", taken, "--data-dir", (dir.path() / "store").string()});
  std::unique_ptr<Process> store;
  Ready ready;
  const auto r = SpawnReady(o, dir.path() / "store.json", store, ready);
  release.join();
  ASSERT_TRUE(r);
  EXPECT_EQ(ready.endpoint("endpoint"), taken);
  EXPECT_TRUE(fs::exists(dir.path() / "logs" / "checkpoint-store.stdout.1"))
      << "the first start found the port taken";
  EXPECT_NE(
      ReadFile(dir.path() / "logs" / "checkpoint-store.stdout.1").find("Address already in use"),
      std::string::npos);
  EXPECT_EQ(store->Stop(), 0) << store->Output();
}

}  // namespace
}  // namespace tunebus::testing
