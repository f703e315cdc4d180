// ControlService alone (services/scheduler/control/control_service.hpp) on a ManualClock: its
// ROUTER bound by the test, tunectl played by a DEALER, experiments submitted into the registry
// it is handed (SchedulerPartsHarness), no store or resource-manager answering. What is checked
// is that a read is answered from the experiment it names, and that requests the table or a
// handler refuses get an ErrorReply with the right code, each request exactly one reply.
#include "services/scheduler/control/control_service.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "libs/bus/socket.hpp"
#include "proto/control.hpp"
#include "proto/dashboard.hpp"
#include "services/scheduler/core/experiment.hpp"
#include "services/scheduler/core/fair_share_arbiter.hpp"
#include "services/scheduler/store/store_health.hpp"
#include "services/scheduler/workers/worker_registry.hpp"
#include "tests/unit/scheduler_parts_harness.hpp"

namespace tunebus {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using testing::SchedulerPartsHarness;

class ControlServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    zmq::socket_t router(h_.ctx, zmq::socket_type::router);
    router.set(zmq::sockopt::linger, 0);
    const std::string endpoint = "inproc://parts-control-" + h_.tag;
    router.bind(endpoint);
    ControlService::Options options;
    options.events_endpoint = "inproc://parts-events-" + h_.tag;
    auto service =
        ControlService::Create(std::move(router), options,
                               ControlService::Parts{h_.clock, *h_.registry, *h_.context, arbiter_,
                                                     workers_, *h_.store, *h_.rm, store_health_});
    ASSERT_TRUE(service.ok()) << service.status().ToString();
    service_ = std::move(*service);
    service_->Start(h_.loop);
    tunectl_ = h_.Dealer(endpoint);
  }

  // Sends `request` and returns its one reply (nullopt: none within 5 s of real time).
  template <typename Request>
  std::optional<proto::Decoded> Ask(Request request) {
    request.id = ++id_;
    EXPECT_TRUE(bus::SendMessage(tunectl_, request));
    auto reply = testing::NextWhileLooping(h_.loop, tunectl_, 5s);
    if (reply) {
      EXPECT_EQ(reply->id(), request.id);
    }
    return reply;
  }
  // The body of a ControlReply to `request`; fails the test on an error reply.
  template <typename Request>
  json Answer(Request request) {
    std::optional<proto::Decoded> reply = Ask(std::move(request));
    if (!reply || reply->type() != proto::ControlReply::kType) {
      ADD_FAILURE() << "no control_reply: " << (reply ? reply->type() : "nothing");
      return json();
    }
    return json::parse(reply->As<proto::ControlReply>()->body_json);
  }
  // The ErrorReply to `request`; fails the test on anything else.
  template <typename Request>
  proto::ErrorReply Refusal(Request request) {
    std::optional<proto::Decoded> reply = Ask(std::move(request));
    if (!reply || reply->type() != proto::ErrorReply::kType) {
      ADD_FAILURE() << "no error reply: " << (reply ? reply->type() : "nothing");
      return {};
    }
    return *reply->As<proto::ErrorReply>();
  }

  SchedulerPartsHarness h_;
  FairShareArbiter arbiter_{*h_.registry, *h_.rm, h_.loop, h_.clock};
  WorkerRegistry workers_;
  StoreHealth store_health_{h_.loop, *h_.store, [] {}};
  std::unique_ptr<ControlService> service_;
  zmq::socket_t tunectl_;
  uint64_t id_ = 0;
};

// Reads of an experiment in memory are answered at once, from the experiment they name; with
// two running, one naming none is refused, naming both.
TEST_F(ControlServiceTest, AReadIsAnsweredFromTheExperimentItNames) {
  Experiment* a = h_.Submit("alpha", 2);
  h_.Submit("beta", 3);

  proto::ListTrials list;
  list.experiment = "beta";
  const json trials = Answer(list);
  ASSERT_TRUE(trials.is_array());
  EXPECT_EQ(trials.size(), 3u);

  proto::ShowTrial show;
  show.experiment = "alpha";
  show.trial_id = a->runner().trials()[1].trial_id;
  const json trial = Answer(show);
  EXPECT_EQ(trial.value("trial_id", ""), show.trial_id);
  // Its creation is journaled but not durable (no store answers): the view says so.
  EXPECT_EQ(trial.value("durable", true), false);

  proto::GetExperiment get;
  get.experiment = "alpha";
  const json experiment = Answer(get);
  EXPECT_EQ(experiment.value("name", ""), "alpha");
  EXPECT_EQ(experiment.value("journal", ""), a->journal_name());
  EXPECT_EQ(experiment.value("events_endpoint", ""), "inproc://parts-events-" + h_.tag);
  EXPECT_EQ(experiment.value("weight", 0.0), 1.0);

  const proto::ErrorReply ambiguous = Refusal(proto::GetExperiment{});
  EXPECT_EQ(ambiguous.code, "failed_precondition");
  EXPECT_NE(ambiguous.message.find("alpha, beta"), std::string::npos) << ambiguous.message;
}

// Requests that change state are refused when they name what is not there, or a name that runs;
// an unknown type is refused by the table. Nothing changes.
TEST_F(ControlServiceTest, ARequestThatCannotBeDoneIsRefusedWithItsReason) {
  Experiment* a = h_.Submit("alpha", 2);

  proto::StopTrialCommand stop;
  stop.trial_id = a->experiment_id() + "_99999";
  const proto::ErrorReply no_trial = Refusal(stop);
  EXPECT_EQ(no_trial.code, "not_found");
  EXPECT_EQ(no_trial.message, "no trial " + stop.trial_id);

  proto::SetExperimentWeight weight;
  weight.weight = -1;
  EXPECT_EQ(Refusal(weight).code, "invalid_argument");
  EXPECT_EQ(a->weight(), 1.0);

  // The same name again while it runs (its file differs, so it is not a follow).
  const proto::ErrorReply taken = Refusal(h_.SubmitRequest(h_.Yaml("alpha", 3)));
  EXPECT_EQ(taken.code, "failed_precondition");
  EXPECT_NE(taken.message.find("still running"), std::string::npos) << taken.message;
  EXPECT_EQ(h_.registry->experiments().size(), 1u);

  // The same file again follows the running experiment: answered with it, nothing submitted.
  const json followed = Answer(h_.SubmitRequest(h_.Yaml("alpha", 2)));
  EXPECT_EQ(followed.value("name", ""), "alpha");
  EXPECT_EQ(h_.registry->experiments().size(), 1u);

  proto::ListTrials bad_status;
  bad_status.status = "SLEEPING";
  EXPECT_EQ(Refusal(bad_status).code, "invalid_argument");

  proto::VerifyDashboardToken token;
  token.token = "not-a-token";
  EXPECT_EQ(Refusal(token).code, "invalid_argument");  // not a token at all
  EXPECT_EQ(service_->dispatcher().counts().at(proto::StopTrialCommand::kType), 1u);
}

// A trial's results are answered from its result.json on the scheduler's host, a page at a time,
// oldest first: the torn line a writer is appending and blank lines are no rows; next_offset
// leads through the pages and is null on the last; a trial without results has none; bad pages
// and an unknown trial are refused with typed errors (an unknown experiment is looked for in the
// store's journals, which no store answers here: tests/python/test_list_results.py).
TEST_F(ControlServiceTest, ListResultsAnswersATrialsResultRowsAPageAtATime) {
  Experiment* a = h_.Submit("alpha", 2);
  const Trial& first = a->runner().trials()[0];
  const std::string dir = a->experiment_dir() + "/" + first.DirName();
  std::filesystem::create_directories(dir);
  {
    std::ofstream file(dir + "/result.json");
    for (int i = 1; i <= 5; ++i) {
      file << json{{"score", 10 * i}, {"training_iteration", i}, {"config", {{"x", 0}}}}.dump()
           << "\n";
      if (i == 2) file << "\n";
    }
    file << R"({"score": 60, "training_it)";  // torn: no newline yet
  }

  proto::ListResults list;
  list.experiment = "alpha";
  list.trial_id = first.trial_id;
  list.limit = 2;
  json page = Answer(list);
  EXPECT_EQ(page.value("experiment", ""), a->journal_name());
  EXPECT_EQ(page.value("trial_id", ""), first.trial_id);
  EXPECT_EQ(page.value("total", -1), 5);
  EXPECT_EQ(page.value("offset", -1), 0);
  ASSERT_EQ(page["results"].size(), 2u);
  EXPECT_EQ(page["results"][0]["training_iteration"], 1);
  EXPECT_EQ(page["results"][1]["score"], 20);
  EXPECT_EQ(page["results"][0]["config"], json({{"x", 0}}));
  EXPECT_EQ(page["next_offset"], 2);

  list.offset = page["next_offset"].get<int64_t>();
  page = Answer(list);
  ASSERT_EQ(page["results"].size(), 2u);
  EXPECT_EQ(page["results"][0]["training_iteration"], 3);
  EXPECT_EQ(page["next_offset"], 4);
  list.offset = 4;
  page = Answer(list);
  ASSERT_EQ(page["results"].size(), 1u);
  EXPECT_EQ(page["results"][0]["training_iteration"], 5);
  EXPECT_TRUE(page["next_offset"].is_null());
  list.offset = 9;
  page = Answer(list);
  EXPECT_TRUE(page["results"].empty());
  EXPECT_EQ(page.value("total", -1), 5);
  EXPECT_TRUE(page["next_offset"].is_null());
  list.offset = 0;
  list.limit = 0;  // the cap: every row here
  EXPECT_EQ(Answer(list)["results"].size(), 5u);

  proto::ListResults none = list;
  none.trial_id = a->runner().trials()[1].trial_id;  // no result.json yet
  page = Answer(none);
  EXPECT_EQ(page.value("total", -1), 0);
  EXPECT_TRUE(page["results"].empty());

  proto::ListResults bad = list;
  bad.offset = -1;
  EXPECT_EQ(Refusal(bad).code, "invalid_argument");
  bad = list;
  bad.limit = proto::kMaxResultsPageRows + 1;
  EXPECT_EQ(Refusal(bad).code, "invalid_argument");
  bad = list;
  bad.trial_id = "";
  EXPECT_EQ(Refusal(bad).code, "invalid_argument");
  bad = list;
  bad.trial_id = a->experiment_id() + "_99999";
  const proto::ErrorReply no_trial = Refusal(bad);
  EXPECT_EQ(no_trial.code, "not_found");
  EXPECT_NE(no_trial.message.find(a->journal_name()), std::string::npos) << no_trial.message;
}

}  // namespace
}  // namespace tunebus
