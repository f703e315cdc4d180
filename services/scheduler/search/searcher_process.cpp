#include "services/scheduler/search/searcher_process.hpp"

#include <fcntl.h>
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "libs/core/enum_names.hpp"

namespace tunebus {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

inline constexpr EnumName<SearcherProcess::State> kStateNames[] = {
    {SearcherProcess::State::kIdle, "idle"},       {SearcherProcess::State::kRunning, "running"},
    {SearcherProcess::State::kBackoff, "backoff"}, {SearcherProcess::State::kStopping, "stopping"},
    {SearcherProcess::State::kStopped, "stopped"},
};

// An ipc:// path must fit sun_path (108 bytes with its NUL).
constexpr size_t kMaxIpcPath = 100;

// A new 0700 folder for the searcher's ipc socket. Errors: IoError.
Result<std::string> MakePrivateDir() {
  std::string base = "/tmp";
  if (const char* tmp = std::getenv("TMPDIR");
      tmp != nullptr && *tmp != '\0' && std::string(tmp).size() + 40 < kMaxIpcPath) {
    base = tmp;
  }
  std::string templ = base + "/tunebus-searcher-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) {
    return Status::IoError(
        fmt::format("cannot make a private folder for the searcher's "
                    "endpoint in {}: {}",
                    base, trainable::ErrnoText(errno)));
  }
  return templ;
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

double Seconds(SteadyTime t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

}  // namespace

const char* SearcherProcess::StateName(State s) { return NameIn(kStateNames, s); }

Result<std::unique_ptr<SearcherProcess>> SearcherProcess::Create(bus::EventLoop& loop,
                                                                 Options options) {
  std::string endpoint = options.endpoint;
  std::string private_dir;
  if (endpoint.empty()) {
    auto dir = MakePrivateDir();
    if (!dir.ok()) return dir.status();
    private_dir = *dir;
    endpoint = "ipc://" + private_dir + "/searcher.ipc";
  }
  return std::unique_ptr<SearcherProcess>(
      new SearcherProcess(loop, std::move(options), std::move(endpoint), std::move(private_dir)));
}

SearcherProcess::SearcherProcess(bus::EventLoop& loop, Options options, std::string endpoint,
                                 std::string private_dir)
    : loop_(loop),
      options_(std::move(options)),
      endpoint_(std::move(endpoint)),
      private_dir_(std::move(private_dir)),
      delay_s_(options_.backoff_initial_s) {}

SearcherProcess::~SearcherProcess() {
  CancelTimer(restart_);
  CancelTimer(kill_);
  Unwatch();
  if (child_ && !child_->reaped()) {
    const pid_t pid = child_->pid();
    const trainable::ChildExit exit =
        child_->Terminate(std::chrono::milliseconds(int64_t(kStopGraceS * 1000)));
    Note(fmt::format("stopped the searcher (pid {}): {}", pid, exit.Describe()));
    spdlog::info("Stopped the searcher process {} ({})", pid, exit.Describe());
  }
  if (!private_dir_.empty()) {
    std::error_code ec;
    fs::remove_all(private_dir_, ec);
  }
}

pid_t SearcherProcess::pid() const {
  return state_ == State::kRunning || state_ == State::kStopping ? child_->pid() : 0;
}

void SearcherProcess::EnsureStarted() {
  if (state_ == State::kIdle) Start();
}

bool SearcherProcess::Bound() const {
  if (state_ != State::kRunning || endpoint_.rfind("ipc://", 0) != 0) return true;
  std::error_code ec;
  return fs::exists(endpoint_.substr(6), ec);
}

void SearcherProcess::Start() {
  restart_.reset();
  if (!private_dir_.empty()) {
    // A SIGKILLed searcher leaves its socket file: Bound() waits for the new one's.
    std::error_code ec;
    fs::remove(endpoint_.substr(6), ec);
  }
  if (starts_++ > 0) ++restarts_;
  trainable::ChildProcess::Options o;
  for (const std::string& arg : options_.command) {
    o.argv.push_back(Replace(arg, "{endpoint}", endpoint_));
  }
  o.working_dir = options_.working_dir;
  o.env = {{"TUNEBUS_SEARCHER_ENDPOINT", endpoint_},
           {"TUNEBUS_SEARCHER_PARENT_PID", std::to_string(::getpid())}};
  if (std::getenv("PYTHONUNBUFFERED") == nullptr) o.env.emplace_back("PYTHONUNBUFFERED", "1");
  o.parent_death_signal = SIGTERM;
  std::error_code ec;
  fs::create_directories(fs::path(options_.log_path).parent_path(), ec);
  trainable::UniqueFd log(
      ::open(options_.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  o.output_fd = log.get();  // -1 (the log cannot be opened): /dev/null
  Note(fmt::format("starting [{}] in {} (endpoint {})", fmt::join(o.argv, ", "), o.working_dir,
                   endpoint_));
  auto child = trainable::ChildProcess::Spawn(o);
  if (!child.ok()) {
    last_exit_ = child.status().message();
    Note(last_exit_);
    spdlog::warn("The searcher did not start: {}; trying again in {} s", last_exit_, delay_s_);
  } else {
    child_ = std::move(*child);
    state_ = State::kRunning;
    spdlog::info("Started the searcher process {} ([{}]) for {}", child_->pid(),
                 fmt::join(o.argv, ", "), endpoint_);
    watched_fd_ = child_->exit_fd();
    if (watched_fd_ >= 0) {
      loop_.AddFd(watched_fd_, [this] { CheckExit(); });
    } else {
      poll_ = loop_.AddPeriodic(std::chrono::milliseconds(200), [this] { CheckExit(); });
    }
    return;
  }
  // Could not start: as if it had exited at once.
  state_ = State::kBackoff;
  restart_at_s_ = Seconds(loop_.clock().Now()) + delay_s_;
  restart_ = loop_.AddTimer(bus::DurationFromSeconds(delay_s_), [this] { Start(); });
  delay_s_ = std::min(options_.backoff_max_s, delay_s_ * 2);
}

void SearcherProcess::CheckExit() {
  if (!child_ || child_->reaped()) return;
  const std::optional<trainable::ChildExit> exit = child_->Poll();
  if (!exit) return;
  Unwatch();
  const pid_t pid = child_->pid();
  last_exit_ = exit->Describe();
  if (state_ == State::kStopping) {
    CancelTimer(kill_);
    state_ = State::kStopped;
    Note(fmt::format("the searcher (pid {}) stopped: {}", pid, last_exit_));
    spdlog::info("The searcher process {} stopped ({})", pid, last_exit_);
    return;
  }
  state_ = State::kBackoff;
  restart_at_s_ = Seconds(loop_.clock().Now()) + delay_s_;
  Note(fmt::format("the searcher (pid {}) ended: {}; starting it again in {} s", pid, last_exit_,
                   delay_s_));
  spdlog::warn("The searcher process {} ended ({}); starting it again in {} s (see {})", pid,
               last_exit_, delay_s_, options_.log_path);
  restart_ = loop_.AddTimer(bus::DurationFromSeconds(delay_s_), [this] { Start(); });
  delay_s_ = std::min(options_.backoff_max_s, delay_s_ * 2);
}

void SearcherProcess::Stop() {
  switch (state_) {
    case State::kIdle:
    case State::kBackoff:
      CancelTimer(restart_);
      state_ = State::kStopped;
      return;
    case State::kStopping:
    case State::kStopped:
      return;
    case State::kRunning:
      break;
  }
  state_ = State::kStopping;
  Note(fmt::format("stopping the searcher (pid {}): SIGTERM", child_->pid()));
  child_->Signal(SIGTERM);
  kill_ = loop_.AddTimer(bus::DurationFromSeconds(kStopGraceS), [this] {
    kill_.reset();
    if (state_ != State::kStopping) return;
    Note(fmt::format("the searcher (pid {}) outlived SIGTERM by {} s: SIGKILL", child_->pid(),
                     kStopGraceS));
    child_->Signal(SIGKILL);
  });
}

json SearcherProcess::Describe() const {
  json d = {{"endpoint", endpoint_}, {"process", StateName(state_)}, {"restarts", restarts_}};
  if (pid() != 0) d["pid"] = pid();
  if (!last_exit_.empty()) d["last_exit"] = last_exit_;
  if (state_ == State::kBackoff) {
    d["restart_in_s"] =
        std::round(std::max(0.0, restart_at_s_ - Seconds(loop_.clock().Now())) * 10) / 10;
  }
  return d;
}

void SearcherProcess::Unwatch() {
  if (watched_fd_ >= 0) loop_.RemoveFd(watched_fd_);
  watched_fd_ = -1;
  CancelTimer(poll_);
}

void SearcherProcess::CancelTimer(std::optional<bus::EventLoop::TimerId>& timer) {
  if (timer) loop_.CancelTimer(*timer);
  timer.reset();
}

void SearcherProcess::Note(const std::string& line) const {
  trainable::UniqueFd log(
      ::open(options_.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!log.valid()) return;
  const auto now = std::chrono::system_clock::now();
  const auto seconds = std::chrono::floor<std::chrono::seconds>(now);
  const std::string text = fmt::format(
      "{:%Y-%m-%d %H:%M:%S}.{:03d} tunebus: {}\n", seconds,
      std::chrono::duration_cast<std::chrono::milliseconds>(now - seconds).count(), line);
  [[maybe_unused]] ssize_t n = ::write(log.get(), text.data(), text.size());
}

// ---- SpawnedSearcherLink --------------------------------------------------------------------

void SpawnedSearcherLink::Request(json request, double timeout_s, ReplyCallback done) {
  process_.EnsureStarted();
  SendWhenBound(std::move(request), timeout_s, NowS() + timeout_s, std::move(done));
}

void SpawnedSearcherLink::SendWhenBound(json request, double timeout_s, double hold_until_s,
                                        ReplyCallback done) {
  if (!process_.Bound() && NowS() < hold_until_s) {
    // The inner link's timers end with it, and so with this link: `this` outlives them.
    inner_->After(kBindPollS, [this, request = std::move(request), timeout_s, hold_until_s,
                               done = std::move(done)]() mutable {
      SendWhenBound(std::move(request), timeout_s, hold_until_s, std::move(done));
    });
    return;
  }
  inner_->Request(std::move(request), timeout_s,
                  [&process = process_, done = std::move(done)](Result<json> reply) {
                    if (reply.ok()) process.NoteServed();
                    done(std::move(reply));
                  });
}

json SpawnedSearcherLink::Describe() const {
  json d = inner_->Describe();
  d.update(process_.Describe());
  return d;
}

}  // namespace tunebus
