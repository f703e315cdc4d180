// One version string. Every binary's --version prints "<program> 0.1.0
// (commit abc1234)" (Version(), Commit(): libs/core/version.hpp, generated from the root
// CMakeLists.txt's project() line) and exits 0; a running scheduler tells its version in
// get_experiment's answer (`version`, proto/PROTOCOL.md v1.12), `tunectl status` prints it, and
// the dashboard's pages show it in their footer.
#include "libs/core/version.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <regex>
#include <set>
#include <string>

#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using namespace std::chrono_literals;

// "<program> <version> (commit <commit>)\n" parsed into version and commit; false if not that.
bool ParseVersionLine(const std::string& out, const std::string& program, std::string& version,
                      std::string& commit) {
  std::smatch m;
  if (!std::regex_match(out, m, std::regex(R"((\S+) (\S+) \(commit ([A-Za-z0-9._+-]+)\)\n)")) ||
      m[1] != program)
    return false;
  version = m[2];
  commit = m[3];
  return true;
}

TEST(VersionTest, EveryBinaryPrintsItsNameVersionAndCommitAndExitsZero) {
  // The four services print "tunebus-<service>", tunectl "tunectl"; nothing else is started
  // (no socket is bound: --version comes before any other flag is looked at). All name the same
  // commit (not necessarily this test binary's Commit(): a build of the services alone does not
  // relink it).
  TempDir dir;
  std::set<std::string> commits;
  for (const std::string name :
       {"checkpoint-store", "resource-manager", "scheduler", "trial-worker"}) {
    SCOPED_TRACE(name);
    auto p = Process::Spawn({.name = name,
                             .binary = BinDir() / name,
                             .args = {"--version"},
                             .log_dir = dir.path() / "logs",
                             .cwd = dir.path()});
    ASSERT_EQ(p->Wait(10s), 0) << p->Output();
    std::string version, commit;
    ASSERT_TRUE(ParseVersionLine(p->Stdout(), "tunebus-" + name, version, commit)) << p->Stdout();
    EXPECT_EQ(version, Version());
    commits.insert(commit);
  }
  const CommandResult ctl = RunTunectl({"--version"}, 10s);
  ASSERT_EQ(ctl.exit_code, 0) << ctl.Describe();
  std::string version, commit;
  ASSERT_TRUE(ParseVersionLine(ctl.out, "tunectl", version, commit)) << ctl.out;
  EXPECT_EQ(version, Version());
  commits.insert(commit);
  EXPECT_EQ(commits.size(), 1u) << "the binaries name different commits: " << *commits.begin()
                                << ", " << *commits.rbegin();
}

TEST(VersionTest, GetExperimentStatusAndTheDashboardTellTheSchedulersVersion) {
  // A scheduler with its dashboard runs a tiny mock experiment. get_experiment's `version` is the
  // scheduler's Version() (for a live experiment and for one read from its journal alike),
  // `tunectl status` prints it, and the dashboard's page ends with "tunebus 0.1.0 (commit ...)".
  ClusterOptions options;
  options.workers = 1;
  options.scheduler_args = {"--http", "127.0.0.1:0"};
  Cluster cluster(options);
  ASSERT_TRUE(cluster.Start());
  const fs::path file = cluster.dir() / "tiny.yaml";
  WriteFile(file,
            "name: tiny\n"
            "trainable: {builtin: mock}\n"
            "param_space: {lr: 0.1, mock_iterations: 2}\n"
            "metric: mean_accuracy\n"
            "mode: max\n"
            "results_dir: " +
                (cluster.dir() / "results").string() + "\n");
  const CommandResult run = cluster.Ctl({"run", file.string()}, 60s);
  ASSERT_EQ(run.exit_code, 0) << run.Describe() << cluster.LogTails();

  const CommandResult status = cluster.Ctl({"-o", "json", "status", "-e", "tiny"});
  ASSERT_EQ(status.exit_code, 0) << status.Describe();
  EXPECT_EQ(status.Json().value("version", ""), Version()) << status.out;
  EXPECT_FALSE(status.Json().value("read_only", true)) << status.out;

  const CommandResult text = cluster.Ctl({"status", "-e", "tiny"});
  ASSERT_EQ(text.exit_code, 0) << text.Describe();
  // Same build on both ends: tunectl does not add its own.
  EXPECT_NE(text.out.find(std::string("\nscheduler ") + Version() + "\n"), std::string::npos)
      << text.out;

  // Read from its journal after a scheduler restart: the answer carries the version as well.
  ASSERT_TRUE(cluster.Restart("scheduler"));
  ASSERT_TRUE(WaitFor([&] { return cluster.Ctl({"lsx"}, 2s).exit_code == 0; }, 20s, 100ms));
  const CommandResult journaled = cluster.Ctl({"-o", "json", "status", "-e", "tiny"});
  ASSERT_EQ(journaled.exit_code, 0) << journaled.Describe();
  EXPECT_TRUE(journaled.Json().value("read_only", false)) << journaled.out;
  EXPECT_EQ(journaled.Json().value("version", ""), Version()) << journaled.out;

  std::smatch m;
  const std::string url = cluster.http();
  ASSERT_TRUE(std::regex_match(url, m, std::regex(R"(http://127\.0\.0\.1:(\d+)/?)"))) << url;
  httplib::Client client("127.0.0.1", std::stoi(m[1]));
  client.set_connection_timeout(5);
  const std::string footer =
      std::string("<footer class=\"version\">tunebus ") + Version() + " (commit ";
  for (const std::string path : {"/", "/experiments/tiny", "/login"}) {
    SCOPED_TRACE(path);
    auto res = client.Get(path);
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    EXPECT_EQ(res->status, 200);
    EXPECT_NE(res->body.find(footer), std::string::npos) << res->body;
  }
}

}  // namespace
}  // namespace tunebus::testing
