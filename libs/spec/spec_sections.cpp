// SpecParser's sections with structure of their own: trainable, param_space, scheduler.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <sstream>
#include <string_view>
#include <vector>

#include "libs/core/near_miss.hpp"
#include "libs/spec/spec_fields.hpp"
#include "libs/spec/spec_parser.hpp"
#include "libs/tune/variant_generator.hpp"

namespace tunebus::spec_internal {
namespace {

using json = nlohmann::json;

const std::vector<std::string_view> kTrainableFields = SpecFieldNames(FindSpecSection("trainable"));
const std::vector<std::string_view> kBuiltins = {"mock", "noop"};
const std::vector<std::string_view> kWorkingDirFields =
    SpecFieldNames(FindSpecSection("working_dir"));
const std::vector<std::string_view> kSchedulers = {
    "fifo", "asha", "hyperband", "hyperband_bohb", "median_stopping", "pbt"};

bool Contains(const std::vector<std::string_view>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

Status SpecParser::ParseTrainable(const YAML::Node& value) {
  if (!value.IsMap()) {
    return r_.Error(
        value, "trainable",
        "expected a map with 'command' or 'builtin', got " + YamlReader::Describe(value));
  }
  Result<std::vector<MapEntry>> entries = r_.Entries(value, "trainable", kTrainableFields);
  if (!entries.ok()) return entries.status();
  bool has_program = false;
  for (const MapEntry& e : *entries) {
    if (e.key != "env" && has_program) {
      return r_.Error(e.key_node, "trainable." + e.key,
                      "set either 'command' or 'builtin', not both");
    }
    Status st;
    if (e.key == "command") {
      st = ParseCommand(e.value);
    } else if (e.key == "env") {
      st = ParseEnv(e.value);
    } else {
      Result<std::string> builtin = r_.String(e.value, "trainable.builtin");
      if (!builtin.ok()) return builtin.status();
      if (!Contains(kBuiltins, *builtin)) {
        return r_.Error(e.value, "trainable.builtin",
                        fmt::format("unknown builtin '{}'; expected one of {}", *builtin,
                                    fmt::join(kBuiltins, ", ")));
      }
      spec_.trainable.builtin = *builtin;
    }
    if (!st.ok()) return st;
    has_program = has_program || e.key != "env";
  }
  if (!has_program) return r_.Error(value, "trainable", "needs 'command' or 'builtin'");
  return Status::Ok();
}

Status SpecParser::ParseWorkingDir(const MapEntry& e) {
  WorkingDirSpec& wd = spec_.working_dir;
  wd.line = YamlReader::Line(e.key_node);
  wd.path = base_dir_;
  const YAML::Node& value = e.value;
  if (value.IsScalar() && ScalarToJson(value).is_boolean()) {
    wd.shipped = ScalarToJson(value).get<bool>();
    return Status::Ok();
  }
  auto set_path = [&](const YAML::Node& node, const std::string& field) -> Status {
    Result<std::string> path = r_.String(node, field);
    if (!path.ok()) return path.status();
    wd.path = NormalizeDir(std::filesystem::path(base_dir_) / *path);
    wd.line = YamlReader::Line(node);
    return Status::Ok();
  };
  if (value.IsScalar()) return set_path(value, "working_dir");
  if (!value.IsMap()) {
    return r_.Error(value, "working_dir",
                    "expected a folder, a map {path, excludes, max_size_mb} or false, got " +
                        YamlReader::Describe(value));
  }
  Result<std::vector<MapEntry>> entries = r_.Entries(value, "working_dir", kWorkingDirFields);
  if (!entries.ok()) return entries.status();
  for (const MapEntry& f : *entries) {
    const std::string field = "working_dir." + f.key;
    if (f.key == "path") {
      if (Status s = set_path(f.value, field); !s.ok()) return s;
    } else if (f.key == "max_size_mb") {
      Result<double> mb = r_.Number(f.value, field);
      if (!mb.ok()) return mb.status();
      if (!(*mb > 0) || *mb > 1024 * 1024) {
        return r_.Error(f.value, field, fmt::format("must be > 0 (MiB), got {}", *mb));
      }
      wd.max_size_bytes = int64_t(*mb * double(1 << 20));
    } else {
      if (!f.value.IsSequence()) {
        return r_.Error(f.value, field,
                        "expected a list of patterns, got " + YamlReader::Describe(f.value));
      }
      ExcludeMatcher check;
      for (size_t i = 0; i < f.value.size(); ++i) {
        const std::string item = fmt::format("{}[{}]", field, i);
        Result<std::string> pattern = r_.String(f.value[i], item);
        if (!pattern.ok()) return pattern.status();
        if (Status s = check.Add(*pattern); !s.ok()) return r_.Error(f.value[i], item, s.message());
        wd.excludes.push_back(*pattern);
      }
    }
  }
  return Status::Ok();
}

Status SpecParser::ParseCommand(const YAML::Node& value) {
  std::vector<std::string>& argv = spec_.trainable.command;
  if (value.IsScalar()) {  // "python train.py --x" is split on whitespace
    std::istringstream words(value.Scalar());
    for (std::string word; words >> word;) argv.push_back(word);
  } else if (value.IsSequence()) {
    for (size_t i = 0; i < value.size(); ++i) {
      Result<std::string> arg = r_.String(value[i], fmt::format("trainable.command[{}]", i));
      if (!arg.ok()) return arg.status();
      argv.push_back(*arg);
    }
  } else {
    return r_.Error(value, "trainable.command",
                    "expected a list of strings or a string, got " + YamlReader::Describe(value));
  }
  if (argv.empty()) return r_.Error(value, "trainable.command", "is empty; name a program");
  return Status::Ok();
}

Status SpecParser::ParseEnv(const YAML::Node& value) {
  Result<std::vector<MapEntry>> entries = r_.Entries(value, "trainable.env");
  if (!entries.ok()) return entries.status();
  for (const MapEntry& e : *entries) {
    const std::string field = "trainable.env." + e.key;
    if (!IsIdentifier(e.key)) {
      return r_.Error(e.key_node, field, "not a valid environment variable name");
    }
    if (e.key.rfind("TUNEBUS_", 0) == 0) {
      return r_.Error(e.key_node, field, "names starting with TUNEBUS_ are reserved");
    }
    if (!e.value.IsScalar()) {
      return r_.Error(e.value, field, "expected a string, got " + YamlReader::Describe(e.value));
    }
    spec_.trainable.env[e.key] = e.value.Scalar();
  }
  return Status::Ok();
}

Status SpecParser::ParseParamSpace(const YAML::Node& value) {
  if (!value.IsDefined() || value.IsNull()) return Status::Ok();  // `param_space:` alone = {}
  if (!value.IsMap()) {
    return r_.Error(value, "param_space",
                    "expected a map of config keys, got " + YamlReader::Describe(value));
  }
  param_space_node_ = value;
  Result<json> space = r_.ToJson(value, "param_space", &param_space_lines_);
  if (!space.ok()) return space.status();
  Status st = VariantGenerator::Validate(*space);
  if (!st.ok()) return ParamSpaceError(st.message());
  spec_.param_space = std::move(space).value();
  return Status::Ok();
}

Status SpecParser::ParamSpaceError(const std::string& msg) const {
  // The message is "<dotted.path>: <why>"; report the line of the longest matching path.
  int line = YamlReader::Line(param_space_node_);
  size_t best = 0;
  for (const auto& [path, path_line] : param_space_lines_) {
    if (path.size() > best && msg.size() > path.size() + 1 && msg.starts_with(path) &&
        msg.compare(path.size(), 2, ": ") == 0) {
      best = path.size();
      line = path_line;
    }
  }
  constexpr std::string_view kTop = "(top level)";
  std::string where = msg.starts_with(kTop) ? msg.substr(kTop.size()) : "." + msg;
  return r_.Error(line, "", "param_space" + where);
}

Status SpecParser::ParseScheduler(const YAML::Node& value) {
  YAML::Node type = value;
  std::string field = "scheduler";
  json config = json::object();
  std::map<std::string, YAML::Node> param_keys;
  if (value.IsMap()) {
    Result<std::vector<MapEntry>> entries = r_.Entries(value, field);
    if (!entries.ok()) return entries.status();
    bool has_type = false;
    for (const MapEntry& e : *entries) {
      if (e.key == "type") {
        type = e.value;
        has_type = true;
        continue;
      }
      Result<json> param = r_.ToJson(e.value, "scheduler." + e.key);
      if (!param.ok()) return param.status();
      config[e.key] = std::move(param).value();
      param_keys[e.key] = e.key_node;
    }
    if (!has_type) {
      return r_.Error(value, field,
                      fmt::format("needs a 'type', one of {}", fmt::join(kSchedulers, ", ")));
    }
    field = "scheduler.type";
  }
  Result<std::string> name = r_.String(type, field);
  if (!name.ok()) return name.status();
  if (!Contains(kSchedulers, *name)) {
    const auto meant =
        NearMiss(*name, std::vector<std::string>(kSchedulers.begin(), kSchedulers.end()));
    return r_.Error(
        type, field,
        fmt::format("unknown scheduler '{}'{}; expected one of {}", *name,
                    meant ? "; did you mean " + *meant + "?" : "", fmt::join(kSchedulers, ", ")));
  }
  if (*name == "fifo" && !param_keys.empty()) {
    const auto& [key, key_node] = *param_keys.begin();
    return r_.Error(key_node, "scheduler." + key, "the fifo scheduler takes no parameters");
  }
  spec_.scheduler = *name;
  spec_.scheduler_config = std::move(config);
  scheduler_node_ = value;
  scheduler_keys_ = std::move(param_keys);
  return Status::Ok();
}

}  // namespace tunebus::spec_internal
