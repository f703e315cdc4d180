// Every service serves Prometheus text metrics over HTTP (cpp-httplib) on the port its
// --metrics-port flag names (here `*`: the port it picks and reports in its --ready-file); scraped
// here on loopback while a mock experiment runs and after.
#include <gtest/gtest.h>
#include <httplib.h>

#include <string>

#include "tests/fault/fault_support.hpp"
#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using namespace std::chrono_literals;

std::string Scrape(int port, const std::string& path = "/metrics") {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2);
  auto res = client.Get(path.c_str());
  return res && res->status == 200 ? res->body : std::string();
}

TEST(MetricsTest, EveryServiceServesPrometheusTextWithItsFigures) {
  ClusterOptions o;
  o.workers = 1;
  o.cpus_per_worker = 2;
  o.metrics = true;
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  const int store = cluster.metrics_port("checkpoint-store"),
            rm = cluster.metrics_port("resource-manager"),
            sched = cluster.metrics_port("scheduler"), w1 = cluster.metrics_port("w1");
  const fs::path file = cluster.dir() / "m.yaml";
  WriteFile(file,
            "name: m\ntrainable: {builtin: mock}\n"
            "param_space: {lr: {grid_search: [0.1, 0.2, 0.3]}, mock_iterations: 5}\n"
            "resources_per_trial: {cpu: 1}\n"
            "results_dir: " +
                (cluster.dir() / "results").string() + "\n");
  ASSERT_FALSE(SubmitDetached(cluster, file, "m").empty());
  ASSERT_FALSE(WaitFinished(cluster, 30s).empty());

  // Figures are rendered every second: wait for the ones the finished experiment leaves.
  std::string text;
  EXPECT_TRUE(WaitFor(
      [&] {
        text = Scrape(sched);
        return text.find("tunebus_trials{status=\"TERMINATED\"} 3") != std::string::npos;
      },
      5s, 200ms))
      << text;
  EXPECT_NE(text.find("# TYPE tunebus_results_total counter"), std::string::npos) << text;
  EXPECT_NE(text.find("tunebus_results_total 15"), std::string::npos) << text;
  EXPECT_NE(text.find("tunebus_journal_append_latency_seconds"), std::string::npos) << text;
  EXPECT_NE(text.find("tunebus_workers_connected 1"), std::string::npos) << text;

  EXPECT_TRUE(WaitFor(
      [&] {
        text = Scrape(rm);
        return text.find("tunebus_workers_alive 1") != std::string::npos;
      },
      5s, 200ms))
      << text;
  EXPECT_NE(text.find("tunebus_resources_capacity{resource=\"cpu\",worker=\"w1\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tunebus_resources_free{resource=\"cpu\",worker=\"w1\"} 2"),
            std::string::npos)
      << text;

  text = Scrape(store);
  EXPECT_NE(text.find("tunebus_group_commits_total"), std::string::npos) << text;
  EXPECT_NE(text.find("tunebus_journals 1"), std::string::npos) << text;
  text = Scrape(w1);
  EXPECT_NE(text.find("tunebus_trials_running 0"), std::string::npos) << text;
  EXPECT_EQ(Scrape(w1, "/healthz"), "ok\n");
}

}  // namespace
}  // namespace tunebus::testing
