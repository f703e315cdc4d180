// Clean stops: SIGTERM and SIGINT stop every service with exit 0 at any
// point, start-up waits included. Each service starts with its peers on loopback ports that
// refuse connections (the test holds them bound and never listens, so no other process can take
// them): the scheduler then waits at start for journal reads the checkpoint-store never answers,
// the trial-worker tries to register with a scheduler it cannot reach, and `tunectl up` (the
// embedded suite) starts beside them. Each gets the signal while it waits and must exit 0 within
// 5 s; the scheduler says in its log that it stopped during start-up.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using namespace std::chrono_literals;

// A tcp://127.0.0.1 endpoint that refuses connections: a port bound by this object but not
// listened on, for as long as it lives.
class RefusingEndpoint {
 public:
  RefusingEndpoint() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = 0;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "cannot reserve a loopback port";
      return;
    }
    endpoint_ = "tcp://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  }
  ~RefusingEndpoint() {
    if (fd_ >= 0) ::close(fd_);
  }
  RefusingEndpoint(const RefusingEndpoint&) = delete;
  RefusingEndpoint& operator=(const RefusingEndpoint&) = delete;
  const std::string& endpoint() const { return endpoint_; }

 private:
  int fd_ = -1;
  std::string endpoint_;
};

// Starts every service and `tunectl up` with unreachable peers, sends `signo` to each while it
// waits, and expects each to exit 0 within 5 s.
void ExpectEveryServiceStopsCleanlyDuringStartUp(int signo) {
  TempDir dir;
  const RefusingEndpoint store, rm, rm_events, scheduler_workers;
  struct Started {
    std::string name;
    std::unique_ptr<Process> process;
  };
  const auto options = [&](const std::string& name, const std::string& binary,
                           std::vector<std::string> args) {
    args.insert(args.end(), {"--ready-file", (dir.path() / "ready" / (name + ".json")).string()});
    return Process::Options{.name = name,
                            .binary = BinDir() / binary,
                            .args = std::move(args),
                            .log_dir = dir.path() / "logs",
                            .cwd = dir.path()};
  };
  fs::create_directories(dir.path() / "ready");
  std::vector<Process::Options> all = {
      options("checkpoint-store", "checkpoint-store",
              {"--endpoint", kAnyLoopback, "--data-dir", (dir.path() / "store").string()}),
      options("resource-manager", "resource-manager",
              {"--endpoint", kAnyLoopback, "--events-endpoint", kAnyLoopback}),
      options("scheduler", "scheduler",
              {"--control", kAnyLoopback, "--workers", kAnyLoopback, "--events", kAnyLoopback,
               "--rm", rm.endpoint(), "--rm-events", rm_events.endpoint(), "--store",
               store.endpoint(), "--results-dir", (dir.path() / "results").string()}),
      options(
          "trial-worker", "trial-worker",
          {"--worker-id", "w1", "--scheduler", scheduler_workers.endpoint(), "--rm", rm.endpoint(),
           "--store", store.endpoint(), "--cpus", "1", "--heartbeat-interval-ms", "200"}),
      options("tunectl-up", "tunectl",
              {"up", "--control", kAnyLoopback, "--events", kAnyLoopback, "--data-dir",
               (dir.path() / "up").string(), "--cpus", "1"}),
  };
  std::vector<Started> started;
  for (const Process::Options& o : all) started.push_back({o.name, Process::Spawn(o)});
  for (Started& s : started) {
    Ready ready;
    ASSERT_TRUE(WaitReady(*s.process, dir.path() / "ready" / (s.name + ".json"), 15s, ready))
        << s.name;
  }
  // The scheduler logs "scheduler serving" just before it reads the journals; once its main
  // thread then blocks in poll(2) (its wait channel, /proc/PID/wchan, names a poll function),
  // it is inside that wait (it lasts 30 s without an answer).
  Process& scheduler = *started[2].process;
  ASSERT_TRUE(WaitFor(
      [&] { return scheduler.Output().find("scheduler serving") != std::string::npos; }, 15s))
      << scheduler.Output();
  const fs::path wchan = "/proc/" + std::to_string(scheduler.pid()) + "/wchan";
  ASSERT_TRUE(WaitUntil("the scheduler blocks in its start-up wait",
                        [&] { return ReadFile(wchan).find("poll") != std::string::npos; }))
      << wchan << ": " << ReadFile(wchan);
  for (Started& s : started) {
    ASSERT_TRUE(s.process->Running()) << s.name << " exited before the signal:\n"
                                      << s.process->Output();
  }

  for (Started& s : started) s.process->Signal(signo);
  const auto signalled = std::chrono::steady_clock::now();
  for (Started& s : started) {
    const std::optional<int> code = s.process->Wait(5s);
    const auto took =
        std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now() - signalled);
    ASSERT_TRUE(code.has_value()) << s.name << " still runs 5 s after signal " << signo << ":\n"
                                  << s.process->Output();
    EXPECT_EQ(*code, 0) << s.name << " after signal " << signo << " (" << took.count() << " ms):\n"
                        << s.process->Output();
    std::cout << "[clean-stop] " << s.name << " exited " << *code << " within " << took.count()
              << " ms of signal " << signo << "\n";
  }
  EXPECT_NE(scheduler.Output().find("scheduler stopped during start-up"), std::string::npos)
      << scheduler.Output();
}

TEST(CleanStopTest, SigtermDuringStartUpWaitsStopsEveryServiceWithExitZero) {
  ExpectEveryServiceStopsCleanlyDuringStartUp(SIGTERM);
}

TEST(CleanStopTest, SigintDuringStartUpWaitsStopsEveryServiceWithExitZero) {
  ExpectEveryServiceStopsCleanlyDuringStartUp(SIGINT);
}

}  // namespace
}  // namespace tunebus::testing
