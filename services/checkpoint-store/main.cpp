// checkpoint-store: experiment journals and trial checkpoints in RocksDB, served on a ROUTER
// socket. Flags fall back to TUNEBUS_* environment variables; logging, signals and exit codes
// are libs/service's RunService. SIGTERM/SIGINT stop it cleanly: the loop finishes its round,
// RocksDB is closed, exit 0.
#include "libs/service/chunk_heap.hpp"
#include "libs/service/service_main.hpp"
#include "services/checkpoint-store/checkpoint_store.hpp"

namespace {

void AddFlags(CLI::App& app, tunebus::CheckpointStoreOptions& o) {
  app.add_option("--endpoint", o.endpoint, "ROUTER endpoint to bind")
      ->envname("TUNEBUS_STORE_ENDPOINT")
      ->capture_default_str();
  app.add_option("--data-dir", o.data_dir, "RocksDB directory (created if missing)")
      ->envname("TUNEBUS_STORE_DATA_DIR")
      ->capture_default_str();
  // A flag counts +1 when given (or its variable is true), -1 for "false": sync unless set.
  app.add_flag_function(
         "--no-sync", [&o](int64_t count) { o.sync = count <= 0; },
         "do not fsync before acknowledging writes (faster; acked writes can be lost on a "
         "machine crash, not on a process crash)")
      ->envname("TUNEBUS_STORE_NO_SYNC");
  // A test seam (CheckpointStoreOptions::read_delay): no environment variable, so a deployment
  // cannot turn it on by accident.
  app.add_option_function<int64_t>(
         "--read-delay-ms", [&o](int64_t ms) { o.read_delay = tunebus::bus::Duration{ms}; },
         "testing only: answer journal_list and journal_read this many ms late (a stalled "
         "store); other requests as usual")
      ->check(CLI::NonNegativeNumber);
}

// What --ready-file names, by the flags above.
tunebus::service::BoundEndpoints Endpoints(const tunebus::CheckpointStore& store) {
  return {{"endpoint", store.endpoint()}};
}

}  // namespace

int main(int argc, char** argv) {
  tunebus::service::KeepChunkBuffersInHeap();  // checkpoint chunks: libs/service/chunk_heap.hpp
  return tunebus::service::RunService<tunebus::CheckpointStore>(
      argc, argv, "checkpoint-store",
      "tunebus checkpoint-store: experiment journals and trial checkpoints (RocksDB)", AddFlags,
      Endpoints);
}
