// The scheduler's Prometheus figures (GET /metrics, see libs/metrics).
#include <algorithm>
#include <map>

#include "proto/worker.hpp"
#include "services/scheduler/core/experiment.hpp"
#include "services/scheduler/scheduler.hpp"

namespace tunebus {

void Scheduler::RenderMetrics(metrics::MetricsText& m) {
  std::map<std::string, uint64_t> handled = control_dispatcher_->counts();
  for (const auto& [type, n] : worker_dispatcher_->counts()) handled[type] += n;
  if (node_events_ > 0) handled["node_event"] += node_events_;
  const SteadyTime now = clock_.Now();
  const uint64_t results = results_received_ + handled[proto::ReportResult::kType];
  const double dt = std::chrono::duration<double>(now - metrics_last_at_).count();
  const double rate = metrics_last_at_ == SteadyTime{} || dt <= 0
                          ? 0
                          : double(results - metrics_last_results_) / dt;
  metrics_last_results_ = results;
  metrics_last_at_ = now;

  // Summed over the experiments in this process (finished ones too, until it exits).
  std::map<TrialStatus, int64_t> counts;
  double latency_s = 0, queued = 0, failing = 0;
  for (const auto& e : experiments_) {
    for (const auto& [status, n] : e->runner().CountByStatus()) counts[status] += n;
    const journal::JournalWriter& w = e->journal();
    latency_s = std::max(latency_s, w.last_append_latency_s());
    queued += double(w.appended() - w.durable());
    if (w.state() == journal::JournalWriter::State::kFailing) failing = 1;
  }
  for (TrialStatus s : {TrialStatus::kPending, TrialStatus::kRunning, TrialStatus::kPaused,
                        TrialStatus::kTerminated, TrialStatus::kError}) {
    auto it = counts.find(s);
    m.Gauge("trials", "Trials of the experiments in this scheduler by status",
            it == counts.end() ? 0 : double(it->second), {{"status", TrialStatusName(s)}});
  }
  m.Gauge("results_per_second", "Results received per second over the last interval", rate);
  m.Counter("results_total", "Results received from workers", double(results));
  m.Gauge("journal_append_latency_seconds",
          "Time from sending the newest journal batch to its durable ack (the slowest journal)",
          latency_s);
  m.Gauge("journal_queue_records", "Journal records appended but not durable yet, all journals",
          queued);
  m.Gauge("journal_writes_failing",
          "1 while an experiment's journal appends fail (retried; effects held)", failing);
  m.Gauge("store_degraded", "1 while the checkpoint-store says it refuses writes",
          store_health_->state() == StoreHealth::State::kDegraded ? 1 : 0);
  m.Gauge("workers_connected", "Workers registered with this scheduler process",
          double(worker_registry_.registered_count()));
  for (const auto& [type, n] : handled) {
    m.Counter("messages_total", "Messages handled, by type", double(n), {{"type", type}});
  }
}

}  // namespace tunebus
