// The Kubernetes manifests (deploy/k8s, rendered with `kubectl kustomize`)
// name only what the build has.
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
  // deploy/k8s renders (kubectl kustomize) into workloads whose every image is
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
  std::map<std::string, int> dashboards;  // app label -> its dashboard's container port
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
    const std::set<int> bound = BoundPorts(argv);  // tcp://0.0.0.0:P, --http 0.0.0.0:P
    for (const std::string& a : argv) {
      if (a.rfind("--", 0) == 0) {
        EXPECT_NE(help[binary].find(a + " "), std::string::npos) << name << ": no flag " << a;
      }
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
    // The scheduler's dashboard: --http on every interface, its viewer key, a port named http.
    EXPECT_EQ(env["TUNEBUS_HTTP_KEY_NAME"], want.http_key_name) << name;
    const std::string http = FlagValue(argv, "--http");
    EXPECT_EQ(!http.empty(), !want.http_key_name.empty()) << name << " --http " << http;
    if (!want.http_key_name.empty()) {
      ASSERT_EQ(http.rfind("0.0.0.0:", 0), 0u) << name << " --http " << http;
      EXPECT_EQ(pod_ports[app]["http"], std::stoi(http.substr(8)))
          << name << " names no container port http for its dashboard";
      dashboards[app] = pod_ports[app]["http"];
    }
    std::set<std::string> files;
    bool allow_list = false;
    for (const auto& v : pod["volumes"]) {
      if (v["name"].as<std::string>("") == "authorized") allow_list = true;
      if (v["name"].as<std::string>("") != "secrets") continue;
      for (const auto& item : v["secret"]["items"]) files.insert(item["key"].as<std::string>(""));
    }
    std::set<std::string> want_files;
    for (const std::string& secret : want.Secrets()) want_files.insert(secret + ".key_secret");
    for (const std::string& server : want.Publics()) want_files.insert(server + ".key");
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
  // Each dashboard is reachable through a Service port (kubectl port-forward svc/<name> P:P).
  EXPECT_FALSE(dashboards.empty()) << "no workload serves the dashboard";
  for (const auto& [app, port] : dashboards) {
    bool exposed = false;
    for (const auto& [service, ports] : service_ports) {
      exposed = exposed || (service_selects[service] == app && ports.contains("http") &&
                            ports.at("http") == port);
    }
    EXPECT_TRUE(exposed) << "no Service exposes " << app << "'s dashboard at port " << port;
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
