#include "services/scheduler/dashboard/views/pareto.hpp"

#include <cmath>
#include <set>
#include <string>
#include <vector>

namespace tunebus::dashboard {

using nlohmann::json;

json ParetoView(const json& summary, const json& trials) {
  json view = {{"objectives", json::array()}, {"points", json::array()}, {"front", json::array()}};
  if (!summary.is_object()) return view;
  std::vector<std::string> metrics;
  if (auto it = summary.find("objectives"); it != summary.end() && it->is_array()) {
    for (const json& o : *it) {
      if (!o.is_object() || !o.contains("metric") || !o["metric"].is_string()) continue;
      metrics.push_back(o["metric"].get<std::string>());
      view["objectives"].push_back(
          {{"metric", metrics.back()}, {"mode", o.value("mode", std::string())}});
    }
  }
  std::set<std::string> front;
  if (auto it = summary.find("pareto_front"); it != summary.end() && it->is_array()) {
    for (const json& t : *it) {
      if (!t.is_object() || !t.contains("trial_id") || !t["trial_id"].is_string()) continue;
      front.insert(t["trial_id"].get<std::string>());
      view["front"].push_back(t["trial_id"]);
    }
  }
  if (metrics.size() < 2 || !trials.is_array()) return view;
  for (const json& t : trials) {
    if (!t.is_object() || !t.contains("trial_id") || !t["trial_id"].is_string()) continue;
    auto result = t.find("last_result");
    if (result == t.end() || !result->is_object()) continue;
    json values = json::array();
    for (const std::string& m : metrics) {
      auto v = result->find(m);
      if (v == result->end() || !v->is_number() || !std::isfinite(v->get<double>())) break;
      values.push_back(*v);
    }
    if (values.size() != metrics.size()) continue;
    const std::string id = t["trial_id"].get<std::string>();
    view["points"].push_back({{"trial_id", id},
                              {"status", t.value("status", std::string())},
                              {"values", std::move(values)},
                              {"front", front.contains(id)}});
  }
  return view;
}

}  // namespace tunebus::dashboard
