// ExternalSearcher over a fake link (no sockets, a hand-moved clock): the options, the
// hello/tell/ask order, never blocking the runner, configs snapped to the space, backoff after a
// timeout, a restarted remote brought back by replaying the journaled events, and a resume from
// the journal.
#include "libs/tune/external_searcher.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "libs/tune/make_searcher.hpp"
#include "tests/unit/fake_link.hpp"

namespace tunebus {
namespace {

using nlohmann::json;

const json kSpace = {{"lr", {{"loguniform", {1e-4, 1e-1}}}},
                     {"model", {{"depth", {{"randint", {1, 5}}}}}},
                     {"opt", {{"choice", {"sgd", "adam"}}}},
                     {"width", {{"quniform", {8, 64, 8}}}},
                     {"epochs", 3}};

json Params(double lr, int depth, const std::string& opt, double width) {
  return {{"lr", lr}, {"model.depth", depth}, {"opt", opt}, {"width", width}};
}

TrainingResult Loss(double loss) {
  TrainingResult r;
  r.SetDouble("loss", loss);
  r.SetInt("training_iteration", 2);
  return r;
}

class ExternalSearcherTest : public ::testing::Test {
 protected:
  std::unique_ptr<ExternalSearcher> Make(int64_t num_samples = 10) {
    ExternalOptions o;
    o.endpoint = "tcp://127.0.0.1:5600";
    auto s = std::make_unique<ExternalSearcher>(o, num_samples, 7, "exp-abcde", 0xfeed,
                                                std::make_unique<FakeLink>(link));
    Status st = s->SetSearchProperties("loss", "min", kSpace);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return s;
  }
  // Answers the pending hello, then every tell, recording their events into `told`.
  void Connect() {
    ASSERT_FALSE(link.requests.empty());
    ASSERT_EQ(link.requests.front().request["type"], "hello");
    link.Answer(json{{"type", "hello_ok"}, {"searcher", "fake"}, {"version", "1"}});
    AnswerTells();
  }
  void AnswerTells() {
    while (!link.requests.empty() && link.requests.front().request["type"] == "tell") {
      for (const json& e : link.requests.front().request["events"]) told.push_back(e);
      link.Answer(json{{"type", "tell_ok"}});
    }
  }
  // Expects an ask for `trial_id` and answers it with `params`.
  void AnswerAsk(const std::string& trial_id, const json& params) {
    ASSERT_FALSE(link.requests.empty());
    ASSERT_EQ(link.requests.front().request["type"], "ask");
    ASSERT_EQ(link.requests.front().request["trial_id"], trial_id);
    link.Answer(json{
        {"type", "suggestion"}, {"trial_id", trial_id}, {"status", "config"}, {"params", params}});
  }

  // Connects and adopts the remote's config for t0.
  void FirstTrial(ExternalSearcher& s) {
    (void)s.Suggest("t0");
    Connect();
    AnswerAsk("t0", Params(0.01, 1, "sgd", 8));
    ASSERT_EQ(s.Suggest("t0").kind, Suggestion::Kind::kConfig);
  }

  FakeLinkState link;
  std::vector<json> told;
};

TEST(ExternalOptionsTest, ParametersAreCheckedAndNamed) {
  // Every error reads "<key>: ..." so the spec parser points at the parameter's line.
  EXPECT_EQ(ExternalOptions::Parse(json::object()).status().message(),
            "endpoint: search: external needs the searcher's endpoint (e.g. "
            "tcp://127.0.0.1:5600), or a command that the scheduler starts");
  EXPECT_EQ(ExternalOptions::Parse({{"endpoint", "tcp://127.0.0.1:*"}}).status().message(),
            "endpoint: 'tcp://127.0.0.1:*' has no port to connect to; name the port");
  EXPECT_EQ(ExternalOptions::Parse({{"command", {"python3", 1}}}).status().message(),
            "command[1]: must be a string, got 1");
  EXPECT_EQ(ExternalOptions::Parse({{"endpoint", "localhost:1"}}).status().message(),
            "endpoint: 'localhost:1' is not a ZeroMQ endpoint (tcp://host:port, ipc://path)");
  EXPECT_EQ(ExternalOptions::Parse(
                {{"endpoint", "tcp://h:1"}, {"backoff_initial_s", 5}, {"backoff_max_s", 1}})
                .status()
                .message(),
            "backoff_max_s: must be >= backoff_initial_s (5), got 1");
  EXPECT_EQ(ExternalOptions::Parse({{"endpoint", "tcp://h:1"}, {"options", 3}}).status().message(),
            "options: must be a map (sent to the searcher as is), got 3");
  auto ok = ExternalOptions::Parse(
      {{"endpoint", "ipc:///tmp/s"}, {"timeout_s", 2}, {"options", {{"n_startup_trials", 4}}}});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->timeout_s, 2);
  EXPECT_EQ(ok->backoff_initial_s, 0.5);
  EXPECT_EQ(ok->backoff_max_s, 30);
  EXPECT_EQ(ok->options["n_startup_trials"], 4);
  auto spawned = ExternalOptions::Parse(
      {{"command", {"python3", "s.py", "--endpoint={endpoint}"}}, {"backoff_initial_s", 0.2}});
  ASSERT_TRUE(spawned.ok()) << spawned.status().ToString();
  const SearcherTarget target = spawned->Target();
  EXPECT_EQ(target.endpoint, "");  // the scheduler picks it
  EXPECT_EQ(target.command, (std::vector<std::string>{"python3", "s.py", "--endpoint={endpoint}"}));
  EXPECT_EQ(target.backoff_initial_s, 0.2);
  EXPECT_EQ(target.backoff_max_s, 30);
}

TEST(ExternalOptionsTest, LinkFactoryGetsTheTargetAndItsErrorNamesTheKey) {
  // MakeSearcher hands the link factory the endpoint and command; a factory that cannot make
  // the link (e.g. no private folder for a spawned searcher's socket) is an error of `command`.
  SearchSetup setup;
  setup.param_space = {{"x", {{"uniform", {0, 1}}}}};
  setup.metric = "loss";
  setup.mode = "min";
  SearcherTarget seen;
  setup.connect_external = [&](const SearcherTarget& t) -> Result<std::unique_ptr<SearcherLink>> {
    seen = t;
    return Status::IoError("cannot make a private folder");
  };
  EXPECT_EQ(MakeSearcher("external", {{"command", {"python3", "s.py"}}}, setup).status().message(),
            "command: cannot make a private folder");
  EXPECT_EQ(seen.command, (std::vector<std::string>{"python3", "s.py"}));
  EXPECT_EQ(seen.endpoint, "");
}

TEST(ExternalOptionsTest, MakeSearcherNeedsMetricModeAndNoGrid) {
  // The remote optimises one metric in one direction; grid_search is the random searcher's.
  SearchSetup setup;
  setup.param_space = {{"x", {{"uniform", {0, 1}}}}};
  const json config = {{"endpoint", "tcp://127.0.0.1:5600"}};
  EXPECT_EQ(MakeSearcher("external", config, setup).status().message(),
            "metric: search: external needs a metric to model: set `metric` and `mode` in the "
            "experiment");
  setup.metric = "loss";
  setup.mode = "min";
  auto made = MakeSearcher("external", config, setup);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_EQ((*made)->Describe()["state"], "offline");  // no link factory: a spec check
  setup.param_space = {{"x", {{"grid_search", {1, 2}}}}};
  EXPECT_EQ(MakeSearcher("external", config, setup).status().message(),
            "param_space.x: grid_search cannot be combined with search: external; use search: "
            "random");
}

TEST_F(ExternalSearcherTest, SampleFromIsAnAnyDimTakenAsIs) {
  // {sample_from: driver}: a dim of type any in hello's space; the remote's value (any msgpack
  // value) is built into the config at its path without snapping.
  ExternalOptions o;
  o.endpoint = "tcp://127.0.0.1:5600";
  ExternalSearcher s(o, 10, 7, "exp-abcde", 0xfeed, std::make_unique<FakeLink>(link));
  const json space = {{"lr", {{"uniform", {0.1, 1.0}}}},
                      {"model", {{"act", {{"sample_from", "driver"}}}, {"depth", 3}}}};
  ASSERT_TRUE(s.SetSearchProperties("loss", "min", space).ok());
  EXPECT_EQ(s.Suggest("t0").kind, Suggestion::Kind::kNotNow);
  const json hello = link.requests.front().request;
  ASSERT_EQ(hello["space"].size(), 2u);
  EXPECT_EQ(hello["space"][1], (json{{"name", "model.act"},
                                     {"path", {"model", "act"}},
                                     {"sampler", "sample_from"},
                                     {"type", "any"}}));
  Connect();
  const json act = {{"fn", {1, "relu"}}};
  AnswerAsk("t0", {{"lr", 0.5}, {"model.act", act}});
  Suggestion got = s.Suggest("t0");
  ASSERT_EQ(got.kind, Suggestion::Kind::kConfig);
  EXPECT_EQ(got.config, (json{{"lr", 0.5}, {"model", {{"act", act}, {"depth", 3}}}}));
}

TEST(ExternalOptionsTest, SampleFromNeedsTheExternalSearcher) {
  SearchSetup setup;
  setup.param_space = {{"x", {{"sample_from", "driver"}}}};
  setup.metric = "loss";
  setup.mode = "min";
  EXPECT_EQ(MakeSearcher("tpe", json::object(), setup).status().message(),
            "param_space.x: sample_from is computed by the Python driver, for search: random "
            "(the scheduler asks the driver) or search: {type: external}; search: tpe cannot "
            "sample it");
}

TEST_F(ExternalSearcherTest, HelloDescribesTheSpaceAndSuggestNeverWaits) {
  // The first Suggest sends hello and answers NotNow; the config arrives with a later call.
  auto s = Make();
  EXPECT_EQ(s->Suggest("t0").kind, Suggestion::Kind::kNotNow);
  ASSERT_EQ(link.requests.size(), 1u);
  const json hello = link.requests.front().request;
  EXPECT_EQ(hello["metric"], "loss");
  EXPECT_EQ(hello["mode"], "min");
  EXPECT_EQ(hello["seed"], 7);
  EXPECT_EQ(hello["num_samples"], 10);
  EXPECT_EQ(hello["replay"], 0);
  EXPECT_EQ(hello["experiment"], "exp-abcde");
  EXPECT_EQ(hello["space"][0], (json{{"name", "lr"},
                                     {"path", {"lr"}},
                                     {"sampler", "loguniform"},
                                     {"type", "float"},
                                     {"low", 1e-4},
                                     {"high", 1e-1},
                                     {"step", 0.0},
                                     {"log", true}}));
  EXPECT_EQ(hello["space"][1]["name"], "model.depth");
  EXPECT_EQ(hello["space"][1]["high"], 4);  // randint's high is exclusive
  EXPECT_EQ(hello["space"][2]["choices"], (json{"sgd", "adam"}));
  EXPECT_EQ(hello["space"][3]["step"], 8.0);
  EXPECT_EQ(s->Suggest("t0").kind, Suggestion::Kind::kNotNow);  // hello in flight: no 2nd one
  EXPECT_EQ(link.requests.size(), 1u);
  Connect();
  EXPECT_TRUE(told.empty());
  AnswerAsk("t0", Params(0.01, 3, "adam", 21.0));
  Suggestion g = s->Suggest("t0");
  ASSERT_EQ(g.kind, Suggestion::Kind::kConfig);
  // Snapped to the space (width to a multiple of 8) and completed with the constants.
  EXPECT_EQ(g.config, (json{{"lr", 0.01},
                            {"model", {{"depth", 3}}},
                            {"opt", "adam"},
                            {"width", 24.0},
                            {"epochs", 3}}));
  EXPECT_EQ(g.tag, "lr=0.01,model.depth=3,opt=adam,width=24");
  const json delta = s->TakeStateDelta();
  ASSERT_EQ(delta.size(), 1u);
  EXPECT_EQ(delta[0]["event"], "suggested");
  EXPECT_EQ(delta[0]["params"], Params(0.01, 3, "adam", 24.0));
  EXPECT_EQ(s->suggested(), 1);
  // Asked again for a suggested trial (a resume), it answers the same config without I/O.
  EXPECT_EQ(s->Suggest("t0").config, g.config);
  EXPECT_TRUE(link.requests.empty());
  EXPECT_EQ(s->Describe()["state"], "ready");
  EXPECT_EQ(s->Describe()["remote"], "fake 1");
}

TEST_F(ExternalSearcherTest, EndsAreToldBeforeTheNextAskAndResultsLive) {
  // The remote sees every end before it is asked again; intermediate results go out live.
  auto s = Make();
  ASSERT_NO_FATAL_FAILURE(FirstTrial(*s));
  s->OnTrialResult("t0", Loss(0.5));
  ASSERT_EQ(link.requests.size(), 1u);
  EXPECT_EQ(link.requests.front().request["events"][0]["event"], "result");
  s->OnTrialResult("t0", Loss(0.4));  // held while the first tell is in flight
  TrainingResult last = Loss(0.3);
  s->OnTrialComplete("t0", &last, false);
  EXPECT_EQ(s->Suggest("t1").kind, Suggestion::Kind::kNotNow);
  AnswerTells();
  ASSERT_EQ(told.size(), 2u);  // the first result, then the end (which supersedes the held one)
  EXPECT_EQ(told[1]["event"], "completed");
  EXPECT_EQ(told[1]["result"]["loss"], 0.3);
  EXPECT_EQ(s->Describe()["observations"], 1);
  AnswerAsk("t1", Params(0.02, 2, "sgd", 16));
  EXPECT_EQ(s->Suggest("t1").kind, Suggestion::Kind::kConfig);
  // Ends of trials it did not suggest (tunectl add) and second ends are ignored.
  s->OnTrialComplete("other", &last, false);
  s->OnTrialComplete("t0", &last, false);
  EXPECT_TRUE(link.requests.empty());
}

TEST_F(ExternalSearcherTest, EveryResultIsToldLiveInReportOrder) {
  // Results reported while a tell is in flight all go out with the next one, oldest first
  // (Optuna's pruners read every intermediate value).
  auto s = Make();
  ASSERT_NO_FATAL_FAILURE(FirstTrial(*s));
  s->OnTrialResult("t0", Loss(0.5));
  s->OnTrialResult("t0", Loss(0.4));
  s->OnTrialResult("t0", Loss(0.3));
  ASSERT_EQ(link.requests.size(), 1u);
  EXPECT_EQ(link.requests.front().request["events"].size(), 1u);
  AnswerTells();
  ASSERT_EQ(told.size(), 3u);
  EXPECT_EQ(told[1]["result"]["loss"], 0.4);
  EXPECT_EQ(told[2]["result"]["loss"], 0.3);
  EXPECT_TRUE(link.requests.empty());
}

TEST_F(ExternalSearcherTest, NewSessionIsToldRunningTrialsResultsAfterTheJournaledEvents) {
  // Intermediate results are not journaled; a new session (the remote was restarted) is told,
  // after the journaled events and before its first ask, every result of the trials still
  // running, in report order. A trial that ended is told by its completed event only.
  auto s = Make();
  ASSERT_NO_FATAL_FAILURE(FirstTrial(*s));
  (void)s->Suggest("t1");
  AnswerAsk("t1", Params(0.02, 2, "sgd", 16));
  ASSERT_EQ(s->Suggest("t1").kind, Suggestion::Kind::kConfig);
  s->OnTrialResult("t0", Loss(0.5));
  AnswerTells();
  s->OnTrialResult("t0", Loss(0.4));
  s->OnTrialResult("t1", Loss(0.9));
  AnswerTells();
  TrainingResult last = Loss(0.8);
  s->OnTrialComplete("t1", &last, false);
  AnswerTells();
  ASSERT_EQ(told.size(), 4u);  // live: three results and t1's end

  (void)s->Suggest("t2");
  link.Answer(Status::FailedPrecondition("unknown session"));  // the ask: a restarted remote
  ASSERT_EQ(link.requests.size(), 1u);
  EXPECT_EQ(link.requests.front().request["replay"], 3);
  told.clear();
  Connect();
  ASSERT_EQ(told.size(), 5u) << json(told).dump();
  EXPECT_EQ(told[0]["event"], "suggested");
  EXPECT_EQ(told[0]["trial_id"], "t0");
  EXPECT_EQ(told[1]["event"], "suggested");
  EXPECT_EQ(told[1]["trial_id"], "t1");
  EXPECT_EQ(told[2]["event"], "completed");
  EXPECT_EQ(told[2]["trial_id"], "t1");
  for (size_t i : {size_t{3}, size_t{4}}) {
    EXPECT_EQ(told[i]["event"], "result");
    EXPECT_EQ(told[i]["trial_id"], "t0");
  }
  EXPECT_EQ(told[3]["result"]["loss"], 0.5);
  EXPECT_EQ(told[4]["result"]["loss"], 0.4);
  // Only then the ask; a result reported now goes out live, once.
  ASSERT_EQ(link.requests.size(), 1u);
  EXPECT_EQ(link.requests.front().request["type"], "ask");
  AnswerAsk("t2", Params(0.03, 1, "sgd", 8));
  s->OnTrialResult("t0", Loss(0.2));
  told.clear();
  AnswerTells();
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0]["result"]["loss"], 0.2);
  // The results are not part of the journaled state.
  for (const json& e : s->SaveState()["events"]) EXPECT_NE(e["event"], "result");
}

TEST_F(ExternalSearcherTest, LinkDescribeIsMergedIntoDescribe) {
  // What the link knows of a process the scheduler started (pid, restarts, last_exit, the
  // endpoint it picked) shows in the searcher's Describe, so `tunectl status` prints it.
  class DescribedLink final : public SearcherLink {
   public:
    explicit DescribedLink(FakeLinkState& s) : inner_(s) {}
    void Request(json request, double timeout_s, ReplyCallback done) override {
      inner_.Request(std::move(request), timeout_s, std::move(done));
    }
    void After(double delay_s, std::function<void()> fn) override {
      inner_.After(delay_s, std::move(fn));
    }
    double NowS() const override { return inner_.NowS(); }
    json Describe() const override {
      return {
          {"endpoint", "ipc:///tmp/x/searcher.ipc"}, {"restarts", 2}, {"last_exit", "signal 9"}};
    }

   private:
    FakeLink inner_;
  };
  ExternalOptions o;
  o.command = {"python3", "s.py"};
  ExternalSearcher s(o, 10, 7, "exp-abcde", 1, std::make_unique<DescribedLink>(link));
  ASSERT_TRUE(s.SetSearchProperties("loss", "min", kSpace).ok());
  const json d = s.Describe();
  EXPECT_EQ(d["endpoint"], "ipc:///tmp/x/searcher.ipc");
  EXPECT_EQ(d["restarts"], 2);
  EXPECT_EQ(d["last_exit"], "signal 9");
  EXPECT_EQ(d["state"], "idle");
}

TEST_F(ExternalSearcherTest, TimeoutMakesItUnavailableAndRetriesWithBackoffThenReplays) {
  // A hung remote: the ask times out; Suggest keeps answering NotNow; retries back off
  // 0.5, 1, 2 s; the reconnect tells the whole journaled log again before the ask.
  auto s = Make();
  ASSERT_NO_FATAL_FAILURE(FirstTrial(*s));
  TrainingResult last = Loss(0.3);
  s->OnTrialComplete("t0", &last, false);
  AnswerTells();
  EXPECT_EQ(s->Suggest("t1").kind, Suggestion::Kind::kNotNow);
  link.Answer(Status::Unavailable("no answer within 10000 ms"));
  json d = s->Describe();
  EXPECT_EQ(d["state"], "unavailable");
  EXPECT_EQ(d["retries"], 1);
  EXPECT_EQ(d["retry_in_s"], 0.5);
  EXPECT_NE(d["last_error"].get<std::string>().find("no answer"), std::string::npos);
  EXPECT_EQ(s->Suggest("t1").kind, Suggestion::Kind::kNotNow);
  EXPECT_TRUE(link.requests.empty());  // nothing before the backoff is over
  link.Advance(0.5);
  ASSERT_EQ(link.requests.size(), 1u);
  EXPECT_EQ(link.requests.front().request["type"], "hello");
  link.Answer(Status::Unavailable("no answer"));
  EXPECT_EQ(s->Describe()["retry_in_s"], 1.0);
  link.Advance(0.9);
  EXPECT_TRUE(link.requests.empty());
  link.Advance(0.1);
  link.Answer(Status::Unavailable("no answer"));
  EXPECT_EQ(s->Describe()["retry_in_s"], 2.0);
  link.Advance(2);
  told.clear();
  Connect();
  ASSERT_EQ(told.size(), 2u);
  EXPECT_EQ(told[0]["event"], "suggested");
  EXPECT_EQ(told[0]["trial_id"], "t0");
  EXPECT_EQ(told[1]["event"], "completed");
  AnswerAsk("t1", Params(0.02, 2, "sgd", 16));
  EXPECT_EQ(s->Suggest("t1").kind, Suggestion::Kind::kConfig);
  EXPECT_EQ(s->Describe()["sessions"], 2);
  EXPECT_FALSE(s->Describe().contains("last_error"));
}

TEST_F(ExternalSearcherTest, RestartedRemoteIsDetectedBySessionAndReplayedAtOnce) {
  // A restarted remote answers failed_precondition (it does not know the session): a new
  // hello follows at once, with a new session id, and the replay.
  auto s = Make();
  (void)s->Suggest("t0");
  const std::string first = link.requests.front().request["session"];
  Connect();
  AnswerAsk("t0", Params(0.01, 1, "sgd", 8));
  ASSERT_EQ(s->Suggest("t0").kind, Suggestion::Kind::kConfig);
  (void)s->Suggest("t1");
  link.Answer(Status::FailedPrecondition("unknown session"));
  ASSERT_EQ(link.requests.size(), 1u);
  EXPECT_EQ(link.requests.front().request["type"], "hello");
  EXPECT_NE(link.requests.front().request["session"], first);
  told.clear();
  Connect();
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0]["trial_id"], "t0");
  AnswerAsk("t1", Params(0.03, 1, "sgd", 8));
}

TEST_F(ExternalSearcherTest, ResumedSearcherHoldsTheJournaledEventsAndReplaysThem) {
  // The deltas of one searcher, applied to a new one (a scheduler resume): the same suggested
  // trials, observations and log, told to the remote in the same order.
  auto a = Make();
  std::vector<json> deltas;
  (void)a->Suggest("t0");
  Connect();
  AnswerAsk("t0", Params(0.01, 1, "sgd", 8));
  const json c0 = a->Suggest("t0").config;
  deltas.push_back(a->TakeStateDelta());
  ASSERT_TRUE(a->AddEvaluatedPoint(
                   {{"lr", 0.05}, {"model", {{"depth", 2}}}, {"opt", "sgd"}, {"width", 16}}, 0.1)
                  .ok());
  deltas.push_back(a->TakeStateDelta());
  TrainingResult last = Loss(0.3);
  a->OnTrialComplete("t0", &last, true);  // an ERROR trial is no observation
  deltas.push_back(a->TakeStateDelta());
  const json snapshot = a->SaveState();

  FakeLinkState other;
  ExternalOptions o;
  o.endpoint = "tcp://127.0.0.1:5600";
  ExternalSearcher b(o, 10, 7, "exp-abcde", 1, std::make_unique<FakeLink>(other));
  ASSERT_TRUE(b.SetSearchProperties("loss", "min", kSpace).ok());
  ASSERT_TRUE(b.RestoreState(nullptr).ok());
  for (const json& d : deltas) ASSERT_TRUE(b.ApplyStateDelta(d).ok());
  EXPECT_EQ(b.SaveState(), snapshot);
  EXPECT_EQ(b.suggested(), 1);
  EXPECT_EQ(b.Describe()["observations"], 1);
  EXPECT_EQ(b.Suggest("t0").config, c0);
  EXPECT_EQ(b.Suggest("t1").kind, Suggestion::Kind::kNotNow);
  ASSERT_EQ(other.requests.front().request["type"], "hello");
  EXPECT_EQ(other.requests.front().request["replay"], 3);
  other.Answer(json{{"type", "hello_ok"}});
  ASSERT_EQ(other.requests.front().request["type"], "tell");
  EXPECT_EQ(other.requests.front().request["events"], snapshot["events"]);
  ExternalSearcher c(o, 10, 7, "exp-abcde", 2, nullptr);
  ASSERT_TRUE(c.SetSearchProperties("loss", "min", kSpace).ok());
  ASSERT_TRUE(c.RestoreState(snapshot).ok());
  EXPECT_EQ(c.SaveState(), snapshot);
}

TEST_F(ExternalSearcherTest, BadAnswersAreErrorsAndNumSamplesEndsTheSearch) {
  // A config without a parameter is the remote's error (backoff); num_samples suggestions end
  // the search without asking; the remote's not_now is asked again after a while.
  auto s = Make(/*num_samples=*/1);
  (void)s->Suggest("t0");
  Connect();
  link.Answer(json{
      {"type", "suggestion"}, {"trial_id", "t0"}, {"status", "config"}, {"params", {{"lr", 0.1}}}});
  EXPECT_EQ(s->Describe()["state"], "unavailable");
  EXPECT_NE(s->Describe()["last_error"].get<std::string>().find("model.depth is missing"),
            std::string::npos);
  link.Advance(0.5);
  Connect();
  link.Answer(json{{"type", "suggestion"}, {"trial_id", "t0"}, {"status", "not_now"}});
  EXPECT_EQ(s->Suggest("t0").kind, Suggestion::Kind::kNotNow);
  EXPECT_EQ(s->Suggest("t0").kind, Suggestion::Kind::kNotNow);
  EXPECT_TRUE(link.requests.empty());  // not asked again at once
  link.Advance(1);
  AnswerAsk("t0", Params(0.01, 1, "sgd", 8));
  EXPECT_EQ(s->Suggest("t0").kind, Suggestion::Kind::kConfig);
  EXPECT_EQ(s->Suggest("t1").kind, Suggestion::Kind::kFinished);
  EXPECT_TRUE(link.requests.empty());
}

}  // namespace
}  // namespace tunebus
