// YamlReader: typed access to yaml-cpp nodes with errors that name the file, line and field.
//
// Internal to libs/spec. Every error is InvalidArgument "<source>:<line>: <field>: <why>" with
// the 1-based line of the offending node. Scalars are typed by the YAML 1.2 core schema:
// plain `42` / `0x2a` is an integer, `1e-4` / `.5` / `.inf` a float, `true` / `False` a bool,
// `~` / `null` / empty a null, anything else (and every quoted scalar, or `!!str`) a string.
// No yaml-cpp exception escapes these functions.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "libs/core/status.hpp"

namespace tunebus::spec_internal {

/// Dotted field path -> 1-based line of the key that names it ("lr.loguniform" -> 7).
using PathLines = std::map<std::string, int>;

/// One entry of a YAML map: its key text and the key / value nodes.
struct MapEntry {
  std::string key;
  YAML::Node key_node;
  YAML::Node value;
};

class YamlReader {
 public:
  explicit YamlReader(std::string source) : source_(std::move(source)) {}

  /// 1-based line of `node` (1 for nodes without a position).
  static int Line(const YAML::Node& node);
  /// "'text'" for a scalar, "a list", "a map" or "nothing"; used after "got ".
  static std::string Describe(const YAML::Node& node);

  /// "<source>:<line>: <field>: <why>" (or "<source>:<line>: <why>" when field is empty).
  Status Error(int line, std::string_view field, std::string_view why) const;
  Status Error(const YAML::Node& node, std::string_view field, std::string_view why) const {
    return Error(Line(node), field, why);
  }

  /// The entries of a map node in document order. A null node is an empty map.
  /// Errors: not a map ("expected a map, got ..."), a non-scalar or duplicate key, or (when
  /// `allowed` is non-empty) a key not in `allowed`: "unknown field 'foo'; expected one of ...".
  Result<std::vector<MapEntry>> Entries(const YAML::Node& node, std::string_view field,
                                        const std::vector<std::string_view>& allowed = {}) const;

  /// Converts any node to JSON (maps become objects, sequences arrays, scalars typed as above).
  /// When `lines` is non-null, records the line of every map key under its dotted path below
  /// `field` ("" = record paths relative to `node`). Errors: bad keys, nesting deeper than 64.
  Result<nlohmann::json> ToJson(const YAML::Node& node, std::string_view field,
                                PathLines* lines = nullptr) const;

  /// Typed scalars. Errors: "expected an integer, got 'abc'" and the like.
  Result<int64_t> Int(const YAML::Node& node, std::string_view field) const;
  Result<uint64_t> NonNegativeInt(const YAML::Node& node, std::string_view field) const;
  Result<double> Number(const YAML::Node& node, std::string_view field) const;
  Result<bool> Bool(const YAML::Node& node, std::string_view field) const;
  /// Any non-empty scalar, as written (so `name: 123` is the string "123").
  Result<std::string> String(const YAML::Node& node, std::string_view field) const;

 private:
  // `path` is relative to the node ToJson started from; errors name `field`.`path`.
  Result<nlohmann::json> ToJsonAt(const YAML::Node& node, const std::string& path,
                                  const std::string& field, PathLines* lines, int depth) const;

  std::string source_;
};

/// The JSON value of a scalar node under the core schema (see the file comment).
nlohmann::json ScalarToJson(const YAML::Node& node);

}  // namespace tunebus::spec_internal
