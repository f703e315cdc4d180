// The compose files and the Dockerfile are right by construction (there is no Docker
// engine here and no Dockerfile linter in Debian): every binary, flag, environment variable, port
// and path they name exists in this build and source tree. `docker-compose config -q` (in .ci/run)
// checks the compose syntax on top. The Swarm stack is deploy_swarm_test.cpp, the Kubernetes
// manifests deploy_k8s_test.cpp; the shared checks are deploy_files_support.hpp.
#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/integration/deploy_files_support.hpp"
#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using namespace std::chrono_literals;
using namespace deploy;

TEST(DeployFilesTest, ComposeNamesOnlyBinariesFlagsAndVariablesThatExist) {
  const auto help = HelpOfEveryBinary();
  const auto stages = DockerfileStages(ReadFile(SourceDir() / "compose/Dockerfile"));
  for (const char* file : {"compose/docker-compose.yml", "compose/docker-compose.gpu.yml"})
    ExpectNamesOnlyWhatTheBuildHas(file, LoadSource(file), help, stages);
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

TEST(DeployFilesTest, ComposeGivesEachServiceOnlyItsOwnKeysReadOnly) {
  // The services bind 0.0.0.0 in their containers, so each runs with CURVE
  // keys under /keys (TUNEBUS_KEYS_DIR) and its TUNEBUS_KEY_NAME, never --insecure. It gets its
  // own secret key and no other, the public keys of the servers it connects to, and (servers)
  // the allow-list folder, all read-only, each from the file `tunectl keygen --suite` writes
  // under that name. The keys never reach git or the image's build context.
  const std::string file = "compose/docker-compose.yml";
  const YAML::Node compose = LoadSource(file);
  TempDir dir;
  const fs::path keys = KeygenSuite(dir.path());
  std::set<std::string> services;
  for (const auto& [name, s] : Services(compose)) {
    services.insert(name);
    ExpectOnlyItsOwnKeys(file, compose, name, s, keys);
  }
  std::set<std::string> expected_services;
  for (const auto& [name, _] : kComposeKeys) expected_services.insert(name);
  EXPECT_EQ(services, expected_services);
  const std::vector<std::string> gitignore = ReadLines(SourceDir() / "compose/.gitignore");
  EXPECT_NE(std::find(gitignore.begin(), gitignore.end(), "/keys/"), gitignore.end())
      << "compose/.gitignore lacks /keys/";
  const std::vector<std::string> dockerignore = ReadLines(SourceDir() / ".dockerignore");
  EXPECT_NE(std::find(dockerignore.begin(), dockerignore.end(), "compose/keys"), dockerignore.end())
      << ".dockerignore lacks compose/keys: the build stage's COPY . . would take the secret keys";
}

TEST(DeployFilesTest, ComposePublishesTheDashboardOnLoopbackAndEveryKeyStepMakesItsKey) {
  // The scheduler serves the web dashboard on every interface of its container
  // (`--http 0.0.0.0:P`), which compose publishes on the host's loopback only, as the control
  // socket (the dashboard speaks plain HTTP). Its viewer key exists only if the keys are made as
  // kKeygenSteps does: every file and doc that tells how to make the deployments' keys names the
  // dashboard's step too.
  const YAML::Node compose = LoadSource("compose/docker-compose.yml");
  const std::string http = FlagValue(ArgvOf(Merged(compose["services"]["scheduler"])), "--http");
  ASSERT_EQ(http.rfind("0.0.0.0:", 0), 0u) << "the scheduler's --http is " << http;
  const std::string port = http.substr(8);
  std::vector<std::string> published;
  for (const auto& p : compose["services"]["scheduler"]["ports"])
    published.push_back(p.as<std::string>(""));
  EXPECT_NE(std::find(published.begin(), published.end(), "127.0.0.1:" + port + ":" + port),
            published.end())
      << "compose does not publish the dashboard's port " << port << " on 127.0.0.1";
  std::string step = "tunectl";
  for (const std::string& word : kKeygenSteps.back()) step += " " + word;
  for (const char* file : {"compose/docker-compose.yml", "compose/docker-stack.yml",
                           "deploy/k8s/base/kustomization.yaml", "docs/how-to/deploy.md"}) {
    EXPECT_NE(ReadFile(SourceDir() / file).find(step + " --dir"), std::string::npos)
        << file << " never tells to run `" << step << " --dir ...`";
  }
}

TEST(DeployFilesTest, EachServiceRunsWithOnlyTheKeysComposeMountsForIt) {
  // The compose mounts are enough: each process gets a keys folder holding only what compose
  // mounts at its /keys (copied from a `tunectl keygen --suite` folder, modes kept) and the
  // TUNEBUS_KEY_NAME compose gives it; the suite starts with CURVE on every socket (on loopback
  // here), the worker registers, and tunectl runs an experiment to its end.
  ExpectTheSuiteRunsWithOnlyTheMountedKeys(LoadSource("compose/docker-compose.yml"));
}

TEST(DeployFilesTest, ServicesWaitForHealthyOnesAndEachRoleHasItsOwnSlimImage) {
  // depends_on waits for service_healthy, every service but the tool has a
  // healthcheck (each runs a real `<binary> --healthcheck`: ComposeNamesOnly... checks); each
  // service is built from the Dockerfile stage of its role, which copies its binary; only the
  // trial-worker stage installs Python's ML packages; the scheduler writes results to the /results
  // volume the workers share; the build context leaves out build folders, .git and results.
  const YAML::Node compose = LoadSource("compose/docker-compose.yml");
  const auto stages = DockerfileStages(ReadFile(SourceDir() / "compose/Dockerfile"));
  ASSERT_TRUE(stages.contains("build") && stages.contains("runtime"))
      << "stages: " << stages.size();
  int healthchecks = 0;
  for (const auto& [name, s] : Services(compose)) {
    const std::string target = At(s, {"build", "target"}).as<std::string>("");
    ASSERT_TRUE(stages.contains(target))
        << name << " builds target '" << target << "', not a Dockerfile stage";
    EXPECT_NE(stages.at(target).find("/build/bin/" + name + " "), std::string::npos)
        << target << " lacks " << name;
    EXPECT_EQ(stages.at(target).find("FROM runtime AS"), 0u)
        << target << " is not built on the slim runtime";
    if (name != "tunectl") {
      EXPECT_TRUE(At(s, {"healthcheck", "test"})) << name << " has no healthcheck";
      ++healthchecks;
    }
    for (const auto& dep : At(s, {"depends_on"})) {
      const std::string on = dep.first.as<std::string>();
      EXPECT_EQ(dep.second["condition"].as<std::string>(""), "service_healthy")
          << name << " -> " << on;
      EXPECT_TRUE(At(compose, {"services", on.c_str(), "healthcheck", "test"}))
          << name << " waits for " << on << ", which has none";
    }
  }
  EXPECT_EQ(healthchecks, 4);
  for (const auto& [stage, text] : stages) {
    EXPECT_EQ(text.find("python3-sklearn") != std::string::npos, stage == "trial-worker") << stage;
  }
  EXPECT_EQ(EnvOf(Merged(compose["services"]["scheduler"]))["TUNEBUS_RESULTS_DIR"], "/results");
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
