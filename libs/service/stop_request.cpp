#include "libs/service/stop_request.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>

namespace tunebus::service {

namespace {

std::atomic<bool> g_stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler stores it");

// Message handlers running on this thread (HandlingMessage).
thread_local int t_handling_messages = 0;

std::mutex g_mu;
std::optional<std::string> g_start_up_wait_stopped;  // guarded by g_mu

}  // namespace

void RequestStop() { g_stop_requested.store(true); }

bool StopRequested() { return g_stop_requested.load(); }

Status StoppedWaiting(std::string_view what) {
  return Status::Unavailable(
      fmt::format("stopped waiting for {}: the service is stopping (SIGTERM or SIGINT)", what));
}

Result<int> PollUnlessStopped(std::span<zmq::pollitem_t> items, std::chrono::milliseconds timeout,
                              std::string_view what) {
  using std::chrono::steady_clock;
  const steady_clock::time_point until = steady_clock::now() + timeout;
  for (;;) {
    if (StopRequested()) {
      NoteWaitStopped(what);
      return StoppedWaiting(what);
    }
    const auto left =
        std::max(std::chrono::duration_cast<std::chrono::milliseconds>(until - steady_clock::now()),
                 std::chrono::milliseconds(0));
    try {
      const int ready = zmq::poll(items.data(), items.size(), std::min(left, kStopCheckInterval));
      if (ready > 0) return ready;
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
      continue;  // a signal: look at the flag
    }
    if (steady_clock::now() >= until) return 0;
  }
}

void NoteWaitStopped(std::string_view what) {
  spdlog::info("Stopped waiting for {}: the service is stopping", what);
  if (t_handling_messages > 0) return;
  std::lock_guard lock(g_mu);
  if (!g_start_up_wait_stopped) g_start_up_wait_stopped = std::string(what);
}

std::optional<std::string> StartUpWaitStopped() {
  std::lock_guard lock(g_mu);
  return g_start_up_wait_stopped;
}

HandlingMessage::HandlingMessage() { ++t_handling_messages; }

HandlingMessage::~HandlingMessage() { --t_handling_messages; }

}  // namespace tunebus::service
