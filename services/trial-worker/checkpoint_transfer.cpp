#include "services/trial-worker/checkpoint_transfer.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "libs/workdir/tar_process.hpp"
#include "proto/store.hpp"

namespace tunebus {

CheckpointTransfer::CheckpointTransfer(bus::EventLoop& loop, bus::RequestClient& store)
    : loop_(loop), store_(store) {
  ::signal(SIGPIPE, SIG_IGN);  // a tar that dies must fail a write with EPIPE, not kill us
}

CheckpointTransfer::~CheckpointTransfer() {
  for (auto& [id, job] : jobs_) {
    if (job->polled) loop_.RemoveFd(job->fd);
    if (job->fd >= 0) ::close(job->fd);
    if (job->pid > 0) {
      ::kill(job->pid, SIGKILL);
      (void)ReapTar(job->pid);
    }
  }
}

CheckpointTransfer::Job* CheckpointTransfer::FindJob(uint64_t job_id) {
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? nullptr : it->second.get();
}

void CheckpointTransfer::Finish(uint64_t job_id, Status status) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  std::unique_ptr<Job> job = std::move(it->second);
  jobs_.erase(it);
  if (job->polled) loop_.RemoveFd(job->fd);
  if (job->fd >= 0) ::close(job->fd);
  if (job->pid > 0) {
    if (!status.ok()) ::kill(job->pid, SIGKILL);
    Status reaped = ReapTar(job->pid);
    if (status.ok()) status = reaped;
  }
  if (status.ok()) {
    job->done(job->bytes);
  } else {
    job->done(status);
  }
}

void CheckpointTransfer::Upload(const std::string& dir, const std::string& checkpoint_id,
                                nlohmann::json metadata, Done done) {
  auto spawned = SpawnTar({"-C", dir, "-cf", "-", "."}, /*child_writes=*/true);
  if (!spawned.ok()) return done(spawned.status());
  auto job = std::make_unique<Job>();
  job->id = next_id_++;
  job->checkpoint_id = checkpoint_id;
  job->metadata = std::move(metadata);
  job->pid = spawned->first;
  job->fd = spawned->second;
  job->done = std::move(done);
  job->buffer.resize(proto::kCheckpointChunkBytes);
  ::fcntl(job->fd, F_SETFL, ::fcntl(job->fd, F_GETFL) | O_NONBLOCK);
  const uint64_t id = job->id;
  job->polled = true;
  loop_.AddFd(job->fd, [this, id] { OnUploadReadable(id); });
  jobs_[id] = std::move(job);
}

void CheckpointTransfer::OnUploadReadable(uint64_t job_id) {
  Job* job = FindJob(job_id);
  if (job == nullptr) return;
  while (true) {
    while (job->filled < job->buffer.size()) {
      const ssize_t n =
          ::read(job->fd, job->buffer.data() + job->filled, job->buffer.size() - job->filled);
      if (n > 0) {
        job->filled += size_t(n);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;  // wait for more
      if (n < 0) {
        return Finish(job_id,
                      Status::IoError(fmt::format("reading tar: {}", std::strerror(errno))));
      }
      // EOF: tar is done; check it succeeded before committing the checkpoint.
      loop_.RemoveFd(job->fd);
      job->polled = false;
      Status tar = ReapTar(job->pid);
      job->pid = -1;
      if (!tar.ok()) return Finish(job_id, tar);
      job->eof = true;
      return SendChunk(*job, /*last=*/true);
    }
    SendChunk(*job, /*last=*/false);
    if (job->in_flight >= kChunksInFlight) {
      loop_.RemoveFd(job->fd);  // resumed once a chunk is acknowledged
      job->polled = false;
      return;
    }
  }
}

void CheckpointTransfer::SendChunk(Job& job, bool last) {
  proto::CheckpointPut put;
  put.checkpoint_id = job.checkpoint_id;
  put.chunk_index = job.chunk++;
  put.data.assign(job.buffer.begin(), job.buffer.begin() + ptrdiff_t(job.filled));
  put.last = last;
  if (last) put.metadata_json = job.metadata.dump();
  job.bytes += int64_t(job.filled);
  job.filled = 0;
  ++job.in_flight;
  const uint64_t id = job.id;
  store_.Request(
      put,
      [this, id, last](Result<proto::Decoded> reply) { OnChunkStored(id, last, std::move(reply)); },
      last ? kCommitTimeout : kPutTimeout);
}

void CheckpointTransfer::OnChunkStored(uint64_t job_id, bool last, Result<proto::Decoded> reply) {
  Job* job = FindJob(job_id);
  if (job == nullptr) return;  // finished by an earlier chunk's failure
  auto ack = reply.ok() ? reply->As<proto::CheckpointPutAck>()
                        : Result<proto::CheckpointPutAck>(reply.status());
  if (!ack.ok()) return Finish(job_id, ack.status());
  --job->in_flight;
  if (last) return Finish(job_id, Status::Ok());
  if (!job->polled && !job->eof) {
    job->polled = true;
    loop_.AddFd(job->fd, [this, job_id] { OnUploadReadable(job_id); });
  }
}

void CheckpointTransfer::Download(const std::string& checkpoint_id, const std::string& dir,
                                  Done done, const std::string& expected_sha256) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return done(Status::IoError(fmt::format("cannot create {}: {}", dir, ec.message())));
  auto spawned = SpawnTar({"-C", dir, "-xf", "-"}, /*child_writes=*/false);
  if (!spawned.ok()) return done(spawned.status());
  auto job = std::make_unique<Job>();
  job->id = next_id_++;
  job->checkpoint_id = checkpoint_id;
  job->pid = spawned->first;
  job->fd = spawned->second;
  job->done = std::move(done);
  job->expected_sha256 = expected_sha256;
  if (!expected_sha256.empty()) job->hash = std::make_unique<Sha256>();
  const uint64_t id = job->id;
  jobs_[id] = std::move(job);
  RequestChunks(id);
}

void CheckpointTransfer::RequestChunks(uint64_t job_id) {
  Job* job = FindJob(job_id);
  if (job == nullptr) return;
  // Until chunk 0 answers, the chunk count is unknown: only chunk 0 is asked for.
  const uint32_t limit = job->num_chunks == 0 ? 1 : job->num_chunks;
  while (job->in_flight < kChunksInFlight && job->next_request < limit) {
    proto::CheckpointGet get;
    get.checkpoint_id = job->checkpoint_id;
    get.chunk_index = job->next_request++;
    ++job->in_flight;
    const uint32_t index = get.chunk_index;
    store_.Request(get, [this, job_id, index](Result<proto::Decoded> reply) {
      OnChunkFetched(job_id, index, std::move(reply));
    });
  }
}

void CheckpointTransfer::OnChunkFetched(uint64_t job_id, uint32_t index,
                                        Result<proto::Decoded> reply) {
  Job* job = FindJob(job_id);
  if (job == nullptr) return;  // finished by an earlier chunk's failure
  auto got = reply.ok() ? reply->As<proto::CheckpointGetReply>()
                        : Result<proto::CheckpointGetReply>(reply.status());
  if (!got.ok()) return Finish(job_id, got.status());
  --job->in_flight;
  if (got->num_chunks == 0 || (job->num_chunks != 0 && got->num_chunks != job->num_chunks)) {
    return Finish(job_id, Status::Corruption(fmt::format(
                              "the store's {} answered chunk {} with a chunk count of {}, not {}",
                              job->checkpoint_id, index, got->num_chunks, job->num_chunks)));
  }
  job->num_chunks = got->num_chunks;
  job->arrived.emplace(index, std::move(got->data));
  RequestChunks(job_id);  // the next request goes out before tar takes this chunk
  for (auto it = job->arrived.begin(); it != job->arrived.end() && it->first == job->chunk;
       it = job->arrived.erase(it)) {
    const std::vector<char>& data = it->second;
    // tar drains its stdin as it unpacks: a blocking write of one chunk is bounded.
    if (Status written = WriteAll(job->fd, data.data(), data.size()); !written.ok()) {
      return Finish(job_id, written);
    }
    job->bytes += int64_t(data.size());
    if (job->hash) job->hash->Update(data.data(), data.size());
    ++job->chunk;
  }
  if (job->chunk < job->num_chunks) return;
  ::close(job->fd);
  job->fd = -1;
  if (job->hash) {
    if (const std::string digest = job->hash->HexDigest(); digest != job->expected_sha256) {
      return Finish(job_id,
                    Status::Corruption(fmt::format("digest mismatch: the store's {} has SHA-256 {}",
                                                   job->checkpoint_id, digest)));
    }
  }
  Finish(job_id, Status::Ok());
}

}  // namespace tunebus
