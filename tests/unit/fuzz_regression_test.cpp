// Inputs the fuzz targets (fuzz/, docs/explanation/security.md "Fuzzing") found crashing, fed to
// the same bodies in the ordinary build, with the check of the fix.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fuzz/fuzz_targets.hpp"
#include "libs/core/fields.hpp"
#include "libs/journal/snapshot.hpp"
#include "libs/spec/experiment_spec.hpp"
#include "libs/tune/training_result.hpp"
#include "proto/codec.hpp"
#include "services/scheduler/search/zmq_searcher_link.hpp"

namespace tunebus {
namespace {

// The control target's find: an experiment file with a byte that is not UTF-8 (0x93) in a
// constant of its param_space. The scheduler accepted it, and its results-file thread died on
// nlohmann::json's type_error 316 writing the trial's params.json (std::terminate: the whole
// scheduler). The parser now refuses such a file.
const std::string kNotUtf8Yaml =
    "name: fuzz\n"
    "trainable:\n"
    "  builtin: mock\n"
    "param_space:\n"
    "  lr: 0.1\n"
    "  tag: \"ab\x93\"\n"
    "metric: mean_accuracy\n"
    "mode: max\n";

TEST(FuzzRegressionTest, AnExperimentFileThatIsNotUtf8IsRefusedWithItsLine) {
  Result<ExperimentSpec> spec = ParseExperimentYaml(kNotUtf8Yaml, "/tmp", "exp.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(spec.status().message(),
            "exp.yaml:6: not UTF-8 text: byte 0x93 at column 11 (an experiment file is UTF-8)");
  // Overlong forms and surrogates are refused too; valid multi-byte text is not.
  EXPECT_FALSE(ParseExperimentYaml("name: \xc0\xaf\n", "/tmp", "exp.yaml").ok());
  EXPECT_FALSE(ParseExperimentYaml("name: \xed\xa0\x80\n", "/tmp", "exp.yaml").ok());
  Result<ExperimentSpec> ok =
      ParseExperimentYaml("name: caf\xc3\xa9\ntrainable: {builtin: mock}\n", "/tmp", "exp.yaml");
  EXPECT_EQ(ok.status().message().find("UTF-8"), std::string::npos) << ok.status().ToString();
}

TEST(FuzzRegressionTest, TheSchedulerSurvivesASubmissionThatIsNotUtf8) {
  auto frame = [](const nlohmann::json& m) { return nlohmann::json::to_msgpack(m); };
  const std::vector<uint8_t> submit = frame({{"v", 1},
                                             {"type", "submit_experiment"},
                                             {"id", 7},
                                             {"spec_yaml", kNotUtf8Yaml},
                                             {"base_dir", "/tmp/fuzz"},
                                             {"source_name", "exp.yaml"}});
  EXPECT_EQ(fuzz::FuzzControl(submit.data(), submit.size()), 0);
  const std::vector<uint8_t> list = frame({{"v", 1}, {"type", "list_trials"}, {"id", 8}});
  EXPECT_EQ(fuzz::FuzzControl(list.data(), list.size()), 0);
}

// The control target's find at 906b14c (fuzz/findings/control-set-resources-without-trial-id):
// a set_trial_resources_command whose trial_id is missing went, by ExperimentRegistry::Target's
// default, to the running experiment, and the handler read the resources of the trial it did not
// find (a null pointer). It is answered not_found "no trial " now, and the scheduler serves on.
TEST(FuzzRegressionTest, SetTrialResourcesWithoutATrialIdIsNotFound) {
  std::ifstream in(std::string(TUNEBUS_TEST_SOURCE_DIR) +
                       "/fuzz/findings/control-set-resources-without-trial-id",
                   std::ios::binary);
  const std::vector<uint8_t> finding((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
  ASSERT_FALSE(finding.empty());
  EXPECT_EQ(fuzz::FuzzControl(finding.data(), finding.size()), 0);
  const std::vector<uint8_t> list =
      nlohmann::json::to_msgpack({{"v", 1}, {"type", "list_trials"}, {"id", 9}});
  EXPECT_EQ(fuzz::FuzzControl(list.data(), list.size()), 0);
}

// The searcher_reply target's find: a suggestion whose params hold a string that is not UTF-8.
// nlohmann's from_msgpack took it as it was, and ExternalSearcher::ConfigOf's dump of the config
// threw type_error 316 out of the scheduler's loop (std::terminate). The link now refuses the
// reply as malformed (InvalidArgument: the searcher is retried after its backoff).
TEST(FuzzRegressionTest, ASearcherReplyWithAStringThatIsNotUtf8IsRefused) {
  const std::vector<uint8_t> frame = nlohmann::json::to_msgpack({{"v", 1},
                                                                 {"type", "suggestion"},
                                                                 {"id", 2},
                                                                 {"trial_id", "t0"},
                                                                 {"status", "config"},
                                                                 {"params", {{"opt", "a\x93"}}}});
  Result<proto::Decoded> d = proto::Decode(frame.data(), frame.size());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  Result<nlohmann::json> reply = SearcherReplyToJson(*d);
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(reply.status().message().find("suggestion: the reply is not a map JSON can hold"),
            std::string::npos)
      << reply.status().message();
  // The whole exchange, as the fuzz target found it, runs to its end.
  std::string input;
  auto chunk = [&input](const std::vector<uint8_t>& bytes) {
    input.push_back(char(bytes.size() & 0xff));
    input.push_back(char(bytes.size() >> 8));
    input.append(bytes.begin(), bytes.end());
  };
  chunk(nlohmann::json::to_msgpack({{"v", 1}, {"type", "hello_ok"}, {"id", 1}}));
  chunk(frame);
  EXPECT_EQ(fuzz::FuzzSearcherReply(reinterpret_cast<const uint8_t*>(input.data()), input.size()),
            0);
}

}  // namespace
}  // namespace tunebus

namespace tunebus {
namespace {

// The spec target's find: a NUL byte in an experiment file made yaml-cpp 0.7's LoadAll loop
// for over a minute (fuzz/findings/spec-timeout-yaml-cpp). C0 controls other than tab, LF and
// CR are refused before yaml-cpp reads the file, naming the line and column.
TEST(FuzzRegressionTest, AControlCharacterInAnExperimentFileIsRefusedBeforeYamlCppReadsIt) {
  std::string text = "name: x\ntrainable: {builtin: mock}\nmetric: s, ";
  text += std::string(3, '\0');
  text += "\n";
  Result<ExperimentSpec> spec = ParseExperimentYaml(text, "/tmp", "exp.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(),
            "exp.yaml:3: control character 0x00 at column 12 (YAML allows only tab, LF and CR)");
  EXPECT_TRUE(
      ParseExperimentYaml("name: x\r\ntrainable:\t{builtin: mock}\r\n", "/tmp", "exp.yaml").ok());
}

// The report_line target's find: a reported 2^64 reached msgpack-c's pack_double, whose
// integral-value branch converts 2^64 to uint64_t (undefined behaviour; UBSan aborted). It is
// stored as the same double.
TEST(FuzzRegressionTest, AReportedTwoToThe64IsKeptAsThatDouble) {
  auto result = TrainingResult::FromJsonText(R"({"u": 18446744073709551616, "i": 3})");
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->Number("u"), 18446744073709551616.0);
  EXPECT_EQ(result->Number("i"), 3.0);
}

}  // namespace
}  // namespace tunebus

namespace tunebus {
namespace {

// A file of the source tree, whole ("" if it cannot be read).
std::string ReadFileForTest(const std::string& relative) {
  std::ifstream in(std::string(TUNEBUS_TEST_SOURCE_DIR) + "/" + relative, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The searcher_reply target's find in a 10 s run: a hello_ok whose `version` is a number made
// ExternalSearcher::Describe (tunectl status) throw nlohmann's type_error 302 out of the
// scheduler's loop. Describe now prints whatever type the searcher sent.
TEST(FuzzRegressionTest, AHelloOkWhoseVersionIsNotAStringIsDescribed) {
  std::string input;
  auto chunk = [&input](const std::vector<uint8_t>& bytes) {
    input.push_back(char(bytes.size() & 0xff));
    input.push_back(char(bytes.size() >> 8));
    input.append(bytes.begin(), bytes.end());
  };
  chunk(nlohmann::json::to_msgpack(
      {{"v", 1}, {"type", "hello_ok"}, {"id", 1}, {"searcher", 7}, {"version", 1.5}}));
  EXPECT_EQ(fuzz::FuzzSearcherReply(reinterpret_cast<const uint8_t*>(input.data()), input.size()),
            0);
  const std::string found =
      ReadFileForTest("fuzz/findings/searcher_reply-hello-version-not-a-string");
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(fuzz::FuzzSearcherReply(reinterpret_cast<const uint8_t*>(found.data()), found.size()),
            0);
}

}  // namespace
}  // namespace tunebus

namespace tunebus {
namespace {

// The spec target's find: a ',' that starts a document outside a flow collection (here after an
// indented block, which yaml-cpp ends as a document) made yaml-cpp 0.7's LoadAll add empty
// documents forever until memory ran out (jbeder/yaml-cpp#1040). The parser walks the documents
// itself and reports the ',' as a syntax error at its line.
TEST(FuzzRegressionTest, ACommaOutsideAFlowCollectionIsASyntaxErrorAtItsLine) {
  const std::string header = "name: x\ntrainable: {builtin: mock}\n";
  struct Case {
    std::string text;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {",\n", "exp.yaml:1: YAML syntax error: unexpected ','"},
           {"  a: 1\n, b\n", "exp.yaml:2: YAML syntax error: unexpected ','"},
           {header + "...\n, x\n", "exp.yaml:4: YAML syntax error: unexpected ','"},
       }) {
    Result<ExperimentSpec> spec = ParseExperimentYaml(c.text, "/tmp", "exp.yaml");
    ASSERT_FALSE(spec.ok()) << c.text;
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(spec.status().message(), c.message);
  }
  const std::string found = ReadFileForTest("fuzz/findings/spec-timeout-yaml-cpp-flow-entry");
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(fuzz::FuzzSpec(reinterpret_cast<const uint8_t*>(found.data()), found.size()), 0);
  Result<ExperimentSpec> spec = ParseExperimentYaml(found, "/tmp", "exp.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(), "exp.yaml:3: YAML syntax error: unexpected ','");
  // Flow collections and later empty documents still parse.
  EXPECT_TRUE(
      ParseExperimentYaml(header + "param_space: {a: [1, 2]}\n---\n", "/tmp", "exp.yaml").ok());
}

}  // namespace
}  // namespace tunebus

namespace tunebus {
namespace {

// The snapshot target's find in CI's 10 s run: a trial whose "attempt" is the double -4.25e37
// reached nlohmann's get<int64_t>(), a static_cast out of int64's range (undefined behaviour;
// UBSan aborted). fuzz/findings/snapshot-ubsan-float-attempt is a real snapshot with that field
// (written from fuzz/corpus/snapshot/after_10_experiment_resumed). Integers of the journal's
// records, snapshots and states are read through fields::GetInteger, which refuses them.
TEST(FuzzRegressionTest, ASnapshotWhoseAttemptIsAHugeDoubleIsCorrupt) {
  const std::string found = ReadFileForTest("fuzz/findings/snapshot-ubsan-float-attempt");
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(fuzz::FuzzSnapshot(reinterpret_cast<const uint8_t*>(found.data()), found.size()), 0);
  Result<journal::ReplayedExperiment> decoded = journal::DecodeSnapshot(found);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption);
  EXPECT_NE(decoded.status().message().find("-4.25353e+37 is out of range"), std::string::npos)
      << decoded.status().message();
}

TEST(FuzzRegressionTest, GetIntegerRefusesWhatItsTypeCannotHold) {
  using nlohmann::json;
  EXPECT_EQ(fields::GetInteger<int64_t>(json(-7)), -7);
  EXPECT_EQ(fields::GetInteger<int64_t>(json(3.9)), 3);  // truncates, as get<int64_t>()
  EXPECT_EQ(fields::GetInteger<uint64_t>(json(18446744073709551615ull)), 18446744073709551615ull);
  EXPECT_EQ(fields::GetInteger<int32_t>(json(-2147483648.0)), INT32_MIN);
  EXPECT_THROW(fields::GetInteger<int64_t>(json(9223372036854775808.0)), json::out_of_range);
  EXPECT_THROW(fields::GetInteger<int64_t>(json(18446744073709551615ull)), json::out_of_range);
  EXPECT_THROW(fields::GetInteger<int64_t>(json(std::nan(""))), json::out_of_range);
  EXPECT_THROW(fields::GetInteger<uint64_t>(json(-1)), json::out_of_range);
  EXPECT_THROW(fields::GetInteger<uint64_t>(json(-0.5)), json::out_of_range);
  EXPECT_THROW(fields::GetInteger<int32_t>(json(2147483648)), json::out_of_range);
  EXPECT_THROW(fields::GetInteger<int64_t>(json("7")), json::type_error);
  EXPECT_THROW(fields::GetInteger<int64_t>(json(true)), json::type_error);
}

}  // namespace
}  // namespace tunebus
