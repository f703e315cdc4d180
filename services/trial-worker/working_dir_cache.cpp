#include "services/trial-worker/working_dir_cache.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "proto/store.hpp"

namespace tunebus {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kTemporaryPrefix = ".tmp-";

}  // namespace

WorkingDirCache::WorkingDirCache(bus::EventLoop& loop, CheckpointTransfer& transfer,
                                 std::string cache_dir)
    : loop_(loop), transfer_(transfer), cache_dir_(std::move(cache_dir)) {
  std::error_code ec;
  fs::create_directories(cache_dir_, ec);
  if (ec) {
    spdlog::warn("Cannot create the working_dir cache {}: {}", cache_dir_, ec.message());
    return;
  }
  RemoveAbandonedTemporaries();
}

void WorkingDirCache::RemoveAbandonedTemporaries() {
  std::error_code ec;
  for (fs::directory_iterator it(cache_dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with(kTemporaryPrefix)) continue;
    // .tmp-<digest>-<pid>-<n>: a folder of a process that still runs is its fetch in progress.
    const size_t pid_start = kTemporaryPrefix.size() + 65;
    const long pid =
        pid_start < name.size() ? std::strtol(name.c_str() + pid_start, nullptr, 10) : 0;
    if (pid > 0 && (::kill(pid_t(pid), 0) == 0 || errno == EPERM)) continue;
    std::error_code rm_ec;
    fs::remove_all(it->path(), rm_ec);
  }
}

void WorkingDirCache::Acquire(const std::string& digest, Done done) {
  const std::string folder = cache_dir_ + "/" + digest;
  auto it = entries_.find(digest);
  if (it != entries_.end() && it->second.state == State::kFetching) {
    it->second.waiters.push_back(std::move(done));
    return;
  }
  std::error_code ec;
  if (fs::is_directory(folder, ec)) {  // fetched before, maybe by an earlier process
    entries_[digest].state = State::kReady;
    return done(folder);
  }
  Entry& entry = entries_[digest];
  entry.state = State::kFetching;
  entry.waiters.push_back(std::move(done));
  Fetch(digest, kFetchTries);
}

void WorkingDirCache::Fetch(const std::string& digest, int tries_left) {
  const std::string temporary = fmt::format("{}/{}{}-{}-{}", cache_dir_, kTemporaryPrefix, digest,
                                            ::getpid(), next_temporary_++);
  spdlog::info("Fetching working_dir {} into {}", digest.substr(0, 12), cache_dir_);
  transfer_.Download(
      proto::WorkingDirBlobId(digest), temporary,
      [this, digest, temporary, tries_left](Result<int64_t> bytes) {
        const std::string folder = cache_dir_ + "/" + digest;
        if (!bytes.ok()) {
          std::error_code ec;
          fs::remove_all(temporary, ec);
          if (bytes.status().code() == StatusCode::kUnavailable && tries_left > 1) {
            spdlog::warn("working_dir {} not fetched ({}); trying again in 1 s",
                         digest.substr(0, 12), bytes.status().message());
            loop_.AddTimer(std::chrono::seconds(1),
                           [this, digest, tries_left] { Fetch(digest, tries_left - 1); });
            return;
          }
          return Finish(digest, bytes.status());
        }
        if (::rename(temporary.c_str(), folder.c_str()) != 0) {
          const int err = errno;
          std::error_code ec;
          fs::remove_all(temporary, ec);
          // Another worker sharing the cache renamed its copy first: that one is whole too.
          if ((err != EEXIST && err != ENOTEMPTY) || !fs::is_directory(folder, ec)) {
            return Finish(
                digest, Status::IoError(fmt::format("cannot rename {} to {}: {}", temporary, folder,
                                                    std::strerror(err))));
          }
        }
        spdlog::info("working_dir {} is in {} ({} bytes fetched)", digest.substr(0, 12), folder,
                     *bytes);
        Finish(digest, folder);
      },
      digest);
}

void WorkingDirCache::Finish(const std::string& digest, Result<std::string> folder) {
  auto it = entries_.find(digest);
  if (it == entries_.end()) return;
  std::vector<Done> waiters = std::move(it->second.waiters);
  if (folder.ok()) {
    it->second.state = State::kReady;
  } else {
    entries_.erase(it);  // the next start tries again
    folder = Status(folder.status().code(),
                    fmt::format("cannot fetch working_dir {} from the checkpoint-store: {}",
                                digest.substr(0, 12), folder.status().message()));
    spdlog::warn("{}", folder.status().message());
  }
  for (Done& done : waiters) done(folder);
}

}  // namespace tunebus
