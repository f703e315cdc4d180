// PausingScheduler: a trial scheduler for TrialRunner unit tests that answers PAUSE to every
// result of the trials it is given and CONTINUE to the others, and runs pending trials in
// creation order (FIFO). Stateless: it journals nothing.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>

#include "libs/tune/trial_scheduler.hpp"

namespace tunebus {
namespace {  // each test file gets its own copy (the fakes are test-local)

// A trial scheduler that PAUSEs every result of the trials in `pause` (FIFO otherwise).
class PausingScheduler final : public TrialScheduler {
 public:
  explicit PausingScheduler(std::set<std::string> pause) : pause_(std::move(pause)) {}
  const char* name() const override { return "pausing"; }
  Decision OnTrialResult(const Trial& trial, const TrainingResult&) override {
    return pause_.count(trial.trial_id) ? Decision::kPause : Decision::kContinue;
  }
  int64_t ChooseTrialToRun(const std::set<int64_t>& pending) override { return *pending.begin(); }

 private:
  std::set<std::string> pause_;
};

}  // namespace
}  // namespace tunebus
