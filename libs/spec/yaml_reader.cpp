#include "libs/spec/yaml_reader.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <regex>

namespace tunebus::spec_internal {
namespace {

using json = nlohmann::json;

constexpr int kMaxDepth = 64;

std::string Join(std::string_view path, std::string_view key) {
  if (path.empty()) return std::string(key);
  if (key.empty()) return std::string(path);
  return fmt::format("{}.{}", path, key);
}

// Parses digits in `base` as an int64, or as a uint64 if too large for int64 (JSON keeps
// both). Returns null JSON when the value fits neither.
json ParseInteger(std::string_view digits, bool negative, int base) {
  uint64_t magnitude = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude, base);
  if (ec != std::errc() || end != digits.data() + digits.size()) return nullptr;
  constexpr uint64_t kMaxPositive = uint64_t(std::numeric_limits<int64_t>::max());
  if (!negative) {
    return magnitude <= kMaxPositive ? json(int64_t(magnitude)) : json(magnitude);
  }
  if (magnitude <= kMaxPositive) return json(-int64_t(magnitude));
  if (magnitude == kMaxPositive + 1) return json(std::numeric_limits<int64_t>::min());
  return nullptr;
}

json TypePlainScalar(const std::string& text) {
  static const std::regex kNull("~|null|Null|NULL|");
  static const std::regex kTrue("true|True|TRUE");
  static const std::regex kFalse("false|False|FALSE");
  static const std::regex kDecimal("[-+]?[0-9]+");
  static const std::regex kOctal("0o[0-7]+");
  static const std::regex kHex("0x[0-9a-fA-F]+");
  static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  static const std::regex kInf(R"([-+]?\.(inf|Inf|INF))");
  static const std::regex kNan(R"(\.(nan|NaN|NAN))");
  if (std::regex_match(text, kNull)) return nullptr;
  if (std::regex_match(text, kTrue)) return true;
  if (std::regex_match(text, kFalse)) return false;
  if (std::regex_match(text, kDecimal)) {
    bool negative = text[0] == '-';
    size_t skip = (text[0] == '-' || text[0] == '+') ? 1 : 0;
    json value = ParseInteger(std::string_view(text).substr(skip), negative, 10);
    if (!value.is_null()) return value;
    return std::strtod(text.c_str(), nullptr);  // too large for 64 bits: keep it a number
  }
  if (std::regex_match(text, kOctal) || std::regex_match(text, kHex)) {
    json value = ParseInteger(std::string_view(text).substr(2), false, text[1] == 'o' ? 8 : 16);
    if (!value.is_null()) return value;
    return text;
  }
  if (std::regex_match(text, kFloat)) return std::strtod(text.c_str(), nullptr);
  if (std::regex_match(text, kInf)) {
    return text[0] == '-' ? -std::numeric_limits<double>::infinity()
                          : std::numeric_limits<double>::infinity();
  }
  if (std::regex_match(text, kNan)) return std::numeric_limits<double>::quiet_NaN();
  return text;
}

}  // namespace

json ScalarToJson(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return nullptr;
  const std::string& text = node.Scalar();
  const std::string& tag = node.Tag();
  // "!" marks a quoted scalar; an explicit !!str keeps the text too.
  if (tag == "!" || tag == "tag:yaml.org,2002:str") return text;
  return TypePlainScalar(text);
}

int YamlReader::Line(const YAML::Node& node) {
  if (!node.IsDefined()) return 1;
  return std::max(1, node.Mark().line + 1);
}

std::string YamlReader::Describe(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a map";
  return "'" + node.Scalar() + "'";
}

Status YamlReader::Error(int line, std::string_view field, std::string_view why) const {
  if (field.empty()) return Status::InvalidArgument(fmt::format("{}:{}: {}", source_, line, why));
  return Status::InvalidArgument(fmt::format("{}:{}: {}: {}", source_, line, field, why));
}

Result<std::vector<MapEntry>> YamlReader::Entries(
    const YAML::Node& node, std::string_view field,
    const std::vector<std::string_view>& allowed) const {
  std::vector<MapEntry> entries;
  if (!node.IsDefined() || node.IsNull()) return entries;
  if (!node.IsMap()) return Error(node, field, "expected a map, got " + Describe(node));
  for (auto it = node.begin(); it != node.end(); ++it) {
    MapEntry entry{"", it->first, it->second};
    if (!entry.key_node.IsScalar()) {
      return Error(entry.key_node, field, "keys must be strings, got " + Describe(entry.key_node));
    }
    entry.key = entry.key_node.Scalar();
    for (const MapEntry& earlier : entries) {
      if (earlier.key == entry.key) {
        return Error(entry.key_node, Join(field, entry.key),
                     fmt::format("duplicate field (first set on line {})", Line(earlier.key_node)));
      }
    }
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), entry.key) == allowed.end()) {
      return Error(entry.key_node, field,
                   fmt::format("unknown field '{}'; expected one of {}", entry.key,
                               fmt::join(allowed, ", ")));
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

Result<json> YamlReader::ToJson(const YAML::Node& node, std::string_view field,
                                PathLines* lines) const {
  return ToJsonAt(node, "", std::string(field), lines, 0);
}

Result<json> YamlReader::ToJsonAt(const YAML::Node& node, const std::string& path,
                                  const std::string& field, PathLines* lines, int depth) const {
  const std::string where = Join(field, path);
  if (depth > kMaxDepth) {
    return Error(node, where, fmt::format("nested deeper than {} levels", kMaxDepth));
  }
  if (node.IsSequence()) {
    json out = json::array();
    for (size_t i = 0; i < node.size(); ++i) {
      Result<json> item =
          ToJsonAt(node[i], fmt::format("{}[{}]", path, i), field, nullptr, depth + 1);
      if (!item.ok()) return item.status();
      out.push_back(std::move(item).value());
    }
    return out;
  }
  if (node.IsMap()) {
    Result<std::vector<MapEntry>> entries = Entries(node, where);
    if (!entries.ok()) return entries.status();
    json out = json::object();
    for (const MapEntry& e : *entries) {
      const std::string child = Join(path, e.key);
      if (lines != nullptr) (*lines)[child] = Line(e.key_node);
      Result<json> value = ToJsonAt(e.value, child, field, lines, depth + 1);
      if (!value.ok()) return value.status();
      out[e.key] = std::move(value).value();
    }
    return out;
  }
  return ScalarToJson(node);
}

Result<int64_t> YamlReader::Int(const YAML::Node& node, std::string_view field) const {
  json j = node.IsScalar() ? ScalarToJson(node) : json();
  if (!j.is_number_integer()) {
    return Error(node, field, "expected an integer, got " + Describe(node));
  }
  if (j.is_number_unsigned() && j.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())) {
    return Error(node, field, "integer out of range, got " + Describe(node));
  }
  return j.get<int64_t>();
}

Result<uint64_t> YamlReader::NonNegativeInt(const YAML::Node& node, std::string_view field) const {
  json j = node.IsScalar() ? ScalarToJson(node) : json();
  if (!j.is_number_integer()) {
    return Error(node, field, "expected an integer, got " + Describe(node));
  }
  if (!j.is_number_unsigned() && j.get<int64_t>() < 0) {
    return Error(node, field, "must be >= 0, got " + Describe(node));
  }
  return j.get<uint64_t>();
}

Result<double> YamlReader::Number(const YAML::Node& node, std::string_view field) const {
  json j = node.IsScalar() ? ScalarToJson(node) : json();
  if (!j.is_number()) return Error(node, field, "expected a number, got " + Describe(node));
  double value = j.get<double>();
  if (!std::isfinite(value)) {
    return Error(node, field, "expected a finite number, got " + Describe(node));
  }
  return value;
}

Result<bool> YamlReader::Bool(const YAML::Node& node, std::string_view field) const {
  json j = node.IsScalar() ? ScalarToJson(node) : json();
  if (!j.is_boolean()) return Error(node, field, "expected true or false, got " + Describe(node));
  return j.get<bool>();
}

Result<std::string> YamlReader::String(const YAML::Node& node, std::string_view field) const {
  if (!node.IsScalar()) return Error(node, field, "expected a string, got " + Describe(node));
  if (node.Scalar().empty()) return Error(node, field, "expected a non-empty string, got ''");
  return node.Scalar();
}

}  // namespace tunebus::spec_internal
