// CheckpointTransfer: moves checkpoint directories between a worker's disk and the
// checkpoint-store (proto/store.hpp CheckpointPut / CheckpointGet). A directory travels as a tar
// stream (the system `tar`, run as a child process) cut into proto::kCheckpointChunkBytes
// chunks with one chunk in flight at a time, so a checkpoint of any size (100 MiB and more)
// never sits whole in memory. Runs on the worker's event loop; never starts a thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "libs/bus/event_loop.hpp"
#include "libs/bus/request_client.hpp"
#include "libs/core/sha256.hpp"
#include "libs/core/status.hpp"

namespace tunebus {

class CheckpointTransfer {
 public:
  /// Called once per transfer with the bytes moved (the tar stream's size), or the error:
  /// Unavailable (store unreachable, or a chunk unanswered for kPutTimeout), IoError (tar
  /// failed), or the store's error.
  using Done = std::function<void(Result<int64_t> bytes)>;

  /// How long a stored chunk may go unanswered: a synced write of one 4 MiB chunk takes
  /// milliseconds, so an unanswered one went to a store that died, and the caller's retry reaches
  /// its successor that much sooner than after the request client's default 10 s.
  static constexpr bus::Duration kPutTimeout{3000};

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
    int fd = -1;          // tar's stdout (upload) or stdin (download)
    bool polled = false;  // fd registered with the loop
    std::string buffer;   // upload: bytes of the chunk being filled
    uint32_t chunk = 0;
    int64_t bytes = 0;
    std::string expected_sha256;   // download: "" = not checked
    std::unique_ptr<Sha256> hash;  // download: of the chunks so far, with expected_sha256
    Done done;
  };
  void OnUploadReadable(uint64_t job_id);
  void SendChunk(Job& job, bool last);
  void RequestChunk(uint64_t job_id);
  void Finish(uint64_t job_id, Status status);
  Job* FindJob(uint64_t job_id);

  bus::EventLoop& loop_;
  bus::RequestClient& store_;
  std::map<uint64_t, std::unique_ptr<Job>> jobs_;
  uint64_t next_id_ = 1;
};

}  // namespace tunebus
