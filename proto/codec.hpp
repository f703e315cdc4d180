// Encoding and decoding of tunebus messages (msgpack maps, see envelope.hpp).
//
// Decode never throws and never trusts its input: unpack limits bound memory, a non-map or a
// map without a string `type` is InvalidArgument, a wrong `v` is FailedPrecondition, and
// converting to the wrong struct shape is InvalidArgument naming the type.
#pragma once

#include <string>
#include <string_view>

#include "libs/core/status.hpp"
#include "proto/envelope.hpp"

namespace tunebus::proto {

/// A decoded message: its envelope plus the msgpack object to convert into a struct.
class Decoded {
 public:
  const std::string& type() const { return type_; }
  int version() const { return version_; }
  uint64_t id() const { return id_; }

  /// Converts to message struct M. Missing keys keep M's defaults; extra keys are ignored.
  /// Errors: InvalidArgument "<type>: <why>" if a field has the wrong msgpack type.
  template <typename M>
  Result<M> As() const {
    try {
      M m;
      handle_.get().convert(m);
      return m;
    } catch (const std::exception& e) {
      return Status::InvalidArgument(type_ + ": malformed fields: " + e.what());
    }
  }

 private:
  friend Result<Decoded> Decode(const void* data, size_t size);
  msgpack::object_handle handle_;
  std::string type_;
  int version_ = 0;
  uint64_t id_ = 0;
};

/// Decodes one frame. Errors: InvalidArgument (garbage, limits exceeded, no type),
/// FailedPrecondition (unsupported protocol version).
Result<Decoded> Decode(const void* data, size_t size);

/// The largest per-thread encode buffer Encode keeps for the next message, bytes.
inline constexpr size_t kKeptEncodeBufferBytes = 256u << 10;

/// Encodes a message struct to bytes.
template <typename M>
std::string Encode(const M& m) {
  // One buffer per thread and message type, reused: a fresh sbuffer allocates 8 KiB for every
  // message. One past kKeptEncodeBufferBytes (a large reply: a 12,000-trial listing, a journal
  // page) is let go, so a thread does not keep the largest message it ever sent resident.
  thread_local msgpack::sbuffer buf;
  buf.clear();
  msgpack::pack(buf, m);
  std::string out(buf.data(), buf.size());
  if (buf.size() > kKeptEncodeBufferBytes) buf = msgpack::sbuffer();
  return out;
}

/// The `id` and `type` of a frame that failed Decode, read best-effort (0 and "" when the bytes
/// are not a msgpack map), so the error reply still correlates. `type` is cut to 64 bytes.
struct PeekedEnvelope {
  uint64_t id = 0;
  std::string type;
};
PeekedEnvelope PeekEnvelope(const void* data, size_t size);

/// The ErrorReply for a frame that failed Decode with `status`, echoing its id and type.
ErrorReply MakeDecodeError(const void* data, size_t size, const Status& status);

/// An ErrorReply for request `id` of type `request_type` carrying `status`.
ErrorReply MakeError(const Status& status, uint64_t id, std::string request_type);

}  // namespace tunebus::proto
