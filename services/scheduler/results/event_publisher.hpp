// EventPublisher: the scheduler's event stream (proto/PROTOCOL.md "Events"): an XPUB socket that
// sends [topic, SchedulerEvent] and learns from the subscription messages which topics anyone
// listens to, so an event nobody subscribed to is never built (a trial_result event serialises
// the whole trial: config, last result, checkpoints; on the result path that cost is paid only
// while a `tunectl watch` or another subscriber is connected).
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <zmq.hpp>

#include "proto/events.hpp"

namespace tunebus {

class EventPublisher {
 public:
  /// `socket` is a bound XPUB socket; the owner calls OnReadable when it is readable.
  explicit EventPublisher(zmq::socket_t& socket) : socket_(socket) {}

  /// Drains the subscription messages (byte 1 = subscribe, 0 = unsubscribe, then the prefix).
  /// XPUB forwards the first subscription of a prefix and the unsubscription of its last
  /// subscriber (a subscriber that disconnects unsubscribes), so a count per prefix suffices.
  void OnReadable();
  /// True if some subscriber's prefix matches `topic`.
  bool Wanted(const std::string& topic) const;
  /// Sends `event` (experiment `experiment`, trial `trial_id`, may be empty) under its topic
  /// (proto::SchedulerEventTopic) with the body `make_body()` returns, if Wanted(topic); never
  /// blocks (a full queue drops it).
  void Publish(proto::SchedulerEventKind event, const std::string& experiment,
               const std::string& trial_id, const std::function<nlohmann::json()>& make_body);

 private:
  zmq::socket_t& socket_;
  std::map<std::string, int> prefixes_;  // subscribed prefix -> count
};

}  // namespace tunebus
