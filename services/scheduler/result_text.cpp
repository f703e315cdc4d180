#include "services/scheduler/result_text.hpp"

#include <cmath>
#include <iterator>

#include <fmt/compile.h>
#include <fmt/format.h>

#include "libs/core/csv.hpp"

namespace tunebus {

namespace {

bool NeedsEscape(char c) { return c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20; }

void AppendInt(const fmt::format_int& digits, std::string& out) { out.append(digits.data(), digits.size()); }

std::string_view Str(const msgpack::object& o) { return {o.via.str.ptr, o.via.str.size}; }

}  // namespace

void AppendJsonString(std::string_view s, std::string& out) {
  out.push_back('"');
  size_t run = 0;  // start of the characters not yet appended, which need no escape
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (!NeedsEscape(c)) continue;
    out.append(s.substr(run, i - run));
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(c));
    }
  }
  out.append(s.substr(run));
  out.push_back('"');
}

void AppendJsonDouble(double v, std::string& out) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[48];
  const char* end = fmt::format_to(buf, FMT_COMPILE("{}"), v);  // shortest round-trip form (at most 24 chars)
  const std::string_view text(buf, size_t(end - buf));
  out.append(text);
  bool integral = true;
  for (const char c : text) integral = integral && c != '.' && c != 'e';
  if (integral) out += ".0";
}

void AppendJson(const msgpack::object& o, std::string& out) {
  switch (o.type) {
    case msgpack::type::NIL: out += "null"; break;
    case msgpack::type::BOOLEAN: out += o.via.boolean ? "true" : "false"; break;
    case msgpack::type::POSITIVE_INTEGER: AppendInt(fmt::format_int(o.via.u64), out); break;
    case msgpack::type::NEGATIVE_INTEGER: AppendInt(fmt::format_int(o.via.i64), out); break;
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64: AppendJsonDouble(o.via.f64, out); break;
    case msgpack::type::STR: AppendJsonString(Str(o), out); break;
    case msgpack::type::ARRAY:
      out.push_back('[');
      for (uint32_t i = 0; i < o.via.array.size; ++i) {
        if (i) out.push_back(',');
        AppendJson(o.via.array.ptr[i], out);
      }
      out.push_back(']');
      break;
    case msgpack::type::MAP:
      out.push_back('{');
      for (uint32_t i = 0; i < o.via.map.size; ++i) {
        const msgpack::object_kv& kv = o.via.map.ptr[i];
        if (i) out.push_back(',');
        if (kv.key.type == msgpack::type::STR) {
          AppendJsonString(Str(kv.key), out);
        } else {
          std::string key;
          AppendJson(kv.key, key);
          AppendJsonString(key, out);
        }
        out.push_back(':');
        AppendJson(kv.val, out);
      }
      out.push_back('}');
      break;
    default: out += "null"; break;  // BIN, EXT: never in a result parsed from JSON
  }
}

bool ResultText::Decode(std::string_view bytes) {
  zone_.clear();
  fields_.clear();
  text_.clear();
  msgpack::object result;
  try {
    // Strings point into `bytes` (no copy into the zone): the result is formatted before the
    // caller's bytes go away.
    result = msgpack::unpack(zone_, bytes.data(), bytes.size(),
                             [](msgpack::type::object_type, std::size_t, void*) { return true; });
  } catch (const std::exception&) {
    return false;
  }
  if (result.type != msgpack::type::MAP) return false;
  for (uint32_t i = 0; i < result.via.map.size; ++i) {
    const msgpack::object_kv& kv = result.via.map.ptr[i];
    Field f{};
    f.quoted_key_begin = uint32_t(text_.size());
    f.key_is_str = kv.key.type == msgpack::type::STR;
    if (f.key_is_str) {
      f.key = Str(kv.key);
      AppendJsonString(f.key, text_);
    } else {
      std::string key;
      AppendJson(kv.key, key);
      AppendJsonString(key, text_);
    }
    f.value_begin = uint32_t(text_.size());
    AppendJson(kv.val, text_);
    f.value_end = uint32_t(text_.size());
    f.value_is_str = kv.val.type == msgpack::type::STR;
    if (f.value_is_str) f.str = Str(kv.val);
    fields_.push_back(f);
  }
  return true;
}

std::vector<std::string> ResultText::Keys() const {
  std::vector<std::string> keys;
  for (const Field& f : fields_) {
    if (f.key_is_str) keys.emplace_back(f.key);
  }
  return keys;
}

void ResultText::AppendJsonLine(std::string& out) const {
  out.push_back('{');
  for (size_t i = 0; i < fields_.size(); ++i) {
    const Field& f = fields_[i];
    if (i) out.push_back(',');
    out.append(text_, f.quoted_key_begin, f.value_begin - f.quoted_key_begin);
    out.push_back(':');
    out.append(text_, f.value_begin, f.value_end - f.value_begin);
  }
  out += "}\n";
}

void ResultText::AppendCsvRow(const std::vector<std::string>& columns, std::string& out) const {
  const size_t n = fields_.size();
  size_t next = 0;  // columns usually follow the map's order: look there first
  for (size_t c = 0; c < columns.size(); ++c) {
    if (c) out.push_back(',');
    for (size_t tried = 0; tried < n; ++tried, next = (next + 1) % n) {
      const Field& f = fields_[next];
      if (!f.key_is_str || f.key != columns[c]) continue;
      AppendCsvField(f.value_is_str ? f.str : std::string_view(text_).substr(f.value_begin, f.value_end - f.value_begin),
                     out);
      next = (next + 1) % n;
      break;
    }
  }
  out.push_back('\n');
}

}  // namespace tunebus
