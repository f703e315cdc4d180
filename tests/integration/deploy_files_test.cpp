// Issue 7: the compose files and the Dockerfile are right by construction (there is no Docker
// engine here and no Dockerfile linter in Debian): every binary, flag, environment variable and
// path they name exists in this build and source tree. `docker-compose config -q` (in .ci/run)
// checks the compose syntax on top.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
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

// A compose map with its merge key (`<<: *anchor`) applied: yaml-cpp reads `<<` as an ordinary
// key holding the anchored map. Keys written beside `<<` win, as in YAML's merge.
YAML::Node Merged(const YAML::Node& map) {
  YAML::Node out(YAML::NodeType::Map);
  if (!map || !map.IsMap()) return out;
  if (map["<<"] && map["<<"].IsMap()) {
    for (const auto& kv : map["<<"]) out[kv.first.as<std::string>()] = kv.second;
  }
  for (const auto& kv : map) {
    if (kv.first.as<std::string>() != "<<") out[kv.first.as<std::string>()] = kv.second;
  }
  return out;
}

// Every TUNEBUS_* variable a compose service sets, with the service.
std::vector<std::pair<std::string, std::string>> EnvOf(const YAML::Node& service,
                                                       const std::string& name) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& kv : Merged(service["environment"]))
    out.emplace_back(name, kv.first.as<std::string>());
  return out;
}

// What compose puts under a service's /keys: path inside /keys -> path inside compose/keys (the
// folder `tunectl keygen --suite --dir compose/keys` writes), from its secrets (the top level's
// `file: ./keys/...`) and its bind mounts of ./keys/...; `read_only` is false if one of the
// bind mounts is writable. ADD_FAILUREs name what does not map a ./keys path onto /keys.
std::map<std::string, std::string> KeyMountsOf(const YAML::Node& compose, const std::string& name,
                                               bool& read_only) {
  std::map<std::string, std::string> mounts;
  read_only = true;
  const YAML::Node service = compose["services"][name];
  auto add = [&](const std::string& host, const std::string& target) {
    if (host.rfind("./keys/", 0) != 0 || target.rfind("/keys/", 0) != 0) {
      ADD_FAILURE() << name << ": " << host << " -> " << target << " is not ./keys/X -> /keys/X";
      return;
    }
    mounts[target.substr(6)] = host.substr(7);
  };
  for (const auto& secret : service["secrets"]) {
    const std::string source =
        secret.IsMap() ? secret["source"].as<std::string>("") : secret.as<std::string>();
    const std::string target =
        secret.IsMap() ? secret["target"].as<std::string>("") : std::string();
    add(compose["secrets"][source]["file"].as<std::string>(""), target);
  }
  for (const auto& v : service["volumes"]) {
    const std::string spec = v.as<std::string>();
    if (spec.rfind("./keys/", 0) != 0) continue;
    const size_t colon = spec.find(':');
    const size_t second = spec.find(':', colon + 1);
    add(spec.substr(0, colon), spec.substr(colon + 1, second - colon - 1));
    read_only = read_only && second != std::string::npos && spec.substr(second + 1) == "ro";
  }
  return mounts;
}

// The keys each compose service needs: its key name (TUNEBUS_KEY_NAME), the servers whose public
// keys it connects with, and whether it serves (reads the allow-list).
struct ComposeKeys {
  std::string key_name;
  std::set<std::string> servers;
  bool serves = false;
};
const std::map<std::string, ComposeKeys> kComposeKeys = {
    {"checkpoint-store", {"checkpoint-store", {}, true}},
    {"resource-manager", {"resource-manager", {}, true}},
    {"scheduler", {"scheduler", {"checkpoint-store", "resource-manager"}, true}},
    {"trial-worker", {"worker", {"scheduler", "checkpoint-store", "resource-manager"}, false}},
    {"tunectl", {"tunectl", {"scheduler"}, false}}};

// `tunectl keygen --suite --dir <dir>/keys`: the folder compose's mounts come from.
fs::path KeygenSuite(const fs::path& dir) {
  const fs::path keys = dir / "keys";
  const CommandResult r = RunTunectl({"keygen", "--suite", "--dir", keys.string()});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  return keys;
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

TEST(DeployFilesTest, ComposeGivesEachServiceOnlyItsOwnKeysReadOnly) {
  // Issue 33, point 5: the services bind 0.0.0.0 in their containers, so each runs with CURVE
  // keys under /keys (TUNEBUS_KEYS_DIR) and its TUNEBUS_KEY_NAME, never --insecure. It gets its
  // own secret key and no other, the public keys of the servers it connects to, and (servers)
  // the allow-list folder, all read-only, each from the file `tunectl keygen --suite` writes
  // under that name. The keys never reach git or the image's build context.
  const YAML::Node compose = YAML::LoadFile((SourceDir() / "compose/docker-compose.yml").string());
  TempDir dir;
  const fs::path keys = KeygenSuite(dir.path());
  std::set<std::string> services;
  for (const auto& kv : compose["services"]) services.insert(kv.first.as<std::string>());
  std::set<std::string> expected_services;
  for (const auto& [name, _] : kComposeKeys) expected_services.insert(name);
  ASSERT_EQ(services, expected_services);
  for (const auto& [name, want] : kComposeKeys) {
    const YAML::Node s = compose["services"][name];
    const YAML::Node env = Merged(s["environment"]);
    EXPECT_EQ(env["TUNEBUS_KEYS_DIR"].as<std::string>(""), "/keys") << name;
    EXPECT_EQ(env["TUNEBUS_KEY_NAME"].as<std::string>(""), want.key_name) << name;
    EXPECT_FALSE(env["TUNEBUS_INSECURE"]) << name << " runs without CURVE";
    for (const char* key : {"entrypoint", "command"}) {
      for (const auto& a : s[key]) EXPECT_NE(a.as<std::string>(), "--insecure") << name;
    }
    bool read_only = false;
    const auto mounts = KeyMountsOf(compose, name, read_only);
    EXPECT_TRUE(read_only) << name << " mounts a keys folder writable";
    std::set<std::string> secrets, publics;
    bool allow_list = false;
    for (const auto& [inside, host] : mounts) {
      EXPECT_EQ(inside, host) << name << ": /keys/" << inside << " is not the file keygen wrote "
                              << "as " << host;
      EXPECT_TRUE(fs::exists(keys / host)) << name << ": tunectl keygen --suite writes no " << host;
      if (inside.ends_with(".key_secret")) {
        secrets.insert(inside.substr(0, inside.size() - 11));
      } else if (inside.ends_with(".key")) {
        publics.insert(inside.substr(0, inside.size() - 4));
      } else {
        EXPECT_EQ(inside, "authorized") << name;
        allow_list = true;
      }
    }
    EXPECT_EQ(secrets, std::set<std::string>{want.key_name}) << name;
    EXPECT_EQ(publics, want.servers) << name;
    EXPECT_EQ(allow_list, want.serves) << name;
  }
  const std::vector<std::string> gitignore = ReadLines(SourceDir() / "compose/.gitignore");
  EXPECT_NE(std::find(gitignore.begin(), gitignore.end(), "/keys/"), gitignore.end())
      << "compose/.gitignore lacks /keys/";
  const std::vector<std::string> dockerignore = ReadLines(SourceDir() / ".dockerignore");
  EXPECT_NE(std::find(dockerignore.begin(), dockerignore.end(), "compose/keys"), dockerignore.end())
      << ".dockerignore lacks compose/keys: the build stage's COPY . . would take the secret keys";
}

TEST(DeployFilesTest, EachServiceRunsWithOnlyTheKeysComposeMountsForIt) {
  // The compose mounts are enough: each process gets a keys folder holding only what compose
  // mounts at its /keys (copied from a `tunectl keygen --suite` folder, modes kept) and the
  // TUNEBUS_KEY_NAME compose gives it; the suite starts with CURVE on every socket (on loopback
  // here), the worker registers, and tunectl runs an experiment to its end.
  const YAML::Node compose = YAML::LoadFile((SourceDir() / "compose/docker-compose.yml").string());
  TempDir dir;
  const fs::path keys = KeygenSuite(dir.path());
  // compose service -> --keys-dir, --key-name
  std::map<std::string, std::vector<std::string>> flags;
  for (const auto& [name, want] : kComposeKeys) {
    const fs::path root = dir.path() / "mounts" / name;
    fs::create_directories(root);
    fs::permissions(root, fs::perms::owner_all);
    bool read_only = false;
    for (const auto& [inside, host] : KeyMountsOf(compose, name, read_only)) {
      fs::copy(keys / host, root / inside, fs::copy_options::recursive);
      if (fs::is_regular_file(keys / host))
        fs::permissions(root / inside, fs::status(keys / host).permissions());
    }
    const std::string key_name =
        Merged(compose["services"][name]["environment"])["TUNEBUS_KEY_NAME"].as<std::string>("");
    flags[name] = {"--keys-dir", root.string(), "--key-name", key_name};
  }
  ClusterOptions o;
  o.workers = 1;
  o.service_args = {{"checkpoint-store", flags["checkpoint-store"]},
                    {"resource-manager", flags["resource-manager"]}};
  o.scheduler_args = flags["scheduler"];
  o.worker_args["w1"] = flags["trial-worker"];
  o.keys_dir = flags["tunectl"][1];  // tunectl's; Ctl() adds it (its key name is the default)
  Cluster cluster(o);
  ASSERT_TRUE(cluster.Start());
  for (const char* service : {"checkpoint-store", "resource-manager", "scheduler", "w1"}) {
    EXPECT_NE(cluster.process(service)->Output().find("CURVE on"), std::string::npos)
        << service << ":\n"
        << cluster.process(service)->Output();
  }
  const fs::path file = cluster.dir() / "exp.yaml";
  WriteFile(file, "name: keyed\ntrainable: {builtin: noop}\nnum_samples: 2\nresults_dir: " +
                      (cluster.dir() / "results").string() + "\n");
  const CommandResult run = cluster.Ctl({"run", file.string()}, 60s);
  ASSERT_EQ(run.exit_code, 0) << run.Describe();
  const nlohmann::json ls = cluster.Ctl({"-o", "json", "ls"}).Json();
  ASSERT_TRUE(ls.is_array()) << ls.dump();
  EXPECT_EQ(ls.size(), 2u) << ls.dump();
  for (const auto& t : ls) EXPECT_EQ(t.value("status", ""), "TERMINATED") << t.dump();
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
