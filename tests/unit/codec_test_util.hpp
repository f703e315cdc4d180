// Helpers of the codec tests: msgpack frames a well-behaved peer would never send.
#pragma once

#include <msgpack.hpp>
#include <string>

#include "proto/codec.hpp"

namespace tunebus::proto::codec_util {

using Packer = msgpack::packer<msgpack::sbuffer>;
inline std::string Bytes(const msgpack::sbuffer& b) { return std::string(b.data(), b.size()); }
inline void PackStr(Packer& p, const std::string& s) { p.pack(s); }
/// What Decode says of `bytes`.
inline Status DecodeStatus(const std::string& bytes) {
  return Decode(bytes.data(), bytes.size()).status();
}

}  // namespace tunebus::proto::codec_util
