// The build benchmark's baseline (bench/build_cost.py): a translation unit of third-party code
// only, the kind that dominates tunebus's own (nlohmann/json parsed and dumped, fmt, standard
// containers), compiled with the same compiler and flags as the build it is compared with. Its
// compile time moves with the machine and the compiler as the build does, and never with
// tunebus's code: the build's total over it is a figure that only tunebus's changes move.
#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

std::string BuildReference(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text);
  std::map<std::string, std::vector<double>> columns;
  for (const auto& [key, value] : j.items()) {
    if (value.is_array()) columns[key] = value.get<std::vector<double>>();
  }
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, values] : columns) out[key] = values.size();
  return fmt::format("{} {:.3f}", out.dump(2), columns.empty() ? 0.0 : columns.begin()->second[0]);
}
