// TUNEBUS_DEFINE_MAP: MSGPACK_DEFINE_MAP's wire form (a msgpack map of field name -> value) with
// a decoder that allocates nothing of its own. msgpack-c 4's define_map::msgpack_unpack builds a
// std::map<std::string, const object*> of every key and looks each field up with a temporary
// std::string: for a 5-field result item that is ~15 heap allocations per decode, which
// profiling showed among the largest costs of a result on the scheduler. MapFields matches each
// entry's key against the field names in place instead. Packing (and msgpack_object) is
// msgpack-c's own. Semantics are define_map's: not a map, or a key that is not a string ->
// msgpack::type_error; a missing field keeps its value; unknown keys are ignored; of a key given
// twice, the first counts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <utility>

#ifndef MSGPACK_NO_BOOST
#define MSGPACK_NO_BOOST
#endif
#include <msgpack.hpp>

namespace tunebus::proto {

/// Field names and references, alternating: ("v", v, "type", type, ...), as define_map's.
template <typename... Args>
class MapFields {
 public:
  static_assert(sizeof...(Args) % 2 == 0, "name, field pairs");
  static_assert(sizeof...(Args) / 2 <= 64, "at most 64 fields");

  explicit MapFields(Args&... args) : fields_(args...) {}

  /// Converts `o`'s entries into the named fields. Errors: msgpack::type_error (as above) and
  /// whatever a field's conversion throws.
  void Unpack(const msgpack::object& o) const {
    if (o.type != msgpack::type::MAP) throw msgpack::type_error();
    uint64_t seen = 0;
    for (uint32_t i = 0; i < o.via.map.size; ++i) {
      const msgpack::object_kv& kv = o.via.map.ptr[i];
      if (kv.key.type != msgpack::type::STR) throw msgpack::type_error();
      Match(std::string_view(kv.key.via.str.ptr, kv.key.via.str.size), kv.val, seen,
            std::make_index_sequence<sizeof...(Args) / 2>{});
    }
  }

 private:
  template <size_t... I>
  void Match(std::string_view key, const msgpack::object& value, uint64_t& seen,
             std::index_sequence<I...>) const {
    (void)(TryField<I>(key, value, seen) || ...);
  }
  template <size_t I>
  bool TryField(std::string_view key, const msgpack::object& value, uint64_t& seen) const {
    if (key != std::string_view(std::get<2 * I>(fields_))) return false;
    if ((seen & (uint64_t{1} << I)) == 0) {
      seen |= uint64_t{1} << I;
      value.convert(std::get<2 * I + 1>(fields_));
    }
    return true;
  }

  std::tuple<Args&...> fields_;
};

template <typename... Args>
MapFields<Args...> MakeMapFields(Args&... args) {
  return MapFields<Args...>(args...);
}

}  // namespace tunebus::proto

/// Use as MSGPACK_DEFINE_MAP (same field list, same bytes on the wire).
#define TUNEBUS_DEFINE_MAP(...)                                                                   \
  template <typename Packer>                                                                      \
  void msgpack_pack(Packer& msgpack_pk) const {                                                   \
    msgpack::type::make_define_map MSGPACK_DEFINE_MAP_IMPL(__VA_ARGS__).msgpack_pack(msgpack_pk); \
  }                                                                                               \
  void msgpack_unpack(msgpack::object const& msgpack_o) {                                         \
    ::tunebus::proto::MakeMapFields MSGPACK_DEFINE_MAP_IMPL(__VA_ARGS__).Unpack(msgpack_o);       \
  }                                                                                               \
  template <typename MSGPACK_OBJECT>                                                              \
  void msgpack_object(MSGPACK_OBJECT* msgpack_o, msgpack::zone& msgpack_z) const {                \
    msgpack::type::make_define_map MSGPACK_DEFINE_MAP_IMPL(__VA_ARGS__)                           \
        .msgpack_object(msgpack_o, msgpack_z);                                                    \
  }
