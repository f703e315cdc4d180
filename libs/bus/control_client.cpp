#include "libs/bus/control_client.hpp"

#include <fmt/format.h>

#include "libs/bus/domains.hpp"
#include "libs/bus/request_client.hpp"
#include "libs/bus/socket.hpp"
#include "proto/control.hpp"

namespace tunebus {

Result<ControlClient> ControlClient::Connect(zmq::context_t& ctx, const std::string& endpoint,
                                             const bus::Security& security,
                                             std::chrono::milliseconds timeout,
                                             const Clock& clock) {
  auto s = bus::Connect(ctx, zmq::socket_type::dealer, endpoint, security, bus::kSchedulerKey);
  if (!s.ok()) return s.status();
  // A CURVE scheduler drops a handshake it refuses without a word: say what to check.
  std::string hint;
  if (endpoint.rfind("tcp://", 0) == 0) {
    hint = security.curve()
               ? fmt::format(
                     "; if it runs, check that its allow-list holds key {} with a role "
                     "that may use the control socket (viewer or operator)",
                     security.own_key().name)
               : "; a scheduler started with --keys-dir answers only clients with keys "
                 "(--keys-dir, docs/explanation/security.md)";
  }
  return ControlClient(std::move(*s), endpoint, std::move(hint), timeout, clock);
}

Status ControlClient::Exchange(uint64_t id, const std::string& payload,
                               const std::string& reply_type,
                               const std::function<void(const proto::Decoded&)>& on_reply) {
  if (!bus::Send(socket_, payload))
    return Status::Unavailable(fmt::format("cannot send to {}", endpoint_));
  const auto deadline = clock_->Now() + timeout_;
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_->Now());
    if (left.count() <= 0) {
      return Status::Unavailable(
          fmt::format("no answer from {} within {} ms (is the scheduler running?{})", endpoint_,
                      timeout_.count(), unanswered_hint_));
    }
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, left);
    bus::Incoming in;
    while (bus::Receive(socket_, in)) {
      auto d = proto::Decode(in.payload.data(), in.payload.size());
      if (!d.ok()) return d.status();
      if (d->id() != id) continue;  // a late answer to an earlier request
      if (d->type() == proto::ErrorReply::kType) {
        auto e = d->As<proto::ErrorReply>();
        if (!e.ok()) return e.status();
        return Status(bus::StatusCodeFromName(e->code), e->message);
      }
      if (d->type() != reply_type) {
        return Status::InvalidArgument(
            fmt::format("expected a {} reply, got {}", reply_type, d->type()));
      }
      on_reply(*d);
      return Status::Ok();
    }
  }
}

Result<nlohmann::json> ControlClient::CallRaw(uint64_t id, const std::string& payload) {
  Result<proto::ControlReply> reply = Status::Internal("no reply");
  Status s = Exchange(id, payload, proto::ControlReply::kType,
                      [&](const proto::Decoded& d) { reply = d.As<proto::ControlReply>(); });
  if (!s.ok()) return s;
  if (!reply.ok()) return reply.status();
  auto body = nlohmann::json::parse(reply->body_json, nullptr, false);
  if (body.is_discarded()) return Status::InvalidArgument("reply body is not JSON");
  return body;
}

}  // namespace tunebus
