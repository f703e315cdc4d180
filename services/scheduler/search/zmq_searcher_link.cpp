#include "services/scheduler/search/zmq_searcher_link.hpp"

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
// be reached as soon as it listens. Queued only to a connected searcher (ZMQ_IMMEDIATE): while
// it is down a request fails at once (backoff) instead of waiting in the socket to reach a
// restarted searcher as a stale session. Errors: Unavailable; Security::SecureConnect's.
Result<zmq::socket_t> ConnectDealer(zmq::context_t& ctx, const std::string& endpoint,
                                    const bus::Security& security, const bus::ServerKey& peer) {
  return bus::Connect(ctx, zmq::socket_type::dealer, endpoint, security, peer,
                      {.backoff = bus::ReconnectBackoff{100, 1000}, .immediate = true});
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

ZmqSearcherLink::ZmqSearcherLink(bus::EventLoop& loop, zmq::context_t& ctx,
                                 std::shared_ptr<const bus::Security> security,
                                 std::string endpoint, std::string server_key, std::string peer,
                                 bus::RoleSet roles)
    : loop_(loop),
      ctx_(ctx),
      security_(std::move(security)),
      endpoint_(std::move(endpoint)),
      server_key_(std::move(server_key)),
      peer_(std::move(peer)),
      roles_(roles) {}

SearcherLinkFactory ZmqSearcherLink::Factory(bus::EventLoop& loop, zmq::context_t& ctx,
                                             std::shared_ptr<const bus::Security> security,
                                             std::string peer, bus::RoleSet roles) {
  return [&loop, &ctx, security, peer, roles](const std::string& endpoint,
                                              const std::string& server_key) {
    return std::unique_ptr<SearcherLink>(
        new ZmqSearcherLink(loop, ctx, security, endpoint, server_key, peer, roles));
  };
}

Result<std::string> ZmqSearcherLink::AllowedPeerKey() const {
  if (!security_->curve() || endpoint_.rfind("tcp://", 0) != 0) return std::string();
  std::string key = server_key_;
  std::string source = "server_key";
  if (!bus::IsZ85Key(key)) {
    const std::string file =
        key.empty() ? bus::KeyPathsOf(security_->keys_dir(), peer_).public_file : key;
    auto read = bus::ReadCurveKeyFile(file);
    if (!read.ok()) {
      return Status::FailedPrecondition(
          key.empty()
              ? fmt::format("the {} at {} needs its CURVE public key: {}; copy the {}'s public "
                            "key file there, or name it with server_key in the experiment file",
                            peer_, endpoint_, read.status().message(), peer_)
              : fmt::format("the {}'s server_key '{}' is neither a CURVE public key (40 Z85 "
                            "characters) nor a readable key file: {}",
                            peer_, key, read.status().message()));
    }
    key = read->public_key;
    source = file;
  }
  bus::AllowedKey entry;
  if (!security_->Find(key, entry)) {
    return Status::Forbidden(fmt::format(
        "refusing to connect to the {} at {}: its key {}… ({}) is not in the scheduler's "
        "allow-list {}; a {} needs a key with role {} there (tunectl keygen NAME --role {} "
        "--authorize, or copy its .key file there, then SIGHUP the scheduler)",
        peer_, endpoint_, key.substr(0, 8), source, security_->authorized_dir(), peer_,
        roles_.ToString(), peer_ == "driver" ? "operator" : "searcher"));
  }
  if (!roles_.Contains(entry.role)) {
    return Status::Forbidden(fmt::format(
        "refusing to connect to the {} at {}: its key {} has role {}; a {} needs role {}", peer_,
        endpoint_, entry.name, bus::RoleName(entry.role), peer_, roles_.ToString()));
  }
  return key;
}

ZmqSearcherLink::~ZmqSearcherLink() {
  *alive_ = false;
  for (bus::EventLoop::TimerId id : timers_) loop_.CancelTimer(id);
}

void ZmqSearcherLink::Request(json request, double timeout_s, ReplyCallback done) {
  auto key = AllowedPeerKey();
  if (!key.ok()) {
    spdlog::warn("Not sending {} to the {} at {} because {}", request.value("type", ""), peer_,
                 endpoint_, key.status().ToString());
    After(0, [done = std::move(done), status = key.status()] { done(status); });
    return;
  }
  if (!client_) {
    auto socket = ConnectDealer(ctx_, endpoint_, *security_, bus::ServerKey{peer_, *key});
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
