// Issue 7: the compose files and the Dockerfile are right by construction (there is no Docker
// engine here and no Dockerfile linter in Debian): every binary, flag, environment variable and
// path they name exists in this build and source tree. `docker-compose config -q` (in .ci/run)
// checks the compose syntax on top.
#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
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

// `kubectl kustomize <folder>`'s documents (deploy/k8s: base, and the gpu overlay on it).
std::vector<YAML::Node> Kustomize(const fs::path& folder) {
  fs::path kubectl;
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  for (size_t at = 0; kubectl.empty() && at <= path.size();) {
    const size_t colon = std::min(path.find(':', at), path.size());
    const fs::path candidate = fs::path(path.substr(at, colon - at)) / "kubectl";
    if (::access(candidate.c_str(), X_OK) == 0) kubectl = candidate;
    at = colon + 1;
  }
  EXPECT_FALSE(kubectl.empty()) << "no kubectl on PATH (bash scripts/install-deps test)";
  if (kubectl.empty()) return {};
  TempDir logs;
  Process::Options o;
  o.name = "kubectl-kustomize";
  o.binary = kubectl;
  o.args = {"kustomize", folder.string()};
  o.log_dir = logs.path();
  auto p = Process::Spawn(o);
  const auto code = p->Wait(60s);
  EXPECT_EQ(code, std::optional<int>(0)) << p->Stderr();
  return YAML::LoadAll(p->Stdout());
}

TEST(DeployFilesTest, KubernetesManifestsNameOnlyWhatTheBuildHas) {
  // Issue 34, point 7: deploy/k8s renders (kubectl kustomize) into workloads whose every image is
  // a compose/Dockerfile stage, whose commands, flags and TUNEBUS_* variables (their own and the
  // tunebus-env ConfigMap's) the binaries have, whose probes ask /healthz on the metrics port,
  // whose ports are the ones their flags bind, whose keys are the ones compose gives the same
  // role, and whose Services and endpoints name those ports.
  std::map<std::string, std::string> help;
  for (const std::string& b : kBinaries) help[b] = Help(b);
  const std::string dockerfile = ReadFile(SourceDir() / "compose/Dockerfile");
  const std::vector<YAML::Node> docs = Kustomize(SourceDir() / "deploy/k8s/gpu");
  ASSERT_FALSE(docs.empty());
  std::map<std::string, std::string> config;                        // the tunebus-env ConfigMap
  std::map<std::string, std::map<std::string, int>> service_ports;  // Service -> name -> port
  std::map<std::string, std::map<std::string, int>> pod_ports;      // app label -> name -> port
  std::map<std::string, std::string> service_selects;               // Service -> app label
  std::set<std::string> workloads;
  for (const YAML::Node& d : docs) {
    const std::string kind = d["kind"].as<std::string>("");
    const std::string name = d["metadata"]["name"].as<std::string>("");
    if (kind == "ConfigMap" && name == "tunebus-env") {
      for (const auto& kv : d["data"])
        config[kv.first.as<std::string>()] = kv.second.as<std::string>();
    }
    if (kind == "Service") {
      service_selects[name] = d["spec"]["selector"]["app.kubernetes.io/name"].as<std::string>("");
      for (const auto& port : d["spec"]["ports"]) {
        service_ports[name][port["targetPort"].as<std::string>("")] = port["port"].as<int>(0);
      }
    }
  }
  for (const auto& [var, value] : config) {
    bool read = false;
    for (const auto& [b, text] : help)
      read = read || text.find("Env:" + var + ")") != std::string::npos;
    EXPECT_TRUE(read) << "ConfigMap tunebus-env sets " << var << ", which no binary reads";
  }
  const int metrics_port = std::stoi(config["TUNEBUS_METRICS_PORT"]);
  for (const YAML::Node& d : docs) {
    const std::string kind = d["kind"].as<std::string>("");
    if (kind != "Deployment" && kind != "StatefulSet") continue;
    const std::string name = d["metadata"]["name"].as<std::string>("");
    workloads.insert(name);
    const YAML::Node pod = d["spec"]["template"]["spec"];
    const std::string app =
        d["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"].as<std::string>("");
    EXPECT_EQ(d["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"].as<std::string>(""),
              app)
        << name;
    const YAML::Node c = pod["containers"][0];
    std::vector<std::string> argv;
    for (const auto& a : c["command"]) argv.push_back(a.as<std::string>());
    ASSERT_FALSE(argv.empty()) << name;
    const std::string binary = argv[0];
    ASSERT_TRUE(kBinaries.contains(binary)) << name << " runs " << binary;
    for (const YAML::Node& container : {pod["initContainers"][0], c}) {
      const std::string image = container["image"].as<std::string>("");
      EXPECT_EQ(image, "tunebus-" + binary + ":latest") << name;
      EXPECT_NE(dockerfile.find("FROM runtime AS " + binary), std::string::npos)
          << name << ": compose/Dockerfile builds no image for " << binary;
    }
    std::set<int> bound;  // ports the flags bind (tcp://0.0.0.0:P)
    for (const std::string& a : argv) {
      if (a.rfind("--", 0) == 0) {
        EXPECT_NE(help[binary].find(a + " "), std::string::npos) << name << ": no flag " << a;
      }
      if (a.rfind("tcp://0.0.0.0:", 0) == 0) bound.insert(std::stoi(a.substr(14)));
    }
    std::map<std::string, std::string> env;
    for (const auto& e : c["env"])
      env[e["name"].as<std::string>()] = e["value"].as<std::string>("");
    EXPECT_EQ(c["envFrom"][0]["configMapRef"]["name"].as<std::string>(""), "tunebus-env") << name;
    for (const auto& [var, value] : env) {
      EXPECT_NE(help[binary].find("Env:" + var + ")"), std::string::npos)
          << name << " sets " << var << ", which " << binary << " does not read";
    }
    for (const auto& port : c["ports"]) {
      const int number = port["containerPort"].as<int>(0);
      pod_ports[app][port["name"].as<std::string>("")] = number;
      EXPECT_TRUE(number == metrics_port || bound.contains(number))
          << name << " exposes " << number << ", which it does not bind";
    }
    for (const char* probe : {"readinessProbe", "livenessProbe"}) {
      EXPECT_EQ(c[probe]["httpGet"]["path"].as<std::string>(""), "/healthz") << name << probe;
      EXPECT_EQ(pod_ports[app][c[probe]["httpGet"]["port"].as<std::string>("")], metrics_port)
          << name << " " << probe << " does not ask the metrics port";
    }
    EXPECT_TRUE(c["resources"]["requests"]["cpu"]) << name << " requests no CPU";
    // Keys: the files compose gives the same role, from `tunectl keygen --suite`'s names.
    const std::string role = binary == "trial-worker" ? "trial-worker" : binary;
    const ComposeKeys& want = kComposeKeys.at(role);
    EXPECT_EQ(env["TUNEBUS_KEY_NAME"], want.key_name) << name;
    std::set<std::string> files;
    bool allow_list = false;
    for (const auto& v : pod["volumes"]) {
      if (v["name"].as<std::string>("") == "authorized") allow_list = true;
      if (v["name"].as<std::string>("") != "secrets") continue;
      for (const auto& item : v["secret"]["items"]) files.insert(item["key"].as<std::string>(""));
    }
    std::set<std::string> want_files = {want.key_name + ".key_secret"};
    for (const std::string& server : want.servers) want_files.insert(server + ".key");
    EXPECT_EQ(files, want_files) << name;
    EXPECT_EQ(allow_list, want.serves) << name;
    if (binary == "trial-worker") {
      EXPECT_EQ(env["TUNEBUS_CPUS"], c["resources"]["requests"]["cpu"].as<std::string>("")) << name;
      const std::string gpus = c["resources"]["limits"]["nvidia.com/gpu"].as<std::string>("0");
      EXPECT_EQ(env["TUNEBUS_GPUS"], gpus) << name;
    }
  }
  EXPECT_EQ(workloads, (std::set<std::string>{"checkpoint-store", "resource-manager", "scheduler",
                                              "trial-worker", "trial-worker-gpu"}));
  // Every Service port leads to a named port of the pods it selects, and every endpoint in the
  // ConfigMap names a Service port.
  for (const auto& [service, ports] : service_ports) {
    for (const auto& [target, port] : ports) {
      EXPECT_EQ(pod_ports[service_selects[service]][target], port) << service << " " << target;
    }
  }
  const std::regex endpoint(R"(tcp://([a-z-]+):(\d+))");
  for (const auto& [var, value] : config) {
    std::smatch m;
    if (!std::regex_match(value, m, endpoint)) continue;
    bool served = false;
    for (const auto& [target, port] : service_ports[m[1].str()])
      served = served || port == std::stoi(m[2].str());
    EXPECT_TRUE(served) << var << "=" << value << " names no Service port";
  }
}

}  // namespace
}  // namespace tunebus::testing
