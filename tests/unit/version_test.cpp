// One version string. Version() is the root CMakeLists.txt's
// `project(tunebus VERSION x.y.z)` (cmake/Version.cmake generates it), and what carries it says
// the same: the dashboard's page footers and the hellos the scheduler sends a driver (§7b) and
// an external searcher (§7a). The binaries' --version and get_experiment's `version` are
// process tests (tests/integration/version_test.cpp).
#include "libs/core/version.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "libs/tune/driver_link.hpp"
#include "libs/tune/external_searcher.hpp"
#include "services/scheduler/dashboard/assets.hpp"
#include "services/scheduler/dashboard/http.hpp"
#include "tests/unit/fake_link.hpp"

namespace tunebus {
namespace {

using nlohmann::json;

TEST(VersionTest, VersionIsTheRootCMakeListsProjectVersion) {
  // The source tree's project() line is the one version; the build's Version() is generated
  // from it (a change re-runs CMake, which rewrites generated/version.cpp).
  std::ifstream in(std::string(TUNEBUS_TEST_SOURCE_DIR) + "/CMakeLists.txt");
  ASSERT_TRUE(in) << TUNEBUS_TEST_SOURCE_DIR;
  std::stringstream text;
  text << in.rdbuf();
  const std::string cmake = text.str();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(cmake, m, std::regex(R"(project\(tunebus VERSION ([0-9.]+))")));
  EXPECT_EQ(Version(), m[1].str());
  EXPECT_TRUE(std::regex_match(std::string(Version()), std::regex(R"(\d+\.\d+\.\d+)")))
      << Version();
}

TEST(VersionTest, VersionTextNamesTheVersionAndTheCommit) {
  // "0.1.0 (commit abc1234)": a short git commit, "-dirty" when the tree had changes, the
  // TUNEBUS_COMMIT cache variable, or "unknown".
  EXPECT_EQ(std::string(VersionText()), std::string(Version()) + " (commit " + Commit() + ")");
  EXPECT_TRUE(std::regex_match(std::string(Commit()), std::regex(R"([A-Za-z0-9._+-]+)")))
      << Commit();
}

TEST(VersionTest, EveryDashboardPageShowsTheVersionInItsFooter) {
  // Each page the dashboard serves carries the footer mark; the server replaces it.
  for (const char* name : {"index.html", "experiment.html", "trial.html", "login.html"}) {
    SCOPED_TRACE(name);
    const std::string_view* page = dashboard::FindAsset(name);
    ASSERT_NE(page, nullptr);
    ASSERT_NE(page->find(dashboard::kVersionMark), std::string_view::npos);
    const std::string sent = dashboard::PageWithVersion(*page);
    EXPECT_EQ(sent.find(dashboard::kVersionMark), std::string::npos);
    EXPECT_NE(
        sent.find(std::string("<footer class=\"version\">tunebus ") + VersionText() + "</footer>"),
        std::string::npos);
  }
  EXPECT_EQ(dashboard::PageWithVersion("<p>no footer</p>"), "<p>no footer</p>");
}

TEST(VersionTest, TheDriverLinksHelloCarriesTheSchedulersVersion) {
  // proto/PROTOCOL.md §7b, since v1.12: hello's `version` tells the driver which scheduler
  // speaks to it.
  FakeLinkState link;
  DriverOptions o;
  o.endpoint = "tcp://127.0.0.1:5700";
  DriverLink driver(o, "exp-abcde", "acc", "max", 0xd1, std::make_unique<FakeLink>(link));
  driver.Ask("t1", 1, 1, json::object());
  ASSERT_FALSE(link.requests.empty());
  const json& hello = link.requests.front().request;
  EXPECT_EQ(hello.value("type", ""), "hello");
  EXPECT_EQ(hello.value("version", ""), Version()) << hello.dump();
}

TEST(VersionTest, TheExternalSearchersHelloCarriesTheSchedulersVersion) {
  // proto/PROTOCOL.md §7a, since v1.12: likewise for an external searcher.
  FakeLinkState link;
  ExternalOptions o;
  o.endpoint = "tcp://127.0.0.1:5600";
  ExternalSearcher searcher(o, 10, 7, "exp-abcde", 0xfeed, std::make_unique<FakeLink>(link));
  Status st = searcher.SetSearchProperties("loss", "min", json{{"lr", {{"uniform", {0, 1}}}}});
  ASSERT_TRUE(st.ok()) << st.ToString();
  searcher.Suggest("t1");
  ASSERT_FALSE(link.requests.empty());
  const json& hello = link.requests.front().request;
  EXPECT_EQ(hello.value("type", ""), "hello");
  EXPECT_EQ(hello.value("version", ""), Version()) << hello.dump();
}

}  // namespace
}  // namespace tunebus
