// EventLoop: the single-threaded loop every service runs (DESIGN.md "Services").
//
// Polls registered ZeroMQ sockets and raw file descriptors with zmq::poll and a finite timeout,
// runs due timers, and calls one handler per readable source. All state of a service is owned
// by the thread that calls Run(), so handlers take no locks. Stop() is the only method that may
// be called from another thread or a signal handler.
//
// Time: timers and poll timeouts read the loop's tunebus::Clock (clock(), Clock::Real() unless
// a test passes a ManualClock), so a test advances time by hand instead of sleeping. With a
// ManualClock a timer is due only once the clock was advanced past it; a poll round still
// waits up to its real max_wait for sockets.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>
#include <zmq.hpp>

#include "libs/core/clock.hpp"

namespace tunebus::bus {

/// std::chrono::steady_clock, for code that still reads the system clock itself; new code reads
/// the loop's tunebus::Clock (EventLoop::clock()).
using Clock = std::chrono::steady_clock;
using Duration = std::chrono::milliseconds;

/// `seconds` as a timer Duration: rounded up to whole milliseconds, negative as 0.
inline Duration DurationFromSeconds(double seconds) {
  return Duration{int64_t(std::ceil(std::max(0.0, seconds) * 1000))};
}

class EventLoop {
 public:
  using Handler = std::function<void()>;
  using TimerId = uint64_t;

  /// `clock` times the timers and must outlive the loop.
  explicit EventLoop(const tunebus::Clock& clock = tunebus::Clock::Real()) : clock_(clock) {}
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  /// The time source of this loop's timers; services and libraries on the loop read it too.
  const tunebus::Clock& clock() const { return clock_; }

  /// Calls `on_readable` whenever `socket` has a message. The socket must outlive the loop or
  /// be removed (RemoveSocket) before it closes: the loop polls its handle every round.
  void AddSocket(zmq::socket_t& socket, Handler on_readable);
  /// Stops polling `socket`; from then on its handler is not called, also not later in the
  /// round that is running (a handler may remove another source, or its own).
  void RemoveSocket(const zmq::socket_t& socket);
  /// Calls `on_readable` when fd is readable (or hung up). Remove it before closing the fd.
  void AddFd(int fd, Handler on_readable);
  /// As RemoveSocket, for an fd.
  void RemoveFd(int fd);
  /// The sockets and fds polled now.
  size_t sources() const { return sources_.size(); }

  /// Runs `handler` once after `delay`. Returns an id for CancelTimer.
  TimerId AddTimer(Duration delay, Handler handler);
  /// Runs `handler` every `interval` until cancelled.
  TimerId AddPeriodic(Duration interval, Handler handler);
  void CancelTimer(TimerId id);

  /// Runs after every poll round, once all ready handlers ran (e.g. to flush a batch).
  void SetIdleHook(Handler hook) { idle_hook_ = std::move(hook); }

  /// Polls until Stop(). Handlers run on this thread.
  void Run();
  /// Runs one poll round waiting at most `max_wait`. Returns false once stopped.
  bool RunOnce(Duration max_wait);
  /// Thread- and signal-safe.
  void Stop() { stopped_.store(true); }
  bool stopped() const { return stopped_.load(); }

 private:
  struct Source {
    uint64_t id = 0;  // a round calls the ready sources still there by id
    zmq::socket_t* socket = nullptr;
    int fd = -1;
    Handler handler;
  };
  struct Timer {
    SteadyTime due;
    Duration interval{0};  // 0 = one-shot
    Handler handler;
  };
  void RunDueTimers();

  const tunebus::Clock& clock_;
  std::vector<Source> sources_;
  uint64_t next_source_ = 1;
  std::map<TimerId, Timer> timers_;
  TimerId next_timer_ = 1;
  Handler idle_hook_;
  std::atomic<bool> stopped_{false};
};

}  // namespace tunebus::bus
