// The tunectl commands for operators on real service processes: watch follows the event
// stream to the end, ls sorts, limits and picks columns, best, export (csv and json), logs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/fault/fault_support.hpp"
#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

TEST(OperatorCommandsTest, WatchLsBestExportAndLogsFromTunectl) {
  ClusterOptions o;
  o.cpus_per_worker = 2;
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  // A shell trainable: prints a line to stdout, reports score = lr * iteration three times.
  WriteFile(cluster.dir() / "train.sh",
            "lr=$(echo \"$TUNEBUS_CONFIG\" | sed 's/.*\"lr\":\\([0-9.e-]*\\).*/\\1/')\n"
            "echo \"training with lr=$lr\"\n"
            "for i in 1 2 3; do\n"
            "  echo \"{\\\"score\\\": $(awk \"BEGIN{print $lr * $i}\")}\" >&$TUNEBUS_REPORT_FD\n"
            "  read -r decision <&$TUNEBUS_DECISION_FD\n"
            "  [ \"$decision\" = stop ] && exit 0\n"
            "  sleep 0.1\n"
            "done\n");
  const fs::path file = cluster.dir() / "ops.yaml";
  WriteFile(file,
            "name: ops\n"
            "trainable: {command: [sh, train.sh]}\n"
            "working_dir: false\n"  // the file sits among the cluster's data
            "param_space:\n"
            "  lr: {grid_search: [0.1, 0.4, 0.2, 0.3]}\n"
            "metric: score\n"
            "mode: max\n"
            "results_dir: " +
                (cluster.dir() / "results").string() + "\n");
  ASSERT_FALSE(SubmitDetached(cluster, file, "ops").empty());

  // watch (not a terminal: one line per event) follows the stream until the experiment ends.
  auto watch = cluster.Ctl({"watch", "--events", cluster.events()}, 60s);
  ASSERT_EQ(watch.exit_code, 0) << watch.Describe();
  EXPECT_NE(watch.out.find("trial_status"), std::string::npos) << watch.out;
  EXPECT_NE(watch.out.find("TERMINATED"), std::string::npos) << watch.out;
  EXPECT_NE(watch.out.find("Experiment ops ended"), std::string::npos) << watch.out;
  EXPECT_EQ(watch.out.find("\033["), std::string::npos) << "colour outside a terminal";

  auto sorted = cluster.Ctl({"-o", "json", "ls", "--sort", "-score", "--limit", "2"});
  ASSERT_EQ(sorted.exit_code, 0) << sorted.Describe();
  ASSERT_EQ(sorted.Json().size(), 2u) << sorted.out;
  EXPECT_DOUBLE_EQ(sorted.Json()[0]["last_result"].value("score", 0.0), 1.2);
  EXPECT_NEAR(sorted.Json()[1]["last_result"].value("score", 0.0), 0.9, 1e-9);
  // Pages come from the scheduler in creation order (lr 0.1, 0.4, 0.2, 0.3): trials 2 and 3.
  auto page = cluster.Ctl({"-o", "json", "ls", "--offset", "1", "--limit", "2"});
  ASSERT_EQ(page.exit_code, 0) << page.Describe();
  ASSERT_EQ(page.Json().size(), 2u) << page.out;
  EXPECT_DOUBLE_EQ(page.Json()[0]["config"].value("lr", 0.0), 0.4) << page.out;
  EXPECT_DOUBLE_EQ(page.Json()[1]["config"].value("lr", 0.0), 0.2) << page.out;
  auto sorted_page =
      cluster.Ctl({"-o", "json", "ls", "--sort", "-score", "--offset", "1", "--limit", "1"});
  ASSERT_EQ(sorted_page.Json().size(), 1u) << sorted_page.out;
  EXPECT_NEAR(sorted_page.Json()[0]["last_result"].value("score", 0.0), 0.9, 1e-9)
      << sorted_page.out;
  auto columns = cluster.Ctl({"ls", "--sort", "score", "--columns", "trial_id,config.lr,score"});
  ASSERT_EQ(columns.exit_code, 0) << columns.Describe();
  EXPECT_EQ(columns.out.substr(0, columns.out.find('\n')), "trial_id     config.lr  score")
      << columns.out;
  EXPECT_NE(columns.out.find("0.1        0.3"), std::string::npos) << columns.out;

  // The default table shows the experiment's metric; "metric" names it as a column; a status
  // filter takes any case, and a wrong one lists the valid ones.
  auto table = cluster.Ctl({"ls"});
  EXPECT_NE(table.out.find("| score |"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("| 1.2 "), std::string::npos) << table.out;
  auto metric_column = cluster.Ctl({"ls", "--sort", "-metric", "--columns", "config.lr,metric"});
  EXPECT_NE(metric_column.out.find("0.4        1.2"), std::string::npos) << metric_column.out;
  EXPECT_EQ(cluster.Ctl({"-o", "json", "ls", "--status", "terminated"}).Json().size(), 4u);
  auto bad_status = cluster.Ctl({"ls", "--status", "runing"});
  EXPECT_EQ(bad_status.exit_code, 1) << bad_status.Describe();
  EXPECT_NE(bad_status.err.find("one of PENDING, RUNNING"), std::string::npos)
      << bad_status.Describe();
  // watch finds the event stream from the scheduler's status (no --events).
  auto told = cluster.Ctl({"watch"}, 10s);
  EXPECT_EQ(told.exit_code, 0) << told.Describe();

  auto best = cluster.Ctl({"-o", "json", "best"});
  ASSERT_EQ(best.exit_code, 0) << best.Describe();
  EXPECT_DOUBLE_EQ(best.Json()["config"].value("lr", 0.0), 0.4);
  auto best_text = cluster.Ctl({"best"});
  EXPECT_NE(best_text.out.find("metric:     score = 1.2 (mode max)"), std::string::npos)
      << best_text.out;

  auto csv = cluster.Ctl({"export", "--format", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.Describe();
  const std::string header = csv.out.substr(0, csv.out.find('\n'));
  EXPECT_EQ(header.rfind("trial_id,status,config.lr,", 0), 0u) << header;
  EXPECT_NE(header.find(",score,"), std::string::npos) << header;
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 5) << csv.out;
  auto exported = cluster.Ctl({"export", "--format", "json"});
  EXPECT_EQ(exported.Json().size(), 4u);
  auto exported_o_json = cluster.Ctl({"-o", "json", "export"});  // -o json means JSON here too
  EXPECT_EQ(exported_o_json.Json().size(), 4u) << exported_o_json.out;

  const std::string id = best.Json().value("trial_id", "");
  auto logs = cluster.Ctl({"logs", id});
  ASSERT_EQ(logs.exit_code, 0) << logs.Describe();
  EXPECT_EQ(logs.out, "training with lr=0.4\n");
  auto nosuch = cluster.Ctl({"logs", "nosuch"});
  EXPECT_EQ(nosuch.exit_code, 1) << nosuch.Describe();

  // On a terminal (util-linux `script` gives it one) watch draws in colour, but never with
  // NO_COLOR.
  if (!fs::exists("/usr/bin/script"))
    GTEST_SKIP() << "util-linux script(1) is needed for a pseudo-terminal";
  for (const bool no_color : {false, true}) {
    Process::Options o;
    o.name = no_color ? "watch-tty-nocolor" : "watch-tty";
    o.binary = "/usr/bin/script";
    o.args = {"-q", "-e", "-c",
              (BinDir() / "tunectl").string() + " --connect " + cluster.control() +
                  " watch --events " + cluster.events(),
              "/dev/null"};
    if (no_color) o.env["NO_COLOR"] = "1";
    o.log_dir = cluster.dir() / "logs";
    auto p = Process::Spawn(o);
    ASSERT_TRUE(p->Wait(20s).has_value());
    const std::string out = p->Stdout();
    EXPECT_NE(out.find("TERMINATED"), std::string::npos) << out;
    EXPECT_EQ(out.find("\033[32mTERMINATED") != std::string::npos, !no_color) << out;
  }
}

}  // namespace
}  // namespace tunebus::testing
