// SchedulerReplay (libs/tune/whatif.hpp): replays of fixed recorded experiments through ASHA and
// the median stopping rule worked out by hand, the unknown-beyond accounting of trials the actual
// run stopped early, PAUSE as time slicing, the refusals, a 1,000 trials x 100 results replay
// checked against an independent ASHA written from Li et al. 2020's Algorithm 2, a replay of the
// median stopping rule checked against the rule written as a plain scan, and sweeps
// (libs/tune/whatif_sweep.hpp) worked out by hand.
#include "libs/tune/whatif.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "libs/tune/scheduler_params.hpp"
#include "libs/tune/whatif_sweep.hpp"

namespace tunebus {
namespace {

using nlohmann::json;

// A trial whose i-th result (training_iteration i + 1) reports acc = curve[i] after
// `seconds_per_iter` seconds.
RecordedTrial Curve(const std::string& id, const std::vector<double>& curve,
                    double seconds_per_iter = 1, RecordedEnd end = RecordedEnd::kFinished) {
  RecordedTrial t;
  t.trial_id = id;
  t.config = {{"id", id}};
  t.end = end;
  for (size_t i = 0; i < curve.size(); ++i) {
    TrainingResult r;
    r.SetDouble("acc", curve[i]);
    r.SetInt("training_iteration", int64_t(i + 1));
    r.SetDouble("time_this_iter_s", seconds_per_iter);
    r.SetDouble("time_total_s", seconds_per_iter * double(i + 1));
    t.results.push_back(std::move(r));
  }
  return t;
}

// Round robin: every trial's first result in creation order, then every second result, ...
std::vector<uint32_t> RoundRobin(const std::vector<RecordedTrial>& trials) {
  std::vector<uint32_t> out;
  for (size_t k = 0;; ++k) {
    const size_t before = out.size();
    for (uint32_t i = 0; i < trials.size(); ++i) {
      if (k < trials[i].results.size()) out.push_back(i);
    }
    if (out.size() == before) return out;
  }
}

RecordedExperiment Experiment(std::vector<RecordedTrial> trials, std::string mode = "max") {
  RecordedExperiment e;
  e.trials = std::move(trials);
  e.arrival = RoundRobin(e.trials);
  e.metric = "acc";
  e.mode = std::move(mode);
  return e;
}

// Four trials of nine iterations, all run to the end (a FIFO run), four at a time.
//   A 1 s/iter: 0.5 0.6 0.7 0.75 0.8 0.82 0.85 0.88 0.9
//   B 2 s/iter: 0.4 0.45 0.5 0.55 0.6 0.62 0.64 0.66 0.7
//   C 1.5 s/iter: 0.6 0.62 0.65 0.7 0.78 0.85 0.9 0.93 0.95   (the actual best)
//   D 0.5 s/iter: 0.3 0.35 0.4 0.45 0.5 0.55 0.6 0.65 0.7
RecordedExperiment FourByNine(RecordedEnd b = RecordedEnd::kFinished,
                              RecordedEnd c = RecordedEnd::kFinished,
                              RecordedEnd d = RecordedEnd::kFinished) {
  return Experiment({Curve("A", {0.5, 0.6, 0.7, 0.75, 0.8, 0.82, 0.85, 0.88, 0.9}, 1),
                     Curve("B", {0.4, 0.45, 0.5, 0.55, 0.6, 0.62, 0.64, 0.66, 0.7}, 2, b),
                     Curve("C", {0.6, 0.62, 0.65, 0.7, 0.78, 0.85, 0.9, 0.93, 0.95}, 1.5, c),
                     Curve("D", {0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7}, 0.5, d)});
}

const json kAsha = {{"grace_period", 1}, {"reduction_factor", 3}, {"max_t", 9}};

const TrialReplay& Of(const WhatIfReport& report, const std::string& id) {
  for (const TrialReplay& t : report.per_trial) {
    if (t.trial_id == id) return t;
  }
  ADD_FAILURE() << "no trial " << id;
  static const TrialReplay none;
  return none;
}

TEST(WhatIfTest, AshaStopsTheActualBestAtRungThree) {
  // ASHA, grace_period 1, reduction_factor 3, max_t 9: rungs at 1, 3, 9; a trial reaching a rung
  // stops below the 2/3 quantile (numpy's linear interpolation) of what the rung holds already.
  //   rung 1: A 0.5 (first: continue); B 0.4 < 0.5: STOP;
  //           C 0.6 vs {0.4, 0.5} -> 0.4 + 0.1 * 2/3 = 0.467: continue;
  //           D 0.3 vs {0.4, 0.5, 0.6} -> 0.5 + 0.1 * 1/3 = 0.533: STOP.
  //   rung 3: A 0.7 (first: continue); C 0.65 < 0.7: STOP.   A runs to 9 (max_t).
  // Iterations: actual 36; replay A 9 + B 1 + C 3 + D 1 = 14.
  // Seconds: actual 9 * (1 + 2 + 1.5 + 0.5) = 45; replay 9 + 2 + 4.5 + 0.5 = 16.
  // Best final: actual C 0.95; replay A 0.9 (B 0.4, C 0.65, D 0.3): regret 0.05.
  const RecordedExperiment e = FourByNine();
  Result<WhatIfReport> r = ReplayExperiment(e, "asha", kAsha);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->scheduler, "asha");
  EXPECT_EQ(r->trials, 4);
  EXPECT_EQ(r->actual.training_iterations, 36);
  EXPECT_DOUBLE_EQ(r->actual.trial_seconds, 45);
  EXPECT_EQ(r->replay.training_iterations, 14);
  EXPECT_DOUBLE_EQ(r->replay.trial_seconds, 16);
  EXPECT_EQ(r->actual.best_trial_id, "C");
  EXPECT_DOUBLE_EQ(*r->actual.best_final, 0.95);
  EXPECT_EQ(r->replay.best_trial_id, "A");
  EXPECT_DOUBLE_EQ(*r->replay.best_final, 0.9);
  EXPECT_NEAR(*r->regret, 0.05, 1e-12);
  EXPECT_EQ(r->trials_stopped, 3);
  EXPECT_EQ(r->trials_unknown_beyond, 0);
  EXPECT_EQ(r->pauses, 0);

  EXPECT_EQ(Of(*r, "A").fate, ReplayFate::kAsRecorded);
  EXPECT_EQ(Of(*r, "A").results_replayed, 9);
  for (const char* id : {"B", "D"}) {
    EXPECT_EQ(Of(*r, id).fate, ReplayFate::kStopped) << id;
    EXPECT_EQ(Of(*r, id).last_training_iteration, 1) << id;
    EXPECT_EQ(Of(*r, id).stop_detail.at("rung"), 1) << id;
  }
  EXPECT_NEAR(Of(*r, "D").stop_detail.at("cutoff").get<double>(), 0.5 + 0.1 / 3, 1e-12);
  ASSERT_TRUE(r->actual_best.has_value());
  EXPECT_EQ(r->actual_best->trial_id, "C");
  EXPECT_EQ(r->actual_best->fate, ReplayFate::kStopped);
  EXPECT_EQ(r->actual_best->last_training_iteration, 3);
  EXPECT_EQ(r->actual_best->stop_detail.at("rung"), 3);
  EXPECT_DOUBLE_EQ(r->actual_best->stop_detail.at("cutoff").get<double>(), 0.7);
  EXPECT_DOUBLE_EQ(*r->actual_best->replay_final, 0.65);

  const json j = r->ToJson();
  EXPECT_EQ(j.at("saved").at("training_iterations"), 22);
  EXPECT_DOUBLE_EQ(j.at("saved").at("trial_seconds").get<double>(), 29);
  EXPECT_EQ(j.at("actual_best").at("fate"), "stopped");
  EXPECT_EQ(j.at("per_trial").size(), 4u);
  EXPECT_EQ(j.at("scheduler_config"), kAsha);
}

TEST(WhatIfTest, FifoReplaysEverythingAsRecorded) {
  // FIFO never stops: every result is fed, totals equal the actual ones, regret 0.
  Result<WhatIfReport> r = ReplayExperiment(FourByNine(), "fifo", json::object());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->replay.training_iterations, 36);
  EXPECT_DOUBLE_EQ(r->replay.trial_seconds, 45);
  EXPECT_DOUBLE_EQ(*r->regret, 0);
  EXPECT_EQ(r->trials_stopped + r->trials_unknown_beyond, 0);
  for (const TrialReplay& t : r->per_trial) EXPECT_EQ(t.fate, ReplayFate::kAsRecorded);
}

// The record an ASHA run (grace_period 1, reduction_factor 3) leaves of the four curves above:
// B and D stopped at 1, C at 3, A ran to 9.
RecordedExperiment AshaRecord() {
  RecordedExperiment e =
      FourByNine(RecordedEnd::kStopped, RecordedEnd::kStopped, RecordedEnd::kStopped);
  e.trials[1].results.resize(1);
  e.trials[2].results.resize(3);
  e.trials[3].results.resize(1);
  e.arrival = RoundRobin(e.trials);
  return e;
}

TEST(WhatIfTest, TrialsTheActualRunStoppedEarlyAreUnknownBeyondNeverInvented) {
  // FIFO over the ASHA record: B, D (at 1) and C (at 3) would run on, past their records.
  Result<WhatIfReport> fifo = ReplayExperiment(AshaRecord(), "fifo", json::object());
  ASSERT_TRUE(fifo.ok()) << fifo.status().ToString();
  EXPECT_EQ(fifo->trials_unknown_beyond, 3);
  EXPECT_EQ(fifo->replay.training_iterations, 14);  // nothing past the record
  EXPECT_EQ(fifo->actual.training_iterations, 14);
  EXPECT_EQ(fifo->replay.best_trial_id, "A");  // the unknown ones do not count
  EXPECT_EQ(fifo->actual.best_trial_id, "A");  // finals: A 0.9, B 0.4, C 0.65, D 0.3
  EXPECT_DOUBLE_EQ(*fifo->regret, 0);
  EXPECT_EQ(Of(*fifo, "C").fate, ReplayFate::kUnknownBeyond);
  EXPECT_EQ(Of(*fifo, "C").last_training_iteration, 3);

  // ASHA with grace_period 3 (rungs 3, 9): B and D continue at iteration 1, where their records
  // end: unknown beyond. C reaches rung 3 after A (0.7) with 0.65: STOP, as it did (its record
  // ends there): as recorded. A runs to max_t.
  Result<WhatIfReport> asha = ReplayExperiment(
      AshaRecord(), "asha", {{"grace_period", 3}, {"reduction_factor", 3}, {"max_t", 9}});
  ASSERT_TRUE(asha.ok()) << asha.status().ToString();
  EXPECT_EQ(asha->trials_unknown_beyond, 2);
  EXPECT_EQ(Of(*asha, "B").fate, ReplayFate::kUnknownBeyond);
  EXPECT_EQ(Of(*asha, "D").fate, ReplayFate::kUnknownBeyond);
  EXPECT_EQ(Of(*asha, "C").fate, ReplayFate::kAsRecorded);
  EXPECT_EQ(asha->trials_stopped, 0);
  EXPECT_EQ(asha->replay.training_iterations, 14);
  EXPECT_EQ(asha->replay.best_trial_id, "A");
  EXPECT_EQ(asha->ToJson().at("trials_unknown_beyond"), 2);
}

TEST(WhatIfTest, ReplayingTheActualSchedulerReproducesItsRun) {
  // The ASHA record replayed through the same ASHA (grace_period 1, reduction_factor 3): B and D
  // stop at rung 1, C at rung 3, exactly where their records end; nothing is saved or unknown.
  Result<WhatIfReport> r = ReplayExperiment(AshaRecord(), "asha", kAsha);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->replay.training_iterations, r->actual.training_iterations);
  EXPECT_DOUBLE_EQ(r->replay.trial_seconds, r->actual.trial_seconds);
  EXPECT_EQ(r->trials_stopped + r->trials_unknown_beyond + r->trials_left_paused, 0);
  EXPECT_DOUBLE_EQ(*r->regret, 0);
}

TEST(WhatIfTest, AnErroredTrialErrorsAgainWhereItsRecordEnds) {
  // D errored after iteration 4 (FIFO record); FIFO replays it to 4 and it errors there again:
  // as recorded, not unknown.
  RecordedExperiment e =
      FourByNine(RecordedEnd::kFinished, RecordedEnd::kFinished, RecordedEnd::kErrored);
  e.trials[3].results.resize(4);
  e.arrival = RoundRobin(e.trials);
  Result<WhatIfReport> r = ReplayExperiment(e, "fifo", json::object());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Of(*r, "D").fate, ReplayFate::kAsRecorded);
  EXPECT_EQ(Of(*r, "D").results_replayed, 4);
  EXPECT_EQ(r->trials_unknown_beyond, 0);
  EXPECT_EQ(r->replay.training_iterations, 31);
}

const json kMedian = {
    {"time_attr", "training_iteration"}, {"grace_period", 1}, {"min_samples_required", 2}};

TEST(WhatIfTest, MedianStoppingStopsTrialsBelowTheMedianOfRunningMeans) {
  // Median stopping, time_attr training_iteration, grace_period 1, min_samples_required 2; at
  // time t > 1 a trial stops when its best so far is below the median of the running means
  // (results at 1..t) of the other trials that reached t. Arrival: A B C D at each iteration.
  //   A 1 2 3 6 7 | B 2 3 4 7 8 | C 0.5 0.6 0.7 0.8 0.9 | D 3 3 3 3 10 (the actual best)
  //   t=2: C: A and B reached 2, means 1.5 and 2.5, median 2 > C's best 0.6: STOP.
  //        D: A, B, C reached 2, means 1.5, 2.5, 0.55, median 1.5 <= 3: continue.
  //   t=3: D: A, B reached 3, means 2 and 3, median 2.5 <= 3: continue.
  //   t=4: D: A, B reached 4, means (1+2+3+6)/4 = 3 and (2+3+4+7)/4 = 4, median 3.5 > 3: STOP.
  //   A and B never have two others at their time (they arrive first): they run to 5.
  // Iterations: actual 20, replay 5 + 5 + 2 + 4 = 16. Best final: actual D 10; replay B 8.
  const RecordedExperiment e =
      Experiment({Curve("A", {1, 2, 3, 6, 7}), Curve("B", {2, 3, 4, 7, 8}),
                  Curve("C", {0.5, 0.6, 0.7, 0.8, 0.9}), Curve("D", {3, 3, 3, 3, 10})});
  Result<WhatIfReport> r = ReplayExperiment(e, "median_stopping", kMedian);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->actual.training_iterations, 20);
  EXPECT_EQ(r->replay.training_iterations, 16);
  EXPECT_DOUBLE_EQ(r->replay.trial_seconds, 16);
  EXPECT_EQ(r->trials_stopped, 2);
  EXPECT_EQ(Of(*r, "C").last_training_iteration, 2);
  EXPECT_DOUBLE_EQ(Of(*r, "C").stop_detail.at("median").get<double>(), 2);
  EXPECT_EQ(Of(*r, "D").fate, ReplayFate::kStopped);
  EXPECT_EQ(Of(*r, "D").last_training_iteration, 4);
  EXPECT_DOUBLE_EQ(Of(*r, "D").stop_detail.at("median").get<double>(), 3.5);
  EXPECT_EQ(r->actual.best_trial_id, "D");
  EXPECT_EQ(r->replay.best_trial_id, "B");
  EXPECT_DOUBLE_EQ(*r->regret, 2);
  EXPECT_EQ(r->actual_best->trial_id, "D");
  EXPECT_EQ(r->actual_best->fate, ReplayFate::kStopped);

  // mode min on the negated curves makes the same decisions.
  RecordedExperiment neg = e;
  neg.mode = "min";
  for (RecordedTrial& t : neg.trials) {
    for (TrainingResult& res : t.results) res.SetDouble("acc", -*res.Number("acc"));
  }
  Result<WhatIfReport> m = ReplayExperiment(neg, "median_stopping", kMedian);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->replay.training_iterations, 16);
  EXPECT_EQ(m->replay.best_trial_id, "B");
  EXPECT_DOUBLE_EQ(*m->regret, 2);  // -8 - (-10), in min's direction
}

TEST(WhatIfTest, APausedTrialGivesUpItsTurnsUntilItIsPickedToRunAgain) {
  // Median stopping with hard_stop false (PAUSE instead of STOP), grace_period 1,
  // min_samples_required 1; A 1 2 3 | B 2 3 4 | C 0 0 0.1, arrival A B C at each iteration.
  //   t=2: C: means of A (1.5) and B (2.5), median 2 > 0: PAUSE (soft stop).
  //   t=3: A: nobody else reached 3 and C waits: time slicing PAUSEs it, but it is A's last
  //        result and A finished on its own: STOP wins. B: A's mean 2 <= 4: continue; last: STOP.
  //        C's turn: C is PAUSED, nobody PENDING: the median rule names C (paused by it), which
  //        runs its last result (a soft-stopped trial is not judged again).
  // Everything is fed: 9 results, one pause, one resume, nothing stopped.
  const RecordedExperiment e =
      Experiment({Curve("A", {1, 2, 3}), Curve("B", {2, 3, 4}), Curve("C", {0, 0, 0.1})});
  Result<WhatIfReport> r = ReplayExperiment(e, "median_stopping",
                                            {{"time_attr", "training_iteration"},
                                             {"grace_period", 1},
                                             {"min_samples_required", 1},
                                             {"hard_stop", false}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->pauses, 1);
  EXPECT_EQ(r->resumes, 1);
  EXPECT_EQ(r->replay.training_iterations, 9);
  EXPECT_EQ(r->trials_stopped, 0);
  EXPECT_EQ(r->trials_left_paused, 0);
  EXPECT_EQ(Of(*r, "C").fate, ReplayFate::kAsRecorded);
}

TEST(WhatIfTest, HyperBandPausesAtMilestonesAndHalvesEachBracket) {
  // HyperBand max_t 3, reduction_factor 3: s_max + 1 = round(log3 3) + 1 = 2 brackets, filled in
  // creation order before the first result: s = 0 holds ceil(2/1 * 3^0) = 2 trials (A, B) to 3;
  // s = 1 holds ceil(2/2 * 3^1) = 3 trials (C, D, E) to 1. Arrival: A B C D E at each iteration.
  //   iteration 1: C, then D reach milestone 1 while E has not: PAUSE, PAUSE. E completes the
  //     rung: halving keeps ceil(3/3) = 1, the best at 1 (D 0.6; C 0.3, E 0.1): E STOPs, C is
  //     stopped (StopTrial), D is unpaused; the next milestone is min(1 * 3, 3 - 1) = 2 (Ray's
  //     _cumul_r = _r).
  //   iteration 2: C's turn is free: D (PENDING) takes it and reaches 2, the bracket's last
  //     rung: STOP. D's and E's own turns find nobody waiting.
  //   iteration 3: A and B reach 3 = max_t, their last results: STOP, as recorded.
  // Iterations: actual 15, replay 3 + 3 + 1 + 2 + 1 = 10. Best final: actual E 0.95, replay D 0.7.
  const RecordedExperiment e = Experiment({Curve("A", {0.1, 0.2, 0.3}), Curve("B", {0.2, 0.3, 0.4}),
                                           Curve("C", {0.3, 0.4, 0.5}), Curve("D", {0.6, 0.7, 0.8}),
                                           Curve("E", {0.1, 0.9, 0.95})});
  Result<WhatIfReport> r =
      ReplayExperiment(e, "hyperband", {{"max_t", 3}, {"reduction_factor", 3}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Of(*r, "A").fate, ReplayFate::kAsRecorded);
  EXPECT_EQ(Of(*r, "B").fate, ReplayFate::kAsRecorded);
  for (const char* id : {"C", "E"}) {
    EXPECT_EQ(Of(*r, id).fate, ReplayFate::kStopped) << id;
    EXPECT_EQ(Of(*r, id).last_training_iteration, 1) << id;
    EXPECT_EQ(Of(*r, id).stop_detail.at("bracket"), 1) << id;
  }
  EXPECT_EQ(Of(*r, "D").fate, ReplayFate::kStopped);
  EXPECT_EQ(Of(*r, "D").last_training_iteration, 2);
  EXPECT_EQ(r->pauses, 2);
  EXPECT_EQ(r->resumes, 1);
  EXPECT_EQ(r->replay.training_iterations, 10);
  EXPECT_EQ(r->actual.best_trial_id, "E");
  EXPECT_EQ(r->replay.best_trial_id, "D");
  EXPECT_NEAR(*r->regret, 0.25, 1e-12);
  EXPECT_EQ(r->trials_left_paused, 0);
}

TEST(WhatIfTest, PbtIsRefusedBecauseItsExploitsAreInNoRecord) {
  Result<WhatIfReport> r = ReplayExperiment(
      FourByNine(), "pbt", {{"hyperparam_mutations", {{"lr", {{"uniform", {0.1, 1}}}}}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("pbt cannot be replayed"), std::string::npos);
}

TEST(WhatIfTest, ABadRecordOrSchedulerIsAnErrorNamingIt) {
  RecordedExperiment e = FourByNine();
  e.arrival.pop_back();
  Result<WhatIfReport> short_arrival = ReplayExperiment(e, "fifo", json::object());
  ASSERT_FALSE(short_arrival.ok());
  EXPECT_NE(short_arrival.status().message().find("trial D appears 8 times for 9 results"),
            std::string::npos)
      << short_arrival.status().message();

  Result<WhatIfReport> no_key =
      ReplayExperiment(FourByNine(), "asha", {{"time_attr", "epoch"}, {"max_t", 9}});
  ASSERT_FALSE(no_key.ok());
  EXPECT_NE(no_key.status().message().find("trial A result 1: result has no number 'epoch'"),
            std::string::npos)
      << no_key.status().message();

  Result<WhatIfReport> unknown = ReplayExperiment(FourByNine(), "bogus", json::object());
  EXPECT_FALSE(unknown.ok());
}

TEST(WhatIfTest, ArrivalOrderByTimestampInterleavesTrials) {
  // A reports at 10, 12, 14; B at 11, 11, 12: at 12 A's iteration 2 goes before B's 3 (ties go
  // to the lower training_iteration, then to creation order).
  std::vector<RecordedTrial> trials = {Curve("A", {1, 2, 3}), Curve("B", {1, 2, 3})};
  const std::vector<double> a = {10, 12, 14}, b = {11, 11, 12};
  for (size_t i = 0; i < 3; ++i) {
    trials[0].results[i].SetDouble("timestamp", a[i]);
    trials[1].results[i].SetDouble("timestamp", b[i]);
  }
  EXPECT_EQ(ArrivalOrderByTimestamp(trials), (std::vector<uint32_t>{0, 1, 1, 0, 1, 0}));
}

// Li et al. 2020, Algorithm 2 with Ray Tune's AsyncHyperBandScheduler rules (one bracket, rungs
// grace * eta^k <= max_t, the (1 - 1/eta) quantile by numpy's linear interpolation, the highest
// rung reached counts, stop at max_t): the iteration each trial stops at, in arrival order.
std::vector<int64_t> AshaOracle(const RecordedExperiment& e, double grace, double eta,
                                double max_t) {
  std::vector<double> milestones;  // highest first
  for (double m = grace; m <= max_t + 1e-9; m *= eta) milestones.insert(milestones.begin(), m);
  std::vector<std::vector<double>> rung(milestones.size());  // sorted values
  std::vector<std::map<size_t, bool>> recorded(e.trials.size());
  std::vector<int64_t> stopped_at(e.trials.size(), -1), next(e.trials.size(), 0);
  for (uint32_t i : e.arrival) {
    if (stopped_at[i] >= 0) continue;
    const TrainingResult& res = e.trials[i].results[size_t(next[i]++)];
    const double t = *res.Number("training_iteration"), v = *res.Number("acc");
    bool stop = t >= max_t;
    for (size_t k = 0; k < milestones.size() && !stop; ++k) {
      if (t < milestones[k] || recorded[i].contains(k)) continue;
      std::vector<double>& s = rung[k];
      if (!s.empty()) {
        const double rank = (1 - 1 / eta) * double(s.size() - 1);
        const size_t lo = size_t(std::floor(rank)), hi = std::min(lo + 1, s.size() - 1);
        stop = v < s[lo] + (s[hi] - s[lo]) * (rank - double(lo));
      }
      s.insert(std::upper_bound(s.begin(), s.end(), v), v);
      recorded[i][k] = true;
      break;
    }
    if (stop || next[i] == int64_t(e.trials[i].results.size())) stopped_at[i] = int64_t(t);
  }
  return stopped_at;
}

TEST(WhatIfTest, AThousandTrialsOfAHundredResultsMatchAnIndependentAsha) {
  // 1,000 trials x 100 iterations (saturating curves with noise, seeded), run 10 at a time in
  // round robin; ASHA grace_period 1, reduction_factor 4, max_t 100 (rungs 1, 4, 16, 64). Every
  // trial stops where the oracle above says, and the totals add up.
  RecordedExperiment e;
  e.metric = "acc";
  e.mode = "max";
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  for (int i = 0; i < 1000; ++i) {
    const double q = u(rng), tau = 1 + 30 * u(rng);
    std::vector<double> curve;
    for (int t = 1; t <= 100; ++t) curve.push_back(q * (1 - std::exp(-t / tau)) + 0.02 * u(rng));
    e.trials.push_back(Curve(fmt::format("t{:04d}", i), curve, 0.5));
  }
  for (size_t batch = 0; batch < 100; ++batch) {
    for (int t = 0; t < 100; ++t) {
      for (uint32_t i = 0; i < 10; ++i) e.arrival.push_back(uint32_t(batch * 10 + i));
    }
  }
  Result<WhatIfReport> r =
      ReplayExperiment(e, "asha", {{"grace_period", 1}, {"reduction_factor", 4}, {"max_t", 100}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::vector<int64_t> oracle = AshaOracle(e, 1, 4, 100);
  int64_t iterations = 0, stopped = 0;
  for (size_t i = 0; i < e.trials.size(); ++i) {
    ASSERT_EQ(r->per_trial[i].last_training_iteration, oracle[i]) << e.trials[i].trial_id;
    iterations += oracle[i];
    stopped += oracle[i] < 100;
  }
  EXPECT_EQ(r->actual.training_iterations, 100000);
  EXPECT_EQ(r->replay.training_iterations, iterations);
  EXPECT_DOUBLE_EQ(r->replay.trial_seconds, 0.5 * double(iterations));
  EXPECT_EQ(r->trials_stopped, stopped);
  EXPECT_GT(stopped, 900);  // ASHA keeps about a quarter at each rung
  EXPECT_EQ(r->trials_unknown_beyond, 0);
}

// The median stopping rule as the plain scan of Golovin et al. 2017 §3.2.2 with Ray Tune's
// MedianStoppingRule semantics (hard stop, nobody waiting: no time slicing): at each result past
// the grace period, the trial stops when its best so far is below the median (numpy's) of the
// running means of the other trials that reached its time. The training_iteration each trial
// ends at, in arrival order.
std::vector<int64_t> MedianOracle(const RecordedExperiment& e, const std::string& time_attr,
                                  double grace, size_t min_samples) {
  const size_t n = e.trials.size();
  std::vector<std::vector<std::pair<double, double>>> seen(n);  // (time, value)
  std::vector<int64_t> ended_at(n, -1), next(n, 0);
  for (uint32_t i : e.arrival) {
    if (ended_at[i] >= 0) continue;
    const TrainingResult& res = e.trials[i].results[size_t(next[i]++)];
    const double t = *res.Number(time_attr), v = *res.Number("acc");
    seen[i].emplace_back(t, v);
    bool stop = false;
    if (t >= grace) {
      std::vector<double> means;
      size_t samples = 0;
      bool all = true;
      for (size_t j = 0; j < n; ++j) {
        if (j == i || seen[j].empty() || seen[j].back().first < t) continue;
        ++samples;
        double sum = 0;
        int count = 0;
        for (const auto& [tj, vj] : seen[j]) {
          if (tj < grace || tj > t) continue;
          sum += vj;
          ++count;
        }
        if (count == 0) {
          all = false;
        } else {
          means.push_back(sum / count);
        }
      }
      if (samples >= min_samples && all) {
        std::sort(means.begin(), means.end());
        const size_t m = means.size();
        const double median = m % 2 == 1 ? means[m / 2] : (means[m / 2 - 1] + means[m / 2]) / 2;
        double best = seen[i].front().second;
        for (const auto& [ti, vi] : seen[i]) best = std::max(best, vi);
        stop = best < median && t > grace;
      }
    }
    if (stop || next[i] == int64_t(e.trials[i].results.size())) {
      ended_at[i] = *res.Number("training_iteration");
    }
  }
  return ended_at;
}

TEST(WhatIfTest, MedianStoppingReplayDecidesAsThePlainScan) {
  // 400 trials x 40 results (noisy saturating curves, seconds per iteration drawn per trial, so
  // time_total_s times are uneven across trials), 16 at a time with a random one of them reporting
  // next; the median stopping rule on time_total_s (grace_period 5 s, min_samples_required 3).
  // Every trial ends where the plain scan above says, and a tenth of the trials at least stop.
  RecordedExperiment e;
  e.metric = "acc";
  e.mode = "max";
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0, 1);
  for (int i = 0; i < 400; ++i) {
    const double q = u(rng), tau = 1 + 10 * u(rng), seconds = 0.2 + u(rng);
    std::vector<double> curve;
    for (int t = 1; t <= 40; ++t) curve.push_back(q * (1 - std::exp(-t / tau)) + 0.05 * u(rng));
    e.trials.push_back(Curve(fmt::format("t{:03d}", i), curve, seconds));
  }
  std::vector<uint32_t> running;
  std::vector<size_t> left(e.trials.size(), 40);
  uint32_t started = 0;
  while (started < e.trials.size() || !running.empty()) {
    while (running.size() < 16 && started < e.trials.size()) running.push_back(started++);
    const size_t k = size_t(u(rng) * double(running.size())) % running.size();
    e.arrival.push_back(running[k]);
    if (--left[running[k]] == 0) running.erase(running.begin() + ptrdiff_t(k));
  }
  Result<WhatIfReport> r = ReplayExperiment(
      e, "median_stopping",
      {{"time_attr", "time_total_s"}, {"grace_period", 5}, {"min_samples_required", 3}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::vector<int64_t> oracle = MedianOracle(e, "time_total_s", 5, 3);
  int64_t stopped = 0;
  for (size_t i = 0; i < e.trials.size(); ++i) {
    ASSERT_EQ(r->per_trial[i].last_training_iteration, oracle[i]) << e.trials[i].trial_id;
    stopped += oracle[i] < 40;
  }
  EXPECT_EQ(r->trials_stopped, stopped);
  EXPECT_GT(stopped, 40);
}

TEST(WhatIfTest, ASweepExpandsTheGridLastKeyFastestOverTheBase) {
  Result<std::vector<json>> s =
      ExpandSweep({{"max_t", 9}, {"grace_period", 7}},
                  {{"reduction_factor", {2, 3}}, {"grace_period", {1, 4}}});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  // Keys in sorted order: grace_period, then reduction_factor (fastest).
  ASSERT_EQ(s->size(), 4u);
  EXPECT_EQ((*s)[0], json({{"max_t", 9}, {"grace_period", 1}, {"reduction_factor", 2}}));
  EXPECT_EQ((*s)[1], json({{"max_t", 9}, {"grace_period", 1}, {"reduction_factor", 3}}));
  EXPECT_EQ((*s)[3], json({{"max_t", 9}, {"grace_period", 4}, {"reduction_factor", 3}}));

  for (const json& bad : {json::array(), json::object(), json({{"grace_period", 1}}),
                          json({{"grace_period", json::array()}}), json({{"type", {"asha"}}})}) {
    Result<std::vector<json>> r = ExpandSweep(json::object(), bad);
    ASSERT_FALSE(r.ok()) << bad.dump();
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message().rfind("sweep: ", 0), 0u) << r.status().message();
  }
  json big = json::object();
  for (const char* p : {"a", "b", "c"}) big[p] = json::array({1, 2, 3, 4, 5, 6, 7});
  EXPECT_FALSE(ExpandSweep(json::object(), big).ok());  // 343 > kMaxSweepSettings
}

TEST(WhatIfTest, ASweepMarksTheCheapestSettingThatKeepsTheActualBest) {
  // ASHA reduction_factor 3, max_t 9 over the four curves of FourByNine, grace_period 1, 3, 9:
  //   1: rungs 1, 3, 9: C (the actual best) stops at rung 3 (AshaStopsTheActualBestAtRungThree):
  //      14 iterations, 16 s, not kept.
  //   3: rungs 3, 9. At 3: A 0.7 first; B 0.5 < 0.7: STOP; C 0.65 vs {0.5, 0.7}: cutoff
  //      0.5 + 0.2 * 2/3 = 0.633: continue; D 0.4 vs {0.5, 0.65, 0.7}: cutoff 0.667: STOP. A and C
  //      run to max_t. 9 + 3 + 9 + 3 = 24 iterations, 9 + 6 + 13.5 + 1.5 = 30 s; C kept, regret 0.
  //   9: one rung at max_t: everything runs: 36 iterations, 45 s, kept.
  // The cheapest that keeps C: grace_period 3 (row 1).
  Result<json> r = SweepExperiment(FourByNine(), {"asha", {{"reduction_factor", 3}, {"max_t", 9}}},
                                   {{"grace_period", {1, 3, 9}}}, 0, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const json& rows = r->at("rows");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]["setting"], json({{"grace_period", 1}}));
  EXPECT_EQ(rows[0]["training_iterations"], 14);
  EXPECT_EQ(rows[0]["keeps_actual_best"], false);
  EXPECT_EQ(rows[0]["actual_best_fate"], "stopped");
  EXPECT_EQ(rows[0]["actual_best_stopped_at"], 3);
  EXPECT_EQ(rows[0]["actual_best_stop_detail"]["rung"], 3);
  EXPECT_EQ(rows[1]["training_iterations"], 24);
  EXPECT_DOUBLE_EQ(rows[1]["trial_seconds"].get<double>(), 30);
  EXPECT_EQ(rows[1]["keeps_actual_best"], true);
  EXPECT_DOUBLE_EQ(rows[1]["regret"].get<double>(), 0);
  EXPECT_EQ(rows[1]["trials_stopped"], 2);
  EXPECT_EQ(rows[1]["scheduler_config"],
            json({{"reduction_factor", 3}, {"max_t", 9}, {"grace_period", 3}}));
  EXPECT_EQ(rows[2]["training_iterations"], 36);
  EXPECT_EQ(rows[2]["keeps_actual_best"], true);
  EXPECT_EQ(r->at("cheapest_keeping"), 1);
  EXPECT_EQ(r->at("actual").at("training_iterations"), 36);
  EXPECT_EQ(r->at("actual").at("best_trial_id"), "C");

  // A setting the scheduler refuses names itself; a cancelled sweep stops.
  Result<json> bad = SweepExperiment(FourByNine(), {"asha", {{"max_t", 9}}},
                                     {{"reduction_factor", {3, 0}}}, 0, nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("sweep setting {\"reduction_factor\":0}"),
            std::string::npos)
      << bad.status().message();
  Result<json> cancelled = SweepExperiment(FourByNine(), {"asha", {{"max_t", 9}}},
                                           {{"grace_period", {1, 3}}}, 0, [] { return true; });
  EXPECT_EQ(cancelled.status().code(), StatusCode::kUnavailable);
}

TEST(WhatIfTest, TheSchedulerARequestNamesIsCheckedBeforeAnyReplay) {
  Result<WhatIfScheduler> s = ParseWhatIfScheduler({{"type", "asha"}, {"grace_period", 2}});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->type, "asha");
  EXPECT_EQ(s->params, json({{"grace_period", 2}}));
  EXPECT_EQ(ParseWhatIfScheduler(json::object())->type, "fifo");
  EXPECT_FALSE(ParseWhatIfScheduler(json::array()).ok());
  EXPECT_FALSE(ParseWhatIfScheduler({{"type", 3}}).ok());
  EXPECT_TRUE(CheckWhatIfScheduler(*s, "acc", "max").ok());
  Status pbt = CheckWhatIfScheduler({"pbt", json::object()}, "acc", "max");
  EXPECT_NE(pbt.message().find("pbt cannot be replayed"), std::string::npos);
  Status bad = CheckWhatIfScheduler({"asha", {{"grace_period", -1}}}, "acc", "max");
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("grace_period"), std::string::npos) << bad.message();
  EXPECT_FALSE(CheckWhatIfScheduler({"bogus", json::object()}, "acc", "max").ok());
}

}  // namespace
}  // namespace tunebus
