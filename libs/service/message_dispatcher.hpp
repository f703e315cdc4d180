// MessageDispatcher: the handler table of a service socket (DESIGN.md style 1 and 2).
//
// A service registers one handler per message type; Dispatch() decodes a received frame, counts
// it by type and runs its handler. Every message it does not hand to a handler, and every
// message a handler refuses, is dropped the same way: one log line
//   "Dropping <type> <id> from <peer> because <reason>"
// and, on a socket that answers (a ROUTER serving requests), the typed error the protocol
// requires: a proto::ErrorReply with the Status code, the request's id and its type (cut to
// kEchoBytes). An ErrorReply is never answered with an error (two peers doing so would loop).
//
//   malformed frame      counted "<malformed>"; its envelope's id and type are echoed
//   unknown type         counted "<unknown>"; invalid_argument "unknown message type '<type>'"
//   sender's key refused counted by type; forbidden "key bob has role viewer; stop_experiment
//                        needs operator" (Security::Authorize: the roles of the type's entry)
//   handler refuses      counted by type; the handler's Status
//
// Counts (by message type, plus "<malformed>" and "<unknown>", plus whatever the service counts
// itself with Count()) are the services' messages_total metric.
//
// Threading: owned and used by the service's loop thread only.
#pragma once

#include <spdlog/spdlog.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <zmq.hpp>

#include "libs/bus/security.hpp"
#include "libs/bus/socket.hpp"
#include "libs/core/status.hpp"
#include "proto/codec.hpp"

namespace tunebus::service {

/// Handles one decoded message. `in` is the frame as received (its route addresses the reply;
/// a handler may move it out to answer later). Returns Ok once the message is handled (any
/// reply sent by the handler itself), or why it refuses the message: the dispatcher then drops
/// it (log line and, on an answering socket, the error reply).
using MessageHandler = std::function<Status(bus::Incoming& in, const proto::Decoded& msg)>;

class MessageDispatcher {
 public:
  /// Counted for frames that do not decode, and for decoded messages of an unknown type.
  static constexpr const char* kMalformed = "<malformed>";
  static constexpr const char* kUnknown = "<unknown>";
  /// Peer-supplied strings echoed into logs and error replies are cut to this many bytes.
  static constexpr size_t kEchoBytes = 64;

  struct Options {
    /// The ROUTER that received the messages: drops are answered through it. nullptr: drops
    /// are only logged (a DEALER whose peer expects no answers, e.g. a worker's scheduler).
    zmq::socket_t* reply_socket = nullptr;
    /// Names the peer in log lines ("the scheduler") on a socket with one peer; "" names each
    /// peer by its routing id in hex ("peer 0a1b...").
    std::string peer_name;
    /// Level of the log line of a message a handler refuses (malformed and unknown messages
    /// are always warnings). A control socket whose refusals are answers a user reads anyway
    /// (not_found, failed_precondition) logs them at info.
    spdlog::level::level_enum refusal_level = spdlog::level::warn;
    /// Checks each message's CURVE key (Incoming::key) against the roles of its type's entry;
    /// null, or a message without a key (plaintext, inproc, ipc), is not checked.
    std::shared_ptr<const bus::Security> security;
    /// The roles of the entries added without their own (On(type, handler)).
    bus::RoleSet roles = bus::RoleSet::Any();
  };

  explicit MessageDispatcher(Options options) : options_(std::move(options)) {}

  /// Routes messages of `type` from keys of `roles` to `handler`. REQUIRES: no handler for
  /// `type` yet. Returns *this, so a service lists its table as one chain of On() calls.
  MessageDispatcher& On(std::string_view type, bus::RoleSet roles, MessageHandler handler);
  /// On(type, options.roles, handler).
  MessageDispatcher& On(std::string_view type, MessageHandler handler) {
    return On(type, options_.roles, std::move(handler));
  }
  /// Routes `type` from keys of `roles` to a member function of `service` (which outlives the
  /// dispatcher).
  template <typename S>
  MessageDispatcher& On(std::string_view type, bus::RoleSet roles, S* service,
                        Status (S::*handler)(bus::Incoming&, const proto::Decoded&)) {
    return On(type, roles, [service, handler](bus::Incoming& in, const proto::Decoded& msg) {
      return (service->*handler)(in, msg);
    });
  }
  template <typename S>
  MessageDispatcher& On(std::string_view type, S* service,
                        Status (S::*handler)(bus::Incoming&, const proto::Decoded&)) {
    return On(type, options_.roles, service, handler);
  }
  /// Routes `type` to a member function that needs only the message and refuses nothing: it
  /// logs its own drops (a socket whose peer expects no answers).
  template <typename S>
  MessageDispatcher& On(std::string_view type, S* service,
                        void (S::*handler)(const proto::Decoded&)) {
    return On(type, [service, handler](bus::Incoming&, const proto::Decoded& msg) {
      (service->*handler)(msg);
      return Status::Ok();
    });
  }

  /// Decodes `in`, counts it and runs its handler, or drops it (see the file comment).
  void Dispatch(bus::Incoming& in);

  /// Drops message `id` of `type` from `in`'s peer because of `why`: logs it (at `level`) and,
  /// on an answering socket (unless `type` is an error), replies `why` as an ErrorReply.
  void Drop(const bus::Incoming& in, uint64_t id, std::string_view type, const Status& why,
            spdlog::level::level_enum level = spdlog::level::warn);
  /// Drop for a refusal a handler decides later (after a batch write, say): logged at
  /// options.refusal_level.
  void Refuse(const bus::Incoming& in, uint64_t id, std::string_view type, const Status& why) {
    Drop(in, id, type, why, options_.refusal_level);
  }

  /// Answers `message` through the reply socket; a failed send (peer gone, queue full) is
  /// logged as a drop. REQUIRES: options.reply_socket.
  template <typename M>
  void Reply(const bus::Incoming& in, const M& message) {
    if (!bus::ReplyMessage(*options_.reply_socket, in, message))
      LogUndelivered(in, M::kType, message.id);
  }

  /// Counts one `key` besides the messages Dispatch counts (e.g. "register_node_reply").
  void Count(const std::string& key) { ++counts_[key]; }
  /// Messages handled so far, by type.
  const std::map<std::string, uint64_t>& counts() const { return counts_; }
  /// "a=1 b=2", or "none": for the service's stop log line.
  std::string CountsSummary() const;

  /// How log lines name `in`'s peer: options.peer_name, or "peer <routing id in hex>".
  std::string PeerName(const bus::Incoming& in) const;
  /// `s` cut to kEchoBytes ("<first bytes>…(<n> bytes)").
  static std::string Truncated(std::string_view s);

 private:
  /// The error reply of a drop (none on a socket that does not answer, none to an error).
  void Answer(const bus::Incoming& in, uint64_t id, std::string_view type, const Status& why);
  void LogUndelivered(const bus::Incoming& in, std::string_view type, uint64_t id) const;

  struct Entry {
    bus::RoleSet roles;
    MessageHandler handler;
  };
  Options options_;
  std::map<std::string, Entry, std::less<>> handlers_;
  std::map<std::string, uint64_t> counts_;
};

}  // namespace tunebus::service
