// Tests for what `tunectl watch` does with the scheduler's events (services/tunectl/
// watch_state.hpp, progress_table.hpp): a trial added while watching is shown and counted, and
// no event shape — wrong types, missing fields, bodies that are not JSON objects, random bytes
// on the socket — makes it throw (an unchecked type would raise nlohmann's type_error.306).
#include "services/tunectl/watch_state.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "proto/codec.hpp"
#include "services/tunectl/progress_table.hpp"

namespace tunebus {
namespace {

using nlohmann::json;

proto::SchedulerEvent Event(const std::string& event, const std::string& trial_id,
                            const json& body) {
  proto::SchedulerEvent e;
  e.event = event;
  e.experiment = "exp";
  e.trial_id = trial_id;
  e.body_json = body.dump();
  return e;
}

TEST(WatchStateTest, ATrialAddedWhileWatchingIsShownAndCountedInTheProgressBar) {
  WatchState state({{"name", "exp"}, {"total", 2}},
                   json::array({{{"trial_id", "a"}, {"status", "RUNNING"}},
                                {{"trial_id", "b"}, {"status", "PENDING"}}}));
  // A result of a trial the snapshot did not hold (added with `tunectl add` meanwhile).
  auto line = state.Apply(Event("trial_added", "c", {{"trial_id", "c"}, {"status", "PENDING"}}));
  EXPECT_EQ(line, std::optional<std::string>("trial_added c PENDING iter 0"));
  EXPECT_EQ(state.Apply(Event("trial_result", "d", {{"trial_id", "d"}, {"status", "RUNNING"}})),
            std::optional<std::string>("trial_result d RUNNING iter 0"));
  EXPECT_EQ(state.Total(), 4);
  state.Apply(Event("trial_status", "a",
                    {{"trial_id", "a"}, {"status", "TERMINATED"}, {"training_iteration", 3}}));
  EXPECT_EQ(state.Finished(), 1);
  EXPECT_EQ(state.Summary()["counts"], (json{{"PENDING", 2}, {"RUNNING", 1}, {"TERMINATED", 1}}));
  EXPECT_FALSE(state.ended());
  state.Apply(Event("experiment_ended", "", {{"status", "FINISHED"}}));
  EXPECT_TRUE(state.ended());
  EXPECT_EQ(state.ended_status(), "FINISHED");
}

// A random JSON value of any shape, a few levels deep.
json RandomJson(std::mt19937& rng, int depth) {
  static const char* kKeys[] = {"trial_id",
                                "status",
                                "training_iteration",
                                "time_total_s",
                                "config",
                                "last_result",
                                "total",
                                "counts",
                                "metric",
                                "best",
                                "name",
                                "elapsed_s",
                                "x"};
  switch (std::uniform_int_distribution<int>(0, depth > 0 ? 7 : 5)(rng)) {
    case 0:
      return nullptr;
    case 1:
      return std::uniform_int_distribution<int>(0, 1)(rng) == 1;
    case 2:
      return std::uniform_int_distribution<int64_t>(-5, 5)(rng);
    case 3:
      return std::uniform_real_distribution<double>(-1, 1)(rng);
    case 4:
      return std::string(kKeys[std::uniform_int_distribution<int>(0, 12)(rng)]);
    case 5:
      return std::string("RUNNING");
    case 6: {
      json a = json::array();
      for (int i = std::uniform_int_distribution<int>(0, 3)(rng); i > 0; --i)
        a.push_back(RandomJson(rng, depth - 1));
      return a;
    }
    default: {
      json o = json::object();
      for (int i = std::uniform_int_distribution<int>(0, 5)(rng); i > 0; --i) {
        o[kKeys[std::uniform_int_distribution<int>(0, 12)(rng)]] = RandomJson(rng, depth - 1);
      }
      return o;
    }
  }
}

TEST(WatchStateTest, ProgressTableNamesTheSearcherAndItsPhase) {
  // `tunectl run`'s table (and status) say which searcher suggests and whether it still draws
  // startup configs or has a model: the line under the summary, fields in key order.
  const json experiment = {
      {"name", "digits-bohb"},
      {"total", 17},
      {"searcher",
       {{"searcher", "bohb"}, {"phase", "model"}, {"model_budget", 1.0}, {"observations", 9}}}};
  const std::vector<std::string> lines = RenderProgressTable(experiment, json::array(), 20);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[1], "searcher: bohb (model_budget 1.0, observations 9, phase model)");
  EXPECT_EQ(RenderProgressTable({{"name", "x"}}, json::array(), 20)[1].rfind("trial", 0), 0u)
      << "no searcher line without a searcher";
}

TEST(WatchStateTest, NoEventShapeMakesTheWatcherThrow) {
  // Seeded fuzzing of the decoder and the renderer: 20,000 events of random shapes, names and
  // bodies (some not JSON at all), over snapshots of random shapes, and random frames.
  std::mt19937 rng(20261125);
  static const char* kEvents[] = {
      "trial_added",      "trial_started", "trial_result",     "trial_status",
      "checkpoint_saved", "trial_updated", "experiment_ended", "?"};
  for (int snapshot = 0; snapshot < 50; ++snapshot) {
    const json experiment = RandomJson(rng, 3), trials = RandomJson(rng, 3);
    ASSERT_NO_THROW({
      WatchState state(experiment, trials);
      for (int i = 0; i < 400; ++i) {
        proto::SchedulerEvent e;
        e.event = kEvents[std::uniform_int_distribution<int>(0, 7)(rng)];
        e.trial_id =
            std::uniform_int_distribution<int>(0, 4)(rng) == 0 ? "" : "t" + std::to_string(i % 7);
        e.body_json = i % 13 == 0 ? "{not json" : RandomJson(rng, 3).dump();
        state.Apply(e);
        RenderProgressTable(state.Summary(), state.Trials(), 20);
        RenderSummaryLine(state.Summary());
      }
      RenderProgressTable(experiment, trials, 20);
    }) << "snapshot "
       << snapshot << ": " << experiment.dump() << " " << trials.dump();
  }
  for (int i = 0; i < 2000; ++i) {
    std::string frame(size_t(std::uniform_int_distribution<int>(0, 64)(rng)), '\0');
    for (char& c : frame) c = char(std::uniform_int_distribution<int>(0, 255)(rng));
    ASSERT_NO_THROW({
      auto d = proto::Decode(frame.data(), frame.size());
      if (d.ok()) (void)d->As<proto::SchedulerEvent>();
    });
  }
}

TEST(WatchStateTest, WatchUsesTheEventEndpointTheSchedulerNames) {
  EXPECT_EQ(*WatchEndpoint("tcp://127.0.0.2:5555", {{"events_endpoint", "tcp://127.0.0.1:41234"}}),
            "tcp://127.0.0.1:41234");
  EXPECT_EQ(*WatchEndpoint("tcp://127.0.0.2:5555", {{"events_endpoint", "tcp://0.0.0.0:5560"}}),
            "tcp://127.0.0.2:5560");
  EXPECT_EQ(*WatchEndpoint("ipc:///tmp/c", {{"events_endpoint", "ipc:///tmp/e"}}), "ipc:///tmp/e");
  EXPECT_EQ(WatchEndpoint("tcp://127.0.0.1:5555", {{"events_endpoint", "inproc://tunebus-events"}})
                .status()
                .code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(WatchEndpoint("tcp://127.0.0.1:5555", json::object()).status().code(),
            StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tunebus
