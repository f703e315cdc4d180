#include "libs/tune/training_result.hpp"

#include <algorithm>
#include <bit>
#include <msgpack.hpp>

namespace tunebus {

namespace {

// msgpack-c's packer writes into any stream with write(); this one appends to a std::string.
struct Appender {
  std::string& out;
  void write(const char* data, size_t size) { out.append(data, size); }
};
using Packer = msgpack::packer<Appender>;

// msgpack-c 4's pack_double (and pack_float) writes an integral value as an integer after
// checking d <= double(UINT64_MAX), which rounds up to 2^64: for exactly 2^64 its uint64_t(d) is
// undefined behaviour (UBSan; fuzz/findings/report_line-ubsan-pack_double-2pow64). That one
// value is written as a msgpack float64 here; every other goes through pack_double as before.
void PackDouble(Appender& out, double v) {
  if (v == 18446744073709551616.0) {
    const uint64_t bits = std::bit_cast<uint64_t>(v);
    char buf[9];
    buf[0] = char(0xcb);
    for (int i = 0; i < 8; ++i) buf[1 + i] = char(bits >> (56 - 8 * i));
    out.write(buf, sizeof buf);
    return;
  }
  Packer(out).pack_double(v);
}

void PackStr(Packer& pk, std::string_view s) {
  pk.pack_str(uint32_t(s.size()));
  pk.pack_str_body(s.data(), uint32_t(s.size()));
}

bool JsonTruthy(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) return v.get<double>() != 0;
  if (v.is_string() || v.is_array() || v.is_object()) return !v.empty();
  return false;
}

}  // namespace

// nlohmann's SAX events for one JSON object, written as TrainingResult entries. A nested
// object or array is packed behind a 5-byte placeholder for its header; when it closes, the
// header with its element count replaces the placeholder (in msgpack's smallest form).
class JsonTextToResult {
 public:
  using json = nlohmann::json;
  explicit JsonTextToResult(TrainingResult& result) : r_(result), out_{result.body_}, pk_(out_) {}

  bool null() {
    Element();
    pk_.pack_nil();
    return Scalar(false, 0, false);
  }
  bool boolean(bool v) {
    Element();
    v ? pk_.pack_true() : pk_.pack_false();
    return Scalar(false, 0, v);
  }
  bool number_integer(json::number_integer_t v) {
    Element();
    pk_.pack_int64(v);
    return Scalar(true, double(v), v != 0);
  }
  bool number_unsigned(json::number_unsigned_t v) {
    Element();
    pk_.pack_uint64(v);
    return Scalar(true, double(v), v != 0);
  }
  bool number_float(json::number_float_t v, const json::string_t&) {
    Element();
    PackDouble(out_, v);
    return Scalar(true, v, v != 0);
  }
  bool string(json::string_t& v) {
    Element();
    PackStr(pk_, v);
    return Scalar(false, 0, !v.empty());
  }
  bool binary(json::binary_t&) { return false; }  // the JSON text parser never reports one
  bool start_object(std::size_t) { return Open(true); }
  bool start_array(std::size_t) { return Open(false); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool key(json::string_t& k) {
    if (open_.empty()) {
      r_.BeginEntry(k);
      return true;
    }
    ++open_.back().count;
    PackStr(pk_, k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) {
    error_ = ex.what();
    return false;
  }

  // Why parsing stopped early ("" if it did not stop).
  std::string Error() const { return not_object_ ? "is not a JSON object" : error_; }

 private:
  struct Container {
    size_t header;  // offset of the 5-byte placeholder
    bool is_map;
    uint32_t count;
  };
  static constexpr size_t kPlaceholder = 5;  // map32 / array32: 1 + 4 bytes

  // A value begins: an element of the enclosing array, if any (a map counts its keys).
  void Element() {
    if (!open_.empty() && !open_.back().is_map) ++open_.back().count;
  }
  bool Scalar(bool is_number, double number, bool truthy) {
    if (!in_object_) return NotAnObject();
    if (open_.empty()) r_.EndEntry(is_number, number, truthy);
    return true;
  }
  bool Open(bool is_map) {
    if (!in_object_) {
      if (!is_map) return NotAnObject();
      in_object_ = true;  // the result itself
      return true;
    }
    Element();
    open_.push_back({out_.out.size(), is_map, 0});
    out_.out.append(kPlaceholder, '\0');
    return true;
  }
  bool Close() {
    if (open_.empty()) return true;  // the result's own closing brace
    const Container c = open_.back();
    open_.pop_back();
    std::string header;
    Appender to{header};
    Packer hp(to);
    c.is_map ? hp.pack_map(c.count) : hp.pack_array(c.count);
    out_.out.replace(c.header, kPlaceholder, header);
    if (open_.empty()) r_.EndEntry(false, 0, c.count > 0);
    return true;
  }
  bool NotAnObject() {
    not_object_ = true;
    return false;
  }

  TrainingResult& r_;
  Appender out_;
  Packer pk_;
  bool in_object_ = false;
  bool not_object_ = false;
  std::string error_;
  std::vector<Container> open_;  // nested containers being packed, innermost last
};

Result<TrainingResult> TrainingResult::FromJsonText(std::string_view text) {
  TrainingResult result;
  // msgpack is rarely longer than the JSON text; room for the auto-filled keys besides.
  result.body_.reserve(text.size() + kAutoFilledBytes);
  result.entries_.reserve(kEntriesReserved);
  JsonTextToResult sax(result);
  if (!nlohmann::json::sax_parse(text, &sax)) return Status::InvalidArgument(sax.Error());
  return result;
}

Result<TrainingResult> TrainingResult::FromMsgpack(std::string_view bytes) {
  if (bytes.empty()) return TrainingResult();  // proto::MsgpackMap's empty map
  thread_local msgpack::zone zone;             // reused: a zone allocates its first chunk on use
  zone.clear();
  msgpack::object map;
  try {
    // Strings point into `bytes` (no copy): they are packed into the result.
    map = msgpack::unpack(zone, bytes.data(), bytes.size(),
                          [](msgpack::type::object_type, std::size_t, void*) { return true; });
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("is not msgpack: ") + e.what());
  }
  return FromMsgpack(map);
}

Result<TrainingResult> TrainingResult::FromMsgpack(const msgpack::object& map) {
  if (map.type != msgpack::type::MAP) return Status::InvalidArgument("is not a msgpack map");
  TrainingResult result;
  result.body_.reserve(kAutoFilledBytes + 32 * size_t(map.via.map.size));
  result.entries_.reserve(map.via.map.size + kEntriesReserved);
  Appender out{result.body_};
  Packer pk(out);
  for (uint32_t i = 0; i < map.via.map.size; ++i) {
    const msgpack::object& key = map.via.map.ptr[i].key;
    const msgpack::object& v = map.via.map.ptr[i].val;
    if (key.type != msgpack::type::STR)
      return Status::InvalidArgument("has a key that is not a string");
    const std::string_view name(key.via.str.ptr, key.via.str.size);
    double number = 0;
    bool is_number = true, truthy = false;
    switch (v.type) {
      case msgpack::type::POSITIVE_INTEGER:
        number = double(v.via.u64);
        break;
      case msgpack::type::NEGATIVE_INTEGER:
        number = double(v.via.i64);
        break;
      case msgpack::type::FLOAT32:
      case msgpack::type::FLOAT64:
        number = v.via.f64;
        break;
      default:
        is_number = false;
    }
    switch (v.type) {
      case msgpack::type::BOOLEAN:
        truthy = v.via.boolean;
        break;
      case msgpack::type::STR:
        truthy = v.via.str.size > 0;
        break;
      case msgpack::type::ARRAY:
        truthy = v.via.array.size > 0;
        break;
      case msgpack::type::MAP:
        truthy = v.via.map.size > 0;
        break;
      case msgpack::type::BIN:
      case msgpack::type::EXT:
        return Status::InvalidArgument("value of '" + std::string(name) + "' is binary, not JSON");
      default:
        truthy = is_number && number != 0;
    }
    result.BeginEntry(name);
    // A float as float64, whatever width the sender chose (nlohmann packs a double that fits
    // float32 as float32): the bytes are those of the same report parsed from JSON text.
    if (v.type == msgpack::type::FLOAT32 || v.type == msgpack::type::FLOAT64) {
      PackDouble(out, v.via.f64);
    } else {
      pk.pack(v);
    }
    result.EndEntry(is_number, number, truthy);
  }
  return result;
}

TrainingResult TrainingResult::FromJson(const nlohmann::json& object) {
  TrainingResult result;
  if (object.is_object()) {
    for (const auto& [key, value] : object.items()) result.SetJson(key, value);
  }
  return result;
}

void TrainingResult::BeginEntry(std::string_view key) {
  Appender out{body_};
  Packer pk(out);
  Entry e;
  e.begin = uint32_t(body_.size());
  pk.pack_str(uint32_t(key.size()));
  e.key_begin = uint32_t(body_.size());
  e.key_size = uint32_t(key.size());
  body_.append(key);
  entries_.push_back(e);
}

void TrainingResult::EndEntry(bool is_number, double number, bool truthy) {
  Entry& e = entries_.back();
  e.end = uint32_t(body_.size());
  e.is_number = is_number;
  e.number = number;
  e.truthy = truthy;
}

void TrainingResult::SetInt(std::string_view key, int64_t value) {
  BeginEntry(key);
  Appender out{body_};
  Packer(out).pack_int64(value);
  EndEntry(true, double(value), value != 0);
}

void TrainingResult::SetDouble(std::string_view key, double value) {
  BeginEntry(key);
  Appender out{body_};
  PackDouble(out, value);
  EndEntry(true, value, value != 0);
}

void TrainingResult::SetBool(std::string_view key, bool value) {
  BeginEntry(key);
  Appender out{body_};
  Packer pk(out);
  value ? pk.pack_true() : pk.pack_false();
  EndEntry(false, 0, value);
}

void TrainingResult::SetString(std::string_view key, std::string_view value) {
  BeginEntry(key);
  Appender out{body_};
  Packer pk(out);
  PackStr(pk, value);
  EndEntry(false, 0, !value.empty());
}

void TrainingResult::SetJson(std::string_view key, const nlohmann::json& value) {
  BeginEntry(key);
  nlohmann::json::to_msgpack(value, body_);  // appends
  EndEntry(value.is_number(), value.is_number() ? value.get<double>() : 0, JsonTruthy(value));
}

const TrainingResult::Entry* TrainingResult::Find(std::string_view key) const {
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (KeyOf(*it) == key) return &*it;
  }
  return nullptr;
}

std::optional<double> TrainingResult::Number(std::string_view key) const {
  const Entry* e = Find(key);
  if (e == nullptr || !e->is_number) return std::nullopt;
  return e->number;
}

bool TrainingResult::Has(std::string_view key) const { return Find(key) != nullptr; }

nlohmann::json TrainingResult::Value(std::string_view key) const {
  const Entry* e = Find(key);
  if (e == nullptr) return nullptr;
  const auto begin = body_.begin() + e->key_begin + e->key_size;
  return nlohmann::json::from_msgpack(begin, body_.begin() + e->end);
}

bool TrainingResult::Truthy(std::string_view key) const {
  const Entry* e = Find(key);
  return e != nullptr && e->truthy;
}

std::vector<const TrainingResult::Entry*> TrainingResult::Order() const {
  std::vector<const Entry*> order;
  order.reserve(entries_.size());
  if (entries_.size() <= kInsertionSortMax) {
    // Stable: an entry goes after the entries of its key set before it.
    for (const Entry& e : entries_) {
      const std::string_view key = KeyOf(e);
      auto at = order.end();
      while (at != order.begin() && key < KeyOf(**(at - 1))) --at;
      order.insert(at, &e);
    }
  } else {
    for (const Entry& e : entries_) order.push_back(&e);
    // By key, then by when it was set (entries_ is in Set order): no stable sort's buffer.
    std::sort(order.begin(), order.end(), [this](const Entry* a, const Entry* b) {
      const int c = KeyOf(*a).compare(KeyOf(*b));
      return c < 0 || (c == 0 && a < b);
    });
  }
  // Of each run of one key keep the last (the latest Set).
  size_t kept = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i + 1 < order.size() && KeyOf(*order[i]) == KeyOf(*order[i + 1])) continue;
    order[kept++] = order[i];
  }
  order.resize(kept);
  return order;
}

std::vector<std::string> TrainingResult::Keys() const {
  std::vector<std::string> keys;
  for (const Entry* e : Order()) keys.emplace_back(KeyOf(*e));
  return keys;
}

std::string TrainingResult::Encode() const {
  const std::vector<const Entry*> order = Order();
  std::string header;
  Appender to{header};
  Packer(to).pack_map(uint32_t(order.size()));
  size_t size = header.size();
  for (const Entry* e : order) size += e->end - e->begin;
  std::string out;
  out.reserve(size);
  out.append(header);
  for (const Entry* e : order) out.append(body_, e->begin, e->end - e->begin);
  return out;
}

nlohmann::json TrainingResult::ToJson() const { return nlohmann::json::from_msgpack(Encode()); }

}  // namespace tunebus
