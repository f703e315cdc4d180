// FakeLink: a SearcherLink without sockets for unit tests of the links built on it (the external
// searcher, the driver link): requests wait until the test answers them, and timers run when the
// test moves the hand-held clock past them.
#pragma once

#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "libs/tune/searcher_link.hpp"

namespace tunebus {
namespace {

// Requests wait in `requests` until the test answers them; timers run when the clock passes them.
struct FakeLinkState {
  struct Pending {
    nlohmann::json request;
    double timeout_s;
    SearcherLink::ReplyCallback done;
  };
  std::deque<Pending> requests;
  std::vector<std::pair<double, std::function<void()>>> timers;
  double now = 100;

  void Advance(double s) {
    now += s;
    auto due = std::move(timers);
    timers.clear();
    for (auto& [at, fn] : due) {
      if (at <= now) {
        fn();
      } else {
        timers.emplace_back(at, std::move(fn));
      }
    }
  }
  // Answers the oldest request with `reply`.
  nlohmann::json Answer(Result<nlohmann::json> reply) {
    EXPECT_FALSE(requests.empty());
    if (requests.empty()) return nullptr;
    Pending p = std::move(requests.front());
    requests.pop_front();
    p.done(std::move(reply));
    return p.request;
  }
};

class FakeLink final : public SearcherLink {
 public:
  explicit FakeLink(FakeLinkState& s) : s_(s) {}
  void Request(nlohmann::json request, double timeout_s, ReplyCallback done) override {
    s_.requests.push_back({std::move(request), timeout_s, std::move(done)});
  }
  void After(double delay_s, std::function<void()> fn) override {
    s_.timers.emplace_back(s_.now + delay_s, std::move(fn));
  }
  double NowS() const override { return s_.now; }

 private:
  FakeLinkState& s_;
};

}  // namespace
}  // namespace tunebus
