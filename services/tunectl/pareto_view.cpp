#include "services/tunectl/pareto_view.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "services/tunectl/progress_table.hpp"

namespace tunebus {

using nlohmann::json;

std::vector<std::string> ObjectiveMetrics(const json& e) {
  std::vector<std::string> out;
  const json& objectives = Field(e, "objectives");
  if (!objectives.is_array()) return out;
  for (const json& o : objectives) out.push_back(StringField(o, "metric"));
  return out;
}

std::string DescribeObjectivesOf(const json& e) {
  std::string text;
  const json& objectives = Field(e, "objectives");
  if (!objectives.is_array()) return text;
  for (const json& o : objectives) {
    text += fmt::format("{}{} {}", text.empty() ? "" : ", ", StringField(o, "metric"),
                        StringField(o, "mode"));
  }
  return text;
}

std::set<std::string> ParetoTrialIds(const json& e) {
  std::set<std::string> ids;
  const json& front = Field(e, "pareto_front");
  if (!front.is_array()) return ids;
  for (const json& t : front) ids.insert(StringField(t, "trial_id"));
  return ids;
}

std::vector<std::string> RenderParetoFront(const json& e, const std::string& indent) {
  const std::vector<std::string> metrics = ObjectiveMetrics(e);
  const json& front = Field(e, "pareto_front");
  const size_t n = front.is_array() ? front.size() : 0;
  std::vector<std::string> lines = {fmt::format("{}Pareto front ({}): {} {}", indent,
                                                DescribeObjectivesOf(e), n,
                                                n == 1 ? "trial" : "trials")};
  if (n == 0) return lines;
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> header = {"trial"};
  header.insert(header.end(), metrics.begin(), metrics.end());
  header.push_back("config");
  cells.push_back(std::move(header));
  for (const json& t : front) {
    std::vector<std::string> row = {StringField(t, "trial_id")};
    for (const std::string& m : metrics) {
      const json& v = Field(Field(t, "last_result"), m.c_str());
      row.push_back(v.is_null() ? "-" : FormatValue(v));
    }
    row.push_back(Field(t, "config").dump());
    cells.push_back(std::move(row));
  }
  std::vector<size_t> width(cells[0].size(), 0);
  for (const auto& row : cells) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : cells) {
    std::string line = indent + "  ";
    for (size_t c = 0; c < row.size(); ++c) {
      line += c + 1 == row.size() ? row[c] : fmt::format("{:<{}}  ", row[c], width[c]);
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace tunebus
