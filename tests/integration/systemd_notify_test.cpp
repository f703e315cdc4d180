// Readiness under systemd: a service in a Type=notify unit (deploy/systemd/)
// tells systemd READY=1 through sd_notify(3) once it has bound its sockets and written its ready
// file, and STOPPING=1 when SIGTERM has ended its loop (libs/service/service_main.cpp). The tests
// play systemd's part: they bind a unix datagram socket and hand its address to a real
// checkpoint-store as NOTIFY_SOCKET, as systemd does for a Type=notify unit.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <optional>
#include <string>

#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using namespace std::chrono_literals;

// A unix datagram socket in the abstract namespace (no file to clean up, no 108-byte path limit
// for the test's long temporary folder); `address()` is its NOTIFY_SOCKET value, "@name", which
// sd_notify reads as the abstract name, as systemd documents.
class NotifySocket {
 public:
  NotifySocket() {
    static int counter = 0;
    name_ = "tunebus-notify-test-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path + 1, name_.data(), name_.size());  // sun_path[0] = '\0': abstract
    const socklen_t len = offsetof(sockaddr_un, sun_path) + 1 + name_.size();
    bound_ = fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0;
  }
  ~NotifySocket() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool bound() const { return bound_; }
  std::string address() const { return "@" + name_; }

  // The next datagram within `timeout`, or nullopt.
  std::optional<std::string> Receive(Millis timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return std::nullopt;
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n < 0) return std::nullopt;
    return std::string(buf, static_cast<size_t>(n));
  }

 private:
  std::string name_;
  int fd_ = -1;
  bool bound_ = false;
};

Process::Options Store(const fs::path& dir) {
  return {.name = "checkpoint-store",
          .binary = BinDir() / "checkpoint-store",
          .args = {"--endpoint", kAnyLoopback, "--data-dir", (dir / "store").string(),
                   "--ready-file", (dir / "store.json").string()},
          .log_dir = dir / "logs",
          .cwd = dir};
}

TEST(SystemdNotifyTest, ServiceSendsReadyOnceBoundAndStoppingOnSigterm) {
  // A checkpoint-store started with NOTIFY_SOCKET sends exactly "READY=1" once its ready file
  // names its bound endpoint, and "STOPPING=1" after SIGTERM, before it exits 0.
  TempDir dir;
  NotifySocket notify;
  ASSERT_TRUE(notify.bound()) << std::strerror(errno);
  Process::Options o = Store(dir.path());
  o.env["NOTIFY_SOCKET"] = notify.address();
  auto store = Process::Spawn(o);

  const std::optional<std::string> ready = notify.Receive(15s);
  ASSERT_TRUE(ready.has_value()) << "no READY=1 within 15 s\n" << store->Output();
  EXPECT_EQ(*ready, "READY=1");
  EXPECT_TRUE(fs::exists(dir.path() / "store.json")) << "READY=1 came before the ready file";
  EXPECT_TRUE(store->Running());

  store->Signal(SIGTERM);
  const std::optional<std::string> stopping = notify.Receive(10s);
  ASSERT_TRUE(stopping.has_value()) << "no STOPPING=1 within 10 s\n" << store->Output();
  EXPECT_EQ(*stopping, "STOPPING=1");
  EXPECT_EQ(store->Wait(10s), 0) << store->Output();
  EXPECT_FALSE(notify.Receive(0ms).has_value()) << "more than READY=1 and STOPPING=1";
}

TEST(SystemdNotifyTest, NotifySocketNobodyListensOnIsLoggedAndTheServiceServes) {
  // NOTIFY_SOCKET naming a socket nobody bound (systemd gone): the failed send is a warning, the
  // service writes its ready file and serves as without systemd.
  TempDir dir;
  Process::Options o = Store(dir.path());
  o.env["NOTIFY_SOCKET"] = "@tunebus-notify-test-nobody-" + std::to_string(::getpid());
  auto store = Process::Spawn(o);
  ASSERT_TRUE(WaitFor([&] { return fs::exists(dir.path() / "store.json"); }, 15s))
      << store->Output();
  EXPECT_TRUE(WaitFor(
      [&] { return store->Output().find("could not tell systemd READY=1") != std::string::npos; },
      5s))
      << store->Output();
  EXPECT_TRUE(store->Running());
  EXPECT_EQ(store->Stop(), 0) << store->Output();
}

}  // namespace
}  // namespace tunebus::testing
