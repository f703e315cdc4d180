#include "tests/integration/deploy_files_support.hpp"

#include <gtest/gtest.h>
#include <httplib.h>
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

namespace tunebus::testing::deploy {

using namespace std::chrono_literals;

extern const std::set<std::string> kBinaries = {"scheduler", "resource-manager", "checkpoint-store",
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

// The ports a service's flags bind on every interface: each endpoint tcp://0.0.0.0:P and the
// dashboard's `--http 0.0.0.0:P` (`--http P` binds loopback only, which no published port reaches).
std::set<int> BoundPorts(const std::vector<std::string>& argv) {
  std::set<int> ports;
  for (const std::string& a : argv) {
    if (a.rfind("tcp://0.0.0.0:", 0) == 0) ports.insert(std::stoi(a.substr(14)));
  }
  const std::string http = FlagValue(argv, "--http");
  if (http.rfind("0.0.0.0:", 0) == 0) ports.insert(std::stoi(http.substr(8)));
  return ports;
}

// The value of `--flag VALUE` in argv, or "" if absent.
std::string FlagValue(const std::vector<std::string>& argv, const std::string& flag) {
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == flag) return argv[i + 1];
  }
  return "";
}

// The environment a compose service sets (a map; merge keys applied).
std::map<std::string, std::string> EnvOf(const YAML::Node& service) {
  std::map<std::string, std::string> env;
  for (const auto& kv : Merged(At(service, {"environment"})))
    env[kv.first.as<std::string>()] = kv.second.as<std::string>("");
  return env;
}

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

std::set<std::string> ComposeKeys::Secrets() const {
  std::set<std::string> secrets = {key_name};
  if (!http_key_name.empty()) secrets.insert(http_key_name);
  return secrets;
}

std::set<std::string> ComposeKeys::Publics() const {
  std::set<std::string> publics = servers;
  if (!http_key_name.empty()) publics.insert(key_name);  // the dashboard connects to its own
  return publics;
}

extern const std::map<std::string, ComposeKeys> kComposeKeys = {
    {"checkpoint-store", {"checkpoint-store", {}, true, ""}},
    {"resource-manager", {"resource-manager", {}, true, ""}},
    {"scheduler", {"scheduler", {"checkpoint-store", "resource-manager"}, true, "dashboard"}},
    {"trial-worker", {"worker", {"scheduler", "checkpoint-store", "resource-manager"}, false, ""}},
    {"tunectl", {"tunectl", {"scheduler"}, false, ""}}};

extern const std::vector<std::vector<std::string>> kKeygenSteps = {
    {"keygen", "--suite"}, {"keygen", "dashboard", "--role", "viewer", "--authorize"}};

// kKeygenSteps into <dir>/keys: the folder compose's mounts come from.
fs::path KeygenSuite(const fs::path& dir) {
  const fs::path keys = dir / "keys";
  for (std::vector<std::string> args : kKeygenSteps) {
    args.insert(args.end(), {"--dir", keys.string()});
    const CommandResult r = RunTunectl(args);
    EXPECT_EQ(r.exit_code, 0) << r.Describe();
  }
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
  EXPECT_EQ(!FlagValue(ArgvOf(service), "--http").empty(), !want.http_key_name.empty())
      << file << ": " << name << (want.http_key_name.empty() ? " serves" : " does not serve")
      << " the web dashboard (--http)";
  EXPECT_EQ(env.contains("TUNEBUS_HTTP_KEY_NAME") ? env.at("TUNEBUS_HTTP_KEY_NAME") : "",
            want.http_key_name)
      << file << ": " << name << "'s dashboard key (TUNEBUS_HTTP_KEY_NAME)";
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
  EXPECT_EQ(secrets, want.Secrets()) << file << ": " << name;
  EXPECT_EQ(publics, want.Publics()) << file << ": " << name;
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
  // The file's dashboard, on loopback at a port the kernel picks (the ready file names it).
  const YAML::Node scheduler = Merged(servers["services"]["scheduler"]);
  const std::string http = FlagValue(ArgvOf(scheduler), "--http");
  EXPECT_FALSE(http.empty()) << "the scheduler serves no dashboard (--http)";
  const auto env = EnvOf(scheduler);
  const std::string http_key =
      env.contains("TUNEBUS_HTTP_KEY_NAME") ? env.at("TUNEBUS_HTTP_KEY_NAME") : "";
  flags["scheduler"].insert(flags["scheduler"].end(),
                            {"--http", "127.0.0.1:0", "--http-key-name", http_key});
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
  // The dashboard reads the experiment through its own viewer key, and an operator's login URL
  // (tunectl with the tool service's key) signs a browser in.
  const std::string url = cluster.http();
  std::smatch m;
  ASSERT_TRUE(std::regex_match(url, m, std::regex(R"(http://127\.0\.0\.1:(\d+)/)"))) << url;
  httplib::Client client("127.0.0.1", std::stoi(m[1].str()));
  client.set_read_timeout(10, 0);
  const auto experiments = client.Get("/api/experiments");
  ASSERT_TRUE(experiments) << httplib::to_string(experiments.error());
  ASSERT_EQ(experiments->status, 200) << experiments->body;
  const nlohmann::json rows = nlohmann::json::parse(experiments->body, nullptr, false);
  ASSERT_TRUE(rows.is_array()) << experiments->body;
  ASSERT_EQ(rows.size(), 1u) << rows.dump();
  EXPECT_EQ(rows[0].value("name", ""), "keyed") << rows.dump();
  EXPECT_EQ(rows[0].value("total", -1), 2) << rows.dump();
  const nlohmann::json token = cluster.Ctl({"-o", "json", "dashboard-token"}).Json();
  const std::string login = token.value("login_url", "");
  ASSERT_EQ(login.rfind(url + "login?token=", 0), 0u) << token.dump();
  const auto signed_in = client.Get(login.substr(url.size() - 1));
  ASSERT_TRUE(signed_in) << httplib::to_string(signed_in.error());
  EXPECT_EQ(signed_in->status, 303) << signed_in->body;
  EXPECT_NE(signed_in->get_header_value("Set-Cookie").find("tunebus_session="), std::string::npos)
      << signed_in->body;
}

}  // namespace tunebus::testing::deploy
