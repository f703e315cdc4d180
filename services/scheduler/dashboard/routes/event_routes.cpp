#include "services/scheduler/dashboard/routes/event_routes.hpp"

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <utility>
#include <vector>

#include "libs/bus/socket.hpp"
#include "proto/codec.hpp"
#include "proto/events.hpp"
#include "services/scheduler/dashboard/views/views.hpp"

namespace tunebus::dashboard {

using nlohmann::json;

void EventRoutes::Stop() {
  {
    std::lock_guard<std::mutex> lock(feed_mu_);
    stopping_ = true;
  }
  feed_cv_.notify_all();
}

void EventRoutes::Relay(zmq::socket_t sub) {
  bool subscribed = false;
  while (!stopping_) {
    const bool want = streams_ > 0;
    if (want != subscribed) {
      // Both topics ("trial", "experiment"): the empty prefix.
      if (want) {
        sub.set(zmq::sockopt::subscribe, "");
      } else {
        sub.set(zmq::sockopt::unsubscribe, "");
      }
      subscribed = want;
      subscribed_ = want;
      feed_cv_.notify_all();  // streams waiting to say hello
    }
    zmq::pollitem_t item{sub.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::milliseconds(100)) == 0) continue;
    bus::Incoming in;
    std::vector<std::string> frames;
    while (bus::Receive(sub, in)) {
      auto d = proto::Decode(in.payload.data(), in.payload.size());
      auto e = d.ok() ? d->As<proto::SchedulerEvent>() : Result<proto::SchedulerEvent>(d.status());
      if (!e.ok()) {
        spdlog::warn("Dashboard: dropping an event-stream message because {}",
                     e.status().ToString());
        continue;
      }
      frames.push_back(
          SseFrame(e->event, EventData(e->event, e->experiment, e->trial_id, e->body_json)
                                 .dump(-1, ' ', false, json::error_handler_t::replace)));
    }
    if (frames.empty() || !subscribed) continue;
    {
      std::lock_guard<std::mutex> lock(feed_mu_);
      for (std::string& f : frames) feed_.push_back(std::move(f));
      while (feed_.size() > kFeedFrames) {
        feed_.pop_front();
        ++feed_first_;
      }
    }
    feed_cv_.notify_all();
  }
}

std::string EventRoutes::FramesAfter(uint64_t& next, std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(feed_mu_);
  feed_cv_.wait_for(lock, wait, [&] { return stopping_ || feed_first_ + feed_.size() > next; });
  const uint64_t end = feed_first_ + feed_.size();
  if (stopping_ || end <= next) return "";
  if (next < feed_first_) {
    next = end;
    return SseFrame("reset", "{}");
  }
  std::string out;
  for (uint64_t i = next; i < end; ++i) out += feed_[size_t(i - feed_first_)];
  next = end;
  return out;
}

std::optional<uint64_t> EventRoutes::Sequence() {
  std::lock_guard<std::mutex> lock(feed_mu_);
  if (!subscribed_) return std::nullopt;
  return feed_first_ + feed_.size();
}

void EventRoutes::Serve(const httplib::Request&, httplib::Response& res) {
  if (++streams_ > kMaxStreams) {
    --streams_;
    return SendError(res, Status::Unavailable(fmt::format(
                              "{} event streams are open already; close a page", kMaxStreams)));
  }
  res.set_header("Cache-Control", "no-store");
  auto cursor = std::make_shared<Cursor>();
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, cursor](size_t, httplib::DataSink& sink) { return NextChunk(*cursor, sink); },
      [this](bool) { --streams_; });
}

bool EventRoutes::NextChunk(Cursor& cursor, httplib::DataSink& sink) {
  // A closed page ends its stream here, within one wait (250 ms): httplib's chunked loop finds
  // a closed connection only when a write fails, up to two keep-alives (10 s) later, and
  // meanwhile the stream holds a thread and one of kMaxStreams.
  if (stopping_ || !sink.is_writable()) return false;
  std::string out;
  if (!cursor.next.has_value()) {
    // Hello once the relay's SUB is subscribed: what the page fetches after it, the stream
    // completes.
    std::unique_lock<std::mutex> lock(feed_mu_);
    feed_cv_.wait_for(lock, std::chrono::milliseconds(250),
                      [this] { return stopping_ || subscribed_; });
    if (stopping_) return false;
    if (!subscribed_) return true;
    cursor.next = feed_first_ + feed_.size();
    out = "retry: 1000\n" + SseFrame("hello", "{}");
  } else {
    out = FramesAfter(*cursor.next, std::chrono::milliseconds(250));
    if (stopping_) return false;
    if (out.empty() && std::chrono::steady_clock::now() - cursor.last_write > kKeepAlive) {
      out = ": keep-alive\n\n";  // also finds a closed page
    }
  }
  if (out.empty()) return true;
  cursor.last_write = std::chrono::steady_clock::now();
  return sink.write(out.data(), out.size());
}

}  // namespace tunebus::dashboard
