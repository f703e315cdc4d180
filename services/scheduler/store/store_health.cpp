#include "services/scheduler/store/store_health.hpp"

#include "libs/core/enum_names.hpp"
#include "proto/store.hpp"

namespace tunebus {

namespace {

constexpr EnumName<StoreHealth::State> kStoreHealthStateNames[] = {
    {StoreHealth::State::kUnknown, "unknown"},
    {StoreHealth::State::kOk, "ok"},
    {StoreHealth::State::kDegraded, "degraded"},
    {StoreHealth::State::kUnreachable, "unreachable"},
};

}  // namespace

const char* StoreHealthStateName(StoreHealth::State state) {
  return NameIn(kStoreHealthStateNames, state);
}

StoreHealth::StoreHealth(bus::EventLoop& loop, bus::RequestClient& store,
                         std::function<void()> on_ok)
    : loop_(loop), store_(store), on_ok_(std::move(on_ok)) {}

StoreHealth::~StoreHealth() {
  if (started_) loop_.CancelTimer(timer_);
}

void StoreHealth::Start(bus::Duration period) {
  if (started_) return;
  started_ = true;
  timer_ = loop_.AddPeriodic(period, [this, period] { Ask(period); });
  Ask(period);
}

void StoreHealth::Ask(bus::Duration timeout) {
  if (in_flight_) return;
  in_flight_ = true;
  store_.Request(
      proto::StoreStatus{},
      [this](Result<proto::Decoded> reply) {
        in_flight_ = false;
        if (!reply.ok()) {
          if (reply.status().code() == StatusCode::kInvalidArgument) {
            state_ = State::kOk;  // a store without store_status: it answers, nothing more known
            reason_.clear();
          } else {
            state_ = State::kUnreachable;
            reason_ = reply.status().message();
          }
        } else if (auto status = reply->As<proto::StoreStatusReply>(); !status.ok()) {
          state_ = State::kUnknown;
          reason_ = status.status().message();
        } else {
          state_ = status->state == "ok" ? State::kOk : State::kDegraded;
          reason_ = status->reason;
          since_unix_s_ = status->since_unix_s;
          recoveries_ = status->recoveries;
        }
        if (state_ == State::kOk && on_ok_) on_ok_();
      },
      timeout);
}

nlohmann::json StoreHealth::ToJson() const {
  return {{"state", StoreHealthStateName(state_)},
          {"reason", reason_},
          {"since_unix_s", since_unix_s_},
          {"recoveries", recoveries_}};
}

}  // namespace tunebus
