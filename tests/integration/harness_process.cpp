// The harness's child processes (tests/integration/harness.hpp: Process): spawning with logs
// kept per restart, waiting, signalling, and killing every child still running when the test
// process itself dies of a signal.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "tests/integration/harness.hpp"

extern char** environ;

namespace tunebus::testing {

namespace {

// ---------------------------------------------------------------------------------------------
// Children still running, for the fatal-signal handler (async-signal-safe: atomics only).

constexpr size_t kMaxChildren = 1024;
std::array<std::atomic<pid_t>, kMaxChildren> g_children{};

void RegisterChild(pid_t pid) {
  for (auto& slot : g_children) {
    pid_t expected = 0;
    if (slot.compare_exchange_strong(expected, pid)) return;
  }
}

void UnregisterChild(pid_t pid) {
  for (auto& slot : g_children) {
    pid_t expected = pid;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

extern "C" void KillChildrenAndDie(int signo) {
  for (auto& slot : g_children) {
    const pid_t pid = slot.load();
    if (pid > 0) ::kill(pid, SIGKILL);
  }
  // SA_RESETHAND restored the default action: the re-raised signal ends the process.
  ::raise(signo);
}

void InstallFatalSignalHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_handler = KillChildrenAndDie;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) {
      ::sigaction(s, &sa, nullptr);
    }
  });
}

int DecodeWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

namespace {
// A restarted process's earlier log is kept beside it as <log>.1, <log>.2, ... (oldest first).
void KeepPreviousLog(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return;
  for (int n = 1;; ++n) {
    fs::path kept = path;
    kept += "." + std::to_string(n);
    if (!fs::exists(kept, ec)) {
      fs::rename(path, kept, ec);
      return;
    }
  }
}
}  // namespace

std::unique_ptr<Process> Process::Spawn(const Options& o) {
  InstallFatalSignalHandlers();
  fs::create_directories(o.log_dir);
  std::unique_ptr<Process> p(new Process());
  p->name_ = o.name;
  p->stdout_path_ = o.log_dir / (o.name + ".stdout");
  p->stderr_path_ = o.log_dir / (o.name + ".stderr");
  KeepPreviousLog(p->stdout_path_);
  KeepPreviousLog(p->stderr_path_);

  std::vector<std::string> argv_storage;
  argv_storage.push_back(o.binary.string());
  argv_storage.insert(argv_storage.end(), o.args.begin(), o.args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv(*e);
    const auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = kv.substr(0, eq);
    if (key.rfind("TUNEBUS_", 0) == 0 && key != "TUNEBUS_BIN_DIR" && key != "TUNEBUS_SOURCE_DIR")
      continue;
    env[key] = kv.substr(eq + 1);
  }
  // Short reconnect backoff (production: 1 s doubling to 30 s) so restarts in tests take
  // fractions of a second; a test may set its own in o.env.
  env["TUNEBUS_RECONNECT_MS"] = "100";
  env["TUNEBUS_RECONNECT_MAX_MS"] = "1000";
  for (const auto& [k, v] : o.env) env[k] = v;
  std::vector<std::string> env_storage;
  for (const auto& [k, v] : env) env_storage.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, p->stdout_path_.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, p->stderr_path_.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!o.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, o.cwd.c_str());

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty, defaults;
  sigemptyset(&empty);
  sigemptyset(&defaults);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);  // own group: a terminal's Ctrl-C reaches only the test
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);

  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    throw std::runtime_error("posix_spawn " + o.binary.string() + ": " + std::strerror(rc));
  }
  p->pid_ = pid;
  RegisterChild(pid);
  return p;
}

Process::~Process() {
  if (pid_ > 0 && !exit_code_) Kill();
}

void Process::Reaped(int status) {
  exit_code_ = DecodeWaitStatus(status);
  UnregisterChild(pid_);
}

bool Process::Running() {
  if (exit_code_) return false;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    Reaped(status);
    return false;
  }
  if (r < 0 && errno == ECHILD) {  // reaped by someone else: treat as gone
    exit_code_ = -1;
    UnregisterChild(pid_);
    return false;
  }
  return true;
}

std::optional<int> Process::Wait(Millis timeout) {
  WaitFor([this] { return !Running(); }, timeout, Millis{5});
  return exit_code_;
}

void Process::Signal(int signo) {
  if (Running()) ::kill(pid_, signo);
}

int Process::Stop(Millis grace) {
  Signal(SIGTERM);
  if (Wait(grace)) return *exit_code_;
  return Kill();
}

int Process::Kill() {
  if (exit_code_) return *exit_code_;
  ::kill(pid_, SIGKILL);
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) {
    Reaped(status);
  } else {
    exit_code_ = -1;
    UnregisterChild(pid_);
  }
  return *exit_code_;
}

}  // namespace tunebus::testing
