// SpecParser's `search:` section (docs/reference/search.md): a search type, or a map of the type
// and its parameters. Its shape is read here; the values are checked against the param space by
// MakeSearcher (libs/tune/make_searcher.hpp) once every field is read (CheckSearch), and its
// "<param>: <why>" errors point at the parameter's line, a point's key included.
#include <fmt/format.h>

#include <charconv>
#include <string>

#include "libs/spec/spec_parser.hpp"
#include "libs/tune/make_searcher.hpp"

namespace tunebus::spec_internal {

using json = nlohmann::json;

Status SpecParser::ParseSearch(const YAML::Node& value) {
  YAML::Node type = value;
  std::string field = "search";
  json config = json::object();
  bool has_type = true;
  search_keys_.clear();
  search_values_.clear();
  search_node_ = value;
  search_type_node_ = value;
  if (value.IsMap()) {
    Result<std::vector<MapEntry>> entries = r_.Entries(value, field);
    if (!entries.ok()) return entries.status();
    has_type = false;
    for (const MapEntry& e : *entries) {
      search_keys_[e.key] = e.key_node;
      search_values_[e.key] = e.value;
      if (e.key == "type") {
        type = e.value;
        search_type_node_ = e.value;
        has_type = true;
        continue;
      }
      Result<json> param = r_.ToJson(e.value, "search." + e.key);
      if (!param.ok()) return param.status();
      config[e.key] = std::move(param).value();
    }
    field = "search.type";
  }
  std::string name = "random";
  if (has_type) {
    Result<std::string> text = r_.String(type, field);
    if (!text.ok()) return text.status();
    name = *text;
  }
  // The shape (type, generic keys, unknown parameters); the param space is checked later.
  if (auto parsed = SearchOptions::Parse(name, config); !parsed.ok()) {
    return SearchError(parsed.status().message());
  }
  spec_.search = name;
  spec_.search_config = std::move(config);
  return Status::Ok();
}

Status SpecParser::CheckSearch() {
  SearchSetup setup;
  setup.param_space = spec_.param_space;
  setup.num_samples = spec_.num_samples;
  setup.metric = spec_.metric;
  setup.mode = spec_.mode;
  setup.objectives = spec_.objectives;
  setup.seed = spec_.seed.value_or(0);
  setup.max_concurrent_trials = spec_.max_concurrent_trials;
  auto made = MakeSearcher(spec_.search, spec_.search_config, setup);
  if (!made.ok()) return SearchError(made.status().message());
  return Status::Ok();
}

// "<param>: <why>" with param like "max_concurrent", "type" or "points_to_evaluate[1].opt.lr":
// the error at the line of the param's key, or of the list item / key inside it it names.
Status SpecParser::SearchError(const std::string& message) const {
  const auto colon = message.find(": ");
  if (colon == std::string::npos) return r_.Error(search_node_, "search", message);
  const std::string param = message.substr(0, colon);
  const std::string why = message.substr(colon + 2);
  const std::string root = param.substr(0, param.find_first_of(".["));
  YAML::Node where = search_node_;
  if (root == "type") {
    where = search_type_node_;
  } else if (auto key = search_keys_.find(root); key != search_keys_.end()) {
    where = key->second;
    if (param.size() > root.size()) {
      // Walk "[i]" and ".key" steps from the parameter's value while they name nodes.
      YAML::Node node = search_values_.at(root);
      size_t i = root.size();
      while (i < param.size() && node.IsDefined()) {
        YAML::Node next;
        if (param[i] == '[') {
          const size_t close = param.find(']', i);
          if (close == std::string::npos || !node.IsSequence()) break;
          size_t index = 0;
          const char* first = param.data() + i + 1;
          const char* last = param.data() + close;
          if (std::from_chars(first, last, index).ptr != last || index >= node.size()) break;
          next = node[index];
          i = close + 1;
        } else if (param[i] == '.') {
          const size_t end = param.find_first_of(".[", i + 1);
          const std::string k = param.substr(i + 1, end == std::string::npos ? end : end - i - 1);
          if (!node.IsMap() || !node[k].IsDefined()) break;
          next = node[k];
          i = end == std::string::npos ? param.size() : end;
        } else {
          break;
        }
        node = next;
        where = node;
      }
    }
  }
  return r_.Error(where, "search." + param, why);
}

}  // namespace tunebus::spec_internal
