// Helpers of the deployment-file tests (deploy_files_test.cpp: compose and the Dockerfile;
// deploy_swarm_test.cpp: the Swarm stack; deploy_k8s_test.cpp: the Kubernetes manifests): each
// reads the files as YAML and checks what they name against the build (`binary --help`, the
// Dockerfile's stages, `tunectl keygen --suite`).
#pragma once

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/integration/harness.hpp"

namespace tunebus::testing::deploy {

extern const std::set<std::string> kBinaries;

// `binary --help` (the flags and the TUNEBUS_* variables it reads). Its output goes to a folder
// of its own: two tests of this file asking the same binary at once (ctest -j2) must not write
// each other's files.
std::string Help(const std::string& binary);

// Every binary's `--help`, by binary.
std::map<std::string, std::string> HelpOfEveryBinary();

// Whether a binary's --help names `var` as a variable it reads ("(Env:TUNEBUS_X)").
bool SomeBinaryReads(const std::map<std::string, std::string>& help, const std::string& var);

// The Dockerfile's stages by name ("FROM <image> AS <name>"), each with its text.
std::map<std::string, std::string> DockerfileStages(const std::string& dockerfile);

// A file of the source tree (TUNEBUS_TEST_SOURCE_DIR), parsed as YAML.
YAML::Node LoadSource(const std::string& file);

// node[path[0]][path[1]]..., or an undefined node where a key on the way is missing (yaml-cpp
// throws when asked for a key of a missing node).
YAML::Node At(const YAML::Node& root, std::initializer_list<const char*> path);

// A compose map with its merge keys (`<<: *anchor`, `<<: [*a, *b]`) applied, also those of the
// maps it merges: yaml-cpp reads `<<` as an ordinary key holding the anchored map(s). Keys written
// beside `<<` win over merged ones, and an earlier map of a `<<` list over a later one, as in
// YAML's merge.
YAML::Node Merged(const YAML::Node& map);

// A compose file's services by name, each with its merge keys applied.
std::vector<std::pair<std::string, YAML::Node>> Services(const YAML::Node& compose);

// What a compose service runs: its entrypoint, then its command.
std::vector<std::string> ArgvOf(const YAML::Node& service);

// The tunebus binary a compose service runs: the first word of its entrypoint or command, else the
// one it is named after; "" if neither is one.
std::string BinaryOf(const std::string& name, const YAML::Node& service);

// The ports a service's flags bind on every interface: each endpoint tcp://0.0.0.0:P and the
// dashboard's `--http 0.0.0.0:P` (`--http P` binds loopback only, which no published port reaches).
std::set<int> BoundPorts(const std::vector<std::string>& argv);

// The value of `--flag VALUE` in argv, or "" if absent.
std::string FlagValue(const std::vector<std::string>& argv, const std::string& flag);

// The environment a compose service sets (a map; merge keys applied).
std::map<std::string, std::string> EnvOf(const YAML::Node& service);

// A port a service publishes: the container's (target), the host's (published), and Swarm's mode
// (the short syntax "[ip:]published:target" is always "ingress").
struct PublishedPort {
  int target = 0;
  int published = 0;
  std::string mode = "ingress";
};

std::vector<PublishedPort> PortsOf(const YAML::Node& service);

// Checks that a compose file (one host's, its GPU override, the Swarm stack) names only what the
// build has: each service runs a tunebus binary with flags that binary has; every TUNEBUS_*
// variable it sets is read by a binary; its image, if named, is
// ${TUNEBUS_REGISTRY:-}tunebus-<binary>:${TUNEBUS_TAG:-latest}, the Dockerfile stage that copies
// that binary (what `docker compose build` and `push` make); its healthcheck runs `<binary>
// --healthcheck`; it publishes only ports its flags bind or its metrics port; and every
// tcp://<service>:<port> it connects to names a service of the same file that binds that port.
void ExpectNamesOnlyWhatTheBuildHas(const std::string& file, const YAML::Node& compose,
                                    const std::map<std::string, std::string>& help,
                                    const std::map<std::string, std::string>& stages);

// What compose puts under a service's /keys: path inside /keys -> path inside compose/keys (the
// folder `tunectl keygen --suite --dir compose/keys` writes), from its secrets and configs (the
// top level's `file: ./keys/...`) and its bind mounts of ./keys/...; `read_only` is false if one of
// the bind mounts is writable. ADD_FAILUREs name what does not map a ./keys path onto /keys.
std::map<std::string, std::string> KeyMountsOf(const YAML::Node& compose, const std::string& name,
                                               const YAML::Node& service, bool& read_only);

// The keys each role needs, by the binary it runs: its key name (TUNEBUS_KEY_NAME), the servers
// whose public keys it connects with, whether it serves (reads the allow-list) and, for the
// scheduler, the viewer key of the web dashboard it serves (`--http` with TUNEBUS_HTTP_KEY_NAME):
// the dashboard is a CURVE client of its own scheduler, so that role also holds that key's secret
// and its own public key.
struct ComposeKeys {
  std::string key_name;
  std::set<std::string> servers;
  bool serves = false;
  std::string http_key_name;  // "": the role serves no dashboard

  // The secret keys the role holds (NAME of NAME.key_secret).
  std::set<std::string> Secrets() const;
  // The public keys of servers the role holds (NAME of NAME.key).
  std::set<std::string> Publics() const;
};

extern const std::map<std::string, ComposeKeys> kComposeKeys;

// The key-making steps docs/how-to/deploy.md and the deployment files give, in order, as tunectl's
// arguments before `--dir <folder>`: the suite's keys, then the dashboard's viewer key.
extern const std::vector<std::vector<std::string>> kKeygenSteps;

// kKeygenSteps into <dir>/keys: the folder compose's mounts come from.
fs::path KeygenSuite(const fs::path& dir);

// Checks that service `name` of a compose file runs with CURVE (TUNEBUS_KEYS_DIR=/keys, the key
// name of its role, never --insecure) and gets under /keys, never writable, only what its role
// needs: its own secret key, the public keys of the servers it connects to and, if it serves, the
// allow-list (the folder, or each file keygen wrote into it); each is the file `tunectl keygen
// --suite` wrote under that name in `keys`.
// A service whose role has a dashboard key runs `--http` with TUNEBUS_HTTP_KEY_NAME naming it.
void ExpectOnlyItsOwnKeys(const std::string& file, const YAML::Node& compose,
                          const std::string& name, const YAML::Node& service, const fs::path& keys);

// The flags that give service `name` of a compose file its keys as a folder of its own under
// `root`: a copy (modes kept) of what the file mounts at its /keys from the keygen folder `keys`,
// and the TUNEBUS_KEY_NAME the file gives it.
std::vector<std::string> MountedKeyFlags(const YAML::Node& compose, const std::string& name,
                                         const fs::path& keys, const fs::path& root);

// Starts the suite on loopback, each service with only the keys `servers` (a compose file) mounts
// for it and tunectl with those compose/docker-compose.yml's tool service gets, the scheduler with
// the file's dashboard (`--http` on 127.0.0.1:0 instead of its port on every interface, and its
// TUNEBUS_HTTP_KEY_NAME); checks that every process secured its sockets with CURVE, that the
// worker registers, that an experiment runs to its end, that the dashboard lists it and that a
// login URL from `tunectl dashboard-token` signs a browser in.
void ExpectTheSuiteRunsWithOnlyTheMountedKeys(const YAML::Node& servers);

}  // namespace tunebus::testing::deploy
