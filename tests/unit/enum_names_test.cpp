// Tests for the enums' names at the boundary (libs/core/enum_names.hpp and the enums built on
// it): every value's name parses back to it, the names are the bytes the wire, the journal and
// the experiment file carry, and an unknown word is an InvalidArgument that names it.
#include <gtest/gtest.h>

#include <string>

#include "libs/core/action.hpp"
#include "libs/core/checkpoint_failure.hpp"
#include "libs/core/experiment_status.hpp"
#include "libs/core/fail_fast.hpp"
#include "libs/core/rerun_mode.hpp"
#include "libs/trainable/trainable.hpp"
#include "proto/events.hpp"
#include "proto/resources.hpp"

namespace tunebus {
namespace {

// Every row of `table` round-trips through name and parse, and `unknown` is refused by name.
template <typename E, size_t N, typename NameFn, typename ParseFn>
void ExpectRoundTrip(const EnumName<E> (&table)[N], NameFn name, ParseFn parse,
                     const std::string& unknown) {
  for (const EnumName<E>& row : table) {
    EXPECT_STREQ(name(row.value), row.name);
    auto parsed = parse(row.name);
    ASSERT_TRUE(parsed.ok()) << row.name << ": " << parsed.status().ToString();
    EXPECT_EQ(*parsed, row.value) << row.name;
  }
  auto bad = parse(unknown);
  ASSERT_FALSE(bad.ok()) << unknown;
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'" + unknown + "'"), std::string::npos)
      << bad.status().message();
}

TEST(EnumNamesTest, ActionNamesAreTheWireWordsAndRoundTrip) {
  ExpectRoundTrip(kActionNames, ActionName, ParseAction, "halt");
  EXPECT_STREQ(ActionName(Action::kContinue), "continue");
  EXPECT_STREQ(ActionName(Action::kCheckpoint), "checkpoint");
  EXPECT_STREQ(ActionName(Action::kPause), "pause");
  EXPECT_STREQ(ActionName(Action::kCheckpointAndStop), "checkpoint_and_stop");
  EXPECT_STREQ(ActionName(Action::kStop), "stop");
  EXPECT_FALSE(ParseAction("Continue").ok());  // exact spelling only
  EXPECT_EQ(ParseAction("halt").status().message(),
            "unknown action 'halt' (expected continue, checkpoint, pause, checkpoint_and_stop or "
            "stop)");
}

TEST(EnumNamesTest, ActionsThatSaveAndThenStop) {
  EXPECT_FALSE(SavesCheckpoint(Action::kContinue));
  EXPECT_TRUE(SavesCheckpoint(Action::kCheckpoint));
  EXPECT_TRUE(SavesCheckpoint(Action::kPause));
  EXPECT_TRUE(SavesCheckpoint(Action::kCheckpointAndStop));
  EXPECT_FALSE(SavesCheckpoint(Action::kStop));
  EXPECT_FALSE(StopsAfterSaving(Action::kCheckpoint));
  EXPECT_TRUE(StopsAfterSaving(Action::kPause));
  EXPECT_TRUE(StopsAfterSaving(Action::kCheckpointAndStop));
  EXPECT_FALSE(StopsAfterSaving(Action::kStop));
}

TEST(EnumNamesTest, ATrainableTakesOnlyContinueCheckpointAndStop) {
  for (Action a : {Action::kContinue, Action::kCheckpoint, Action::kStop})
    EXPECT_TRUE(trainable::CheckTrainableAction(a).ok()) << ActionName(a);
  for (Action a : {Action::kPause, Action::kCheckpointAndStop}) {
    EXPECT_EQ(trainable::CheckTrainableAction(a).code(), StatusCode::kInvalidArgument)
        << ActionName(a);
  }
}

TEST(EnumNamesTest, ExperimentStatusNamesRoundTrip) {
  ExpectRoundTrip(kExperimentStatusNames, ExperimentStatusName, ParseExperimentStatus, "DONE");
  EXPECT_STREQ(ExperimentStatusName(ExperimentStatus::kInterrupted), "INTERRUPTED");
  EXPECT_FALSE(ParseExperimentStatus("").ok());
}

TEST(EnumNamesTest, FailFastNamesAreTheExperimentFileValues) {
  ExpectRoundTrip(kFailFastNames, FailFastName, ParseFailFast, "yes");
  EXPECT_STREQ(FailFastName(FailFast::kOff), "false");
  EXPECT_STREQ(FailFastName(FailFast::kStopExperiment), "true");
  EXPECT_STREQ(FailFastName(FailFast::kRaise), "raise");
}

TEST(EnumNamesTest, CheckpointFailureModeNamesAreTheExperimentFileValues) {
  ExpectRoundTrip(kCheckpointFailureModeNames, CheckpointFailureModeName,
                  ParseCheckpointFailureMode, "retry");
  EXPECT_STREQ(CheckpointFailureModeName(CheckpointFailureMode::kContinue), "continue");
  EXPECT_STREQ(CheckpointFailureModeName(CheckpointFailureMode::kPause), "pause");
  EXPECT_STREQ(CheckpointFailureModeName(CheckpointFailureMode::kFail), "fail");
}

TEST(EnumNamesTest, RerunModeNamesRoundTripAndTheEmptyWordIsNone) {
  ExpectRoundTrip(kRerunModeNames, RerunModeName, ParseRerunMode, "sideways");
  EXPECT_EQ(*ParseRerunMode(""), RerunMode::kNone);
  EXPECT_EQ(ParseRerunMode("sideways").status().message(),
            "unknown rerun mode 'sideways' (expected \"\", restore or restart)");
}

TEST(EnumNamesTest, NodeEventKindNamesRoundTrip) {
  ExpectRoundTrip(proto::kNodeEventKindNames, proto::NodeEventKindName, proto::ParseNodeEventKind,
                  "node_moved");
  EXPECT_STREQ(proto::NodeEventKindName(proto::NodeEventKind::kResourcesFreed), "resources_freed");
}

TEST(EnumNamesTest, SchedulerEventKindNamesRoundTripAndPickTheirTopic) {
  ExpectRoundTrip(proto::kSchedulerEventKindNames, proto::SchedulerEventKindName,
                  proto::ParseSchedulerEventKind, "?");
  EXPECT_STREQ(proto::SchedulerEventTopic(proto::SchedulerEventKind::kExperimentEnded),
               "experiment");
  EXPECT_STREQ(proto::SchedulerEventTopic(proto::SchedulerEventKind::kTrialResult), "trial");
}

}  // namespace
}  // namespace tunebus
