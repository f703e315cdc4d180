// Trainable: one running attempt of a trial, as the trial-worker drives it (DESIGN.md
// "Trainables").
//
// A Trainable is driven from the worker's single-threaded zmq::poll loop; it never starts a
// thread and never blocks. The loop polls fds() and calls OnReadable() when any of them is
// readable (or hung up). After every call into a Trainable (Start, OnReadable, SendDecision,
// Kill) the driver must:
//   1. take every queued report with TakeReport(),
//   2. check exited() (true only once every report has been taken),
//   3. re-read fds(): the set changes (e.g. a report pipe at EOF leaves it).
//
// Report/decision protocol (the same for every kind): the trainable produces one report (a JSON
// object), then waits for one decision (an Action, libs/core/action.hpp): "continue",
// "checkpoint" (save state into the checkpoint dir before the next report, then continue) or
// "stop" (exit cleanly now). Reports are delivered in order and decisions answer them in order.
// The worker splits "pause" and "checkpoint_and_stop" into "checkpoint", then "stop".
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libs/core/action.hpp"
#include "libs/core/clock.hpp"
#include "libs/core/status.hpp"

namespace tunebus::trainable {

class AllowedCommands;  // libs/trainable/allowed_commands.hpp

/// Everything a trainable needs to run one attempt of a trial.
struct TrialSetup {
  std::string experiment;
  std::string trial_id;
  int64_t attempt = 1;                               // 1 for the first start, +1 per restart
  nlohmann::json config = nlohmann::json::object();  // the trial's config (a JSON object)
  std::string trial_dir;             // absolute; created by the trainable if missing
  std::vector<std::string> gpu_ids;  // exported as CUDA_VISIBLE_DEVICES
  /// What the attempt was allocated, in whole units ({"cpu": 1, "gpu": 0.5}; memory in bytes);
  /// exported as TUNEBUS_RESOURCES.
  std::map<std::string, double> resources;
  std::string worker_id;        // the worker running the attempt; exported as TUNEBUS_WORKER_ID
  int64_t start_iteration = 0;  // iterations already done (restore), else 0
  std::string restore_dir;      // checkpoint to restore from, "" if none
  const Clock* clock = &Clock::Real();  // times iterations (time_this_iter_s); outlives it
  /// The programs a command trainable may run (the worker's --allow-command); nullptr = every
  /// program. Outlives it.
  const AllowedCommands* allowed_commands = nullptr;
};

/// Ok for the actions a trainable takes (continue, checkpoint, stop). Errors: InvalidArgument
/// for pause and checkpoint_and_stop (the driver sends checkpoint, then stop).
Status CheckTrainableAction(Action action);

/// One report of a trainable.
struct Report {
  nlohmann::json metrics;       // a JSON object, as the trainable wrote it
  double time_this_iter_s = 0;  // seconds from Start() or the last decision to this report
};

/// How a trainable ended. Valid once exited().
struct ExitStatus {
  bool ok = false;          // exited with code 0 (or a built-in finished) and no protocol error
  int exit_code = 0;        // process exit code, or -signal when killed by a signal
  int signal = 0;           // the signal that killed it, 0 if none
  bool killed = false;      // true: Kill() was called before it exited
  std::string error;        // reason when !ok: "exited with code 3", "killed by signal 9", ...
  std::string stderr_tail;  // last <= 20 lines / 4 KiB of its stderr during this attempt
};

class Trainable {
 public:
  virtual ~Trainable() = default;
  Trainable() = default;
  Trainable(const Trainable&) = delete;
  Trainable& operator=(const Trainable&) = delete;

  /// Starts the attempt. Call once. Errors: Unavailable (cannot be started: the message names
  /// the command and why), Forbidden (a program TrialSetup::allowed_commands refuses),
  /// InvalidArgument (bad config), IoError (trial dir not writable).
  [[nodiscard]] virtual Status Start() = 0;
  /// File descriptors to poll for readability. Owned by the trainable; empty once exited.
  virtual std::vector<int> fds() const = 0;
  /// Processes whatever is ready without blocking (reports, process exit, timers).
  virtual void OnReadable() = 0;
  /// Sends the decision for the oldest report that has no decision yet.
  /// Errors: FailedPrecondition if no report waits for a decision or it has exited;
  /// InvalidArgument for an action CheckTrainableAction refuses.
  [[nodiscard]] virtual Status SendDecision(Action action) = 0;
  /// Ends it now (a process trainable: SIGKILL to its whole process group). Idempotent; the
  /// exit is observed through fds()/OnReadable() like any other exit.
  virtual void Kill() = 0;

  /// The id of the process that runs it (Ray Tune's `pid` result key); 0 when it runs inside
  /// the worker's own process (the built-ins).
  virtual int64_t process_id() const { return 0; }

  /// The next report, in order, or nullopt.
  std::optional<Report> TakeReport();
  bool has_report() const { return !reports_.empty(); }
  /// Reports taken or queued that have no decision yet.
  int64_t awaiting_decisions() const { return awaiting_; }
  /// True once it ended and every report has been taken.
  bool exited() const { return ended_ && reports_.empty(); }
  /// REQUIRES: exited().
  const ExitStatus& exit_status() const { return exit_; }

 protected:
  /// For implementations: queue a report (counts one awaited decision).
  void QueueReport(Report report);
  /// For implementations: consume one awaited decision. False if none was awaited.
  bool ConsumeAwaited();
  /// For implementations: record the end (first call wins).
  void End(ExitStatus status);
  bool ended() const { return ended_; }

 private:
  std::deque<Report> reports_;
  int64_t awaiting_ = 0;
  bool ended_ = false;
  ExitStatus exit_;
};

/// How to run a trainable (mirrors proto::TrainableDef).
struct TrainableDef {
  std::vector<std::string> command;                      // argv; empty when builtin is set
  std::string builtin;                                   // "mock" | "noop" | ""
  std::string working_dir;                               // absolute; "" = the trial dir
  std::vector<std::pair<std::string, std::string>> env;  // extra environment
};

/// Makes the trainable `def` describes for `setup` (not started).
/// Errors: InvalidArgument (unknown builtin, neither command nor builtin given).
Result<std::unique_ptr<Trainable>> MakeTrainable(const TrainableDef& def, TrialSetup setup);

}  // namespace tunebus::trainable
