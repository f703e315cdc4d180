// WhatIfJournal (services/scheduler/control/whatif_journal.hpp) on a fixed journal written by
// hand: the record it folds (results, arrival order, how each trial ended; a restored attempt's
// results replacing the earlier attempt's, a late result of a dead attempt left out), then ASHA
// and the median stopping rule replayed over it (libs/tune/whatif.hpp), every decision worked out
// by hand in the comments. The values are binary fractions, so every sum and mean is exact.
#include "services/scheduler/control/whatif_journal.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "libs/journal/record_frame.hpp"
#include "libs/journal/records.hpp"
#include "libs/tune/whatif.hpp"

namespace tunebus {
namespace {

using nlohmann::json;

json Added(const std::string& id) {
  return {{"kind", "trial_added"}, {"trial_id", id}, {"config", {{"name", id}}}};
}
json Started(const std::string& id, int64_t attempt, int64_t restored_iteration = 0) {
  return {{"kind", "trial_started"},
          {"trial_id", id},
          {"attempt", attempt},
          {"worker_id", "w1"},
          {"restored_iteration", restored_iteration}};
}
json Res(const std::string& id, int64_t attempt, int64_t seq, int64_t iteration, double acc) {
  return {{"kind", "result"},
          {"trial_id", id},
          {"attempt", attempt},
          {"seq", seq},
          {"decision", "continue"},
          {"result",
           {{"acc", acc},
            {"training_iteration", iteration},
            {"time_this_iter_s", 1.0},
            {"time_total_s", double(iteration)},
            {"timestamp", 1700000000},
            {"hostname", "h"}}}};
}
json Status_(const std::string& id, int64_t attempt, const std::string& status,
             bool returned = false) {
  json r = {{"kind", "trial_status"}, {"trial_id", id}, {"attempt", attempt}, {"status", status}};
  if (returned) r["returned"] = true;
  return r;
}

// Four trials, one result each at a time, interleaved as they arrived (acc by iteration):
//   A 0.25 0.5 0.625 0.75                   finished (its trainable returned)
//   B 0.375 0.4375 | 0.5 0.5625             its first attempt failed after iteration 3 (0.5 then
//                                           lost) and restarted from the checkpoint at 2; a late
//                                           iteration 4 of the dead attempt arrives after
//   C 0.125 0.5625 0.625 0.875              the actual best
//   D 0.3125 0.34375 0.25                   errored after iteration 3
// Arrival of the results kept: A1 B1 C1 A2 B2 D1 C2 A3 C3 D2 B3 D3 A4 C4 B4 (B3 is the second
// attempt's; the first attempt's B3 arrived before A3 and was replaced).
std::vector<json> FixedJournal() {
  return {{{"kind", "experiment_submitted"}, {"spec_yaml", "name: x"}},
          Added("A"),
          Added("B"),
          Added("C"),
          Added("D"),
          Started("A", 1),
          Started("B", 1),
          Started("C", 1),
          Res("A", 1, 1, 1, 0.25),
          Res("B", 1, 1, 1, 0.375),
          Res("C", 1, 1, 1, 0.125),
          Res("A", 1, 2, 2, 0.5),
          Res("B", 1, 2, 2, 0.4375),
          Started("D", 1),
          Res("D", 1, 1, 1, 0.3125),
          Res("C", 1, 2, 2, 0.5625),
          Res("B", 1, 3, 3, 0.5),
          Res("A", 1, 3, 3, 0.625),
          Status_("B", 1, "PENDING"),
          Started("B", 2, 2),
          Res("C", 1, 3, 3, 0.625),
          Res("B", 1, 4, 4, 0.625),  // late, from the dead attempt: left out
          Res("D", 1, 2, 2, 0.34375),
          Res("B", 2, 1, 3, 0.5),
          Res("D", 1, 3, 3, 0.25),
          Status_("D", 1, "ERROR"),
          Res("A", 1, 4, 4, 0.75),
          Status_("A", 1, "TERMINATED", /*returned=*/true),
          Res("C", 1, 4, 4, 0.875),
          Status_("C", 1, "TERMINATED"),
          Res("B", 2, 2, 4, 0.5625),
          Status_("B", 2, "TERMINATED"),
          {{"kind", "experiment_ended"}, {"status", "FINISHED"}}};
}

RecordedExperiment Fold() {
  WhatIfJournal fold({"acc"});
  for (const json& r : FixedJournal()) EXPECT_TRUE(fold.Apply(r).ok()) << r.dump();
  EXPECT_EQ(fold.results_seen(), 17);
  return fold.Take("acc", "max");
}

std::vector<double> Accs(const RecordedTrial& t) {
  std::vector<double> out;
  for (const TrainingResult& r : t.results) out.push_back(*r.Number("acc"));
  return out;
}

const TrialReplay& Of(const WhatIfReport& report, const std::string& id) {
  for (const TrialReplay& t : report.per_trial) {
    if (t.trial_id == id) return t;
  }
  ADD_FAILURE() << "no trial " << id;
  static const TrialReplay none;
  return none;
}

TEST(WhatIfJournalTest, FoldsResultsInArrivalOrderWithRestoredAttemptsAndEnds) {
  const RecordedExperiment e = Fold();
  ASSERT_EQ(e.trials.size(), 4u);
  EXPECT_EQ(e.trials[0].trial_id, "A");
  EXPECT_EQ(e.trials[0].config, json({{"name", "A"}}));
  EXPECT_EQ(Accs(e.trials[0]), (std::vector<double>{0.25, 0.5, 0.625, 0.75}));
  EXPECT_EQ(Accs(e.trials[1]), (std::vector<double>{0.375, 0.4375, 0.5, 0.5625}));
  EXPECT_EQ(Accs(e.trials[2]), (std::vector<double>{0.125, 0.5625, 0.625, 0.875}));
  EXPECT_EQ(Accs(e.trials[3]), (std::vector<double>{0.3125, 0.34375, 0.25}));
  // A1 B1 C1 A2 B2 D1 C2 A3 C3 D2 B3 D3 A4 C4 B4
  EXPECT_EQ(e.arrival, (std::vector<uint32_t>{0, 1, 2, 0, 1, 3, 2, 0, 2, 3, 1, 3, 0, 2, 1}));
  EXPECT_EQ(e.trials[0].end, RecordedEnd::kFinished);  // returned
  EXPECT_EQ(e.trials[1].end, RecordedEnd::kFinished);  // reached the longest trial's 4
  EXPECT_EQ(e.trials[2].end, RecordedEnd::kFinished);
  EXPECT_EQ(e.trials[3].end, RecordedEnd::kErrored);
  // Only the kept keys: the result's hostname is dropped.
  EXPECT_FALSE(e.trials[0].results[0].Has("hostname"));
  EXPECT_EQ(e.trials[0].results[0].Number("timestamp"), 1700000000);
}

TEST(WhatIfJournalTest, StoredRecordsFoldAsTheirDecodedForm) {
  // The same journal as the store holds it (framed msgpack, ApplyStored's fast path for result
  // records) gives the same record; a flipped byte is Corruption.
  WhatIfJournal fold({"acc"});
  for (const json& r : FixedJournal()) {
    ASSERT_TRUE(fold.ApplyStored(journal::FrameRecord(journal::EncodeRecord(r))).ok()) << r.dump();
  }
  EXPECT_EQ(fold.results_seen(), 17);
  const RecordedExperiment stored = fold.Take("acc", "max");
  const RecordedExperiment decoded = Fold();
  ASSERT_EQ(stored.trials.size(), decoded.trials.size());
  EXPECT_EQ(stored.arrival, decoded.arrival);
  for (size_t i = 0; i < stored.trials.size(); ++i) {
    EXPECT_EQ(Accs(stored.trials[i]), Accs(decoded.trials[i])) << i;
    EXPECT_EQ(stored.trials[i].end, decoded.trials[i].end) << i;
    EXPECT_EQ(stored.trials[i].config, decoded.trials[i].config) << i;
    EXPECT_EQ(stored.trials[i].results.back().Number("training_iteration"),
              decoded.trials[i].results.back().Number("training_iteration"));
  }
  std::string flipped = journal::FrameRecord(journal::EncodeRecord(Res("A", 1, 9, 9, 0.5)));
  flipped[flipped.size() / 2] ^= 0x20;
  WhatIfJournal bad({"acc"});
  ASSERT_TRUE(bad.Apply(Added("A")).ok());
  EXPECT_EQ(bad.ApplyStored(flipped).code(), StatusCode::kCorruption);
}

TEST(WhatIfJournalTest, AStoppedTrialIsOneThatEndsBeforeTheLongestWithoutReturning) {
  // C's record cut after iteration 2 and terminated (stopped by its trial scheduler or the user):
  // stopped early; D still errored.
  WhatIfJournal fold({"acc"});
  for (const json& r : FixedJournal()) {
    if (r["kind"] == "result" && r["trial_id"] == "C" && r["result"]["training_iteration"] > 2) {
      continue;
    }
    ASSERT_TRUE(fold.Apply(r).ok());
  }
  const RecordedExperiment e = fold.Take("acc", "max");
  EXPECT_EQ(e.trials[2].results.size(), 2u);
  EXPECT_EQ(e.trials[2].end, RecordedEnd::kStopped);
  EXPECT_EQ(e.trials[3].end, RecordedEnd::kErrored);
}

TEST(WhatIfJournalTest, ARecordNamingAnUnknownTrialIsCorruption) {
  WhatIfJournal fold({"acc"});
  Status s = fold.Apply(Res("Z", 1, 1, 1, 0.5));
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("trial Z"), std::string::npos) << s.message();
  s = fold.Apply({{"kind", "trial_added"}, {"config", json::object()}});  // no trial_id
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
}

TEST(WhatIfJournalTest, AshaReplayOfTheFixedJournalByHand) {
  // ASHA grace_period 1, reduction_factor 2, max_t 4: rungs 1, 2, 4; the cutoff is the median
  // (quantile 1 - 1/2, numpy's linear interpolation) of the values the rung holds already; a trial
  // below it stops; its value joins the rung either way.
  //   A1 0.25   rung 1 {}: first, continue                                   rung 1 {.25}
  //   B1 0.375  cutoff .25: continue                                         {.25 .375}
  //   C1 0.125  cutoff .25 + .5 * .125 = .3125: STOP C at 1                  {.125 .25 .375}
  //   A2 0.5    rung 2 {}: continue                                          rung 2 {.5}
  //   B2 0.4375 cutoff .5: STOP B at 2                                       {.4375 .5}
  //   D1 0.3125 rung 1 {.125 .25 .375}: rank .5 * 2 = 1: cutoff .25: continue
  //   C2        C stopped: a free turn, nobody waits
  //   A3 0.625  no new rung: continue;   C3: free
  //   D2 0.34375 rung 2 {.4375 .5}: cutoff .46875: STOP D at 2
  //   B3, D3    free;   A4 0.75: max_t: STOP (where its record ends: as recorded);   C4, B4 free
  // Iterations (1 s each): actual 4 + 4 + 4 + 3 = 15; replay A 4 + B 2 + C 1 + D 2 = 9.
  // Best final: actual C 0.875; replay A 0.75 (B .4375, C .125, D .34375): regret 0.125.
  const RecordedExperiment e = Fold();
  Result<WhatIfReport> r =
      ReplayExperiment(e, "asha", {{"grace_period", 1}, {"reduction_factor", 2}, {"max_t", 4}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->actual.training_iterations, 15);
  EXPECT_EQ(r->replay.training_iterations, 9);
  EXPECT_DOUBLE_EQ(r->actual.trial_seconds, 15);
  EXPECT_DOUBLE_EQ(r->replay.trial_seconds, 9);
  EXPECT_EQ(r->actual.best_trial_id, "C");
  EXPECT_EQ(r->replay.best_trial_id, "A");
  EXPECT_DOUBLE_EQ(*r->regret, 0.125);
  EXPECT_EQ(r->trials_stopped, 3);
  EXPECT_EQ(r->trials_unknown_beyond, 0);
  EXPECT_EQ(Of(*r, "A").fate, ReplayFate::kAsRecorded);
  EXPECT_EQ(Of(*r, "B").last_training_iteration, 2);
  EXPECT_EQ(Of(*r, "B").stop_detail.at("rung"), 2);
  EXPECT_EQ(Of(*r, "D").fate, ReplayFate::kStopped);
  EXPECT_EQ(Of(*r, "D").last_training_iteration, 2);
  EXPECT_DOUBLE_EQ(Of(*r, "D").stop_detail.at("cutoff").get<double>(), 0.46875);
  ASSERT_TRUE(r->actual_best.has_value());
  EXPECT_EQ(r->actual_best->trial_id, "C");
  EXPECT_EQ(r->actual_best->fate, ReplayFate::kStopped);
  EXPECT_EQ(r->actual_best->last_training_iteration, 1);
  EXPECT_EQ(r->actual_best->stop_detail.at("rung"), 1);
  EXPECT_DOUBLE_EQ(r->actual_best->stop_detail.at("cutoff").get<double>(), 0.3125);
}

TEST(WhatIfJournalTest, MedianStoppingReplayOfTheFixedJournalByHand) {
  // Median stopping, time_attr training_iteration, grace_period 1, min_samples_required 2: at a
  // result at time t > 1, a trial stops when its best so far is below the median of the running
  // means (results at 1..t) of the other trials that reached t (at least 2 of them).
  //   A1 B1 C1 D1 (t = 1): not past the grace period;  A2, B2, A3, C3: fewer than 2 others at t.
  //   C2 (t 2): A .375, B .40625: median .390625 <= C's best .5625: continue.
  //   D2 (t 2): A .375, B .40625, C (.125 + .5625) / 2 = .34375: median .375 > D's best
  //             .34375: STOP D at 2.
  //   B3 (t 3): A (.25 + .5 + .625) / 3, C (.125 + .5625 + .625) / 3: median .4479... <= .5.
  //   D3: free;  A4, C4: fewer than 2 others at 4.
  //   B4 (t 4): A 2.125 / 4 = .53125, C 2.1875 / 4 = .546875: median .5390625 <= .5625.
  // Iterations: actual 15, replay 4 + 4 + 4 + 2 = 14. Best final: C 0.875 both: regret 0.
  const RecordedExperiment e = Fold();
  Result<WhatIfReport> r = ReplayExperiment(
      e, "median_stopping",
      {{"time_attr", "training_iteration"}, {"grace_period", 1}, {"min_samples_required", 2}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->replay.training_iterations, 14);
  EXPECT_EQ(r->trials_stopped, 1);
  EXPECT_EQ(Of(*r, "D").fate, ReplayFate::kStopped);
  EXPECT_EQ(Of(*r, "D").last_training_iteration, 2);
  EXPECT_DOUBLE_EQ(Of(*r, "D").stop_detail.at("median").get<double>(), 0.375);
  EXPECT_DOUBLE_EQ(Of(*r, "D").stop_detail.at("best").get<double>(), 0.34375);
  EXPECT_EQ(r->replay.best_trial_id, "C");
  EXPECT_DOUBLE_EQ(*r->regret, 0);
  EXPECT_EQ(r->actual_best->fate, ReplayFate::kAsRecorded);
  for (const char* id : {"A", "B", "C"}) EXPECT_EQ(Of(*r, id).fate, ReplayFate::kAsRecorded) << id;
}

}  // namespace
}  // namespace tunebus
