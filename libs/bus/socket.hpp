// The socket factory of every service and client: Bind and Connect are the only places a socket
// is made, with tunebus's options and its Security (security.hpp: CURVE on tcp:// with keys,
// refusal of plaintext non-loopback binds); framed send/receive for ROUTER and DEALER sockets.
//
// Every socket sets ZMQ_MAXMSGSIZE (proto::kMaxMessageBytes) so a hostile peer cannot make a
// service allocate an unbounded frame, and ZMQ_LINGER 0 so shutdown never blocks.
#pragma once

#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "libs/bus/security.hpp"
#include "libs/core/status.hpp"
#include "proto/codec.hpp"

namespace tunebus::bus {

inline constexpr int kHighWaterMark = 100000;

/// Creates a socket of `type` bound to `endpoint` ("tcp://127.0.0.1:5555", "tcp://*:0",
/// "inproc://name", "ipc:///path"), secured by `security` as server of `domain`
/// (Security::SecureBind). Errors: Unavailable naming the endpoint and zmq's reason; SecureBind's.
Result<zmq::socket_t> Bind(zmq::context_t& ctx, zmq::socket_type type, const std::string& endpoint,
                           Security& security, const Domain& domain);

/// Reconnect backoff of every connecting socket (ZMQ_RECONNECT_IVL / ZMQ_RECONNECT_IVL_MAX):
/// after the peer goes away, retry after `initial_ms`, doubling after each failed attempt up to
/// `max_ms` (DESIGN.md: 1 s doubling to 30 s), forever. The environment variables
/// TUNEBUS_RECONNECT_MS and TUNEBUS_RECONNECT_MAX_MS override the defaults (tests use short ones).
struct ReconnectBackoff {
  int initial_ms = 1000;
  int max_ms = 30000;
};
ReconnectBackoff DefaultReconnectBackoff();

/// How a connecting socket differs from the defaults.
struct ConnectOptions {
  /// Names this peer to a ROUTER (empty: ZeroMQ picks one).
  std::string routing_id;
  /// ZeroMQ's reconnect interval (default: DefaultReconnectBackoff()).
  std::optional<ReconnectBackoff> backoff;
  /// ZMQ_IMMEDIATE: queue messages only to a connected peer (a send fails at once while it is
  /// away, instead of waiting in the socket).
  bool immediate = false;
};

/// Creates a socket of `type` connected to `endpoint`, a CURVE client of `server`'s key where
/// `security` says so (Security::SecureConnect). Errors: Unavailable; SecureConnect's.
Result<zmq::socket_t> Connect(zmq::context_t& ctx, zmq::socket_type type,
                              const std::string& endpoint, const Security& security,
                              const ServerKey& server, const ConnectOptions& options = {});

/// The endpoint a socket actually bound (resolves "tcp://*:0" to its port).
std::string BoundEndpoint(zmq::socket_t& socket);

/// One message read from a socket: the envelope frames before the payload (on a ROUTER: the
/// peer's routing id, then an empty delimiter if the peer is a REQ socket) and the payload.
struct Incoming {
  std::vector<std::string> route;
  zmq::message_t payload;
  /// The sender's CURVE public key (Z85) as its server's ZAP handler accepted it; "" on
  /// plaintext, inproc and ipc sockets (Security::Authorize).
  std::string key;
  /// The ROUTER peer's routing id, or "" on other sockets.
  std::string peer() const { return route.empty() ? std::string() : route.front(); }
};

/// Reads one message without blocking. Returns false if none is waiting.
bool Receive(zmq::socket_t& socket, Incoming& out);

/// Answers `request` through the ROUTER it came from, with its envelope frames (so REQ and
/// DEALER peers both work). Returns false if the peer is gone.
bool Reply(zmq::socket_t& router, const Incoming& request, const std::string& payload);
template <typename M>
bool ReplyMessage(zmq::socket_t& router, const Incoming& request, const M& message) {
  return Reply(router, request, proto::Encode(message));
}

/// Sends `payload` to the DEALER peer `peer` through a ROUTER. Returns false if the peer is unknown
/// (ZMQ_ROUTER_MANDATORY) or the send would block.
bool SendTo(zmq::socket_t& router, const std::string& peer, const std::string& payload);

/// Sends `payload` on a DEALER/PUB/PUSH socket, never blocking. Returns false if it would block.
bool Send(zmq::socket_t& socket, const std::string& payload);

template <typename M>
bool SendMessageTo(zmq::socket_t& router, const std::string& peer, const M& message) {
  return SendTo(router, peer, proto::Encode(message));
}
template <typename M>
bool SendMessage(zmq::socket_t& socket, const M& message) {
  return Send(socket, proto::Encode(message));
}

}  // namespace tunebus::bus
