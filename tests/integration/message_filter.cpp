#include "tests/integration/message_filter.hpp"

#include <algorithm>
#include <utility>

#include "proto/codec.hpp"

namespace tunebus::testing {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kHighWaterMark = 100000;

void SetCommonOptions(zmq::socket_t& s) {
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::sndhwm, kHighWaterMark);
  s.set(zmq::sockopt::rcvhwm, kHighWaterMark);
}

// The frames of one message, without blocking; empty if none is waiting.
std::vector<zmq::message_t> ReceiveFrames(zmq::socket_t& socket) {
  std::vector<zmq::message_t> frames;
  zmq::message_t frame;
  if (!socket.recv(frame, zmq::recv_flags::dontwait)) return frames;
  bool more = frame.more();
  frames.push_back(std::move(frame));
  while (more) {
    zmq::message_t next;
    (void)socket.recv(next, zmq::recv_flags::none);  // the rest of a message is already here
    more = next.more();
    frames.push_back(std::move(next));
  }
  return frames;
}

// Sends `frames` on `socket` after `prefix` frames; false if ZeroMQ refused (peer unknown or
// gone, queue full).
bool SendFrames(zmq::socket_t& socket, const std::vector<std::string>& prefix,
                const std::vector<zmq::message_t>& frames) {
  try {
    for (const std::string& p : prefix) {
      if (!socket.send(zmq::buffer(p), zmq::send_flags::sndmore | zmq::send_flags::dontwait))
        return false;
    }
    for (size_t i = 0; i < frames.size(); ++i) {
      zmq::message_t copy;
      copy.copy(const_cast<zmq::message_t&>(frames[i]));
      const auto flags = i + 1 < frames.size()
                             ? zmq::send_flags::sndmore | zmq::send_flags::dontwait
                             : zmq::send_flags::dontwait;
      if (!socket.send(copy, flags)) return false;
    }
  } catch (const zmq::error_t&) {
    return false;  // EHOSTUNREACH: the client is no longer connected (ROUTER_MANDATORY)
  }
  return true;
}

const char* DirectionName(FilterDirection d) {
  return d == FilterDirection::kToService ? "to the service" : "to the client";
}

const char* ActionName(FilterAction a) {
  switch (a) {
    case FilterAction::kDrop:
      return "drop";
    case FilterAction::kDelay:
      return "delay";
    case FilterAction::kDuplicate:
      return "duplicate";
  }
  return "?";
}

}  // namespace

MessageFilter::MessageFilter(std::string name)
    : name_(std::move(name)),
      clients_(ctx_, zmq::socket_type::router),
      wake_(ctx_, zmq::socket_type::pair),
      waker_(ctx_, zmq::socket_type::pair) {
  SetCommonOptions(clients_);
  clients_.set(zmq::sockopt::router_mandatory, 1);
  clients_.set(zmq::sockopt::router_handover, 1);  // a reconnecting client takes its id back
  clients_.bind("tcp://127.0.0.1:*");
  endpoint_ = clients_.get(zmq::sockopt::last_endpoint);
  const std::string wake = "inproc://message-filter-wake";
  wake_.bind(wake);
  waker_.connect(wake);
}

MessageFilter::~MessageFilter() {
  if (thread_.joinable()) {
    waker_.send(zmq::str_buffer("stop"), zmq::send_flags::none);
    thread_.join();
  }
}

void MessageFilter::Connect(const std::string& upstream) {
  if (thread_.joinable()) {
    EXPECT_EQ(upstream, upstream_)
        << "message filter " << name_ << " already forwards to " << upstream_;
    return;
  }
  upstream_ = upstream;
  thread_ = std::thread([this] { Run(); });
}

int MessageFilter::Add(FilterRule rule) {
  EXPECT_GE(rule.count, 1) << "message filter " << name_ << ": a rule acts at least once";
  EXPECT_GE(rule.skip, 0);
  std::lock_guard lock(mu_);
  rules_.push_back(Rule{std::move(rule)});
  return int(rules_.size()) - 1;
}

int MessageFilter::Fired(int id) const {
  std::lock_guard lock(mu_);
  return id >= 0 && size_t(id) < rules_.size() ? rules_[id].fired : 0;
}

::testing::AssertionResult MessageFilter::WaitFired(int id, std::chrono::milliseconds timeout,
                                                    int times) const {
  std::unique_lock lock(mu_);
  if (id < 0 || size_t(id) >= rules_.size())
    return ::testing::AssertionFailure() << "message filter " << name_ << " has no rule " << id;
  const int want = times > 0 ? times : rules_[id].spec.count;
  if (fired_cv_.wait_for(lock, timeout, [&] { return rules_[id].fired >= want; }))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << Describe(id) << " acted on " << rules_[id].fired << " messages, not " << want
         << ", within " << timeout.count() << " ms";
}

int MessageFilter::Count(FilterDirection direction, const std::string& type) const {
  std::lock_guard lock(mu_);
  auto it = counts_.find({direction, type});
  return it == counts_.end() ? 0 : it->second;
}

std::string MessageFilter::Describe(int id) const {
  const FilterRule& r = rules_[id].spec;
  return "message filter " + name_ + " rule " + std::to_string(id) + " (" + ActionName(r.action) +
         " " + r.type + " " + DirectionName(r.direction) + ", skip " + std::to_string(r.skip) +
         ", count " + std::to_string(r.count) + ")";
}

zmq::socket_t& MessageFilter::Backend(const std::string& client) {
  auto it = backends_.find(client);
  if (it != backends_.end()) return it->second;
  zmq::socket_t dealer(ctx_, zmq::socket_type::dealer);
  SetCommonOptions(dealer);
  dealer.set(zmq::sockopt::reconnect_ivl, 100);
  dealer.set(zmq::sockopt::reconnect_ivl_max, 100);
  // ZeroMQ's generated ids start with a zero byte, which a socket may not set as its own.
  if (!client.empty() && client[0] != '\0') dealer.set(zmq::sockopt::routing_id, client);
  dealer.connect(upstream_);
  return backends_.emplace(client, std::move(dealer)).first->second;
}

void MessageFilter::Forward(FilterDirection direction, const std::string& client,
                            std::vector<zmq::message_t>& frames) {
  if (direction == FilterDirection::kToService) {
    SendFrames(Backend(client), {}, frames);
  } else {
    SendFrames(clients_, {client}, frames);
  }
}

void MessageFilter::OnMessage(FilterDirection direction, const std::string& client,
                              std::vector<zmq::message_t> frames) {
  if (frames.empty()) return;
  const std::string type = proto::PeekEnvelope(frames.back().data(), frames.back().size()).type;
  FilterAction action{};
  std::chrono::milliseconds delay{0};
  bool acts = false;
  {
    std::lock_guard lock(mu_);
    ++counts_[{direction, type}];
    for (Rule& rule : rules_) {
      if (rule.spec.direction != direction || rule.spec.type != type ||
          rule.fired >= rule.spec.count)
        continue;
      if (rule.matched++ < rule.spec.skip) break;  // let through: this rule took it
      ++rule.fired;
      acts = true;
      action = rule.spec.action;
      delay = rule.spec.delay;
      break;
    }
  }
  if (acts) fired_cv_.notify_all();
  if (!acts) {
    Forward(direction, client, frames);
    return;
  }
  switch (action) {
    case FilterAction::kDrop:
      return;
    case FilterAction::kDuplicate:
      Forward(direction, client, frames);
      Forward(direction, client, frames);
      return;
    case FilterAction::kDelay:
      held_.push_back(Held{Clock::now() + delay, direction, client, std::move(frames)});
      return;
  }
}

void MessageFilter::Run() {
  while (true) {
    // Sockets to wait on: the stop signal, the clients' ROUTER, then every DEALER to the service.
    std::vector<zmq::pollitem_t> items = {{wake_.handle(), 0, ZMQ_POLLIN, 0},
                                          {clients_.handle(), 0, ZMQ_POLLIN, 0}};
    std::vector<const std::string*> clients;
    for (auto& [client, dealer] : backends_) {
      items.push_back({dealer.handle(), 0, ZMQ_POLLIN, 0});
      clients.push_back(&client);
    }
    // Wait for a message, or until the next held message is due.
    std::chrono::milliseconds wait{-1};
    if (!held_.empty()) {
      const auto next = std::min_element(held_.begin(), held_.end(), [](auto& a, auto& b) {
                          return a.due < b.due;
                        })->due;
      wait = std::max(std::chrono::milliseconds{0},
                      std::chrono::ceil<std::chrono::milliseconds>(next - Clock::now()));
    }
    zmq::poll(items, wait);
    if (items[0].revents & ZMQ_POLLIN) return;
    if (items[1].revents & ZMQ_POLLIN) {
      for (auto frames = ReceiveFrames(clients_); !frames.empty();
           frames = ReceiveFrames(clients_)) {
        const std::string client = frames.front().to_string();
        frames.erase(frames.begin());
        OnMessage(FilterDirection::kToService, client, std::move(frames));
      }
    }
    for (size_t i = 0; i < clients.size(); ++i) {
      if (!(items[i + 2].revents & ZMQ_POLLIN)) continue;
      zmq::socket_t& dealer = backends_.at(*clients[i]);
      for (auto frames = ReceiveFrames(dealer); !frames.empty(); frames = ReceiveFrames(dealer)) {
        OnMessage(FilterDirection::kToClient, *clients[i], std::move(frames));
      }
    }
    // Held messages that are due leave in the order they fell due.
    const auto now = Clock::now();
    std::stable_sort(held_.begin(), held_.end(),
                     [](const Held& a, const Held& b) { return a.due < b.due; });
    size_t due = 0;
    while (due < held_.size() && held_[due].due <= now) {
      Forward(held_[due].direction, held_[due].client, held_[due].frames);
      ++due;
    }
    held_.erase(held_.begin(), held_.begin() + due);
  }
}

}  // namespace tunebus::testing
