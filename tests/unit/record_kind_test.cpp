// Tests for the journal's record kinds (libs/journal/record_kind.hpp) and FailureKind
// (libs/core/failure_kind.hpp): each has one name table whose names are the bytes journals
// hold, and replay dispatches through one handler per kind, refusing an unknown kind in one
// place with the record's position and the kind's name.
#include "libs/journal/record_kind.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "libs/core/failure_kind.hpp"
#include "libs/journal/records.hpp"
#include "libs/journal/replay.hpp"

namespace tunebus::journal {
namespace {

using nlohmann::json;

TEST(RecordKindTest, NamesAreTheJournalFormatsBytesAndRoundTrip) {
  // docs/reference/journal-format.md "Record kinds": a stored record's kind must never be
  // respelled.
  const std::pair<RecordKind, const char*> expected[] = {
      {RecordKind::kExperimentSubmitted, "experiment_submitted"},
      {RecordKind::kTrialAdded, "trial_added"},
      {RecordKind::kSearcherState, "searcher_state"},
      {RecordKind::kSearcherDelta, "searcher"},
      {RecordKind::kTrialSchedulerDelta, "trial_scheduler"},
      {RecordKind::kTrialStarted, "trial_started"},
      {RecordKind::kResult, "result"},
      {RecordKind::kTrialStatus, "trial_status"},
      {RecordKind::kCheckpointSaved, "checkpoint_saved"},
      {RecordKind::kCheckpointDeleted, "checkpoint_deleted"},
      {RecordKind::kCheckpointFailed, "checkpoint_failed"},
      {RecordKind::kTrialUpdated, "trial_updated"},
      {RecordKind::kDriverDecision, "driver_decision"},
      {RecordKind::kExperimentResumed, "experiment_resumed"},
      {RecordKind::kWeightSet, "weight_set"},
      {RecordKind::kTrialsPreempted, "trials_preempted"},
      {RecordKind::kExperimentEnded, "experiment_ended"},
  };
  ASSERT_EQ(std::size(expected), kRecordKindCount);
  for (const auto& [kind, name] : expected) {
    EXPECT_STREQ(RecordKindName(kind), name);
    EXPECT_EQ(FindRecordKind(name), kind) << name;
    EXPECT_EQ(KindOf(json{{kKindField, name}}), kind) << name;
  }
  EXPECT_EQ(FindRecordKind("no_such_kind"), std::nullopt);
  EXPECT_EQ(KindOf(json{{"trial_id", "t1"}}), std::nullopt);
  EXPECT_EQ(KindOf(json{{kKindField, 7}}), std::nullopt);
}

TEST(RecordKindTest, EveryWriterSpellsItsKindFromTheTable) {
  Trial t;
  t.trial_id = "t1";
  t.attempt = 1;
  EXPECT_EQ(KindOf(TrialAdded(t)), RecordKind::kTrialAdded);
  EXPECT_EQ(KindOf(TrialStarted(t)), RecordKind::kTrialStarted);
  EXPECT_EQ(KindOf(TrialStatusRecord(t)), RecordKind::kTrialStatus);
  EXPECT_EQ(KindOf(ResultRecord(t, json::object(), Action::kContinue)), RecordKind::kResult);
  EXPECT_EQ(KindOf(SearcherState(json::object())), RecordKind::kSearcherState);
  EXPECT_EQ(KindOf(SearcherDelta(json::array())), RecordKind::kSearcherDelta);
  EXPECT_EQ(KindOf(TrialSchedulerDelta(json::array())), RecordKind::kTrialSchedulerDelta);
  EXPECT_EQ(KindOf(ExperimentEnded(ExperimentStatus::kFinished, "")), RecordKind::kExperimentEnded);
  EXPECT_EQ(KindOf(ExperimentResumed(1, RerunMode::kNone)), RecordKind::kExperimentResumed);
  EXPECT_EQ(KindOf(WeightSet(2)), RecordKind::kWeightSet);
  EXPECT_EQ(KindOf(TrialsPreempted({"t1"})), RecordKind::kTrialsPreempted);
  EXPECT_EQ(KindOf(CheckpointSavedRecord(t, CheckpointRef{})), RecordKind::kCheckpointSaved);
  EXPECT_EQ(KindOf(CheckpointDeletedRecord(t, "c")), RecordKind::kCheckpointDeleted);
  EXPECT_EQ(KindOf(CheckpointFailedRecord(t, CheckpointNotStored{})),
            RecordKind::kCheckpointFailed);
  EXPECT_EQ(KindOf(TrialUpdated(t, json::object())), RecordKind::kTrialUpdated);
  EXPECT_EQ(KindOf(DriverDecisionRecord(t, 1, json::object())), RecordKind::kDriverDecision);
  // The packed encoders write the same kind bytes as the documents.
  EXPECT_EQ(EncodeTrialAdded(t), EncodeRecord(TrialAdded(t)));
  EXPECT_EQ(EncodeTrialStatusRecord(t), EncodeRecord(TrialStatusRecord(t)));
  EXPECT_EQ(EncodeSearcherDelta(json::array()), EncodeRecord(SearcherDelta(json::array())));
}

TEST(RecordKindTest, ReplayRefusesAnUnknownKindWithItsPositionAndName) {
  // A newer writer's kind stops replay at that record (docs/how-to/upgrade.md), whether or
  // not the record names a trial.
  JournalReplayer replayer;
  ASSERT_TRUE(replayer.Apply(ExperimentSubmitted(ExperimentIdentity{}, "name: x\n")).ok());
  for (const json& record : {json{{kKindField, "no_such_kind"}},
                             json{{kKindField, "no_such_kind"}, {"trial_id", "t9"}}}) {
    const Status s = replayer.Apply(record);
    EXPECT_EQ(s.code(), StatusCode::kCorruption);
    EXPECT_EQ(s.message(), "journal record 2 has unknown kind 'no_such_kind'");
  }
  EXPECT_EQ(replayer.Apply(json{{"trial_id", "t9"}}).message(),
            "journal record 2 has unknown kind ''");
  EXPECT_EQ(replayer.state().records, 1u);
}

TEST(RecordKindTest, ReplayRefusesARecordBeforeSubmissionAndOneNamingAnUnknownTrial) {
  JournalReplayer replayer;
  EXPECT_EQ(replayer.Apply(WeightSet(2)).message(),
            "journal record 1 (weight_set) comes before experiment_submitted");
  ASSERT_TRUE(replayer.Apply(ExperimentSubmitted(ExperimentIdentity{}, "name: x\n")).ok());
  Trial t;
  t.trial_id = "t9";
  EXPECT_EQ(replayer.Apply(TrialStarted(t)).message(),
            "journal record 2 (trial_started) names unknown trial t9");
  EXPECT_EQ(replayer.Apply(json{{kKindField, "weight_set"}}).code(), StatusCode::kCorruption);
  EXPECT_EQ(replayer.state().records, 1u);
  ASSERT_TRUE(replayer.Apply(WeightSet(2)).ok());
  EXPECT_EQ(replayer.state().weight, 2.0);
}

TEST(FailureKindTest, NamesAreTheJournalsAndAnyOtherWordIsATrainablesError) {
  EXPECT_STREQ(FailureKindName(FailureKind::kError), "error");
  EXPECT_STREQ(FailureKindName(FailureKind::kWorkerLost), "worker_lost");
  for (const EnumName<FailureKind>& row : kFailureKindNames) {
    EXPECT_EQ(FailureKindNamed(row.name), row.value) << row.name;
  }
  EXPECT_EQ(FailureKindNamed(""), FailureKind::kError);
  EXPECT_EQ(FailureKindNamed("cosmic_ray"), FailureKind::kError);
}

}  // namespace
}  // namespace tunebus::journal
