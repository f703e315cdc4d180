// The driver link in the runner (proto/PROTOCOL.md section 7b) over a fake link: a result is held
// until the driver answers, stop_trial ends the trial at exactly that result (Ray's stopper),
// stop_all stops the experiment, PBT takes the driver's samples for its `{driver: {}}` mutations,
// `should_checkpoint` asks for a checkpoint, the link's backoff and new sessions, and a resume
// decides a result whose answer was journaled without asking the driver again.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "libs/journal/records.hpp"
#include "libs/journal/replay.hpp"
#include "libs/tune/driver_link.hpp"
#include "libs/tune/pbt_scheduler.hpp"
#include "tests/unit/fake_executor.hpp"
#include "tests/unit/fake_link.hpp"
#include "tests/unit/pausing_scheduler.hpp"
#include "tests/unit/recording_observer.hpp"
#include "tests/unit/runner_fixture.hpp"

namespace tunebus {
namespace {

// A FIFO scheduler that notes the driver samples it was shown at each result.
class SamplesSpy final : public TrialScheduler {
 public:
  explicit SamplesSpy(std::vector<json>& seen) : seen_(seen) {}
  const char* name() const override { return "spy"; }
  Decision OnTrialResult(const Trial& trial, const TrainingResult&) override {
    const json* samples = context_->DriverSamples(trial.trial_id);
    seen_.push_back(samples != nullptr ? *samples : json(nullptr));
    return Decision::kContinue;
  }
  int64_t ChooseTrialToRun(const std::set<int64_t>& pending) override { return *pending.begin(); }

 private:
  std::vector<json>& seen_;
};

std::unique_ptr<DriverLink> MakeDriver(FakeLinkState& link, TrialRunner& runner) {
  DriverOptions o;
  o.endpoint = "tcp://127.0.0.1:5700";
  auto driver = std::make_unique<DriverLink>(o, "exp-abcde", "acc", "max", 0xd1,
                                             std::make_unique<FakeLink>(link));
  driver->SetAnswerCallback(
      [&runner](const std::string& trial_id, int64_t attempt, int64_t seq, DriverAnswer answer) {
        runner.OnDriverAnswer(trial_id, attempt, seq, answer);
      });
  runner.SetDriver(driver.get());
  return driver;
}

class RunnerDriverTest : public TrialRunnerTest {
 protected:
  // `n` trials over a grid, each RUNNING on its own worker, results held for the driver.
  void StartDriven(int n, std::unique_ptr<TrialScheduler> scheduler = nullptr) {
    RunnerOptions o;
    o.metric = "acc";
    o.mode = "max";
    Start(o, n, std::move(scheduler));
    driver_ = MakeDriver(link_, *runner_);
    runner_->Step();
    GrantAll();
  }
  // Answers the pending hello, if any.
  void Hello() {
    if (!link_.requests.empty() && link_.requests.front().request["type"] == "hello") {
      EXPECT_EQ(link_.requests.front().request["experiment"], "exp-abcde");
      link_.Answer(json{{"type", "hello_ok"}});
    }
  }
  // Answers the oldest driver_result with `decision`'s fields; returns that request.
  json Answer(json decision = json::object()) {
    Hello();
    EXPECT_FALSE(link_.requests.empty());
    if (link_.requests.empty()) return nullptr;
    EXPECT_EQ(link_.requests.front().request["type"], "driver_result");
    decision["type"] = "driver_decision";
    return link_.Answer(decision);
  }
  size_t DecisionsFor(int index) const {
    return size_t(std::count_if(exec_.decisions.begin(), exec_.decisions.end(),
                                [&](const DecisionCall& d) { return d.trial_id == Id(index); }));
  }

  FakeLinkState link_;
  std::unique_ptr<DriverLink> driver_;
};

// A result waits for the driver: no decision, no result record, the trial's counters unmoved;
// the driver's answer releases it, journaled before the result.
TEST_F(RunnerDriverTest, HeldResultIsDecidedOnceTheDriverAnswers) {
  StartDriven(1);
  ASSERT_TRUE(Report(0, 1, {{"acc", 0.5}}).ok());
  EXPECT_EQ(DecisionsFor(0), 0u);
  EXPECT_TRUE(obs_.results.empty());
  EXPECT_EQ(T(0).training_iteration, 0);
  EXPECT_EQ(HeldResults(), 1u);
  // A resend while held is dropped without a decision.
  EXPECT_FALSE(Report(0, 1, {{"acc", 0.5}}).ok());
  EXPECT_EQ(DecisionsFor(0), 0u);

  const json request = Answer();
  EXPECT_EQ(request["trial_id"], Id(0));
  EXPECT_TRUE(request["session"].is_string());
  EXPECT_EQ(request["result"]["training_iteration"], 1);
  EXPECT_EQ(request["result"]["acc"], 0.5);
  EXPECT_EQ(request["result"]["config"], T(0).config);
  EXPECT_TRUE(request["result"].contains("time_total_s"));
  EXPECT_EQ(LastAction(0), "continue");
  EXPECT_EQ(T(0).training_iteration, 1);
  EXPECT_EQ(HeldResults(), 0u);
  EXPECT_LT(IndexOf("obs:driver_decision exp_00000/1 1"),
            IndexOf("obs:result exp_00000/1 continue"));
  EXPECT_EQ(obs_.driver_decisions.at(0), DriverAnswer{}.ToJson());
}

// A driver callback's `should_checkpoint` asks a checkpoint at that result as the result key
// does; the request names the result by attempt and seq; the answer is journaled with the flag.
TEST_F(RunnerDriverTest, ShouldCheckpointFromTheDriverAsksACheckpointAtThatResult) {
  StartDriven(1);
  ASSERT_TRUE(Report(0, 1, {{"acc", 0.5}}).ok());
  const json first = Answer();
  EXPECT_EQ(first["attempt"], 1);
  EXPECT_EQ(first["seq"], 1);
  EXPECT_EQ(LastAction(0), "continue");
  ASSERT_TRUE(Report(0, 2, {{"acc", 0.6}}).ok());
  const json second = Answer(json{{"should_checkpoint", true}});
  EXPECT_EQ(second["seq"], 2);
  EXPECT_EQ(LastAction(0), "checkpoint");
  ASSERT_EQ(T(0).requested_checkpoints.size(), 1u);
  EXPECT_EQ(T(0).requested_checkpoints[0].training_iteration, 2);
  EXPECT_EQ(obs_.driver_decisions.back()["should_checkpoint"], true);
  ASSERT_TRUE(Report(0, 3, {{"acc", 0.7}}).ok());
  Answer(json{{"should_checkpoint", false}});
  EXPECT_EQ(LastAction(0), "continue");
  EXPECT_EQ(T(0).requested_checkpoints.size(), 1u);
}

// Ray's stopper: the trial ends at exactly the result the driver stopped (TERMINATED, its
// last_result that iteration, done), and no later result of it is accepted.
TEST_F(RunnerDriverTest, StopTrialEndsTheTrialAtThatResult) {
  StartDriven(2);
  for (int64_t seq = 1; seq <= 3; ++seq) {
    ASSERT_TRUE(Report(0, seq, {{"acc", 0.1 * double(seq)}}).ok());
    Answer(seq == 3 ? json{{"stop_trial", true}} : json::object());
  }
  EXPECT_EQ(LastAction(0), "stop");
  EXPECT_EQ(T(0).status, TrialStatus::kTerminated);
  const json last = T(0).LastResult();
  EXPECT_EQ(last["training_iteration"], 3);
  EXPECT_EQ(last["done"], true);
  EXPECT_FALSE(Report(0, 4, {{"acc", 0.9}}).ok());
  EXPECT_EQ(DecisionsFor(0), 3u);
  EXPECT_TRUE(link_.requests.empty());  // nothing of it sent to the driver
  EXPECT_EQ(T(1).status, TrialStatus::kRunning);
}

// stop_all: the result is decided, then every unfinished trial stops and the experiment is
// STOPPED; another trial's held result is dropped (its answer, if any, is ignored).
TEST_F(RunnerDriverTest, StopAllStopsTheExperiment) {
  StartDriven(3);
  ASSERT_TRUE(Report(0, 1, {{"acc", 0.5}}).ok());
  ASSERT_TRUE(Report(1, 1, {{"acc", 0.4}}).ok());
  Answer(json{{"stop_all", true}});
  EXPECT_EQ(runner_->status(), ExperimentStatus::kStopped);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(T(i).status, TrialStatus::kTerminated) << i;
  EXPECT_EQ(T(0).training_iteration, 1);
  EXPECT_EQ(T(1).training_iteration, 0);  // its result was never decided
  EXPECT_EQ(HeldResults(), 0u);
  EXPECT_EQ(driver_->held(), 0u);
  if (!link_.requests.empty()) Answer(json{{"stop_trial", false}});  // late: ignored
  EXPECT_EQ(DecisionsFor(1), 0u);
  ASSERT_EQ(obs_.ended.size(), 1u);
  EXPECT_EQ(obs_.ended[0].first, "STOPPED");
}

// The trial scheduler is shown the driver's samples of the result it decides, and only then.
TEST_F(RunnerDriverTest, TrialSchedulerSeesTheDriverSamples) {
  std::vector<json> seen;
  StartDriven(1, std::make_unique<SamplesSpy>(seen));
  ASSERT_TRUE(Report(0, 1, {{"acc", 0.5}}).ok());
  EXPECT_TRUE(seen.empty());
  Answer(json{{"samples", {{"lr", 0.25}}}});
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], json({{"lr", 0.25}}));
}

// PBT with `lr: {driver: {}}` (always resample): the bottom trial that exploits the top one at
// iteration 4 takes the lr the driver drew for that trial's result, and the exploit is journaled
// as any other (so a resume needs no driver for it).
TEST_F(RunnerDriverTest, PbtExploitTakesTheDriverSampleOfTheExploitingResult) {
  const json pbt = {{"time_attr", "training_iteration"},
                    {"perturbation_interval", 2},
                    {"resample_probability", 1},
                    {"hyperparam_mutations", {{"lr", {{"driver", json::object()}}}}}};
  auto s = MakeTrialScheduler("pbt", pbt, "acc", "max", 7);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  StartDriven(4, std::move(*s));
  const double acc[4] = {0.9, 0.5, 0.4, 0.1};
  // Reports iteration `it` of trial i, the driver drawing lr = 0.001 * (100 * i + it).
  auto at = [&](int i, int64_t it) {
    EXPECT_TRUE(Report(i, it, {{"acc", acc[i]}}).ok());
    Answer(json{{"samples", {{"lr", 0.001 * double(100 * i + it)}}}});
    const std::string action = LastAction(i);
    if (action == "checkpoint") {
      EXPECT_TRUE(
          runner_->OnCheckpointSaved(Id(i), T(i).attempt, Id(i) + "/" + std::to_string(it), it, 10)
              .ok());
    }
    return action;
  };
  for (int64_t it = 1; it <= 3; ++it) {
    for (int i = 0; i < 4; ++i) EXPECT_EQ(at(i, it), "continue") << i << " at " << it;
  }
  EXPECT_EQ(at(0, 4), "checkpoint");
  EXPECT_EQ(at(1, 4), "continue");
  EXPECT_EQ(at(2, 4), "continue");
  EXPECT_EQ(at(3, 4), "stop");  // exploits t0
  EXPECT_EQ(T(3).status, TrialStatus::kPending);
  EXPECT_DOUBLE_EQ(T(3).config.value("lr", 0.0), 0.304);  // t3's draw at iteration 4
  EXPECT_EQ(T(3).config["x"], T(0).config["x"]);          // the rest is the donor's
  ASSERT_EQ(obs_.updates.size(), 1u);
  EXPECT_EQ(obs_.updates[0]["pbt_exploit"].value("donor", ""), Id(0));
}

// PBT's explore of a `{driver: {}}` mutation: a resample takes the driver's value by the key's
// dotted path, a perturbation multiplies by 1.2 or 0.8 (Ray's callable branch).
TEST(PbtDriverMutationTest, ResampleTakesTheDriverValueAndPerturbMultiplies) {
  const json mutations = {{"lr", {{"driver", json::object()}}},
                          {"model", {{"width", {{"driver", json::object()}}}}}};
  const json config = {{"lr", 0.1}, {"model", {{"width", 8}}}, {"k", 3}};
  const json samples = {{"lr", 0.02}, {"model.width", 32}};
  auto resample = PopulationBasedTraining::Create(
      {{"hyperparam_mutations", mutations}, {"resample_probability", 1.0}}, "acc", "max", 1);
  ASSERT_TRUE(resample.ok()) << resample.status().ToString();
  auto& always = static_cast<PopulationBasedTraining&>(**resample);
  const json resampled = always.Explore(config, mutations, &samples);
  EXPECT_EQ(resampled["lr"], 0.02);
  EXPECT_EQ(resampled["model"]["width"], 32);
  EXPECT_EQ(resampled["k"], 3);

  auto perturb = PopulationBasedTraining::Create(
      {{"hyperparam_mutations", mutations}, {"resample_probability", 0.0}}, "acc", "max", 1);
  ASSERT_TRUE(perturb.ok());
  auto& never = static_cast<PopulationBasedTraining&>(**perturb);
  const json perturbed = never.Explore(config, mutations, &samples);
  const double lr = perturbed["lr"].get<double>();
  EXPECT_TRUE(std::abs(lr - 0.12) < 1e-12 || std::abs(lr - 0.08) < 1e-12) << lr;
  const json width = perturbed["model"]["width"];
  EXPECT_TRUE(width.is_number_integer());
  EXPECT_TRUE(width == 9 || width == 6) << width;  // int(8 * 1.2), int(8 * 0.8)
  // Without the driver's sample a resample keeps a non-number and perturbs a number.
  const json kept = always.Explore({{"lr", "auto"}, {"model", {{"width", 8}}}}, mutations, nullptr);
  EXPECT_EQ(kept["lr"], "auto");
  EXPECT_TRUE(kept["model"]["width"] == 9 || kept["model"]["width"] == 6);
}

TEST(PbtDriverMutationTest, DriverMutationTakesNoParameters) {
  auto made = PopulationBasedTraining::Create(
      {{"hyperparam_mutations", {{"lr", {{"driver", {{"fn", "x"}}}}}}}}, "acc", "max", 1);
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.status().message().find("hyperparam_mutations.lr.driver: takes no parameters"),
            std::string::npos)
      << made.status().message();
  EXPECT_TRUE(PopulationBasedTraining::HasDriverMutations(
      {{"a", {1, 2}}, {"m", {{"lr", {{"driver", json::object()}}}}}}));
  EXPECT_FALSE(PopulationBasedTraining::HasDriverMutations({{"lr", {{"uniform", {0, 1}}}}}));
}

// Ray Tune's `should_checkpoint` result key asks for a checkpoint whatever checkpoint_freq says;
// a stronger decision keeps its own action (pause; checkpoint_and_stop at a stop).
class ShouldCheckpointTest : public TrialRunnerTest {};

TEST_F(ShouldCheckpointTest, ResultKeyAsksForACheckpoint) {
  RunnerOptions o;
  o.stop = {{"training_iteration", 3}};
  Start(o, 2, std::make_unique<PausingScheduler>(std::set<std::string>{Id(1)}));
  runner_->Step();
  GrantAll();
  ASSERT_TRUE(Report(0, 1, {{"should_checkpoint", true}}).ok());
  EXPECT_EQ(LastAction(0), "checkpoint");
  ASSERT_EQ(T(0).requested_checkpoints.size(), 1u);
  EXPECT_EQ(T(0).requested_checkpoints[0].training_iteration, 1);
  ASSERT_TRUE(Report(0, 2, {{"should_checkpoint", false}}).ok());
  EXPECT_EQ(LastAction(0), "continue");
  ASSERT_TRUE(Report(0, 3, {{"should_checkpoint", true}}).ok());
  EXPECT_EQ(LastAction(0), "checkpoint_and_stop");
  ASSERT_TRUE(Report(1, 1, {{"should_checkpoint", true}}).ok());
  EXPECT_EQ(LastAction(1), "pause");
}

// The driver unreachable: the result stays held, the link backs off 0.5 s doubling; a restarted
// driver (failed_precondition: unknown session) gets a new hello and the held result again.
TEST_F(RunnerDriverTest, UnavailableDriverKeepsTheResultHeldAndRetries) {
  StartDriven(1);
  ASSERT_TRUE(Report(0, 1, {{"acc", 0.5}}).ok());
  link_.Answer(Status::Unavailable("no reply within 10 s"));
  EXPECT_EQ(driver_->state(), DriverLink::State::kUnavailable);
  EXPECT_EQ(driver_->Describe()["retries"], 1);
  EXPECT_TRUE(link_.requests.empty());
  link_.Advance(0.25);
  EXPECT_TRUE(link_.requests.empty());
  link_.Advance(0.25);  // 0.5 s after the failure
  ASSERT_EQ(link_.requests.size(), 1u);
  link_.Answer(Status::Unavailable("no reply within 10 s"));
  link_.Advance(0.75);
  EXPECT_TRUE(link_.requests.empty());
  link_.Advance(0.25);  // 1 s after the second
  Hello();
  ASSERT_EQ(link_.requests.size(), 1u);
  const std::string first_session = link_.requests.front().request["session"];
  link_.Answer(Status::FailedPrecondition("unknown session"));  // the driver restarted
  ASSERT_EQ(link_.requests.size(), 1u);
  EXPECT_EQ(link_.requests.front().request["type"], "hello");
  EXPECT_NE(link_.requests.front().request["session"], first_session);
  EXPECT_EQ(DecisionsFor(0), 0u);
  Answer(json{{"stop_trial", true}});
  EXPECT_EQ(LastAction(0), "stop");
  EXPECT_EQ(driver_->state(), DriverLink::State::kReady);
  EXPECT_FALSE(driver_->Describe().contains("last_error"));
}

// A reply that is not a driver_decision, or one with a field of the wrong type, is a failure.
TEST_F(RunnerDriverTest, MalformedAnswerIsAFailure) {
  StartDriven(1);
  ASSERT_TRUE(Report(0, 1, {{"acc", 0.5}}).ok());
  Hello();
  link_.Answer(json{{"type", "driver_decision"}, {"stop_trial", "yes"}});
  EXPECT_EQ(driver_->state(), DriverLink::State::kUnavailable);
  EXPECT_NE(driver_->Describe()["last_error"].get<std::string>().find("stop_trial"),
            std::string::npos);
  EXPECT_EQ(DecisionsFor(0), 0u);
  link_.Advance(0.5);
  Answer();
  EXPECT_EQ(LastAction(0), "continue");
}

// ---- resume -----------------------------------------------------------------------------------

std::unique_ptr<TrialRunner> Resumed(const std::vector<json>& records, FakeExecutor& exec,
                                     RunnerObserver& obs) {
  journal::JournalReplayer replayer;
  for (const json& r : records) EXPECT_TRUE(replayer.Apply(r).ok()) << r.dump();
  journal::ReplayedExperiment st = replayer.Take();
  RunnerOptions o;
  o.experiment_id = "exp";
  o.metric = "acc";
  o.mode = "max";
  static ManualClock clock(1000.0);  // never advanced: outlives the runner returned
  auto runner = std::make_unique<TrialRunner>(o, std::make_unique<VariantGenerator>(Grid(1), 1, 42),
                                              std::make_unique<FifoScheduler>(), exec, obs, clock);
  EXPECT_TRUE(runner
                  ->Restore({.trials = std::move(st.trials),
                             .searcher_state = st.searcher_state,
                             .searcher_deltas = st.searcher_deltas,
                             .trial_scheduler =
                                 TrialSchedulerJournal{st.scheduler_state, st.scheduler_deltas},
                             .last_actions = st.last_action,
                             .driver_answers = st.driver_answers,
                             .start_s = 1000.0,
                             .ended_status = st.ended_status.value_or(ExperimentStatus::kRunning),
                             .ended_reason = st.ended_reason})
                  .ok());
  return runner;
}

// A scheduler SIGKILL after the driver's answer was journaled but before its result was: the
// resumed runner decides the resent result with the journaled answer and asks no driver. After
// the result was journaled too, a resend is a duplicate answered with its journaled action.
TEST(RunnerDriverResumeTest, JournaledAnswerDecidesWithoutTheDriver) {
  std::vector<json> records = {
      journal::ExperimentSubmitted({"exp", 42, 1000.0, "/tmp", "e.yaml"}, "name: e")};
  std::vector<std::string> log;
  FakeExecutor exec(log);
  JournalingObserver obs(records);
  RunnerOptions o;
  o.experiment_id = "exp";
  o.metric = "acc";
  o.mode = "max";
  ManualClock clock(1000.0);
  TrialRunner runner(o, std::make_unique<VariantGenerator>(Grid(1), 1, 42),
                     std::make_unique<FifoScheduler>(), exec, obs, clock);
  FakeLinkState link;
  auto driver = MakeDriver(link, runner);
  runner.Step();
  ASSERT_EQ(exec.open.size(), 1u);
  runner.OnTrialPlaced("exp_00000", 1, "w1", {});
  for (int64_t seq = 1; seq <= 2; ++seq) {
    ASSERT_TRUE(
        runner.OnResult("exp_00000", 1, seq, TrainingResult::FromJson(json{{"acc", 0.5}}), 1.0)
            .ok());
    if (link.requests.front().request["type"] == "hello") link.Answer(json{{"type", "hello_ok"}});
    link.Answer(json{{"type", "driver_decision"}, {"stop_trial", seq == 2}});
  }
  ASSERT_EQ(runner.FindTrial("exp_00000")->status, TrialStatus::kTerminated);
  size_t answered = 0, result = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i].value("seq", 0) == 2 && records[i]["kind"] == "driver_decision") answered = i;
    if (records[i].value("seq", 0) == 2 && records[i]["kind"] == "result") result = i;
  }
  ASSERT_GT(answered, 0u);
  EXPECT_GT(result, answered);  // the answer is journaled first

  // Cut right after the answer: seq 2 has no result record.
  std::vector<std::string> log2;
  FakeExecutor exec2(log2);
  RecordingObserver obs2(log2);
  auto resumed = Resumed({records.begin(), records.begin() + long(answered) + 1}, exec2, obs2);
  FakeLinkState link2;
  auto driver2 = MakeDriver(link2, *resumed);
  const Trial* t = resumed->FindTrial("exp_00000");
  ASSERT_EQ(t->status, TrialStatus::kRunning);
  ASSERT_EQ(t->last_seq, 1);
  ASSERT_TRUE(
      resumed->OnResult("exp_00000", 1, 2, TrainingResult::FromJson(json{{"acc", 0.5}}), 1.0).ok());
  EXPECT_TRUE(link2.requests.empty());  // not even a hello
  ASSERT_EQ(exec2.decisions.size(), 1u);
  EXPECT_EQ(exec2.decisions[0].action, "stop");
  EXPECT_EQ(t->status, TrialStatus::kTerminated);
  EXPECT_EQ(t->training_iteration, 2);

  // The whole journal: the trial ended at iteration 2; a resend is answered "stop" again.
  std::vector<std::string> log3;
  FakeExecutor exec3(log3);
  RecordingObserver obs3(log3);
  auto full = Resumed(records, exec3, obs3);
  FakeLinkState link3;
  auto driver3 = MakeDriver(link3, *full);
  EXPECT_EQ(full->FindTrial("exp_00000")->status, TrialStatus::kTerminated);
  EXPECT_EQ(full->FindTrial("exp_00000")->training_iteration, 2);
  EXPECT_FALSE(
      full->OnResult("exp_00000", 1, 2, TrainingResult::FromJson(json{{"acc", 0.5}}), 1.0).ok());
  ASSERT_EQ(exec3.decisions.size(), 1u);
  EXPECT_EQ(exec3.decisions[0].action, "stop");
  EXPECT_TRUE(link3.requests.empty());
  EXPECT_EQ(obs3.driver_decisions.size(), 0u);
}

}  // namespace
}  // namespace tunebus
