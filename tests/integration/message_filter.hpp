// MessageFilter: a ZeroMQ proxy a test places between a service's DEALER clients and the
// service's ROUTER, to drop, delay or duplicate chosen messages by their `type` (Mesos's
// DROP_MESSAGE / FUTURE_MESSAGE and libprocess's filters), so a fault test loses exactly the
// message it means to lose instead of killing a process around it.
//
// What it forwards: every message, both ways, between clients that connect to endpoint() and
// the service at the upstream endpoint given to Connect(). It binds a ROUTER on 127.0.0.1 at a
// port the kernel picks; for each client (each routing id the ROUTER sees) it opens one DEALER
// to the service with the same routing id (a client's own id is kept, so a trial-worker still
// names itself to the scheduler; an id ZeroMQ generated is not reused, the service sees another
// generated one). A message is its frames after the routing id, passed on unchanged; its type
// is read from its last frame (proto/PROTOCOL.md section 1: the msgpack payload is the last
// frame). Plaintext only (a cluster with --keys-dir cannot use it).
//
// Rules: Add({direction, type, action, count, skip, delay}). A message is matched against the
// rules in the order they were added; the first rule of its direction and type that is not
// spent takes it. The rule lets `skip` matching messages through untouched, then acts on the
// next `count` ones and is spent:
//   kDrop       the message is discarded;
//   kDelay      the message is held for `delay` of real time, then forwarded; messages behind it
//               are not held (they overtake it, as a late message on a network would);
//   kDuplicate  the message is forwarded twice, back to back.
// A message no rule takes is forwarded at once.
//
// A client's DEALER to the service is opened at the client's first message, so the service
// learns the client's routing id then (not at the client's connect, as a direct connection
// would): a service can reach a client only once the client has sent something through the
// filter (every tunebus client speaks first: register_worker, a request).
//
// Ordering: messages of one client in one direction leave in the order they came, except those
// a kDelay rule holds. A client that reconnects (a restarted trial-worker) keeps its DEALER to
// the service, so the service sees no reconnect; a service that restarts on the same port is
// reconnected to by each DEALER (100 ms reconnect interval), and what the clients send meanwhile
// waits in the DEALERs. A message for a client no longer connected is dropped (as the service's
// ROUTER would drop it).
//
// Threads: one thread of its own owns every socket (started by Connect, stopped and joined by
// the destructor, which discards held messages). Add, Fired, WaitFired and Count may be called
// from any thread. A test waits for a rule to have acted with WaitFired (a condition variable
// the filter's thread signals, bounded by the test's timeout), never by sleeping.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include <zmq.hpp>

namespace tunebus::testing {

/// The way a message travels through a MessageFilter.
enum class FilterDirection {
  kToService,  // from a client to the service (requests, reports)
  kToClient,   // from the service to a client (replies, decisions)
};

enum class FilterAction {
  kDrop,       // discard the message
  kDelay,      // hold it for FilterRule::delay, then forward it
  kDuplicate,  // forward it twice
};

struct FilterRule {
  FilterDirection direction = FilterDirection::kToService;
  std::string type;  // the message's `type`, e.g. "journal_append_many_ack"
  FilterAction action = FilterAction::kDrop;
  int count = 1;                       // matching messages it acts on before it is spent (>= 1)
  int skip = 0;                        // matching messages it lets through first (>= 0)
  std::chrono::milliseconds delay{0};  // kDelay only: real time the message is held
};

class MessageFilter {
 public:
  /// Binds the clients' ROUTER on tcp://127.0.0.1 at a port the kernel picks. `name` appears in
  /// failure messages. Throws zmq::error_t if it cannot bind.
  explicit MessageFilter(std::string name);
  /// Stops the thread; held messages are discarded.
  ~MessageFilter();
  MessageFilter(const MessageFilter&) = delete;
  MessageFilter& operator=(const MessageFilter&) = delete;

  /// Where clients connect instead of the service ("tcp://127.0.0.1:PORT").
  const std::string& endpoint() const { return endpoint_; }
  /// Starts forwarding to the service at `upstream`. A second call with the same endpoint does
  /// nothing; with another it is a test failure (one filter stands before one service).
  void Connect(const std::string& upstream);

  /// Adds `rule` after the existing ones; returns its id for Fired and WaitFired.
  /// REQUIRES: rule.count >= 1, rule.skip >= 0.
  int Add(FilterRule rule);
  /// How many messages rule `id` has acted on so far (0..its count).
  int Fired(int id) const;
  /// Waits until rule `id` has acted on `times` messages (0: its whole count) or `timeout`
  /// passed; the failure names the filter, the rule and how often it acted.
  ::testing::AssertionResult WaitFired(int id, std::chrono::milliseconds timeout,
                                       int times = 0) const;
  /// Messages of `type` that reached the filter in `direction` so far (before any rule).
  int Count(FilterDirection direction, const std::string& type) const;

 private:
  struct Rule {
    FilterRule spec;
    int matched = 0;  // matching messages seen (skipped ones included)
    int fired = 0;    // of those, acted on
  };
  struct Held {
    std::chrono::steady_clock::time_point due;
    FilterDirection direction;
    std::string client;
    std::vector<zmq::message_t> frames;
  };

  void Run();
  void OnMessage(FilterDirection direction, const std::string& client,
                 std::vector<zmq::message_t> frames);
  void Forward(FilterDirection direction, const std::string& client,
               std::vector<zmq::message_t>& frames);
  zmq::socket_t& Backend(const std::string& client);
  std::string Describe(int id) const;  // REQUIRES: mu_ held

  const std::string name_;
  zmq::context_t ctx_;
  zmq::socket_t clients_;  // ROUTER the clients connect to
  zmq::socket_t wake_;     // PAIR: the destructor's stop signal (filter thread's end)
  zmq::socket_t waker_;    // PAIR: the destructor's end
  std::string endpoint_;
  std::string upstream_;
  std::thread thread_;

  // Owned by the filter's thread once it runs.
  std::map<std::string, zmq::socket_t> backends_;  // client routing id -> DEALER to the service
  std::vector<Held> held_;

  mutable std::mutex mu_;
  mutable std::condition_variable fired_cv_;
  std::vector<Rule> rules_;                                        // guarded by mu_
  std::map<std::pair<FilterDirection, std::string>, int> counts_;  // guarded by mu_
};

}  // namespace tunebus::testing
