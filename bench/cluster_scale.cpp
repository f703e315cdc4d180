// The resource-manager and the scheduler under many workers (issue 34, point 6). Starts the real
// checkpoint-store, resource-manager and scheduler binaries on ipc:// endpoints in a temporary
// folder, and N simulated trial-workers in this process: each has its own DEALER to the
// resource-manager and to the scheduler (real sockets and the real protocol), registers,
// heartbeats every --heartbeat-ms and answers each start_trial at once with one result and a
// trial_exited (a trial that does no work). For each N of --workers it prints one JSON line:
//
//   heartbeat_cpu_rm, heartbeat_cpu_scheduler  the CPU each service used (fraction of one core,
//       from /proc/<pid>/stat) over --idle-s seconds of heartbeats with no experiment running;
//   burst_placement_ms {p50, p99, max}  from the submission of an experiment of 5 N one-CPU
//       trials on N one-CPU workers to each worker's first start_trial (N placements at once);
//   slot_turnaround_ms {p50, p99}  from a worker's trial_exited to its next start_trial while
//       the experiment keeps every worker busy: the scheduler's handling of the exit (journal
//       group commit included) and its next placement;
//   trials_per_s  of that experiment, over its elapsed_s;
//   loss_detection_s  from a worker's last heartbeat to the resource-manager's node_lost event
//       (the product's liveness: 3 intervals of 1 s).
// Usage: cluster_scale --bin BUILD/bin [--workers 100,500,1000,2000] [--idle-s 10]
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "bench/machine.hpp"
#include "libs/bus/domains.hpp"
#include "libs/bus/socket.hpp"
#include "libs/core/resources.hpp"
#include "proto/codec.hpp"
#include "proto/control.hpp"
#include "proto/resources.hpp"
#include "proto/worker.hpp"

extern char** environ;

namespace tunebus {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p / 100.0 * double(v.size() - 1) + 0.5))];
}

// CPU seconds (user + system) a process has used, from /proc/<pid>/stat.
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

// A service process: started with posix_spawn, stopped with SIGTERM (SIGKILL after 5 s).
struct Service {
  pid_t pid = 0;
  Service(const fs::path& bin, const std::vector<std::string>& args, const fs::path& log) {
    std::vector<std::string> argv = {bin.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> raw;
    for (std::string& a : argv) raw.push_back(a.data());
    raw.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    if (posix_spawn(&pid, raw[0], &actions, nullptr, raw.data(), environ) != 0) pid = 0;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~Service() {
    if (pid <= 0) return;
    kill(pid, SIGTERM);
    for (int i = 0; i < 50; ++i) {
      if (waitpid(pid, nullptr, WNOHANG) == pid) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
};

// One simulated trial-worker.
struct SimWorker {
  std::string id;
  zmq::socket_t rm, scheduler;
  bool heartbeating = true;
  Clock::time_point last_heartbeat{};
  std::optional<Clock::time_point> exited_at;  // its last trial_exited, until the next start
  bool started_once = false;
};

class Bench {
 public:
  Bench(fs::path bin, fs::path dir, int heartbeat_ms)
      : bin_(std::move(bin)), dir_(std::move(dir)), heartbeat_ms_(heartbeat_ms) {
    ctx_.set(zmq::ctxopt::max_sockets, 65536);
  }

  std::string Ep(const std::string& name) const {
    return "ipc://" + (dir_ / (name + ".sock")).string();
  }

  bool StartServices() {
    store_.emplace(bin_ / "checkpoint-store",
                   std::vector<std::string>{"--endpoint", Ep("store"), "--data-dir",
                                            (dir_ / "store").string(), "--log-level", "warn"},
                   dir_ / "store.log");
    rm_.emplace(bin_ / "resource-manager",
                std::vector<std::string>{"--endpoint", Ep("rm"), "--events-endpoint",
                                         Ep("rm-events"), "--heartbeat-interval-ms",
                                         std::to_string(heartbeat_ms_), "--log-level", "warn"},
                dir_ / "rm.log");
    if (!WaitBound({"store", "rm", "rm-events"})) return false;
    scheduler_.emplace(
        bin_ / "scheduler",
        std::vector<std::string>{"--control", Ep("control"), "--workers", Ep("workers"), "--events",
                                 Ep("events"), "--rm", Ep("rm"), "--rm-events", Ep("rm-events"),
                                 "--store", Ep("store"), "--results-dir",
                                 (dir_ / "results").string(), "--log-level", "warn"},
        dir_ / "scheduler.log");
    return WaitBound({"workers", "control"});
  }

  bool WaitBound(const std::vector<std::string>& names) {
    for (auto deadline = Clock::now() + std::chrono::seconds(30); Clock::now() < deadline;) {
      bool all = true;
      for (const std::string& n : names) all = all && fs::exists(dir_ / (n + ".sock"));
      if (all) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::fprintf(stderr, "cluster_scale: services did not bind within 30 s; logs in %s\n",
                 dir_.c_str());
    return false;
  }

  bool AddWorkers(int n) {
    const auto& plain = *bus::Security::Plaintext();
    for (int i = 0; i < n; ++i) {
      SimWorker w;
      w.id = "sim" + std::to_string(i);
      bus::ConnectOptions named;
      named.routing_id = w.id;
      auto rm =
          bus::Connect(ctx_, zmq::socket_type::dealer, Ep("rm"), plain, bus::kResourceManagerKey);
      auto sch = bus::Connect(ctx_, zmq::socket_type::dealer, Ep("workers"), plain,
                              {"scheduler", ""}, named);
      if (!rm.ok() || !sch.ok()) {
        std::fprintf(stderr, "cluster_scale: worker %d cannot connect\n", i);
        return false;
      }
      w.rm = std::move(*rm);
      w.scheduler = std::move(*sch);
      proto::RegisterNode node;
      node.id = 1;
      node.worker_id = w.id;
      node.hostname = "sim";
      node.capacity = {{"cpu", Resources::kScale}};
      bus::SendMessage(w.rm, node);
      proto::RegisterWorker reg;
      reg.id = 1;
      reg.worker_id = w.id;
      reg.hostname = "sim";
      bus::SendMessage(w.scheduler, reg);
      w.last_heartbeat = Clock::now();
      workers_.push_back(std::move(w));
    }
    return true;
  }

  // One turn: heartbeats when due, then every message that came within `wait`.
  void Turn(std::chrono::milliseconds wait) {
    const auto now = Clock::now();
    if (now >= next_heartbeat_) {
      for (SimWorker& w : workers_) {
        if (!w.heartbeating) continue;
        proto::NodeHeartbeat node;
        node.worker_id = w.id;
        bus::SendMessage(w.rm, node);
        proto::WorkerHeartbeat hb;
        hb.worker_id = w.id;
        bus::SendMessage(w.scheduler, hb);
        w.last_heartbeat = now;
      }
      next_heartbeat_ = now + std::chrono::milliseconds(heartbeat_ms_);
    }
    std::vector<zmq::pollitem_t> items;
    items.reserve(workers_.size() * 2);
    for (SimWorker& w : workers_) {
      items.push_back({w.scheduler.handle(), 0, ZMQ_POLLIN, 0});
      items.push_back({w.rm.handle(), 0, ZMQ_POLLIN, 0});
    }
    if (zmq::poll(items, wait) <= 0) return;
    for (size_t i = 0; i < workers_.size(); ++i) {
      if (items[2 * i + 1].revents & ZMQ_POLLIN) {
        bus::Incoming ignored;  // registration acks, not_found for heartbeats before it
        while (bus::Receive(workers_[i].rm, ignored)) {
        }
      }
      if (items[2 * i].revents & ZMQ_POLLIN) OnScheduler(workers_[i]);
    }
  }

  void OnScheduler(SimWorker& w) {
    bus::Incoming in;
    while (bus::Receive(w.scheduler, in)) {
      auto d = proto::Decode(in.payload.data(), in.payload.size());
      if (!d.ok() || d->type() != proto::StartTrial::kType) continue;
      auto start = d->As<proto::StartTrial>();
      if (!start.ok()) continue;
      const auto now = Clock::now();
      if (!w.started_once) {
        w.started_once = true;
        first_starts_.push_back(Seconds(submitted_at_, now) * 1000);
      } else if (w.exited_at) {
        turnarounds_.push_back(Seconds(*w.exited_at, now) * 1000);
      }
      w.exited_at.reset();
      proto::ReportResults results;
      results.results.push_back(
          proto::ResultItem{start->trial_id, start->attempt, 1, R"({"score": 1.0})", 0.0, {}});
      bus::SendMessage(w.scheduler, results);
      proto::TrialExited exited;
      exited.trial_id = start->trial_id;
      exited.attempt = start->attempt;
      exited.ok = true;
      exited.last_seq = 1;
      bus::SendMessage(w.scheduler, exited);
      w.exited_at = Clock::now();
    }
  }

  // Turns the loop for `seconds`.
  void RunFor(double seconds) {
    for (auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(seconds));
         Clock::now() < end;) {
      Turn(std::chrono::milliseconds(5));
    }
  }

  // A control request answered while the workers keep turning.
  std::optional<json> Control(zmq::socket_t& control, auto request) {
    request.id = ++control_id_;
    bus::SendMessage(control, request);
    for (auto deadline = Clock::now() + std::chrono::seconds(60); Clock::now() < deadline;) {
      Turn(std::chrono::milliseconds(2));
      zmq::pollitem_t item{control.handle(), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, std::chrono::milliseconds(0)) <= 0) continue;
      bus::Incoming in;
      if (!bus::Receive(control, in)) continue;
      auto d = proto::Decode(in.payload.data(), in.payload.size());
      if (!d.ok() || d->id() != request.id) continue;
      auto reply = d->As<proto::ControlReply>();
      if (!reply.ok()) {
        std::fprintf(stderr, "cluster_scale: %s refused\n", std::string(request.type).c_str());
        return std::nullopt;
      }
      return json::parse(reply->body_json);
    }
    return std::nullopt;
  }

  json Measure(int n, double idle_s) {
    json out = {{"benchmark", "cluster_scale"}, {"workers", n}, {"heartbeat_ms", heartbeat_ms_}};
    if (!StartServices() || !AddWorkers(n)) return out;
    auto control = bus::Connect(ctx_, zmq::socket_type::dealer, Ep("control"),
                                *bus::Security::Plaintext(), {"scheduler", ""});
    if (!control.ok()) return out;
    // All registered: list_workers names n alive workers.
    for (auto deadline = Clock::now() + std::chrono::seconds(60); Clock::now() < deadline;) {
      auto listed = Control(*control, proto::ListWorkers{});
      int alive = 0;
      if (listed) {
        for (const json& w : *listed) alive += w.value("alive", false) ? 1 : 0;
      }
      if (alive >= n) break;
      RunFor(0.2);
    }
    RunFor(2);  // settle
    const double rm0 = CpuSeconds(rm_->pid), sch0 = CpuSeconds(scheduler_->pid);
    const auto t0 = Clock::now();
    RunFor(idle_s);
    const double wall = Seconds(t0, Clock::now());
    out["heartbeat_cpu_rm"] = (CpuSeconds(rm_->pid) - rm0) / wall;
    out["heartbeat_cpu_scheduler"] = (CpuSeconds(scheduler_->pid) - sch0) / wall;

    proto::SubmitExperiment submit;
    submit.spec_yaml =
        "name: scale\ntrainable: {builtin: noop}\nparam_space: {x: {uniform: [0, 1]}}\n"
        "num_samples: " +
        std::to_string(5 * n) + "\nmetric: score\nmode: max\nresources_per_trial: {cpu: 1}\n";
    submit.base_dir = dir_.string();
    submit.source_name = "scale.yaml";
    submitted_at_ = Clock::now();
    if (!Control(*control, submit)) return out;
    json summary;
    for (auto deadline = Clock::now() + std::chrono::seconds(600); Clock::now() < deadline;) {
      RunFor(0.05);
      auto got = Control(*control, proto::GetExperiment{});
      if (got && got->value("finished", false)) {
        summary = *got;
        break;
      }
    }
    out["trials"] = summary.value("total", 0);
    const double elapsed = summary.value("elapsed_s", 0.0);
    out["trials_per_s"] = elapsed > 0 ? double(summary.value("total", 0)) / elapsed : 0.0;
    out["burst_placement_ms"] = {{"p50", Percentile(first_starts_, 50)},
                                 {"p99", Percentile(first_starts_, 99)},
                                 {"max", Percentile(first_starts_, 100)},
                                 {"n", first_starts_.size()}};
    out["slot_turnaround_ms"] = {{"p50", Percentile(turnarounds_, 50)},
                                 {"p99", Percentile(turnarounds_, 99)},
                                 {"n", turnarounds_.size()}};

    // Loss detection: one worker falls silent; the resource-manager's node_lost says when.
    auto events = bus::Connect(ctx_, zmq::socket_type::sub, Ep("rm-events"),
                               *bus::Security::Plaintext(), bus::kResourceManagerKey);
    if (!events.ok()) return out;
    events->set(zmq::sockopt::subscribe, "");
    RunFor(1.5);  // the subscription reaches the publisher; a heartbeat round goes
    SimWorker& quiet = workers_.back();
    quiet.heartbeating = false;
    const Clock::time_point last = quiet.last_heartbeat;
    for (auto deadline = Clock::now() + std::chrono::seconds(30); Clock::now() < deadline;) {
      Turn(std::chrono::milliseconds(2));
      bus::Incoming in;
      bool lost = false;
      while (!lost && bus::Receive(*events, in)) {
        auto d = proto::Decode(in.payload.data(), in.payload.size());
        if (!d.ok()) continue;
        auto ev = d->As<proto::NodeEvent>();
        lost = ev.ok() && ev->event == "node_lost" && ev->worker_id == quiet.id;
      }
      if (lost) {
        out["loss_detection_s"] = Seconds(last, Clock::now());
        break;
      }
    }
    return out;
  }

 private:
  fs::path bin_, dir_;
  int heartbeat_ms_;
  zmq::context_t ctx_;
  std::optional<Service> store_, rm_, scheduler_;
  std::vector<SimWorker> workers_;
  Clock::time_point next_heartbeat_{};
  Clock::time_point submitted_at_{};
  std::vector<double> first_starts_, turnarounds_;
  uint64_t control_id_ = 0;
};

}  // namespace
}  // namespace tunebus

int main(int argc, char** argv) {
  using namespace tunebus;
  fs::path bin;
  std::vector<int> sizes = {100, 500, 1000, 2000};
  double idle_s = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--bin") {
      bin = value;
    } else if (flag == "--workers") {
      sizes.clear();
      std::stringstream list(value);
      for (std::string n; std::getline(list, n, ',');) sizes.push_back(std::stoi(n));
    } else if (flag == "--idle-s") {
      idle_s = std::stod(value);
    }
  }
  if (bin.empty()) {
    std::fprintf(
        stderr,
        "usage: cluster_scale --bin BUILD/bin [--workers 100,500,1000,2000] [--idle-s 10]\n");
    return 2;
  }
  // Every simulated worker holds two sockets; the services hold a connection per worker.
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  setrlimit(RLIMIT_NOFILE, &files);
  for (int n : sizes) {
    char pattern[] = "/tmp/tunebus-scale-XXXXXX";
    if (mkdtemp(pattern) == nullptr) return 1;
    const fs::path dir = pattern;
    json line;
    {
      Bench bench(bin, dir, 1000);
      line = bench.Measure(n, idle_s);
    }
    line["machine"] = bench::Machine();
    std::printf("%s\n", line.dump().c_str());
    std::fflush(stdout);
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  return 0;
}
