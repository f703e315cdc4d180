// CheckpointTransfer: moves checkpoint directories between a worker's disk and the
// checkpoint-store (proto/store.hpp CheckpointPut / CheckpointGet). A directory travels as a tar
// stream (the system `tar`, run as a child process) cut into proto::kCheckpointChunkBytes
// chunks with at most kChunksInFlight chunks requested and unanswered at a time, so a
// checkpoint of any size (1 GiB and more) never sits whole in memory: a transfer holds about
// kChunksInFlight + 1 chunks. Several in flight keep both ends busy: the store writes (or reads)
// one chunk while tar produces (or unpacks) the next. The store answers one DEALER's requests
// in order, so chunks are stored in order. Runs on the worker's event loop; never starts a
// thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/bus/event_loop.hpp"
#include "libs/bus/request_client.hpp"
#include "libs/core/sha256.hpp"
#include "libs/core/status.hpp"
#include "proto/codec.hpp"

namespace tunebus {

class CheckpointTransfer {
 public:
  /// Called once per transfer with the bytes moved (the tar stream's size), or the error:
  /// Unavailable (store unreachable, or a chunk unanswered for kPutTimeout, the committing one
  /// for kCommitTimeout), IoError (tar failed), or the store's error.
  using Done = std::function<void(Result<int64_t> bytes)>;

  /// How long a chunk before the last may go unanswered: storing one 4 MiB chunk (behind at
  /// most kChunksInFlight - 1 others) takes milliseconds, so an unanswered one went to a store
  /// that died, and the caller's retry reaches its successor that much sooner than after the
  /// request client's default 10 s.
  static constexpr bus::Duration kPutTimeout{3000};
  /// How long the committing chunk may go unanswered: the store first flushes its memtables
  /// (up to RocksDB's write_buffer_size each, synced) and then commits with a synced write.
  static constexpr bus::Duration kCommitTimeout{30000};
  /// Chunks requested and not yet answered, per transfer, at most.
  static constexpr int kChunksInFlight = 3;

  CheckpointTransfer(bus::EventLoop& loop, bus::RequestClient& store);
  ~CheckpointTransfer();  // kills and reaps unfinished tar processes; their Done is not called

  /// Stores directory `dir` as `checkpoint_id`; `metadata` (a JSON object) is committed with
  /// the last chunk.
  void Upload(const std::string& dir, const std::string& checkpoint_id, nlohmann::json metadata,
              Done done);
  /// Fetches `checkpoint_id` and unpacks it into `dir` (created if missing). With a non-empty
  /// `expected_sha256`, the fetched bytes' SHA-256 must equal it, else the error is Corruption
  /// ("digest mismatch") and `dir` may hold part of it (the caller removes it).
  void Download(const std::string& checkpoint_id, const std::string& dir, Done done,
                const std::string& expected_sha256 = "");

 private:
  struct Job {
    uint64_t id = 0;
    std::string checkpoint_id;
    nlohmann::json metadata;
    pid_t pid = -1;
    int fd = -1;               // tar's stdout (upload) or stdin (download)
    bool polled = false;       // fd registered with the loop
    std::vector<char> buffer;  // upload: one chunk's room, allocated once
    size_t filled = 0;         // upload: bytes of `buffer` read from tar for the next chunk
    uint32_t chunk = 0;        // upload: the next chunk to send; download: the next to unpack
    int in_flight = 0;         // chunks requested and not answered yet
    int64_t bytes = 0;
    bool eof = false;  // upload: tar's output ended (the last chunk is sent)
    // download: the next chunk to request, the checkpoint's chunk count (0 = not known yet:
    // before chunk 0's reply), and chunks received ahead of `chunk`, kept until it is unpacked.
    uint32_t next_request = 0;
    uint32_t num_chunks = 0;
    std::map<uint32_t, std::vector<char>> arrived;
    std::string expected_sha256;   // download: "" = not checked
    std::unique_ptr<Sha256> hash;  // download: of the chunks so far, with expected_sha256
    Done done;
  };
  void OnUploadReadable(uint64_t job_id);
  void SendChunk(Job& job, bool last);
  void OnChunkStored(uint64_t job_id, bool last, Result<proto::Decoded> reply);
  /// Requests chunks until kChunksInFlight are unanswered or every chunk is requested.
  void RequestChunks(uint64_t job_id);
  void OnChunkFetched(uint64_t job_id, uint32_t index, Result<proto::Decoded> reply);
  void Finish(uint64_t job_id, Status status);
  Job* FindJob(uint64_t job_id);

  bus::EventLoop& loop_;
  bus::RequestClient& store_;
  std::map<uint64_t, std::unique_ptr<Job>> jobs_;
  uint64_t next_id_ = 1;
};

}  // namespace tunebus
