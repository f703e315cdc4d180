// MsgpackMap: a field whose value is a msgpack map carried as it is (a nested map on the wire,
// not a bin or a string). A trial-worker sends a report's metrics this way: the worker already
// holds the report as a value, and the scheduler builds its result from the decoded map's
// entries without parsing JSON text or copying the map (docs/explanation/performance/index.md).
#pragma once

#include <cstdint>
#include <string>

#ifndef MSGPACK_NO_BOOST
#define MSGPACK_NO_BOOST
#endif
#include <msgpack.hpp>

namespace tunebus::proto {

struct MsgpackMap {
  /// Sending side: the map's msgpack encoding. Empty: `decoded` is sent, or else the empty map.
  std::string bytes;
  /// Receiving side: the map as decoded, a view into the decoded message's zone, valid only
  /// while that message (proto::Decoded) lives; NIL when the field was absent.
  msgpack::object decoded;

  /// The map's encoding from whichever side is set (the empty map if neither).
  std::string Encoded() const;
};

}  // namespace tunebus::proto

namespace msgpack {
MSGPACK_API_VERSION_NAMESPACE(MSGPACK_DEFAULT_API_NS) {
  namespace adaptor {

  /// Decoding: the value MUST be a map (else msgpack::type_error, as any mistyped field); it is
  /// kept as a view, not copied.
  template <>
  struct convert<tunebus::proto::MsgpackMap> {
    const msgpack::object& operator()(const msgpack::object& o,
                                      tunebus::proto::MsgpackMap& v) const {
      if (o.type != msgpack::type::MAP) throw msgpack::type_error();
      v.bytes.clear();
      v.decoded = o;
      return o;
    }
  };

  /// Encoding: the stored bytes as they are (pack_str_body writes raw bytes, no header), or the
  /// decoded map, or an empty map.
  template <>
  struct pack<tunebus::proto::MsgpackMap> {
    template <typename Stream>
    msgpack::packer<Stream>& operator()(msgpack::packer<Stream>& pk,
                                        const tunebus::proto::MsgpackMap& v) const {
      if (!v.bytes.empty()) return pk.pack_str_body(v.bytes.data(), uint32_t(v.bytes.size()));
      if (v.decoded.type == msgpack::type::MAP) return pk.pack(v.decoded);
      return pk.pack_map(0);
    }
  };

  }  // namespace adaptor
}  // MSGPACK_API_VERSION_NAMESPACE(MSGPACK_DEFAULT_API_NS)
}  // namespace msgpack

inline std::string tunebus::proto::MsgpackMap::Encoded() const {
  if (!bytes.empty()) return bytes;
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer>(buf).pack(*this);
  return std::string(buf.data(), buf.size());
}
