// Journal replay and snapshots (libs/journal/replay.hpp, snapshot.hpp): a resume folds the
// newest snapshot plus the records after it, and must reach exactly the state a replay of the
// whole journal reaches (DESIGN.md "Journal and recovery": replay = newest snapshot + tail).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "libs/journal/records.hpp"
#include "libs/journal/replay.hpp"
#include "libs/journal/snapshot.hpp"

namespace tunebus::journal {
namespace {

using nlohmann::json;

// A small experiment's journal: 3 trials, each added, started, 4 results (a checkpoint at 2; the
// first trial's checkpoint at 3 refused by the store), the last one failing once and requeued;
// then the first two terminate.
std::vector<json> MakeJournal() {
  std::vector<json> out;
  out.push_back(ExperimentSubmitted({"abcde", 9, 1.5, "/tmp", "snap.yaml"},
                                    "name: snap\ntrainable: {builtin: mock}\n"));
  std::vector<Trial> trials(3);
  for (int i = 0; i < 3; ++i) {
    Trial& t = trials[size_t(i)];
    t.trial_id = "abcde_0000" + std::to_string(i);
    t.index = i;
    t.config = {{"lr", 0.01 * (i + 1)}};
    out.push_back(TrialAdded(t));
    out.push_back(SearcherState({{"next", i + 1}}));
    t.attempt = 1;
    t.worker_id = "w1";
    t.status = TrialStatus::kRunning;
    out.push_back(TrialStarted(t));
  }
  for (int k = 1; k <= 4; ++k) {
    for (Trial& t : trials) {
      t.last_seq = k;
      out.push_back(
          ResultRecord(t, {{"training_iteration", k}, {"loss", 1.0 / k}}, Action::kContinue));
      if (k == 2) {
        CheckpointRef ref;
        ref.checkpoint_id = "snap-abcde/" + t.trial_id + "/00000002-a1";
        ref.training_iteration = 2;
        ref.size_bytes = 100;
        out.push_back(CheckpointSavedRecord(t, ref));
      }
      if (k == 3 && t.index == 0) {
        out.push_back(CheckpointFailedRecord(t, {3, "io_error: No space left on device"}));
      }
    }
  }
  trials[2].status = TrialStatus::kPending;
  trials[2].num_failures = 1;
  trials[2].error = "mock_error";
  out.push_back(TrialStatusRecord(trials[2]));
  for (int i = 0; i < 2; ++i) {
    trials[size_t(i)].status = TrialStatus::kTerminated;
    out.push_back(TrialStatusRecord(trials[size_t(i)]));
  }
  return out;
}

ReplayedExperiment ReplayAll(const std::vector<json>& records) {
  JournalReplayer replayer;
  for (const json& r : records) EXPECT_TRUE(replayer.Apply(r).ok()) << r.dump();
  return replayer.Take();
}

// The records of an experiment `name` whose one trial (`t`, abcde_00000) started attempt 1 on w1.
std::vector<json> OneTrialStarted(const std::string& name, Trial& t) {
  std::vector<json> records;
  records.push_back(
      ExperimentSubmitted({"abcde", 1, 1.0, "/tmp", name + ".yaml"}, "name: " + name + "\n"));
  t.trial_id = "abcde_00000";
  records.push_back(TrialAdded(t));
  t.attempt = 1;
  t.worker_id = "w1";
  t.status = TrialStatus::kRunning;
  records.push_back(TrialStarted(t));
  return records;
}

TEST(JournalSnapshotTest, SnapshotPlusTailEqualsAFullReplayAtEveryCutPoint) {
  // For every k, snapshot the state after record k (through encode + decode, as stored) and
  // apply the records after it: the result encodes to the same bytes as replaying them all.
  const std::vector<json> records = MakeJournal();
  const std::string full = EncodeSnapshot(ReplayAll(records));
  for (size_t k = 1; k <= records.size(); ++k) {
    ReplayedExperiment head = ReplayAll({records.begin(), records.begin() + long(k)});
    auto decoded = DecodeSnapshot(EncodeSnapshot(head));
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    JournalReplayer replayer;
    replayer.Reset(std::move(*decoded));
    for (size_t i = k; i < records.size(); ++i) ASSERT_TRUE(replayer.Apply(records[i]).ok()) << i;
    const ReplayedExperiment state = replayer.Take();
    EXPECT_EQ(state.snapshot_records, k);
    EXPECT_EQ(state.records, records.size());
    EXPECT_EQ(EncodeSnapshot(state), full) << "cut after record " << k;
  }
}

TEST(JournalSnapshotTest, ReplayedStateKeepsTrialsResultsCheckpointsAndFailures) {
  // The fold itself: what the journal says of each trial.
  const ReplayedExperiment s = ReplayAll(MakeJournal());
  ASSERT_EQ(s.trials.size(), 3u);
  EXPECT_EQ(s.identity.experiment_id, "abcde");
  EXPECT_EQ(s.identity.seed, 9u);
  EXPECT_EQ(s.searcher_state, (json{{"next", 3}}));
  EXPECT_EQ(s.trials[0].status, TrialStatus::kTerminated);
  EXPECT_EQ(s.trials[0].LastResult().value("training_iteration", 0), 4);
  EXPECT_EQ(s.trials[0].num_results, 4);
  ASSERT_EQ(s.trials[1].checkpoints.size(), 1u);
  EXPECT_EQ(s.trials[1].checkpoints[0].training_iteration, 2);
  ASSERT_EQ(s.trials[0].checkpoints_not_stored.size(), 1u);
  EXPECT_EQ(s.trials[0].checkpoints_not_stored[0].training_iteration, 3);
  EXPECT_TRUE(s.trials[1].checkpoints_not_stored.empty());
  EXPECT_EQ(s.trials[2].status, TrialStatus::kPending);
  EXPECT_EQ(s.trials[2].num_failures, 1);
  ASSERT_EQ(s.trials[2].failures.size(), 1u);  // rebuilt from the trial_status record
  EXPECT_EQ(s.trials[2].failures[0].error, "mock_error");
  EXPECT_EQ(s.trials[2].failures[0].attempt, 1);
  EXPECT_EQ(s.last_action.at("abcde_00002"), Action::kContinue);
}

TEST(JournalSnapshotTest, ReplayRebuildsTheCheckpointsAskedAndNotYetStored) {
  // The result records whose decision saves a checkpoint are the requests' journal entries: a
  // replay ending after the request at iteration 4 (score 0.5) but before its checkpoint_saved
  // hands the successor that request (at time_total_s 4), also through a snapshot; the request
  // at 2 was answered by its checkpoint_saved, and a new attempt drops what the old one asked.
  Trial t;
  std::vector<json> records = OneTrialStarted("ask", t);
  for (int k = 1; k <= 4; ++k) {
    t.last_seq = t.training_iteration = k;
    const bool ask = k % 2 == 0;
    if (ask)
      t.requested_checkpoints.push_back(
          {"", k, double(k), k == 4 ? std::optional<double>(0.5) : std::nullopt, 0});
    records.push_back(ResultRecord(t, {{"training_iteration", k}, {"time_total_s", double(k)}},
                                   ask ? Action::kCheckpoint : Action::kContinue));
    if (k == 2) {
      records.push_back(CheckpointSavedRecord(
          t, {"ask-abcde/abcde_00000/00000002-a1", 2, 2.0, std::nullopt, 10}));
      t.requested_checkpoints.clear();
    }
  }
  EXPECT_EQ(records.back().value("checkpoint_score", -1.0),
            0.5);  // the request at 4 carries its score
  const ReplayedExperiment s = ReplayAll(records);
  ASSERT_EQ(s.trials[0].requested_checkpoints.size(), 1u);
  const CheckpointRef& asked = s.trials[0].requested_checkpoints[0];
  EXPECT_EQ(asked.training_iteration, 4);
  EXPECT_DOUBLE_EQ(asked.time_total_s, 4.0);
  EXPECT_EQ(asked.score, std::optional<double>(0.5));
  auto restored = DecodeSnapshot(EncodeSnapshot(s));
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  ASSERT_EQ(restored->trials[0].requested_checkpoints.size(), 1u);
  EXPECT_EQ(restored->trials[0].requested_checkpoints[0].score, std::optional<double>(0.5));

  t.attempt = 2;
  records.push_back(TrialStarted(t));
  EXPECT_TRUE(ReplayAll(records).trials[0].requested_checkpoints.empty());
}

TEST(JournalSnapshotTest, ReplayRestoresTheCheckpointsTheStoreRefused) {
  // checkpoint_failed records: each closes its request (and older ones) and is kept on the trial
  // with its reason, in order, counted; nothing joins the trial's checkpoints. A snapshot keeps
  // them, and an older snapshot without the fields reads as none.
  Trial t;
  std::vector<json> records = OneTrialStarted("refused", t);
  for (int k = 1; k <= 4; ++k) {
    t.last_seq = t.training_iteration = k;
    records.push_back(ResultRecord(t, {{"training_iteration", k}}, Action::kCheckpoint));
  }
  records.push_back(CheckpointSavedRecord(
      t, {"refused-abcde/abcde_00000/00000001-a1", 1, 1.0, std::nullopt, 10}));
  records.push_back(CheckpointFailedRecord(t, {3, "io_error: No space left on device"}));
  records.push_back(CheckpointFailedRecord(t, {4, "unavailable: no answer"}));
  const ReplayedExperiment s = ReplayAll(records);
  const Trial& r = s.trials[0];
  ASSERT_EQ(r.checkpoints.size(), 1u);
  EXPECT_EQ(r.checkpoints[0].training_iteration, 1);
  ASSERT_EQ(r.checkpoints_not_stored.size(), 2u);
  EXPECT_EQ(r.checkpoints_not_stored[0].training_iteration, 3);
  EXPECT_EQ(r.checkpoints_not_stored[0].reason, "io_error: No space left on device");
  EXPECT_EQ(r.checkpoints_not_stored[1].training_iteration, 4);
  EXPECT_EQ(r.checkpoints_not_stored[1].reason, "unavailable: no answer");
  EXPECT_EQ(r.num_checkpoints_not_stored, 2);
  EXPECT_TRUE(r.requested_checkpoints.empty());  // 2 and 3 closed by 3's refusal, 4 by its own
  EXPECT_EQ(r.status, TrialStatus::kRunning);
  EXPECT_EQ(r.worker_id, "w1");

  auto restored = DecodeSnapshot(EncodeSnapshot(s));
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  const Trial& back = restored->trials[0];
  ASSERT_EQ(back.checkpoints_not_stored.size(), 2u);
  EXPECT_EQ(back.checkpoints_not_stored[1].reason, "unavailable: no answer");
  EXPECT_EQ(back.num_checkpoints_not_stored, 2);

  const ReplayedExperiment none = ReplayAll(OneTrialStarted("refused", t));
  auto without = DecodeSnapshot(EncodeSnapshot(none));
  ASSERT_TRUE(without.ok());
  EXPECT_TRUE(without->trials[0].checkpoints_not_stored.empty());
  EXPECT_EQ(without->trials[0].num_checkpoints_not_stored, 0);
}

TEST(JournalSnapshotTest, AReturnedTrialIsDoneWithItsReportedResultsOnly) {
  // A trainable that returned after 2 reports: its TERMINATED status carries `returned`, and the
  // replayed trial has num_results 2 and a newest result that says done: true (also through a
  // snapshot). An older journal recorded the return as a third result record repeating seq 2 with
  // done: true; replay reads it the same way, as no reported result.
  for (const bool older_form : {false, true}) {
    SCOPED_TRACE(older_form ? "older journal: a copy record" : "returned in trial_status");
    Trial t;
    std::vector<json> records = OneTrialStarted("ret", t);
    for (int k = 1; k <= 2; ++k) {
      t.last_seq = t.training_iteration = k;
      records.push_back(
          ResultRecord(t, {{"training_iteration", k}, {"done", false}}, Action::kContinue));
    }
    if (older_form) {
      records.push_back(
          ResultRecord(t, {{"training_iteration", 2}, {"done", true}}, Action::kStop));
    } else {
      t.returned = true;
    }
    t.status = TrialStatus::kTerminated;
    records.push_back(TrialStatusRecord(t));
    EXPECT_EQ(records.back().contains("returned"), !older_form) << records.back().dump();
    const ReplayedExperiment s = ReplayAll(records);
    EXPECT_EQ(s.trials[0].num_results, 2);
    EXPECT_EQ(s.trials[0].training_iteration, 2);
    EXPECT_EQ(s.trials[0].LastResult().value("done", false), true);
    EXPECT_EQ(s.trials[0].returned, !older_form);
    auto restored = DecodeSnapshot(EncodeSnapshot(s));
    ASSERT_TRUE(restored.ok()) << restored.status().ToString();
    EXPECT_EQ(restored->trials[0].LastResult().value("done", false), true);
    EXPECT_EQ(restored->trials[0].num_results, 2);
  }
}

TEST(JournalSnapshotTest, ReplayKeepsAnEndCheckpointRequestAndItsWorkerUntilStoredOrLost) {
  // checkpoint_and_stop at iteration 2: TERMINATED with the end checkpoint asked and the
  // attempt's worker kept (a successor waits for the upload there). A second TERMINATED record
  // with an error and failure_kind worker_lost says its worker died first: the failure is kept,
  // the worker dropped, the request stays open (a successor adopts the checkpoint if the store
  // has it). A checkpoint_saved instead closes the request and drops the worker.
  Trial t;
  std::vector<json> records = OneTrialStarted("end", t);
  t.last_seq = t.training_iteration = 2;
  t.requested_checkpoints.push_back({"", 2, 2.0, std::nullopt, 0});
  records.push_back(ResultRecord(t, {{"training_iteration", 2}}, Action::kCheckpointAndStop));
  t.status = TrialStatus::kTerminated;
  records.push_back(TrialStatusRecord(t));
  const ReplayedExperiment saving = ReplayAll(records);
  EXPECT_EQ(saving.trials[0].requested_checkpoints.size(), 1u);
  EXPECT_EQ(saving.trials[0].worker_id, "w1");
  EXPECT_TRUE(StoresEndCheckpoint(saving.trials[0]));
  std::vector<json> stored = records;
  stored.push_back(CheckpointSavedRecord(t, {"end-abcde/abcde_00000/00000002-a1", 2, 2.0, {}, 10}));
  EXPECT_TRUE(ReplayAll(stored).trials[0].worker_id.empty());
  EXPECT_TRUE(ReplayAll(stored).trials[0].requested_checkpoints.empty());

  t.error = "while saving its checkpoint: worker w1 was lost";
  t.failures.push_back({1, t.error, TrialStatus::kTerminated, FailureKind::kWorkerLost});
  records.push_back(TrialStatusRecord(t));
  const ReplayedExperiment s = ReplayAll(records);
  EXPECT_EQ(s.trials[0].status, TrialStatus::kTerminated);
  EXPECT_EQ(s.trials[0].requested_checkpoints.size(), 1u);
  EXPECT_TRUE(s.trials[0].worker_id.empty());
  EXPECT_FALSE(StoresEndCheckpoint(s.trials[0]));
  ASSERT_EQ(s.trials[0].failures.size(), 1u);
  EXPECT_EQ(s.trials[0].failures[0].kind, FailureKind::kWorkerLost);
  EXPECT_EQ(s.trials[0].error, t.error);
}

TEST(JournalSnapshotTest, DamagedSnapshotIsCorruptionNotACrash) {
  // Truncated bytes, garbage, and a snapshot of another version are refused with Corruption.
  const std::string good = EncodeSnapshot(ReplayAll(MakeJournal()));
  for (const std::string& bad :
       {good.substr(0, good.size() / 2), std::string("\xc1\xff garbage"), std::string()}) {
    auto r = DecodeSnapshot(bad);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << r.status().ToString();
  }
  const json other = {{"snapshot_version", 99}};
  const std::vector<uint8_t> bytes = json::to_msgpack(other);
  auto r = DecodeSnapshot(std::string(bytes.begin(), bytes.end()));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
}

TEST(JournalSnapshotTest, ReplayAndSnapshotKeepWorkerLossesAndTheirResetByARestart) {
  // A trial loses its worker (trial_status with num_worker_losses 1 and failure_kind
  // worker_lost), errors, and is rerun from scratch ("restart" zeroes its counts, so its status
  // record leaves num_worker_losses out): replay and a snapshot of each point agree.
  Trial t;
  std::vector<json> records = OneTrialStarted("lost", t);
  t.status = TrialStatus::kError;
  t.error = "worker w1 lost";
  t.num_worker_losses = 1;
  t.failures.push_back({1, t.error, TrialStatus::kError, FailureKind::kWorkerLost});
  records.push_back(TrialStatusRecord(t));
  EXPECT_EQ(records.back().value("failure_kind", ""), "worker_lost");

  const ReplayedExperiment lost = ReplayAll(records);
  EXPECT_EQ(lost.trials[0].num_worker_losses, 1);
  ASSERT_EQ(lost.trials[0].failures.size(), 1u);
  EXPECT_EQ(lost.trials[0].failures[0].kind, FailureKind::kWorkerLost);
  auto decoded = DecodeSnapshot(EncodeSnapshot(lost));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->trials[0].num_worker_losses, 1);
  EXPECT_EQ(decoded->trials[0].failures[0].kind, FailureKind::kWorkerLost);
  EXPECT_EQ(decoded->trials[0].status, TrialStatus::kError);

  t.status = TrialStatus::kPending;
  t.error.clear();
  t.num_worker_losses = 0;
  records.push_back(TrialStatusRecord(t));
  EXPECT_FALSE(records.back().contains("num_worker_losses"));
  const ReplayedExperiment restarted = ReplayAll(records);
  EXPECT_EQ(restarted.trials[0].num_worker_losses, 0);
  EXPECT_EQ(restarted.trials[0].status, TrialStatus::kPending);
}

TEST(JournalSnapshotTest, ARunsResultsFolderIsReplayedAndSnapshotted) {
  // A new run of a name whose folder held an earlier run writes to "<name>-<id>": the submission
  // record names it, and a replay, a snapshot or a journal without it (an older one: the name)
  // give it back.
  const ReplayedExperiment fresh = ReplayAll({ExperimentSubmitted(
      {"abcde", 1, 1.0, "/tmp", "again.yaml", std::nullopt, "again-abcde"}, "name: again\n")});
  EXPECT_EQ(fresh.identity.results_folder, "again-abcde");
  auto restored = DecodeSnapshot(EncodeSnapshot(fresh));
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(restored->identity.results_folder, "again-abcde");
  const json older = ExperimentSubmitted({"abcde", 1, 1.0, "/tmp", "again.yaml"}, "name: again\n");
  EXPECT_FALSE(older.contains("results_folder"));
  EXPECT_EQ(ReplayAll({older}).identity.results_folder, "");
}

TEST(JournalSnapshotTest, AShippedWorkingDirsDigestIsReplayedAndSnapshotted) {
  // The submission names the shipped working_dir's archive; a replay and a snapshot give it back,
  // so a restarted scheduler ships the same one. A submission without it ships nothing.
  const std::string digest(64, 'a');
  const ReplayedExperiment shipped = ReplayAll({ExperimentSubmitted(
      {"abcde", 1, 1.0, "/tmp", "s.yaml", std::nullopt, "", digest, 4096}, "name: s\n")});
  EXPECT_EQ(shipped.identity.working_dir_digest, digest);
  EXPECT_EQ(shipped.identity.working_dir_size_bytes, 4096);
  auto restored = DecodeSnapshot(EncodeSnapshot(shipped));
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(restored->identity.working_dir_digest, digest);
  EXPECT_EQ(restored->identity.working_dir_size_bytes, 4096);
  const json plain = ExperimentSubmitted({"abcde", 1, 1.0, "/tmp", "s.yaml"}, "name: s\n");
  EXPECT_FALSE(plain.contains("working_dir_digest"));
  EXPECT_EQ(ReplayAll({plain}).identity.working_dir_digest, "");
}

TEST(JournalSnapshotTest, EveryIdentityFieldSurvivesTheRecordTheReplayAndTheSnapshot) {
  // One field list (experiment_identity.hpp) writes and reads the submission record and the
  // snapshot: an identity with every field set comes back whole from both.
  ExperimentIdentity identity{"f00d1",      77,
                              1234.5,       "/srv/exp",
                              "tune.yaml",  CheckpointRef{"old_00003/ckpt-9", 9, 4.5, 0.75, 128},
                              "tune-f00d1", std::string(64, 'c'),
                              2048};
  auto as_json = [](const ExperimentIdentity& x) {
    json out = json::object();
    VisitExperimentIdentityFields(x, fields::JsonWriter{out});
    return out;
  };
  const ReplayedExperiment replayed = ReplayAll({ExperimentSubmitted(identity, "name: tune\n")});
  EXPECT_EQ(replayed.spec_yaml, "name: tune\n");
  EXPECT_EQ(as_json(replayed.identity), as_json(identity));
  EXPECT_EQ(as_json(identity).size(), 9u);  // every field written
  auto restored = DecodeSnapshot(EncodeSnapshot(replayed));
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(as_json(restored->identity), as_json(identity));
  EXPECT_EQ(restored->spec_yaml, "name: tune\n");
}

TEST(JournalSnapshotTest, TheWeightAndThePreemptedTrialsSurviveTheReplayAndTheSnapshot) {
  // Fair-share state a resumed scheduler needs (docs/explanation/fair-share.md): the newest
  // weight_set and the newest trials_preempted list, which an empty list clears.
  const ExperimentIdentity identity{.experiment_id = "f00d1", .base_dir = "/srv/exp"};
  const json submitted = ExperimentSubmitted(identity, "name: tune\n");
  ReplayedExperiment replayed =
      ReplayAll({submitted, WeightSet(2), TrialsPreempted({"f00d1_00003"}),
                 TrialsPreempted({"f00d1_00003", "f00d1_00001"}), WeightSet(0.5)});
  EXPECT_EQ(replayed.weight, 0.5);
  EXPECT_EQ(replayed.preempted, (std::vector<std::string>{"f00d1_00003", "f00d1_00001"}));
  auto restored = DecodeSnapshot(EncodeSnapshot(replayed));
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(restored->weight, 0.5);
  EXPECT_EQ(restored->preempted, replayed.preempted);
  EXPECT_TRUE(ReplayAll({submitted, TrialsPreempted({"f00d1_00003"}), TrialsPreempted({})})
                  .preempted.empty());

  JournalReplayer replayer;
  ASSERT_TRUE(replayer.Apply(submitted).ok());
  const Status bad = replayer.Apply({{"kind", "trials_preempted"}, {"trial_ids", {1, 2}}});
  EXPECT_EQ(bad.code(), StatusCode::kCorruption) << bad.ToString();
}

TEST(JournalSnapshotTest, SnapshotIdsSortByTheSeqTheyCover) {
  // The resume picks the greatest id under the prefix: zero padding makes that the newest.
  EXPECT_LT(SnapshotId("exp-abcde", 99999), SnapshotId("exp-abcde", 100000));
  EXPECT_EQ(SnapshotId("exp-abcde", 7).rfind(SnapshotPrefix("exp-abcde"), 0), 0u);
}

}  // namespace
}  // namespace tunebus::journal
