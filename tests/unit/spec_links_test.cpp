// Experiment-file tests of the sections that name other processes: an external searcher the
// scheduler starts or connects to, the Python driver's link, their CURVE server keys, and what
// needs the driver (PBT function mutations, sample_from).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "libs/spec/experiment_spec.hpp"
#include "libs/tune/external_searcher.hpp"
#include "tests/unit/spec_test_util.hpp"

namespace tunebus {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace spec_test;

TEST(ExperimentSpecTest, ExternalSearcherCommandIsCheckedWithItsLine) {
  // `command` (the searcher the scheduler starts) is a non-empty list of strings, and makes
  // `endpoint` optional; an endpoint given with it must be one another process can bind.
  const std::string base = ExternalSearchBase();
  ExpectInvalid(base + "  command: []\n",
                "exp.yaml:9: search.command: must be a non-empty list of strings (the program "
                "and its arguments, e.g. [/usr/bin/python3, searcher.py]), got []");
  ExpectInvalid(base + "  command: python3 searcher.py\n",
                "exp.yaml:9: search.command: must be a non-empty list of strings (the program "
                "and its arguments, e.g. [/usr/bin/python3, searcher.py]), got \"python3 "
                "searcher.py\"");
  ExpectInvalid(base +
                    "  command:\n"
                    "    - python3\n"
                    "    - {sampler: tpe}\n",
                "exp.yaml:11: search.command[1]: must be a string, got {\"sampler\":\"tpe\"}");
  ExpectInvalid(base + "  command: ['', searcher.py]\n",
                "exp.yaml:9: search.command[0]: must be a non-empty string, got \"\"");
  ExpectInvalid(base +
                    "  command: [python3, searcher.py]\n"
                    "  endpoint: inproc://searcher\n",
                "exp.yaml:10: search.endpoint: 'inproc://searcher': a searcher the scheduler "
                "starts is another process: tcp://host:port or ipc://path (or leave endpoint "
                "out)");
  ExpectInvalid(base +
                    "  command: [python3, searcher.py]\n"
                    "  endpoint: tcp://127.0.0.1:*\n",
                "exp.yaml:10: search.endpoint: 'tcp://127.0.0.1:*' has no port to connect to; "
                "name the port, or leave endpoint out");
  auto spawned = Parse(base +
                       "  command: [/usr/bin/python3, searcher.py, --endpoint, "
                       "'{endpoint}']\n");
  ASSERT_TRUE(spawned.ok()) << spawned.status().message();
  EXPECT_EQ(spawned->search_config["command"],
            (json{"/usr/bin/python3", "searcher.py", "--endpoint", "{endpoint}"}));
  auto both = Parse(base +
                    "  command: [/usr/bin/python3, searcher.py]\n"
                    "  endpoint: ipc:///tmp/searcher.ipc\n");
  ASSERT_TRUE(both.ok()) << both.status().message();
}

TEST(ExperimentSpecTest, DigitsExampleWithASpawnedSearcherParses) {
  // examples/digits/cmaes_spawned.yaml: the searcher's command, relative to the example's folder,
  // kept as written (the scheduler starts it in that folder).
  const fs::path file =
      fs::path(TUNEBUS_TEST_SOURCE_DIR) / "examples" / "digits" / "cmaes_spawned.yaml";
  Result<ExperimentSpec> spec = ParseExperimentFile(file.string());
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->search, "external");
  EXPECT_EQ(spec->search_config["command"][1], "../../clients/python/tunebus/searcher.py");
  EXPECT_TRUE(fs::exists(file.parent_path() / "../../clients/python/tunebus/searcher.py"));
  EXPECT_FALSE(spec->search_config.contains("endpoint"));
}

TEST(ExperimentSpecTest, DriverSectionIsParsed) {
  // The Python driver's link: endpoint required, on_result defaults to true, timeout_s to 10.
  Result<ExperimentSpec> spec =
      Parse(std::string(kMinimal) + "driver: {endpoint: 'tcp://127.0.0.1:5700'}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_TRUE(spec->driver.has_value());
  EXPECT_EQ(spec->driver->endpoint, "tcp://127.0.0.1:5700");
  EXPECT_TRUE(spec->driver->on_result);
  EXPECT_EQ(spec->driver->timeout_s, 10);
  spec = Parse(std::string(kMinimal) +
               "driver:\n  endpoint: ipc:///tmp/d\n  on_result: false\n  timeout_s: 2.5\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_FALSE(spec->driver->on_result);
  EXPECT_EQ(spec->driver->timeout_s, 2.5);
  EXPECT_FALSE(Parse(kMinimal)->driver.has_value());
}

TEST(ExperimentSpecTest, ServerKeysOfTheSearcherAndTheDriverAreRead) {
  // server_key: the CURVE public key the scheduler expects of a searcher or driver on tcp://,
  // as Z85 or a key file's path (made absolute against the file's folder by the scheduler).
  const std::string z85 = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
  Result<ExperimentSpec> spec = Parse(std::string(kMinimal) +
                                      "metric: loss\nmode: min\n"
                                      "search: {type: external, endpoint: 'tcp://h:5600', "
                                      "server_key: 'keys/searcher.key'}\n"
                                      "driver: {endpoint: 'tcp://h:5700', server_key: '" +
                                      z85 + "'}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto options = ExternalOptions::Parse(spec->search_config);
  ASSERT_TRUE(options.ok()) << options.status().ToString();
  EXPECT_EQ(options->server_key, "keys/searcher.key");
  EXPECT_EQ(options->Target().server_key, "keys/searcher.key");
  EXPECT_EQ(spec->driver->server_key, z85);
  // Absent: the scheduler's default key files (<keys-dir>/searcher.key, driver.key).
  spec = Parse(std::string(kMinimal) + "driver: {endpoint: 'tcp://h:5700'}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->driver->server_key, "");
}

TEST(ExperimentSpecTest, BadServerKeysNameTheField) {
  // An empty key, or a key for an endpoint that never uses CURVE (ipc://, a spawned searcher's
  // endpoint), is an error on the key's line.
  ExpectInvalid(std::string(kMinimal) + "driver:\n  endpoint: tcp://h:1\n  server_key: ''\n",
                "exp.yaml:5: driver.server_key: expected a non-empty string, got ''");
  ExpectInvalid(
      std::string(kMinimal) + "driver:\n  endpoint: ipc:///tmp/d\n  server_key: driver.key\n",
      "exp.yaml:5: driver.server_key: only a tcp:// endpoint uses CURVE; the driver at "
      "ipc:///tmp/d is reached without it (leave server_key out)");
  const std::string base = ExternalSearchBase();
  ExpectInvalid(base + "  endpoint: tcp://h:5600\n  server_key: 3\n",
                "exp.yaml:10: search.server_key: must be a string, got 3");
  ExpectInvalid(base + "  endpoint: tcp://h:5600\n  server_key: ''\n",
                "exp.yaml:10: search.server_key: must be the searcher's CURVE public key (40 Z85 "
                "characters) or the path of its public key file (tunectl keygen NAME --role "
                "searcher), got an empty string");
  ExpectInvalid(base + "  command: [python3, s.py]\n  server_key: searcher.key\n",
                "exp.yaml:10: search.server_key: only a tcp:// endpoint uses CURVE; the searcher "
                "at the ipc:// endpoint the scheduler picks is reached without it (leave "
                "server_key out)");
}

TEST(ExperimentSpecTest, BadDriverSectionsNameTheField) {
  ExpectInvalid(std::string(kMinimal) + "driver:\n  on_result: true\n",
                "exp.yaml:4: driver.endpoint: required: the driver's ROUTER, e.g. "
                "tcp://127.0.0.1:5700");
  ExpectInvalid(std::string(kMinimal) + "driver:\n  endpoint: 127.0.0.1:5700\n",
                "exp.yaml:4: driver.endpoint: '127.0.0.1:5700' is not a ZeroMQ endpoint "
                "(tcp://host:port, ipc://path)");
  ExpectInvalid(std::string(kMinimal) + "driver:\n  endpoint: tcp://h:1\n  timeout_s: 0\n",
                "exp.yaml:5: driver.timeout_s: must be > 0 seconds, got 0");
  ExpectInvalid(std::string(kMinimal) + "driver:\n  endpoint: tcp://h:1\n  on_result: 3\n",
                "exp.yaml:5: driver.on_result: expected true or false, got '3'");
  ExpectInvalid(std::string(kMinimal) + "driver:\n  endpoint: tcp://h:1\n  stopper: x\n",
                "exp.yaml:5: driver: unknown field 'stopper'; expected one of endpoint, "
                "server_key, on_result, timeout_s");
  ExpectInvalid(std::string(kMinimal) + "driver: tcp://h:1\n",
                "exp.yaml:3: driver: expected a map with 'endpoint' (the Python driver's "
                "ROUTER), got 'tcp://h:1'");
}

TEST(ExperimentSpecTest, PbtDriverMutationNeedsTheDriverOnResults) {
  // {driver: {}} mutations draw their values in the driver with every result.
  const std::string pbt = Yaml(R"(
metric: acc
mode: max
param_space: {lr: {uniform: [0.01, 0.1]}}
scheduler:
  type: pbt
  hyperparam_mutations: {lr: {driver: {}}}
)");
  Result<ExperimentSpec> spec =
      Parse(std::string(kMinimal) + pbt + "driver: {endpoint: 'tcp://127.0.0.1:5700'}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ExpectInvalid(std::string(kMinimal) + pbt,
                "exp.yaml:8: scheduler.hyperparam_mutations: a {driver: {}} mutation needs the "
                "Python driver: a 'driver' section with on_result: true (the driver draws its "
                "values with every result)");
  ExpectInvalid(std::string(kMinimal) + pbt +
                    "driver: {endpoint: 'tcp://127.0.0.1:5700', on_result: false}\n",
                "exp.yaml:8: scheduler.hyperparam_mutations: a {driver: {}} mutation needs the "
                "Python driver: a 'driver' section with on_result: true (the driver draws its "
                "values with every result)");
}

TEST(ExperimentSpecTest, SampleFromNeedsTheDriver) {
  // {sample_from: driver}: the Python driver computes it, asked by the scheduler under search:
  // random (its driver section) or serving search: external itself.
  const std::string space =
      "param_space:\n  lr: {uniform: [0.1, 1]}\n  model:\n"
      "    act: {sample_from: driver}\n";
  ExpectInvalid(std::string(kMinimal) + space,
                "exp.yaml:6: param_space.model.act: sample_from needs the Python driver that "
                "computes it: a 'driver' section with its endpoint (the tunebus package's Tuner "
                "writes it)");
  Result<ExperimentSpec> random = Parse(std::string(kMinimal) + space +
                                        "driver: {endpoint: 'tcp://h:5700', on_result: false}\n");
  ASSERT_TRUE(random.ok()) << random.status().ToString();
  EXPECT_EQ(random->search, "random");
  EXPECT_FALSE(random->driver->on_result);
  ExpectInvalid(std::string(kMinimal) + space +
                    "metric: loss\nmode: min\nsearch: tpe\ndriver: {endpoint: 'tcp://h:5700'}\n",
                "exp.yaml:6: param_space.model.act: sample_from is computed by the Python driver, "
                "for search: random (the scheduler asks the driver) or search: {type: external}; "
                "search: tpe cannot sample it");
  Result<ExperimentSpec> spec =
      Parse(std::string(kMinimal) + space +
            "metric: loss\nmode: min\nsearch: {type: external, endpoint: 'tcp://h:5600'}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->param_space["model"]["act"], json({{"sample_from", "driver"}}));
  ExpectInvalid(std::string(kMinimal) + "param_space:\n  act: {sample_from: fn}\n",
                "exp.yaml:4: param_space.act.sample_from: expected driver (the Python driver's "
                "tune.sample_from fills it), got \"fn\"");
}

}  // namespace
}  // namespace tunebus
