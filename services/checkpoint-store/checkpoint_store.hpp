// CheckpointStore: the checkpoint-store service (DESIGN.md "checkpoint-store", "Journal and
// recovery"; messages in proto/store.hpp).
//
// Owns a RocksDB database (StoreDb, key layout in store_db.hpp) holding experiment journals
// (JournalStore) and trial checkpoints (CheckpointBlobStore), and serves them on one ROUTER
// socket to DEALER (or REQ) peers. Every request gets exactly one reply: the expected reply,
// or a proto::ErrorReply whose `code` is a StatusCodeName:
//   invalid_argument    undecodable frame, unknown type, malformed fields, input over a limit
//                       (limits in journal_store.hpp / checkpoint_blob_store.hpp)
//   failed_precondition wrong protocol version; checkpoint chunk out of order or id committed
//   not_found           checkpoint_get of an unknown/uncommitted id or chunk
//   resource_exhausted  checkpoint_list matches too many checkpoints
//   io_error            RocksDB failed; the store then refuses writes (State::kDegraded)
//   corruption          stored bytes are inconsistent (journal gap, bad meta)
// A bad request never changes state; the service keeps serving.
//
// Degraded and healing: a RocksDB write that fails with an I/O error (the data
// folder's disk is full, say) puts the store in kDegraded: write requests (journal_append,
// journal_truncate, checkpoint_put, checkpoint_delete) answer io_error naming the time and
// RocksDB's error, reads are served from what is stored. While degraded, a timer on the loop
// calls StoreDb::Resume() (RocksDB's DB::Resume()) every kResumeInterval; once it succeeds the
// store serves writes again, without a restart, and counts a recovery. Every write acknowledged
// before the failure stays readable; a refused write was never acknowledged, so its sender
// retries it (the scheduler's journal appends do). store_status reports the state, its reason,
// the time of the last change and the recoveries; so do the metrics (`degraded`,
// `recoveries_total`) and /healthz's body ("ok" or "degraded: <reason>", still HTTP 200: the
// loop runs, reads are served and the store heals itself, which a container restart would not
// speed up).
//
// Group commit: each poll round drains every frame queued on the socket (up to
// kMaxFramesPerRound); the journal_appends among them are written in ONE synced WriteBatch
// and then acknowledged in arrival order, so an ack means the records are durable and
// throughput does not pay one fsync per append. A journal_read or journal_list first flushes
// the appends received before it, so it sees every append that arrived before it.
// Checkpoint uploads are synced on their committing (last) chunk only.
//
// Threading: Create() on any thread; Run() on one thread that then owns the socket and the
// DB; Stop() from anywhere (including a signal handler). The DB closes on destruction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "libs/bus/event_loop.hpp"
#include "libs/bus/socket.hpp"
#include "libs/core/clock.hpp"
#include "libs/core/status.hpp"
#include "libs/metrics/metrics_publisher.hpp"
#include "libs/service/message_dispatcher.hpp"
#include "services/checkpoint-store/checkpoint_blob_store.hpp"
#include "services/checkpoint-store/journal_store.hpp"
#include "services/checkpoint-store/store_db.hpp"

namespace tunebus {

struct CheckpointStoreOptions {
  /// ROUTER bind address; "tcp://127.0.0.1:0" picks a free port (see endpoint()).
  std::string endpoint = "tcp://127.0.0.1:5557";
  /// RocksDB directory, created (with parents) if missing. One store per directory.
  std::string data_dir = "./tunebus-store";
  /// fsync the WAL before acking journal appends, checkpoint commits and deletes. false
  /// survives a process crash but may lose acked writes on a machine crash.
  bool sync = true;
  metrics::MetricsOptions metrics;  // --metrics-port / --metrics-host (0 = off)
  /// CURVE keys and bind checks of its sockets (RunService loads it from --keys-dir).
  std::shared_ptr<bus::Security> security = bus::Security::Plaintext();
  /// Times the recovery retries and the state changes that store_status reports; tests pass a
  /// ManualClock. Outlives the service.
  const Clock* clock = &Clock::Real();
  /// Test seam (--read-delay-ms): journal_list and journal_read replies are sent this long after
  /// the request (a stalled store, for the test that the scheduler decides meanwhile); their
  /// content is read at once, so they see every append before them. Other requests, appends
  /// among them, are answered as usual. 0 = at once.
  bus::Duration read_delay{0};
  /// Test seam: the file system RocksDB writes through (a rocksdb::FileSystemWrapper that
  /// injects faults, see StoreDb::Open); null = the real one.
  std::shared_ptr<rocksdb::FileSystem> file_system;
};

class CheckpointStore {
 public:
  enum class State {
    kReady,     // DB open and socket bound; Run() not called yet
    kServing,   // Run() is polling; every request is served
    kDegraded,  // a RocksDB write failed: writes answer io_error, reads are still served, and
                // RocksDB's recovery is retried every kResumeInterval; back to kServing once it
                // succeeds (no restart needed)
    kStopped,   // Run() returned; the DB stays open until the object is destroyed
  };

  /// Frames handled per poll round before returning to the loop (bounds Stop() latency).
  static constexpr size_t kMaxFramesPerRound = 4096;
  /// A pending group-commit batch is flushed early once it holds this many journal parts/bytes.
  static constexpr size_t kMaxBatchAppends = 4096;
  static constexpr size_t kMaxBatchBytes = 64u << 20;
  /// How often a degraded store asks RocksDB to recover (StoreDb::Resume()).
  static constexpr bus::Duration kResumeInterval{1000};

  /// Opens the DB in options.data_dir and binds options.endpoint.
  /// Errors: IoError/Corruption (the DB cannot be opened, e.g. locked by another store),
  /// Unavailable (cannot bind).
  static Result<std::unique_ptr<CheckpointStore>> Create(zmq::context_t& ctx,
                                                         CheckpointStoreOptions options);
  ~CheckpointStore();
  CheckpointStore(const CheckpointStore&) = delete;
  CheckpointStore& operator=(const CheckpointStore&) = delete;

  /// Serves until Stop(). Call once.
  void Run();
  /// Thread- and signal-safe.
  void Stop() { loop_.Stop(); }
  /// The bound endpoint, with the real port when options.endpoint used port 0.
  std::string endpoint() const { return endpoint_; }

  /// REQUIRES: Run() is not running (before it or after it returned).
  State state() const { return state_; }
  /// Messages handled per type ("<malformed>" for undecodable frames, "<unknown>" for
  /// unknown types). REQUIRES: Run() is not running.
  const std::map<std::string, uint64_t>& message_counts() const { return dispatcher_.counts(); }
  /// Synced journal writes so far; each covers every append of its poll round (group commit).
  /// REQUIRES: Run() is not running.
  uint64_t group_commits() const { return group_commits_; }
  /// Times the store went from kDegraded back to kServing. REQUIRES: Run() is not running.
  uint64_t recoveries() const { return recoveries_; }

 private:
  /// A journal_append or journal_append_many waiting for the group commit: its parts are
  /// pending_parts_[first, first + count).
  struct PendingAppend {
    bus::Incoming reply_to;  // route frames only
    uint64_t id = 0;
    bool many = false;  // journal_append_many: one JournalAppendManyAck for all its parts
    size_t first = 0, count = 0;
  };

  CheckpointStore(CheckpointStoreOptions options, std::unique_ptr<store::StoreDb> db,
                  std::unique_ptr<store::JournalStore> journals, zmq::socket_t router);

  void OnReadable();
  Status HandleJournalAppend(bus::Incoming& in, const proto::Decoded& msg);
  Status HandleJournalAppendMany(bus::Incoming& in, const proto::Decoded& msg);
  /// Queues a validated request's parts for the next group commit.
  void QueueAppend(bus::Incoming& in, uint64_t id, bool many,
                   std::vector<store::JournalAppendRequest> parts);
  Status HandleJournalRead(bus::Incoming& in, const proto::Decoded& msg);
  Status HandleJournalList(bus::Incoming& in, const proto::Decoded& msg);
  /// Sends a journal_read / journal_list reply, options_.read_delay later when that is set.
  template <typename M>
  void ReplyToRead(const bus::Incoming& in, M reply);
  Status HandleJournalTruncate(bus::Incoming& in, const proto::Decoded& msg);
  Status HandleCheckpointPut(bus::Incoming& in, const proto::Decoded& msg);
  Status HandleCheckpointGet(bus::Incoming& in, const proto::Decoded& msg);
  Status HandleCheckpointList(bus::Incoming& in, const proto::Decoded& msg);
  Status HandleCheckpointDelete(bus::Incoming& in, const proto::Decoded& msg);
  Status HandleExperimentDelete(bus::Incoming& in, const proto::Decoded& msg);
  Status HandleStoreStatus(bus::Incoming& in, const proto::Decoded& msg);

  /// Writes the pending appends in one synced batch and acks (or fails) each.
  void FlushAppends();
  /// IoError while kDegraded (a write request is then refused), else Ok.
  Status RefuseWriteIfDegraded() const;
  /// Enters kDegraded if `status` is a storage failure, and starts the recovery timer.
  void NoteWriteFailure(const Status& status);
  /// The recovery timer (kDegraded only): StoreDb::Resume(); back to kServing if it succeeds.
  void TryResume();
  /// /healthz's body: "ok", or "degraded: <reason>".
  std::string HealthText() const;
  /// Answers a request FlushAppends could not write.
  void ReplyAppendError(const PendingAppend& append, const Status& status);

  CheckpointStoreOptions options_;
  std::unique_ptr<store::StoreDb> db_;  // declared first: destroyed after the stores using it
  std::unique_ptr<store::JournalStore> journals_;
  store::CheckpointBlobStore checkpoints_;
  zmq::socket_t router_;
  std::string endpoint_;
  bus::EventLoop loop_;
  State state_ = State::kReady;
  std::vector<PendingAppend> pending_;
  std::vector<store::JournalAppendRequest> pending_parts_;  // every pending_ request's parts
  size_t pending_bytes_ = 0;
  service::MessageDispatcher dispatcher_;  // one handler per request type; counts messages
  uint64_t group_commits_ = 0;
  // kDegraded's bookkeeping (store_status, metrics, the refusal's message).
  std::string degraded_reason_;    // RocksDB's error that degraded the store; "" while serving
  double state_since_unix_s_ = 0;  // wall time of the last kServing <-> kDegraded change; 0 = none
  SteadyTime degraded_at_{};       // when the store last entered kDegraded (loop clock)
  uint64_t recoveries_ = 0;
  uint64_t failed_resumes_ = 0;  // of the current outage
  bus::EventLoop::TimerId resume_timer_ = 0;
  /// Prometheus figures (<service>_metrics.cpp), rendered on the loop thread every second.
  void RenderMetrics(metrics::MetricsText& m);
  metrics::MetricsPublisher metrics_;
};

}  // namespace tunebus
