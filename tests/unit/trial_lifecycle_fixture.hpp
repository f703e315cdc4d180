// The fixture of the TrialRunner lifecycle tests (trial_runner_lifecycle_test.cpp,
// trial_runner_end_checkpoint_test.cpp): runner_fixture.hpp's runner with checkpoint helpers.
#pragma once

#include <fmt/format.h>

#include "tests/unit/runner_fixture.hpp"

namespace tunebus {
namespace {  // as runner_fixture.hpp: each test file gets its own copy

class TrialLifecycleTest : public TrialRunnerTest {
 protected:
  // The worker stored the checkpoint asked at `iteration` of trial `index`'s current attempt.
  Status Saved(int index, int64_t iteration, int64_t bytes = 100) {
    const std::string id = fmt::format("{}/{:08d}-a{}", Id(index), iteration, T(index).attempt);
    return runner_->OnCheckpointSaved(Id(index), T(index).attempt, id, iteration, bytes);
  }
  std::string LastAction() const { return exec_.decisions.back().action; }
  using TrialRunnerTest::LastAction;
  // `trials` trials with checkpoint_at_end, stopped at `stop_iteration`: the stop is answered
  // checkpoint_and_stop.
  void StartCheckpointAtEnd(int64_t stop_iteration, int trials) {
    RunnerOptions o;
    o.checkpoint_at_end = true;
    o.stop = {{"training_iteration", stop_iteration}};
    Start(o, trials);
  }
};

}  // namespace
}  // namespace tunebus
