#include "libs/spec/spec_parser.hpp"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <regex>
#include <sstream>
#include <string_view>
#include <vector>

#include "libs/core/near_miss.hpp"
#include "libs/core/resources.hpp"
#include "libs/spec/spec_fields.hpp"
#include "libs/tune/make_trial_scheduler.hpp"
#include "libs/tune/objective_rules.hpp"
#include "libs/tune/pbt_scheduler.hpp"
#include "libs/tune/variant_generator.hpp"

namespace tunebus::spec_internal {
namespace {

namespace fs = std::filesystem;

// The keys each section accepts: the field table the reference is generated from.
const std::vector<std::string_view> kTopFields = SpecFieldNames(FindSpecSection(""));
const std::vector<std::string_view> kDriverFields = SpecFieldNames(FindSpecSection("driver"));

// A field's rule as the table words it (its error says the same as the reference).
std::string_view Rule(std::string_view field) {
  return FindSpecField(FindSpecSection(""), field).rule;
}

// The offset of the first byte of `text` that is not valid UTF-8 (RFC 3629: no overlong forms,
// surrogates or code points above U+10FFFF), or npos. YAML 1.2 files are Unicode text, and every
// string of the spec ends up in JSON (configs, experiment_state.json, params.json), which
// nlohmann::json refuses to dump with invalid UTF-8 in it.
size_t FirstInvalidUtf8(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  auto cont = [&](size_t i, unsigned char lo = 0x80, unsigned char hi = 0xbf) {
    return i < n && p[i] >= lo && p[i] <= hi;
  };
  for (size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    size_t len = 0;
    if (c < 0x80) {
      len = 1;
    } else if (c >= 0xc2 && c <= 0xdf) {
      len = cont(i + 1) ? 2 : 0;
    } else if (c >= 0xe0 && c <= 0xef) {
      const unsigned char lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
      len = cont(i + 1, lo, hi) && cont(i + 2) ? 3 : 0;
    } else if (c >= 0xf0 && c <= 0xf4) {
      const unsigned char lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
      len = cont(i + 1, lo, hi) && cont(i + 2) && cont(i + 3) ? 4 : 0;
    }
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

// The offset of the first C0 control character other than tab, LF and CR (or DEL), or npos.
// YAML 1.2's c-printable excludes them, and yaml-cpp 0.7 loops for minutes on a NUL
// (fuzz/findings/spec-timeout-yaml-cpp), so they are refused before yaml-cpp reads the file.
size_t FirstControlCharacter(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) return i;
  }
  return std::string_view::npos;
}

// The event-level walk of a YAML stream that replaces yaml-cpp's LoadAll: yaml-cpp 0.7's LoadAll
// loops forever, growing memory, when a document starts with a token SingleDocParser::HandleNode
// does not consume, such as a ',' outside a flow collection (jbeder/yaml-cpp#1040, fixed upstream
// by #1319 after 0.8.0; fuzz/findings/spec-timeout-yaml-cpp-flow-entry). A document that starts at
// the mark where the previous one started consumed no token, and is that case.
class DocumentWalk final : public YAML::EventHandler {
 public:
  /// The mark of the root node of the first document after the first whose root is not null,
  /// or nullopt. Throws YAML::ParserException on a syntax error anywhere in the stream,
  /// including a token that starts no node ("unexpected ','").
  static std::optional<YAML::Mark> SecondDocument(const std::string& text) {
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentWalk walk;
    for (int index = 0; parser.HandleNextDocument(walk); ++index) {
      if (index > 0 && walk.start_.pos == walk.previous_start_.pos) {
        const size_t pos = std::min(size_t(std::max(0, walk.start_.pos)), text.size() - 1);
        throw YAML::ParserException(walk.start_, fmt::format("unexpected '{}'", text[pos]));
      }
      if (index > 0 && walk.root_is_value_) return walk.root_;
    }
    return std::nullopt;
  }

  void OnDocumentStart(const YAML::Mark& mark) override {
    previous_start_ = start_;
    start_ = mark;
    root_pending_ = true;
    root_is_value_ = false;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark, false); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark, true); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    Node(mark, true);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Node(mark, true);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Node(mark, true);
  }
  void OnMapEnd() override {}

 private:
  void Node(const YAML::Mark& mark, bool is_value) {
    if (!root_pending_) return;
    root_pending_ = false;
    root_ = mark;
    root_is_value_ = is_value;
  }

  YAML::Mark start_ = YAML::Mark::null_mark();
  YAML::Mark previous_start_ = YAML::Mark::null_mark();
  YAML::Mark root_ = YAML::Mark::null_mark();
  bool root_pending_ = false;
  bool root_is_value_ = false;
};

}  // namespace

bool IsIdentifier(const std::string& s) {
  static const std::regex kIdentifier("[A-Za-z_][A-Za-z0-9_]*");
  return std::regex_match(s, kIdentifier);
}

std::string NormalizeDir(const fs::path& dir) {
  std::error_code ec;
  fs::path abs = dir.is_absolute() ? dir : fs::absolute(dir, ec);
  if (ec) abs = dir;
  abs = abs.lexically_normal();
  if (!abs.has_filename() && abs.has_parent_path() && abs != abs.root_path()) {
    abs = abs.parent_path();
  }
  return abs.string();
}

Result<ExperimentSpec> SpecParser::Parse(const std::string& text, const std::string& source) {
  const size_t invalid = FirstInvalidUtf8(text);
  const size_t control = FirstControlCharacter(text);
  if (const size_t bad = std::min(invalid, control); bad != std::string_view::npos) {
    const size_t line_start = text.rfind('\n', bad == 0 ? 0 : bad - 1);
    const size_t column = line_start == std::string::npos || bad == 0 ? bad + 1 : bad - line_start;
    const int line = 1 + int(std::count(text.begin(), text.begin() + bad, '\n'));
    const auto byte = static_cast<unsigned char>(text[bad]);
    return r_.Error(line, "",
                    bad == invalid
                        ? fmt::format("not UTF-8 text: byte 0x{:02x} at column {} (an experiment "
                                      "file is UTF-8)",
                                      byte, column)
                        : fmt::format("control character 0x{:02x} at column {} (YAML allows "
                                      "only tab, LF and CR)",
                                      byte, column));
  }
  try {
    if (std::optional<YAML::Mark> second = DocumentWalk::SecondDocument(text)) {
      return r_.Error(second->line + 1, "", "expected one YAML document, found another one");
    }
    if (Status st = ParseRoot(YAML::Load(text)); !st.ok()) return st;
  } catch (const YAML::ParserException& e) {
    return r_.Error(std::max(1, e.mark.line + 1), "", "YAML syntax error: " + e.msg);
  } catch (const YAML::Exception& e) {
    return r_.Error(std::max(1, e.mark.line + 1), "", "YAML error: " + e.msg);
  } catch (const std::exception& e) {
    return Status::Internal(
        fmt::format("{}: unexpected error while parsing: {}", source, e.what()));
  }
  WorkingDirSpec& wd = spec_.working_dir;
  wd.source_name = source;
  if (!given_.contains("working_dir")) {
    wd.path = base_dir_;
    wd.shipped = !spec_.trainable.command.empty();
  }
  spec_.trainable.working_dir = wd.path;
  if (spec_.results_dir.empty()) spec_.results_dir = NormalizeDir(fs::path(base_dir_) / "results");
  spec_.source_yaml = text;
  spec_.source_path = source;
  spec_.base_dir = base_dir_;
  return std::move(spec_);
}

Status SpecParser::ParseRoot(const YAML::Node& root) {
  if (!root.IsDefined() || root.IsNull()) {
    return r_.Error(1, "",
                    "the experiment file is empty; expected a map with 'name' and "
                    "'trainable'");
  }
  if (!root.IsMap()) {
    return r_.Error(root, "",
                    "expected a map of experiment fields, got " + YamlReader::Describe(root));
  }
  Result<std::vector<MapEntry>> entries = r_.Entries(root, "", kTopFields);
  if (!entries.ok()) return entries.status();
  for (const MapEntry& e : *entries) {
    given_[e.key] = e.key_node;
    if (Status st = ParseField(e); !st.ok()) return st;
  }
  return CheckAcrossFields(root);
}

Status SpecParser::ParseField(const MapEntry& e) {
  const std::string& k = e.key;
  if (k == "name") return ParseName(e.value);
  if (k == "trainable") return ParseTrainable(e.value);
  if (k == "param_space") return ParseParamSpace(e.value);
  if (k == "working_dir") return ParseWorkingDir(e);
  if (k == "num_samples") {
    Result<int64_t> n = r_.Int(e.value, k);
    if (!n.ok()) return n.status();
    if (*n < 1 && *n != -1) {
      return r_.Error(e.value, k, fmt::format("must be >= 1, or -1 for unbounded, got {}", *n));
    }
    spec_.num_samples = *n;
    return Status::Ok();
  }
  if (k == "seed") {
    Result<uint64_t> seed = r_.NonNegativeInt(e.value, k);
    if (!seed.ok()) return seed.status();
    spec_.seed = *seed;
    return Status::Ok();
  }
  if (k == "metric" || k == "mode") return ParseObjectiveField(e);
  if (k == "stop") return ParseStop(e.value);
  if (k == "resources_per_trial") return ParseResources(e.value);
  if (k == "max_concurrent_trials") {
    return ParseInt(e, 0, &spec_.max_concurrent_trials, Rule(k));
  }
  if (k == "max_failures") {
    return ParseInt(e, -1, &spec_.max_failures, Rule(k));
  }
  if (k == "weight") {
    Result<double> weight = r_.Number(e.value, k);
    if (!weight.ok()) return weight.status();
    if (!(*weight > 0) || !std::isfinite(*weight)) {
      return r_.Error(
          e.value, k,
          "must be a number > 0 (the experiment's fair-share weight), got " + e.value.Scalar());
    }
    spec_.weight = *weight;
    return Status::Ok();
  }
  if (k == "report_timeout_s") {
    Result<double> seconds = r_.Number(e.value, k);
    if (!seconds.ok()) return seconds.status();
    if (*seconds < 0)
      return r_.Error(e.value, k, "must be >= 0 seconds (0 = off), got " + e.value.Scalar());
    spec_.report_timeout_s = *seconds;
    return Status::Ok();
  }
  if (k == "max_worker_losses") {
    return ParseInt(e, -1, &spec_.max_worker_losses, Rule(k));
  }
  if (k == "results_dir") {
    Result<std::string> dir = r_.String(e.value, k);
    if (!dir.ok()) return dir.status();
    fs::path p(*dir);
    spec_.results_dir = NormalizeDir(p.is_absolute() ? p : fs::path(base_dir_) / p);
    spec_.results_dir_beside_file = !p.is_absolute();
    return Status::Ok();
  }
  if (k == "fail_fast") {
    if (e.value.IsScalar() && e.value.Scalar() == FailFastName(FailFast::kRaise)) {
      spec_.fail_fast = FailFast::kRaise;
      return Status::Ok();
    }
    Result<bool> b = r_.Bool(e.value, k);
    if (!b.ok()) return r_.Error(e.value, k, "expected true, false or raise");
    spec_.fail_fast = *b ? FailFast::kStopExperiment : FailFast::kOff;
    return Status::Ok();
  }
  if (k == "queue_trials" || k == "checkpoint_at_end" || k == "preemptible") {
    Result<bool> b = r_.Bool(e.value, k);
    if (!b.ok()) return b.status();
    (k == "queue_trials"        ? spec_.queue_trials
     : k == "checkpoint_at_end" ? spec_.checkpoint_at_end
                                : spec_.preemptible) = *b;
    return Status::Ok();
  }
  if (k == "checkpoint_freq") {
    return ParseInt(e, 0, &spec_.checkpoint_freq, Rule(k));
  }
  if (k == "keep_checkpoints_num") {
    return ParseInt(e, 0, &spec_.keep_checkpoints_num, Rule(k));
  }
  if (k == "checkpoint_score_attr" || k == "restore_from") {
    Result<std::string> text = r_.String(e.value, k);
    if (!text.ok()) return text.status();
    if (text->empty()) return r_.Error(e.value, k, "must not be empty");
    (k == "restore_from" ? spec_.restore_from : spec_.checkpoint_score_attr) = *text;
    return Status::Ok();
  }
  if (k == "checkpoint_failure") {
    Result<std::string> word = r_.String(e.value, k);
    if (!word.ok()) return word.status();
    Result<CheckpointFailureMode> mode = ParseCheckpointFailureMode(*word);
    if (!mode.ok()) {
      const auto meant = NearMiss(*word, {"continue", "pause", "fail"});
      return r_.Error(e.value, k,
                      fmt::format("expected continue, pause or fail, got '{}'{}", *word,
                                  meant ? "; did you mean " + *meant + "?" : ""));
    }
    spec_.checkpoint_failure = *mode;
    return Status::Ok();
  }
  if (k == "scheduler") return ParseScheduler(e.value);
  if (k == "search") return ParseSearch(e.value);
  if (k == "driver") return ParseDriver(e.value);
  if (k == "retention") return ParseRetention(e.value);
  return r_.Error(e.key_node, "", "unhandled field '" + k + "'");  // kTopFields is out of sync
}

Status SpecParser::ParseInt(const MapEntry& e, int64_t min, int64_t* out, std::string_view rule) {
  Result<int64_t> n = r_.Int(e.value, e.key);
  if (!n.ok()) return n.status();
  if (*n < min) return r_.Error(e.value, e.key, fmt::format("{}, got {}", rule, *n));
  *out = *n;
  return Status::Ok();
}

Status SpecParser::ParseName(const YAML::Node& value) {
  Result<std::string> name = r_.String(value, "name");
  if (!name.ok()) return name.status();
  static const std::regex kName("[A-Za-z0-9_.-]+");
  if (!std::regex_match(*name, kName) || *name == "." || *name == "..") {
    return r_.Error(
        value, "name",
        "must match [A-Za-z0-9_.-]+ (it names the results folder), got '" + *name + "'");
  }
  spec_.name = *name;
  return Status::Ok();
}

Status SpecParser::ParseStop(const YAML::Node& value) {
  Result<std::vector<MapEntry>> entries = r_.Entries(value, "stop");
  if (!entries.ok()) return entries.status();
  for (const MapEntry& e : *entries) {
    const std::string field = "stop." + e.key;
    Result<double> number = r_.Number(e.value, field);
    if (!number.ok()) return number.status();
    if (e.key == "time_budget_s") {
      if (*number <= 0) {
        return r_.Error(e.value, field, "must be > 0 seconds, got " + e.value.Scalar());
      }
      spec_.stop.time_budget_s = *number;
    } else {
      spec_.stop.thresholds[e.key] = *number;
    }
  }
  return Status::Ok();
}

Status SpecParser::ParseResources(const YAML::Node& value) {
  Result<std::vector<MapEntry>> entries = r_.Entries(value, "resources_per_trial");
  if (!entries.ok()) return entries.status();
  std::map<std::string, double> amounts;
  for (const MapEntry& e : *entries) {
    const std::string field = "resources_per_trial." + e.key;
    if (!IsIdentifier(e.key)) {
      return r_.Error(e.key_node, field,
                      "resource names are cpu, gpu, memory or a custom [A-Za-z_][A-Za-z0-9_]*");
    }
    if (e.key == "CPU" || e.key == "GPU") {
      return r_.Error(e.key_node, field,
                      fmt::format("resource names are lower case; did you mean '{}'?",
                                  e.key == "CPU" ? "cpu" : "gpu"));
    }
    Result<double> amount = r_.Number(e.value, field);
    if (!amount.ok()) return amount.status();
    if (*amount < 0) return r_.Error(e.value, field, "must be >= 0, got " + e.value.Scalar());
    amounts[e.key] = *amount;
  }
  amounts.try_emplace("cpu", 1.0);  // as Ray: cpu defaults to 1 when not given
  Result<Resources> checked = Resources::FromAmounts(amounts);
  if (!checked.ok()) {
    return r_.Error(value, "resources_per_trial", checked.status().message());
  }
  spec_.resources_per_trial = std::move(amounts);
  return Status::Ok();
}

Status SpecParser::ParseDriver(const YAML::Node& value) {
  if (!value.IsMap()) {
    return r_.Error(value, "driver",
                    "expected a map with 'endpoint' (the Python driver's ROUTER), got " +
                        YamlReader::Describe(value));
  }
  Result<std::vector<MapEntry>> entries = r_.Entries(value, "driver", kDriverFields);
  if (!entries.ok()) return entries.status();
  DriverSpec d;
  bool has_endpoint = false;
  for (const MapEntry& e : *entries) {
    const std::string field = "driver." + e.key;
    if (e.key == "endpoint") {
      Result<std::string> endpoint = r_.String(e.value, field);
      if (!endpoint.ok()) return endpoint.status();
      if (!endpoint->starts_with("tcp://") && !endpoint->starts_with("ipc://") &&
          !endpoint->starts_with("inproc://")) {
        return r_.Error(
            e.value, field,
            fmt::format("'{}' is not a ZeroMQ endpoint (tcp://host:port, ipc://path)", *endpoint));
      }
      d.endpoint = *endpoint;
      has_endpoint = true;
    } else if (e.key == "server_key") {
      Result<std::string> key = r_.String(e.value, field);  // refuses "" itself
      if (!key.ok()) return key.status();
      d.server_key = *key;
    } else if (e.key == "on_result") {
      Result<bool> b = r_.Bool(e.value, field);
      if (!b.ok()) return b.status();
      d.on_result = *b;
    } else {
      Result<double> seconds = r_.Number(e.value, field);
      if (!seconds.ok()) return seconds.status();
      if (*seconds <= 0) {
        return r_.Error(e.value, field, "must be > 0 seconds, got " + e.value.Scalar());
      }
      d.timeout_s = *seconds;
    }
  }
  if (!has_endpoint) {
    return r_.Error(value, "driver.endpoint",
                    "required: the driver's ROUTER, e.g. tcp://127.0.0.1:5700");
  }
  if (!d.server_key.empty() && !d.endpoint.starts_with("tcp://")) {
    return r_.Error(value["server_key"], "driver.server_key",
                    fmt::format("only a tcp:// endpoint uses CURVE; the driver at {} is reached "
                                "without it (leave server_key out)",
                                d.endpoint));
  }
  spec_.driver = std::move(d);
  return Status::Ok();
}

Status SpecParser::CheckAcrossFields(const YAML::Node& root) {
  for (const char* required : {"name", "trainable"}) {
    if (!given_.contains(required)) return r_.Error(root, required, "required field is missing");
  }
  if (Status st = CheckObjectives(); !st.ok()) return st;
  if (given_.contains("scheduler") && spec_.objectives.size() >= 2) {
    // Ray Tune's rule: the trial scheduler compares its own metric, one of the objectives.
    auto config =
        SchedulerConfigForObjectives(spec_.scheduler, spec_.scheduler_config, spec_.objectives);
    if (!config.ok()) return SchedulerError(config.status().message());
    spec_.scheduler_config = std::move(config).value();
  }
  if (given_.contains("scheduler")) {
    // The trial scheduler's own checks; its errors read "<param>: <why>".
    auto made =
        MakeTrialScheduler(spec_.scheduler, spec_.scheduler_config, spec_.metric, spec_.mode);
    if (!made.ok()) return SchedulerError(made.status().message());
  }
  if (const auto paths = VariantGenerator::SampleFromPaths(spec_.param_space); !paths.empty()) {
    const std::string path = fmt::format("{}", fmt::join(paths.front(), "."));
    if (spec_.search != "external" && spec_.search != "random") {
      return ParamSpaceError(fmt::format(
          "{}: sample_from is computed by the Python driver, for search: random (the scheduler "
          "asks the driver) or search: {{type: external}}; search: {} cannot sample it",
          path, spec_.search));
    }
    if (spec_.search == "random" && !spec_.driver) {
      return ParamSpaceError(fmt::format(
          "{}: sample_from needs the Python driver that computes it: a 'driver' section with its "
          "endpoint (the tunebus package's Tuner writes it)",
          path));
    }
  }
  if (spec_.scheduler == "pbt" &&
      PopulationBasedTraining::HasDriverMutations(
          spec_.scheduler_config.value("hyperparam_mutations", nlohmann::json::object())) &&
      !(spec_.driver && spec_.driver->on_result)) {
    const auto key = scheduler_keys_.find("hyperparam_mutations");
    return r_.Error(key != scheduler_keys_.end() ? key->second : scheduler_node_,
                    "scheduler.hyperparam_mutations",
                    "a {driver: {}} mutation needs the Python driver: a 'driver' section with "
                    "on_result: true (the driver draws its values with every result)");
  }
  if (spec_.num_samples == -1 && !spec_.stop.time_budget_s && spec_.stop.thresholds.empty()) {
    return r_.Error(given_["num_samples"], "num_samples",
                    "-1 (unbounded) needs stop.time_budget_s or a stop threshold");
  }
  if (given_.contains("search")) return CheckSearch();
  return Status::Ok();
}

// "<param>: <why>" from the trial scheduler's checks, at the line of the parameter's key (of the
// `scheduler:` value when the file does not give that parameter).
Status SpecParser::SchedulerError(const std::string& message) const {
  const auto colon = message.find(": ");
  const std::string param = colon == std::string::npos ? "" : message.substr(0, colon);
  const std::string root_param = param.substr(0, param.find('.'));
  auto key = scheduler_keys_.find(root_param);
  const YAML::Node& where = key != scheduler_keys_.end() ? key->second : scheduler_node_;
  return r_.Error(where, param.empty() ? "scheduler" : "scheduler." + param,
                  colon == std::string::npos ? message : message.substr(colon + 2));
}

}  // namespace tunebus::spec_internal
