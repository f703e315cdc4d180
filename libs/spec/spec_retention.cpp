// SpecParser's `retention:` section: {days: D, keep_results: B}, both optional, at least one
// given. `days` is a number of days > 0 (fractions allowed: 0.5 = 12 hours).
#include <fmt/format.h>

#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "libs/spec/spec_fields.hpp"
#include "libs/spec/spec_parser.hpp"

namespace tunebus::spec_internal {

namespace {
const std::vector<std::string_view> kRetentionFields = SpecFieldNames(FindSpecSection("retention"));
}  // namespace

Status SpecParser::ParseRetention(const YAML::Node& value) {
  if (!value.IsMap()) {
    return r_.Error(
        value, "retention",
        "expected a map such as {days: 7, keep_results: true}, got " + YamlReader::Describe(value));
  }
  Result<std::vector<MapEntry>> entries = r_.Entries(value, "retention", kRetentionFields);
  if (!entries.ok()) return entries.status();
  if (entries->empty()) {
    return r_.Error(value, "retention", "give days, keep_results or both (or leave it out)");
  }
  RetentionSpec retention;
  for (const MapEntry& e : *entries) {
    const std::string field = "retention." + e.key;
    if (e.key == "days") {
      Result<double> days = r_.Number(e.value, field);
      if (!days.ok()) return days.status();
      if (!(*days > 0) || !std::isfinite(*days)) {
        return r_.Error(
            e.value, field,
            "must be a number of days > 0 (fractions allowed), got " + e.value.Scalar());
      }
      retention.days = *days;
    } else {
      Result<bool> keep = r_.Bool(e.value, field);
      if (!keep.ok()) return keep.status();
      retention.keep_results = *keep;
    }
  }
  spec_.retention = retention;
  return Status::Ok();
}

}  // namespace tunebus::spec_internal
