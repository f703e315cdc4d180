// RequestClient: asynchronous request/reply over a DEALER socket, matched by correlation id.
//
// Used by the scheduler to talk to the resource-manager and the checkpoint-store and by workers
// to talk to the store. Requests are pipelined (many in flight). Each callback runs exactly
// once on the loop thread: with the decoded reply, with the peer's ErrorReply as a Status, or
// with Unavailable after `timeout` (the late reply, if any, is then dropped).
//
// The client may be destroyed while the loop runs, also from one of its own callbacks: its
// socket leaves the loop and its pending callbacks are never called.
#pragma once

#include <spdlog/spdlog.h>

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "libs/bus/event_loop.hpp"
#include "libs/bus/socket.hpp"

namespace tunebus::bus {

class RequestClient {
 public:
  using Callback = std::function<void(Result<proto::Decoded>)>;

  /// `socket` is a connected DEALER; `peer_name` is used in log lines and errors.
  RequestClient(EventLoop& loop, zmq::socket_t socket, std::string peer_name);
  ~RequestClient();
  RequestClient(const RequestClient&) = delete;
  RequestClient& operator=(const RequestClient&) = delete;

  /// Sends `message` with a fresh id (written into `message.id`, so an lvalue is not copied).
  /// Returns that id.
  template <typename M>
  uint64_t Request(M&& message, Callback callback, Duration timeout = Duration{10000}) {
    message.id = next_id_++;
    SendRequest(message.id, proto::Encode(message), std::move(callback), timeout);
    return message.id;
  }
  /// Sends a one-way message (no reply expected).
  template <typename M>
  bool Post(const M& message) {
    return Send(socket_, proto::Encode(message));
  }
  /// Messages that answer no pending request (e.g. late replies after a timeout) go here.
  void SetUnsolicitedHandler(std::function<void(const proto::Decoded&)> h) {
    unsolicited_ = std::move(h);
  }

  size_t in_flight() const { return pending_.size(); }
  zmq::socket_t& socket() { return socket_; }
  /// The loop whose thread sends the requests and runs the callbacks.
  EventLoop& loop() { return loop_; }

 private:
  void SendRequest(uint64_t id, const std::string& payload, Callback callback, Duration timeout);
  void OnReadable();

  struct Pending {
    Callback callback;
    EventLoop::TimerId timer;
  };
  EventLoop& loop_;
  zmq::socket_t socket_;
  std::string peer_name_;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, Pending> pending_;
  std::function<void(const proto::Decoded&)> unsolicited_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

/// Maps an ErrorReply's code name back to a StatusCode (unknown names map to kInternal).
StatusCode StatusCodeFromName(const std::string& name);

}  // namespace tunebus::bus
