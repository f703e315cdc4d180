// The checkpoint-store's Prometheus figures (GET /metrics, see libs/metrics).
#include "services/checkpoint-store/checkpoint_store.hpp"

namespace tunebus {

void CheckpointStore::RenderMetrics(metrics::MetricsText& m) {
  m.Counter("group_commits_total", "Synced RocksDB writes that committed journal appends",
            double(group_commits_));
  m.Gauge("append_queue", "Journal appends waiting for the next group commit",
          double(pending_.size()));
  m.Gauge("journals", "Experiment journals in the store", double(journals_->last_seqs().size()));
  m.Gauge("degraded",
          "1 while a failed RocksDB write makes the store refuse writes (it retries RocksDB's "
          "recovery every second), else 0",
          state_ == State::kDegraded ? 1.0 : 0.0);
  m.Counter("recoveries_total", "Times the store went back from degraded to taking writes",
            double(recoveries_));
  const store::StoreDb::MemoryUsage memory = db_->Memory();
  m.Gauge("memtable_bytes", "Bytes in RocksDB's memtables (written, not yet flushed)",
          double(memory.memtables));
  m.Gauge("block_cache_bytes", "Bytes in RocksDB's block cache (point reads' blocks)",
          double(memory.block_cache));
  for (const auto& [type, n] : dispatcher_.counts()) {
    m.Counter("messages_total", "Messages handled, by type", double(n), {{"type", type}});
  }
}

}  // namespace tunebus
