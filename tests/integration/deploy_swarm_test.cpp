// The Swarm stack (compose/docker-stack.yml) names only what the build has,
// as the compose files do (deploy_files_support.hpp), and keeps Swarm's rules.
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
  // `docker stack deploy -c compose/docker-stack.yml tunebus` runs the services
  // of docker-compose.yml on a Swarm. Everything it names exists in the build, as for compose,
  // and it keeps Swarm's rules: no key Swarm ignores or refuses (it pulls images, restarts by
  // deploy.restart_policy, starts in no order); a volume is local to a node, so a service of one
  // replica that keeps one is pinned to a labelled node, and the labels are the ones
  // docs/how-to/deploy.md sets; the servers resolve to their task (endpoint_mode dnsrr: the virtual
  // IP drops connections idle for 900 s), so they publish in host mode at the port they bind (where
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
  const std::string deploy_doc = ReadFile(SourceDir() / "docs/how-to/deploy.md");
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
        << "docs/how-to/deploy.md never labels a node " << l << "=true, which " << file << " needs";
  }
}

TEST(DeployFilesTest, SwarmServicesRunWithOnlyTheKeysTheStackMounts) {
  // The stack's secrets and configs are enough: each process gets only what
  // compose/docker-stack.yml mounts at its /keys (the allow-list file by file, as Swarm configs)
  // and its TUNEBUS_KEY_NAME; the suite starts with CURVE, and tunectl with the one-host tool
  // service's keys (an operator's, from the same keygen folder) runs an experiment to its end.
  ExpectTheSuiteRunsWithOnlyTheMountedKeys(LoadSource("compose/docker-stack.yml"));
}

}  // namespace
}  // namespace tunebus::testing
