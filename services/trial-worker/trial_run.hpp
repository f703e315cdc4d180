// TrialRun: one attempt of a trial on a trial-worker (TrialWorker's runs_), from its StartTrial
// until its exit is reported and every result and checkpoint upload of it is settled.
//
// Phases (RunPhase) and what the worker does in each:
//
//   phase          trainable  its reports                   its exit
//   kRunning       runs       sent as ReportResults          TrialExited (stopped: false)
//   kStopping      runs       sent, answered "stop" here     TrialExited (stopped: true); killed
//                                                            after stop_grace_ms
//   kTimedOut      killed     sent, answered "stop" here     TrialExited failed with `failure`
//   kStale         killed     dropped (nothing more of the   not sent
//                             attempt reaches the scheduler)
//   kExitWaits     exited     -                              held until the checkpoint uploads
//                                                            end (after their CheckpointSaved /
//                                                            CheckpointFailed)
//   kExited        exited     unacknowledged ones resent     sent; resent after re-registration
//                             after re-registration          and to a StopTrialRequest
//   kStaleExited   exited     dropped                        not sent (answered to a
//                                                            StopTrialRequest only)
//
// Transitions (from, event, to); every other pair is a bug of the worker (asserted in debug):
//
//   from                               event                                   to
//   kRunning                           stop decision (stop; pause and          kStopping
//                                      checkpoint_and_stop once their
//                                      checkpoint is saved), StopTrialRequest
//   kRunning                           no report for report_timeout_s          kTimedOut
//   kRunning, kStopping, kTimedOut,    a newer attempt starts, or the          kStale
//   kStale                             scheduler calls the trial stale
//   kExitWaits, kExited, kStaleExited  the same                                kStaleExited
//   kRunning, kStopping, kTimedOut     the trainable exits, uploads running    kExitWaits
//   kRunning, kStopping, kTimedOut     the trainable exits, no upload          kExited
//   kStale                             the trainable exits                     kStaleExited
//   kExitWaits                         its last upload ends (TrialExited sent) kExited
//
// A run is erased once it is kExited or kStaleExited with no unacknowledged result and no
// upload (TrialWorker::EraseIfDone).
//
// Invariants: `trainable` is set exactly in the phases whose trainable runs or was killed
// (kRunning, kStopping, kTimedOut, kStale); `exited` is filled in the three exited phases;
// `uploads.queued` holds at most `uploads.count - 1` checkpoints (one uploads at a time, oldest
// first); `reports.answered_seq <= reports.last_seq`.
//
// Thread-compatibility: owned by the worker's loop thread.
#pragma once

#include <cassert>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/bus/event_loop.hpp"
#include "libs/trainable/trainable.hpp"
#include "proto/worker.hpp"

namespace tunebus {

/// A TrialRun's phase (see the file comment for what each does and its transitions).
enum class RunPhase : uint8_t {
  kRunning,      // the trainable runs; its reports become ReportResults
  kStopping,     // told to stop; new reports are answered "stop" here; killed after the grace
  kTimedOut,     // killed by the worker: no report for report_timeout_s (a failure)
  kStale,        // superseded (a newer attempt, or the scheduler said so): killed, silent
  kExitWaits,    // exited; its TrialExited waits for the checkpoint uploads
  kExited,       // TrialExited sent; kept while results are unacknowledged or uploads run
  kStaleExited,  // exited while stale: nothing is sent; kept while uploads run
};

/// True if the file comment's transition table has a row (from, to).
constexpr bool RunPhaseMayMove(RunPhase from, RunPhase to) {
  switch (to) {
    case RunPhase::kStopping:
    case RunPhase::kTimedOut:
      return from == RunPhase::kRunning;
    case RunPhase::kStale:
      return from == RunPhase::kRunning || from == RunPhase::kStopping ||
             from == RunPhase::kTimedOut || from == RunPhase::kStale;
    case RunPhase::kExitWaits:
      return from == RunPhase::kRunning || from == RunPhase::kStopping ||
             from == RunPhase::kTimedOut;
    case RunPhase::kExited:
      return from == RunPhase::kRunning || from == RunPhase::kStopping ||
             from == RunPhase::kTimedOut || from == RunPhase::kExitWaits;
    case RunPhase::kStaleExited:
      return from == RunPhase::kStale || from == RunPhase::kExitWaits ||
             from == RunPhase::kExited || from == RunPhase::kStaleExited;
    case RunPhase::kRunning:
      return false;
  }
  return false;
}

struct TrialRun {
  /// What StartTrial gave the attempt.
  struct Setup {
    std::string trial_dir;
    std::string checkpoint_prefix;             // the checkpoint ids' prefix
    std::map<std::string, int64_t> resources;  // units granted (reported in RegisterNode)
    std::vector<std::string> gpu_ids;
    int64_t start_iteration = 0;  // training_iteration the attempt started from
  };
  /// The attempt's results: numbered, sent, and kept until a decision acknowledges them.
  struct Reports {
    int64_t last_seq = 0;           // seq of the newest ReportResult sent
    int64_t answered_seq = 0;       // newest seq whose decision reached the trainable
    double acked_time_total_s = 0;  // time_total_s (seconds) through the newest answered result
    std::map<int64_t, proto::ResultItem> unacked;  // seq -> result
  };
  /// report_timeout_s (StartTrial): checked every quarter of it; an attempt whose last_seq has
  /// not moved for the whole timeout while the trainable was free to run is killed as failed.
  struct ReportWatch {
    double timeout_s = 0;  // 0: not watched
    bus::EventLoop::TimerId timer = 0;
    int64_t seq_at_last_check = 0;
    double quiet_s = 0;  // time since last_seq last moved (in check periods)
  };
  /// The checkpoint a decision asked the trainable to save, taken at its next report or exit.
  struct CheckpointCapture {
    enum class Then : uint8_t {
      kNone,      // nothing asked
      kContinue,  // "checkpoint": the trainable goes on
      kStop,      // "pause" / "checkpoint_and_stop": it stops once the checkpoint is saved
    };
    Then then = Then::kNone;
    int64_t iteration = 0;    // the iteration it holds
    double time_total_s = 0;  // its time_total_s, stored in the checkpoint's metadata
    bool asked() const { return then != Then::kNone; }
  };
  /// Checkpoint uploads to the checkpoint-store: one at a time, oldest first, so the scheduler
  /// gets them in the order it asked for them (a newer one answers the older requests too).
  struct Uploads {
    struct Queued {
      std::string saved, id;
      int64_t iteration = 0;
      nlohmann::json metadata;
    };
    int count = 0;  // in flight or queued
    std::deque<Queued> queued;
  };

  std::string trial_id;
  int64_t attempt = 0;
  RunPhase phase = RunPhase::kRunning;
  Setup setup;
  std::unique_ptr<trainable::Trainable> trainable;
  std::vector<int> fds;  // registered with the loop
  bus::EventLoop::TimerId kill_timer = 0;
  Reports reports;
  ReportWatch watch;
  CheckpointCapture capture;
  Uploads uploads;
  std::string failure;        // why the worker failed the attempt itself ("" = it did not)
  proto::TrialExited exited;  // filled once the trainable exited (resent after re-registration)

  /// Moves to `to`. REQUIRES: RunPhaseMayMove(phase, to).
  void MoveTo(RunPhase to) {
    assert(RunPhaseMayMove(phase, to));
    phase = to;
  }
  /// kStale or kStaleExited: nothing more of it reaches the scheduler.
  bool stale() const { return phase == RunPhase::kStale || phase == RunPhase::kStaleExited; }
  /// The trainable has exited (kExitWaits, kExited, kStaleExited).
  bool has_exited() const {
    return phase == RunPhase::kExitWaits || phase == RunPhase::kExited ||
           phase == RunPhase::kStaleExited;
  }
  /// Its exit counts as asked for (TrialExited.stopped): kStopping or kStale.
  bool told_to_stop() const { return phase == RunPhase::kStopping || phase == RunPhase::kStale; }
};

}  // namespace tunebus
