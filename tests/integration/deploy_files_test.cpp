// Issue 7: the compose files and the Dockerfile are right by construction (there is no Docker
// engine here and no Dockerfile linter in Debian): every binary, flag, environment variable and
// path they name exists in this build and source tree. `docker-compose config -q` (in .ci/run)
// checks the compose syntax on top.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using namespace std::chrono_literals;

const std::set<std::string> kBinaries = {"scheduler", "resource-manager", "checkpoint-store",
                                         "trial-worker", "tunectl"};

// `binary --help` (the flags and the TUNEBUS_* variables it reads). Its output goes to a folder
// of its own: two tests of this file asking the same binary at once (ctest -j2) must not write
// each other's files.
std::string Help(const std::string& binary) {
  TempDir logs;
  Process::Options o;
  o.name = binary + "-help";
  o.binary = BinDir() / binary;
  o.args = {"--help"};
  o.log_dir = logs.path();
  auto p = Process::Spawn(o);
  p->Wait(10s);
  return p->Stdout();
}

// Every TUNEBUS_* variable a compose service sets, with the service.
std::vector<std::pair<std::string, std::string>> EnvOf(const YAML::Node& service,
                                                       const std::string& name) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& kv : service["environment"]) out.emplace_back(name, kv.first.as<std::string>());
  return out;
}

TEST(DeployFilesTest, ComposeNamesOnlyBinariesFlagsAndVariablesThatExist) {
  std::map<std::string, std::string> help;
  for (const std::string& b : kBinaries) {
    help[b] = Help(b);
    ASSERT_NE(help[b].find("Usage"), std::string::npos) << b << ": " << help[b];
  }
  for (const char* file : {"compose/docker-compose.yml", "compose/docker-compose.gpu.yml"}) {
    const YAML::Node compose = YAML::LoadFile((SourceDir() / file).string());
    for (const auto& kv : compose["services"]) {
      const std::string name = kv.first.as<std::string>();
      const YAML::Node& s = kv.second;
      // The service's binary: its entrypoint or command, else the one it is named after.
      std::vector<std::string> argv;
      for (const char* key : {"entrypoint", "command"}) {
        if (s[key]) {
          for (const auto& a : s[key]) argv.push_back(a.as<std::string>());
        }
      }
      const std::string binary = !argv.empty() && kBinaries.contains(argv[0]) ? argv[0] : name;
      ASSERT_TRUE(kBinaries.contains(binary))
          << file << ": service " << name << " runs no tunebus binary";
      EXPECT_TRUE(fs::exists(BinDir() / binary)) << binary;
      for (const std::string& a : argv) {
        if (a.rfind("--", 0) == 0) {
          EXPECT_NE(help[binary].find(a + " "), std::string::npos)
              << file << ": " << binary << " has no flag " << a;
        }
      }
      for (const auto& [svc, var] : EnvOf(s, name)) {
        if (var.rfind("TUNEBUS_", 0) != 0) continue;
        bool read = false;
        for (const auto& [b, text] : help)
          read = read || text.find("Env:" + var + ")") != std::string::npos;
        EXPECT_TRUE(read) << file << ": service " << svc << " sets " << var
                          << ", which no binary reads";
      }
    }
  }
}

TEST(DeployFilesTest, DockerfileCopiesBinariesAndPathsThatExist) {
  const std::string dockerfile = ReadFile(SourceDir() / "compose/Dockerfile");
  ASSERT_FALSE(dockerfile.empty());
  const std::regex bin(R"(/build/bin/([a-z-]+))"), src(R"(/src/([A-Za-z0-9_./-]+))"),
      target(R"(cmake --build \S+ --target ([a-z -]+))");
  int binaries = 0, paths = 0;
  for (auto it = std::sregex_iterator(dockerfile.begin(), dockerfile.end(), bin);
       it != std::sregex_iterator(); ++it) {
    EXPECT_TRUE(fs::exists(BinDir() / (*it)[1].str())) << (*it)[1];
    ++binaries;
  }
  for (auto it = std::sregex_iterator(dockerfile.begin(), dockerfile.end(), src);
       it != std::sregex_iterator(); ++it) {
    EXPECT_TRUE(fs::exists(SourceDir() / (*it)[1].str())) << (*it)[1];
    ++paths;
  }
  std::smatch targets;
  ASSERT_TRUE(std::regex_search(dockerfile, targets, target));
  std::istringstream names(targets[1].str());
  for (std::string t; names >> t;) EXPECT_TRUE(kBinaries.contains(t)) << "--target " << t;
  EXPECT_EQ(binaries, 5);
  EXPECT_GE(paths, 2);
  EXPECT_NE(dockerfile.find("USER tunebus"), std::string::npos)
      << "the runtime image must not run as root";
  EXPECT_NE(dockerfile.find("FROM debian:bookworm AS build"), std::string::npos);
  EXPECT_NE(dockerfile.find("FROM debian:bookworm-slim AS runtime"), std::string::npos);
}

// The Dockerfile's stages by name ("FROM <image> AS <name>"), each with its text.
std::map<std::string, std::string> DockerfileStages(const std::string& dockerfile) {
  std::map<std::string, std::string> stages;
  const std::regex from(R"(^FROM \S+ AS ([a-z-]+)$)");
  std::istringstream lines(dockerfile);
  std::string current;
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, from)) current = m[1].str();
    if (!current.empty()) stages[current] += line + "\n";
  }
  return stages;
}

TEST(DeployFilesTest, ServicesWaitForHealthyOnesAndEachRoleHasItsOwnSlimImage) {
  // Issue 19, point 9: depends_on waits for service_healthy, every healthcheck runs a real
  // `<binary> --healthcheck`; each service is built from the Dockerfile stage of its role, which
  // copies its binary; only the trial-worker stage installs Python's ML packages; the scheduler
  // writes results to the /results volume the workers share; the build context leaves out build
  // folders, .git and results.
  const YAML::Node compose = YAML::LoadFile((SourceDir() / "compose/docker-compose.yml").string());
  const auto stages = DockerfileStages(ReadFile(SourceDir() / "compose/Dockerfile"));
  ASSERT_TRUE(stages.contains("build") && stages.contains("runtime"))
      << "stages: " << stages.size();
  int healthchecks = 0;
  for (const auto& kv : compose["services"]) {
    const std::string name = kv.first.as<std::string>();
    const YAML::Node& s = kv.second;
    const std::string target = s["build"]["target"].as<std::string>("");
    ASSERT_TRUE(stages.contains(target))
        << name << " builds target '" << target << "', not a Dockerfile stage";
    EXPECT_NE(stages.at(target).find("/build/bin/" + name + " "), std::string::npos)
        << target << " lacks " << name;
    EXPECT_EQ(stages.at(target).find("FROM runtime AS"), 0u)
        << target << " is not built on the slim runtime";
    if (name != "tunectl") {
      const YAML::Node test = s["healthcheck"]["test"];
      ASSERT_TRUE(test && test.size() == 3) << name << " has no healthcheck";
      EXPECT_EQ(test[0].as<std::string>(), "CMD");
      EXPECT_EQ(test[1].as<std::string>(), name);
      EXPECT_EQ(test[2].as<std::string>(), "--healthcheck");
      EXPECT_NE(Help(name).find("--healthcheck"), std::string::npos) << name;
      ++healthchecks;
    }
    for (const auto& dep : s["depends_on"]) {
      const std::string on = dep.first.as<std::string>();
      EXPECT_EQ(dep.second["condition"].as<std::string>(""), "service_healthy")
          << name << " -> " << on;
      EXPECT_TRUE(compose["services"][on]["healthcheck"]["test"])
          << name << " waits for " << on << ", which has none";
    }
  }
  EXPECT_EQ(healthchecks, 4);
  for (const auto& [stage, text] : stages) {
    EXPECT_EQ(text.find("python3-sklearn") != std::string::npos, stage == "trial-worker") << stage;
  }
  EXPECT_EQ(
      compose["services"]["scheduler"]["environment"]["TUNEBUS_RESULTS_DIR"].as<std::string>(""),
      "/results");
  for (const char* service : {"scheduler", "trial-worker", "tunectl"}) {
    bool mounted = false;
    for (const auto& v : compose["services"][service]["volumes"])
      mounted = mounted || v.as<std::string>() == "results:/results";
    EXPECT_TRUE(mounted) << service << " does not mount the results volume at /results";
  }
  const std::vector<std::string> ignored = ReadLines(SourceDir() / ".dockerignore");
  for (const char* pattern : {".git", "build", "build-*", "**/results"}) {
    EXPECT_NE(std::find(ignored.begin(), ignored.end(), pattern), ignored.end())
        << ".dockerignore lacks " << pattern;
  }
}

}  // namespace
}  // namespace tunebus::testing
