// The resource-manager and the scheduler under many workers, on the harness
// of bench/sim_cluster.hpp: the real checkpoint-store, resource-manager and scheduler binaries
// and N simulated one-CPU trial-workers in this process (real sockets, the real protocol). For
// each N of --workers it prints one JSON line:
//
//   heartbeat_cpu_rm, heartbeat_cpu_scheduler  the CPU each service used (fraction of one core,
//       from /proc/<pid>/stat) over --idle-s seconds of heartbeats with no experiment running;
//   Saturation (the throughput ceiling): an experiment of 5 N noop trials (each answered at once
//   with one result and its trial_exited), so every worker cycles as fast as the scheduler goes:
//     burst_placement_ms {p50, p99, max, n}  from the submission to each worker's first
//         start_trial (N placements queued at once: grows with N by construction);
//     saturated_slot_turnaround_ms {p50, p99, max, n}  from a worker's trial_exited to its next
//         start_trial at saturation (queueing: its p99 is about N / saturated_trials_per_s);
//     saturated_trials_per_s  trials of that experiment over its elapsed_s;
//   Fixed offered load (the latency of one placement): an experiment whose trials hold their
//   slot uniform in [0.5 D, 1.5 D] s, D = N / --offered-per-s (200: about 200 trial completions
//   per s whatever N), measured for --load-s s after a warm-up of 2 D + 1 s:
//     placement_ms {p50, p99, max, n}  from a worker's trial_exited to its next start_trial: the
//         scheduler's handling of the exit (journal group commit included), the release and the
//         next placement through the resource-manager;
//     placement_trials_per_s  trial completions per s in that window (the offered load met);
//     placement_unplaced  workers freed in the window still without a trial 10 s after it;
//     sim_turn_ms {p50, p99, max, n}  the simulator's own turns in that window (a message waits
//         at most one turn to be read), sim_exit_lag_ms  how late it ended held trials;
//   loss_detection_s  from a worker's last heartbeat to the resource-manager's node_lost event
//       (the product's liveness: 3 intervals of 1 s).
// Usage: cluster_scale --bin BUILD/bin [--workers 100,500,1000,2000] [--idle-s 10]
//                      [--offered-per-s 200] [--load-s 10] [--log-level warn] [--keep-logs DIR]
//                      [--result-files tmpfs|disk]
//   --log-level: the services'; --keep-logs: copy their logs to DIR/workers-N-<service>.log;
//   --result-files: where the scheduler writes the trials' result files (tmpfs by default, see
//   SimCluster; the journal is synced to the disk either way; each line says which in
//   "result_files").

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench/sim_cluster.hpp"
#include "libs/bus/domains.hpp"
#include "proto/resources.hpp"

namespace tunebus::bench {
namespace {

using json = nlohmann::json;

struct Options : HarnessOptions {
  std::vector<int> sizes = {100, 500, 1000, 2000};
  double idle_s = 10;
  double offered_per_s = 200;
  double load_s = 10;
};

std::string NoopExperiment(const std::string& name, int64_t trials) {
  return "name: " + name +
         "\ntrainable: {builtin: noop}\nparam_space: {x: {uniform: [0, 1]}}\n"
         "num_samples: " +
         std::to_string(trials) + "\nmetric: score\nmode: max\nresources_per_trial: {cpu: 1}\n";
}

// Submits experiment `name` of `trials` trials and turns until it is finished (`timeout_s`).
std::optional<json> RunExperiment(SimCluster& c, zmq::socket_t& control, const std::string& name,
                                  int64_t trials, double timeout_s) {
  proto::SubmitExperiment submit;
  submit.spec_yaml = NoopExperiment(name, trials);
  submit.base_dir = c.dir().string();
  submit.source_name = name + ".yaml";
  if (!c.Control(control, submit)) return std::nullopt;
  proto::GetExperiment get;
  get.experiment = name;
  for (auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(timeout_s));
       Clock::now() < deadline && !Interrupted();) {
    c.RunFor(0.05);
    auto got = c.Control(control, get);
    if (got && got->value("finished", false)) return got;
  }
  return std::nullopt;
}

// The placement latency at a fixed offered load (see the file comment).
void MeasurePlacement(SimCluster& c, zmq::socket_t& control, const Options& o, json& out) {
  const size_t n = c.num_workers();
  const double mean_hold_s = double(n) / o.offered_per_s;
  std::mt19937_64 rng(34);
  std::uniform_real_distribution<double> hold(0.5 * mean_hold_s, 1.5 * mean_hold_s);
  c.ClearSpans();
  c.set_hold([&rng, &hold] { return hold(rng); });
  const double warmup_s = 2 * mean_hold_s + 1;
  proto::SubmitExperiment submit;
  // Enough trials for the whole measurement, half again over (the rest is stopped).
  submit.spec_yaml = NoopExperiment(
      "load", int64_t(n) + int64_t(std::ceil(1.5 * o.offered_per_s * (warmup_s + o.load_s + 10))));
  submit.base_dir = c.dir().string();
  submit.source_name = "load.yaml";
  if (!c.Control(control, submit)) return;
  c.RunFor(warmup_s);
  const auto from = Clock::now();
  c.ClearLoopStats();
  c.RunFor(o.load_s);
  const auto to = Clock::now();
  const SimLoopStats stats = c.loop_stats();
  // Workers freed in the window get their next trial (or 10 s pass).
  auto unplaced = [&c, to] {
    size_t waiting = 0;
    for (size_t i = 0; i < c.num_workers(); ++i) {
      waiting += !c.holding(i) && c.freed_at(i) && *c.freed_at(i) <= to;
    }
    return waiting;
  };
  c.RunUntil([&] { return unplaced() == 0; }, 10);
  out["placement_unplaced"] = unplaced();
  std::vector<double> placement;
  size_t completions = 0;
  for (const TrialSpan& s : c.spans()) {
    if (s.worker_freed && *s.worker_freed >= from && *s.worker_freed <= to) {
      placement.push_back(Seconds(*s.worker_freed, s.started) * 1000);
    }
    completions += s.exited && *s.exited >= from && *s.exited <= to;
  }
  out["offered_trials_per_s"] = o.offered_per_s;
  out["hold_s"] = {{"min", 0.5 * mean_hold_s}, {"max", 1.5 * mean_hold_s}};
  out["placement_window_s"] = Seconds(from, to);
  out["placement_ms"] = Quantiles(placement);
  out["placement_trials_per_s"] = double(completions) / Seconds(from, to);
  out["sim_turn_ms"] = Quantiles(stats.turn_ms);
  out["sim_exit_lag_ms"] = Quantiles(stats.exit_lag_ms);
  c.ReleaseHeld();
  proto::StopExperiment stop;
  stop.experiment = "load";
  c.Control(control, stop);
  proto::GetExperiment get;
  get.experiment = "load";
  c.RunUntil(
      [&] {
        auto got = c.Control(control, get);
        return got && got->value("finished", false);
      },
      60);
}

json Measure(const Options& o, int n, const std::filesystem::path& dir) {
  json out = {{"benchmark", "cluster_scale"}, {"workers", n}, {"heartbeat_ms", 1000}};
  SimCluster c(o.bin, dir, 1000, o.result_files_on_tmpfs);
  c.KeepLogs(o.keep_logs, "workers-" + std::to_string(n));
  if (!c.StartServices(o.log_level) || !c.AddWorkers(n)) return out;
  auto control = c.ConnectControl();
  if (!control || !c.WaitWorkersAlive(*control, size_t(n))) return out;
  c.RunFor(2);  // settle
  const double rm0 = CpuSeconds(c.rm_pid()), sch0 = CpuSeconds(c.scheduler_pid());
  const auto t0 = Clock::now();
  c.RunFor(o.idle_s);
  const double wall = Seconds(t0, Clock::now());
  out["heartbeat_cpu_rm"] = (CpuSeconds(c.rm_pid()) - rm0) / wall;
  out["heartbeat_cpu_scheduler"] = (CpuSeconds(c.scheduler_pid()) - sch0) / wall;

  // Saturation.
  c.ClearSpans();
  const auto submitted_at = Clock::now();
  auto summary = RunExperiment(c, *control, "scale", 5 * int64_t(n), 600);
  if (!summary) return out;
  std::vector<double> first_starts, turnarounds;
  for (const TrialSpan& s : c.spans()) {
    if (s.worker_freed) {
      turnarounds.push_back(Seconds(*s.worker_freed, s.started) * 1000);
    } else {
      first_starts.push_back(Seconds(submitted_at, s.started) * 1000);
    }
  }
  out["trials"] = summary->value("total", 0);
  const double elapsed = summary->value("elapsed_s", 0.0);
  out["saturated_trials_per_s"] = elapsed > 0 ? double(summary->value("total", 0)) / elapsed : 0.0;
  out["burst_placement_ms"] = Quantiles(first_starts);
  out["saturated_slot_turnaround_ms"] = Quantiles(turnarounds);
  out["saturated_sim_turn_ms"] = Quantiles(c.loop_stats().turn_ms);

  MeasurePlacement(c, *control, o, out);

  // Loss detection: one worker falls silent; the resource-manager's node_lost says when.
  auto events = bus::Connect(c.context(), zmq::socket_type::sub, c.Endpoint("rm-events"),
                             *bus::Security::Plaintext(), bus::kResourceManagerKey);
  if (!events.ok()) return out;
  events->set(zmq::sockopt::subscribe, "");
  c.RunFor(1.5);  // the subscription reaches the publisher; a heartbeat round goes
  const size_t quiet = c.num_workers() - 1;
  const Clock::time_point last = c.Silence(quiet);
  for (auto deadline = Clock::now() + std::chrono::seconds(30);
       Clock::now() < deadline && !Interrupted();) {
    c.Turn(std::chrono::milliseconds(2));
    bus::Incoming in;
    bool lost = false;
    while (!lost && bus::Receive(*events, in)) {
      auto d = proto::Decode(in.payload.data(), in.payload.size());
      if (!d.ok()) continue;
      auto ev = d->As<proto::NodeEvent>();
      lost = ev.ok() && ev->event == "node_lost" && ev->worker_id == c.worker_id(quiet);
    }
    if (lost) {
      out["loss_detection_s"] = Seconds(last, Clock::now());
      break;
    }
  }
  return out;
}

}  // namespace
}  // namespace tunebus::bench

int main(int argc, char** argv) {
  using namespace tunebus::bench;
  Options o;
  CLI::App app{"The resource-manager and the scheduler under N simulated trial-workers"};
  o.Add(app);
  app.add_option("--workers", o.sizes, "worker counts, one line each")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--idle-s", o.idle_s, "seconds of heartbeats measured")->capture_default_str();
  app.add_option("--offered-per-s", o.offered_per_s,
                 "trial completions per s of the placement load")
      ->capture_default_str();
  app.add_option("--load-s", o.load_s, "seconds of the placement window")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  PrepareProcess();
  for (int n : o.sizes) {
    TempDir dir("tunebus-scale");
    if (dir.path().empty()) return 1;
    json line = Measure(o, n, dir.path());
    if (Interrupted()) return 1;
    PrintLine(std::move(line), o);
  }
  return 0;
}
