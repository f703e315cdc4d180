#include "libs/tune/driver_link.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "libs/core/enum_names.hpp"
#include "libs/core/version.hpp"

namespace tunebus {

using nlohmann::json;

json DriverAnswer::ToJson() const {
  return {{"stop_trial", stop_trial},
          {"stop_all", stop_all},
          {"should_checkpoint", should_checkpoint},
          {"samples", samples}};
}

Result<DriverAnswer> DriverAnswer::FromJson(const json& j) {
  if (!j.is_object()) {
    return Status::InvalidArgument("driver_decision: expected a map, got " + j.dump());
  }
  DriverAnswer a;
  const std::pair<const char*, bool*> flags[] = {{"stop_trial", &a.stop_trial},
                                                 {"stop_all", &a.stop_all},
                                                 {"should_checkpoint", &a.should_checkpoint}};
  for (const auto& [flag, field] : flags) {
    auto it = j.find(flag);
    if (it == j.end() || it->is_null()) continue;
    if (!it->is_boolean()) {
      return Status::InvalidArgument(
          fmt::format("driver_decision.{}: expected a bool, got {}", flag, it->dump()));
    }
    *field = it->get<bool>();
  }
  if (auto it = j.find("samples"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) {
      return Status::InvalidArgument(
          "driver_decision.samples: expected a map of mutation key paths to values, got " +
          it->dump());
    }
    a.samples = *it;
  }
  return a;
}

Result<DriverSamples> DriverSamples::FromJson(const json& j, size_t paths) {
  DriverSamples s;
  if (auto it = j.find("error"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) {
      return Status::InvalidArgument("driver_samples.error: expected a string, got " + it->dump());
    }
    s.error = it->get<std::string>();
    return s;
  }
  auto it = j.find("values");
  if (it == j.end() || !it->is_array() || it->size() != paths) {
    return Status::InvalidArgument(
        fmt::format("driver_samples.values: expected a list of {} values, got {}", paths,
                    it == j.end() ? "none" : it->dump()));
  }
  s.values.assign(it->begin(), it->end());
  return s;
}

namespace {

constexpr EnumName<DriverLink::State> kStateNames[] = {
    {DriverLink::State::kIdle, "idle"},
    {DriverLink::State::kConnecting, "connecting"},
    {DriverLink::State::kReady, "ready"},
    {DriverLink::State::kUnavailable, "unavailable"},
};

}  // namespace

const char* DriverLink::StateName(State s) { return NameIn(kStateNames, s); }

DriverLink::DriverLink(DriverOptions options, std::string experiment, std::string metric,
                       std::string mode, uint64_t session_nonce, std::unique_ptr<SearcherLink> link)
    : options_(std::move(options)),
      experiment_(std::move(experiment)),
      metric_(std::move(metric)),
      mode_(std::move(mode)),
      session_nonce_(session_nonce),
      link_(std::move(link)) {}

DriverLink::~DriverLink() = default;

void DriverLink::Ask(const std::string& trial_id, int64_t attempt, int64_t seq, json result) {
  Forget(trial_id);
  queue_.push_back({next_ticket_++, trial_id, attempt, seq, std::move(result)});
  Pump();
}

void DriverLink::Forget(const std::string& trial_id) {
  std::erase_if(queue_, [&](const Held& h) { return !h.is_sample() && h.trial_id == trial_id; });
}

void DriverLink::Sample(const std::string& trial_id, json config, std::vector<KeyPath> paths,
                        SampleCallback done) {
  queue_.push_back({.ticket = next_ticket_++,
                    .trial_id = trial_id,
                    .result = std::move(config),
                    .paths = std::move(paths),
                    .done = std::move(done)});
  Pump();
}

size_t DriverLink::held() const {
  return size_t(
      std::count_if(queue_.begin(), queue_.end(), [](const Held& h) { return !h.is_sample(); }));
}

void DriverLink::Pump() {
  if (in_flight_ || queue_.empty()) return;
  if (state_ == State::kUnavailable) {
    if (link_->NowS() < retry_at_) {
      if (!retry_due_) {  // a retry timer is set by Fail; this one covers a late Ask
        retry_due_ = true;
        link_->After(retry_at_ - link_->NowS(), [this] {
          retry_due_ = false;
          Pump();
        });
      }
      return;
    }
    state_ = State::kIdle;
  }
  if (state_ == State::kReady) {
    SendRequest();
  } else {
    SendHello();
  }
}

void DriverLink::SendHello() {
  session_ = fmt::format("{:016x}-d{}", session_nonce_, ++sessions_);
  state_ = State::kConnecting;
  in_flight_ = true;
  json hello = {{"type", "hello"},
                {"session", session_},
                {"experiment", experiment_},
                {"metric", metric_},
                {"mode", mode_}};
  hello["version"] = Version();  // the scheduler's (since v1.12)
  link_->Request(std::move(hello), options_.timeout_s,
                 [this](Result<json> reply) { OnHello(std::move(reply)); });
}

void DriverLink::OnHello(Result<json> reply) {
  in_flight_ = false;
  reply = ExpectReply(std::move(reply), "hello_ok", "driver");
  if (!reply.ok()) {
    Fail(reply.status(), /*was_hello=*/true);
    return;
  }
  state_ = State::kReady;
  Pump();
}

void DriverLink::SendRequest() {
  const Held& h = queue_.front();
  in_flight_ = true;
  json request = {{"session", session_}, {"trial_id", h.trial_id}};
  if (h.is_sample()) {
    request["type"] = "driver_sample";
    request["config"] = h.result;
    request["paths"] = h.paths;
  } else {
    request["type"] = "driver_result";
    request["attempt"] = h.attempt;
    request["seq"] = h.seq;
    request["result"] = h.result;
  }
  link_->Request(
      std::move(request), options_.timeout_s,
      [this, ticket = h.ticket](Result<json> reply) { OnReply(std::move(reply), ticket); });
}

void DriverLink::OnReply(Result<json> reply, uint64_t ticket) {
  in_flight_ = false;
  // Not found: forgotten meanwhile (the trial left RUNNING); the answer is dropped.
  auto it =
      std::find_if(queue_.begin(), queue_.end(), [&](const Held& h) { return h.ticket == ticket; });
  const bool sample = it != queue_.end() && it->is_sample();
  reply = ExpectReply(std::move(reply), sample ? "driver_samples" : "driver_decision", "driver");
  Status failed = reply.status();
  std::optional<DriverAnswer> answer;
  std::optional<DriverSamples> samples;
  if (reply.ok() && sample) {
    Result<DriverSamples> s = DriverSamples::FromJson(*reply, it->paths.size());
    failed = s.status();
    if (s.ok()) samples = std::move(s).value();
  } else if (reply.ok()) {
    Result<DriverAnswer> a = DriverAnswer::FromJson(*reply);
    failed = a.status();
    if (a.ok()) answer = std::move(a).value();
  }
  if (!failed.ok()) {
    Fail(failed, /*was_hello=*/false);
    return;
  }
  retries_ = 0;
  lost_sessions_ = 0;
  last_error_.clear();
  ++answered_;
  if (it != queue_.end()) {
    Held h = std::move(*it);
    queue_.erase(it);
    if (samples) {
      h.done(std::move(*samples));
    } else if (on_answer_) {
      on_answer_(h.trial_id, h.attempt, h.seq, std::move(*answer));
    }
  }
  Pump();
}

void DriverLink::Fail(const Status& status, bool was_hello) {
  last_error_ = status.ToString();
  if (status.code() == StatusCode::kFailedPrecondition && !was_hello && ++lost_sessions_ < 3) {
    state_ = State::kIdle;  // the driver lost the session (restarted): hello again
    Pump();
    return;
  }
  state_ = State::kUnavailable;
  ++retries_;
  const double delay = std::min(
      options_.backoff_max_s,
      options_.backoff_initial_s * std::ldexp(1.0, int(std::min<int64_t>(retries_ - 1, 30))));
  retry_at_ = link_->NowS() + delay;
  retry_due_ = true;
  link_->After(delay, [this] {
    retry_due_ = false;
    Pump();
  });
}

json DriverLink::Describe() const {
  json d = {{"endpoint", options_.endpoint},
            {"state", StateName(state_)},
            {"held", held()},
            {"answered", answered_},
            {"sessions", sessions_}};
  if (state_ == State::kUnavailable || !last_error_.empty()) {
    d["last_error"] = last_error_;
    d["retries"] = retries_;
    d["retry_in_s"] = std::round(std::max(0.0, retry_at_ - link_->NowS()) * 10) / 10;
  }
  return d;
}

}  // namespace tunebus
