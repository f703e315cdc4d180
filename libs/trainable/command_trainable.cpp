#include "libs/trainable/command_trainable.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>

#include "libs/trainable/allowed_commands.hpp"
#include "libs/trainable/child_process.hpp"

namespace tunebus::trainable {

namespace fs = std::filesystem;

namespace {

constexpr size_t kErrorLineBytes = 200;

std::string Truncate(std::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  return std::string(s.substr(0, max)) + "...";
}

// Moves `fd` to a descriptor >= 10 (close-on-exec) so the child's dup2 onto 0..4 never
// clobbers a source descriptor.
Result<UniqueFd> MoveHigh(int fd) {
  UniqueFd original(fd);
  const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 10);
  if (high < 0) return Status::IoError("fcntl(F_DUPFD_CLOEXEC): " + ErrnoText(errno));
  return UniqueFd(high);
}

Result<UniqueFd> OpenAppend(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status::IoError(fmt::format("cannot open {}: {}", path.string(), ErrnoText(errno)));
  return MoveHigh(fd);
}

// RAII for the posix_spawn attribute objects.
struct SpawnAttrs {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  SpawnAttrs() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~SpawnAttrs() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
};

// What a worker that cannot see the experiment's files must change (docs/how-to/deploy.md).
constexpr char kSameFilesHint[] =
    "a command trainable whose working_dir is not shipped (`working_dir: false`, or a submission "
    "without one) runs at the path its folder has on the host that submitted it: ship it (leave "
    "`working_dir` out, or name the folder), or mount that folder at the same path on every "
    "worker";

bool IsInterpreter(const std::string& program) {
  static const std::regex kInterpreter(
      "(sh|bash|dash|zsh|ksh|python[0-9.]*|pypy[0-9.]*|perl|ruby|node|Rscript|julia)");
  return std::regex_match(fs::path(program).filename().string(), kInterpreter);
}

bool HasScriptExtension(const std::string& arg) {
  static const std::regex kScript(".*\\.(py|sh|bash|R|r|jl|js|mjs|pl|rb)");
  return std::regex_match(arg, kScript);
}

// The file of `command` that does not exist in `workdir`, if any: the program when it is a path,
// or the script an interpreter is given (its first argument, or the first non-option argument
// that looks like a script). Options that take code instead of a file (-c, -m, -e, -) end the
// search.
std::optional<std::string> MissingFile(const std::vector<std::string>& command,
                                       const std::string& workdir) {
  auto missing = [&](const std::string& path) {
    std::error_code ec;
    const fs::path p = fs::path(path).is_absolute() ? fs::path(path) : fs::path(workdir) / path;
    return !fs::exists(p, ec);
  };
  if (command[0].find('/') != std::string::npos && missing(command[0])) return command[0];
  if (!IsInterpreter(command[0])) return std::nullopt;
  for (size_t i = 1; i < command.size(); ++i) {
    const std::string& a = command[i];
    if (a == "-c" || a == "-m" || a == "-e" || a == "-") return std::nullopt;
    if (a.empty() || a[0] == '-') continue;
    if ((i == 1 || HasScriptExtension(a)) && missing(a)) return a;
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

std::map<std::string, std::string> TrainableBaseEnvironment() {
  std::map<std::string, std::string> env = CurrentEnvironment();
  std::erase_if(env, [](const auto& entry) {
    const std::string& name = entry.first;
    return name.starts_with("TUNEBUS_") &&
           std::find(kTrainableEnvironment.begin(), kTrainableEnvironment.end(), name) ==
               kTrainableEnvironment.end();
  });
  return env;
}

CommandTrainable::CommandTrainable(TrainableDef def, TrialSetup setup)
    : def_(std::move(def)), setup_(std::move(setup)) {}

CommandTrainable::~CommandTrainable() {
  if (pid_ > 0 && !reaped_) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    int st = 0;
    while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
  }
}

Result<std::vector<std::string>> CommandTrainable::BuildEnv() const {
  std::map<std::string, std::string> env = TrainableBaseEnvironment();
  for (const auto& [name, value] : def_.env) {
    if (Status s = CheckEnvironmentName(name); !s.ok()) return s;
    env[name] = value;
  }
  const fs::path dir(setup_.trial_dir);
  env["TUNEBUS_CONFIG"] = setup_.config.dump();
  env["TUNEBUS_EXPERIMENT"] = setup_.experiment;
  env["TUNEBUS_TRIAL_ID"] = setup_.trial_id;
  env["TUNEBUS_ATTEMPT"] = std::to_string(setup_.attempt);
  env["TUNEBUS_TRIAL_DIR"] = setup_.trial_dir;
  env["TUNEBUS_CHECKPOINT_DIR"] = (dir / "checkpoint_tmp").string();
  if (!setup_.restore_dir.empty()) {
    env["TUNEBUS_RESTORE_DIR"] = setup_.restore_dir;
  } else {
    env.erase("TUNEBUS_RESTORE_DIR");
  }
  env["TUNEBUS_START_ITERATION"] = std::to_string(setup_.start_iteration);
  env["TUNEBUS_REPORT_FD"] = std::to_string(kChildReportFd);
  env["TUNEBUS_DECISION_FD"] = std::to_string(kChildDecisionFd);
  env["TUNEBUS_RESOURCES"] = nlohmann::json(setup_.resources).dump();
  env["TUNEBUS_WORKER_ID"] = setup_.worker_id;
  env["CUDA_VISIBLE_DEVICES"] = fmt::format("{}", fmt::join(setup_.gpu_ids, ","));
  env.emplace("PYTHONUNBUFFERED", "1");
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [name, value] : env) out.push_back(name + "=" + value);
  return out;
}

Status CommandTrainable::Start() {
  if (pid_ != 0) return Status::FailedPrecondition("trainable already started");
  const std::string what = fmt::format("command [{}]", fmt::join(def_.command, " "));
  if (def_.command.empty() || def_.command[0].empty()) {
    return Status::InvalidArgument("cannot start trainable: the command is empty");
  }
  const fs::path dir(setup_.trial_dir);
  std::error_code ec;
  fs::create_directories(dir / "checkpoint_tmp", ec);
  if (ec)
    return Status::IoError(
        fmt::format("cannot create trial dir {}: {}", dir.string(), ec.message()));
  const std::string workdir = def_.working_dir.empty() ? setup_.trial_dir : def_.working_dir;
  if (!fs::is_directory(workdir, ec)) {
    return Status::Unavailable(
        fmt::format("cannot start {}: the trainable's folder {} does not exist on this worker; {}",
                    what, workdir, kSameFilesHint));
  }
  if (auto file = MissingFile(def_.command, workdir)) {
    return Status::Unavailable(
        fmt::format("cannot start {}: {} does not exist in {} on this worker; {}", what, *file,
                    workdir, kSameFilesHint));
  }
  auto program = ResolveProgram(def_.command[0], workdir);
  if (!program.ok()) {
    std::string why = program.status().message();
    if (def_.command[0].find('/') == std::string::npos) {
      why += " (install it on this worker, e.g. in the trial-worker image)";
    }
    return Status::Unavailable(fmt::format("cannot start {} in {}: {}", what, workdir, why));
  }
  if (setup_.allowed_commands != nullptr) {
    if (Status allowed = setup_.allowed_commands->Check(*program); !allowed.ok()) return allowed;
  }
  auto env = BuildEnv();
  if (!env.ok()) return env.status();

  auto out = OpenAppend(dir / "stdout");
  if (!out.ok()) return out.status();
  auto err = OpenAppend(dir / "stderr");
  if (!err.ok()) return err.status();
  struct stat st {};
  if (::fstat(err->get(), &st) == 0) stderr_start_ = st.st_size;

  int report_pipe[2];
  if (::pipe2(report_pipe, O_CLOEXEC) != 0) return Status::IoError("pipe2: " + ErrnoText(errno));
  report_fd_.Reset(report_pipe[0]);
  auto child_report = MoveHigh(report_pipe[1]);
  if (!child_report.ok()) return child_report.status();
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    return Status::IoError("socketpair: " + ErrnoText(errno));
  }
  decision_fd_.Reset(pair[0]);
  auto child_decision = MoveHigh(pair[1]);
  if (!child_decision.ok()) return child_decision.status();
  ::fcntl(report_fd_.get(), F_SETFL, ::fcntl(report_fd_.get(), F_GETFL) | O_NONBLOCK);

  SpawnAttrs sa;
  posix_spawn_file_actions_addopen(&sa.actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&sa.actions, out->get(), 1);
  posix_spawn_file_actions_adddup2(&sa.actions, err->get(), 2);
  posix_spawn_file_actions_adddup2(&sa.actions, child_report->get(), kChildReportFd);
  posix_spawn_file_actions_adddup2(&sa.actions, child_decision->get(), kChildDecisionFd);
  posix_spawn_file_actions_addchdir_np(&sa.actions, workdir.c_str());
  posix_spawn_file_actions_addclosefrom_np(&sa.actions, kChildDecisionFd + 1);
  sigset_t mask;
  sigemptyset(&mask);
  posix_spawnattr_setsigmask(&sa.attr, &mask);
  sigset_t defaults;
  sigfillset(&defaults);
  posix_spawnattr_setsigdefault(&sa.attr, &defaults);
  posix_spawnattr_setpgroup(&sa.attr, 0);
  posix_spawnattr_setflags(&sa.attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> argv = NullTerminated(def_.command);
  std::vector<char*> envp = NullTerminated(*env);

  pid_t pid = 0;
  const int rc =
      ::posix_spawn(&pid, program->path.c_str(), &sa.actions, &sa.attr, argv.data(), envp.data());
  if (rc != 0) {
    std::string why = ErrnoText(rc);
    if (rc == ENOENT) why += " (no such file)";
    if (rc == EACCES) why += " (not executable)";
    return Status::Unavailable(
        fmt::format("cannot start {} ({}) in {}: {}", what, program->path, workdir, why));
  }
  pid_ = pid;
#ifndef TUNEBUS_TRAINABLE_NO_PIDFD  // defined only to test the fallback
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
#else
  const int pidfd = -1;
#endif
  if (pidfd >= 0) {
    pidfd_.Reset(pidfd);
  } else if (Status s = reap_timer_.Open(); !s.ok()) {
    Kill();
    return s;
  }
  iter_start_ = setup_.clock->Now();
  return Status::Ok();
}

std::vector<int> CommandTrainable::fds() const {
  std::vector<int> out;
  if (pid_ == 0 || reaped_) return out;
  if (report_fd_.valid()) out.push_back(report_fd_.get());
  if (pidfd_.valid()) {
    out.push_back(pidfd_.get());
  } else if (!report_fd_.valid()) {
    out.push_back(reap_timer_.fd());
  }
  return out;
}

void CommandTrainable::OnReadable() {
  if (pid_ == 0 || reaped_) return;
  ReadReports();
  CheckExit();
}

void CommandTrainable::ReadReports() {
  char buf[65536];
  while (report_fd_.valid()) {
    const ssize_t n = ::read(report_fd_.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {  // EOF (or a read error: treat alike)
      if (!line_buf_.empty()) HandleLine(line_buf_);
      line_buf_.clear();
      report_fd_.Reset();
      report_eof_ = true;
      if (!pidfd_.valid() && !reaped_) {
        if (Status s = reap_timer_.ArmPeriodic(std::chrono::milliseconds(50)); !s.ok()) Kill();
      }
      return;
    }
    if (!protocol_error_.empty()) continue;  // drain and ignore after a protocol error
    line_buf_.append(buf, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t nl = line_buf_.find('\n'); nl != std::string::npos;
         nl = line_buf_.find('\n', start)) {
      HandleLine(std::string_view(line_buf_).substr(start, nl - start));
      start = nl + 1;
      if (!protocol_error_.empty()) break;
    }
    line_buf_.erase(0, start);
    if (protocol_error_.empty() && line_buf_.size() > kMaxReportLineBytes) {
      FailProtocol(fmt::format("report line longer than {} bytes: '{}'", kMaxReportLineBytes,
                               Truncate(line_buf_, kErrorLineBytes)));
    }
    if (!protocol_error_.empty()) line_buf_.clear();
  }
}

Result<std::optional<nlohmann::json>> ParseReportLine(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
    line.remove_suffix(1);
  }
  if (line.find_first_not_of(" \t") == std::string_view::npos) {
    return std::optional<nlohmann::json>();  // a blank line
  }
  nlohmann::json metrics = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (metrics.is_discarded() || !metrics.is_object()) {
    return Status::InvalidArgument(
        fmt::format("report line is not a JSON object: '{}'", Truncate(line, kErrorLineBytes)));
  }
  return std::optional<nlohmann::json>(std::move(metrics));
}

void CommandTrainable::HandleLine(std::string_view line) {
  if (!protocol_error_.empty()) return;
  Result<std::optional<nlohmann::json>> metrics = ParseReportLine(line);
  if (!metrics.ok()) {
    FailProtocol(metrics.status().message());
    return;
  }
  if (!metrics->has_value()) return;  // blank lines are ignored
  const auto now = setup_.clock->Now();
  const double secs = std::chrono::duration<double>(now - iter_start_).count();
  iter_start_ = now;
  QueueReport(Report{std::move(**metrics), secs});
}

void CommandTrainable::FailProtocol(std::string error) {
  if (protocol_error_.empty()) protocol_error_ = std::move(error);
  Kill();
}

void CommandTrainable::CheckExit() {
  if (reaped_) return;
  if (!pidfd_.valid()) reap_timer_.Consume();
  // Peek first (WNOWAIT): while the zombie exists its pid, and so its process group id, cannot
  // be reused, so leftovers of the group can be killed safely before reaping.
  siginfo_t info{};
  int r;
  do {
    r = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
  } while (r < 0 && errno == EINTR);
  if (r == 0 && info.si_pid != pid_) return;  // still running
  if (r == 0) {
    ::kill(-pid_, SIGKILL);
    int st = 0;
    pid_t w;
    do {
      w = ::waitpid(pid_, &st, 0);  // does not block: it has exited
    } while (w < 0 && errno == EINTR);
    if (w == pid_) {
      Finish(st);
      return;
    }
  }
  // ECHILD: somebody else reaped it; we cannot know how it ended.
  reaped_ = true;
  ExitStatus es;
  es.error = "child process " + std::to_string(pid_) + " vanished (reaped elsewhere)";
  es.killed = killed_;
  End(std::move(es));
}

void CommandTrainable::Finish(int wait_status) {
  reaped_ = true;
  ReadReports();  // everything it wrote before exiting
  report_fd_.Reset();
  decision_fd_.Reset();
  pidfd_.Reset();
  ExitStatus es;
  es.killed = killed_;
  if (WIFEXITED(wait_status)) {
    es.exit_code = WEXITSTATUS(wait_status);
    es.ok = es.exit_code == 0;
    if (!es.ok) es.error = fmt::format("exited with code {}", es.exit_code);
  } else if (WIFSIGNALED(wait_status)) {
    es.signal = WTERMSIG(wait_status);
    es.exit_code = -es.signal;
    es.error = fmt::format("killed by signal {} ({})", es.signal, sigdescr_np(es.signal));
  } else {
    es.error = fmt::format("ended with wait status {}", wait_status);
  }
  if (!protocol_error_.empty()) {
    es.ok = false;
    es.error = protocol_error_;
  }
  es.stderr_tail = ReadStderrTail();
  End(std::move(es));
}

Status CommandTrainable::SendDecision(Action action) {
  if (Status s = CheckTrainableAction(action); !s.ok()) return s;
  if (ended() || reaped_) return Status::FailedPrecondition("the trainable has exited");
  if (!ConsumeAwaited()) return Status::FailedPrecondition("no report waits for a decision");
  iter_start_ = setup_.clock->Now();
  const std::string line = std::string(ActionName(action)) + "\n";
  if (!decision_fd_.valid()) return Status::Unavailable("decision channel is closed");
  ssize_t n;
  do {
    n = ::send(decision_fd_.get(), line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(line.size())) {
    return Status::Unavailable(fmt::format("cannot deliver decision '{}': {}", ActionName(action),
                                           n < 0 ? ErrnoText(errno) : "short write"));
  }
  return Status::Ok();
}

void CommandTrainable::Kill() {
  if (pid_ <= 0 || reaped_) return;
  killed_ = true;
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);  // in case it left its process group
}

std::string CommandTrainable::ReadStderrTail() const {
  const fs::path path = fs::path(setup_.trial_dir) / "stderr";
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return "";
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || st.st_size <= stderr_start_) return "";
  const long long from =
      std::max<long long>(stderr_start_, st.st_size - (long long)kStderrTailBytes);
  std::string data(static_cast<size_t>(st.st_size - from), '\0');
  const ssize_t n = ::pread(fd.get(), data.data(), data.size(), from);
  if (n <= 0) return "";
  data.resize(static_cast<size_t>(n));
  if (from > stderr_start_) {  // started mid-line: drop the partial first line
    const auto nl = data.find('\n');
    if (nl != std::string::npos && nl + 1 < data.size()) data.erase(0, nl + 1);
  }
  // Keep the last kStderrTailLines lines (a trailing newline does not start a line).
  size_t lines = 0;
  size_t pos = data.size();
  if (pos > 0 && data[pos - 1] == '\n') --pos;
  while (pos > 0) {
    const auto nl = data.rfind('\n', pos - 1);
    if (nl == std::string::npos) break;
    if (++lines == kStderrTailLines) {
      data.erase(0, nl + 1);
      break;
    }
    pos = nl;
  }
  return data;
}

}  // namespace tunebus::trainable
