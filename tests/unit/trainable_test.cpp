// Tests of libs/trainable: the command trainable's process protocol (reports, decisions, exit,
// environment, kill) and the built-in mock/noop trainables. Each test is bounded by a deadline.
#include "libs/trainable/trainable.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include "libs/trainable/allowed_commands.hpp"
#include "libs/trainable/builtin_trainables.hpp"
#include "libs/trainable/command_trainable.hpp"
#include "tests/support/wait_until.hpp"

namespace tunebus::trainable {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

fs::path MakeTempDir() {
  std::string tmpl = (fs::temp_directory_path() / "tunebus_trainable_XXXXXX").string();
  EXPECT_NE(::mkdtemp(tmpl.data()), nullptr);
  return tmpl;
}

// Polls the trainable's fds (as the worker's loop does) until `done()` or the deadline.
bool PumpUntil(Trainable& t, const std::function<bool()>& done,
               std::chrono::milliseconds timeout = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::vector<pollfd> pfds;
    for (int fd : t.fds()) pfds.push_back({fd, POLLIN, 0});
    ::poll(pfds.data(), pfds.size(), 20);
    t.OnReadable();
  }
  return true;
}

// The next report, or nullopt if the trainable exited (or the deadline passed) first.
std::optional<Report> NextReport(Trainable& t) {
  PumpUntil(t, [&] { return t.has_report() || t.exited(); });
  return t.TakeReport();
}

bool WaitExit(Trainable& t) {
  return PumpUntil(t, [&] {
    while (t.has_report()) t.TakeReport();
    return t.exited();
  });
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class CommandTrainableTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir(); }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<CommandTrainable> Make(const std::string& script, nlohmann::json config = {}) {
    TrainableDef def;
    def.command = {"/bin/sh", "-c", script};
    def.working_dir = dir_.string();
    TrialSetup setup;
    setup.trial_id = "t1";
    setup.trial_dir = (dir_ / "trial").string();
    setup.config = config.is_null() ? nlohmann::json::object() : config;
    return std::make_unique<CommandTrainable>(def, setup);
  }

  fs::path dir_;
};

TEST_F(CommandTrainableTest, ReportsFlowAndDecisionsAreDelivered) {
  // The child reports three times and records each decision it reads; all arrive in order.
  auto t =
      Make(R"(for i in 1 2 3; do echo "{\"i\": $i}" >&3; read d <&4; echo "$d" >> got.txt; done)");
  ASSERT_TRUE(t->Start().ok());
  const Action actions[] = {Action::kContinue, Action::kCheckpoint, Action::kContinue};
  for (int i = 1; i <= 3; ++i) {
    auto r = NextReport(*t);
    ASSERT_TRUE(r.has_value()) << "report " << i;
    EXPECT_EQ(r->metrics["i"], i);
    EXPECT_GE(r->time_this_iter_s, 0.0);
    EXPECT_EQ(t->awaiting_decisions(), 1);
    ASSERT_TRUE(t->SendDecision(actions[i - 1]).ok());
  }
  ASSERT_TRUE(WaitExit(*t));
  EXPECT_TRUE(t->exit_status().ok) << t->exit_status().error;
  EXPECT_EQ(ReadFile(dir_ / "got.txt"), "continue\ncheckpoint\ncontinue\n");
}

TEST_F(CommandTrainableTest, StopDecisionMakesItExitZero) {
  // A child that loops forever exits 0 when told "stop" after its first report.
  auto t =
      Make(R"(while true; do echo '{"x": 1}' >&3; read d <&4; [ "$d" = stop ] && exit 0; done)");
  ASSERT_TRUE(t->Start().ok());
  ASSERT_TRUE(NextReport(*t).has_value());
  ASSERT_TRUE(t->SendDecision(Action::kStop).ok());
  ASSERT_TRUE(WaitExit(*t));
  EXPECT_TRUE(t->exit_status().ok);
  EXPECT_EQ(t->exit_status().exit_code, 0);
  EXPECT_FALSE(t->exit_status().killed);
}

TEST_F(CommandTrainableTest, NonZeroExitGivesErrorAndStderrTail) {
  // Exit code 3 after 30 stderr lines: the error names the code and the tail keeps the last 20.
  auto t = Make(
      R"(i=1; while [ $i -le 30 ]; do echo "line $i" >&2; i=$((i+1)); done; echo out; exit 3)");
  ASSERT_TRUE(t->Start().ok());
  ASSERT_TRUE(WaitExit(*t));
  const ExitStatus& es = t->exit_status();
  EXPECT_FALSE(es.ok);
  EXPECT_EQ(es.exit_code, 3);
  EXPECT_NE(es.error.find("exited with code 3"), std::string::npos) << es.error;
  EXPECT_NE(es.stderr_tail.find("line 30\n"), std::string::npos) << es.stderr_tail;
  EXPECT_NE(es.stderr_tail.find("line 11\n"), std::string::npos) << es.stderr_tail;
  EXPECT_EQ(es.stderr_tail.find("line 10\n"), std::string::npos) << es.stderr_tail;
  EXPECT_EQ(ReadFile(dir_ / "trial" / "stdout"), "out\n");
}

TEST_F(CommandTrainableTest, HeavyOutputGoesToTheFilesAndTheWorkerKeepsABoundedTail) {
  // 16 MiB on stdout and 16 MiB on stderr between two reports: the reports and decisions flow
  // (the worker never reads the output), the files hold it all, and the failure's stderr tail
  // is at most kStderrTailBytes, ending with the last line.
  auto t = Make(
      R"(echo '{"i": 1}' >&3; read d <&4; )"
      R"(head -c 16777216 /dev/zero | tr '\0' 'o'; head -c 16777216 /dev/zero | tr '\0' 'e' >&2; )"
      R"(echo >&2; echo '{"i": 2}' >&3; read d <&4; echo "last words" >&2; exit 1)");
  ASSERT_TRUE(t->Start().ok());
  for (int i = 1; i <= 2; ++i) {
    auto r = NextReport(*t);
    ASSERT_TRUE(r.has_value()) << "report " << i;
    EXPECT_EQ(r->metrics["i"], i);
    ASSERT_TRUE(t->SendDecision(Action::kContinue).ok());
  }
  ASSERT_TRUE(WaitExit(*t));
  const ExitStatus& es = t->exit_status();
  EXPECT_FALSE(es.ok);
  EXPECT_LE(es.stderr_tail.size(), kStderrTailBytes);
  EXPECT_NE(es.stderr_tail.find("last words"), std::string::npos) << es.stderr_tail.substr(0, 200);
  EXPECT_EQ(fs::file_size(dir_ / "trial" / "stdout"), 16777216u);
  EXPECT_GE(fs::file_size(dir_ / "trial" / "stderr"), 16777216u);
}

TEST_F(CommandTrainableTest, MissingCommandIsAStartErrorNamingIt) {
  // A command that is not on PATH, or a working dir that does not exist, fails Start() clearly.
  TrainableDef def;
  def.command = {"tunebus-no-such-command-xyz", "--flag"};
  TrialSetup setup;
  setup.trial_dir = (dir_ / "trial").string();
  CommandTrainable missing(def, setup);
  Status s = missing.Start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tunebus-no-such-command-xyz"), std::string::npos) << s.message();

  def.command = {"/bin/true"};
  def.working_dir = (dir_ / "nowhere").string();
  CommandTrainable no_dir(def, setup);
  s = no_dir.Start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("nowhere"), std::string::npos) << s.message();
}

TEST_F(CommandTrainableTest, MissingTrainableFilesAreAStartErrorPointingToTheFix) {
  // A worker on another host than the submitting one: the experiment's folder, or the script an
  // interpreter is given, or a program given as a path is not there. Start() names what is
  // missing and tells to mount the same folder (or use an image that holds it).
  TrialSetup setup;
  setup.trial_dir = (dir_ / "trial").string();
  auto start_error = [&](std::vector<std::string> command, std::string working_dir) {
    TrainableDef def;
    def.command = std::move(command);
    def.working_dir = std::move(working_dir);
    CommandTrainable t(def, setup);
    const Status s = t.Start();
    return s.ok() ? std::string() : s.message();
  };
  std::string e = start_error({"sh", "run.sh"}, (dir_ / "client-only").string());
  EXPECT_NE(e.find("the trainable's folder " + (dir_ / "client-only").string() +
                   " does not exist on this worker"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("mount that folder at the same path on every worker"), std::string::npos) << e;
  e = start_error({"sh", "run.sh"}, dir_.string());
  EXPECT_NE(e.find("cannot start command [sh run.sh]: run.sh does not exist in " + dir_.string() +
                   " on this worker"),
            std::string::npos)
      << e;
  e = start_error({"/usr/bin/python3", "-u", "-B", "sub/train.py", "--lr", "1"}, dir_.string());
  EXPECT_NE(e.find("sub/train.py does not exist in"), std::string::npos) << e;
  e = start_error({"./train", "--epochs", "3"}, dir_.string());
  EXPECT_NE(e.find("./train does not exist in"), std::string::npos) << e;
  EXPECT_NE(e.find("ship it (leave `working_dir` out, or name the folder)"), std::string::npos)
      << e;
}

TEST_F(CommandTrainableTest, CommandsWithoutAScriptFileAreNotMistakenForMissingOnes) {
  // Code given inline (-c, -m, -e), an option's value before the script, or a program on PATH
  // with arguments that are no files start as before.
  TrialSetup setup;
  setup.trial_dir = (dir_ / "trial").string();
  for (const std::vector<std::string>& command :
       std::vector<std::vector<std::string>>{{"sh", "-c", "exit 0"},
                                             {"python3", "-c", "pass"},
                                             {"python3", "-W", "ignore", "-c", "pass"},
                                             {"sh", "-e", "-c", "true run.py"},
                                             {"true", "missing.py"}}) {
    TrainableDef def;
    def.command = command;
    def.working_dir = dir_.string();
    CommandTrainable t(def, setup);
    const Status s = t.Start();
    EXPECT_TRUE(s.ok()) << command[0] << " " << command[1] << ": " << s.message();
  }
}

TEST_F(CommandTrainableTest, EnvironmentCarriesConfigDirsAndDevices) {
  // The child sees the config as JSON, its trial id and dirs, the GPU ids, what it was allocated
  // (whole units, as JSON), the worker's id and the extra env.
  TrainableDef def;
  def.command = {
      "/bin/sh", "-c",
      R"(printf '{"config": %s, "cuda": "%s", "id": "%s", "ckpt": "%s", "extra": "%s", "start": %s, )"
      R"("resources": %s, "worker": "%s"}\n' )"
      R"("$TUNEBUS_CONFIG" "$CUDA_VISIBLE_DEVICES" "$TUNEBUS_TRIAL_ID" "$TUNEBUS_CHECKPOINT_DIR" )"
      R"("$EXTRA" "$TUNEBUS_START_ITERATION" "$TUNEBUS_RESOURCES" "$TUNEBUS_WORKER_ID" >&3; )"
      R"(read d <&4)"};
  def.env = {{"EXTRA", "hello"}};
  TrialSetup setup;
  setup.trial_id = "trial_00007";
  setup.trial_dir = (dir_ / "trial").string();
  setup.config = {{"lr", 0.001}, {"name", "a \"quoted\" name"}, {"nested", {{"k", {1, 2}}}}};
  setup.gpu_ids = {"0", "2"};
  setup.resources = {{"cpu", 1.5}, {"gpu", 2}, {"memory", 1e9}};
  setup.worker_id = "w-7";
  setup.start_iteration = 4;
  CommandTrainable t(def, setup);
  ASSERT_TRUE(t.Start().ok());
  auto r = NextReport(t);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->metrics["config"], setup.config);
  EXPECT_EQ(r->metrics["cuda"], "0,2");
  EXPECT_EQ(r->metrics["resources"], nlohmann::json({{"cpu", 1.5}, {"gpu", 2}, {"memory", 1e9}}));
  EXPECT_EQ(r->metrics["worker"], "w-7");
  EXPECT_EQ(r->metrics["id"], "trial_00007");
  EXPECT_EQ(r->metrics["ckpt"], (dir_ / "trial" / "checkpoint_tmp").string());
  EXPECT_TRUE(fs::is_directory(dir_ / "trial" / "checkpoint_tmp"));
  EXPECT_EQ(r->metrics["extra"], "hello");
  EXPECT_EQ(r->metrics["start"], 4);
  ASSERT_TRUE(t.SendDecision(Action::kContinue).ok());
  ASSERT_TRUE(WaitExit(t));
  EXPECT_TRUE(t.exit_status().ok);
}

TEST_F(CommandTrainableTest, TheEnvironmentHoldsNoneOfTheWorkersOwnTunebusVariables) {
  // The worker runs with its keys and secrets in TUNEBUS_* variables (and a stale
  // TUNEBUS_TRIAL_ID): the trainable's environment has none of them, holds every trial variable
  // it needs with this attempt's values, TUNEBUS_PYTHON and other variables (HOME) as they were,
  // and the experiment's own `env` even when it is named TUNEBUS_*.
  struct Scoped {
    std::vector<std::string> names;
    void Set(const std::string& name, const std::string& value) {
      ::setenv(name.c_str(), value.c_str(), 1);
      names.push_back(name);
    }
    ~Scoped() {
      for (const auto& n : names) ::unsetenv(n.c_str());
    }
  } env;
  env.Set("TUNEBUS_KEYS_DIR", (dir_ / "keys").string());
  env.Set("TUNEBUS_KEY_NAME", "worker");
  env.Set("TUNEBUS_SECRET_TEST", "x");
  env.Set("TUNEBUS_TRIAL_ID", "stale");
  env.Set("TUNEBUS_RESTORE_DIR", "/stale");
  env.Set("TUNEBUS_PYTHON", "/opt/py/bin/python3");
  TrainableDef def;
  def.command = {"/bin/sh", "-c", "env > env.txt"};
  def.working_dir = dir_.string();
  def.env = {{"TUNEBUS_FROM_EXPERIMENT", "kept"}};
  TrialSetup setup;
  setup.trial_id = "t9";
  setup.trial_dir = (dir_ / "trial").string();
  CommandTrainable t(def, setup);
  ASSERT_TRUE(t.Start().ok());
  ASSERT_TRUE(WaitExit(t));
  ASSERT_TRUE(t.exit_status().ok) << t.exit_status().error;
  std::map<std::string, std::string> seen;
  std::istringstream lines(ReadFile(dir_ / "env.txt"));
  for (std::string line; std::getline(lines, line);) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) seen[line.substr(0, eq)] = line.substr(eq + 1);
  }
  for (const auto& [name, value] : seen) {
    if (!name.starts_with("TUNEBUS_") || name == "TUNEBUS_FROM_EXPERIMENT") continue;
    EXPECT_NE(std::find(kTrainableEnvironment.begin(), kTrainableEnvironment.end(), name),
              kTrainableEnvironment.end())
        << name << "=" << value;
  }
  EXPECT_EQ(seen.count("TUNEBUS_KEYS_DIR"), 0u);
  EXPECT_EQ(seen.count("TUNEBUS_KEY_NAME"), 0u);
  EXPECT_EQ(seen.count("TUNEBUS_SECRET_TEST"), 0u);
  EXPECT_EQ(seen.count("TUNEBUS_RESTORE_DIR"), 0u);  // not restoring
  for (const char* name : {"TUNEBUS_CONFIG", "TUNEBUS_EXPERIMENT", "TUNEBUS_TRIAL_ID",
                           "TUNEBUS_ATTEMPT", "TUNEBUS_TRIAL_DIR", "TUNEBUS_CHECKPOINT_DIR",
                           "TUNEBUS_START_ITERATION", "TUNEBUS_REPORT_FD", "TUNEBUS_DECISION_FD",
                           "TUNEBUS_RESOURCES", "TUNEBUS_WORKER_ID", "TUNEBUS_PYTHON"}) {
    EXPECT_EQ(seen.count(name), 1u) << name;
  }
  EXPECT_EQ(seen["TUNEBUS_PYTHON"], "/opt/py/bin/python3");
  EXPECT_EQ(seen["TUNEBUS_TRIAL_ID"], "t9");
  EXPECT_EQ(seen["TUNEBUS_FROM_EXPERIMENT"], "kept");
  if (const char* home = ::getenv("HOME")) {
    EXPECT_EQ(seen["HOME"], home);
  }
  EXPECT_EQ(TrainableBaseEnvironment().count("TUNEBUS_KEYS_DIR"), 0u);
}

TEST_F(CommandTrainableTest, AProgramOutsideTheAllowListIsRefusedBeforeItRuns) {
  // --allow-command allows only <dir>/allowed/* (and /opt/ml/*): other/train.sh is
  // Forbidden, naming the pattern list, and never runs; allowed/train.sh runs.
  fs::create_directories(dir_ / "allowed");
  fs::create_directories(dir_ / "other");
  for (const fs::path& p : {dir_ / "allowed" / "train.sh", dir_ / "other" / "train.sh"}) {
    std::ofstream(p) << "#!/bin/sh\ntouch ran-$(basename $(dirname $0))\n";
    ::chmod(p.c_str(), 0755);
  }
  const fs::path real = fs::canonical(dir_);
  auto allowed = AllowedCommands::Make({(real / "allowed").string() + "/*", "/opt/ml/*"});
  ASSERT_TRUE(allowed.ok());
  TrialSetup setup;
  setup.trial_dir = (dir_ / "trial").string();
  setup.allowed_commands = &*allowed;
  TrainableDef def;
  def.working_dir = dir_.string();
  def.command = {"other/train.sh"};
  CommandTrainable refused(def, setup);
  const Status s = refused.Start();
  EXPECT_EQ(s.code(), StatusCode::kForbidden);
  EXPECT_EQ(s.message(), "command " + (real / "other" / "train.sh").string() +
                             " is not allowed on this worker (--allow-command: " +
                             (real / "allowed").string() + "/*, /opt/ml/*)");
  EXPECT_EQ(refused.pid(), 0);
  EXPECT_TRUE(refused.fds().empty());
  def.command = {"./allowed/train.sh"};
  CommandTrainable ok(def, setup);
  ASSERT_TRUE(ok.Start().ok());
  ASSERT_TRUE(WaitExit(ok));
  EXPECT_TRUE(ok.exit_status().ok) << ok.exit_status().error;
  EXPECT_TRUE(fs::exists(dir_ / "ran-allowed"));
  EXPECT_FALSE(fs::exists(dir_ / "ran-other"));
}

TEST_F(CommandTrainableTest, EmptyGpuListExportsEmptyCudaVisibleDevices) {
  // No GPUs assigned: CUDA_VISIBLE_DEVICES is set, to the empty string.
  auto t = Make(
      R"(if [ -n "${CUDA_VISIBLE_DEVICES+set}" ]; then echo "{\"v\": \"[$CUDA_VISIBLE_DEVICES]\"}" >&3; fi)");
  ASSERT_TRUE(t->Start().ok());
  auto r = NextReport(*t);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->metrics["v"], "[]");
}

TEST_F(CommandTrainableTest, KillKillsTheWholeProcessGroup) {
  // The child starts a grandchild; Kill() ends both (SIGKILL to the process group).
  auto t = Make(R"(sleep 300 & echo "{\"grandchild\": $!}" >&3; wait)");
  ASSERT_TRUE(t->Start().ok());
  auto r = NextReport(*t);
  ASSERT_TRUE(r.has_value());
  const pid_t grandchild = r->metrics["grandchild"].get<pid_t>();
  t->Kill();
  ASSERT_TRUE(WaitExit(*t));
  const ExitStatus& es = t->exit_status();
  EXPECT_FALSE(es.ok);
  EXPECT_TRUE(es.killed);
  EXPECT_EQ(es.signal, SIGKILL);
  EXPECT_NE(es.error.find("killed by signal 9"), std::string::npos) << es.error;
  // The grandchild is gone (or a zombie waiting for init to reap it) within a bounded time.
  EXPECT_TRUE(test_support::WaitUntil(
      "grandchild " + std::to_string(grandchild) + " is gone",
      [&] {
        const std::string stat = ReadFile("/proc/" + std::to_string(grandchild) + "/stat");
        const auto paren = stat.rfind(')');
        return stat.empty() || (paren != std::string::npos && stat.substr(paren + 2, 1) == "Z");
      },
      5s, 20ms));
}

TEST_F(CommandTrainableTest, ReportLineThatIsNotAJsonObjectFailsTheTrial) {
  // A non-JSON report line kills the child and the error quotes the line.
  auto t = Make(R"(echo 'epoch 1 accuracy 0.5' >&3; sleep 30)");
  ASSERT_TRUE(t->Start().ok());
  ASSERT_TRUE(WaitExit(*t));
  EXPECT_FALSE(t->exit_status().ok);
  EXPECT_NE(t->exit_status().error.find("epoch 1 accuracy 0.5"), std::string::npos)
      << t->exit_status().error;
}

TEST_F(CommandTrainableTest, ExitWithoutReportsAfterLastDecisionIsOk) {
  // A child that reports once, reads its decision and exits 0 ends ok with no stray reports.
  auto t = Make(R"(echo '{"done": true}' >&3; read d <&4; exit 0)");
  ASSERT_TRUE(t->Start().ok());
  auto r = NextReport(*t);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->metrics["done"], true);
  EXPECT_TRUE(t->SendDecision(Action::kContinue).ok());
  ASSERT_TRUE(PumpUntil(*t, [&] { return t->exited(); }));
  EXPECT_TRUE(t->exit_status().ok);
  EXPECT_FALSE(t->SendDecision(Action::kContinue).ok());
}

TEST_F(CommandTrainableTest, PythonHelperSpeaksTheProtocol) {
  // clients/python/tunebus (the package's trainable helper) under a real CommandTrainable: config
  // round trip, reports with the decision returned, "checkpoint" visible to the script, "stop"
  // exits 0.
  const fs::path helper = fs::path(TUNEBUS_TEST_SOURCE_DIR) / "clients" / "python";
  if (::access("/usr/bin/python3", X_OK) != 0 || !fs::exists(helper / "tunebus" / "__init__.py")) {
    GTEST_SKIP() << "needs /usr/bin/python3 and clients/python/tunebus/__init__.py";
  }
  std::ofstream(dir_ / "script.py")
      << "import sys\nsys.path.insert(0, " << nlohmann::json(helper.string()).dump() << ")\n"
      << R"(import tunebus
cfg = tunebus.config()
last = None
for i in range(100):
    last = tunebus.report(step=i, lr=cfg["lr"], last=last, nan=float("nan"))
)";
  TrainableDef def;
  def.command = {"/usr/bin/python3", "script.py"};
  def.working_dir = dir_.string();
  TrialSetup setup;
  setup.trial_dir = (dir_ / "trial").string();
  setup.config = {{"lr", 0.5}};
  CommandTrainable t(def, setup);
  ASSERT_TRUE(t.Start().ok());
  const Action actions[] = {Action::kContinue, Action::kCheckpoint, Action::kStop};
  nlohmann::json expected_last = nullptr;
  for (int i = 0; i < 3; ++i) {
    auto r = NextReport(t);
    ASSERT_TRUE(r.has_value()) << "report " << i << ": " << ReadFile(dir_ / "trial" / "stderr");
    EXPECT_EQ(r->metrics["step"], i);
    EXPECT_EQ(r->metrics["lr"], 0.5);
    EXPECT_EQ(r->metrics["last"], expected_last);
    EXPECT_TRUE(r->metrics["nan"].is_null());
    ASSERT_TRUE(t.SendDecision(actions[i]).ok());
    expected_last = ActionName(actions[i]);
  }
  ASSERT_TRUE(WaitExit(t));
  EXPECT_TRUE(t.exit_status().ok) << t.exit_status().error << t.exit_status().stderr_tail;
  EXPECT_EQ(t.exit_status().exit_code, 0);
}

// ---- built-in trainables ----

std::unique_ptr<Trainable> MakeBuiltin(const std::string& name, nlohmann::json config,
                                       int64_t attempt = 1, int64_t start_iteration = 0) {
  TrialSetup setup;
  setup.trial_id = "m";
  setup.attempt = attempt;
  setup.config = std::move(config);
  setup.start_iteration = start_iteration;
  setup.trial_dir = (fs::temp_directory_path() / "tunebus_builtin_test").string();
  auto t = MakeBuiltinTrainable(name, setup);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
}

// Runs a builtin answering "continue" to every report; returns its reports.
std::vector<nlohmann::json> RunToEnd(Trainable& t) {
  std::vector<nlohmann::json> out;
  EXPECT_TRUE(t.Start().ok());
  while (auto r = NextReport(t)) {
    out.push_back(r->metrics);
    EXPECT_TRUE(t.SendDecision(Action::kContinue).ok());
  }
  EXPECT_TRUE(t.exited());
  return out;
}

TEST(MockTrainableTest, CurveIsDeterministicAndEndsWithDone) {
  // Two runs of the same config give identical reports following the documented formula.
  const nlohmann::json config = {{"lr", 0.05}, {"mock_iterations", 4}};
  auto a = RunToEnd(*MakeBuiltin("mock", config));
  auto b = RunToEnd(*MakeBuiltin("mock", config));
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a, b);
  const double s = 1.0 / (1.0 + 10 * 0.05 * 1);
  EXPECT_DOUBLE_EQ(a[0]["mean_accuracy"].get<double>(), 1 - s);
  EXPECT_DOUBLE_EQ(a[0]["loss"].get<double>(), s);
  EXPECT_DOUBLE_EQ(a[0]["episode_reward_mean"].get<double>(), 100 * (1 - s));
  EXPECT_LT(a[0]["mean_accuracy"].get<double>(), a[3]["mean_accuracy"].get<double>());
  EXPECT_FALSE(a[2].contains("done"));
  EXPECT_EQ(a[3]["done"], true);
}

TEST(MockTrainableTest, StartIterationContinuesTheCurve) {
  // A restored attempt (start_iteration 5) reports iteration 6 of the same curve first.
  auto t = MakeBuiltin("mock", {{"lr", 0.1}, {"mock_iterations", 6}}, 2, 5);
  auto reports = RunToEnd(*t);
  ASSERT_EQ(reports.size(), 1u);
  nlohmann::json expected = MockMetrics(0.1, 6);
  expected["done"] = true;
  EXPECT_EQ(reports[0], expected);
}

TEST(MockTrainableTest, MockErrorFailsOnlyTheFirstAttempt) {
  // mock_error fails at iteration 2 on attempt 1, and a retry (attempt 2) runs to the end.
  const nlohmann::json config = {{"mock_error", true}, {"mock_iterations", 3}};
  auto first = MakeBuiltin("mock", config, 1);
  EXPECT_EQ(RunToEnd(*first).size(), 1u);
  EXPECT_FALSE(first->exit_status().ok);
  EXPECT_NE(first->exit_status().error.find("iteration 2"), std::string::npos);
  auto retry = MakeBuiltin("mock", config, 2);
  EXPECT_EQ(RunToEnd(*retry).size(), 3u);
  EXPECT_TRUE(retry->exit_status().ok);
}

TEST(MockTrainableTest, PersistentErrorFailsEveryAttempt) {
  // With persistent_error the retry fails too, at mock_error_iteration.
  const nlohmann::json config = {
      {"mock_error", true}, {"persistent_error", true}, {"mock_error_iteration", 3}};
  auto retry = MakeBuiltin("mock", config, 2);
  EXPECT_EQ(RunToEnd(*retry).size(), 2u);
  EXPECT_FALSE(retry->exit_status().ok);
}

TEST(MockTrainableTest, StopAndKillEndIt) {
  // "stop" ends the mock ok; Kill() while it sleeps ends it as killed.
  auto t = MakeBuiltin("mock", {{"mock_iterations", 100}});
  ASSERT_TRUE(t->Start().ok());
  ASSERT_TRUE(NextReport(*t).has_value());
  ASSERT_TRUE(t->SendDecision(Action::kStop).ok());
  EXPECT_TRUE(t->exited());
  EXPECT_TRUE(t->exit_status().ok);

  auto slow = MakeBuiltin("mock", {{"sleep_s", 30}});
  ASSERT_TRUE(slow->Start().ok());
  slow->Kill();
  EXPECT_TRUE(slow->exited());
  EXPECT_TRUE(slow->exit_status().killed);
  EXPECT_TRUE(slow->fds().empty());
}

TEST(MockTrainableTest, WrongConfigTypeIsAStartError) {
  // A config key of the wrong type is rejected at Start() naming the key.
  auto t = MakeBuiltin("mock", {{"sleep_s", "slow"}});
  Status s = t->Start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("sleep_s"), std::string::npos);
}

TEST(NoopTrainableTest, ReportsIterationValuesUntilDone) {
  // noop reports {"value": t} for each iteration and marks the last one done; from the second
  // report on it carries the latency of the previous decision.
  auto reports = RunToEnd(*MakeBuiltin("noop", {{"mock_iterations", 2}}));
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0], (nlohmann::json{{"value", 1}}));
  EXPECT_EQ(reports[1]["value"], 2);
  EXPECT_EQ(reports[1]["done"], true);
  EXPECT_GE(reports[1]["decision_latency_s"].get<double>(), 0.0);
}

TEST(NoopTrainableTest, NoopMetricsPadsTheResult) {
  // noop_metrics N makes each report carry N metrics: value and m1..m{N-1}.
  auto reports = RunToEnd(*MakeBuiltin("noop", {{"noop_metrics", 10}}));
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].size(), 11u);  // 10 metrics + done
  EXPECT_EQ(reports[0]["m9"], 10);
}

TEST(MakeTrainableTest, UnknownBuiltinIsRejected) {
  // An unknown builtin name is an error listing the known ones.
  TrainableDef def;
  def.builtin = "branin2";
  auto t = MakeTrainable(def, TrialSetup{});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("branin2"), std::string::npos);
}

}  // namespace
}  // namespace tunebus::trainable
