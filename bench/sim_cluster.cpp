#include "bench/sim_cluster.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "bench/machine.hpp"
#include "libs/bus/domains.hpp"
#include "libs/core/resources.hpp"
#include "proto/resources.hpp"
#include "proto/worker.hpp"

extern char** environ;

namespace tunebus::bench {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

volatile std::sig_atomic_t g_interrupted = 0;

void OnSignal(int) { g_interrupted = 1; }

// The epoll key of a worker's socket: its index, and which of its two sockets.
uint64_t Key(size_t worker, bool rm) { return uint64_t(worker) << 1 | (rm ? 1 : 0); }

}  // namespace

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p / 100.0 * double(v.size() - 1) + 0.5))];
}

json Quantiles(const std::vector<double>& v) {
  return {{"p50", Percentile(v, 50)},
          {"p99", Percentile(v, 99)},
          {"max", Percentile(v, 100)},
          {"n", v.size()}};
}

double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);
  }
  return ticks / double(sysconf(_SC_CLK_TCK));
}

void StopOnSignals() {
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool Interrupted() { return g_interrupted != 0; }

void HarnessOptions::Add(CLI::App& app) {
  app.add_option("--bin", bin, "folder of the service binaries (BUILD/bin)")->required();
  app.add_option("--log-level", log_level, "the services' log level")->capture_default_str();
  app.add_option("--keep-logs", keep_logs, "copy the services' logs into this folder");
  app.add_option_function<std::string>(
         "--result-files",
         [this](const std::string& where) { result_files_on_tmpfs = where != "disk"; },
         "tmpfs (default) or disk: where the scheduler writes the results folder")
      ->check(CLI::IsMember({"tmpfs", "disk"}));
}

void PrepareProcess() {
  StopOnSignals();
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  setrlimit(RLIMIT_NOFILE, &files);
}

void PrintLine(nlohmann::json line, const HarnessOptions& o) {
  line["result_files"] = o.result_files_on_tmpfs ? "tmpfs" : "disk";
  line["machine"] = Machine();
  std::printf("%s\n", line.dump().c_str());
  std::fflush(stdout);
}

TempDir::TempDir(const std::string& prefix, const fs::path& parent) {
  std::string pattern = (parent / (prefix + "-XXXXXX")).string();
  if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

Service::Service(const fs::path& bin, const std::vector<std::string>& args, const fs::path& log) {
  std::vector<std::string> argv = {bin.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> raw;
  for (std::string& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  if (posix_spawn(&pid_, raw[0], &actions, nullptr, raw.data(), environ) != 0) pid_ = 0;
  posix_spawn_file_actions_destroy(&actions);
}

Service::~Service() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  for (int i = 0; i < 50; ++i) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
}

struct SimCluster::Worker {
  std::string id;
  zmq::socket_t rm, scheduler;
  bool heartbeating = true;
  Clock::time_point last_heartbeat{};
  std::optional<Clock::time_point> freed_at;  // its last trial_exited (since ClearSpans)
  // The trial it holds, if any.
  bool holding = false;
  std::string trial_id;
  int64_t attempt = 0;
  Clock::time_point hold_until{};
  std::optional<size_t> span;  // index in spans_ (none when started before ClearSpans)
};

SimCluster::SimCluster(fs::path bin, fs::path dir, int heartbeat_ms, bool result_files_on_tmpfs)
    : bin_(std::move(bin)), dir_(std::move(dir)), heartbeat_ms_(heartbeat_ms) {
  ctx_.set(zmq::ctxopt::max_sockets, 65536);
  epoll_ = epoll_create1(EPOLL_CLOEXEC);
  if (result_files_on_tmpfs) tmpfs_results_.emplace("tunebus-sim-results", "/dev/shm");
}

fs::path SimCluster::results_dir() const {
  return tmpfs_results_ ? tmpfs_results_->path() : dir_ / "results";
}

SimCluster::~SimCluster() {
  workers_.clear();  // the sockets close before the services stop
  if (epoll_ >= 0) close(epoll_);
  scheduler_.reset();
  rm_.reset();
  store_.reset();
  if (keep_logs_.empty()) return;
  std::error_code ec;
  fs::create_directories(keep_logs_, ec);
  for (const char* name : {"scheduler", "rm", "store"}) {
    fs::copy_file(dir_ / (std::string(name) + ".log"),
                  keep_logs_ / (log_tag_ + "-" + name + ".log"),
                  fs::copy_options::overwrite_existing, ec);
  }
}

std::string SimCluster::Endpoint(const std::string& name) const {
  return "ipc://" + (dir_ / (name + ".sock")).string();
}

bool SimCluster::StartServices(const std::string& log_level) {
  if (results_dir().empty()) {
    std::fprintf(stderr, "sim_cluster: cannot make a folder in /dev/shm for the result files\n");
    return false;
  }
  store_.emplace(bin_ / "checkpoint-store",
                 std::vector<std::string>{"--endpoint", Endpoint("store"), "--data-dir",
                                          (dir_ / "store").string(), "--log-level", log_level},
                 dir_ / "store.log");
  rm_.emplace(bin_ / "resource-manager",
              std::vector<std::string>{"--endpoint", Endpoint("rm"), "--events-endpoint",
                                       Endpoint("rm-events"), "--heartbeat-interval-ms",
                                       std::to_string(heartbeat_ms_), "--log-level", log_level},
              dir_ / "rm.log");
  if (!WaitBound({"store", "rm", "rm-events"})) return false;
  scheduler_.emplace(
      bin_ / "scheduler",
      std::vector<std::string>{"--control", Endpoint("control"), "--workers", Endpoint("workers"),
                               "--events", Endpoint("events"), "--rm", Endpoint("rm"),
                               "--rm-events", Endpoint("rm-events"), "--store", Endpoint("store"),
                               "--results-dir", results_dir().string(), "--log-level", log_level},
      dir_ / "scheduler.log");
  return WaitBound({"workers", "control"});
}

bool SimCluster::WaitBound(const std::vector<std::string>& names) {
  for (auto deadline = Clock::now() + std::chrono::seconds(30);
       Clock::now() < deadline && !Interrupted();) {
    bool all = true;
    for (const std::string& n : names) all = all && fs::exists(dir_ / (n + ".sock"));
    if (all) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::fprintf(stderr, "sim_cluster: services did not bind within 30 s; logs in %s\n",
               dir_.c_str());
  return false;
}

void SimCluster::Watch(size_t w, bool rm) {
  zmq::socket_t& s = rm ? workers_[w]->rm : workers_[w]->scheduler;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = Key(w, rm);
  epoll_ctl(epoll_, EPOLL_CTL_ADD, s.get(zmq::sockopt::fd), &ev);
  to_check_.push_back(Key(w, rm));
}

bool SimCluster::AddWorkers(int n) {
  if (epoll_ < 0) return false;
  const auto& plain = *bus::Security::Plaintext();
  for (int i = 0; i < n; ++i) {
    auto w = std::make_unique<Worker>();
    w->id = "sim" + std::to_string(workers_.size());
    bus::ConnectOptions named;
    named.routing_id = w->id;
    auto rm = bus::Connect(ctx_, zmq::socket_type::dealer, Endpoint("rm"), plain,
                           bus::kResourceManagerKey);
    auto sch = bus::Connect(ctx_, zmq::socket_type::dealer, Endpoint("workers"), plain,
                            {"scheduler", ""}, named);
    if (!rm.ok() || !sch.ok()) {
      std::fprintf(stderr, "sim_cluster: worker %s cannot connect\n", w->id.c_str());
      return false;
    }
    w->rm = std::move(*rm);
    w->scheduler = std::move(*sch);
    proto::RegisterNode node;
    node.id = 1;
    node.worker_id = w->id;
    node.hostname = "sim";
    node.capacity = {{"cpu", Resources::kScale}};
    bus::SendMessage(w->rm, node);
    proto::RegisterWorker reg;
    reg.id = 1;
    reg.worker_id = w->id;
    reg.hostname = "sim";
    bus::SendMessage(w->scheduler, reg);
    w->last_heartbeat = Clock::now();
    workers_.push_back(std::move(w));
    Watch(workers_.size() - 1, true);
    Watch(workers_.size() - 1, false);
  }
  // Worker i heartbeats at heartbeat_epoch_ + (k + i / N) intervals, k = 0, 1, ...
  heartbeat_epoch_ = Clock::now();
  heartbeats_sent_ = 0;
  return true;
}

Clock::time_point SimCluster::Silence(size_t i) {
  workers_[i]->heartbeating = false;
  return workers_[i]->last_heartbeat;
}

const std::string& SimCluster::worker_id(size_t i) const { return workers_[i]->id; }

bool SimCluster::holding(size_t i) const { return workers_[i]->holding; }

std::optional<Clock::time_point> SimCluster::freed_at(size_t i) const {
  return workers_[i]->freed_at;
}

void SimCluster::SendHeartbeats(Clock::time_point now) {
  if (workers_.empty()) return;
  const double n = double(workers_.size());
  const double interval_s = heartbeat_ms_ / 1000.0;
  // Heartbeats due by now, counting from the epoch (worker 0 at the epoch).
  const uint64_t due = uint64_t(Seconds(heartbeat_epoch_, now) / interval_s * n) + 1;
  for (; heartbeats_sent_ < due; ++heartbeats_sent_) {
    const size_t i = size_t(heartbeats_sent_ % workers_.size());
    Worker& w = *workers_[i];
    if (!w.heartbeating) continue;
    proto::NodeHeartbeat node;
    node.worker_id = w.id;
    bus::SendMessage(w.rm, node);
    proto::WorkerHeartbeat hb;
    hb.worker_id = w.id;
    bus::SendMessage(w.scheduler, hb);
    w.last_heartbeat = now;
    // A send may take the read signal of a message that came meanwhile: look at both.
    to_check_.push_back(Key(i, true));
    to_check_.push_back(Key(i, false));
  }
}

void SimCluster::EndTrial(size_t i, bool stopped) {
  Worker& w = *workers_[i];
  proto::ReportResults results;
  results.results.push_back(
      proto::ResultItem{w.trial_id, w.attempt, 1, R"({"score": 1.0})", 0.0, {}});
  bus::SendMessage(w.scheduler, results);
  proto::TrialExited exited;
  exited.trial_id = w.trial_id;
  exited.attempt = w.attempt;
  exited.ok = true;
  exited.stopped = stopped;
  exited.last_seq = 1;
  bus::SendMessage(w.scheduler, exited);
  const auto now = Clock::now();
  if (w.span) spans_[*w.span].exited = now;
  w.freed_at = now;
  w.span.reset();
  w.holding = false;
  ++trials_exited_;
}

void SimCluster::OnStartTrial(size_t i, const proto::StartTrial& start) {
  Worker& w = *workers_[i];
  if (w.holding) EndTrial(i, false);  // one CPU holds one trial; never seen
  TrialSpan span;
  span.experiment = start.experiment;
  span.trial_id = start.trial_id;
  span.worker = i;
  span.started = Clock::now();
  span.worker_freed = w.freed_at;
  w.span = spans_.size();
  spans_.push_back(std::move(span));
  w.trial_id = start.trial_id;
  w.attempt = start.attempt;
  w.holding = true;
  const double hold_s = hold_s_ ? hold_s_() : 0;
  if (hold_s <= 0) return EndTrial(i, false);
  w.hold_until = spans_.back().started +
                 std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(hold_s));
  due_.push({w.hold_until, i});
}

void SimCluster::Drain(size_t i, bool rm) {
  Worker& w = *workers_[i];
  zmq::socket_t& s = rm ? w.rm : w.scheduler;
  while (true) {
    bus::Incoming in;
    while (bus::Receive(s, in)) {
      if (rm) continue;  // registration acks, not_found for heartbeats before it
      auto d = proto::Decode(in.payload.data(), in.payload.size());
      if (!d.ok()) continue;
      if (d->type() == proto::StartTrial::kType) {
        auto start = d->As<proto::StartTrial>();
        if (start.ok()) OnStartTrial(i, *start);
      } else if (d->type() == proto::StopTrialRequest::kType) {
        auto stop = d->As<proto::StopTrialRequest>();
        if (stop.ok() && w.holding && w.trial_id == stop->trial_id && w.attempt == stop->attempt)
          EndTrial(i, true);
      }
    }
    // ZMQ_FD is a signal, not a level: once read dry, ZMQ_EVENTS says whether more came.
    if (!(s.get(zmq::sockopt::events) & ZMQ_POLLIN)) return;
  }
}

void SimCluster::ReleaseHeld() {
  hold_s_ = nullptr;
  while (!due_.empty()) due_.pop();
  for (size_t i = 0; i < workers_.size(); ++i) {
    if (workers_[i]->holding) {
      EndTrial(i, false);
      to_check_.push_back(Key(i, false));
    }
  }
}

void SimCluster::Turn(std::chrono::microseconds wait) {
  const auto now = Clock::now();
  SendHeartbeats(now);
  while (!due_.empty() && due_.top().at <= now) {
    const Due d = due_.top();
    due_.pop();
    Worker& w = *workers_[d.worker];
    if (!w.holding || w.hold_until != d.at) continue;  // ended by a stop_trial
    stats_.exit_lag_ms.push_back(Seconds(d.at, Clock::now()) * 1000);
    EndTrial(d.worker, false);
    to_check_.push_back(Key(d.worker, false));
  }
  // Sleep until the next hold's end or (within 2 ms) the next heartbeat, at most `wait`; not
  // at all with sockets to look at.
  const auto before_wait = Clock::now();
  Clock::time_point until = before_wait + wait;
  if (!workers_.empty()) {
    const double interval_s = heartbeat_ms_ / 1000.0;
    const double next_s = double(heartbeats_sent_) * interval_s / double(workers_.size());
    until = std::min(until, heartbeat_epoch_ + std::chrono::duration_cast<Clock::duration>(
                                                   std::chrono::duration<double>(next_s + 0.002)));
  }
  if (!due_.empty()) until = std::min(until, due_.top().at);
  if (!to_check_.empty()) until = before_wait;
  const auto sleep_ns = std::max<int64_t>(
      0, std::chrono::duration_cast<std::chrono::nanoseconds>(until - before_wait).count());
  const timespec timeout{time_t(sleep_ns / 1000000000), long(sleep_ns % 1000000000)};
  if (woke_) stats_.turn_ms.push_back(Seconds(*woke_, before_wait) * 1000);
  epoll_event events[256];
  const int n = epoll_pwait2(epoll_, events, 256, &timeout, nullptr);
  woke_ = Clock::now();
  for (int i = 0; i < n; ++i) to_check_.push_back(events[i].data.u64);
  // Each socket once per turn; Drain reads its ZMQ_EVENTS, which consumes its fd's signal.
  std::sort(to_check_.begin(), to_check_.end());
  to_check_.erase(std::unique(to_check_.begin(), to_check_.end()), to_check_.end());
  std::vector<uint64_t> keys;
  keys.swap(to_check_);
  for (uint64_t key : keys) Drain(size_t(key >> 1), (key & 1) != 0);
}

void SimCluster::RunFor(double seconds) {
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(seconds));
  while (Clock::now() < end && !Interrupted()) Turn(std::chrono::milliseconds(5));
}

bool SimCluster::RunUntil(const std::function<bool()>& done, double timeout_s) {
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(timeout_s));
  while (!done()) {
    if (Clock::now() >= end || Interrupted()) return false;
    Turn(std::chrono::milliseconds(5));
  }
  return true;
}

std::optional<zmq::socket_t> SimCluster::ConnectControl() {
  auto control = bus::Connect(ctx_, zmq::socket_type::dealer, Endpoint("control"),
                              *bus::Security::Plaintext(), {"scheduler", ""});
  if (!control.ok()) return std::nullopt;
  return std::move(*control);
}

std::vector<std::optional<json>> SimCluster::AwaitReplies(zmq::socket_t& control,
                                                          const std::vector<uint64_t>& ids,
                                                          double timeout_s) {
  std::vector<std::optional<json>> bodies(ids.size());
  size_t waiting = ids.size();
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_s));
  while (waiting > 0 && Clock::now() < deadline && !Interrupted()) {
    Turn(std::chrono::milliseconds(1));
    bus::Incoming in;
    while (bus::Receive(control, in)) {
      auto d = proto::Decode(in.payload.data(), in.payload.size());
      if (!d.ok()) continue;
      const auto at = std::find(ids.begin(), ids.end(), d->id());
      if (at == ids.end()) continue;  // a late answer to an earlier request
      --waiting;
      if (auto reply = d->As<proto::ControlReply>(); reply.ok()) {
        bodies[size_t(at - ids.begin())] = json::parse(reply->body_json);
      } else if (auto error = d->As<proto::ErrorReply>(); error.ok()) {
        std::fprintf(stderr, "sim_cluster: %s refused: %s: %s\n", error->request_type.c_str(),
                     error->code.c_str(), error->message.c_str());
      }
    }
  }
  return bodies;
}

bool SimCluster::WaitWorkersAlive(zmq::socket_t& control, size_t n, double timeout_s) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_s));
  while (Clock::now() < deadline && !Interrupted()) {
    auto listed = Control(control, proto::ListWorkers{});
    size_t alive = 0;
    if (listed) {
      for (const json& w : *listed) alive += w.value("alive", false) ? 1 : 0;
    }
    if (alive >= n) return true;
    RunFor(0.2);
  }
  std::fprintf(stderr, "sim_cluster: fewer than %zu workers alive after %.0f s\n", n, timeout_s);
  return false;
}

void SimCluster::ClearSpans() {
  spans_.clear();
  trials_exited_ = 0;
  stats_ = {};
  for (auto& w : workers_) {
    w->span.reset();
    w->freed_at.reset();
  }
}

}  // namespace tunebus::bench
