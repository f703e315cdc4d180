// The resource-manager's Prometheus figures (GET /metrics, see libs/metrics): workers alive and
// resources per worker (capacity, committed, free) in whole units (bytes for memory).
#include "services/resource-manager/resource_manager.hpp"

namespace tunebus {

void ResourceManager::RenderMetrics(metrics::MetricsText& m) {
  const proto::ClusterView view = cluster_.View();
  m.Gauge("workers_alive", "Workers alive (heartbeating)", double(cluster_.alive_count()));
  m.Gauge("allocations", "Trial attempts holding resources", double(cluster_.allocation_count()));
  for (const char* what : {"capacity", "committed", "free"}) {
    for (const proto::NodeView& n : view.nodes) {
      if (!n.alive) continue;
      for (const auto& [resource, capacity] : n.capacity) {
        auto it = n.committed.find(resource);
        const int64_t committed = it == n.committed.end() ? 0 : it->second;
        const int64_t units = std::string(what) == "capacity"    ? capacity
                              : std::string(what) == "committed" ? committed
                                                                 : capacity - committed;
        m.Gauge(std::string("resources_") + what, std::string("Resources ") + what + " per worker",
                double(units) / double(Resources::kScale),
                {{"worker", n.worker_id}, {"resource", resource}});
      }
    }
  }
  for (const auto& [type, n] : dispatcher_.counts()) {
    m.Counter("messages_total", "Messages handled, by type", double(n), {{"type", type}});
  }
}

}  // namespace tunebus
