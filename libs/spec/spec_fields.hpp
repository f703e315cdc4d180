// The experiment file's fields: the table the parser accepts keys from (an unknown key's error
// lists these names) and the reference is generated from (`tunectl experiment-fields`, rendered
// by scripts/docs-generate into the site), so the two cannot drift.
//
// A field's default is never written here as text: it is read from the ExperimentSpec the
// parser makes of its section's `defaults_from` file, which leaves the field out. Changing a
// default in experiment_spec.hpp (or in the parser) changes the reference.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libs/spec/experiment_spec.hpp"

namespace tunebus {

struct SpecField {
  std::string_view name;     // the key inside its section
  std::string_view type;     // as the reference names it: "integer", "string", "map", ...
  std::string_view unit;     // "s", "MiB", "training iterations"; "" when unitless
  std::string_view meaning;  // one line: what it does (and the Ray Tune argument it matches)
  std::string_view rule;     // what the parser accepts beyond the type; its error's words
  bool required = false;
  /// The value used when the file leaves the field out, as YAML text, read from the spec parsed
  /// from the section's `defaults_from`; nullptr: required, or no literal default (then
  /// `when_absent` says what absence means).
  std::string (*default_of)(const ExperimentSpec&) = nullptr;
  std::string_view when_absent = "";
};

struct SpecSection {
  std::string_view name;           // "" for the top level, else its key ("trainable")
  std::string_view meaning;        // one line
  std::string_view defaults_from;  // a valid file without any optional field of this section
  std::vector<SpecField> fields;
  /// True when keys other than `fields` are accepted (stop: any result key).
  bool open = false;
};

/// The sections in the reference's order: the top level, trainable, working_dir, stop, retention,
/// driver.
const std::vector<SpecSection>& SpecSections();

/// The section named `name` ("" = top level); throws std::out_of_range for another name.
const SpecSection& FindSpecSection(std::string_view name);

/// The field names of `section`, in the table's order (the parser's allowed keys).
std::vector<std::string_view> SpecFieldNames(const SpecSection& section);

/// The field `name` of `section`; throws std::out_of_range when the table has no such field.
const SpecField& FindSpecField(const SpecSection& section, std::string_view name);

/// Every field's default, as `SpecField::default_of` renders it from the spec parsed from its
/// section's `defaults_from`: {"": {"num_samples": "1", ...}, "driver": {...}}. A field with
/// no literal default is absent. Errors: a `defaults_from` the parser refuses (Internal).
Result<nlohmann::json> SpecFieldDefaults();

/// The whole table with its defaults, for the generated reference:
/// {"sections": [{"name", "meaning", "open", "fields": [{"name", "type", "unit", "meaning",
/// "rule", "required", "default" (YAML text or null), "when_absent"}]}]}.
Result<nlohmann::json> SpecFieldsJson();

}  // namespace tunebus
