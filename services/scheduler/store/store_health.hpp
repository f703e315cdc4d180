// StoreHealth: the scheduler's view of the checkpoint-store's health, for `tunectl status` and to
// resume journal writes as soon as the store takes them again.
//
// Asks the store `store_status` (proto/store.hpp) every period on the scheduler's loop, one
// request at a time, and keeps the newest answer: ok, degraded (with RocksDB's reason, as the
// store gives it) or unreachable (no answer within the period). `on_ok` runs on every ok answer,
// so a journal writer that waits for a retry can send at once (JournalWriter::RetryNow is a
// no-op otherwise). A store that predates store_status answers invalid_argument: shown as ok.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "libs/bus/event_loop.hpp"
#include "libs/bus/request_client.hpp"

namespace tunebus {

class StoreHealth {
 public:
  enum class State {
    kUnknown,      // no answer yet
    kOk,           // the store takes writes
    kDegraded,     // the store refuses writes (reads served) and retries its recovery
    kUnreachable,  // the last request got no answer within the period
  };

  /// Neither `loop` nor `store` is owned; both outlive this object.
  StoreHealth(bus::EventLoop& loop, bus::RequestClient& store, std::function<void()> on_ok);
  ~StoreHealth();
  StoreHealth(const StoreHealth&) = delete;
  StoreHealth& operator=(const StoreHealth&) = delete;

  /// Starts asking every `period` (also the request's timeout).
  void Start(bus::Duration period = bus::Duration{1000});

  State state() const { return state_; }
  /// {"state": "ok"|"degraded"|"unreachable"|"unknown", "reason": text ("" when ok),
  ///  "since_unix_s": the store's time of its last state change (0 = none), "recoveries": n}
  nlohmann::json ToJson() const;

 private:
  void Ask(bus::Duration timeout);

  bus::EventLoop& loop_;
  bus::RequestClient& store_;
  std::function<void()> on_ok_;
  bus::EventLoop::TimerId timer_{};
  bool started_ = false;
  bool in_flight_ = false;
  State state_ = State::kUnknown;
  std::string reason_;
  double since_unix_s_ = 0;
  uint64_t recoveries_ = 0;
};

const char* StoreHealthStateName(StoreHealth::State state);

}  // namespace tunebus
