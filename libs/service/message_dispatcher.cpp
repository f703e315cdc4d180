#include "libs/service/message_dispatcher.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cassert>

#include "libs/service/stop_request.hpp"

namespace tunebus::service {

MessageDispatcher& MessageDispatcher::On(std::string_view type, bus::RoleSet roles,
                                         MessageHandler handler) {
  [[maybe_unused]] const bool added =
      handlers_.emplace(type, Entry{roles, std::move(handler)}).second;
  assert(added && "one handler per message type");
  return *this;
}

void MessageDispatcher::Dispatch(bus::Incoming& in) {
  auto decoded = proto::Decode(in.payload.data(), in.payload.size());
  if (!decoded.ok()) {
    Count(kMalformed);
    const proto::PeekedEnvelope env = proto::PeekEnvelope(in.payload.data(), in.payload.size());
    spdlog::warn("Dropping a {}-byte frame from {} because it does not decode: {}",
                 in.payload.size(), PeerName(in), decoded.status().ToString());
    Answer(in, env.id, env.type, decoded.status());
    return;
  }
  const proto::Decoded& msg = *decoded;
  auto it = handlers_.find(msg.type());
  if (it == handlers_.end()) {
    if (msg.type() == proto::ErrorReply::kType) {
      Count(proto::ErrorReply::kType);
      Drop(in, msg.id(), msg.type(), Status::InvalidArgument("nothing here awaits an answer"));
      return;
    }
    Count(kUnknown);
    const std::string type = Truncated(msg.type());
    Drop(in, msg.id(), type,
         Status::InvalidArgument(fmt::format("unknown message type '{}'", type)));
    return;
  }
  Count(it->first);
  if (!in.key.empty() && options_.security) {
    if (Status s = options_.security->Authorize(in, it->second.roles, it->first); !s.ok()) {
      Drop(in, msg.id(), msg.type(), s);
      return;
    }
  }
  const HandlingMessage handling;  // a wait in the handler is not a start-up wait
  if (Status s = it->second.handler(in, msg); !s.ok()) Refuse(in, msg.id(), msg.type(), s);
}

void MessageDispatcher::Drop(const bus::Incoming& in, uint64_t id, std::string_view type,
                             const Status& why, spdlog::level::level_enum level) {
  spdlog::log(level, "Dropping {} {} from {} because {}", Truncated(type), id, PeerName(in),
              why.ToString());
  Answer(in, id, type, why);
}

void MessageDispatcher::Answer(const bus::Incoming& in, uint64_t id, std::string_view type,
                               const Status& why) {
  if (options_.reply_socket == nullptr || type == proto::ErrorReply::kType) return;
  Reply(in, proto::MakeError(why, id, Truncated(type)));
}

std::string MessageDispatcher::CountsSummary() const {
  std::string summary;
  for (const auto& [type, n] : counts_)
    summary += fmt::format("{}{}={}", summary.empty() ? "" : " ", type, n);
  return summary.empty() ? "none" : summary;
}

std::string MessageDispatcher::PeerName(const bus::Incoming& in) const {
  const std::string key = in.key.empty() || !options_.security
                              ? ""
                              : fmt::format(" (key {})", options_.security->KeyName(in.key));
  if (!options_.peer_name.empty()) return options_.peer_name + key;
  const std::string peer = in.peer();
  std::string hex;
  for (size_t i = 0; i < peer.size() && i < 16; ++i) hex += fmt::format("{:02x}", uint8_t(peer[i]));
  return "peer " + (hex.empty() ? std::string("?") : hex) + key;
}

std::string MessageDispatcher::Truncated(std::string_view s) {
  if (s.size() <= kEchoBytes) return std::string(s);
  return fmt::format("{}…({} bytes)", s.substr(0, kEchoBytes), s.size());
}

void MessageDispatcher::LogUndelivered(const bus::Incoming& in, std::string_view type,
                                       uint64_t id) const {
  spdlog::warn("Dropping {} {} to {} because the peer is gone or its queue is full", type, id,
               PeerName(in));
}

}  // namespace tunebus::service
