// What services need from their environment: bus::MakeWritableDir
// tells a folder that can be written from one that cannot, bus::GuardMain turns an escaping
// exception into exit 1, and /healthz (what `<service> --healthcheck` asks) is ok only while the
// service publishes its figures.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <thread>

#include "libs/bus/service_guard.hpp"
#include "libs/metrics/metrics_server.hpp"
#include "tests/support/wait_until.hpp"

namespace tunebus {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(MakeWritableDirTest, CreatesAFolderAndNamesOneItCannotWrite) {
  char tmpl[] = "/tmp/tunebus-writable-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const fs::path dir(tmpl);
  EXPECT_TRUE(bus::MakeWritableDir((dir / "a" / "b").string(), "results folder").ok());
  EXPECT_TRUE(fs::is_directory(dir / "a" / "b"));
  EXPECT_TRUE(fs::is_empty(dir / "a" / "b")) << "the write probe is removed";
  // A path through a regular file cannot be created, even by root.
  {
    std::FILE* f = std::fopen((dir / "file").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
  }
  Status s = bus::MakeWritableDir((dir / "file" / "x").string(), "trial dir");
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_EQ(s.message(),
            "cannot create trial dir " + (dir / "file" / "x").string() + ": Not a directory");
  if (::geteuid() != 0) {  // root writes anywhere: the permission case runs in bad_environment_test
    ASSERT_EQ(::chmod((dir / "a").c_str(), 0555), 0);
    s = bus::MakeWritableDir((dir / "a").string(), "data dir");
    EXPECT_EQ(s.message(),
              "cannot write in data dir " + (dir / "a").string() + ": Permission denied");
    ::chmod((dir / "a").c_str(), 0755);
  }
  fs::remove_all(dir);
}

TEST(GuardMainTest, AnEscapingExceptionIsExitOneNotAnAbort) {
  EXPECT_EQ(bus::GuardMain("svc", [] { return 0; }), 0);
  EXPECT_EQ(bus::GuardMain("svc", [] { return 2; }), 2);
  EXPECT_EQ(bus::GuardMain("svc",
                           []() -> int {
                             throw fs::filesystem_error(
                                 "mkdir", std::error_code(13, std::generic_category()));
                           }),
            1);
  EXPECT_EQ(bus::GuardMain("svc", []() -> int { throw 42; }), 1);
}

TEST(HealthzTest, IsOkOnlyWhileTheServicePublishes) {
  // Not before the first publish (starting), ok after one, and unhealthy again once the loop has
  // been silent longer than healthy_within (a loop stuck in a handler).
  auto server = metrics::MetricsServer::Start("127.0.0.1", 0, 300ms);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const int port = (*server)->port();
  EXPECT_EQ(metrics::CheckHealth("127.0.0.1", port), 1);
  (*server)->Publish("x 1\n");
  EXPECT_EQ(metrics::CheckHealth("0.0.0.0", port), 0);  // a wildcard host asks loopback
  EXPECT_TRUE(test_support::WaitUntil(
      "/healthz turns unhealthy 300 ms after the last publish",
      [&] { return metrics::CheckHealth("127.0.0.1", port) == 1; }, 5s, 20ms));
  (*server)->Publish("x 2\n");
  EXPECT_EQ(metrics::CheckHealth("127.0.0.1", port), 0);
}

}  // namespace
}  // namespace tunebus
