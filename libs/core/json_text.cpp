#include "libs/core/json_text.hpp"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <cmath>
#include <iterator>

namespace tunebus {

namespace {

bool NeedsEscape(char c) { return c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20; }

void AppendInt(const fmt::format_int& digits, std::string& out) {
  out.append(digits.data(), digits.size());
}

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
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(c));
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
  const char* end =
      fmt::format_to(buf, FMT_COMPILE("{}"), v);  // shortest round-trip form (at most 24 chars)
  const std::string_view text(buf, size_t(end - buf));
  out.append(text);
  bool integral = true;
  for (const char c : text) integral = integral && c != '.' && c != 'e';
  if (integral) out += ".0";
}

void AppendJson(const msgpack::object& o, std::string& out) {
  switch (o.type) {
    case msgpack::type::NIL:
      out += "null";
      break;
    case msgpack::type::BOOLEAN:
      out += o.via.boolean ? "true" : "false";
      break;
    case msgpack::type::POSITIVE_INTEGER:
      AppendInt(fmt::format_int(o.via.u64), out);
      break;
    case msgpack::type::NEGATIVE_INTEGER:
      AppendInt(fmt::format_int(o.via.i64), out);
      break;
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64:
      AppendJsonDouble(o.via.f64, out);
      break;
    case msgpack::type::STR:
      AppendJsonString(Str(o), out);
      break;
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
    default:
      out += "null";
      break;  // BIN, EXT: never in a result parsed from JSON
  }
}

void AppendJsonInt(int64_t v, std::string& out) { AppendInt(fmt::format_int(v), out); }

std::string& JsonObjectText::Key(std::string_view key) {
  if (!std::exchange(first_, false)) out_.push_back(',');
  AppendJsonString(key, out_);
  out_.push_back(':');
  return out_;
}

}  // namespace tunebus
