// Process harness for integration and fault tests: starts the real service binaries as child
// processes on loopback, runs tunectl with a hard timeout, and always reaps what it started.
//
// Ports: a service is started on ports the kernel picks (kAnyLoopback, `--metrics-port *`) and
// tells what it bound in its --ready-file (libs/service/ready_file.hpp), which the harness reads
// (SpawnReady). No port is chosen before the service binds it, so tests running in parallel
// (ctest -j) cannot take each other's ports. A restart reuses the ports the first start reported
// (clients reconnect to them).
//
// Every wait is bounded. Children are reaped by their owner's destructor (also when a test
// fails half-way); a fatal signal to the test binary (SIGINT, SIGTERM, SIGABRT, SIGSEGV, ...)
// SIGKILLs every child still registered before the binary dies.
//
// Binaries are found through TUNEBUS_BIN_DIR and sources through TUNEBUS_SOURCE_DIR (ctest sets
// both; see tests/CMakeLists.txt). Children inherit the environment minus every TUNEBUS_*
// variable (they are flag fallbacks and must not redirect a test's services), plus overrides.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "tests/support/wait_until.hpp"

namespace tunebus::testing {

using Millis = std::chrono::milliseconds;
namespace fs = std::filesystem;

class MessageFilter;
using test_support::PollUntil;
using test_support::WaitUntil;

/// $TUNEBUS_BIN_DIR (fails the test if unset and no build/bin is found).
fs::path BinDir();
/// $TUNEBUS_SOURCE_DIR, or the source tree this file was compiled from.
fs::path SourceDir();

/// Polls `predicate` every `poll` until it is true or `timeout` passed; true if it became true
/// (PollUntil; WaitUntil says what did not happen when it fails).
bool WaitFor(const std::function<bool()>& predicate, Millis timeout, Millis poll = Millis{50});

/// Copies the Python package (clients/python/tunebus, its .py files) into <folder>/tunebus, so
/// a Python trainable shipped from `folder` imports tunebus with nothing outside its folder.
void CopyTunebusPackage(const fs::path& folder);

std::string ReadFile(const fs::path& path);
std::vector<std::string> ReadLines(const fs::path& path);  // without the newlines
void WriteFile(const fs::path& path, const std::string& text);
/// The last `n` lines of a file, for failure messages.
std::string Tail(const fs::path& path, size_t n = 25);

/// A per-test temporary folder under $TMPDIR (or /tmp). Removed by the destructor unless the
/// current test failed or TUNEBUS_TEST_KEEP=1; then it is kept and its path printed.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

/// One child process. stdout and stderr go to <log_dir>/<name>.stdout and .stderr (a restart
/// keeps the earlier ones as <name>.stdout.1, .2, ...).
class Process {
 public:
  struct Options {
    std::string name;                        // for file names and messages
    fs::path binary;                         // absolute path
    std::vector<std::string> args;           // without argv[0]
    std::map<std::string, std::string> env;  // added to / overriding the inherited environment
    fs::path log_dir;                        // created if missing
    fs::path cwd;                            // working folder; empty = the test's
  };

  /// posix_spawn. Throws std::runtime_error if the binary cannot be started.
  static std::unique_ptr<Process> Spawn(const Options& options);
  ~Process();  // Kill() unless already reaped
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& name() const { return name_; }
  const fs::path& stdout_path() const { return stdout_path_; }
  const fs::path& stderr_path() const { return stderr_path_; }
  std::string Stdout() const { return ReadFile(stdout_path_); }
  std::string Stderr() const { return ReadFile(stderr_path_); }
  /// stdout then stderr (the services log to stdout through spdlog).
  std::string Output() const { return Stdout() + Stderr(); }

  /// Reaps without blocking if it exited; true while it runs.
  bool Running();
  /// The exit code once reaped: the code of a normal exit, 128 + signal if killed by one.
  std::optional<int> exit_code() const { return exit_code_; }
  /// Waits up to `timeout` for it to exit. Returns its exit code, or nullopt if still running.
  std::optional<int> Wait(Millis timeout);
  /// Sends `signo` if it still runs.
  void Signal(int signo);
  /// SIGTERM, waits up to `grace`, then SIGKILL. Returns the exit code.
  int Stop(Millis grace = Millis{5000});
  /// SIGKILL and reap. Returns the exit code.
  int Kill();

 private:
  Process() = default;
  void Reaped(int status);

  pid_t pid_ = -1;
  std::string name_;
  fs::path stdout_path_, stderr_path_;
  std::optional<int> exit_code_;
};

/// An endpoint on a loopback port the kernel picks when the service binds it.
inline constexpr const char* kAnyLoopback = "tcp://127.0.0.1:*";

/// What a process wrote to its --ready-file once it had bound everything
/// (libs/service/ready_file.hpp).
struct Ready {
  pid_t pid = 0;
  std::map<std::string, std::string> endpoints;  // bound endpoint by flag name ("control")
  int metrics_port = 0;                          // 0: no metrics endpoint
  /// The endpoint bound for `--flag`, or "" if none.
  std::string endpoint(const std::string& flag) const;
};

/// Waits up to `timeout` until `p` has written `file` with its own pid (an earlier process's file
/// at the same path does not count), then parses it into `ready`. Fails, naming why and with `p`'s
/// output, if `p` exits first or nothing comes in time.
::testing::AssertionResult WaitReady(Process& p, const fs::path& file, Millis timeout,
                                     Ready& ready);

/// Replaces the wildcards in `args` by what `ready` reports: the value of `--FLAG` that is a
/// `tcp://host:*` endpoint becomes ready.endpoint("FLAG"), and `--metrics-port *` the metrics port.
/// The same args then start the process again on the same ports.
void PinReportedPorts(std::vector<std::string>& args, const Ready& ready);

/// Spawns `o` with `--ready-file <ready_file>` added, waits until it reports (WaitReady), and pins
/// the reported ports into o.args (PinReportedPorts), so that spawning `o` again restarts it on the
/// same ports. A start on a fixed port can find it taken ("Address already in use": a restart on
/// a port another process took since the first start reported it); that start is tried again
/// for up to 10 s, then it fails saying so. `process` is the last process spawned, also on failure.
::testing::AssertionResult SpawnReady(Process::Options& o, const fs::path& ready_file,
                                      std::unique_ptr<Process>& process, Ready& ready,
                                      Millis timeout = Millis{15000});

/// Makes `o` run as the unprivileged user nobody (uid/gid 65534, no groups) through setpriv when
/// the tests run as root; leaves it as it is otherwise (the tests already run unprivileged).
void RunUnprivileged(Process::Options& o);

/// Output of one tunectl run.
struct CommandResult {
  int exit_code = -1;  // 128 + signal if it died by one; -1 when it timed out
  bool timed_out = false;
  std::string out, err;
  /// "exit N\n--- stdout ---\n...\n--- stderr ---\n..." for assertion messages.
  std::string Describe() const;
  /// stdout parsed as JSON (a discarded value if it does not parse).
  nlohmann::json Json() const;
};

/// Runs `tunectl args...` with a hard timeout (SIGKILL when it expires). Its output files go to
/// `dir` (a fresh temporary folder that is removed again when empty); it runs in `cwd` if set.
CommandResult RunTunectl(const std::vector<std::string>& args, Millis timeout = Millis{30000},
                         const fs::path& dir = {}, const fs::path& cwd = {});

struct ClusterOptions {
  int workers = 2;
  double cpus_per_worker = 1;
  int64_t heartbeat_interval_ms = 200;
  /// resource-manager --liveness. 10, not the product's default 3, because of a heartbeat bug:
  /// the RM never answers a successful node_heartbeat but the trial-worker waits for an answer
  /// (interval x 3) before it sends the next one, so with liveness 3 workers flap lost/added
  /// and trials get requeued. ClusterTest.WorkersStayAliveWithDefaultLiveness covers the bug.
  int64_t rm_liveness = 10;
  Millis ready_timeout = Millis{15000};
  /// Every process serves metrics on a port of its own (--metrics-port *); Cluster::metrics_port
  /// names it.
  bool metrics = false;
  /// Extra trial-worker flags by worker id (e.g. {"w2", {"--cpus", "4", "--gpus", "1"}}); a
  /// --cpus here replaces cpus_per_worker.
  std::map<std::string, std::vector<std::string>> worker_args;
  /// Extra environment variables of trial-workers by worker id (e.g. {"w1", {{"TUNEBUS_KEY_NAME",
  /// "worker"}}}), set over the inherited environment.
  std::map<std::string, std::map<std::string, std::string>> worker_env;
  /// Extra scheduler flags (e.g. {"--snapshot-every", "200"}).
  std::vector<std::string> scheduler_args;
  /// Extra flags of the other services by process name ("checkpoint-store", "resource-manager").
  std::map<std::string, std::vector<std::string>> service_args;
  /// Processes by name ("scheduler", "w1", ...) that run as the unprivileged user
  /// (RunUnprivileged).
  std::set<std::string> unprivileged;
  /// A keys folder (tunectl keygen --suite): every process gets --keys-dir (CURVE on every
  /// socket; each finds its key by its default name, workers share "worker"), and Ctl() passes it
  /// to tunectl (key "tunectl" unless the args name another with --key-name). A process whose
  /// own extra args (service_args, scheduler_args, worker_args) give --keys-dir keeps those.
  std::string keys_dir;
  /// A MessageFilter (message_filter.hpp) between a process and the peer one of its flags
  /// names: `process` ("scheduler", "w1", ...) is given filter->endpoint() for `--flag`
  /// ("--store", "--scheduler", "--rm") instead of the peer's endpoint, which the filter is
  /// connected to (MessageFilter::Connect) when the process starts. Restarts keep it. The
  /// filter must outlive the Cluster.
  struct Filtered {
    std::string process;
    std::string flag;
    MessageFilter* filter = nullptr;
  };
  std::vector<Filtered> filters;
};

/// checkpoint-store, resource-manager, scheduler and N trial-workers ("w1".."wN") as separate
/// processes on 127.0.0.1, each on ports the kernel picks and reports (SpawnReady), each with its
/// own logs, and a temporary folder (dir()) for the store's data and the test's files. Worker
/// `id` keeps shipped working_dirs in dir()/cache/<id> unless its worker_args give --cache-dir.
class Cluster {
 public:
  explicit Cluster(ClusterOptions options = {});
  ~Cluster();  // stops everything; prints the services' log tails if the test failed
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  /// Starts the services, each once the ones it connects to have reported their endpoints, and
  /// waits until `tunectl workers` lists every worker alive and connected.
  ::testing::AssertionResult Start();
  /// Stops every process: SIGTERM to all (workers first), one shared 5 s grace, then SIGKILL.
  /// Returns name -> exit code.
  std::map<std::string, int> StopAll();
  /// SIGKILLs `name` if it runs and starts it again with the same flags, data and ports (those
  /// its first start reported), waiting until it has bound them (SpawnReady).
  ::testing::AssertionResult Restart(const std::string& name);
  /// Restart(name) with `extra_args` added to its flags from now on (this and later restarts).
  ::testing::AssertionResult Restart(const std::string& name,
                                     const std::vector<std::string>& extra_args);
  /// Starts one more trial-worker `id` with `extra_args` and waits until it is alive and
  /// connected.
  ::testing::AssertionResult AddWorker(const std::string& id,
                                       std::vector<std::string> extra_args = {});

  /// `tunectl --connect <control> args...` (put global flags such as -o json before the
  /// subcommand).
  CommandResult Ctl(const std::vector<std::string>& args, Millis timeout = Millis{30000});
  /// `tunectl -o json workers`, parsed; a discarded value on failure.
  nlohmann::json Workers();

  const fs::path& dir() const { return dir_.path(); }
  /// The endpoints the services reported (empty before Start).
  std::string control() const { return Reported("scheduler", "control"); }
  std::string worker_endpoint() const { return Reported("scheduler", "workers"); }
  std::string events() const { return Reported("scheduler", "events"); }
  /// The dashboard's URL the scheduler reported ("http://127.0.0.1:PORT/"; "" without --http).
  std::string http() const { return Reported("scheduler", "http"); }
  std::string rm() const { return Reported("resource-manager", "endpoint"); }
  std::string rm_events() const { return Reported("resource-manager", "events-endpoint"); }
  std::string store() const { return Reported("checkpoint-store", "endpoint"); }
  /// The metrics port process `name` reported (0: none; see ClusterOptions::metrics).
  int metrics_port(const std::string& name) const;
  std::vector<std::string> worker_ids() const;

  /// The processes ("checkpoint-store", "resource-manager", "scheduler", "w1", ...).
  Process* process(const std::string& name);
  std::vector<Process*> processes();
  /// Names of the processes that are no longer running.
  std::vector<std::string> Dead();
  /// The last lines of every service's stdout and stderr.
  std::string LogTails(size_t lines = 25);

 private:
  std::string Reported(const std::string& name, const std::string& flag) const;
  /// Spawns `o` (SpawnReady), keeps the process and how it was started (ports pinned).
  ::testing::AssertionResult Spawn(Process::Options o);
  ::testing::AssertionResult SpawnWorker(const std::string& id);
  fs::path ReadyFile(const std::string& name) const { return dir() / "ready" / (name + ".json"); }

  ClusterOptions options_;
  TempDir dir_;
  std::vector<std::unique_ptr<Process>> processes_;        // start order
  std::map<std::string, Process::Options> spawn_options_;  // how each was started, ports pinned
  std::map<std::string, Ready> ready_;                     // what each reported last
};

/// A raw DEALER client for protocol tests: sends arbitrary frames to a service's ROUTER and
/// reads its answers (the ROUTER's routing frame is already stripped by the DEALER).
class DealerClient {
 public:
  explicit DealerClient(const std::string& endpoint);
  /// Sends one frame (more than one when `more` is given: those frames follow).
  void Send(const std::string& payload, const std::vector<std::string>& more = {});
  /// The last frame of the next message, or nullopt after `timeout`.
  std::optional<std::string> Receive(Millis timeout = Millis{5000});

 private:
  zmq::context_t ctx_;
  zmq::socket_t socket_;
};

/// Every stored record of `journal` on the checkpoint-store at `store_endpoint` (the bytes as it
/// holds them, framed or not: libs/journal/record_frame.hpp), in seq order, 5,000 a request. A
/// request without an answer within 5 s, or an answer that is not a journal_read_reply, adds a
/// test failure and ends the read with what came before.
std::vector<std::string> ReadStoredRecords(const std::string& store_endpoint,
                                           const std::string& journal);

}  // namespace tunebus::testing
