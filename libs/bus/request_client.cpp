#include "libs/bus/request_client.hpp"

#include <fmt/format.h>

namespace tunebus::bus {

StatusCode StatusCodeFromName(const std::string& name) {
  for (int c = 0; c <= int(StatusCode::kForbidden); ++c) {
    if (name == StatusCodeName(StatusCode(c))) return StatusCode(c);
  }
  return StatusCode::kInternal;
}

RequestClient::RequestClient(EventLoop& loop, zmq::socket_t socket, std::string peer_name)
    : loop_(loop), socket_(std::move(socket)), peer_name_(std::move(peer_name)) {
  loop_.AddSocket(socket_, [this] { OnReadable(); });
}

RequestClient::~RequestClient() {
  *alive_ = false;
  loop_.RemoveSocket(socket_);
  for (auto& [id, p] : pending_) loop_.CancelTimer(p.timer);
}

void RequestClient::SendRequest(uint64_t id, const std::string& payload, Callback callback,
                                Duration timeout) {
  if (!Send(socket_, payload)) {
    loop_.AddTimer(Duration{0}, [cb = std::move(callback), peer = peer_name_] {
      cb(Status::Unavailable(fmt::format("cannot send to {}: queue full", peer)));
    });
    return;
  }
  const auto timer = loop_.AddTimer(timeout, [this, id, timeout] {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    Callback cb = std::move(it->second.callback);
    pending_.erase(it);
    cb(Status::Unavailable(
        fmt::format("{} did not answer request {} within {} ms", peer_name_, id, timeout.count())));
  });
  pending_.emplace(id, Pending{std::move(callback), timer});
}

void RequestClient::OnReadable() {
  Incoming in;
  // A callback may free this client (a reply that ends the experiment owning it): after one,
  // nothing of it is touched unless it is still alive.
  const std::shared_ptr<bool> alive = alive_;
  while (*alive && Receive(socket_, in)) {
    auto decoded = proto::Decode(in.payload.data(), in.payload.size());
    if (!decoded.ok()) {
      spdlog::warn("Dropping reply from {} because it is malformed: {}", peer_name_,
                   decoded.status().ToString());
      continue;
    }
    auto it = pending_.find(decoded->id());
    if (it == pending_.end()) {
      if (unsolicited_) unsolicited_(*decoded);
      continue;
    }
    Callback cb = std::move(it->second.callback);
    loop_.CancelTimer(it->second.timer);
    pending_.erase(it);
    if (decoded->type() == proto::ErrorReply::kType) {
      auto err = decoded->As<proto::ErrorReply>();
      if (!err.ok()) {
        cb(err.status());
      } else {
        cb(Status(StatusCodeFromName(err->code), err->message));
      }
      continue;
    }
    cb(std::move(decoded));
  }
}

}  // namespace tunebus::bus
