// The trial-worker's Prometheus figures (GET /metrics, see libs/metrics).
#include "services/trial-worker/trial_worker.hpp"

namespace tunebus {

void TrialWorker::RenderMetrics(metrics::MetricsText& m) {
  int64_t running = 0, unacked = 0;
  for (const auto& [key, run] : runs_) {
    running += !run->has_exited();
    unacked += int64_t(run->reports.unacked.size());
  }
  m.Gauge("trials_running", "Trainables running on this worker", double(running));
  m.Gauge("unacked_results", "Results sent but not acknowledged by the scheduler yet",
          double(unacked));
  for (const auto& [type, n] : dispatcher_.counts()) {
    m.Counter("messages_total", "Messages handled, by type", double(n), {{"type", type}});
  }
}

}  // namespace tunebus
