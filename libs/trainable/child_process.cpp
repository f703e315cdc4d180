#include "libs/trainable/child_process.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <thread>

#include "libs/trainable/allowed_commands.hpp"

extern char** environ;

namespace tunebus::trainable {

namespace fs = std::filesystem;

namespace {

// The parent's environment with `overrides` set, as "NAME=value" strings. Errors:
// InvalidArgument.
Result<std::vector<std::string>> BuildEnv(
    const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::map<std::string, std::string> env = CurrentEnvironment();
  for (const auto& [name, value] : overrides) {
    if (Status s = CheckEnvironmentName(name); !s.ok()) return s;
    env[name] = value;
  }
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [name, value] : env) out.push_back(name + "=" + value);
  return out;
}

// In the forked child: async-signal-safe calls only. Writes errno to `error_fd` and exits 127
// when a step fails.
[[noreturn]] void RunChild(const char* program, char* const* argv, char* const* envp,
                           const char* working_dir, int output_fd, int error_fd,
                           int parent_death_signal, pid_t parent) {
  auto fail = [error_fd](int err) {
    [[maybe_unused]] ssize_t n = ::write(error_fd, &err, sizeof err);
    ::_exit(127);
  };
  if (parent_death_signal != 0) {
    if (::prctl(PR_SET_PDEATHSIG, parent_death_signal) != 0) fail(errno);
    // The parent died before prctl: nobody would send the signal.
    if (::getppid() != parent) ::_exit(128 + parent_death_signal);
  }
  if (::setpgid(0, 0) != 0) fail(errno);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);  // EINVAL for some
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  const int in = ::open("/dev/null", O_RDONLY);
  if (in < 0 || ::dup2(in, 0) < 0) fail(errno);
  const int out = output_fd >= 0 ? output_fd : ::open("/dev/null", O_WRONLY);
  if (out < 0 || ::dup2(out, 1) < 0 || ::dup2(out, 2) < 0) fail(errno);
  if (working_dir[0] != '\0' && ::chdir(working_dir) != 0) fail(errno);
  // Every descriptor above stderr closes at execve (error_fd stays usable until then).
  if (::syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC) != 0) {
    for (int fd = 3; fd < 1024; ++fd) {
      if (fd != error_fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
  }
  ::execve(program, argv, envp);
  fail(errno);
  ::_exit(127);  // not reached
}

}  // namespace

std::map<std::string, std::string> CurrentEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    const auto eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    env[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
  }
  return env;
}

Status CheckEnvironmentName(const std::string& name) {
  if (name.empty() || name.find('=') != std::string::npos || name.find('\0') != std::string::npos) {
    return Status::InvalidArgument(fmt::format("invalid environment variable name '{}'", name));
  }
  return Status::Ok();
}

std::vector<char*> NullTerminated(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

std::string ChildExit::Describe() const {
  return signal != 0 ? fmt::format("signal {}", signal) : fmt::format("exit code {}", exit_code);
}

Result<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(const Options& options) {
  if (options.argv.empty() || options.argv[0].empty()) {
    return Status::InvalidArgument("cannot start a process: the command is empty");
  }
  const std::string what = fmt::format("[{}]", fmt::join(options.argv, ", "));
  std::error_code ec;
  if (!options.working_dir.empty() && !fs::is_directory(options.working_dir, ec)) {
    return Status::Unavailable(
        fmt::format("cannot start {}: its folder {} does not exist", what, options.working_dir));
  }
  auto program = ResolveProgram(options.argv[0], options.working_dir);
  if (!program.ok()) {
    return Status::Unavailable(
        fmt::format("cannot start {}: {}", what, program.status().message()));
  }
  auto env = BuildEnv(options.env);
  if (!env.ok()) return env.status();
  std::vector<char*> argv = NullTerminated(options.argv);
  std::vector<char*> envp = NullTerminated(*env);

  int error_pipe[2];
  if (::pipe2(error_pipe, O_CLOEXEC) != 0) return Status::IoError("pipe2: " + ErrnoText(errno));
  UniqueFd error_read(error_pipe[0]);
  UniqueFd error_write(error_pipe[1]);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return Status::IoError("fork: " + ErrnoText(errno));
  if (pid == 0) {
    RunChild(program->path.c_str(), argv.data(), envp.data(), options.working_dir.c_str(),
             options.output_fd, error_write.get(), options.parent_death_signal, parent);
  }
  std::unique_ptr<ChildProcess> child(new ChildProcess(pid));
  error_write.Reset();
  int err = 0;
  ssize_t n;
  do {
    n = ::read(error_read.get(), &err, sizeof err);  // EOF once execve succeeded
  } while (n < 0 && errno == EINTR);
  if (n == sizeof err) {
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    child->exit_ = ChildExit{.exit_code = 127};
    std::string why = ErrnoText(err);
    if (err == ENOENT) why += " (no such file)";
    if (err == EACCES) why += " (not executable)";
    return Status::Unavailable(
        fmt::format("cannot start {}{}: {}", what,
                    options.working_dir.empty() ? "" : " in " + options.working_dir, why));
  }
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd >= 0) child->pidfd_.Reset(pidfd);
  return child;
}

ChildProcess::~ChildProcess() {
  if (exit_) return;
  Signal(SIGKILL);
  while (!Poll()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

std::optional<ChildExit> ChildProcess::Poll() {
  if (exit_) return exit_;
  // Peek first (WNOWAIT): while the zombie exists its pid, and so its process group id, cannot
  // be reused, so leftovers of the group (its own children) can be killed before reaping.
  siginfo_t info{};
  int r;
  do {
    r = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
  } while (r < 0 && errno == EINTR);
  if (r == 0 && info.si_pid != pid_) return std::nullopt;  // still running
  int st = 0;
  pid_t w = -1;
  if (r == 0) {
    ::kill(-pid_, SIGKILL);
    do {
      w = ::waitpid(pid_, &st, 0);  // does not block: it has exited
    } while (w < 0 && errno == EINTR);
  }
  if (w != pid_) {  // ECHILD: reaped elsewhere; how it ended is unknown
    exit_ = ChildExit{.exit_code = -1};
  } else if (WIFSIGNALED(st)) {
    exit_ = ChildExit{.signal = WTERMSIG(st)};
  } else {
    exit_ = ChildExit{.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1};
  }
  return exit_;
}

void ChildProcess::Signal(int signal) {
  if (exit_) return;
  ::kill(-pid_, signal);
  ::kill(pid_, signal);
}

ChildExit ChildProcess::Terminate(std::chrono::milliseconds grace) {
  Signal(SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (!Poll()) {
    if (std::chrono::steady_clock::now() >= deadline) Signal(SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return *exit_;
}

}  // namespace tunebus::trainable
