// Tests for the trial's JSON views (libs/core/trial_view.hpp): the text experiment_state.json
// writes for a trial (AppendTrialJson, built without documents of the config and the last result)
// holds exactly what the control socket's TrialToJson gives, for a fresh trial and for one with a
// last result, checkpoints, failures and nested values.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "libs/core/trial_view.hpp"

namespace tunebus {
namespace {

using json = nlohmann::json;

// The text AppendTrialJson appends, checked against nlohmann's dump of TrialToJson's document
// with "config" and "last_result" moved last (the same characters, number forms included).
json Appended(const Trial& t) {
  std::string text = "prefix ";
  AppendTrialJson(t, "/results/exp", text);
  EXPECT_EQ(text.substr(0, 7), "prefix ");  // appends, keeps what was there
  json fields = TrialToJson(t, "/results/exp");
  const json config = fields["config"], last_result = fields["last_result"];
  fields.erase("config");
  fields.erase("last_result");
  std::string dumped = fields.dump();
  dumped.pop_back();
  EXPECT_EQ(text.substr(7), dumped + ",\"config\":" + config.dump() +
                                ",\"last_result\":" + last_result.dump() + "}");
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
  t.config = {
      {"lr", 0.1}, {"layers", {64, 32}}, {"opt", {{"name", "sgd \"fast\"\n"}, {"momentum", 0.9}}}};
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

  // Every other field set: fractional and custom resources, GPUs, a restore, a checkpoint
  // without a score, a worker-lost failure, escapes in strings, a non-integral time.
  t.resources = *Resources::FromAmounts({{"cpu", 2}, {"gpu", 0.25}, {"tpu-v4", 1}});
  t.gpu_ids = {"0", "1"};
  t.restored_checkpoint_id = "exp/exp_00007/00000003-a1";
  t.checkpoints.push_back(CheckpointRef{"exp/exp_00007/00000009-b2", 9, 4.125, std::nullopt, 0});
  t.failures.push_back(TrialFailure{2, "worker w1 lost\t(heartbeats)", TrialStatus::kPending,
                                    FailureKind::kWorkerLost});
  t.num_failures = 2;
  t.num_worker_losses = 1;
  t.error = "line 1\nline \"2\"";
  t.experiment_tag = "7_lr=0.1,opt=sgd \"fast\"";
  t.time_total_s = 12.000001;
  t.attempt = 3;
  t.status = TrialStatus::kRunning;
  EXPECT_EQ(Appended(t), TrialToJson(t, "/results/exp"));

  // Checkpoints the store refused, with a reason that needs escapes.
  NoteCheckpointNotStored(t, 4, "io_error: No space left on device");
  NoteCheckpointNotStored(t, 5, "io_error: \"quota\"\n");
  const json view = Appended(t);
  EXPECT_EQ(view, TrialToJson(t, "/results/exp"));
  EXPECT_EQ(view["checkpoints_not_stored"][1],
            (json{{"training_iteration", 5}, {"reason", "io_error: \"quota\"\n"}}));
  EXPECT_EQ(view["num_checkpoints_not_stored"], 2);
}

}  // namespace
}  // namespace tunebus
