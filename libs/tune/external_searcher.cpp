#include "libs/tune/external_searcher.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "libs/core/version.hpp"
#include "libs/tune/searcher_params.hpp"

namespace tunebus {

using nlohmann::json;

namespace {

// Events per `tell`: a replay is many requests of bounded size and time (each `suggested` event
// costs the remote one ask of its sampler).
constexpr size_t kTellBatch = 64;
// After the remote answered not_now, it is asked again once it learnt something new (a `tell`
// with an end or an evaluated point was answered) or after this many seconds.
constexpr double kNotNowRetryS = 1.0;

}  // namespace

Result<ExternalOptions> ExternalOptions::Parse(const json& params) {
  SearcherParams p(params, "external");
  if (Status s = p.OnlyKnown({"endpoint", "command", "server_key", "timeout_s", "backoff_initial_s",
                              "backoff_max_s", "options"});
      !s.ok()) {
    return s;
  }
  ExternalOptions o;
  auto endpoint = p.String("endpoint", "");
  auto server_key = p.String("server_key", "");
  auto timeout = p.Number("timeout_s", o.timeout_s, 0, /*exclusive=*/true);
  auto initial = p.Number("backoff_initial_s", o.backoff_initial_s, 0, /*exclusive=*/true);
  auto max = p.Number("backoff_max_s", o.backoff_max_s, 0, /*exclusive=*/true);
  for (const Status& s :
       {endpoint.status(), server_key.status(), timeout.status(), initial.status(), max.status()}) {
    if (!s.ok()) return s;
  }
  if (auto it = params.find("command"); it != params.end()) {
    if (!it->is_array() || it->empty()) {
      return SearcherParams::Error(
          "command", fmt::format("must be a non-empty list of strings (the program and its "
                                 "arguments, e.g. [/usr/bin/python3, searcher.py]), got {}",
                                 it->dump()));
    }
    for (size_t i = 0; i < it->size(); ++i) {
      const json& arg = (*it)[i];
      if (!arg.is_string() || (i == 0 && arg.get<std::string>().empty())) {
        return SearcherParams::Error(
            fmt::format("command[{}]", i).c_str(),
            fmt::format("must be a {}string, got {}", i == 0 ? "non-empty " : "", arg.dump()));
      }
      o.command.push_back(arg.get<std::string>());
    }
  }
  if (endpoint->empty() && o.command.empty()) {
    return SearcherParams::Error(
        "endpoint",
        "search: external needs the searcher's endpoint (e.g. tcp://127.0.0.1:5600), or a "
        "command that the scheduler starts");
  }
  if (!endpoint->empty()) {
    const bool tcp = endpoint->rfind("tcp://", 0) == 0;
    const bool ipc = endpoint->rfind("ipc://", 0) == 0;
    if (!tcp && !ipc && endpoint->rfind("inproc://", 0) != 0) {
      return SearcherParams::Error(
          "endpoint",
          fmt::format("'{}' is not a ZeroMQ endpoint (tcp://host:port, ipc://path)", *endpoint));
    }
    if (tcp && endpoint->ends_with(":*")) {
      return SearcherParams::Error(
          "endpoint", fmt::format("'{}' has no port to connect to; name the port{}", *endpoint,
                                  o.command.empty() ? "" : ", or leave endpoint out"));
    }
    if (!o.command.empty() && !tcp && !ipc) {
      return SearcherParams::Error(
          "endpoint", fmt::format("'{}': a searcher the scheduler starts is another process: "
                                  "tcp://host:port or ipc://path (or leave endpoint out)",
                                  *endpoint));
    }
  }
  if (params.contains("server_key")) {
    if (server_key->empty()) {
      return SearcherParams::Error(
          "server_key",
          "must be the searcher's CURVE public key (40 Z85 characters) or the path of its public "
          "key file (tunectl keygen NAME --role searcher), got an empty string");
    }
    if (endpoint->rfind("tcp://", 0) != 0) {
      return SearcherParams::Error(
          "server_key",
          fmt::format("only a tcp:// endpoint uses CURVE; the searcher at {} is reached without "
                      "it (leave server_key out)",
                      endpoint->empty() ? "the ipc:// endpoint the scheduler picks" : *endpoint));
    }
  }
  if (*max < *initial) {
    return SearcherParams::Error(
        "backoff_max_s", fmt::format("must be >= backoff_initial_s ({}), got {}", *initial, *max));
  }
  if (auto it = params.find("options"); it != params.end()) {
    if (!it->is_object()) {
      return SearcherParams::Error(
          "options", fmt::format("must be a map (sent to the searcher as is), got {}", it->dump()));
    }
    o.options = *it;
  }
  o.endpoint = *endpoint;
  o.server_key = *server_key;
  o.timeout_s = *timeout;
  o.backoff_initial_s = *initial;
  o.backoff_max_s = *max;
  return o;
}

SearcherTarget ExternalOptions::Target() const {
  return {.endpoint = endpoint,
          .command = command,
          .server_key = server_key,
          .backoff_initial_s = backoff_initial_s,
          .backoff_max_s = backoff_max_s};
}

ExternalSearcher::ExternalSearcher(ExternalOptions options, int64_t num_samples, uint64_t seed,
                                   std::string experiment, uint64_t session_nonce,
                                   std::unique_ptr<SearcherLink> link)
    : options_(std::move(options)),
      num_samples_(num_samples),
      seed_(seed),
      experiment_(std::move(experiment)),
      session_nonce_(session_nonce),
      state_(link ? LinkState::kIdle : LinkState::kOffline),
      link_(std::move(link)) {}

ExternalSearcher::~ExternalSearcher() = default;

const char* ExternalSearcher::LinkStateName(LinkState s) {
  switch (s) {
    case LinkState::kOffline:
      return "offline";
    case LinkState::kIdle:
      return "idle";
    case LinkState::kConnecting:
      return "connecting";
    case LinkState::kReplaying:
      return "replaying";
    case LinkState::kReady:
      return "ready";
    case LinkState::kUnavailable:
      return "unavailable";
  }
  return "?";
}

Status ExternalSearcher::SetSearchProperties(const std::string& metric, const std::string& mode,
                                             const json& param_space) {
  if (Status s = SearcherParams::RequireMetricAndMode("external", metric, mode); !s.ok()) return s;
  auto space = SearchSpace::Create(param_space, "external");
  if (!space.ok()) return space.status();
  metric_ = metric;
  mode_ = mode;
  param_space_ = param_space;
  space_ = std::move(*space);
  return Status::Ok();
}

// ---- the runner's calls -------------------------------------------------------------------

Suggestion ExternalSearcher::Suggest(const std::string& trial_id) {
  if (auto it = configs_.find(trial_id); it != configs_.end()) {
    return Suggestion::Config(it->second, space_ ? space_->Tag(it->second) : "");
  }
  if (finished_ || (num_samples_ >= 0 && suggested_ >= num_samples_)) {
    return Suggestion::Finished();
  }
  if (answer_ && answer_->trial_id != trial_id) answer_.reset();  // the runner moved on
  if (answer_) {
    Answer a = std::move(*answer_);
    answer_.reset();
    wanted_.clear();
    switch (a.kind) {
      case Suggestion::Kind::kConfig: {
        // The remote knows its own suggestion: it is not told it again unless a replay does.
        const bool caught_up = sent_ == events_.size();
        Record({{"event", "suggested"},
                {"trial_id", trial_id},
                {"params", a.params},
                {"config", a.config}});
        if (caught_up) sent_ = events_.size();
        return Suggestion::Config(a.config, space_->Tag(a.config));
      }
      case Suggestion::Kind::kFinished:
        Record({{"event", "finished"}});
        return Suggestion::Finished();
      case Suggestion::Kind::kNotNow:
        not_now_until_ = link_ ? link_->NowS() + kNotNowRetryS : 0;
        if (link_) link_->After(kNotNowRetryS, [this] { Pump(); });
        return Suggestion::NotNow();
    }
  }
  wanted_ = trial_id;
  Pump();
  return Suggestion::NotNow();
}

Status ExternalSearcher::AddEvaluatedPoint(const json& config, double value) {
  auto params = ParamsOf(config);
  if (!params.ok()) return params.status();
  Record({{"event", "evaluated"}, {"params", *params}, {"config", config}, {"value", value}});
  Pump();
  return Status::Ok();
}

void ExternalSearcher::OnTrialResult(const std::string& trial_id, const TrainingResult& result) {
  if (!configs_.contains(trial_id) || ended_.contains(trial_id)) return;
  running_results_[trial_id].push_back(result.ToJson());
  Pump();
}

void ExternalSearcher::OnTrialComplete(const std::string& trial_id,
                                       const TrainingResult* last_result, bool error) {
  if (!configs_.contains(trial_id) || ended_.contains(trial_id)) return;
  running_results_.erase(trial_id);
  results_told_.erase(trial_id);
  Record({{"event", "completed"},
          {"trial_id", trial_id},
          {"result", last_result != nullptr ? last_result->ToJson() : json(nullptr)},
          {"error", error}});
  Pump();
}

json ExternalSearcher::Describe() const {
  json d = {
      {"searcher", name()},      {"endpoint", options_.endpoint}, {"state", LinkStateName(state_)},
      {"suggested", suggested_}, {"total", num_samples_},         {"observations", observations_}};
  if (remote_.is_object()) {
    // What the searcher said of itself in hello_ok, whatever JSON type it sent
    // (fuzz/findings/searcher_reply-hello-version-not-a-string: a number threw type_error 302).
    const auto text = [&](const char* key, const char* fallback) {
      auto it = remote_.find(key);
      if (it == remote_.end()) return std::string(fallback);
      return it->is_string() ? it->get<std::string>() : it->dump();
    };
    d["remote"] = fmt::format("{} {}", text("searcher", "?"), text("version", ""));
  }
  if (state_ == LinkState::kUnavailable) {
    d["last_error"] = last_error_;
    d["retries"] = retries_;
    d["retry_in_s"] = std::round(std::max(0.0, retry_at_ - (link_ ? link_->NowS() : 0)) * 10) / 10;
  }
  if (sessions_ok_ > 1) d["sessions"] = sessions_ok_;
  if (link_) d.update(link_->Describe());
  return d;
}

// ---- journaled state ----------------------------------------------------------------------

Status ExternalSearcher::Apply(const json& event) {
  const std::string kind = event.is_object() ? event.value("event", "") : "";
  if (kind == "suggested") {
    const std::string id = event.value("trial_id", "");
    if (id.empty() || !event.contains("config")) {
      return Status::Corruption("external: a suggested event without trial_id or config");
    }
    if (configs_.emplace(id, event["config"]).second) ++suggested_;
    events_.push_back(event);
    return Status::Ok();
  }
  if (kind == "completed") {
    const std::string id = event.value("trial_id", "");
    if (!ended_.insert(id).second) return Status::Ok();
    const json& result = event.contains("result") ? event["result"] : json(nullptr);
    if (!event.value("error", false) && result.is_object() && result.contains(metric_) &&
        result[metric_].is_number()) {
      ++observations_;
    }
    events_.push_back(event);
    return Status::Ok();
  }
  if (kind == "evaluated") {
    ++observations_;
    events_.push_back(event);
    return Status::Ok();
  }
  if (kind == "finished") {
    finished_ = true;
    return Status::Ok();
  }
  return Status::Corruption("external: unknown searcher event " + event.dump());
}

json ExternalSearcher::SaveState() const { return {{"events", events_}, {"finished", finished_}}; }

Status ExternalSearcher::RestoreState(const json& state) {
  events_.clear();
  configs_.clear();
  ended_.clear();
  suggested_ = observations_ = 0;
  finished_ = false;
  ClearDelta();
  // A new session tells the remote the restored log from its start.
  if (state_ != LinkState::kOffline) state_ = LinkState::kIdle;
  sent_ = 0;
  answer_.reset();
  running_results_.clear();
  results_told_.clear();
  if (state.is_null()) return Status::Ok();
  if (!state.is_object() || !state.contains("events") || !state["events"].is_array()) {
    return Status::InvalidArgument("external: a state is {events: [...], finished}");
  }
  for (const json& event : state["events"]) {
    if (Status s = Apply(event); !s.ok()) return Status::InvalidArgument(s.message());
  }
  finished_ = state.value("finished", false);
  return Status::Ok();
}

// ---- the protocol -------------------------------------------------------------------------

void ExternalSearcher::Pump() {
  if (!link_ || in_flight_ || !space_) return;
  switch (state_) {
    case LinkState::kOffline:
    case LinkState::kConnecting:
      return;
    case LinkState::kUnavailable:
      if (link_->NowS() < retry_at_) return;
      [[fallthrough]];
    case LinkState::kIdle:
      SendHello();
      return;
    case LinkState::kReplaying:
    case LinkState::kReady:
      break;
  }
  // The journaled events first (an ask sees every end), then, once per session, the results
  // of the running trials; then the ask, then new results (which must not delay asks while
  // trials report).
  if (sent_ < events_.size() || (state_ == LinkState::kReplaying && HasUntoldResults())) {
    SendTell();
    return;
  }
  state_ = LinkState::kReady;
  if (!wanted_.empty() && !answer_ && link_->NowS() >= not_now_until_) {
    SendAsk();
  } else if (HasUntoldResults()) {
    SendTell();
  }
}

void ExternalSearcher::SendHello() {
  session_ = fmt::format("{:016x}-{}", session_nonce_, ++sessions_);
  state_ = LinkState::kConnecting;
  in_flight_ = true;
  json hello = {{"type", "hello"},
                {"session", session_},
                {"experiment", experiment_},
                {"metric", metric_},
                {"mode", mode_},
                {"seed", seed_},
                {"num_samples", num_samples_},
                {"replay", events_.size()},
                {"space", SpaceMessage()},
                {"param_space", param_space_},
                {"options", options_.options}};
  hello["version"] = Version();  // the scheduler's (since v1.12)
  link_->Request(std::move(hello), options_.timeout_s,
                 [this](Result<json> reply) { OnHello(std::move(reply)); });
}

void ExternalSearcher::SendTell() {
  json events = json::array();
  size_t from_log = 0;
  bool informative = false;
  while (sent_ + from_log < events_.size() && from_log < kTellBatch) {
    const json& e = events_[sent_ + from_log];
    informative = informative || e.value("event", "") != "suggested";
    events.push_back(e);
    ++from_log;
  }
  std::map<std::string, size_t> told;  // trial -> its results held once this tell is answered
  if (from_log == 0) {  // the log is told: the results the remote lacks, oldest first per trial
    for (const auto& [trial_id, results] : running_results_) {
      size_t next = results_told_[trial_id];
      while (next < results.size() && events.size() < kTellBatch) {
        events.push_back(
            {{"event", "result"}, {"trial_id", trial_id}, {"result", results[next++]}});
      }
      told[trial_id] = next;
      if (events.size() == kTellBatch) break;
    }
  }
  in_flight_ = true;
  link_->Request({{"type", "tell"}, {"session", session_}, {"events", std::move(events)}},
                 options_.timeout_s,
                 [this, from_log, informative, told = std::move(told)](Result<json> reply) mutable {
                   OnTell(std::move(reply), from_log, informative, std::move(told));
                 });
}

bool ExternalSearcher::HasUntoldResults() const {
  for (const auto& [trial_id, results] : running_results_) {
    auto it = results_told_.find(trial_id);
    if (results.size() > (it == results_told_.end() ? 0 : it->second)) return true;
  }
  return false;
}

void ExternalSearcher::SendAsk() {
  in_flight_ = true;
  const std::string trial_id = wanted_;
  link_->Request({{"type", "ask"}, {"session", session_}, {"trial_id", trial_id}},
                 options_.timeout_s,
                 [this, trial_id](Result<json> reply) { OnAsk(std::move(reply), trial_id); });
}

Result<json> ExternalSearcher::Expect(Result<json> reply, const char* type) {
  return ExpectReply(std::move(reply), type, "searcher");
}

void ExternalSearcher::OnHello(Result<json> reply) {
  in_flight_ = false;
  reply = Expect(std::move(reply), "hello_ok");
  if (!reply.ok()) return Fail(reply.status(), /*was_hello=*/true);
  remote_ = *reply;
  ++sessions_ok_;
  retries_ = 0;
  last_error_.clear();
  state_ = LinkState::kReplaying;
  sent_ = 0;
  answer_.reset();
  results_told_.clear();  // a new session holds none: running trials' results are told again
  not_now_until_ = 0;
  Pump();
}

void ExternalSearcher::OnTell(Result<json> reply, size_t events, bool informative,
                              std::map<std::string, size_t> results) {
  in_flight_ = false;
  reply = Expect(std::move(reply), "tell_ok");
  if (!reply.ok()) return Fail(reply.status(), /*was_hello=*/false);
  lost_sessions_ = 0;
  sent_ = std::min(sent_ + events, events_.size());
  for (const auto& [trial_id, count] : results) {
    // A trial that ended meanwhile holds no results any more.
    if (running_results_.contains(trial_id)) {
      size_t& told = results_told_[trial_id];
      told = std::max(told, count);
    }
  }
  if (informative) not_now_until_ = 0;
  Pump();
}

void ExternalSearcher::OnAsk(Result<json> reply, const std::string& trial_id) {
  in_flight_ = false;
  reply = Expect(std::move(reply), "suggestion");
  if (reply.ok() && reply->value("trial_id", "") != trial_id) {
    reply = Status::InvalidArgument(fmt::format("the searcher answered the ask for {} for '{}'",
                                                trial_id, reply->value("trial_id", "")));
  }
  if (!reply.ok()) return Fail(reply.status(), /*was_hello=*/false);
  lost_sessions_ = 0;
  Answer a;
  a.trial_id = trial_id;
  const std::string status = reply->value("status", "");
  if (status == "config") {
    auto config = ConfigOf(reply->contains("params") ? (*reply)["params"] : json(nullptr));
    if (!config.ok()) {
      return Fail(Status::InvalidArgument(fmt::format("the searcher's config for {}: {}", trial_id,
                                                      config.status().message())),
                  false);
    }
    auto params = ParamsOf(*config);
    a.kind = Suggestion::Kind::kConfig;
    a.params = params.ok() ? *params : json::object();
    a.config = std::move(*config);
  } else if (status == "not_now") {
    a.kind = Suggestion::Kind::kNotNow;
  } else if (status == "finished") {
    a.kind = Suggestion::Kind::kFinished;
  } else {
    return Fail(
        Status::InvalidArgument(fmt::format(
            "the searcher's suggestion has status '{}' (config, not_now, finished)", status)),
        false);
  }
  if (trial_id == wanted_) answer_ = std::move(a);
  Pump();
}

void ExternalSearcher::Fail(const Status& status, bool was_hello) {
  last_error_ = status.ToString();
  if (status.code() == StatusCode::kFailedPrecondition && !was_hello && ++lost_sessions_ < 3) {
    state_ = LinkState::kIdle;  // the remote lost the session (restarted): hello and replay
    Pump();
    return;
  }
  state_ = LinkState::kUnavailable;
  ++retries_;
  const double delay = std::min(
      options_.backoff_max_s,
      options_.backoff_initial_s * std::ldexp(1.0, int(std::min<int64_t>(retries_ - 1, 30))));
  retry_at_ = link_->NowS() + delay;
  link_->After(delay, [this] { Pump(); });
}

// ---- values ---------------------------------------------------------------------------------

json ExternalSearcher::SpaceMessage() const {
  json dims = json::array();
  for (const SearchDim& dim : space_->dims()) {
    json d = {{"name", dim.name}, {"path", dim.keys}, {"sampler", dim.sampler}};
    switch (dim.kind) {
      case SearchDim::Kind::kCategorical:
        d["type"] = "categorical";
        d["choices"] = dim.choices;
        break;
      case SearchDim::Kind::kAny:  // sample_from: the Python driver draws it
        d["type"] = "any";
        break;
      case SearchDim::Kind::kInt:
        d["type"] = "int";
        d["low"] = int64_t(dim.value_low);
        d["high"] = int64_t(dim.value_high);
        d["step"] = int64_t(dim.quantum);
        d["log"] = dim.log;
        break;
      case SearchDim::Kind::kFloat:
        d["type"] = "float";
        d["low"] = dim.value_low;
        d["high"] = dim.value_high;
        d["step"] = dim.quantum;
        d["log"] = dim.log;
        break;
    }
    dims.push_back(std::move(d));
  }
  return dims;
}

Result<json> ExternalSearcher::ConfigOf(const json& params) const {
  if (!params.is_object()) return Status::InvalidArgument("params must be a map");
  std::vector<double> values(space_->size());
  std::vector<std::pair<size_t, json>> any;  // sample_from dims: taken as they are
  for (size_t d = 0; d < space_->size(); ++d) {
    const SearchDim& dim = space_->dims()[d];
    auto it = params.find(dim.name);
    if (it == params.end()) return Status::InvalidArgument(fmt::format("{} is missing", dim.name));
    if (dim.kind == SearchDim::Kind::kAny) {
      any.emplace_back(d, *it);
      continue;
    }
    if (dim.kind == SearchDim::Kind::kCategorical) {
      auto c = std::find(dim.choices.begin(), dim.choices.end(), *it);
      if (c == dim.choices.end()) {
        return Status::InvalidArgument(fmt::format("{}: {} is not one of its choices {}", dim.name,
                                                   it->dump(), dim.choices.dump()));
      }
      values[d] = double(c - dim.choices.begin());
      continue;
    }
    if (!it->is_number() || !std::isfinite(it->get<double>()) ||
        (dim.log && !(it->get<double>() > 0))) {
      return Status::InvalidArgument(fmt::format("{}: {} is not a {}number", dim.name, it->dump(),
                                                 dim.log ? "positive " : ""));
    }
    values[d] = space_->Snap(d, it->get<double>());
  }
  json config = space_->Config(values.data());
  for (auto& [d, value] : any) space_->SetValue(config, d, std::move(value));
  return config;
}

Result<json> ExternalSearcher::ParamsOf(const json& config) const {
  if (!space_) return Status::FailedPrecondition("external: no search space yet");
  json params = json::object();
  for (size_t d = 0; d < space_->size(); ++d) {
    const SearchDim& dim = space_->dims()[d];
    const json* value = space_->Value(config, d);
    if (value == nullptr) {
      return Status::InvalidArgument(
          fmt::format("the config lacks {} of the param space", dim.name));
    }
    params[dim.name] = *value;
  }
  return params;
}

}  // namespace tunebus
