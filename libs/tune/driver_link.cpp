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
  std::erase_if(queue_, [&](const Held& h) { return h.trial_id == trial_id; });
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
    SendResult();
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

void DriverLink::SendResult() {
  const Held& h = queue_.front();
  in_flight_ = true;
  json request = {{"type", "driver_result"}, {"session", session_}, {"trial_id", h.trial_id},
                  {"attempt", h.attempt},    {"seq", h.seq},        {"result", h.result}};
  link_->Request(
      std::move(request), options_.timeout_s,
      [this, ticket = h.ticket](Result<json> reply) { OnDecision(std::move(reply), ticket); });
}

void DriverLink::OnDecision(Result<json> reply, uint64_t ticket) {
  in_flight_ = false;
  reply = ExpectReply(std::move(reply), "driver_decision", "driver");
  Result<DriverAnswer> answer =
      reply.ok() ? DriverAnswer::FromJson(*reply) : Result<DriverAnswer>(reply.status());
  if (!answer.ok()) {
    Fail(answer.status(), /*was_hello=*/false);
    return;
  }
  retries_ = 0;
  lost_sessions_ = 0;
  last_error_.clear();
  ++answered_;
  auto it =
      std::find_if(queue_.begin(), queue_.end(), [&](const Held& h) { return h.ticket == ticket; });
  if (it != queue_.end()) {  // else forgotten meanwhile: the trial left RUNNING
    Held h = std::move(*it);
    queue_.erase(it);
    if (on_answer_) on_answer_(h.trial_id, h.attempt, h.seq, std::move(answer).value());
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
            {"held", queue_.size()},
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
