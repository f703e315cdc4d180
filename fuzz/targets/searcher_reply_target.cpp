#include <fmt/format.h>

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fuzz/fuzz_targets.hpp"
#include "libs/bus/request_client.hpp"
#include "libs/tune/external_searcher.hpp"
#include "libs/tune/training_result.hpp"
#include "proto/codec.hpp"
#include "services/scheduler/search/zmq_searcher_link.hpp"

namespace tunebus::fuzz {

namespace {

using nlohmann::json;

// A SearcherLink whose requests wait until the target answers them and whose timers run when
// the target moves its clock past them.
class ScriptedLink final : public SearcherLink {
 public:
  struct Pending {
    json request;
    ReplyCallback done;
  };
  struct Shared {
    std::deque<Pending> requests;
    std::vector<std::pair<double, std::function<void()>>> timers;
    double now = 100;
  };

  explicit ScriptedLink(Shared& s) : s_(s) {}
  void Request(json request, double, ReplyCallback done) override {
    s_.requests.push_back({std::move(request), std::move(done)});
  }
  void After(double delay_s, std::function<void()> fn) override {
    s_.timers.emplace_back(s_.now + delay_s, std::move(fn));
  }
  double NowS() const override { return s_.now; }

 private:
  Shared& s_;
};

// The space of tests/unit/external_searcher_test.cpp: every sampler kind the remote answers for.
const json& Space() {
  static const json space = {{"lr", {{"loguniform", {1e-4, 1e-1}}}},
                             {"model", {{"depth", {{"randint", {1, 5}}}}}},
                             {"opt", {{"choice", {"sgd", "adam"}}}},
                             {"width", {{"quniform", {8, 64, 8}}}},
                             {"epochs", 3}};
  return space;
}

// The reply frame as ZmqSearcherLink hands it to its callback (bus::RequestClient drops a frame
// that does not decode: the request then times out).
Result<json> ReplyOf(const uint8_t* frame, size_t size) {
  Result<proto::Decoded> d = proto::Decode(frame, size);
  if (!d.ok()) return Status::Unavailable("the searcher did not answer: " + d.status().message());
  if (d->type() == "error") {
    Result<proto::ErrorReply> e = d->As<proto::ErrorReply>();
    if (!e.ok()) return e.status();
    return Status(bus::StatusCodeFromName(e->code), e->message);
  }
  return SearcherReplyToJson(*d);
}

ExternalSearcher MakeSearcher(std::unique_ptr<SearcherLink> link) {
  ExternalOptions o;
  o.endpoint = "tcp://127.0.0.1:5600";
  return ExternalSearcher(o, /*num_samples=*/8, /*seed=*/7, "exp-fuzz", 0xfeed, std::move(link));
}

}  // namespace

int FuzzSearcherReply(const uint8_t* data, size_t size) {
  ScriptedLink::Shared shared;
  ExternalSearcher s = MakeSearcher(std::make_unique<ScriptedLink>(shared));
  Check(s.SetSearchProperties("loss", "min", Space()).ok(), "the fuzz space is refused");
  size_t at = 0;
  int trial = 0;
  for (int step = 0; step < 256 && trial < 8; ++step) {
    const std::string trial_id = fmt::format("t{}", trial);
    const Suggestion g = s.Suggest(trial_id);
    if (g.kind == Suggestion::Kind::kFinished) break;
    if (g.kind == Suggestion::Kind::kConfig) {
      TrainingResult r;
      r.SetDouble("loss", 1.0 / (trial + 1));
      r.SetInt("training_iteration", 1);
      s.OnTrialResult(trial_id, r);
      s.OnTrialComplete(trial_id, &r, /*error=*/trial % 3 == 2);
      ++trial;
      continue;
    }
    if (!shared.requests.empty()) {
      if (at + 2 > size) break;  // no more replies
      const size_t n =
          std::min<size_t>(size - at - 2, size_t(data[at]) | size_t(data[at + 1]) << 8);
      Result<json> reply = ReplyOf(data + at + 2, n);
      at += 2 + n;
      ScriptedLink::Pending p = std::move(shared.requests.front());
      shared.requests.pop_front();
      p.done(std::move(reply));
    } else {
      // Nothing in flight: a backoff or not_now wait; let its timer run.
      shared.now += 60;
      auto due = std::move(shared.timers);
      shared.timers.clear();
      for (auto& [when, fn] : due) {
        if (when <= shared.now)
          fn();
        else
          shared.timers.emplace_back(when, std::move(fn));
      }
    }
  }
  (void)s.Describe();
  // What was journaled restores into a searcher without a link.
  const json state = s.SaveState();
  ExternalSearcher restored = MakeSearcher(nullptr);
  Check(restored.SetSearchProperties("loss", "min", Space()).ok(), "the fuzz space is refused");
  const Status st = restored.RestoreState(state);
  Check(st.ok(), "the searcher's saved state does not restore: " + st.ToString());
  Check(restored.suggested() == s.suggested(), "restored searcher's suggestion count differs");
  return 0;
}

}  // namespace tunebus::fuzz
