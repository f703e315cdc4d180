// `tunectl validate FILE...`: the experiment-file parser `tunectl run` uses, without running the
// files (exit 2 naming file, line and field on the first invalid one).
// `tunectl experiment-fields` (hidden): the experiment file's field table with each field's
// default, as JSON, from which scripts/docs-generate generates the reference page.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/spec/experiment_spec.hpp"
#include "libs/spec/spec_fields.hpp"
#include "services/tunectl/commands.hpp"

namespace tunebus {
namespace {

int ValidateCommand(const GlobalFlags& g, const std::vector<std::string>& files) {
  nlohmann::json checked = nlohmann::json::array();
  for (const std::string& file : files) {
    Result<ExperimentSpec> spec = ParseExperimentFile(file);
    if (!spec.ok()) {
      std::cerr << "tunectl: invalid experiment file: " << spec.status().message() << "\n";
      return 2;
    }
    const std::string objective =
        spec->objectives.size() >= 2
            ? std::to_string(spec->objectives.size()) + " objectives"
            : (spec->metric.empty() ? "no metric" : spec->mode + " " + spec->metric);
    if (g.output == "json") {
      checked.push_back({{"file", file},
                         {"name", spec->name},
                         {"num_samples", spec->num_samples},
                         {"scheduler", spec->scheduler},
                         {"search", spec->search},
                         {"objective", objective}});
    } else {
      std::cout << file << ": ok (" << spec->name << ", num_samples " << spec->num_samples
                << ", scheduler " << spec->scheduler << ", search " << spec->search << ", "
                << objective << ")\n";
    }
  }
  if (g.output == "json") std::cout << checked.dump(2) << "\n";
  return 0;
}

int ExperimentFieldsCommand() {
  Result<nlohmann::json> fields = SpecFieldsJson();
  if (!fields.ok()) {
    std::cerr << "tunectl: " << fields.status().message() << "\n";
    return 1;
  }
  std::cout << fields->dump(2) << "\n";
  return 0;
}

}  // namespace

void AddValidateCommands(CLI::App& app, Commands& commands) {
  auto files = std::make_shared<std::vector<std::string>>();
  auto* validate = app.add_subcommand(
      "validate", "check experiment files with the parser `run` uses, without running them");
  validate->add_option("files", *files, "experiment files (YAML)")->required();
  commands.push_back({validate, CommandNeeds::kNothing,
                      [files](const GlobalFlags& g) { return ValidateCommand(g, *files); }});
  auto* fields = app.add_subcommand(
      "experiment-fields", "the experiment file's fields and defaults as JSON (docs generator)");
  fields->group("");  // hidden: scripts/docs-generate reads it
  commands.push_back({fields, CommandNeeds::kNothing,
                      [](const GlobalFlags&) { return ExperimentFieldsCommand(); }});
}

}  // namespace tunebus
