// Many experiments at once, on the harness of bench/sim_cluster.hpp: the real
// checkpoint-store, resource-manager and scheduler binaries and --workers simulated one-CPU
// trial-workers in this process (real sockets, the real protocol), a fresh suite per run. Prints
// two JSON lines:
//
//   many_experiments_throughput: --experiments E experiments of --trials T noop trials each
//       (answered at once with one result and a trial_exited), all submitted at once, against one
//       experiment of E x T noop trials, alternated --rounds times (the median of each side and of
//       the per-round ratios; every round's figure in runs_*):
//     single.trials_per_s, many.trials_per_s  trials over the time from the submission to the
//         last trial_exited (s);
//     ratio  many.trials_per_s / single.trials_per_s (the target: >= 0.9);
//     runs_submit_s  from the submissions' send to the last one's answer (s);
//     runs_longest_start_gap_ms  the longest time in the run in which no worker got a trial (ms):
//         the scheduler's longest stall as the workers saw it;
//     runs_cpu_us_per_trial {scheduler, checkpoint_store, resource_manager}  each service's CPU
//         (/proc/<pid>/stat, user + system, all its threads) from the submission to the last
//         trial_exited, per trial (us; /proc's ticks are 10 ms);
//     single.lsx_ms, many.lsx_ms {p50, p99, max, n}  the latency of tunectl lsx's control
//         request (list_experiments on a DEALER, as `tunectl lsx` sends it; the binary's own
//         start-up is not in it), one in flight every --lsx-interval-ms from a thread of its own,
//         while the experiments run; all rounds' samples;
//   many_experiments_fair_share: E experiments of T trials at equal weights, submitted at once;
//       each trial holds its slot uniform in [0.5 D, 1.5 D] s, D = workers / --offered-per-s
//       (about 200 completions per s), so slots are what the experiments compete for:
//     jain_index  Jain's fairness index (Jain, Chiu, Hawe 1984) of the experiments' slot-seconds,
//         J = (sum x)^2 / (E sum x^2), in [1/E, 1]; slot-seconds of an experiment: the time its
//         trials held a worker (start_trial read to trial_exited sent), over the window from the
//         last submission's answer + 1.5 D (every trial placed before the quotas knew all E has
//         ended) to the first moment an experiment has no pending trial left (its last trial's
//         start);
//     window_s, slot_s {min, mean, max} (s), fair_slot_s  workers x window_s / E (s),
//     slot_utilization  sum of slot-seconds / (workers x window_s);
//     placement_ms {p50, p99, max, n}  a worker's trial_exited to its next start_trial in the
//         window; lsx_ms  as above, requests sent in the window; lsx_ms_whole_run  all of them;
//     trials_per_s  of the whole run; longest_start_gap_ms  as above;
//     sim_turn_ms, sim_exit_lag_ms  the simulator's own turns and how late it ended held trials.
// With workers a multiple of E (100 workers, 50 experiments) every experiment's quota is equal
// (2 each); otherwise the extra slots rotate by attained service (docs/explanation/fair-share.md).
// Usage: many_experiments --bin BUILD/bin [--workers 100] [--experiments 50] [--trials 200]
//                         [--rounds 3] [--offered-per-s 200] [--lsx-interval-ms 20]
//                         [--log-level warn] [--keep-logs DIR] [--only throughput|fair_share]
//                         [--result-files tmpfs|disk]
//   --log-level: the services'; --keep-logs: copy their logs to DIR/<run>-<service>.log;
//   --only: that line alone; --result-files: where the scheduler writes the trials' result files
//   (tmpfs by default, see SimCluster; the journal is synced to the disk either way; each line
//   says which in "result_files").

#include <atomic>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/sim_cluster.hpp"
#include "libs/bus/domains.hpp"

namespace tunebus::bench {
namespace {

using json = nlohmann::json;

struct Options : HarnessOptions {
  int workers = 100;
  int experiments = 50;
  int64_t trials = 200;  // per experiment
  int rounds = 3;
  double offered_per_s = 200;
  int lsx_interval_ms = 20;
  bool throughput = true, fair_share = true;  // the lines to measure
};

// `tunectl lsx`'s control request, list_experiments on a DEALER to the control socket, sent from
// a thread of its own with one in flight, every `interval_ms` after the last answer: each
// answer's latency (ms).
class ListExperimentsProbe {
 public:
  ListExperimentsProbe(zmq::context_t& ctx, std::string endpoint, int interval_ms)
      : thread_([this, &ctx, endpoint = std::move(endpoint), interval_ms] {
          Run(ctx, endpoint, interval_ms);
        }) {}
  ~ListExperimentsProbe() { Stop(); }

  /// Stops the thread; each answered request's send time and latency (ms).
  const std::vector<std::pair<Clock::time_point, double>>& Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return latencies_ms_;
  }
  /// Requests not answered within 10 s.
  size_t unanswered() const { return unanswered_; }

 private:
  void Run(zmq::context_t& ctx, const std::string& endpoint, int interval_ms) {
    auto control = bus::Connect(ctx, zmq::socket_type::dealer, endpoint,
                                *bus::Security::Plaintext(), bus::kSchedulerKey);
    if (!control.ok()) return;
    for (uint64_t id = 1; !stop_; ++id) {
      proto::ListExperiments lsx;
      lsx.id = id;
      const auto sent = Clock::now();
      bus::SendMessage(*control, lsx);
      bool answered = false;
      while (!answered && !stop_ && Clock::now() - sent < std::chrono::seconds(10)) {
        zmq::pollitem_t item{control->handle(), 0, ZMQ_POLLIN, 0};
        zmq::poll(&item, 1, std::chrono::milliseconds(100));
        bus::Incoming in;
        while (bus::Receive(*control, in)) {
          auto d = proto::Decode(in.payload.data(), in.payload.size());
          if (!d.ok() || d->id() != id) continue;  // a late answer to an earlier request
          answered = true;
          if (d->type() == proto::ControlReply::kType) {
            latencies_ms_.emplace_back(sent, Seconds(sent, Clock::now()) * 1000);
          }
        }
      }
      if (!answered && !stop_) ++unanswered_;
      for (int slept = 0; slept < interval_ms && !stop_; ++slept) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
  }

  std::atomic<bool> stop_{false};
  std::vector<std::pair<Clock::time_point, double>> latencies_ms_;
  size_t unanswered_ = 0;
  std::thread thread_;  // last: starts once the rest is made
};

std::string ExperimentName(int i, int experiments) {
  if (experiments == 1) return "single";
  char name[16];
  std::snprintf(name, sizeof name, "e%02d", i);
  return name;
}

// One suite, `experiments` experiments of `trials` one-CPU trials each submitted at once; the
// trials hold their slot `hold_s()` s (nullptr: noop). Turns until every trial exited.
struct SuiteRun {
  bool ok = false;
  Clock::time_point submitted{};     // the submissions were sent
  Clock::time_point all_accepted{};  // the last submission was answered
  Clock::time_point last_exit{};     // the last trial_exited
  std::vector<TrialSpan> spans;
  SimLoopStats loop;
  std::vector<std::pair<Clock::time_point, double>> lsx_ms;  // send time, latency (ms)
  size_t lsx_unanswered = 0;
  json experiments;  // list_experiments' rows at the end
  // CPU seconds each service used from the submission to the last trial_exited.
  double scheduler_cpu_s = 0, store_cpu_s = 0, rm_cpu_s = 0;
};

SuiteRun RunSuite(const Options& o, const std::string& tag, int workers, int experiments,
                  int64_t trials, std::function<double()> hold_s, double timeout_s) {
  SuiteRun run;
  TempDir dir("tunebus-many");
  if (dir.path().empty()) return run;
  SimCluster c(o.bin, dir.path(), 1000, o.result_files_on_tmpfs);
  c.KeepLogs(o.keep_logs, tag);
  if (!c.StartServices(o.log_level) || !c.AddWorkers(workers)) return run;
  auto control = c.ConnectControl();
  if (!control || !c.WaitWorkersAlive(*control, size_t(workers))) return run;
  c.RunFor(1);  // settle
  std::vector<proto::SubmitExperiment> submits;
  for (int i = 0; i < experiments; ++i) {
    const std::string name = ExperimentName(i, experiments);
    proto::SubmitExperiment s;
    s.spec_yaml = "name: " + name +
                  "\ntrainable: {builtin: noop}\nparam_space: {x: {uniform: [0, 1]}}\n"
                  "num_samples: " +
                  std::to_string(trials) +
                  "\nmetric: score\nmode: max\nresources_per_trial: {cpu: 1}\n";
    s.base_dir = dir.path().string();
    s.source_name = name + ".yaml";
    submits.push_back(std::move(s));
  }
  const size_t total = size_t(experiments) * size_t(trials);
  {
    ListExperimentsProbe probe(c.context(), c.Endpoint("control"), o.lsx_interval_ms);
    c.ClearSpans();
    c.set_hold(std::move(hold_s));
    const double sch0 = CpuSeconds(c.scheduler_pid()), store0 = CpuSeconds(c.store_pid()),
                 rm0 = CpuSeconds(c.rm_pid());
    run.submitted = Clock::now();
    for (const auto& accepted : c.ControlAll(*control, submits)) {
      if (!accepted) return run;
    }
    run.all_accepted = Clock::now();
    if (!c.RunUntil([&] { return c.trials_exited() >= total; }, timeout_s)) {
      std::fprintf(stderr, "many_experiments: %zu of %zu trials exited within %.0f s\n",
                   c.trials_exited(), total, timeout_s);
      return run;
    }
    run.scheduler_cpu_s = CpuSeconds(c.scheduler_pid()) - sch0;
    run.store_cpu_s = CpuSeconds(c.store_pid()) - store0;
    run.rm_cpu_s = CpuSeconds(c.rm_pid()) - rm0;
    run.lsx_ms = probe.Stop();
    run.lsx_unanswered = probe.unanswered();
  }
  run.spans = c.spans();
  run.loop = c.loop_stats();
  for (const TrialSpan& s : run.spans) {
    if (s.exited) run.last_exit = std::max(run.last_exit, *s.exited);
  }
  // Every experiment finished with every trial TERMINATED.
  const bool finished = c.RunUntil(
      [&] {
        auto rows = c.Control(*control, proto::ListExperiments{});
        if (!rows) return false;
        size_t done = 0;
        for (const json& row : *rows) {
          done += row.value("status", "") == "FINISHED" &&
                  row.value("counts", json::object()).value("TERMINATED", int64_t(0)) == trials;
        }
        run.experiments = *rows;
        return done == size_t(experiments);
      },
      30);
  if (!finished) {
    std::fprintf(stderr, "many_experiments: not every experiment finished: %s\n",
                 run.experiments.dump().c_str());
    return run;
  }
  run.ok = true;
  return run;
}

double Median(std::vector<double> v) { return Percentile(std::move(v), 50); }

// The latencies (ms) of the requests sent in [from, to].
std::vector<double> LatenciesIn(const std::vector<std::pair<Clock::time_point, double>>& samples,
                                Clock::time_point from, Clock::time_point to) {
  std::vector<double> out;
  for (const auto& [at, ms] : samples) {
    if (at >= from && at <= to) out.push_back(ms);
  }
  return out;
}

// The longest time (ms) from the submission to the last start in which no worker was given a
// trial: the scheduler's longest stall in the run, as the workers saw it.
double LongestStartGapMs(const SuiteRun& run) {
  Clock::time_point last = run.submitted;
  double longest = 0;
  for (const TrialSpan& s : run.spans) {  // in start order
    longest = std::max(longest, Seconds(last, s.started) * 1000);
    last = s.started;
  }
  return longest;
}

json Throughput(const Options& o) {
  const int64_t total = int64_t(o.experiments) * o.trials;
  json out = {{"benchmark", "many_experiments_throughput"},
              {"workers", o.workers},
              {"experiments", o.experiments},
              {"trials_per_experiment", o.trials},
              {"rounds", o.rounds},
              {"lsx_interval_ms", o.lsx_interval_ms}};
  struct Side {
    std::vector<double> trials_per_s, submit_s, longest_gap_ms, lsx_ms;
    std::vector<json> cpu_us_per_trial;
  } single, many;
  std::vector<double> ratios;
  size_t unanswered = 0;
  const double timeout_s = 60 + double(total) / 50;
  auto note = [](const SuiteRun& run, int64_t trials, Side& side) {
    side.trials_per_s.push_back(double(trials) / Seconds(run.submitted, run.last_exit));
    side.submit_s.push_back(Seconds(run.submitted, run.all_accepted));
    side.longest_gap_ms.push_back(LongestStartGapMs(run));
    side.cpu_us_per_trial.push_back({{"scheduler", run.scheduler_cpu_s * 1e6 / double(trials)},
                                     {"checkpoint_store", run.store_cpu_s * 1e6 / double(trials)},
                                     {"resource_manager", run.rm_cpu_s * 1e6 / double(trials)}});
    for (const auto& [at, ms] : run.lsx_ms) side.lsx_ms.push_back(ms);
  };
  for (int r = 0; r < o.rounds && !Interrupted(); ++r) {
    SuiteRun one =
        RunSuite(o, "single-" + std::to_string(r), o.workers, 1, total, nullptr, timeout_s);
    if (!one.ok) return out;
    SuiteRun all = RunSuite(o, "many-" + std::to_string(r), o.workers, o.experiments, o.trials,
                            nullptr, timeout_s);
    if (!all.ok) return out;
    note(one, total, single);
    note(all, total, many);
    ratios.push_back(many.trials_per_s.back() / single.trials_per_s.back());
    unanswered += one.lsx_unanswered + all.lsx_unanswered;
  }
  auto side_json = [total](const Side& side, int experiments) {
    return json{{"experiments", experiments},
                {"trials", total},
                {"trials_per_s", Median(side.trials_per_s)},
                {"runs_trials_per_s", side.trials_per_s},
                {"runs_submit_s", side.submit_s},
                {"runs_longest_start_gap_ms", side.longest_gap_ms},
                {"runs_cpu_us_per_trial", side.cpu_us_per_trial},
                {"lsx_ms", Quantiles(side.lsx_ms)}};
  };
  out["single"] = side_json(single, 1);
  out["many"] = side_json(many, o.experiments);
  out["ratio"] = Median(ratios);
  out["runs_ratio"] = ratios;
  out["lsx_unanswered"] = unanswered;
  return out;
}

json FairShare(const Options& o) {
  const double mean_hold_s = double(o.workers) / o.offered_per_s;
  json out = {{"benchmark", "many_experiments_fair_share"},
              {"workers", o.workers},
              {"experiments", o.experiments},
              {"trials_per_experiment", o.trials},
              {"offered_trials_per_s", o.offered_per_s},
              {"hold_s", {{"min", 0.5 * mean_hold_s}, {"max", 1.5 * mean_hold_s}}},
              {"lsx_interval_ms", o.lsx_interval_ms}};
  std::mt19937_64 rng(34);
  std::uniform_real_distribution<double> hold(0.5 * mean_hold_s, 1.5 * mean_hold_s);
  const double expected_s = double(o.experiments) * double(o.trials) / o.offered_per_s;
  SuiteRun run = RunSuite(
      o, "fair", o.workers, o.experiments, o.trials, [&rng, &hold] { return hold(rng); },
      60 + 3 * expected_s);
  if (!run.ok) return out;
  // The window: quotas hold for every experiment, and each still has pending trials.
  const auto from = run.all_accepted + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(1.5 * mean_hold_s));
  std::map<std::string, Clock::time_point> last_start;
  for (const TrialSpan& s : run.spans) {
    last_start[s.experiment] = std::max(last_start[s.experiment], s.started);
  }
  auto to = Clock::time_point::max();
  for (const auto& [name, at] : last_start) to = std::min(to, at);
  if (last_start.size() != size_t(o.experiments) || to <= from) {
    std::fprintf(stderr,
                 "many_experiments: no window where all %d experiments had pending trials\n",
                 o.experiments);
    return out;
  }
  std::map<std::string, double> slot_s;
  for (const auto& [name, at] : last_start) slot_s[name] = 0;
  std::vector<double> placement;
  for (const TrialSpan& s : run.spans) {
    if (!s.exited) continue;
    const auto begin = std::max(s.started, from), end = std::min(*s.exited, to);
    if (end > begin) slot_s[s.experiment] += Seconds(begin, end);
    if (s.worker_freed && s.started >= from && s.started <= to) {
      placement.push_back(Seconds(*s.worker_freed, s.started) * 1000);
    }
  }
  double sum = 0, sum_sq = 0, lo = 1e300, hi = 0;
  for (const auto& [name, x] : slot_s) {
    sum += x;
    sum_sq += x * x;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  const double window_s = Seconds(from, to);
  out["window_s"] = window_s;
  out["jain_index"] = sum_sq > 0 ? sum * sum / (double(slot_s.size()) * sum_sq) : 0.0;
  out["slot_s"] = {{"min", lo}, {"mean", sum / double(slot_s.size())}, {"max", hi}};
  out["fair_slot_s"] = double(o.workers) * window_s / double(o.experiments);
  out["slot_utilization"] = sum / (double(o.workers) * window_s);
  out["placement_ms"] = Quantiles(placement);
  out["lsx_ms"] = Quantiles(LatenciesIn(run.lsx_ms, from, to));
  std::vector<double> all_lsx;
  for (const auto& [at, ms] : run.lsx_ms) all_lsx.push_back(ms);
  out["lsx_ms_whole_run"] = Quantiles(all_lsx);
  out["lsx_unanswered"] = run.lsx_unanswered;
  out["trials_per_s"] =
      double(o.experiments) * double(o.trials) / Seconds(run.submitted, run.last_exit);
  out["longest_start_gap_ms"] = LongestStartGapMs(run);
  out["sim_turn_ms"] = Quantiles(run.loop.turn_ms);
  out["sim_exit_lag_ms"] = Quantiles(run.loop.exit_lag_ms);
  return out;
}

}  // namespace
}  // namespace tunebus::bench

int main(int argc, char** argv) {
  using namespace tunebus::bench;
  Options o;
  CLI::App app{"Many experiments at once against one: throughput, fair share, lsx latency"};
  o.Add(app);
  app.add_option("--workers", o.workers, "simulated one-CPU workers")->capture_default_str();
  app.add_option("--experiments", o.experiments, "experiments at once")
      ->check(CLI::Range(2, 100000))
      ->capture_default_str();
  app.add_option("--trials", o.trials, "trials per experiment")->capture_default_str();
  app.add_option("--rounds", o.rounds, "alternated single/many rounds of the throughput line")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--offered-per-s", o.offered_per_s, "trial completions per s (fair share)")
      ->capture_default_str();
  app.add_option("--lsx-interval-ms", o.lsx_interval_ms, "ms between lsx requests")
      ->capture_default_str();
  app.add_option_function<std::string>(
         "--only",
         [&o](const std::string& line) {
           o.throughput = line == "throughput";
           o.fair_share = line == "fair_share";
         },
         "measure one line only")
      ->check(CLI::IsMember({"throughput", "fair_share"}));
  CLI11_PARSE(app, argc, argv);
  PrepareProcess();
  for (json (*measure)(const Options&) : {&Throughput, &FairShare}) {
    if (measure == &Throughput ? !o.throughput : !o.fair_share) continue;
    json line = measure(o);
    if (Interrupted()) return 1;
    PrintLine(std::move(line), o);
  }
  return 0;
}
