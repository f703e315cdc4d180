// CURVE on the links the scheduler opens itself: an external searcher on tcp://
// (clients/python/tunebus/searcher.py wrapping Optuna's RandomSampler, run by /usr/bin/python3
// with TUNEBUS_KEYS_DIR) beside the four services started with keys from `tunectl keygen
// --suite`. The scheduler connects only to a searcher whose public key (the experiment's
// search.server_key, else <keys-dir>/searcher.key) its allow-list holds with role searcher: an
// authorized searcher serves the whole run and refuses a plaintext client; a searcher whose key
// is not in the allow-list, or is there with another role, gets no request, and `tunectl status`
// says why while the searcher's backoff goes on, until the key is authorized and the scheduler
// SIGHUPed. Skipped when /usr/bin/python3 cannot import zmq, msgpack and optuna.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "tests/fault/fault_support.hpp"
#include "tests/integration/harness.hpp"

namespace tunebus::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kPython = "/usr/bin/python3";
constexpr int kTrials = 4;

// `tunectl keygen` as a user runs it; fails the test if it does not exit 0.
void Keygen(const std::vector<std::string>& args) {
  std::vector<std::string> full = {"keygen"};
  full.insert(full.end(), args.begin(), args.end());
  auto r = RunTunectl(full);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
}

// The suite's keys (all authorized) plus `extra` keygen calls, in <dir>/keys.
std::string MakeKeys(const fs::path& dir, const std::vector<std::vector<std::string>>& extra) {
  const std::string keys = (dir / "keys").string();
  Keygen({"--suite", "--dir", keys});
  for (std::vector<std::string> args : extra) {
    args.insert(args.end(), {"--dir", keys});
    Keygen(args);
  }
  return keys;
}

class SecureLinksTest : public ::testing::Test {
 protected:
  // Starts the services with keys made by `keygen` (beyond the suite's).
  void StartCluster(const std::vector<std::vector<std::string>>& keygen) {
    keys_ = MakeKeys(keys_dir_.path(), keygen);
    ClusterOptions o;
    o.workers = 1;
    o.keys_dir = keys_;
    cluster_ = std::make_unique<Cluster>(o);
    if (!PythonImports(cluster_->dir() / "logs", "zmq, msgpack, optuna")) {
      GTEST_SKIP() << kPython << " cannot import zmq, msgpack and optuna";
    }
    ASSERT_TRUE(cluster_->Start());
  }

  // Starts tunebus/searcher.py serving CURVE on a loopback port with keypair `key_name`.
  ::testing::AssertionResult StartSearcher(const std::string& key_name) {
    Process::Options o{.name = "searcher-" + key_name,
                       .binary = kPython,
                       .args = {(SourceDir() / "clients/python/tunebus/searcher.py").string(),
                                "--sampler", "random", "--seed", "1", "--endpoint", kAnyLoopback},
                       .env = {{"TUNEBUS_KEYS_DIR", keys_}, {"TUNEBUS_KEY_NAME", key_name}},
                       .log_dir = cluster_->dir() / "logs"};
    Ready ready;
    auto r = SpawnReady(o, cluster_->dir() / "ready" / (o.name + ".json"), searcher_, ready, 60s);
    if (r) endpoint_ = ready.endpoint("endpoint");
    return r;
  }

  // An experiment of kTrials trials whose configs come from the searcher; `server_key` "" leaves
  // the key out (the scheduler's default <keys-dir>/searcher.key).
  fs::path WriteExperiment(const std::string& name, const std::string& server_key) {
    const fs::path file = cluster_->dir() / (name + ".yaml");
    std::string search = "  type: external\n  endpoint: " + endpoint_ +
                         "\n  timeout_s: 2\n  backoff_initial_s: 0.2\n  backoff_max_s: 0.5\n";
    if (!server_key.empty()) search += "  server_key: \"" + server_key + "\"\n";
    WriteFile(file, ExternalSearchExperiment(name, kTrials, search, cluster_->dir() / "results"));
    return file;
  }

  json Summary() { return cluster_->Ctl({"-o", "json", "status"}, 10s).Json(); }
  json Searcher() {
    const json s = Summary();
    return s.is_object() && s.contains("searcher") ? s["searcher"] : json::object();
  }

  // Waits until status shows the searcher unavailable with an error holding `needle`; returns
  // that error ("" on timeout).
  std::string WaitRefused(const std::string& needle) {
    std::string error;
    WaitFor(
        [&] {
          const json s = Searcher();
          error = s.value("last_error", "");
          return s.value("state", "") == "unavailable" && error.find(needle) != std::string::npos;
        },
        30s, 100ms);
    return error.find(needle) != std::string::npos ? error : "";
  }

  void ExpectFinished() {
    const json summary = WaitFinished(*cluster_, 120s);
    ASSERT_TRUE(summary.is_object() && summary.value("finished", false))
        << summary.dump() << cluster_->LogTails() << Tail(searcher_->stdout_path())
        << Tail(searcher_->stderr_path());
    EXPECT_EQ(summary.value("status", ""), "FINISHED") << summary.dump();
    EXPECT_EQ(summary["counts"].value("TERMINATED", 0), kTrials) << summary.dump();
    EXPECT_EQ(summary["searcher"].value("suggested", 0), kTrials) << summary.dump();
  }

  TempDir keys_dir_;
  std::string keys_;
  std::unique_ptr<Cluster> cluster_;
  std::unique_ptr<Process> searcher_;
  std::string endpoint_;
};

TEST_F(SecureLinksTest, AuthorizedSearcherOnCurveServesTheWholeRun) {
  // The searcher's key is `tunectl keygen searcher --role searcher --authorize`: the scheduler
  // finds it as <keys-dir>/searcher.key (no server_key), its allow-list holds it, and the run
  // completes over CURVE. The searcher answers nobody without the scheduler's key.
  StartCluster({{"searcher", "--role", "searcher", "--authorize"}});
  ASSERT_TRUE(StartSearcher("searcher"));
  const std::string journal = SubmitDetached(*cluster_, WriteExperiment("curved", ""), "curved");
  ASSERT_FALSE(journal.empty());
  ExpectFinished();
  EXPECT_GE(Searcher().value("sessions", 1), 1);
  EXPECT_NE(searcher_->Output().find("serving random on tcp://127.0.0.1:"), std::string::npos)
      << searcher_->Output();

  // A plaintext client's hello gets no answer: the searcher serves CURVE only.
  zmq::context_t ctx;
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.connect(endpoint_);
  const std::vector<uint8_t> hello = json::to_msgpack(
      json{{"v", 1}, {"type", "hello"}, {"id", 1}, {"session", "x"}, {"experiment", "e"}});
  (void)dealer.send(zmq::buffer(hello.data(), hello.size()), zmq::send_flags::dontwait);
  zmq::pollitem_t item{dealer.handle(), 0, ZMQ_POLLIN, 0};
  EXPECT_EQ(zmq::poll(&item, 1, std::chrono::milliseconds(1000)), 0);
}

TEST_F(SecureLinksTest, SearcherKeyOutsideTheAllowListIsRefusedUntilAuthorized) {
  // The searcher serves with key "rogue" (role searcher, not authorized), named by its key file
  // in search.server_key: status shows the refusal naming the key and the role, no trial is
  // added, and the backoff keeps trying. Authorizing the key and SIGHUPing the scheduler lets
  // the next attempt through and the run completes.
  StartCluster({{"rogue", "--role", "searcher"}});
  ASSERT_TRUE(StartSearcher("rogue"));
  const fs::path rogue_key = fs::path(keys_) / "rogue.key";
  const std::string journal =
      SubmitDetached(*cluster_, WriteExperiment("refused", rogue_key.string()), "refused");
  ASSERT_FALSE(journal.empty());
  const std::string error = WaitRefused("is not in the scheduler's allow-list");
  ASSERT_FALSE(error.empty()) << Summary().dump() << cluster_->LogTails();
  EXPECT_NE(error.find("forbidden"), std::string::npos) << error;
  EXPECT_NE(error.find(rogue_key.string()), std::string::npos) << error;
  EXPECT_NE(error.find("needs a key with role operator or searcher"), std::string::npos) << error;
  EXPECT_EQ(TrialsAdded(Summary()), 0);
  EXPECT_EQ(searcher_->Output().find("session"), std::string::npos) << searcher_->Output();
  const int64_t retries = Searcher().value("retries", int64_t{0});
  EXPECT_TRUE(WaitFor([&] { return Searcher().value("retries", int64_t{0}) > retries; }, 10s))
      << Searcher().dump();

  fs::copy_file(rogue_key, fs::path(keys_) / "authorized" / "rogue.key");
  cluster_->process("scheduler")->Signal(SIGHUP);
  ExpectFinished();
}

TEST_F(SecureLinksTest, SearcherKeyWithAnotherRoleIsRefused) {
  // A key the allow-list holds as a viewer's may not serve search: its Z85 public key given
  // inline as search.server_key is refused with the role it has and the roles it needs.
  StartCluster({{"peek", "--role", "viewer", "--authorize"}});
  ASSERT_TRUE(StartSearcher("peek"));
  const std::string text = ReadFile(fs::path(keys_) / "peek.key");
  const size_t at = text.find("public-key = \"");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string z85 = text.substr(at + 14, 40);
  const std::string journal = SubmitDetached(*cluster_, WriteExperiment("viewer", z85), "viewer");
  ASSERT_FALSE(journal.empty());
  const std::string error = WaitRefused("has role viewer");
  ASSERT_FALSE(error.empty()) << Summary().dump() << cluster_->LogTails();
  EXPECT_NE(error.find("its key peek has role viewer; a searcher needs role operator or searcher"),
            std::string::npos)
      << error;
  EXPECT_EQ(TrialsAdded(Summary()), 0);
}

}  // namespace
}  // namespace tunebus::testing
