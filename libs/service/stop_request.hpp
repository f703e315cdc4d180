// Stop requests: SIGTERM and SIGINT stop a service with exit 0 at any point, start-up waits
// included (docs/how-to/deploy.md, "Stopping and exit codes").
//
// RunService's signal handler calls RequestStop() (one process-wide flag) and then the service's
// Stop() (its event loop ends the round it is in). The event loop already treats EINTR as a round
// without news. A wait OUTSIDE the loop (a blocking request before the loop runs, or one a
// handler makes) must not block the stop: it waits
// with PollUnlessStopped, which looks at the flag at least every kStopCheckInterval, takes EINTR
// (the signal landed on this thread) as "look at the flag and wait on", and returns
// StoppedWaiting once a stop was requested. The caller unwinds with that Status like with any
// other failed request, never with an exception, and the service's Run() returns.
//
// A wait that a stop ends outside every message handler (MessageDispatcher::Dispatch holds a
// HandlingMessage on its thread) is a start-up wait: RunService then logs
// "<service> stopped during start-up (waiting for <what>)".
//
// Threading: the flag is an atomic (set from a signal handler, read by any thread); the rest is
// per thread, or under a lock.
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <zmq.hpp>

#include "libs/core/status.hpp"

namespace tunebus::service {

/// How often a wait looks at the stop flag when no signal interrupts it (a signal delivered to
/// another thread of the process does not): the longest a stop waits for a wait to notice it.
inline constexpr std::chrono::milliseconds kStopCheckInterval{100};

/// Asks this process to stop: RunService's SIGTERM/SIGINT handler calls it before the service's
/// Stop(). Never undone. Async-signal-safe.
void RequestStop();
/// True once RequestStop() ran. Async-signal-safe.
bool StopRequested();

/// The Status of a wait a stop request ended: Unavailable "stopped waiting for <what>: the
/// service is stopping (SIGTERM or SIGINT)". (libs/core has no "cancelled" code; callers that
/// must tell a stop from a peer that does not answer ask StopRequested().)
Status StoppedWaiting(std::string_view what);

/// zmq::poll on `items` for up to `timeout`, ended by a stop request. `what` names what it waits
/// for, for StoppedWaiting and the log ("the checkpoint-store's answer to journal_list"). Returns
/// the number of items ready (0 when `timeout` passed without one), or StoppedWaiting(what) once
/// StopRequested(), without polling if the stop came before the call. EINTR never escapes (the
/// flag is looked at and the wait goes on); other zmq errors throw as zmq::poll does.
Result<int> PollUnlessStopped(std::span<zmq::pollitem_t> items, std::chrono::milliseconds timeout,
                              std::string_view what);

/// Notes (and logs) that a stop request ended a wait for `what`: a start-up wait unless a
/// message handler runs on this thread (HandlingMessage). PollUnlessStopped calls it; so does a
/// service whose start-up wait is its own event loop (the scheduler's resume at start).
void NoteWaitStopped(std::string_view what);
/// What the first start-up wait a stop request ended waited for (NoteWaitStopped outside every
/// HandlingMessage), or nullopt if none did. For RunService's last log line.
std::optional<std::string> StartUpWaitStopped();

/// Marks, on this thread, that a message handler runs (MessageDispatcher::Dispatch holds one
/// around each handler): a wait inside it is not a start-up wait.
class HandlingMessage {
 public:
  HandlingMessage();
  ~HandlingMessage();
  HandlingMessage(const HandlingMessage&) = delete;
  HandlingMessage& operator=(const HandlingMessage&) = delete;
};

}  // namespace tunebus::service
