// SearcherProcess: the searcher process the scheduler starts itself for
// `search: {type: external, command: [...]}` (docs/reference/search.md, proto/PROTOCOL.md section
// 7a), and SpawnedSearcherLink, the SearcherLink that starts it on its first request.
//
// Where it runs: the command in the experiment file's folder, stdin /dev/null, stdout and stderr
// appended to <experiment dir>/searcher.log (each start and each exit noted there too).
// `{endpoint}` in an argument is replaced by the endpoint it must bind, and its environment holds
//   TUNEBUS_SEARCHER_ENDPOINT    that endpoint
//   TUNEBUS_SEARCHER_PARENT_PID  the scheduler's pid (a searcher may exit once its parent is gone)
//   PYTHONUNBUFFERED             "1" unless already set
// Without an `endpoint` in the file the endpoint is ipc://<folder>/searcher.ipc, the folder a
// new mkdtemp(3) one (0700: no other user reaches the searcher) under $TMPDIR or /tmp, removed
// when this object goes: a local socket needs no free port, and a restart binds the same path.
//
// Life: kIdle until the link's first request (an experiment resumed after it ended never starts
// one); restarted after it exits, after the external searcher's backoff (backoff_initial_s,
// doubling to backoff_max_s; back to the initial once a request was answered); stopped when the
// experiment ends (Stop: SIGTERM, SIGKILL kStopGraceS later, not blocking the loop) and when the
// scheduler stops (the destructor: the same, blocking). The child gets PR_SET_PDEATHSIG SIGTERM
// (ChildProcess), so a SIGKILLed scheduler does not leave it running.
//
// Threading: the scheduler's loop thread makes, calls and destroys it (the parent-death signal
// follows the spawning thread).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "libs/bus/event_loop.hpp"
#include "libs/core/status.hpp"
#include "libs/trainable/child_process.hpp"
#include "libs/tune/searcher_link.hpp"

namespace tunebus {

class SearcherProcess {
 public:
  enum class State {
    kIdle,      // not started yet: the link's first request starts it
    kRunning,   // the child runs
    kBackoff,   // it exited or could not start: started again after the backoff
    kStopping,  // SIGTERM sent; SIGKILL kStopGraceS later
    kStopped,   // the experiment ended or the scheduler stops: never started again
  };
  static const char* StateName(State s);

  struct Options {
    std::vector<std::string> command;  // argv; "{endpoint}" in an argument is replaced
    std::string endpoint;              // "" = ipc:// in a private folder (see above)
    std::string working_dir;           // the experiment file's folder
    std::string log_path;              // <experiment dir>/searcher.log, appended
    double backoff_initial_s = 0.5;    // first restart delay, seconds
    double backoff_max_s = 30;         // the delay doubles up to this
  };

  /// Seconds between SIGTERM and SIGKILL when stopping.
  static constexpr double kStopGraceS = 5;

  /// Picks the endpoint (making the private folder when none is given); starts nothing.
  /// `loop` outlives this. Errors: IoError when the private folder cannot be made.
  static Result<std::unique_ptr<SearcherProcess>> Create(bus::EventLoop& loop, Options options);
  /// Stops the child (SIGTERM, up to kStopGraceS, SIGKILL: blocking) and removes the private
  /// folder.
  ~SearcherProcess();
  SearcherProcess(const SearcherProcess&) = delete;
  SearcherProcess& operator=(const SearcherProcess&) = delete;

  /// The endpoint the searcher binds and the link connects to.
  const std::string& endpoint() const { return endpoint_; }
  /// Starts the child if it never was (kIdle); otherwise nothing.
  void EnsureStarted();
  /// The searcher answered a request: the next restart waits backoff_initial_s again.
  void NoteServed() { delay_s_ = options_.backoff_initial_s; }
  /// The experiment ended: SIGTERM now, SIGKILL after kStopGraceS; never restarted. Not
  /// blocking.
  void Stop();
  /// False while the child runs but has not bound its ipc:// endpoint yet (its socket file is
  /// missing); true otherwise (a tcp:// endpoint cannot be checked without connecting).
  bool Bound() const;

  /// {"endpoint", "process" (state name), "pid" while running, "restarts" (starts after the
  /// first), "last_exit" ("signal 9", "exit code 1", or why it could not start) once it ended,
  /// "restart_in_s" while in backoff}.
  nlohmann::json Describe() const;
  State state() const { return state_; }
  /// The child's pid while it runs, else 0.
  pid_t pid() const;
  int64_t restarts() const { return restarts_; }

 private:
  SearcherProcess(bus::EventLoop& loop, Options options, std::string endpoint,
                  std::string private_dir);
  void Start();
  /// The child's exit fd became readable, or the poll timer fired.
  void CheckExit();
  void Unwatch();
  void CancelTimer(std::optional<bus::EventLoop::TimerId>& timer);
  /// Appends "<time> tunebus: <line>" to the log.
  void Note(const std::string& line) const;

  bus::EventLoop& loop_;
  Options options_;
  std::string endpoint_;
  std::string private_dir_;  // "" when the file named the endpoint
  State state_ = State::kIdle;
  std::unique_ptr<trainable::ChildProcess> child_;
  int watched_fd_ = -1;                             // the child's exit fd on the loop
  std::optional<bus::EventLoop::TimerId> poll_;     // without an exit fd: polls the child
  std::optional<bus::EventLoop::TimerId> restart_;  // kBackoff: the next start
  std::optional<bus::EventLoop::TimerId> kill_;     // kStopping: the SIGKILL
  double delay_s_;                                  // the next restart's delay
  double restart_at_s_ = 0;                         // loop clock seconds
  int64_t starts_ = 0;
  int64_t restarts_ = 0;
  std::string last_exit_;
};

/// The link to a SearcherProcess: `inner` (the ZeroMQ link to its endpoint) with the process
/// started on the first request, its backoff reset by every answered request, and its
/// Describe merged in. `process` outlives the link. Threading: the loop thread.
class SpawnedSearcherLink final : public SearcherLink {
 public:
  SpawnedSearcherLink(std::unique_ptr<SearcherLink> inner, SearcherProcess& process)
      : inner_(std::move(inner)), process_(process) {}

  /// Starts the process if it never was; while it has not bound its endpoint, holds `request`
  /// (checking every kBindPollS, up to `timeout_s`) rather than fail it as "not connected".
  void Request(nlohmann::json request, double timeout_s, ReplyCallback done) override;
  void After(double delay_s, std::function<void()> fn) override {
    inner_->After(delay_s, std::move(fn));
  }
  double NowS() const override { return inner_->NowS(); }
  nlohmann::json Describe() const override;

  static constexpr double kBindPollS = 0.05;

 private:
  void SendWhenBound(nlohmann::json request, double timeout_s, double hold_until_s,
                     ReplyCallback done);

  std::unique_ptr<SearcherLink> inner_;
  SearcherProcess& process_;
};

}  // namespace tunebus
