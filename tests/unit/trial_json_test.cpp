// Tests for the trial's JSON views: the text experiment_state.json writes for a trial
// (AppendTrialJson, built without documents of the config and the last result) holds exactly
// what the control socket's TrialToJson gives, for a fresh trial and for one with a last
// result, checkpoints, failures and nested values.
#include "services/scheduler/trial_json.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace tunebus {
namespace {

using json = nlohmann::json;

json Appended(const Trial& t) {
  std::string text = "prefix ";
  AppendTrialJson(t, "/results/exp", text);
  EXPECT_EQ(text.substr(0, 7), "prefix ");  // appends, keeps what was there
  return json::parse(text.substr(7));
}

TEST(TrialJsonTest, StateFileTextHoldsWhatTrialToJsonGives) {
  Trial fresh;
  fresh.trial_id = "exp_00000";
  fresh.config = {{"lr", 0.01}};
  EXPECT_EQ(Appended(fresh), TrialToJson(fresh, "/results/exp"));

  Trial t;
  t.trial_id = "exp_00007";
  t.index = 7;
  t.status = TrialStatus::kError;
  t.config = {{"lr", 0.1}, {"layers", {64, 32}}, {"opt", {{"name", "sgd \"fast\"\n"}, {"momentum", 0.9}}}};
  t.SetLastResult({{"loss", 0.25},
                   {"acc", 1},
                   {"big", std::numeric_limits<uint64_t>::max()},
                   {"neg", -7},
                   {"whole", 2.0},
                   {"done", false},
                   {"note", nullptr},
                   {"info", {{"path", "a/b"}, {"sizes", {1, 2.5, "x"}}}}});
  t.checkpoints.push_back(CheckpointRef{"exp/exp_00007/00000003-a1", 3, 1.5, 0.75, 1024});
  t.failures.push_back(TrialFailure{1, "boom", TrialStatus::kError});
  t.error = "boom";
  t.training_iteration = 3;
  t.worker_id = "w1";
  EXPECT_EQ(Appended(t), TrialToJson(t, "/results/exp"));
}

}  // namespace
}  // namespace tunebus
