#include "libs/bus/event_loop.hpp"

#include <algorithm>

namespace tunebus::bus {

void EventLoop::AddSocket(zmq::socket_t& socket, Handler on_readable) {
  sources_.push_back({next_source_++, &socket, -1, std::move(on_readable)});
}

void EventLoop::RemoveSocket(const zmq::socket_t& socket) {
  std::erase_if(sources_, [&socket](const Source& s) { return s.socket == &socket; });
}

void EventLoop::AddFd(int fd, Handler on_readable) {
  sources_.push_back({next_source_++, nullptr, fd, std::move(on_readable)});
}

void EventLoop::RemoveFd(int fd) {
  std::erase_if(sources_, [fd](const Source& s) { return s.socket == nullptr && s.fd == fd; });
}

EventLoop::TimerId EventLoop::AddTimer(Duration delay, Handler handler) {
  const TimerId id = next_timer_++;
  timers_[id] = Timer{clock_.Now() + delay, Duration{0}, std::move(handler)};
  return id;
}

EventLoop::TimerId EventLoop::AddPeriodic(Duration interval, Handler handler) {
  const TimerId id = next_timer_++;
  timers_[id] = Timer{clock_.Now() + interval, interval, std::move(handler)};
  return id;
}

void EventLoop::CancelTimer(TimerId id) { timers_.erase(id); }

void EventLoop::RunDueTimers() {
  const auto now = clock_.Now();
  std::vector<TimerId> due;
  for (const auto& [id, t] : timers_) {
    if (t.due <= now) due.push_back(id);
  }
  for (TimerId id : due) {
    auto it = timers_.find(id);
    if (it == timers_.end()) continue;  // cancelled by an earlier timer
    Handler h = it->second.handler;
    if (it->second.interval.count() > 0) {
      it->second.due = now + it->second.interval;
    } else {
      timers_.erase(it);
    }
    h();
  }
}

bool EventLoop::RunOnce(Duration max_wait) {
  if (stopped()) return false;
  Duration wait = max_wait;
  const auto now = clock_.Now();
  for (const auto& [id, t] : timers_) {
    wait = std::min(wait, std::max(Duration{0}, std::chrono::duration_cast<Duration>(t.due - now)));
  }
  std::vector<zmq::pollitem_t> items;
  items.reserve(sources_.size());
  for (const auto& s : sources_) {
    items.push_back({s.socket ? s.socket->handle() : nullptr, s.fd, ZMQ_POLLIN, 0});
  }
  try {
    zmq::poll(items, wait);
  } catch (const zmq::error_t& e) {
    if (e.num() != EINTR) throw;
  }
  // Handlers may add or remove sources (a reply that ends an experiment frees its links'
  // sockets): the ready ones are called by id, each only if it is still there.
  std::vector<uint64_t> ready;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].revents & (ZMQ_POLLIN | ZMQ_POLLERR)) ready.push_back(sources_[i].id);
  }
  for (uint64_t id : ready) {
    if (stopped()) return false;
    auto it = std::find_if(sources_.begin(), sources_.end(),
                           [id](const Source& s) { return s.id == id; });
    if (it == sources_.end()) continue;
    Handler h = it->handler;  // a copy: the handler may remove its own source
    h();
  }
  RunDueTimers();
  if (idle_hook_) idle_hook_();
  return !stopped();
}

void EventLoop::Run() {
  while (RunOnce(Duration{100})) {
  }
}

}  // namespace tunebus::bus
