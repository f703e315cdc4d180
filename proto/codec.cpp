#include "proto/codec.hpp"

#include <fmt/format.h>

namespace tunebus::proto {

namespace {

// Reads a string value of `key` from a msgpack map, or nullptr.
const msgpack::object* FindKey(const msgpack::object& map, std::string_view key) {
  for (uint32_t i = 0; i < map.via.map.size; ++i) {
    const auto& kv = map.via.map.ptr[i];
    if (kv.key.type == msgpack::type::STR &&
        std::string_view(kv.key.via.str.ptr, kv.key.via.str.size) == key) {
      return &kv.val;
    }
  }
  return nullptr;
}

}  // namespace

Result<Decoded> Decode(const void* data, size_t size) {
  Decoded d;
  try {
    const msgpack::unpack_limit limits(kMaxArray, kMaxMap, kMaxStr, kMaxBin, kMaxExt, kMaxDepth);
    std::size_t offset = 0;
    d.handle_ =
        msgpack::unpack(static_cast<const char*>(data), size, offset, nullptr, nullptr, limits);
    if (offset != size) {
      return Status::InvalidArgument(
          fmt::format("trailing bytes after message ({} of {} used)", offset, size));
    }
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("not a msgpack message: ") + e.what());
  }
  const msgpack::object& obj = d.handle_.get();
  if (obj.type != msgpack::type::MAP) {
    return Status::InvalidArgument("message must be a msgpack map");
  }
  const msgpack::object* type = FindKey(obj, "type");
  if (type == nullptr || type->type != msgpack::type::STR) {
    return Status::InvalidArgument("message has no string field 'type'");
  }
  d.type_.assign(type->via.str.ptr, type->via.str.size);
  if (const msgpack::object* id = FindKey(obj, "id")) {
    if (id->type == msgpack::type::POSITIVE_INTEGER) d.id_ = id->via.u64;
  }
  const msgpack::object* v = FindKey(obj, "v");
  if (v == nullptr || v->type != msgpack::type::POSITIVE_INTEGER) {
    return Status::InvalidArgument(fmt::format("{}: message has no integer field 'v'", d.type_));
  }
  if (v->via.u64 != uint64_t(kProtocolVersion)) {
    return Status::FailedPrecondition(
        fmt::format("{}: protocol version {} not supported (this peer speaks {})", d.type_,
                    v->via.u64, kProtocolVersion));
  }
  d.version_ = kProtocolVersion;
  return d;
}

PeekedEnvelope PeekEnvelope(const void* data, size_t size) {
  PeekedEnvelope env;
  try {
    const msgpack::unpack_limit limits(kMaxArray, kMaxMap, kMaxStr, kMaxBin, kMaxExt, kMaxDepth);
    std::size_t offset = 0;
    const msgpack::object_handle handle =
        msgpack::unpack(static_cast<const char*>(data), size, offset, nullptr, nullptr, limits);
    const msgpack::object& obj = handle.get();
    if (obj.type != msgpack::type::MAP) return env;
    if (const msgpack::object* id = FindKey(obj, "id");
        id && id->type == msgpack::type::POSITIVE_INTEGER) {
      env.id = id->via.u64;
    }
    if (const msgpack::object* type = FindKey(obj, "type");
        type && type->type == msgpack::type::STR) {
      env.type.assign(type->via.str.ptr, std::min<size_t>(type->via.str.size, 64));
    }
  } catch (const std::exception&) {
    // not msgpack at all: nothing to correlate
  }
  return env;
}

ErrorReply MakeDecodeError(const void* data, size_t size, const Status& status) {
  PeekedEnvelope env = PeekEnvelope(data, size);
  return MakeError(status, env.id, std::move(env.type));
}

ErrorReply MakeError(const Status& status, uint64_t id, std::string request_type) {
  ErrorReply e;
  e.id = id;
  e.code = StatusCodeName(status.code());
  e.message = status.message();
  e.request_type = std::move(request_type);
  return e;
}

}  // namespace tunebus::proto
