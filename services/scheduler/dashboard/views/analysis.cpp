#include "services/scheduler/dashboard/views/analysis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>

namespace tunebus::dashboard {

using nlohmann::json;

namespace {

constexpr const char* kStatuses[] = {"PENDING", "RUNNING", "PAUSED", "TERMINATED", "ERROR"};

// The scalar leaves of `config`, nested maps joined with '/'.
void Flatten(const json& config, const std::string& prefix, std::map<std::string, json>& out) {
  if (!config.is_object()) return;
  for (auto it = config.begin(); it != config.end(); ++it) {
    const std::string name = prefix.empty() ? it.key() : prefix + "/" + it.key();
    if (it->is_object()) {
      Flatten(*it, name, out);
    } else if (it->is_primitive() && !it->is_null()) {
      out.emplace(name, *it);
    }
  }
}

bool IsFiniteNumber(const json& v) {
  return v.is_number() && (!v.is_number_float() || std::isfinite(v.get<double>()));
}

// `v` to 6 significant digits (the answer stays small: "0.123457", not 17 digits); integers
// and non-finite numbers as they are.
json Compact(const json& v) {
  if (!v.is_number_float()) return v;
  const double d = v.get<double>();
  if (!std::isfinite(d)) return v;
  return std::strtod(fmt::format("{:.6g}", d).c_str(), nullptr);
}

double NumberOr(const json& object, const char* key, double fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  return it != object.end() && it->is_number() ? it->get<double>() : fallback;
}

// The per-trial columns of AnalysisColumns (all but "params"), and each trial's flattened
// config in `configs`.
struct TrialColumns {
  json ids = json::array(), status = json::array(), value = json::array();
  json iteration = json::array(), time = json::array();
  std::vector<std::map<std::string, json>> configs;

  void Add(const json& t, const std::string& metric) {
    ids.push_back(t.value("trial_id", std::string()));
    const std::string s = t.value("status", std::string());
    int code = -1;
    for (int i = 0; i < 5; ++i) {
      if (s == kStatuses[i]) code = i;
    }
    status.push_back(code);
    const json result = t.value("last_result", json::object());
    auto m = result.is_object() ? result.find(metric) : result.end();
    value.push_back(!metric.empty() && result.is_object() && m != result.end() && IsFiniteNumber(*m)
                        ? Compact(*m)
                        : json(nullptr));
    iteration.push_back(t.value("training_iteration", int64_t(0)));
    time.push_back(Compact(NumberOr(t, "time_total_s", 0)));
    std::map<std::string, json> flat;
    Flatten(t.value("config", json::object()), "", flat);
    configs.push_back(std::move(flat));
  }
};

// A config key some trial has: whether all its values are numbers and whether they differ.
struct ConfigKey {
  bool numeric = true;
  bool varies = false;
  const json* first = nullptr;
};

// Every key of `configs`; a key some trials lack varies too.
std::map<std::string, ConfigKey> ConfigKeys(
    const std::vector<std::map<std::string, json>>& configs) {
  std::map<std::string, ConfigKey> keys;
  for (const auto& flat : configs) {
    for (const auto& [name, v] : flat) {
      ConfigKey& k = keys[name];
      if (!IsFiniteNumber(v)) k.numeric = false;
      if (k.first == nullptr) {
        k.first = &v;
      } else if (*k.first != v) {
        k.varies = true;
      }
    }
  }
  for (auto& [name, k] : keys) {
    if (!k.varies) {
      for (const auto& flat : configs) {
        if (!flat.contains(name)) k.varies = true;
      }
    }
  }
  return keys;
}

// A numeric parameter's "values" (null where a trial lacks it), "min" and "max" into `p`.
void NumericParam(const std::string& name, const std::vector<std::map<std::string, json>>& configs,
                  json& p) {
  json values = json::array();
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& flat : configs) {
    auto it = flat.find(name);
    if (it == flat.end()) {
      values.push_back(nullptr);
      continue;
    }
    values.push_back(Compact(it->second));
    lo = std::min(lo, it->second.get<double>());
    hi = std::max(hi, it->second.get<double>());
  }
  p["min"] = lo;
  p["max"] = hi;
  p["values"] = std::move(values);
}

// A categorical parameter's "categories" (in order of first use) and "values" (indexes into
// them; null where a trial lacks it) into `p`.
void CategoricalParam(const std::string& name,
                      const std::vector<std::map<std::string, json>>& configs, json& p) {
  json values = json::array();
  std::map<std::string, size_t> index;
  json categories = json::array();
  for (const auto& flat : configs) {
    auto it = flat.find(name);
    if (it == flat.end()) {
      values.push_back(nullptr);
      continue;
    }
    const std::string label =
        it->second.is_string() ? it->second.get<std::string>() : it->second.dump();
    auto [at, added] = index.try_emplace(label, index.size());
    if (added) categories.push_back(label);
    values.push_back(at->second);
  }
  p["categories"] = std::move(categories);
  p["values"] = std::move(values);
}

}  // namespace

json AnalysisColumns(const json& trials, const std::string& metric, size_t max_params) {
  TrialColumns c;
  if (trials.is_array()) {
    for (const json& t : trials) c.Add(t, metric);
  }
  json params = json::array();
  for (const auto& [name, k] : ConfigKeys(c.configs)) {
    if (!k.varies || params.size() >= max_params) continue;
    json p = {{"name", name}, {"kind", k.numeric ? "numeric" : "categorical"}};
    if (k.numeric) {
      NumericParam(name, c.configs, p);
    } else {
      CategoricalParam(name, c.configs, p);
    }
    params.push_back(std::move(p));
  }
  json statuses = json::array();
  for (const char* s : kStatuses) statuses.push_back(s);
  return {{"n", c.ids.size()},
          {"trial_id", std::move(c.ids)},
          {"status", std::move(c.status)},
          {"statuses", std::move(statuses)},
          {"value", std::move(c.value)},
          {"training_iteration", std::move(c.iteration)},
          {"time_total_s", std::move(c.time)},
          {"params", std::move(params)}};
}

std::vector<ParamColumn> ImportanceInputs(const json& columns) {
  std::vector<ParamColumn> out;
  const json params = columns.value("params", json::array());
  for (const json& p : params) {
    ParamColumn c;
    c.name = p.value("name", std::string());
    c.categorical = p.value("kind", std::string()) == "categorical";
    const json values = p.value("values", json::array());
    for (const json& v : values) {
      if (c.categorical) {
        c.labels.push_back(v.is_number() ? v.dump() : std::string());
      } else {
        c.numeric.push_back(v.is_number() ? v.get<double>()
                                          : std::numeric_limits<double>::quiet_NaN());
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

json ImportanceJson(const json& columns) {
  std::vector<double> metric;
  size_t with_value = 0;
  for (const json& v : columns.value("value", json::array())) {
    metric.push_back(v.is_number() ? v.get<double>() : std::numeric_limits<double>::quiet_NaN());
    if (v.is_number()) ++with_value;
  }
  json params = json::array();
  for (const ParamImportance& p : BinnedVarianceImportance(ImportanceInputs(columns), metric)) {
    params.push_back({{"name", p.name},
                      {"importance", p.importance},
                      {"variance_explained", p.variance_explained},
                      {"bins", p.bins},
                      {"trials", p.trials}});
  }
  return {{"method", "binned-variance (first-order fANOVA main effect, epsilon^2)"},
          {"trials", with_value},
          {"params", std::move(params)}};
}

json Progress(const json& lsx_row, const json& summary) {
  const json counts = lsx_row.value("counts", json::object());
  const int64_t finished =
      counts.value("TERMINATED", int64_t(0)) + counts.value("ERROR", int64_t(0));
  int64_t total = lsx_row.value("total", int64_t(-1));
  double elapsed = 0;
  json budget = nullptr;
  bool ended = lsx_row.value("status", std::string()) != "RUNNING";
  if (summary.is_object()) {
    if (summary.contains("total") && summary["total"].is_number_integer()) {
      total = summary["total"].get<int64_t>();
    }
    elapsed = NumberOr(summary, "elapsed_s", 0);
    if (summary.contains("time_budget_s") && summary["time_budget_s"].is_number()) {
      budget = summary["time_budget_s"];
    }
    if (summary.contains("finished") && summary["finished"].is_boolean()) {
      ended = summary["finished"].get<bool>();
    }
  }
  json p = {{"basis", "none"},  {"fraction", nullptr},  {"finished", finished},
            {"total", total},   {"elapsed_s", elapsed}, {"time_budget_s", budget},
            {"eta_s", nullptr}, {"eta_method", nullptr}};
  std::optional<double> trials_eta;
  if (total > 0) {
    p["basis"] = "trials";
    p["fraction"] = std::min(1.0, double(finished) / double(total));
    if (finished > 0 && elapsed > 0) trials_eta = double(total - finished) * elapsed / finished;
    p["eta_method"] = "remaining trials x elapsed / finished trials";
  }
  if (budget.is_number() && budget.get<double>() > 0) {
    const double b = budget.get<double>();
    const double budget_eta = std::max(0.0, b - elapsed);
    if (total <= 0 || !trials_eta || budget_eta < *trials_eta) {
      p["basis"] = "time_budget";
      p["fraction"] = std::min(1.0, elapsed / b);
      p["eta_method"] = "time_budget_s - elapsed";
      trials_eta = budget_eta;
    }
  }
  if (trials_eta) p["eta_s"] = *trials_eta;
  if (ended) {
    p["eta_s"] = 0.0;
    if (p["basis"] == "time_budget" || p["basis"] == "none") p["fraction"] = 1.0;
  }
  return p;
}

json SearcherPhase(const json& summary) {
  json d = summary.is_object() ? summary.value("searcher", json::object()) : json::object();
  if (!d.is_object()) d = json::object();
  const std::string name = d.value("searcher", std::string("unknown"));
  const int64_t created = summary.is_object() ? summary.value("created", int64_t(0)) : 0;
  const int64_t total = summary.is_object() ? summary.value("total", int64_t(-1)) : -1;
  const int64_t suggested = d.value("suggested", created);
  const int64_t searcher_total = d.value("total", total);
  std::string phase = d.value("phase", std::string());
  std::string text;
  if (!phase.empty()) {
    text = fmt::format("{}: {} phase", name, phase);
    if (d.contains("observations")) {
      text += fmt::format(" ({} observations)", d["observations"].dump());
    }
  } else if (searcher_total >= 0 && suggested >= searcher_total) {
    phase = "exhausted";
    text = fmt::format("{}: exhausted ({} of {} suggested)", name, suggested, searcher_total);
  } else {
    phase = "sampling";
    text = searcher_total >= 0
               ? fmt::format("{}: {} of {} suggested", name, suggested, searcher_total)
               : fmt::format("{}: {} suggested", name, suggested);
  }
  json out = d;
  out["searcher"] = name;
  out["phase"] = phase;
  out["text"] = text;
  return out;
}

}  // namespace tunebus::dashboard
