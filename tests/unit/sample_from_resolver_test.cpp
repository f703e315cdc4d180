// tune.sample_from under search: random (libs/tune/sample_from_resolver.hpp): the variant
// generator draws the grid and the random domains, the driver computes the sample_from keys
// (proto/PROTOCOL.md section 7b `driver_sample`), and only then is the trial added, with the
// whole config. Over a fake driver (the resolver alone) and over DriverLink on a fake link (the
// runner adding trials as the answers come).
#include "libs/tune/sample_from_resolver.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "libs/tune/driver_link.hpp"
#include "libs/tune/make_searcher.hpp"
#include "tests/unit/fake_link.hpp"
#include "tests/unit/runner_fixture.hpp"

namespace tunebus {
namespace {

const json kSpace = json::parse(R"({
  "a": {"grid_search": [1, 2]},
  "lr": {"uniform": [0.0, 1.0]},
  "model": {"width": {"sample_from": "driver"}},
  "z": {"sample_from": "driver"}
})");

// The driver of the resolver-alone tests: requests wait in `asked` until Answer.
struct FakeDriver {
  struct Asked {
    std::string trial_id;
    json config;
    std::vector<DriverLink::KeyPath> paths;
    DriverLink::SampleCallback done;
  };
  std::vector<Asked> asked;

  SampleFromResolver::AskDriver Ask() {
    return [this](const std::string& trial_id, json config, std::vector<DriverLink::KeyPath> paths,
                  DriverLink::SampleCallback done) {
      asked.push_back({trial_id, std::move(config), std::move(paths), std::move(done)});
    };
  }
  void Answer(DriverSamples samples) {
    ASSERT_FALSE(asked.empty());
    auto done = std::move(asked.back().done);
    done(std::move(samples));
  }
};

std::unique_ptr<SampleFromResolver> Resolver(FakeDriver& driver, int64_t num_samples = 1) {
  return std::make_unique<SampleFromResolver>(
      std::make_unique<VariantGenerator>(kSpace, num_samples, 7), driver.Ask());
}

TEST(SampleFromResolverTest, AsksTheDriverThenSuggestsTheFilledConfig) {
  FakeDriver driver;
  auto r = Resolver(driver);
  EXPECT_EQ(r->Total(), 2);
  EXPECT_EQ(r->Suggest("t0").kind, Suggestion::Kind::kNotNow);
  ASSERT_EQ(driver.asked.size(), 1u);
  const FakeDriver::Asked& asked = driver.asked[0];
  EXPECT_EQ(asked.trial_id, "t0");
  EXPECT_EQ(asked.paths, (std::vector<DriverLink::KeyPath>{{"model", "width"}, {"z"}}));
  EXPECT_EQ(asked.config["a"], 1);
  EXPECT_TRUE(asked.config["lr"].is_number_float());
  EXPECT_EQ(asked.config["model"]["width"], (json{{"sample_from", "driver"}}));
  // Asked again before the answer: still not now, and the driver is not asked twice.
  EXPECT_EQ(r->Suggest("t0").kind, Suggestion::Kind::kNotNow);
  EXPECT_EQ(driver.asked.size(), 1u);
  EXPECT_EQ(r->suggested(), 0);

  driver.Answer({.values = {json(64), json("relu")}});
  Suggestion s = r->Suggest("t0");
  ASSERT_EQ(s.kind, Suggestion::Kind::kConfig);
  EXPECT_EQ(s.config["model"]["width"], 64);
  EXPECT_EQ(s.config["z"], "relu");
  EXPECT_EQ(s.config["a"], 1);
  EXPECT_EQ(s.config["lr"], asked.config["lr"]);
  EXPECT_NE(s.tag.find("model.width=64,z=relu"), std::string::npos) << s.tag;
  EXPECT_EQ(r->suggested(), 1);

  EXPECT_EQ(r->Suggest("t1").kind, Suggestion::Kind::kNotNow);
  ASSERT_EQ(driver.asked.size(), 2u);
  EXPECT_EQ(driver.asked[1].config["a"], 2);  // the grid's next point
  driver.Answer({.values = {json(8), json(nullptr)}});
  EXPECT_EQ(r->Suggest("t1").kind, Suggestion::Kind::kConfig);
  EXPECT_EQ(r->Suggest("t2").kind, Suggestion::Kind::kFinished);
  EXPECT_EQ(driver.asked.size(), 2u);
}

// A driver answering within the call: the config comes out of the same Suggest.
TEST(SampleFromResolverTest, AnAnswerWithinTheAskIsSuggestedAtOnce) {
  auto r = std::make_unique<SampleFromResolver>(
      std::make_unique<VariantGenerator>(kSpace, 1, 7),
      [](const std::string&, json, std::vector<DriverLink::KeyPath> paths,
         DriverLink::SampleCallback done) {
        done({.values = std::vector<json>(paths.size(), json(3))});
      });
  Suggestion s = r->Suggest("t0");
  ASSERT_EQ(s.kind, Suggestion::Kind::kConfig);
  EXPECT_EQ(s.config["z"], 3);
}

// The state journaled while a variant is out is the one before it: a resume draws the same
// variant and asks the driver again.
TEST(SampleFromResolverTest, ARestoreDrawsTheVariantThatWasOutAgain) {
  FakeDriver driver;
  auto r = Resolver(driver, 3);
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(r->Suggest("t").kind, Suggestion::Kind::kNotNow);
    driver.Answer({.values = {json(i), json(i)}});
    ASSERT_EQ(r->Suggest("t").kind, Suggestion::Kind::kConfig);
  }
  ASSERT_EQ(r->Suggest("t2").kind, Suggestion::Kind::kNotNow);
  const json out = driver.asked.back().config;
  const json saved = r->SaveState();

  FakeDriver again;
  auto resumed = Resolver(again, 3);
  ASSERT_TRUE(resumed->RestoreState(saved).ok());
  EXPECT_EQ(resumed->suggested(), 2);
  ASSERT_EQ(resumed->Suggest("t2").kind, Suggestion::Kind::kNotNow);
  ASSERT_EQ(again.asked.size(), 1u);
  EXPECT_EQ(again.asked[0].config, out);
}

// The driver's function raised: no trial follows (Finished), and Describe says why.
TEST(SampleFromResolverTest, ADriverErrorFinishesTheSearch) {
  FakeDriver driver;
  auto r = Resolver(driver, 5);
  ASSERT_EQ(r->Suggest("t0").kind, Suggestion::Kind::kNotNow);
  driver.Answer({.error = "z: ZeroDivisionError: division by zero"});
  EXPECT_EQ(r->Suggest("t0").kind, Suggestion::Kind::kFinished);
  EXPECT_EQ(r->state(), SampleFromResolver::State::kFailed);
  EXPECT_EQ(r->Describe()["error"], "z: ZeroDivisionError: division by zero");
  EXPECT_EQ(r->Describe()["sample_from"], "failed");
  EXPECT_EQ(r->suggested(), 0);
}

TEST(SampleFromResolverTest, WithoutADriverTheSearchFinishes) {
  auto r = std::make_unique<SampleFromResolver>(std::make_unique<VariantGenerator>(kSpace, 1, 7),
                                                nullptr);
  EXPECT_EQ(r->Suggest("t0").kind, Suggestion::Kind::kFinished);
  EXPECT_NE(r->Describe()["error"].get<std::string>().find("no driver"), std::string::npos);
}

TEST(SampleFromResolverTest, MakeSearcherResolvesOnlyASpaceWithSampleFrom) {
  SearchSetup setup;
  setup.param_space = kSpace;
  auto with = MakeSearcher("random", json::object(), setup);
  ASSERT_TRUE(with.ok()) << with.status().ToString();
  EXPECT_NE(dynamic_cast<SampleFromResolver*>(with->get()), nullptr);
  setup.param_space = json{{"a", {{"grid_search", {1, 2}}}}};
  auto without = MakeSearcher("random", json::object(), setup);
  ASSERT_TRUE(without.ok());
  EXPECT_NE(dynamic_cast<VariantGenerator*>(without->get()), nullptr);
}

// The runner over DriverLink: no trial exists until the driver answered; then the trial is added
// (trial_added carries the whole config) and placed.
class SampleFromRunnerTest : public TrialRunnerTest {
 protected:
  void SetUp() override {
    DriverOptions o;
    o.endpoint = "tcp://127.0.0.1:5700";
    driver_ = std::make_unique<DriverLink>(o, "exp-abcde", "", "", 0xd1,
                                           std::make_unique<FakeLink>(link_));
    auto resolver = std::make_unique<SampleFromResolver>(
        std::make_unique<VariantGenerator>(kSpace, 1, 7),
        [this](const std::string& trial_id, json config, std::vector<DriverLink::KeyPath> paths,
               DriverLink::SampleCallback done) {
          driver_->Sample(trial_id, std::move(config), std::move(paths), std::move(done));
        });
    StartWithSearcher(RunnerOptions{}, std::move(resolver));
  }
  // Answers the hello, then the oldest driver_sample with `reply`; returns that request.
  json AnswerSample(json reply) {
    if (!link_.requests.empty() && link_.requests.front().request["type"] == "hello") {
      link_.Answer(json{{"type", "hello_ok"}});
    }
    EXPECT_FALSE(link_.requests.empty());
    if (link_.requests.empty()) return nullptr;
    EXPECT_EQ(link_.requests.front().request["type"], "driver_sample");
    reply["type"] = "driver_samples";
    return link_.Answer(reply);
  }

  FakeLinkState link_;
  std::unique_ptr<DriverLink> driver_;
};

TEST_F(SampleFromRunnerTest, ATrialIsAddedOnlyWithTheDriversValues) {
  runner_->Step();
  EXPECT_TRUE(obs_.added.empty());
  const json request = AnswerSample(json{{"values", {32, "tanh"}}});
  EXPECT_EQ(request["trial_id"], "exp_00000");
  EXPECT_TRUE(request["session"].is_string());
  EXPECT_EQ(request["paths"], json::parse(R"([["model", "width"], ["z"]])"));
  EXPECT_EQ(request["config"]["z"], (json{{"sample_from", "driver"}}));
  runner_->Step();
  ASSERT_EQ(obs_.added.size(), 1u);
  EXPECT_EQ(obs_.added[0].config["model"]["width"], 32);
  EXPECT_EQ(obs_.added[0].config["z"], "tanh");
  EXPECT_EQ(runner_->TotalTrials(), 2);

  // A malformed reply (one value for two paths) fails the request: retried after the backoff.
  AnswerSample(json{{"values", {1}}});
  EXPECT_EQ(driver_->state(), DriverLink::State::kUnavailable);
  link_.Advance(1);
  AnswerSample(json{{"values", {16, "relu"}}});
  runner_->Step();
  ASSERT_EQ(obs_.added.size(), 2u);
  EXPECT_EQ(obs_.added[1].config["a"], 2);
  EXPECT_EQ(obs_.added[1].config["z"], "relu");
  EXPECT_TRUE(link_.requests.empty());
}

TEST_F(SampleFromRunnerTest, ADriverErrorEndsTheSearchWithTheTrialsItHas) {
  runner_->Step();
  AnswerSample(json{{"values", {32, "tanh"}}});
  runner_->Step();
  GrantAll();
  AnswerSample(json{{"error", "model.width: ValueError: no width"}});
  runner_->Step();
  EXPECT_EQ(obs_.added.size(), 1u);
  EXPECT_EQ(runner_->TotalTrials(), 1);
  EXPECT_TRUE(link_.requests.empty());
}

}  // namespace
}  // namespace tunebus
