// ExperimentRegistry alone (services/scheduler/core/experiment_registry.hpp) on a ManualClock:
// experiments of the mock trainable submitted into it as the control socket's submit does, with
// no scheduler, no store and no resource-manager answering (SchedulerPartsHarness). What is
// checked is which experiment a message is for: by trial id, by name, or the default one, and
// the rule that names are unique among unfinished experiments.
#include "services/scheduler/core/experiment_registry.hpp"

#include <gtest/gtest.h>

#include <string>

#include "services/scheduler/core/experiment.hpp"
#include "tests/unit/scheduler_parts_harness.hpp"

namespace tunebus {
namespace {

using testing::SchedulerPartsHarness;

// Two experiments run at once: each trial id reaches its own experiment, by the experiment id
// before its last underscore; ids of no experiment here reach none.
TEST(ExperimentRegistryTest, ATrialIdRoutesToTheExperimentThatHoldsIt) {
  SchedulerPartsHarness h;
  Experiment* a = h.Submit("alpha", 2);
  Experiment* b = h.Submit("beta", 3);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a->experiment_id(), b->experiment_id());
  ASSERT_EQ(a->runner().trials().size(), 2u);
  ASSERT_EQ(b->runner().trials().size(), 3u);
  for (const Trial& t : a->runner().trials()) EXPECT_EQ(h.registry->ForTrial(t.trial_id), a);
  for (const Trial& t : b->runner().trials()) EXPECT_EQ(h.registry->ForTrial(t.trial_id), b);
  EXPECT_EQ(h.registry->ById(b->experiment_id()), b);
  EXPECT_EQ(h.registry->ForTrial("zzzzz_00000"), nullptr);
  EXPECT_EQ(h.registry->ForTrial("no-underscore"), nullptr);

  // A request naming a trial goes to its experiment, unless it names another experiment.
  const std::string trial = b->runner().trials()[1].trial_id;
  auto target = h.registry->Target("", trial);
  ASSERT_TRUE(target.ok()) << target.status().ToString();
  EXPECT_EQ(*target, b);
  auto wrong = h.registry->Target("alpha", trial);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kNotFound);
  EXPECT_NE(wrong.status().message().find("it is " + b->journal_name() + "'s"), std::string::npos)
      << wrong.status().message();
  EXPECT_EQ(h.registry->Target("", a->experiment_id() + "_99999").status().code(),
            StatusCode::kNotFound);
}

// With no experiment, a request naming none is told none has been submitted; with one it goes
// there; with two unfinished it must name one, and the error lists both.
TEST(ExperimentRegistryTest, ARequestNamingNoExperimentNeedsExactlyOneUnfinished) {
  SchedulerPartsHarness h;
  auto none = h.registry->DefaultExperiment();
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);
  EXPECT_EQ(h.registry->Target("").status().ToString(),
            Status::NotFound("no experiment has been submitted").ToString());

  Experiment* a = h.Submit("alpha", 1);
  auto only = h.registry->Target("");
  ASSERT_TRUE(only.ok());
  EXPECT_EQ(*only, a);

  Experiment* b = h.Submit("beta", 1);
  auto two = h.registry->Target("");
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(two.status().message().find("2 experiments are running (alpha, beta)"),
            std::string::npos)
      << two.status().message();
  EXPECT_NE(two.status().message().find("-e/--experiment"), std::string::npos);
  // Named, by name or journal name, either is found.
  EXPECT_EQ(*h.registry->Target("beta"), b);
  EXPECT_EQ(*h.registry->Target(a->journal_name()), a);
  auto missing = h.registry->Target("gamma");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("running: alpha, beta"), std::string::npos)
      << missing.status().message();

  // The one that ended no longer counts: the other is the default again.
  TrialControl(a->runner()).StopExperiment("stopped by the test");
  h.registry->StepRunning();
  ASSERT_EQ(a->phase(), Experiment::Phase::kEnded);
  EXPECT_EQ(h.registry->Unfinished(), std::vector<Experiment*>{b});
  EXPECT_EQ(*h.registry->Target(""), b);
}

// A name is refused while its submission or resume is claimed, and while an unfinished
// experiment has it; released or ended, it is free again.
TEST(ExperimentRegistryTest, NamesAreUniqueAmongUnfinishedExperimentsAndClaims) {
  SchedulerPartsHarness h;
  EXPECT_TRUE(h.registry->NameFree("alpha").ok());
  h.registry->Claim("alpha");
  EXPECT_TRUE(h.registry->Claimed("alpha"));
  Status claimed = h.registry->NameFree("alpha");
  EXPECT_EQ(claimed.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(claimed.message().find("being submitted or resumed"), std::string::npos);
  h.registry->Release("alpha");
  EXPECT_TRUE(h.registry->NameFree("alpha").ok());

  Experiment* a = h.Submit("alpha", 1);
  Status running = h.registry->NameFree("alpha");
  EXPECT_EQ(running.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(running.message().find("still running (journal " + a->journal_name() + ")"),
            std::string::npos)
      << running.message();
  TrialControl(a->runner()).StopExperiment("stopped by the test");
  h.registry->StepRunning();
  EXPECT_TRUE(h.registry->NameFree("alpha").ok());
  // A second run of the name has its own journal; the name finds the newest.
  Experiment* again = h.Submit("alpha", 1);
  ASSERT_NE(again, nullptr);
  EXPECT_NE(again->journal_name(), a->journal_name());
  EXPECT_EQ(h.registry->InMemory("alpha"), again);
  EXPECT_EQ(h.registry->InMemory(a->journal_name()), a);
}

// Forget drops every route to a deleted experiment; the object itself stays allocated.
TEST(ExperimentRegistryTest, AForgottenExperimentIsNoLongerRoutedTo) {
  SchedulerPartsHarness h;
  Experiment* a = h.Submit("alpha", 2);
  Experiment* b = h.Submit("beta", 1);
  const std::string trial = a->runner().trials()[0].trial_id;
  const std::string journal = a->journal_name();
  h.registry->Forget(journal);
  EXPECT_EQ(h.registry->ForTrial(trial), nullptr);
  EXPECT_EQ(h.registry->InMemory("alpha"), nullptr);
  EXPECT_EQ(h.registry->experiments().size(), 1u);
  EXPECT_EQ(*h.registry->Target(""), b);
  EXPECT_EQ(a->journal_name(), journal);  // retired, not freed
}

}  // namespace
}  // namespace tunebus
