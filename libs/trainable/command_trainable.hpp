// CommandTrainable: runs the experiment's command as a child process per trial attempt
// (DESIGN.md "Trainables"; the protocol is specified in proto/PROTOCOL.md "Trainable protocol").
//
// Start() resolves argv[0] as execvp(3) would (ResolveProgram in
// libs/trainable/allowed_commands.hpp), refuses a program TrialSetup::allowed_commands does not
// allow (Forbidden, nothing spawned), and spawns that resolved file with posix_spawn —
// never fork-then-run-code, because in embedded mode the services are threads of one process —
// in `working_dir`, in a new process group (so Kill() can SIGKILL the whole tree with
// kill(-pgid)), with stdin /dev/null, stdout and stderr appended to <trial_dir>/stdout and
// <trial_dir>/stderr, and every other descriptor closed.
//
// The child's environment is the worker's environment without its TUNEBUS_* variables (the
// worker's flags, endpoints and keys; TrainableBaseEnvironment keeps only TUNEBUS_PYTHON), then the
// trainable's `env` (the experiment file's, applied as written), then:
//   TUNEBUS_CONFIG          the config as a JSON object
//   TUNEBUS_EXPERIMENT, TUNEBUS_TRIAL_ID, TUNEBUS_ATTEMPT, TUNEBUS_TRIAL_DIR
//   TUNEBUS_CHECKPOINT_DIR  <trial_dir>/checkpoint_tmp (created): save checkpoints here
//   TUNEBUS_RESTORE_DIR     only when restoring: the checkpoint to restore from
//   TUNEBUS_START_ITERATION iterations already done (0 unless restoring)
//   TUNEBUS_REPORT_FD       "3": write one JSON object per line (the report) here
//   TUNEBUS_DECISION_FD     "4": after each report read one line here: continue|checkpoint|stop
//   TUNEBUS_RESOURCES       what the attempt was allocated, a JSON object of whole units
//                           ({"cpu":1,"gpu":1}; memory in bytes; custom resources by name)
//   TUNEBUS_WORKER_ID       the id of the worker running the attempt
//   CUDA_VISIBLE_DEVICES    comma-joined GPU ids ("" when none)
//   PYTHONUNBUFFERED        "1" unless already set (so stdout reaches the file promptly)
// fd 3 is a pipe; fd 4 is one end of a Unix stream socket pair (so a write after the child died
// never raises SIGPIPE in the worker).
//
// Exit detection: a pidfd (pidfd_open, Linux >= 5.3) polled for readability, then
// waitpid(pid, WNOHANG) on that pid only (never -1, never a SIGCHLD handler). Without pidfd
// support, a 50 ms timer fd polls waitpid once the report pipe reached EOF.
// Failures: exit code != 0 -> "exited with code N"; a signal -> "killed by signal N"; a report
// line that is not a JSON object (or longer than kMaxReportLineBytes) -> the child is killed
// and the error names the line (truncated to 200 bytes).
#pragma once

#include <sys/types.h>

#include <array>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libs/trainable/fd.hpp"
#include "libs/trainable/trainable.hpp"

namespace tunebus::trainable {

/// Descriptor numbers the child sees.
inline constexpr int kChildReportFd = 3;
inline constexpr int kChildDecisionFd = 4;
/// A report line longer than this (bytes) is a protocol error.
inline constexpr size_t kMaxReportLineBytes = 8u << 20;
/// One line of the report pipe (its '\n' removed) as CommandTrainable reads it: trailing '\r',
/// spaces and tabs are ignored; a blank line is nullopt (skipped); else the JSON object.
/// Errors: InvalidArgument "report line is not a JSON object: '<the line, cut to 200 bytes>'"
/// (the child is then killed).
Result<std::optional<nlohmann::json>> ParseReportLine(std::string_view line);
/// The TUNEBUS_* variables a command trainable may see. The first twelve are the trial's, which
/// Start() sets for each attempt (the list above; tunebus's Python helper,
/// clients/python/tunebus/_helper.py, reads them); TUNEBUS_PYTHON is passed on from the worker's
/// environment (the interpreter trainables such as examples/digits/run_trainable.sh pick). Every
/// other TUNEBUS_* variable of the worker's environment is its own configuration or secret
/// (TUNEBUS_KEYS_DIR, TUNEBUS_KEY_NAME, endpoints, TUNEBUS_ALLOW_COMMANDS, ...) and is removed.
inline constexpr std::array<std::string_view, 13> kTrainableEnvironment = {
    "TUNEBUS_CONFIG",    "TUNEBUS_EXPERIMENT",     "TUNEBUS_TRIAL_ID",    "TUNEBUS_ATTEMPT",
    "TUNEBUS_TRIAL_DIR", "TUNEBUS_CHECKPOINT_DIR", "TUNEBUS_RESTORE_DIR", "TUNEBUS_START_ITERATION",
    "TUNEBUS_REPORT_FD", "TUNEBUS_DECISION_FD",    "TUNEBUS_RESOURCES",   "TUNEBUS_WORKER_ID",
    "TUNEBUS_PYTHON",
};

/// This process's environment (CurrentEnvironment) without the TUNEBUS_* variables that are not
/// in kTrainableEnvironment: what a trainable inherits before its own `env` and the trial's
/// variables.
std::map<std::string, std::string> TrainableBaseEnvironment();

/// stderr tail limits.
inline constexpr size_t kStderrTailLines = 20;
inline constexpr size_t kStderrTailBytes = 4096;

class CommandTrainable : public Trainable {
 public:
  CommandTrainable(TrainableDef def, TrialSetup setup);
  /// Kills and reaps the child if it still runs (blocking for the reap, which follows SIGKILL).
  ~CommandTrainable() override;

  Status Start() override;
  std::vector<int> fds() const override;
  void OnReadable() override;
  Status SendDecision(Action action) override;
  void Kill() override;

  /// The child's pid (also its process group id), 0 before Start().
  pid_t pid() const { return pid_; }
  int64_t process_id() const override { return pid_; }

 private:
  Result<std::vector<std::string>> BuildEnv() const;
  void ReadReports();
  void HandleLine(std::string_view line);
  void CheckExit();
  void Finish(int wait_status);
  void FailProtocol(std::string error);
  std::string ReadStderrTail() const;

  TrainableDef def_;
  TrialSetup setup_;
  pid_t pid_ = 0;
  bool reaped_ = false;
  bool killed_ = false;
  std::string protocol_error_;  // set when the child broke the report protocol
  UniqueFd report_fd_;          // parent's read end of the report pipe
  UniqueFd decision_fd_;        // parent's end of the decision socket pair
  UniqueFd pidfd_;
  TimerFd reap_timer_;  // only without pidfd
  bool report_eof_ = false;
  std::string line_buf_;
  SteadyTime iter_start_;
  long long stderr_start_ = 0;  // size of <trial_dir>/stderr when this attempt started
};

}  // namespace tunebus::trainable
