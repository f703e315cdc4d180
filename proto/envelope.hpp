// Envelope shared by every tunebus message (see proto/PROTOCOL.md).
//
// A message is one ZeroMQ frame holding a msgpack map (TUNEBUS_DEFINE_MAP, proto/map_fields.hpp).
// Every message has
//   v    : protocol version (kProtocolVersion); a peer answers another version with an error
//   type : the message type, snake_case ("start_trial"); unknown types get an error reply
//   id   : correlation id chosen by the requester; replies echo it (0 for one-way messages)
// ROUTER sockets see the peer's routing id as a frame before it; the payload frame is last.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#ifndef MSGPACK_NO_BOOST
#define MSGPACK_NO_BOOST
#endif
#include <msgpack.hpp>

#include "proto/map_fields.hpp"

namespace tunebus::proto {

inline constexpr int kProtocolVersion = 1;

/// Largest frame any bound socket accepts (ZMQ_MAXMSGSIZE), bytes. Checkpoint chunks are
/// kCheckpointChunkBytes so a chunk message stays well below it.
inline constexpr int64_t kMaxMessageBytes = 32ll << 20;
inline constexpr size_t kCheckpointChunkBytes = 4u << 20;

/// msgpack unpack limits for untrusted input (DESIGN.md "Wire protocol").
inline constexpr size_t kMaxArray = 100000;
inline constexpr size_t kMaxMap = 100000;
inline constexpr size_t kMaxStr = 16u << 20;
inline constexpr size_t kMaxBin = 16u << 20;
inline constexpr size_t kMaxExt = 1u << 20;
inline constexpr size_t kMaxDepth = 32;

/// Declares the three envelope fields; use first in every message struct and list
/// `v, type, id` first in its TUNEBUS_DEFINE_MAP.
#define TUNEBUS_ENVELOPE(type_name)               \
  static constexpr const char* kType = type_name; \
  int v = ::tunebus::proto::kProtocolVersion;     \
  std::string type = kType;                       \
  uint64_t id = 0

/// The typed error reply. Sent instead of the expected reply when a request is malformed,
/// has an unknown type or version, or cannot be served. The service keeps its state.
struct ErrorReply {
  TUNEBUS_ENVELOPE("error");
  std::string code;          // StatusCodeName: "invalid_argument", "not_found", ...
  std::string message;       // human-readable reason
  std::string request_type;  // the type of the request this answers, "" if unknown
  TUNEBUS_DEFINE_MAP(v, type, id, code, message, request_type)
};

}  // namespace tunebus::proto
