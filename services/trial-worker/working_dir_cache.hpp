// WorkingDirCache: a trial-worker's unpacked copies of shipped working_dirs, one folder per
// digest (`<cache_dir>/<sha256>/`), fetched from the checkpoint-store on first use (Ray's
// runtime_env working_dir, cached per node by its URI).
//
// A folder appears whole or not at all: the archive is unpacked into
// `<cache_dir>/.tmp-<sha256>-<pid>-<n>` and renamed to `<sha256>` once its digest checked out,
// so a trainable never runs in a half-unpacked folder, also when two workers share the cache.
// Starts that ask for a digest being fetched wait for that one fetch. A restarted worker reuses
// the folders it finds (and removes the temporary folders of processes that no longer run).
// Runs on the worker's event loop; never starts a thread.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "libs/bus/event_loop.hpp"
#include "libs/core/status.hpp"
#include "services/trial-worker/checkpoint_transfer.hpp"

namespace tunebus {

class WorkingDirCache {
 public:
  enum class State {
    kFetching,  // a download of the digest is under way (or waits to retry)
    kReady,     // <cache_dir>/<digest> holds it
  };
  /// The folder the trainable runs in, or why there is none.
  using Done = std::function<void(Result<std::string> folder)>;

  /// Tries before a fetch gives up while the store does not answer (one a second).
  static constexpr int kFetchTries = 10;

  /// `transfer` outlives the cache. Creates `cache_dir` when missing (errors show on Acquire).
  WorkingDirCache(bus::EventLoop& loop, CheckpointTransfer& transfer, std::string cache_dir);

  /// Calls `done` with `<cache_dir>/<digest>` once it is there (at once when it is). Errors
  /// (all "cannot fetch working_dir <digest12> from the checkpoint-store: <why>"): the store
  /// unreachable after kFetchTries, the digest not stored (NotFound), a digest mismatch
  /// (Corruption), tar or the disk failing (IoError, e.g. "No space left on device").
  void Acquire(const std::string& digest, Done done);

  const std::string& cache_dir() const { return cache_dir_; }

 private:
  struct Entry {
    State state = State::kFetching;
    std::vector<Done> waiters;
  };
  void Fetch(const std::string& digest, int tries_left);
  void Finish(const std::string& digest, Result<std::string> folder);
  void RemoveAbandonedTemporaries();

  bus::EventLoop& loop_;
  CheckpointTransfer& transfer_;
  std::string cache_dir_;
  std::map<std::string, Entry> entries_;
  uint64_t next_temporary_ = 1;
};

}  // namespace tunebus
