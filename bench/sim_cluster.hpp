// The harness of the cluster benchmarks (bench/cluster_scale.cpp, bench/many_experiments.cpp):
// the real checkpoint-store, resource-manager and scheduler binaries on ipc:// endpoints in a
// temporary folder, and N simulated trial-workers in this process, each with its own DEALER to
// the resource-manager and to the scheduler (real sockets, the real protocol): register_node and
// register_worker, a node_heartbeat and a worker_heartbeat every heartbeat interval (each worker
// at its own phase, as separate processes would be), and for each start_trial one result and a
// trial_exited, at once (a noop trial) or after the trial held its slot for a time the benchmark
// draws (SimCluster::set_hold); a stop_trial ends a held trial at once (trial_exited with
// `stopped`), as a real worker's would.
//
// One thread turns the simulated workers: epoll over the sockets' ZMQ_FD (only sockets with work
// are looked at, so a turn costs O(active sockets), not O(N)); SimLoopStats says how long its
// turns took and how late held trials were ended, so a benchmark can show the simulator is not
// what it measures.
#pragma once

#include <sys/types.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <queue>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "libs/bus/socket.hpp"
#include "proto/codec.hpp"
#include "proto/control.hpp"
#include "proto/worker.hpp"

namespace tunebus::bench {

using Clock = std::chrono::steady_clock;

/// b - a in seconds.
double Seconds(Clock::time_point a, Clock::time_point b);

/// The p-th percentile (0 <= p <= 100) of `v`, nearest rank; 0 for an empty `v`.
double Percentile(std::vector<double> v, double p);

/// {"p50", "p99", "max", "n"} of `v` (in v's unit).
nlohmann::json Quantiles(const std::vector<double>& v);

/// CPU seconds (user + system) process `pid` has used, from /proc/<pid>/stat.
double CpuSeconds(pid_t pid);

/// Makes SIGINT and SIGTERM set Interrupted() instead of killing the benchmark, so its loops end
/// and the destructors stop the services and remove the temporary folders.
void StopOnSignals();
bool Interrupted();

/// The flags every cluster benchmark takes (HarnessOptions::Add): where the services' binaries
/// are, their log level, where to keep their logs, and where the results folder lives.
struct HarnessOptions {
  std::filesystem::path bin;          // --bin BUILD/bin (required)
  std::string log_level = "warn";     // --log-level: the services'
  std::filesystem::path keep_logs;    // --keep-logs DIR; "" = the logs go with the run's folder
  bool result_files_on_tmpfs = true;  // --result-files tmpfs (default) | disk

  /// Adds --bin, --log-level, --keep-logs and --result-files to `app`.
  void Add(CLI::App& app);
};

/// What a benchmark's main does once its flags are parsed: StopOnSignals, and the open-file
/// limit raised to its hard limit (every simulated worker holds two sockets, the services a
/// connection per worker).
void PrepareProcess();

/// Prints `line` as one JSON line on stdout (flushed), with "result_files" and "machine" added.
void PrintLine(nlohmann::json line, const HarnessOptions& o);

/// A folder made with mkdtemp ("<parent>/<prefix>-XXXXXX"), removed with all it holds on
/// destruction. path() is empty when it could not be made.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix, const std::filesystem::path& parent = "/tmp");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// A service process: started with posix_spawn (stdout and stderr to `log`), stopped with
/// SIGTERM on destruction (SIGKILL after 5 s). pid is 0 when it could not be started.
class Service {
 public:
  Service(const std::filesystem::path& bin, const std::vector<std::string>& args,
          const std::filesystem::path& log);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = 0;
};

/// One trial as a simulated worker saw it.
struct TrialSpan {
  std::string experiment;     // its experiment's name (StartTrial.experiment)
  std::string trial_id;       // "<experiment_id>_<index>" (libs/tune/trial_runner.cpp)
  size_t worker = 0;          // index of the worker in SimCluster
  Clock::time_point started;  // its start_trial was read
  std::optional<Clock::time_point> exited;        // its trial_exited was sent
  std::optional<Clock::time_point> worker_freed;  // the worker's trial_exited before this start
                                                  // (none for its first trial since ClearSpans)
};

/// How the simulator itself kept up (since ClearSpans).
struct SimLoopStats {
  /// Each turn's work, from epoll's return to the next wait (ms): a message that arrives then
  /// waits at most this long to be read.
  std::vector<double> turn_ms;
  /// Held trials: from the end of the hold to their trial_exited sent (ms).
  std::vector<double> exit_lag_ms;
};

/// The services and the simulated workers of one benchmark run. Not thread-safe: one thread
/// turns it (a separate client thread may use context() for its own sockets).
class SimCluster {
 public:
  /// `bin`: the folder of the service binaries; `dir`: an empty folder for the endpoints, the
  /// store's data (its journal synced there) and the services' logs; `heartbeat_ms`: the
  /// workers' heartbeat interval (the resource-manager's too); `result_files_on_tmpfs`: the
  /// scheduler's result files (Ray Tune's per-trial folders) go to a folder of their own in
  /// /dev/shm, else to `dir`/results. On this VM's ext4 disk creating a file costs up to ~1 ms
  /// for minutes after many were deleted (docs/explanation/performance/index.md), which these
  /// benchmarks (and the test suite) do; tmpfs keeps that cost out of what they measure.
  SimCluster(std::filesystem::path bin, std::filesystem::path dir, int heartbeat_ms,
             bool result_files_on_tmpfs = true);
  ~SimCluster();
  SimCluster(const SimCluster&) = delete;
  SimCluster& operator=(const SimCluster&) = delete;

  /// "ipc://<dir>/<name>.sock".
  std::string Endpoint(const std::string& name) const;
  zmq::context_t& context() { return ctx_; }
  pid_t rm_pid() const { return rm_ ? rm_->pid() : 0; }
  pid_t scheduler_pid() const { return scheduler_ ? scheduler_->pid() : 0; }
  pid_t store_pid() const { return store_ ? store_->pid() : 0; }
  const std::filesystem::path& dir() const { return dir_; }
  /// Where the scheduler writes the result files.
  std::filesystem::path results_dir() const;

  /// Starts the checkpoint-store, resource-manager and scheduler (`log_level` for all three) and
  /// waits until their endpoints are bound (30 s). False (with a message on stderr) otherwise.
  bool StartServices(const std::string& log_level = "warn");
  /// Once the services stopped, copies their logs to `<dir>/<tag>-<service>.log` ("" = not).
  void KeepLogs(std::filesystem::path dir, std::string tag) {
    keep_logs_ = std::move(dir);
    log_tag_ = std::move(tag);
  }

  /// Adds `n` workers of one CPU each ("sim0", "sim1", ...) and registers them. False if a
  /// socket cannot be made.
  bool AddWorkers(int n);
  size_t num_workers() const { return workers_.size(); }

  /// Stops worker `i`'s heartbeats (to both services); returns the time of its last one.
  Clock::time_point Silence(size_t i);
  const std::string& worker_id(size_t i) const;
  /// Whether worker `i` holds a trial now, and when it last sent a trial_exited (since
  /// ClearSpans).
  bool holding(size_t i) const;
  std::optional<Clock::time_point> freed_at(size_t i) const;

  /// How long each trial started from now on holds its slot, in seconds (drawn per trial);
  /// nullptr (the default): its result and trial_exited go at once.
  void set_hold(std::function<double()> hold_s) { hold_s_ = std::move(hold_s); }
  /// Ends every held trial now (result and trial_exited sent) and holds no more.
  void ReleaseHeld();

  /// One turn: due heartbeats and trial exits, then the messages that came within `wait`.
  void Turn(std::chrono::microseconds wait);
  /// Turns for `seconds` (less if Interrupted()).
  void RunFor(double seconds);
  /// Turns until `done()` (checked every few ms) or `timeout_s`; returns done().
  bool RunUntil(const std::function<bool()>& done, double timeout_s);

  /// A DEALER to the control socket, as tunectl's.
  std::optional<zmq::socket_t> ConnectControl();
  /// Sends each request on `control` at once (ids set here) and turns until all are answered or
  /// `timeout_s`; the replies' bodies in the same order (nullopt: refused, or no answer).
  template <typename Request>
  std::vector<std::optional<nlohmann::json>> ControlAll(zmq::socket_t& control,
                                                        std::vector<Request> requests,
                                                        double timeout_s = 60) {
    std::vector<uint64_t> ids;
    for (Request& r : requests) {
      r.id = ++control_id_;
      ids.push_back(r.id);
      bus::SendMessage(control, r);
    }
    return AwaitReplies(control, ids, timeout_s);
  }
  template <typename Request>
  std::optional<nlohmann::json> Control(zmq::socket_t& control, Request request,
                                        double timeout_s = 60) {
    return ControlAll(control, std::vector<Request>{std::move(request)}, timeout_s).front();
  }
  /// Turns until list_workers names `n` alive workers (or `timeout_s`).
  bool WaitWorkersAlive(zmq::socket_t& control, size_t n, double timeout_s = 60);

  /// Every trial the workers started since the last ClearSpans, in start order.
  const std::vector<TrialSpan>& spans() const { return spans_; }
  /// Trials that sent their trial_exited since the last ClearSpans.
  size_t trials_exited() const { return trials_exited_; }
  const SimLoopStats& loop_stats() const { return stats_; }
  /// Forgets the spans, the workers' last exits and the loop stats (a new measurement).
  void ClearSpans();
  /// Forgets the loop stats only.
  void ClearLoopStats() { stats_ = {}; }

 private:
  struct Worker;
  struct Due {
    Clock::time_point at;
    size_t worker;
    bool operator>(const Due& o) const { return at > o.at; }
  };

  bool WaitBound(const std::vector<std::string>& names);
  std::vector<std::optional<nlohmann::json>> AwaitReplies(zmq::socket_t& control,
                                                          const std::vector<uint64_t>& ids,
                                                          double timeout_s);
  void SendHeartbeats(Clock::time_point now);
  // Sends the held trial's result and trial_exited (`stopped`: answering a stop_trial).
  void EndTrial(size_t w, bool stopped);
  // Reads every message waiting on worker `w`'s socket (`rm`: its resource-manager socket).
  void Drain(size_t w, bool rm);
  void OnStartTrial(size_t w, const proto::StartTrial& start);
  void Watch(size_t w, bool rm);

  std::filesystem::path bin_, dir_, keep_logs_;
  std::string log_tag_;
  int heartbeat_ms_;
  zmq::context_t ctx_;
  std::optional<TempDir> tmpfs_results_;  // outlives the services
  std::optional<Service> store_, rm_, scheduler_;
  std::vector<std::unique_ptr<Worker>> workers_;
  int epoll_ = -1;
  std::vector<uint64_t> to_check_;  // sockets (worker << 1 | rm) to look at this turn
  Clock::time_point heartbeat_epoch_{};
  uint64_t heartbeats_sent_ = 0;  // worker heartbeats sent since heartbeat_epoch_, in order
  std::function<double()> hold_s_;
  std::priority_queue<Due, std::vector<Due>, std::greater<Due>> due_;
  std::vector<TrialSpan> spans_;
  size_t trials_exited_ = 0;
  SimLoopStats stats_;
  std::optional<Clock::time_point> woke_;  // the last return from epoll
  uint64_t control_id_ = 0;
};

}  // namespace tunebus::bench
