// ControlClient: a blocking request/reply client of the scheduler's control socket (tunectl, the
// dashboard's HTTP threads). One thread uses a client at a time.
#pragma once

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <zmq.hpp>

#include "libs/bus/security.hpp"
#include "libs/core/clock.hpp"
#include "libs/core/status.hpp"
#include "proto/codec.hpp"

namespace tunebus {

class ControlClient {
 public:
  /// Connects a DEALER to `endpoint` (connecting never fails for a well-formed endpoint; an
  /// absent server shows up as a timeout in Call). `clock` times the timeout and outlives the
  /// client.
  /// `security` makes it a CURVE client of the scheduler's key on tcp:// with keys. Errors:
  /// Security::SecureConnect's (a missing scheduler.key).
  static Result<ControlClient> Connect(zmq::context_t& ctx, const std::string& endpoint,
                                       const bus::Security& security,
                                       std::chrono::milliseconds timeout,
                                       const Clock& clock = Clock::Real());

  /// Sends `request`, waits for its reply. Returns the ControlReply body as JSON.
  /// Errors: Unavailable on timeout ("no answer from <endpoint> within N ms"), the server's
  /// ErrorReply as a Status with its code, InvalidArgument for a malformed reply.
  template <typename M>
  Result<nlohmann::json> Call(M request) {
    request.id = next_id_++;
    return CallRaw(request.id, proto::Encode(request));
  }

  /// Sends `request`, waits for its reply of type Reply (not a ControlReply, e.g.
  /// CheckpointChunk). Errors: as Call; InvalidArgument for a reply of another type.
  template <typename Reply, typename M>
  Result<Reply> CallFor(M request) {
    request.id = next_id_++;
    Result<Reply> reply = Status::Internal("no reply");
    Status s = Exchange(request.id, proto::Encode(request), Reply::kType,
                        [&](const proto::Decoded& d) { reply = d.As<Reply>(); });
    if (!s.ok()) return s;
    return reply;
  }

 private:
  ControlClient(zmq::socket_t socket, std::string endpoint, std::string unanswered_hint,
                std::chrono::milliseconds timeout, const Clock& clock)
      : socket_(std::move(socket)),
        endpoint_(std::move(endpoint)),
        unanswered_hint_(std::move(unanswered_hint)),
        timeout_(timeout),
        clock_(&clock) {}
  Result<nlohmann::json> CallRaw(uint64_t id, const std::string& payload);
  /// Sends `payload` and waits for the answer to `id`: an ErrorReply becomes the Status, a
  /// message of `reply_type` is passed to `on_reply` (while its bytes are alive).
  Status Exchange(uint64_t id, const std::string& payload, const std::string& reply_type,
                  const std::function<void(const proto::Decoded&)>& on_reply);

  zmq::socket_t socket_;
  std::string endpoint_;
  std::string unanswered_hint_;  // why a running scheduler may not answer (keys)
  std::chrono::milliseconds timeout_;
  const Clock* clock_;
  uint64_t next_id_ = 1;
};

}  // namespace tunebus
