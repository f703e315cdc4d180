// The experiment file's field table (libs/spec/spec_fields.hpp): the parser accepts exactly its
// keys, and the defaults the reference shows are the ones the parser applies.
#include "libs/spec/spec_fields.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <string>

#include "tests/unit/spec_test_util.hpp"

namespace tunebus {
namespace {

using spec_test::Parse;

// The section's defaults_from with `field` set to the YAML text `value`.
std::string WithField(const SpecSection& section, std::string_view field,
                      const std::string& value) {
  YAML::Node root = YAML::Load(std::string(section.defaults_from));
  const YAML::Node given = YAML::Load(value);
  if (section.name.empty()) {
    root[std::string(field)] = given;
  } else {
    if (!root[std::string(section.name)].IsMap()) root[std::string(section.name)] = YAML::Node();
    root[std::string(section.name)][std::string(field)] = given;
  }
  YAML::Emitter out;
  out << root;
  return out.c_str();
}

// Every field's default rendered from `spec`, for `section`.
nlohmann::json Render(const SpecSection& section, const ExperimentSpec& spec) {
  nlohmann::json values = nlohmann::json::object();
  for (const SpecField& f : section.fields) {
    if (f.default_of != nullptr) values[std::string(f.name)] = f.default_of(spec);
  }
  return values;
}

TEST(SpecFields, GivingEveryDefaultExplicitlyChangesNothing) {
  Result<nlohmann::json> defaults = SpecFieldDefaults();
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  int checked = 0;
  for (const SpecSection& section : SpecSections()) {
    const nlohmann::json& expected = (*defaults)[std::string(section.name)];
    for (const SpecField& f : section.fields) {
      if (f.default_of == nullptr) continue;
      const std::string value = expected.at(std::string(f.name)).get<std::string>();
      const std::string text = WithField(section, f.name, value);
      Result<ExperimentSpec> spec = ParseExperimentYaml(text, "/experiment", "defaults.yaml");
      ASSERT_TRUE(spec.ok()) << f.name << ": " << value
                             << " is refused: " << spec.status().ToString() << "\n"
                             << text;
      EXPECT_EQ(Render(section, *spec), expected) << "giving " << f.name << ": " << value;
      ++checked;
    }
  }
  EXPECT_GE(checked, 20);
}

TEST(SpecFields, DefaultsAreTheParsersOnAFileWithoutThem) {
  Result<nlohmann::json> defaults = SpecFieldDefaults();
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  Result<ExperimentSpec> minimal = Parse(spec_test::kMinimal);
  ASSERT_TRUE(minimal.ok());
  const nlohmann::json& top = (*defaults)[""];
  EXPECT_EQ(top["num_samples"], std::to_string(minimal->num_samples));
  EXPECT_EQ(top["max_failures"], std::to_string(minimal->max_failures));
  EXPECT_EQ(top["max_worker_losses"], std::to_string(minimal->max_worker_losses));
  EXPECT_EQ(top["weight"], fmt::format("{}", minimal->weight));
  EXPECT_EQ(top["report_timeout_s"], fmt::format("{}", minimal->report_timeout_s));
  EXPECT_EQ(top["scheduler"], minimal->scheduler);
  EXPECT_EQ(top["search"], minimal->search);
  EXPECT_EQ(top["fail_fast"], FailFastName(minimal->fail_fast));
  EXPECT_EQ(top["checkpoint_failure"], CheckpointFailureModeName(minimal->checkpoint_failure));
  EXPECT_EQ(top["resources_per_trial"], "{cpu: 1}");
  EXPECT_EQ(top["results_dir"], "results");
  EXPECT_EQ((*defaults)["working_dir"]["max_size_mb"],
            std::to_string(WorkingDirSpec::kDefaultMaxSizeBytes >> 20));
  EXPECT_EQ((*defaults)["working_dir"]["path"], ".");
  Result<ExperimentSpec> with_driver =
      Parse(std::string(spec_test::kMinimal) + "driver: {endpoint: 'tcp://127.0.0.1:1'}\n");
  ASSERT_TRUE(with_driver.ok());
  EXPECT_EQ((*defaults)["driver"]["timeout_s"], fmt::format("{}", with_driver->driver->timeout_s));
  EXPECT_EQ((*defaults)["driver"]["on_result"], with_driver->driver->on_result ? "true" : "false");
}

TEST(SpecFields, TheParserAcceptsExactlyTheTablesKeys) {
  for (const SpecSection& section : SpecSections()) {
    if (section.open) continue;
    for (const SpecField& f : section.fields) {
      // Any value: whatever the parser says of it, it must not call the key unknown.
      Result<ExperimentSpec> spec =
          ParseExperimentYaml(WithField(section, f.name, "[]"), "/experiment", "e.yaml");
      if (!spec.ok()) {
        EXPECT_EQ(spec.status().message().find("unknown field"), std::string::npos)
            << section.name << "." << f.name << ": " << spec.status().message();
      }
    }
    Result<ExperimentSpec> unknown =
        ParseExperimentYaml(WithField(section, "no_such_field", "1"), "/experiment", "e.yaml");
    ASSERT_FALSE(unknown.ok()) << section.name;
    EXPECT_NE(unknown.status().message().find(
                  fmt::format("unknown field 'no_such_field'; expected one of {}",
                              fmt::join(SpecFieldNames(section), ", "))),
              std::string::npos)
        << unknown.status().message();
  }
}

TEST(SpecFields, IntegerBoundsErrorsSayTheTablesRule) {
  for (const char* field : {"max_concurrent_trials", "max_failures", "max_worker_losses",
                            "checkpoint_freq", "keep_checkpoints_num"}) {
    Result<ExperimentSpec> spec =
        Parse(std::string(spec_test::kMinimal) + fmt::format("{}: -5\n", field));
    ASSERT_FALSE(spec.ok()) << field;
    EXPECT_EQ(spec.status().message(), fmt::format("exp.yaml:3: {}: {}, got -5", field,
                                                   FindSpecField(FindSpecSection(""), field).rule));
  }
}

TEST(SpecFields, JsonCarriesEveryFieldWithItsDefault) {
  Result<nlohmann::json> dump = SpecFieldsJson();
  ASSERT_TRUE(dump.ok());
  Result<nlohmann::json> defaults = SpecFieldDefaults();
  ASSERT_TRUE(defaults.ok());
  ASSERT_EQ((*dump)["sections"].size(), SpecSections().size());
  for (const nlohmann::json& section : (*dump)["sections"]) {
    const SpecSection& table = FindSpecSection(section["name"].get<std::string>());
    ASSERT_EQ(section["fields"].size(), table.fields.size());
    for (const nlohmann::json& field : section["fields"]) {
      const SpecField& f = FindSpecField(table, field["name"].get<std::string>());
      EXPECT_FALSE(field["meaning"].get<std::string>().empty()) << f.name;
      EXPECT_EQ(field["required"], f.required);
      if (f.default_of != nullptr) {
        EXPECT_EQ(field["default"], (*defaults)[std::string(table.name)][std::string(f.name)]);
      } else {
        EXPECT_TRUE(field["default"].is_null()) << f.name;
        EXPECT_TRUE(f.required || !f.when_absent.empty()) << f.name << " says nothing of absence";
      }
    }
  }
}

}  // namespace
}  // namespace tunebus
