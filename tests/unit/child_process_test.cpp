// ChildProcess (libs/trainable/child_process.hpp) and the scheduler's SearcherProcess
// (services/scheduler/search/searcher_process.hpp) with /bin/sh as the child: where it runs, what
// it sees, how its end is described, the parent-death signal, the restart with backoff, and the
// stop (SIGTERM, then SIGKILL).
#include "libs/trainable/child_process.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "libs/bus/event_loop.hpp"
#include "services/scheduler/search/searcher_process.hpp"
#include "tests/support/wait_until.hpp"

namespace tunebus {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using trainable::ChildExit;
using trainable::ChildProcess;

fs::path MakeTempDir() {
  std::string tmpl = (fs::temp_directory_path() / "tunebus_child_XXXXXX").string();
  EXPECT_NE(::mkdtemp(tmpl.data()), nullptr);
  return tmpl;
}

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Polls until the child exited (or `limit` passed).
std::optional<ChildExit> WaitExit(ChildProcess& child, std::chrono::milliseconds limit = 10s) {
  std::optional<ChildExit> exit;
  test_support::PollUntil([&] { return (exit = child.Poll()).has_value(); }, limit);
  return exit;
}

bool Alive(pid_t pid) { return ::kill(pid, 0) == 0; }

class ChildProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    log_.Reset(::open((dir_ / "out.log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  trainable::UniqueFd log_;
};

TEST_F(ChildProcessTest, RunsInItsFolderWithItsEnvironmentAndReportsItsExitCode) {
  // The child runs in working_dir, sees the added variables, writes to output_fd, and its exit
  // code is described.
  auto child = ChildProcess::Spawn({.argv = {"sh", "-c", "pwd; echo \"$FOO\" >&2; exit 3"},
                                    .working_dir = dir_.string(),
                                    .env = {{"FOO", "bar"}},
                                    .output_fd = log_.get()});
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  const auto exit = WaitExit(**child);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 3);
  EXPECT_EQ(exit->Describe(), "exit code 3");
  EXPECT_EQ(ReadAll(dir_ / "out.log"), fs::canonical(dir_).string() + "\nbar\n");
  EXPECT_TRUE((*child)->reaped());
}

TEST_F(ChildProcessTest, AProgramThatCannotStartIsAnErrorNamingIt) {
  // Not in PATH, not a file, not executable, no folder: Unavailable with the reason.
  auto missing = ChildProcess::Spawn({.argv = {"no-such-program-xyz"}});
  EXPECT_EQ(missing.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(missing.status().message().find("no-such-program-xyz: not found in PATH"),
            std::string::npos)
      << missing.status().ToString();
  auto nofile = ChildProcess::Spawn({.argv = {"./nothing.sh"}, .working_dir = dir_.string()});
  EXPECT_NE(nofile.status().message().find("(no such file)"), std::string::npos)
      << nofile.status().ToString();
  const fs::path script = dir_ / "plain.sh";
  std::ofstream(script) << "echo hi\n";
  ::chmod(script.c_str(), 0644);
  auto noexec = ChildProcess::Spawn({.argv = {script.string()}});
  EXPECT_NE(noexec.status().message().find("(not executable)"), std::string::npos)
      << noexec.status().ToString();
  auto nodir = ChildProcess::Spawn({.argv = {"sh"}, .working_dir = (dir_ / "gone").string()});
  EXPECT_NE(nodir.status().message().find("does not exist"), std::string::npos)
      << nodir.status().ToString();
  EXPECT_EQ(ChildProcess::Spawn({.argv = {}}).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(ChildProcessTest, TerminateSendsSigtermThenSigkill) {
  // A child that ends on SIGTERM ends by it; one that ignores it is SIGKILLed after the grace.
  auto polite = ChildProcess::Spawn({.argv = {"sleep", "30"}});
  ASSERT_TRUE(polite.ok());
  EXPECT_EQ((*polite)->Terminate(5s).Describe(), "signal 15");
  auto stubborn = ChildProcess::Spawn(
      {.argv = {"sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"},
       .output_fd = log_.get()});
  ASSERT_TRUE(stubborn.ok());
  ASSERT_TRUE(test_support::WaitUntil("the child traps SIGTERM", [&] {
    return ReadAll(dir_ / "out.log").find("ready") != std::string::npos;
  }));
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ((*stubborn)->Terminate(300ms).Describe(), "signal 9");
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 300ms);
}

TEST_F(ChildProcessTest, ParentDeathSignalFollowsTheSpawningThread) {
  // PR_SET_PDEATHSIG: the child gets SIGTERM when the thread that spawned it ends (a scheduler
  // that dies takes its searcher with it).
  std::unique_ptr<ChildProcess> child;
  std::thread([&] {
    auto c = ChildProcess::Spawn({.argv = {"sleep", "30"}, .parent_death_signal = SIGTERM});
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    child = std::move(*c);
  }).join();
  ASSERT_NE(child, nullptr);
  const auto exit = WaitExit(*child, 5s);
  ASSERT_TRUE(exit.has_value()) << "the child outlived its spawning thread";
  EXPECT_EQ(exit->Describe(), "signal 15");
}

// ---- SearcherProcess --------------------------------------------------------------------------

class SearcherProcessTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir(); }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs the loop until `done` or `limit`.
  bool RunUntil(const std::function<bool()>& done, std::chrono::milliseconds limit = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      loop_.RunOnce(bus::Duration{20});
    }
    return true;
  }

  SearcherProcess::Options Options(std::vector<std::string> command) {
    return {.command = std::move(command),
            .working_dir = dir_.string(),
            .log_path = (dir_ / "results" / "searcher.log").string(),
            .backoff_initial_s = 0.1,
            .backoff_max_s = 0.4};
  }

  fs::path dir_;
  bus::EventLoop loop_;
};

TEST_F(SearcherProcessTest, PicksAPrivateIpcEndpointAndRestartsWithBackoff) {
  // Without an endpoint: ipc:// in a new 0700 folder, given to the child in {endpoint} and the
  // environment. A child that keeps exiting is restarted after 0.1, 0.2, 0.4, 0.4 s; each
  // restart is counted and the last exit described; its output and the notes go to the log.
  auto made = SearcherProcess::Create(
      loop_, Options({"sh", "-c", "echo \"arg=$1 env=$TUNEBUS_SEARCHER_ENDPOINT\"; exit 3", "sh",
                      "{endpoint}"}));
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  SearcherProcess& p = **made;
  const std::string endpoint = p.endpoint();
  ASSERT_EQ(endpoint.rfind("ipc://", 0), 0u) << endpoint;
  const fs::path folder = fs::path(endpoint.substr(6)).parent_path();
  struct stat st {};
  ASSERT_EQ(::stat(folder.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(p.state(), SearcherProcess::State::kIdle);
  EXPECT_EQ(p.Describe()["process"], "idle");
  p.EnsureStarted();
  ASSERT_TRUE(RunUntil([&] { return p.restarts() >= 3; }));
  EXPECT_EQ(p.Describe()["last_exit"], "exit code 3");
  const std::string log = ReadAll(dir_ / "results" / "searcher.log");
  EXPECT_NE(log.find("arg=" + endpoint + " env=" + endpoint), std::string::npos) << log;
  EXPECT_NE(log.find("ended: exit code 3; starting it again in 0.2 s"), std::string::npos) << log;
  EXPECT_NE(log.find("starting it again in 0.4 s"), std::string::npos) << log;
  ASSERT_TRUE(RunUntil([&] { return p.state() == SearcherProcess::State::kBackoff; }));
  p.Stop();
  EXPECT_EQ(p.state(), SearcherProcess::State::kStopped);  // between two starts: stopped at once
  loop_.RunOnce(bus::Duration{500});
  EXPECT_EQ(p.state(), SearcherProcess::State::kStopped);  // and not started again
  made->reset();
  EXPECT_FALSE(fs::exists(folder)) << "the private folder outlived the searcher";
}

TEST_F(SearcherProcessTest, StopTerminatesTheChildAndItIsNotRestarted) {
  // Stop: SIGTERM, the exit is noted, no restart; the pid is gone.
  auto made = SearcherProcess::Create(loop_, Options({"sleep", "30"}));
  ASSERT_TRUE(made.ok());
  SearcherProcess& p = **made;
  p.EnsureStarted();
  ASSERT_EQ(p.state(), SearcherProcess::State::kRunning);
  const pid_t pid = p.pid();
  ASSERT_GT(pid, 0);
  EXPECT_EQ(p.Describe()["pid"], pid);
  EXPECT_EQ(p.Describe()["restarts"], 0);
  p.NoteServed();
  p.Stop();
  EXPECT_EQ(p.state(), SearcherProcess::State::kStopping);
  ASSERT_TRUE(RunUntil([&] { return p.state() == SearcherProcess::State::kStopped; }));
  EXPECT_EQ(p.Describe()["last_exit"], "signal 15");
  EXPECT_EQ(p.restarts(), 0);
  EXPECT_FALSE(Alive(pid));
}

TEST_F(SearcherProcessTest, AProgramThatCannotStartIsRetriedAndDescribed) {
  // A command that cannot start is a failed start: described in last_exit, retried.
  auto made = SearcherProcess::Create(loop_, Options({"./missing-searcher.py"}));
  ASSERT_TRUE(made.ok());
  SearcherProcess& p = **made;
  p.EnsureStarted();
  EXPECT_EQ(p.state(), SearcherProcess::State::kBackoff);
  EXPECT_NE(p.Describe()["last_exit"].get<std::string>().find("(no such file)"), std::string::npos)
      << p.Describe().dump();
  ASSERT_TRUE(RunUntil([&] { return p.restarts() >= 1; }));
}

TEST_F(SearcherProcessTest, BoundOnceTheChildMadeItsIpcSocket) {
  // The link holds requests until the ipc socket file exists (a searcher that is still
  // starting is not "unavailable"); a restart removes the file the killed one left.
  auto made = SearcherProcess::Create(
      loop_, Options({"sh", "-c",
                      "p=${TUNEBUS_SEARCHER_ENDPOINT#ipc://}; sleep 0.2; : > \"$p\"; "
                      "sleep 30"}));
  ASSERT_TRUE(made.ok());
  SearcherProcess& p = **made;
  EXPECT_TRUE(p.Bound());  // not running: nothing to wait for
  p.EnsureStarted();
  EXPECT_FALSE(p.Bound());
  ASSERT_TRUE(RunUntil([&] { return p.Bound(); }));
  const pid_t first = p.pid();
  ::kill(first, SIGKILL);
  ASSERT_TRUE(RunUntil([&] { return p.pid() != 0 && p.pid() != first; }));
  EXPECT_FALSE(p.Bound());  // the old socket file is gone; the new child has not made one yet
  ASSERT_TRUE(RunUntil([&] { return p.Bound(); }));
}

TEST_F(SearcherProcessTest, DestroyingItStopsTheChild) {
  // The scheduler stops (its experiments are destroyed): the child goes, blocking, within the
  // grace.
  auto made = SearcherProcess::Create(loop_, Options({"sleep", "30"}));
  ASSERT_TRUE(made.ok());
  (*made)->EnsureStarted();
  const pid_t pid = (*made)->pid();
  ASSERT_GT(pid, 0);
  made->reset();
  EXPECT_FALSE(Alive(pid));
}

}  // namespace
}  // namespace tunebus
