#include "libs/bus/socket.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

namespace tunebus::bus {

Result<zmq::socket_t> Bind(zmq::context_t& ctx, zmq::socket_type type, const std::string& endpoint,
                           Security& security, const Domain& domain) {
  try {
    zmq::socket_t s(ctx, type);
    s.set(zmq::sockopt::linger, 0);
    s.set(zmq::sockopt::maxmsgsize, proto::kMaxMessageBytes);
    s.set(zmq::sockopt::sndhwm, kHighWaterMark);
    s.set(zmq::sockopt::rcvhwm, kHighWaterMark);
    if (type == zmq::socket_type::router) s.set(zmq::sockopt::router_mandatory, 1);
    if (Status secured = security.SecureBind(ctx, s, endpoint, domain); !secured.ok())
      return secured;
    s.bind(endpoint);
    return s;
  } catch (const zmq::error_t& e) {
    return Status::Unavailable(fmt::format("cannot bind {}: {}", endpoint, e.what()));
  }
}

namespace {
int EnvMs(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long ms = std::strtol(v, &end, 10);
  return (*end == '\0' && ms > 0 && ms <= 3600000) ? int(ms) : fallback;
}
}  // namespace

ReconnectBackoff DefaultReconnectBackoff() {
  static const ReconnectBackoff backoff = [] {
    ReconnectBackoff b;
    b.initial_ms = EnvMs("TUNEBUS_RECONNECT_MS", b.initial_ms);
    b.max_ms = std::max(b.initial_ms, EnvMs("TUNEBUS_RECONNECT_MAX_MS", b.max_ms));
    return b;
  }();
  return backoff;
}

Result<zmq::socket_t> Connect(zmq::context_t& ctx, zmq::socket_type type,
                              const std::string& endpoint, const Security& security,
                              const ServerKey& server, const ConnectOptions& options) {
  try {
    zmq::socket_t s(ctx, type);
    s.set(zmq::sockopt::linger, 0);
    s.set(zmq::sockopt::maxmsgsize, proto::kMaxMessageBytes);
    s.set(zmq::sockopt::sndhwm, kHighWaterMark);
    s.set(zmq::sockopt::rcvhwm, kHighWaterMark);
    if (!options.routing_id.empty()) s.set(zmq::sockopt::routing_id, options.routing_id);
    if (type == zmq::socket_type::router) s.set(zmq::sockopt::router_mandatory, 1);
    const ReconnectBackoff backoff = options.backoff.value_or(DefaultReconnectBackoff());
    s.set(zmq::sockopt::reconnect_ivl, backoff.initial_ms);
    s.set(zmq::sockopt::reconnect_ivl_max, backoff.max_ms);
    if (options.immediate) s.set(zmq::sockopt::immediate, 1);
    if (Status secured = security.SecureConnect(s, endpoint, server); !secured.ok()) return secured;
    s.connect(endpoint);
    return s;
  } catch (const zmq::error_t& e) {
    return Status::Unavailable(fmt::format("cannot connect {}: {}", endpoint, e.what()));
  }
}

std::string BoundEndpoint(zmq::socket_t& socket) { return socket.get(zmq::sockopt::last_endpoint); }

bool Receive(zmq::socket_t& socket, Incoming& out) {
  out.route.clear();
  zmq::message_t frame;
  if (!socket.recv(frame, zmq::recv_flags::dontwait)) return false;
  while (frame.more()) {
    out.route.push_back(frame.to_string());
    // the next frame is already queued: multipart messages arrive atomically
    if (!socket.recv(frame, zmq::recv_flags::dontwait)) return false;
  }
  // The ZAP handler's user id (zap_authenticator.hpp); no metadata on a socket without CURVE.
  const char* key = zmq_msg_gets(frame.handle(), "User-Id");
  if (key != nullptr) {
    out.key = key;
  } else {
    out.key.clear();
  }
  out.payload = std::move(frame);
  return true;
}

bool Reply(zmq::socket_t& router, const Incoming& request, const std::string& payload) {
  try {
    for (const auto& part : request.route) {
      if (!router.send(zmq::buffer(part), zmq::send_flags::sndmore | zmq::send_flags::dontwait))
        return false;
    }
    return router.send(zmq::buffer(payload), zmq::send_flags::dontwait).has_value();
  } catch (const zmq::error_t&) {
    return false;  // EHOSTUNREACH: the peer is gone (ROUTER_MANDATORY)
  }
}

bool SendTo(zmq::socket_t& router, const std::string& peer, const std::string& payload) {
  try {
    if (!router.send(zmq::buffer(peer), zmq::send_flags::sndmore | zmq::send_flags::dontwait))
      return false;
    return router.send(zmq::buffer(payload), zmq::send_flags::dontwait).has_value();
  } catch (const zmq::error_t&) {
    return false;  // EHOSTUNREACH: the peer is gone (ROUTER_MANDATORY)
  }
}

bool Send(zmq::socket_t& socket, const std::string& payload) {
  try {
    return socket.send(zmq::buffer(payload), zmq::send_flags::dontwait).has_value();
  } catch (const zmq::error_t&) {
    return false;
  }
}

}  // namespace tunebus::bus
