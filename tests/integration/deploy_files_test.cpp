// Issue 7: the compose files and the Dockerfile are right by construction (there is no Docker
// engine here and no Dockerfile linter in Debian): every binary, flag, environment variable, port
// and path they name exists in this build and source tree. `docker-compose config -q` (in .ci/run)
// checks the compose syntax on top. Issue 34: the Swarm stack (compose/docker-stack.yml) gets the
// same checks plus Swarm's rules, and the Kubernetes manifests (deploy/k8s) theirs.
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

// Every binary's `--help`, by binary.
std::map<std::string, std::string> HelpOfEveryBinary() {
  std::map<std::string, std::string> help;
  for (const std::string& b : kBinaries) {
    help[b] = Help(b);
    EXPECT_NE(help[b].find("Usage"), std::string::npos) << b << ": " << help[b];
  }
  return help;
}

// Whether a binary's --help names `var` as a variable it reads ("(Env:TUNEBUS_X)").
bool SomeBinaryReads(const std::map<std::string, std::string>& help, const std::string& var) {
  return std::any_of(help.begin(), help.end(), [&](const auto& binary_help) {
    return binary_help.second.find("Env:" + var + ")") != std::string::npos;
  });
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

YAML::Node LoadSource(const std::string& file) {
  return YAML::LoadFile((SourceDir() / file).string());
}

// node[path[0]][path[1]]..., or an undefined node where a key on the way is missing (yaml-cpp
// throws when asked for a key of a missing node).
YAML::Node At(const YAML::Node& root, std::initializer_list<const char*> path) {
  if (!root) return YAML::Node(YAML::NodeType::Undefined);
  YAML::Node node;
  node.reset(root);  // never `node = ...`: yaml-cpp's assignment writes through to the document
  for (const char* key : path) {
    const YAML::Node& here = node;
    const YAML::Node next = node.IsMap() ? here[key] : YAML::Node(YAML::NodeType::Undefined);
    if (!next) return YAML::Node(YAML::NodeType::Undefined);
    node.reset(next);
  }
  return node;
}

// A compose map with its merge keys (`<<: *anchor`, `<<: [*a, *b]`) applied, also those of the
// maps it merges: yaml-cpp reads `<<` as an ordinary key holding the anchored map(s). Keys written
// beside `<<` win over merged ones, and an earlier map of a `<<` list over a later one, as in
// YAML's merge.
YAML::Node Merged(const YAML::Node& map) {
  YAML::Node out(YAML::NodeType::Map);
  if (!map || !map.IsMap()) return out;
  const YAML::Node merge = map["<<"];
  std::vector<YAML::Node> sources;  // the last one first, so that earlier ones overwrite it
  if (merge && merge.IsMap()) sources.push_back(merge);
  if (merge && merge.IsSequence()) {
    for (const auto& m : merge) sources.insert(sources.begin(), m);
  }
  for (const YAML::Node& source : sources) {
    for (const auto& kv : Merged(source)) out[kv.first.as<std::string>()] = kv.second;
  }
  for (const auto& kv : map) {
    if (kv.first.as<std::string>() != "<<") out[kv.first.as<std::string>()] = kv.second;
  }
  return out;
}

// A compose file's services by name, each with its merge keys applied.
std::vector<std::pair<std::string, YAML::Node>> Services(const YAML::Node& compose) {
  std::vector<std::pair<std::string, YAML::Node>> services;
  for (const auto& kv : compose["services"])
    services.emplace_back(kv.first.as<std::string>(), Merged(kv.second));
  return services;
}

// What a compose service runs: its entrypoint, then its command.
std::vector<std::string> ArgvOf(const YAML::Node& service) {
  std::vector<std::string> argv;
  for (const char* key : {"entrypoint", "command"}) {
    for (const auto& a : At(service, {key})) argv.push_back(a.as<std::string>());
  }
  return argv;
}

// The tunebus binary a compose service runs: the first word of its entrypoint or command, else the
// one it is named after; "" if neither is one.
std::string BinaryOf(const std::string& name, const YAML::Node& service) {
  const std::vector<std::string> argv = ArgvOf(service);
  if (!argv.empty() && kBinaries.contains(argv[0])) return argv[0];
  return kBinaries.contains(name) ? name : "";
}

// The ports a service's flags bind on every interface (tcp://0.0.0.0:P).
std::set<int> BoundPorts(const std::vector<std::string>& argv) {
  std::set<int> ports;
  for (const std::string& a : argv) {
    if (a.rfind("tcp://0.0.0.0:", 0) == 0) ports.insert(std::stoi(a.substr(14)));
  }
  return ports;
}

// The environment a compose service sets (a map; merge keys applied).
std::map<std::string, std::string> EnvOf(const YAML::Node& service) {
  std::map<std::string, std::string> env;
  for (const auto& kv : Merged(At(service, {"environment"})))
    env[kv.first.as<std::string>()] = kv.second.as<std::string>("");
  return env;
}

// A port a service publishes: the container's (target), the host's (published), and Swarm's mode
// (the short syntax "[ip:]published:target" is always "ingress").
struct PublishedPort {
  int target = 0;
  int published = 0;
  std::string mode = "ingress";
};
std::vector<PublishedPort> PortsOf(const YAML::Node& service) {
  std::vector<PublishedPort> ports;
  for (const auto& p : At(service, {"ports"})) {
    PublishedPort port;
    if (p.IsMap()) {
      port.target = p["target"].as<int>(0);
      port.published = p["published"].as<int>(0);
      port.mode = p["mode"].as<std::string>("ingress");
    } else {
      const std::string spec = p.as<std::string>();
      const size_t last = spec.rfind(':');
      port.target = std::stoi(spec.substr(last + 1));
      const size_t before = last == std::string::npos ? last : spec.rfind(':', last - 1);
      port.published = std::stoi(spec.substr(before == std::string::npos ? 0 : before + 1));
    }
    ports.push_back(port);
  }
  return ports;
}

// Checks that a compose file (one host's, its GPU override, the Swarm stack) names only what the
// build has: each service runs a tunebus binary with flags that binary has; every TUNEBUS_*
// variable it sets is read by a binary; its image, if named, is
// ${TUNEBUS_REGISTRY:-}tunebus-<binary>:${TUNEBUS_TAG:-latest}, the Dockerfile stage that copies
// that binary (what `docker compose build` and `push` make); its healthcheck runs `<binary>
// --healthcheck`; it publishes only ports its flags bind or its metrics port; and every
// tcp://<service>:<port> it connects to names a service of the same file that binds that port.
void ExpectNamesOnlyWhatTheBuildHas(const std::string& file, const YAML::Node& compose,
                                    const std::map<std::string, std::string>& help,
                                    const std::map<std::string, std::string>& stages) {
  const auto services = Services(compose);
  std::map<std::string, std::set<int>> bound;  // service -> the ports its flags bind
  for (const auto& [name, s] : services) bound[name] = BoundPorts(ArgvOf(s));
  const std::regex image_form(
      R"(\$\{TUNEBUS_REGISTRY:-\}tunebus-([a-z-]+):\$\{TUNEBUS_TAG:-latest\})");
  const std::regex endpoint(R"(tcp://([a-z-]+):(\d+))");
  ASSERT_FALSE(services.empty()) << file;
  for (const auto& [name, s] : services) {
    const std::string binary = BinaryOf(name, s);
    ASSERT_FALSE(binary.empty()) << file << ": service " << name << " runs no tunebus binary";
    EXPECT_TRUE(fs::exists(BinDir() / binary)) << binary;
    const std::string& text = help.at(binary);
    const std::vector<std::string> argv = ArgvOf(s);
    for (const std::string& a : argv) {
      if (a.rfind("--", 0) == 0) {
        EXPECT_NE(text.find(a + " "), std::string::npos)
            << file << ": " << binary << " has no flag " << a;
      }
    }
    const std::map<std::string, std::string> env = EnvOf(s);
    for (const auto& [var, value] : env) {
      if (var.rfind("TUNEBUS_", 0) != 0) continue;
      EXPECT_TRUE(SomeBinaryReads(help, var))
          << file << ": service " << name << " sets " << var << ", which no binary reads";
    }
    if (s["image"]) {
      const std::string image = s["image"].as<std::string>("");
      std::smatch m;
      if (std::regex_match(image, m, image_form)) {
        EXPECT_EQ(m[1].str(), binary)
            << file << ": " << name << " runs " << binary << " from " << image;
        ASSERT_TRUE(stages.contains(m[1].str()))
            << file << ": " << name << "'s image " << image << " is no compose/Dockerfile stage";
        EXPECT_NE(stages.at(m[1].str()).find("/build/bin/" + binary + " "), std::string::npos)
            << "stage " << m[1] << " lacks " << binary;
      } else {
        ADD_FAILURE() << file << ": " << name << "'s image " << image << " is not "
                      << "${TUNEBUS_REGISTRY:-}tunebus-<role>:${TUNEBUS_TAG:-latest}";
      }
    }
    if (s["healthcheck"]) {
      std::vector<std::string> test;
      for (const auto& word : At(s, {"healthcheck", "test"}))
        test.push_back(word.as<std::string>());
      EXPECT_EQ(test, (std::vector<std::string>{"CMD", binary, "--healthcheck"}))
          << file << ": " << name << "'s healthcheck";
      EXPECT_NE(text.find("--healthcheck"), std::string::npos) << binary;
    }
    const int metrics =
        env.contains("TUNEBUS_METRICS_PORT") ? std::stoi(env.at("TUNEBUS_METRICS_PORT")) : -1;
    for (const PublishedPort& p : PortsOf(s)) {
      EXPECT_TRUE(bound[name].contains(p.target) || p.target == metrics)
          << file << ": " << name << " publishes " << p.target
          << ", which is neither a port its flags bind nor its metrics port";
    }
    std::vector<std::string> connects = argv;
    for (const auto& [var, value] : env) connects.push_back(value);
    for (const std::string& value : connects) {
      std::smatch m;
      if (!std::regex_match(value, m, endpoint)) continue;
      EXPECT_TRUE(bound.contains(m[1].str()) && bound[m[1].str()].contains(std::stoi(m[2].str())))
          << file << ": " << name << " connects to " << value
          << ", which no service of the file binds";
    }
  }
}

// What compose puts under a service's /keys: path inside /keys -> path inside compose/keys (the
// folder `tunectl keygen --suite --dir compose/keys` writes), from its secrets and configs (the
// top level's `file: ./keys/...`) and its bind mounts of ./keys/...; `read_only` is false if one of
// the bind mounts is writable. ADD_FAILUREs name what does not map a ./keys path onto /keys.
std::map<std::string, std::string> KeyMountsOf(const YAML::Node& compose, const std::string& name,
                                               const YAML::Node& service, bool& read_only) {
  std::map<std::string, std::string> mounts;
  read_only = true;
  auto add = [&](const std::string& host, const std::string& target) {
    if (host.rfind("./keys/", 0) != 0 || target.rfind("/keys/", 0) != 0) {
      ADD_FAILURE() << name << ": " << host << " -> " << target << " is not ./keys/X -> /keys/X";
      return;
    }
    mounts[target.substr(6)] = host.substr(7);
  };
  for (const char* kind : {"secrets", "configs"}) {
    for (const auto& mount : At(service, {kind})) {
      const YAML::Node m = Merged(mount);
      const std::string source =
          mount.IsMap() ? m["source"].as<std::string>("") : mount.as<std::string>();
      const std::string target = mount.IsMap() ? m["target"].as<std::string>("") : std::string();
      add(At(compose, {kind, source.c_str(), "file"}).as<std::string>(""), target);
    }
  }
  for (const auto& v : At(service, {"volumes"})) {
    const std::string spec = v.as<std::string>("");
    if (spec.rfind("./keys/", 0) != 0) continue;
    const size_t colon = spec.find(':');
    const size_t second = spec.find(':', colon + 1);
    add(spec.substr(0, colon), spec.substr(colon + 1, second - colon - 1));
    read_only = read_only && second != std::string::npos && spec.substr(second + 1) == "ro";
  }
  return mounts;
}

// The keys each role needs, by the binary it runs: its key name (TUNEBUS_KEY_NAME), the servers
// whose public keys it connects with, and whether it serves (reads the allow-list).
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

// Checks that service `name` of a compose file runs with CURVE (TUNEBUS_KEYS_DIR=/keys, the key
// name of its role, never --insecure) and gets under /keys, never writable, only what its role
// needs: its own secret key, the public keys of the servers it connects to and, if it serves, the
// allow-list (the folder, or each file keygen wrote into it); each is the file `tunectl keygen
// --suite` wrote under that name in `keys`.
void ExpectOnlyItsOwnKeys(const std::string& file, const YAML::Node& compose,
                          const std::string& name, const YAML::Node& service,
                          const fs::path& keys) {
  const std::string binary = BinaryOf(name, service);
  ASSERT_TRUE(kComposeKeys.contains(binary)) << file << ": " << name;
  const ComposeKeys& want = kComposeKeys.at(binary);
  const std::map<std::string, std::string> env = EnvOf(service);
  EXPECT_EQ(env.contains("TUNEBUS_KEYS_DIR") ? env.at("TUNEBUS_KEYS_DIR") : "", "/keys") << name;
  EXPECT_EQ(env.contains("TUNEBUS_KEY_NAME") ? env.at("TUNEBUS_KEY_NAME") : "", want.key_name)
      << name;
  EXPECT_FALSE(env.contains("TUNEBUS_INSECURE")) << name << " runs without CURVE";
  for (const std::string& a : ArgvOf(service)) EXPECT_NE(a, "--insecure") << name;
  bool read_only = false;
  const auto mounts = KeyMountsOf(compose, name, service, read_only);
  EXPECT_TRUE(read_only) << file << ": " << name << " mounts a keys folder writable";
  std::set<std::string> secrets, publics, allow_list_files;
  bool allow_list_folder = false;
  for (const auto& [inside, host] : mounts) {
    EXPECT_EQ(inside, host) << name << ": /keys/" << inside << " is not the file keygen wrote "
                            << "as " << host;
    EXPECT_TRUE(fs::exists(keys / host)) << name << ": tunectl keygen --suite writes no " << host;
    if (inside == "authorized") {
      allow_list_folder = true;
    } else if (inside.rfind("authorized/", 0) == 0) {
      allow_list_files.insert(inside.substr(11));
    } else if (inside.ends_with(".key_secret")) {
      secrets.insert(inside.substr(0, inside.size() - 11));
    } else if (inside.ends_with(".key")) {
      publics.insert(inside.substr(0, inside.size() - 4));
    } else {
      ADD_FAILURE() << file << ": " << name << " mounts /keys/" << inside << ", no key file";
    }
  }
  EXPECT_EQ(secrets, std::set<std::string>{want.key_name}) << file << ": " << name;
  EXPECT_EQ(publics, want.servers) << file << ": " << name;
  EXPECT_EQ(allow_list_folder || !allow_list_files.empty(), want.serves) << file << ": " << name;
  if (!allow_list_files.empty()) {
    EXPECT_FALSE(allow_list_folder) << file << ": " << name;
    std::set<std::string> written;
    for (const auto& entry : fs::directory_iterator(keys / "authorized"))
      written.insert(entry.path().filename().string());
    EXPECT_EQ(allow_list_files, written)
        << file << ": " << name << " mounts other files than the allow-list keygen wrote";
  }
}

// The flags that give service `name` of a compose file its keys as a folder of its own under
// `root`: a copy (modes kept) of what the file mounts at its /keys from the keygen folder `keys`,
// and the TUNEBUS_KEY_NAME the file gives it.
std::vector<std::string> MountedKeyFlags(const YAML::Node& compose, const std::string& name,
                                         const fs::path& keys, const fs::path& root) {
  const YAML::Node service = Merged(compose["services"][name]);
  fs::create_directories(root);
  fs::permissions(root, fs::perms::owner_all);
  bool read_only = false;
  for (const auto& [inside, host] : KeyMountsOf(compose, name, service, read_only)) {
    fs::create_directories((root / inside).parent_path());
    fs::copy(keys / host, root / inside, fs::copy_options::recursive);
    if (fs::is_regular_file(keys / host))
      fs::permissions(root / inside, fs::status(keys / host).permissions());
  }
  const auto env = EnvOf(service);
  return {"--keys-dir", root.string(), "--key-name",
          env.contains("TUNEBUS_KEY_NAME") ? env.at("TUNEBUS_KEY_NAME") : ""};
}

// Starts the suite on loopback, each service with only the keys `servers` (a compose file) mounts
// for it and tunectl with those compose/docker-compose.yml's tool service gets; checks that every
// process secured its sockets with CURVE, that the worker registers and that an experiment runs
// to its end.
void ExpectTheSuiteRunsWithOnlyTheMountedKeys(const YAML::Node& servers) {
  TempDir dir;
  const fs::path keys = KeygenSuite(dir.path());
  const fs::path mounts = dir.path() / "mounts";
  std::map<std::string, std::vector<std::string>> flags;  // service -> --keys-dir, --key-name
  for (const char* name : {"checkpoint-store", "resource-manager", "scheduler", "trial-worker"})
    flags[name] = MountedKeyFlags(servers, name, keys, mounts / name);
  flags["tunectl"] = MountedKeyFlags(LoadSource("compose/docker-compose.yml"), "tunectl", keys,
                                     mounts / "tunectl");
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
  // Issue 33, point 5: the services bind 0.0.0.0 in their containers, so each runs with CURVE
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

TEST(DeployFilesTest, EachServiceRunsWithOnlyTheKeysComposeMountsForIt) {
  // The compose mounts are enough: each process gets a keys folder holding only what compose
  // mounts at its /keys (copied from a `tunectl keygen --suite` folder, modes kept) and the
  // TUNEBUS_KEY_NAME compose gives it; the suite starts with CURVE on every socket (on loopback
  // here), the worker registers, and tunectl runs an experiment to its end.
  ExpectTheSuiteRunsWithOnlyTheMountedKeys(LoadSource("compose/docker-compose.yml"));
}

TEST(DeployFilesTest, ServicesWaitForHealthyOnesAndEachRoleHasItsOwnSlimImage) {
  // Issue 19, point 9: depends_on waits for service_healthy, every service but the tool has a
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

// Service keys `docker stack deploy` ignores ("Ignoring unsupported options: ...") or refuses, each
// with what a stack does instead: docker/cli's compose loader (UnsupportedProperties,
// DeprecatedProperties, ForbiddenProperties) and its 3.x schema; `depends_on` as a list is
// accepted but means nothing on a Swarm, with a condition it is refused.
const std::map<std::string, std::string> kSwarmIgnoresOrRefuses = {
    {"build", "Swarm pulls `image:` (build and push it with docker compose)"},
    {"restart", "use deploy.restart_policy"},
    {"container_name", "Swarm names the tasks"},
    {"depends_on", "Swarm starts services in no order; each retries its peers"},
    {"profiles", "not in the 3.x schema"},
    {"network_mode", "use an overlay network"},
    {"devices", "GPUs: deploy.resources.reservations.generic_resources"},
    {"links", "services find each other by name on their network"},
    {"external_links", "services find each other by name on their network"},
    {"expose", "services reach each other on any port of their network"},
    {"privileged", "not supported"},
    {"pid", "not supported"},
    {"ipc", "not supported"},
    {"security_opt", "not supported"},
    {"shm_size", "not supported"},
    {"userns_mode", "not supported"},
    {"cgroup_parent", "not supported"},
    {"cgroupns_mode", "not supported"},
    {"domainname", "not supported"},
    {"mac_address", "not supported"},
    {"extends", "refused"},
    {"volumes_from", "refused: share a named volume"},
    {"volume_driver", "refused: set the driver on the top-level volume"},
    {"cpu_quota", "refused: use deploy.resources"},
    {"cpu_shares", "refused: use deploy.resources"},
    {"cpuset", "refused: use deploy.resources"},
    {"mem_limit", "refused: use deploy.resources"},
    {"memswap_limit", "refused: use deploy.resources"},
    {"gpus", "not in the 3.x schema: use deploy.resources.reservations.generic_resources"},
    {"runtime", "not in the 3.x schema"}};

// A secret's mode as written (YAML 1.1: a leading 0 is octal, as docker reads it); -1 if unset.
int ModeOf(const YAML::Node& mode) {
  const std::string text = mode.as<std::string>("");
  if (text.empty()) return -1;
  return std::stoi(text, nullptr, text.size() > 1 && text[0] == '0' ? 8 : 10);
}

TEST(DeployFilesTest, SwarmStackUsesOnlyWhatSwarmDeploysAndTheBuildHas) {
  // Issue 34, point 7: `docker stack deploy -c compose/docker-stack.yml tunebus` runs the services
  // of docker-compose.yml on a Swarm. Everything it names exists in the build, as for compose,
  // and it keeps Swarm's rules: no key Swarm ignores or refuses (it pulls images, restarts by
  // deploy.restart_policy, starts in no order); a volume is local to a node, so a service of one
  // replica that keeps one is pinned to a labelled node, and the labels are the ones
  // docs/deploy.md sets; the servers resolve to their task (endpoint_mode dnsrr: the virtual IP
  // drops connections idle for 900 s), so they publish in host mode at the port they bind (where
  // `tunectl watch` looks for the event stream); every service is on an attachable overlay
  // network; each secret key reaches its service owned by the images' user at a mode nobody else
  // reads (Swarm's default is root, 0444); each worker offers the CPUs and GPUs it reserves.
  const std::string file = "compose/docker-stack.yml";
  const YAML::Node stack = LoadSource(file);
  const std::string dockerfile = ReadFile(SourceDir() / "compose/Dockerfile");
  ExpectNamesOnlyWhatTheBuildHas(file, stack, HelpOfEveryBinary(), DockerfileStages(dockerfile));
  EXPECT_EQ(stack["version"].as<std::string>("").rfind("3.", 0), 0u)
      << "docker stack deploy reads the Compose file format 3.x";
  std::smatch uid;
  ASSERT_TRUE(std::regex_search(dockerfile, uid, std::regex(R"(--uid (\d+) tunebus)")));
  const std::string deploy_doc = ReadFile(SourceDir() / "docs/deploy.md");
  TempDir dir;
  const fs::path keys = KeygenSuite(dir.path());
  std::set<std::string> binaries, labels;
  int gpu_workers = 0;
  for (const auto& [name, s] : Services(stack)) {
    const std::string binary = BinaryOf(name, s);
    binaries.insert(binary);
    EXPECT_TRUE(s["image"]) << file << ": " << name << " names no image for Swarm to pull";
    for (const auto& [key, instead] : kSwarmIgnoresOrRefuses) {
      EXPECT_FALSE(s[key]) << file << ": " << name << " sets " << key
                           << ", which docker stack deploy ignores or refuses: " << instead;
    }
    const YAML::Node deploy = At(s, {"deploy"});
    EXPECT_FALSE(At(deploy, {"resources", "reservations", "devices"}))
        << file << ": " << name << ": not in Swarm's schema; GPUs are generic_resources";
    const std::string restart = At(deploy, {"restart_policy", "condition"}).as<std::string>("");
    EXPECT_TRUE(restart == "any" || restart == "on-failure")
        << file << ": " << name << " has no deploy.restart_policy that restarts it";
    // Networks: an attachable overlay (the default network of a stack is not attachable).
    std::vector<std::string> networks;
    const YAML::Node on = At(s, {"networks"});
    for (const auto& n : on)
      networks.push_back(on.IsMap() ? n.first.as<std::string>() : n.as<std::string>());
    EXPECT_FALSE(networks.empty()) << file << ": " << name << " is on no network of the file";
    for (const std::string& net : networks) {
      EXPECT_EQ(At(stack, {"networks", net.c_str(), "driver"}).as<std::string>(""), "overlay")
          << file << ": network " << net;
      EXPECT_TRUE(At(stack, {"networks", net.c_str(), "attachable"}).as<bool>(false))
          << file << ": network " << net << " is not attachable (docker run --network)";
    }
    // Servers resolve to their task; their ports are published where the task runs.
    if (!BoundPorts(ArgvOf(s)).empty()) {
      EXPECT_EQ(deploy["endpoint_mode"].as<std::string>(""), "dnsrr")
          << file << ": " << name << " serves behind Swarm's virtual IP";
    }
    for (const PublishedPort& p : PortsOf(s)) {
      EXPECT_EQ(p.mode, "host") << file << ": " << name << " publishes " << p.target
                                << " on the ingress mesh, which dnsrr excludes";
      EXPECT_EQ(p.published, p.target)
          << file << ": " << name << " publishes " << p.target << " at another port";
    }
    // A volume is local to a node: a service of one replica keeping one is pinned to a node.
    bool keeps_a_volume = false;
    for (const auto& v : At(s, {"volumes"})) {
      const std::string spec = v.IsMap() ? v["source"].as<std::string>("") : v.as<std::string>("");
      keeps_a_volume =
          keeps_a_volume || At(stack, {"volumes", spec.substr(0, spec.find(':')).c_str()});
    }
    bool pinned = false;
    const std::regex label(R"(node\.labels\.(\S+) == true)");
    for (const auto& c : At(deploy, {"placement", "constraints"})) {
      std::smatch m;
      const std::string constraint = c.as<std::string>("");
      if (!std::regex_match(constraint, m, label)) continue;
      pinned = true;
      labels.insert(m[1].str());
    }
    if (keeps_a_volume && deploy["replicas"].as<std::string>("1") == "1") {
      EXPECT_TRUE(pinned) << file << ": " << name << " keeps a volume but is not pinned to a "
                          << "labelled node: rescheduled elsewhere, it would start on an empty one";
    }
    // Keys: those compose gives the role; secret keys owned by the images' user, mode 0400 or 0600.
    ExpectOnlyItsOwnKeys(file, stack, name, s, keys);
    for (const auto& secret : At(s, {"secrets"})) {
      const YAML::Node m = Merged(secret);
      if (!m["target"].as<std::string>("").ends_with(".key_secret")) continue;
      EXPECT_EQ(m["uid"].as<std::string>(""), uid[1].str()) << file << ": " << name;
      const int mode = ModeOf(m["mode"]);
      EXPECT_TRUE(mode > 0 && (mode & 077) == 0)
          << file << ": " << name << "'s secret key has mode " << mode
          << " (unset: Swarm's 0444), which the service refuses";
    }
    // A worker offers what it reserves.
    if (binary == "trial-worker") {
      auto env = EnvOf(s);
      const YAML::Node reservations = At(deploy, {"resources", "reservations"});
      EXPECT_EQ(env["TUNEBUS_CPUS"], reservations["cpus"].as<std::string>(""))
          << file << ": " << name << " offers other CPUs than it reserves";
      int gpus = 0;
      for (const auto& g : At(reservations, {"generic_resources"})) {
        if (At(g, {"discrete_resource_spec", "kind"}).as<std::string>("") == "GPU")
          gpus += At(g, {"discrete_resource_spec", "value"}).as<int>(0);
      }
      EXPECT_EQ(env["TUNEBUS_GPUS"], std::to_string(gpus))
          << file << ": " << name << " offers other GPUs than it reserves (kind GPU)";
      gpu_workers += gpus > 0;
    }
  }
  EXPECT_EQ(binaries, (std::set<std::string>{"checkpoint-store", "resource-manager", "scheduler",
                                             "trial-worker"}));
  EXPECT_EQ(gpu_workers, 1) << file << ": a service of GPU workers";
  EXPECT_TRUE(labels.contains("tunebus.store")) << file << ": the checkpoint-store is not pinned";
  for (const std::string& l : labels) {
    EXPECT_NE(deploy_doc.find("--label-add " + l + "=true"), std::string::npos)
        << "docs/deploy.md never labels a node " << l << "=true, which " << file << " needs";
  }
}

TEST(DeployFilesTest, SwarmServicesRunWithOnlyTheKeysTheStackMounts) {
  // The stack's secrets and configs are enough: each process gets only what
  // compose/docker-stack.yml mounts at its /keys (the allow-list file by file, as Swarm configs)
  // and its TUNEBUS_KEY_NAME; the suite starts with CURVE, and tunectl with the one-host tool
  // service's keys (an operator's, from the same keygen folder) runs an experiment to its end.
  ExpectTheSuiteRunsWithOnlyTheMountedKeys(LoadSource("compose/docker-stack.yml"));
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
  auto help = HelpOfEveryBinary();
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
    EXPECT_TRUE(SomeBinaryReads(help, var))
        << "ConfigMap tunebus-env sets " << var << ", which no binary reads";
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
