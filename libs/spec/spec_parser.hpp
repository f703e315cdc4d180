// SpecParser: the experiment-file parser behind ParseExperimentYaml (internal to libs/spec).
//
// One parser per file: Parse() walks the top-level map in document order, dispatching each
// field to its Parse* method, then checks rules that span fields (required fields, metric and
// mode together, an end for unbounded num_samples). The first error wins and is returned as
// InvalidArgument "<source>:<line>: <field>: <why>" (see YamlReader).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "libs/core/status.hpp"
#include "libs/spec/experiment_spec.hpp"
#include "libs/spec/yaml_reader.hpp"

namespace tunebus::spec_internal {

/// An absolute, normalised folder path without a trailing separator (relative paths resolve
/// against the current folder).
std::string NormalizeDir(const std::filesystem::path& dir);

/// True for [A-Za-z_][A-Za-z0-9_]* (environment variable and resource names).
bool IsIdentifier(const std::string& s);

class SpecParser {
 public:
  /// `source` names the file in errors; `base_dir` anchors relative paths.
  SpecParser(const std::string& source, const std::string& base_dir)
      : r_(source), base_dir_(NormalizeDir(base_dir)) {}

  /// Parses `text`. Call once per parser. Never throws.
  Result<ExperimentSpec> Parse(const std::string& text, const std::string& source);

 private:
  Status ParseRoot(const YAML::Node& root);
  Status ParseField(const MapEntry& e);
  Status ParseName(const YAML::Node& value);
  Status ParseTrainable(const YAML::Node& value);   // spec_sections.cpp
  Status ParseCommand(const YAML::Node& value);     // spec_sections.cpp
  Status ParseEnv(const YAML::Node& value);         // spec_sections.cpp
  Status ParseWorkingDir(const MapEntry& e);        // spec_sections.cpp
  Status ParseParamSpace(const YAML::Node& value);  // spec_sections.cpp
  Status ParseScheduler(const YAML::Node& value);   // spec_sections.cpp
  /// "<dotted.path>: <why>" (VariantGenerator::Validate's form) as "param_space.<path>: <why>"
  /// at the line of the longest path it starts with. spec_sections.cpp
  Status ParamSpaceError(const std::string& message) const;
  Status ParseSearch(const YAML::Node& value);  // spec_search.cpp
  /// The searcher built from the whole file (points against the param space). spec_search.cpp
  Status CheckSearch();
  /// A MakeSearcher / SearchOptions error "<param>: <why>" at its line. spec_search.cpp
  Status SearchError(const std::string& message) const;
  /// `metric:` / `mode:`, each a string or a list (spec_objectives.cpp).
  Status ParseObjectiveField(const MapEntry& e);
  /// metric and mode together: one objective, or lists of equal length (spec_objectives.cpp).
  Status CheckObjectives();
  /// A trial scheduler's "<param>: <why>" at its parameter's line.
  Status SchedulerError(const std::string& message) const;
  Status ParseDriver(const YAML::Node& value);
  Status ParseRetention(const YAML::Node& value);  // spec_retention.cpp
  Status ParseStop(const YAML::Node& value);
  Status ParseResources(const YAML::Node& value);
  // Reads an integer field that must be >= min; `rule` explains the bound in the error.
  Status ParseInt(const MapEntry& e, int64_t min, int64_t* out, std::string_view rule);
  Status CheckAcrossFields(const YAML::Node& root);

  YamlReader r_;
  std::string base_dir_;
  ExperimentSpec spec_;
  std::map<std::string, YAML::Node> given_;           // top-level field -> its key node
  std::vector<std::string> metrics_;                  // `metric:`'s names (one for a string)
  std::vector<std::string> modes_;                    // `mode:`'s words (one for a string)
  bool listed_objectives_ = false;                    // metric or mode was a list
  YAML::Node param_space_node_;                       // the `param_space:` value
  PathLines param_space_lines_;                       // its dotted key paths -> lines
  YAML::Node scheduler_node_;                         // the `scheduler:` value
  std::map<std::string, YAML::Node> scheduler_keys_;  // its parameters' key nodes
  YAML::Node search_node_;                            // the `search:` value
  YAML::Node search_type_node_;                       // its type (the value itself for a name)
  std::map<std::string, YAML::Node> search_keys_;     // its parameters' key nodes
  std::map<std::string, YAML::Node> search_values_;   // and value nodes
};

}  // namespace tunebus::spec_internal
