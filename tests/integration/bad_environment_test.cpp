// tunectl and every service on a bad environment: a folder that cannot be
// created or written is a message naming the folder and the reason and exit code 1, never an
// abort (an uncaught std::filesystem::filesystem_error would end tunectl with exit 134); at
// run time such a folder fails the one request or trial that needs it, and the service keeps
// serving. Each process runs as an unprivileged user on a folder owned by root (as root, through
// setpriv; otherwise on a folder without write permission).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// A folder the unprivileged user can reach but not write (root's 0555 when run as root), inside
// `dir`, which it can reach.
fs::path LockedFolder(const fs::path& dir) {
  const fs::path locked = dir / "locked";
  fs::create_directories(locked);
  EXPECT_EQ(::chmod(locked.c_str(), 0555), 0);
  EXPECT_EQ(::chmod(dir.c_str(), 0755), 0);
  return locked;
}

// A folder everybody may write in (for the runs that must work).
fs::path OpenFolder(const fs::path& path) {
  fs::create_directories(path);
  EXPECT_EQ(::chmod(path.c_str(), 0777), 0);
  return path;
}

// Runs `binary args...` as the unprivileged user until it exits (at most 30 s).
std::unique_ptr<Process> RunLocked(const fs::path& dir, const std::string& binary,
                                   std::vector<std::string> args) {
  Process::Options o;
  o.name = binary + "-locked";
  o.log_dir = dir / "logs";
  o.binary = BinDir() / binary;
  o.args = std::move(args);
  RunUnprivileged(o);
  auto p = Process::Spawn(o);
  p->Wait(Millis{30000});
  return p;
}

// No abort, no uncaught exception: the clear failure every test below expects.
void ExpectCleanExitOne(Process& p, const std::string& message) {
  ASSERT_TRUE(p.exit_code().has_value()) << p.Output();
  EXPECT_EQ(*p.exit_code(), 1) << p.Output();
  EXPECT_NE(p.Output().find(message), std::string::npos) << "expected: " << message << "\n"
                                                         << p.Output();
  EXPECT_EQ(p.Output().find("terminate called"), std::string::npos) << p.Output();
}

TEST(BadEnvironmentTest, AnUnwritableResultsFolderIsAClearErrorAndExitOne) {
  TempDir dir;
  const fs::path locked = LockedFolder(dir.path());
  const fs::path file = dir.path() / "exp.yaml";
  WriteFile(file, "name: locked\ntrainable: {builtin: noop}\nresults_dir: " +
                      (locked / "results").string() + "\n");
  ASSERT_EQ(::chmod(file.c_str(), 0644), 0);

  auto run = RunLocked(dir.path(), "tunectl", {"run", file.string()});
  ExpectCleanExitOne(*run,
                     "tunectl: cannot create the results folder " + (locked / "results").string());
  EXPECT_NE(run->Stderr().find("Permission denied"), std::string::npos) << run->Output();
  ::chmod(locked.c_str(), 0755);  // so TempDir can remove it
}

TEST(BadEnvironmentTest, ACheckpointStoreWithAnUnwritableDataDirExitsOneNamingIt) {
  // A data dir it cannot create, and one that exists but is not its to write (RocksDB's own
  // message names its LOG file instead).
  TempDir dir;
  const fs::path locked = LockedFolder(dir.path());
  const std::string ep = kAnyLoopback;
  auto store = RunLocked(dir.path(), "checkpoint-store",
                         {"--endpoint", ep, "--data-dir", (locked / "store").string()});
  ExpectCleanExitOne(*store, "checkpoint-store cannot start: io_error: cannot create data dir " +
                                 (locked / "store").string() + ": Permission denied");
  store =
      RunLocked(dir.path(), "checkpoint-store", {"--endpoint", ep, "--data-dir", locked.string()});
  ExpectCleanExitOne(*store, "checkpoint-store cannot start: io_error: cannot write in data dir " +
                                 locked.string() + ": Permission denied");
  ::chmod(locked.c_str(), 0755);
}

TEST(BadEnvironmentTest, ASchedulerWithAnUnwritableResultsDirExitsOneNamingIt) {
  TempDir dir;
  const fs::path locked = LockedFolder(dir.path());
  auto scheduler = RunLocked(dir.path(), "scheduler",
                             {"--control", kAnyLoopback, "--workers", kAnyLoopback, "--events",
                              kAnyLoopback, "--results-dir", (locked / "results").string()});
  ExpectCleanExitOne(*scheduler,
                     "scheduler cannot start: io_error: cannot create the results folder " +
                         (locked / "results").string() + ": Permission denied");
  ::chmod(locked.c_str(), 0755);
}

TEST(BadEnvironmentTest, AResourceManagerAndAWorkerOnABadEndpointExitOneNamingIt) {
  // ipc:// endpoints are files: one in a folder the user cannot write cannot be bound (the folder
  // is short-named under /tmp: a socket path has at most 107 bytes).
  TempDir dir;
  char short_dir[] = "/tmp/tbXXXXXX";
  ASSERT_NE(::mkdtemp(short_dir), nullptr);
  const fs::path locked = LockedFolder(short_dir);
  const std::string ipc = "ipc://" + (locked / "rm.sock").string();
  auto rm = RunLocked(dir.path(), "resource-manager",
                      {"--endpoint", ipc, "--events-endpoint", kAnyLoopback});
  ExpectCleanExitOne(*rm, "resource-manager cannot start: unavailable: cannot bind " + ipc +
                              ": Permission denied");
  // A worker whose scheduler endpoint is not one.
  auto worker = RunLocked(dir.path(), "trial-worker", {"--scheduler", "nowhere", "--cpus", "1"});
  ExpectCleanExitOne(*worker, "trial-worker cannot start: unavailable: cannot connect nowhere");
  ::chmod(locked.c_str(), 0755);
  fs::remove_all(short_dir);
}

TEST(BadEnvironmentTest, ASchedulerRefusesAnExperimentItCannotWriteAndKeepsServing) {
  // The scheduler and the worker run as the unprivileged user. An experiment whose results folder
  // the scheduler cannot create is refused with a typed error naming the folder (not accepted
  // with its files silently missing); the next experiment runs.
  ClusterOptions o;
  o.workers = 1;
  o.unprivileged = {"scheduler", "w1"};
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  const fs::path locked = LockedFolder(cluster.dir());
  const fs::path file = cluster.dir() / "exp.yaml";
  WriteFile(file, "name: locked\ntrainable: {builtin: noop}\nresults_dir: " +
                      (locked / "results").string() + "\n");
  auto refused = cluster.Ctl({"run", file.string()});
  EXPECT_EQ(refused.exit_code, 1) << refused.Describe();
  EXPECT_NE(
      refused.err.find(
          "the scheduler refused the experiment: io_error: cannot create the results folder " +
          (locked / "results" / "locked").string() + ": Permission denied on the scheduler's host"),
      std::string::npos)
      << refused.Describe();

  const fs::path open = OpenFolder(cluster.dir() / "open");
  WriteFile(file, "name: fine\ntrainable: {builtin: noop}\nresults_dir: " + open.string() + "\n");
  auto run = cluster.Ctl({"run", file.string()});
  EXPECT_EQ(run.exit_code, 0) << run.Describe();
  EXPECT_TRUE(cluster.Dead().empty()) << cluster.LogTails();
  ::chmod(locked.c_str(), 0755);
}

TEST(BadEnvironmentTest, AWorkerThatCannotWriteATrialDirFailsThatTrialAndKeepsServing) {
  // The scheduler runs as root, the worker as the unprivileged user: the experiment's folder (made
  // by the scheduler) is root's, so the worker cannot create the trial's folder. The trial is
  // ERROR with a message naming the folder, the reason and the worker; the worker keeps serving.
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (a scheduler and a worker of two users)";
  ClusterOptions o;
  o.workers = 1;
  o.unprivileged = {"w1"};
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  ASSERT_EQ(::chmod(cluster.dir().c_str(), 0755), 0);
  const fs::path results = cluster.dir() / "results";
  fs::create_directories(results);
  const fs::path file = cluster.dir() / "exp.yaml";
  WriteFile(file,
            "name: rootowned\ntrainable: {builtin: noop}\nresults_dir: " + results.string() + "\n");
  auto failed = cluster.Ctl({"run", file.string()}, 60s);
  EXPECT_EQ(failed.exit_code, 1) << failed.Describe();
  auto ls = cluster.Ctl({"-o", "json", "ls"});
  ASSERT_EQ(ls.Json().size(), 1u) << ls.Describe();
  const json t = ls.Json()[0];
  EXPECT_EQ(t.value("status", ""), "ERROR") << t.dump();
  const std::string error = t.value("error", "");
  // The worker cannot create the folder, or cannot write in it when the scheduler made it first.
  EXPECT_NE(error.find(" trial dir " + (results / "rootowned").string()), std::string::npos)
      << error;
  EXPECT_NE(error.find("Permission denied (worker w1 on host"), std::string::npos) << error;

  // The worker is still there and answers the next StartTrial the same way.
  WriteFile(file,
            "name: again\ntrainable: {builtin: noop}\nresults_dir: " + results.string() + "\n");
  auto again = cluster.Ctl({"run", file.string()}, 60s);
  EXPECT_EQ(again.exit_code, 1) << again.Describe();
  EXPECT_NE(again.out.find("Permission denied (worker w1 on host"), std::string::npos)
      << again.Describe();
  const json workers = cluster.Workers();
  ASSERT_EQ(workers.size(), 1u) << workers.dump();
  EXPECT_TRUE(workers[0].value("alive", false) && workers[0].value("connected", false))
      << workers.dump();
  EXPECT_TRUE(cluster.Dead().empty()) << cluster.LogTails();
}

}  // namespace
}  // namespace tunebus::testing
