#include "services/scheduler/results/event_publisher.hpp"

#include <spdlog/spdlog.h>

#include "proto/codec.hpp"
#include "proto/events.hpp"

namespace tunebus {

void EventPublisher::OnReadable() {
  zmq::message_t msg;
  while (true) {
    zmq::recv_result_t got;
    try {
      got = socket_.recv(msg, zmq::recv_flags::dontwait);
    } catch (const zmq::error_t& e) {
      spdlog::warn("Event stream: cannot read a subscription: {}", e.what());
      return;
    }
    if (!got) return;
    if (msg.size() == 0) continue;
    const auto* data = static_cast<const char*>(msg.data());
    const std::string prefix(data + 1, msg.size() - 1);
    if (data[0] == 1) {
      ++prefixes_[prefix];
    } else if (data[0] == 0) {
      auto it = prefixes_.find(prefix);
      if (it != prefixes_.end() && --it->second <= 0) prefixes_.erase(it);
    }
  }
}

bool EventPublisher::Wanted(const std::string& topic) const {
  for (const auto& [prefix, count] : prefixes_) {
    if (topic.compare(0, prefix.size(), prefix) == 0) return true;
  }
  return false;
}

void EventPublisher::Publish(proto::SchedulerEventKind event, const std::string& experiment,
                             const std::string& trial_id,
                             const std::function<nlohmann::json()>& make_body) {
  const std::string topic = proto::SchedulerEventTopic(event);
  if (!Wanted(topic)) return;
  proto::SchedulerEvent e;
  e.event = proto::SchedulerEventKindName(event);
  e.experiment = experiment;
  e.trial_id = trial_id;
  e.body_json = make_body().dump();
  try {
    socket_.send(zmq::buffer(topic), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    socket_.send(zmq::buffer(proto::Encode(e)), zmq::send_flags::dontwait);
  } catch (const zmq::error_t& err) {
    spdlog::debug("Dropping event {}: {}", e.event, err.what());
  }
}

}  // namespace tunebus
