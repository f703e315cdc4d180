// EventRoutes: GET /events, the dashboard's live feed, and the relay that fills it.
//
//   GET /events   text/event-stream: "hello" once the stream is subscribed, then one event per
//                 scheduler event (EventData), "reset" when this stream fell more than
//                 kFeedFrames behind (the page refetches), a comment every kKeepAlive; 503 beyond
//                 kMaxStreams open streams.
//
// Threads: Relay runs on the server's relay thread: a SUB to the scheduler's event stream,
// subscribed only while a page listens (the scheduler builds no event nobody subscribed to); it
// turns each SchedulerEvent into a Server-Sent Event frame kept in a bounded in-memory feed.
// Each open stream holds one HTTP thread and reads the feed from its own cursor.
//
// Invariants: the feed holds at most kFeedFrames frames, frame i having sequence feed_first_ + i;
// a stream's cursor only moves forward; Sequence() is set only while the relay is subscribed.
// Thread-safety: Serve and Sequence from any thread; Relay on one thread; Stop from any thread,
// then Relay returns within 100 ms and every stream ends within 250 ms.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <zmq.hpp>

#include "services/scheduler/dashboard/http.hpp"

namespace httplib {
class DataSink;
}  // namespace httplib

namespace tunebus::dashboard {

class EventRoutes {
 public:
  /// At most this many /events streams at once (503 beyond), so pages and API calls always
  /// find one of the server's threads.
  static constexpr int kMaxStreams = 8;
  /// Event frames kept for streams that have not sent them yet.
  static constexpr size_t kFeedFrames = 4096;
  static constexpr std::chrono::seconds kKeepAlive{5};

  void AddTo(Router& router) { router.Get("/events", Router::Bind(this, &EventRoutes::Serve)); }
  /// Relays `sub` (connected to the event stream) into the feed until Stop.
  void Relay(zmq::socket_t sub);
  /// Ends the relay and every stream.
  void Stop();
  /// The feed's next sequence number while the relay is subscribed (a page listens): what the
  /// analysis routes key their kept answers on.
  std::optional<uint64_t> Sequence();

 private:
  /// A stream's place in the feed: the first frame it has not sent (set at its hello) and when
  /// it last wrote.
  struct Cursor {
    std::optional<uint64_t> next;
    std::chrono::steady_clock::time_point last_write;
  };
  /// GET /events: a chunked text/event-stream fed by NextChunk.
  void Serve(const httplib::Request& req, httplib::Response& res);
  /// Writes the stream's next chunk (hello, frames or a keep-alive) to `sink`, after waiting up
  /// to 250 ms for one; false ends the stream.
  bool NextChunk(Cursor& cursor, httplib::DataSink& sink);
  /// The frames after `next` (advanced past them), "" when none came within `wait`, a "reset"
  /// frame when `next` fell out of the feed.
  std::string FramesAfter(uint64_t& next, std::chrono::milliseconds wait);

  std::atomic<bool> stopping_{false};
  std::atomic<int> streams_{0};          // open /events streams
  std::atomic<bool> subscribed_{false};  // the relay's SUB is subscribed
  std::mutex feed_mu_;
  std::condition_variable feed_cv_;
  std::deque<std::string> feed_;  // guarded by feed_mu_; frame i has sequence feed_first_ + i
  uint64_t feed_first_ = 0;       // guarded by feed_mu_
};

}  // namespace tunebus::dashboard
