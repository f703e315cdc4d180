// Ports known only after binding: `--metrics-port *` asks for a free port (kAnyPort; 0 stays
// "off"), the metrics server reports the port it bound, and the ready file that names what a
// service bound is one JSON object, replaced atomically (libs/service/ready_file.hpp).
#include "libs/service/ready_file.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "libs/metrics/metrics_flags.hpp"

namespace tunebus {
namespace {

namespace fs = std::filesystem;

// --metrics-port VALUE parsed as a service parses it; the exception CLI11 throws propagates.
int ParseMetricsPort(const std::string& value) {
  CLI::App app;
  metrics::MetricsOptions options;
  metrics::AddMetricsFlags(app, options);
  app.parse(std::vector<std::string>{value, "--metrics-port"});  // CLI11 wants them reversed
  return options.port;
}

TEST(MetricsPortFlagTest, StarAsksForAnyPortAndZeroStaysOff) {
  EXPECT_EQ(ParseMetricsPort("*"), metrics::kAnyPort);
  EXPECT_EQ(ParseMetricsPort("0"), 0);
  EXPECT_EQ(ParseMetricsPort("9100"), 9100);
  EXPECT_THROW(ParseMetricsPort("70000"), CLI::ValidationError);
  EXPECT_THROW(ParseMetricsPort("-1"), CLI::ValidationError);  // kAnyPort is spelled *
  EXPECT_THROW(ParseMetricsPort("91x"), CLI::ValidationError);
}

TEST(MetricsServerTest, AnyPortBindsAFreePortAndReportsIt) {
  auto server = metrics::MetricsServer::Start("127.0.0.1", metrics::kAnyPort);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  EXPECT_GT((*server)->port(), 0);
  (*server)->Publish("x 1\n");
  EXPECT_EQ(metrics::CheckHealth("127.0.0.1", (*server)->port()), 0);  // it serves there
}

TEST(ReadyFileTest, NamesEveryBoundEndpointByFlagAndReplacesTheFileWhole) {
  // The text is one JSON object; writing again replaces the file (a temporary file renamed over
  // it), and no temporary file stays behind.
  char tmpl[] = "/tmp/tunebus-ready-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const fs::path dir(tmpl);
  const fs::path path = dir / "scheduler.json";
  const service::BoundEndpoints bound = {{"control", "tcp://127.0.0.1:40123"},
                                         {"events", "tcp://127.0.0.1:40125"}};
  EXPECT_EQ(
      nlohmann::json::parse(service::ReadyFileText("scheduler", 42, bound, 40126)),
      (nlohmann::json{{"service", "scheduler"},
                      {"pid", 42},
                      {"endpoints",
                       {{"control", "tcp://127.0.0.1:40123"}, {"events", "tcp://127.0.0.1:40125"}}},
                      {"metrics_port", 40126}}));
  auto read = [&] {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return nlohmann::json::parse(ss.str());
  };
  ASSERT_TRUE(service::WriteReadyFile(path.string(), "scheduler", bound, 0).ok());
  EXPECT_EQ(read()["pid"], ::getpid());
  EXPECT_EQ(read()["endpoints"]["control"], "tcp://127.0.0.1:40123");
  EXPECT_EQ(read()["metrics_port"], 0);
  ASSERT_TRUE(service::WriteReadyFile(path.string(), "trial-worker", {}, 9100).ok());
  EXPECT_EQ(read()["service"], "trial-worker");
  EXPECT_TRUE(read()["endpoints"].empty());
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);

  const Status missing = service::WriteReadyFile((dir / "no" / "r.json").string(), "x", {}, 0);
  EXPECT_EQ(missing.code(), StatusCode::kIoError);
  EXPECT_EQ(missing.message(), "cannot write the ready file " + (dir / "no" / "r.json").string() +
                                   ": No such file or directory");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tunebus
