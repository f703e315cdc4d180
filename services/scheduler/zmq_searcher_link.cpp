#include "services/scheduler/zmq_searcher_link.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>

#include "libs/bus/socket.hpp"

namespace tunebus {

using nlohmann::json;

namespace {

// A request built as JSON, for RequestClient (which sets `id`): packed as the JSON's msgpack
// map with `id` set.
struct JsonRequest {
  uint64_t id = 0;
  json body;
};

// A DEALER to the searcher. ZeroMQ's own reconnect interval stays short (100 ms up to 1 s):
// the link's requests carry the backoff (ExternalSearcher), and a restarted searcher should
// be reached as soon as it listens. Errors: Unavailable.
Result<zmq::socket_t> ConnectDealer(zmq::context_t& ctx, const std::string& endpoint) {
  try {
    zmq::socket_t s(ctx, zmq::socket_type::dealer);
    s.set(zmq::sockopt::linger, 0);
    s.set(zmq::sockopt::maxmsgsize, proto::kMaxMessageBytes);
    s.set(zmq::sockopt::reconnect_ivl, 100);
    s.set(zmq::sockopt::reconnect_ivl_max, 1000);
    // Queue only to a connected searcher: while it is down a request fails at once (backoff)
    // instead of waiting in the socket to reach a restarted searcher as a stale session.
    s.set(zmq::sockopt::immediate, 1);
    s.connect(endpoint);
    return s;
  } catch (const zmq::error_t& e) {
    return Status::Unavailable(fmt::format("cannot connect {}: {}", endpoint, e.what()));
  }
}

}  // namespace
}  // namespace tunebus

namespace msgpack {
MSGPACK_API_VERSION_NAMESPACE(MSGPACK_DEFAULT_API_NS) {
  namespace adaptor {
  template <>
  struct pack<tunebus::JsonRequest> {
    template <typename Stream>
    msgpack::packer<Stream>& operator()(msgpack::packer<Stream>& pk,
                                        const tunebus::JsonRequest& r) const {
      nlohmann::json body = r.body;
      body["id"] = r.id;
      const std::vector<uint8_t> bytes = nlohmann::json::to_msgpack(body);
      return pk.pack_str_body(reinterpret_cast<const char*>(bytes.data()), uint32_t(bytes.size()));
    }
  };
  }  // namespace adaptor
}  // MSGPACK_API_VERSION_NAMESPACE(MSGPACK_DEFAULT_API_NS)
}  // namespace msgpack

namespace tunebus {

Result<json> SearcherReplyToJson(const proto::Decoded& decoded) {
  auto object = decoded.As<msgpack::object>();
  if (!object.ok()) return object.status();
  msgpack::sbuffer buf;
  msgpack::pack(buf, *object);
  try {
    json reply = json::from_msgpack(buf.data(), buf.data() + buf.size());
    // from_msgpack takes strings as bytes; a string that is not UTF-8 would throw later, where
    // the reply is written out (a config's dump): refused here (type_error 316).
    (void)reply.dump();
    return reply;
  } catch (const std::exception& e) {
    return Status::InvalidArgument(
        fmt::format("{}: the reply is not a map JSON can hold: {}", decoded.type(), e.what()));
  }
}

ZmqSearcherLink::ZmqSearcherLink(bus::EventLoop& loop, zmq::context_t& ctx, std::string endpoint,
                                 std::string peer)
    : loop_(loop), ctx_(ctx), endpoint_(std::move(endpoint)), peer_(std::move(peer)) {}

SearcherLinkFactory ZmqSearcherLink::Factory(bus::EventLoop& loop, zmq::context_t& ctx,
                                             std::string peer) {
  return [&loop, &ctx, peer](const std::string& endpoint) -> std::unique_ptr<SearcherLink> {
    return std::make_unique<ZmqSearcherLink>(loop, ctx, endpoint, peer);
  };
}

ZmqSearcherLink::~ZmqSearcherLink() {
  *alive_ = false;
  for (bus::EventLoop::TimerId id : timers_) loop_.CancelTimer(id);
}

void ZmqSearcherLink::Request(json request, double timeout_s, ReplyCallback done) {
  if (!client_) {
    auto socket = ConnectDealer(ctx_, endpoint_);
    if (!socket.ok()) {
      After(timeout_s, [done = std::move(done), status = socket.status()] { done(status); });
      return;
    }
    client_ = std::make_unique<bus::RequestClient>(loop_, std::move(*socket),
                                                   "the " + peer_ + " at " + endpoint_);
    client_->SetUnsolicitedHandler([this](const proto::Decoded& d) {
      spdlog::info("Dropping {} from the {} at {} because its request timed out", d.type(), peer_,
                   endpoint_);
    });
    // ZeroMQ connects in its I/O thread: the first request waits kConnectS for the connection
    // to a listening peer, which ZMQ_IMMEDIATE needs to queue it.
    After(kConnectS, [this, request = std::move(request), timeout_s, done = std::move(done)] {
      Request(request, timeout_s, done);
    });
    return;
  }
  const std::string type = request.value("type", "");
  request["v"] = proto::kProtocolVersion;
  client_->Request(
      JsonRequest{0, std::move(request)},
      [this, type, done = std::move(done), alive = alive_](Result<proto::Decoded> reply) {
        if (!*alive) return;
        if (!reply.ok() && reply.status().message().find("queue full") != std::string::npos) {
          // With ZMQ_IMMEDIATE and one request at a time, a full queue means no connection.
          reply = Status::Unavailable(fmt::format(
              "the {} at {} is not connected (nothing listens there)", peer_, endpoint_));
        }
        if (!reply.ok()) {
          spdlog::warn("The {} at {} did not answer {}: {}", peer_, endpoint_, type,
                       reply.status().ToString());
          done(reply.status());
          return;
        }
        done(SearcherReplyToJson(*reply));
      },
      bus::DurationFromSeconds(timeout_s));
}

void ZmqSearcherLink::After(double delay_s, std::function<void()> fn) {
  // The id is known only once the timer is added: the handler finds it through a shared slot.
  auto id = std::make_shared<bus::EventLoop::TimerId>(0);
  *id = loop_.AddTimer(bus::DurationFromSeconds(delay_s),
                       [this, id, fn = std::move(fn), alive = alive_] {
                         if (!*alive) return;
                         timers_.erase(*id);
                         fn();
                       });
  timers_.insert(*id);
}

double ZmqSearcherLink::NowS() const {
  return std::chrono::duration<double>(loop_.clock().Now().time_since_epoch()).count();
}

}  // namespace tunebus
