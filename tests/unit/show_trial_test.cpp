// Tests for what `tunectl show` prints of the checkpoints the store refused
// (services/tunectl/show_trial.hpp): runs of consecutive iterations with one reason are one line,
// with the store's reason text, cut only when very long; any shape from the network is taken.
#include "services/tunectl/show_trial.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tunebus {
namespace {

using json = nlohmann::json;
using Lines = std::vector<std::string>;

constexpr const char* kDiskFull =
    "io_error: RocksDB write failed: IO error: No space left on device";

// A trial object with refused checkpoints {iteration, reason} and stored ones at `stored`.
json TrialWith(const std::vector<std::pair<int64_t, std::string>>& refused,
               const std::vector<int64_t>& stored = {}) {
  json t = {{"trial_id", "exp_00000"},
            {"checkpoints", json::array()},
            {"checkpoints_not_stored", json::array()},
            {"num_checkpoints_not_stored", refused.size()}};
  for (const auto& [iteration, reason] : refused)
    t["checkpoints_not_stored"].push_back({{"training_iteration", iteration}, {"reason", reason}});
  for (int64_t iteration : stored)
    t["checkpoints"].push_back({{"checkpoint_id", "c"}, {"training_iteration", iteration}});
  return t;
}

TEST(ShowTrialTest, ConsecutiveIterationsWithOneReasonAreOneLine) {
  // Checkpoints 1-3 and 11 stored, 4-10 refused (the store's disk was full): one line with the
  // store's reason as it came.
  std::vector<std::pair<int64_t, std::string>> refused;
  for (int64_t i = 4; i <= 10; ++i) refused.emplace_back(i, kDiskFull);
  EXPECT_EQ(RenderCheckpointsNotStored(TrialWith(refused, {1, 2, 3, 11})),
            Lines{std::string("checkpoints 4–10 not stored: ") + kDiskFull});
}

TEST(ShowTrialTest, OneRefusedCheckpointIsNamedAlone) {
  EXPECT_EQ(RenderCheckpointsNotStored(TrialWith({{12, kDiskFull}})),
            Lines{std::string("checkpoint 12 not stored: ") + kDiskFull});
}

TEST(ShowTrialTest, ATrialWithEveryCheckpointStoredPrintsNothing) {
  EXPECT_TRUE(RenderCheckpointsNotStored(TrialWith({}, {1, 2})).empty());
  // An older scheduler's trial object has no such field.
  EXPECT_TRUE(RenderCheckpointsNotStored(json{{"trial_id", "exp_00000"}}).empty());
}

TEST(ShowTrialTest, ARunEndsAtAnotherReasonAStoredCheckpointOrARestart) {
  // 4-5 refused for a full disk, 6 for a quota; 8 and 10 refused with 9 stored between them;
  // then a requeue restarted from an older checkpoint and 5-6 were refused again.
  const json t = TrialWith({{4, kDiskFull},
                            {5, kDiskFull},
                            {6, "io_error: quota exceeded"},
                            {8, "io_error: quota exceeded"},
                            {10, "io_error: quota exceeded"},
                            {5, "io_error: quota exceeded"},
                            {6, "io_error: quota exceeded"}},
                           {1, 9});
  EXPECT_EQ(RenderCheckpointsNotStored(t),
            (Lines{std::string("checkpoints 4–5 not stored: ") + kDiskFull,
                   "checkpoints 6–8 not stored (2 checkpoints): io_error: quota exceeded",
                   "checkpoint 10 not stored: io_error: quota exceeded",
                   "checkpoints 5–6 not stored: io_error: quota exceeded"}));
}

TEST(ShowTrialTest, ARunWithGapsSaysHowManyCheckpointsItHolds) {
  // checkpoint_freq 5: 5, 10 and 15 refused with nothing stored between them.
  EXPECT_EQ(
      RenderCheckpointsNotStored(TrialWith({{5, kDiskFull}, {10, kDiskFull}, {15, kDiskFull}})),
      Lines{std::string("checkpoints 5–15 not stored (3 checkpoints): ") + kDiskFull});
}

TEST(ShowTrialTest, AVeryLongReasonIsCutAtACharacterBoundary) {
  // A reason past kMaxNotStoredReasonBytes keeps its first bytes, never half a UTF-8 character,
  // and ends in "…"; a shorter one is printed whole.
  std::string reason = "io_error: " + std::string(kMaxNotStoredReasonBytes - 11, 'x') + "é tail";
  const Lines lines = RenderCheckpointsNotStored(TrialWith({{3, reason}}));
  ASSERT_EQ(lines.size(), 1u);
  const std::string prefix = "checkpoint 3 not stored: ";
  EXPECT_EQ(lines[0], prefix + reason.substr(0, kMaxNotStoredReasonBytes - 1) + "…");
  const std::string whole = "io_error: " + std::string(kMaxNotStoredReasonBytes - 10, 'y');
  EXPECT_EQ(RenderCheckpointsNotStored(TrialWith({{3, whole}}))[0], prefix + whole);
}

TEST(ShowTrialTest, RefusalsBeyondTheListAreCounted) {
  // The trial lists the newest 100; the count says how many came before them.
  json t = TrialWith({{201, kDiskFull}, {202, kDiskFull}});
  t["num_checkpoints_not_stored"] = 102;
  EXPECT_EQ(RenderCheckpointsNotStored(t),
            (Lines{"100 earlier checkpoints not stored (not listed)",
                   std::string("checkpoints 201–202 not stored: ") + kDiskFull}));
}

TEST(ShowTrialTest, AnyShapeIsTakenWithoutThrowing) {
  // The trial object comes from the network: wrong types are skipped, nothing throws.
  EXPECT_TRUE(RenderCheckpointsNotStored(json("not an object")).empty());
  EXPECT_TRUE(RenderCheckpointsNotStored(json{{"checkpoints_not_stored", "x"}}).empty());
  const json odd = {
      {"checkpoints", 3},
      {"checkpoints_not_stored",
       {1, json::object(), {{"training_iteration", "7"}}, {{"training_iteration", 7}}}}};
  EXPECT_EQ(RenderCheckpointsNotStored(odd), Lines{"checkpoint 7 not stored: "});
}

}  // namespace
}  // namespace tunebus
