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
  job->buffer.reserve(proto::kCheckpointChunkBytes);
  ::fcntl(job->fd, F_SETFL, ::fcntl(job->fd, F_GETFL) | O_NONBLOCK);
  const uint64_t id = job->id;
  job->polled = true;
  loop_.AddFd(job->fd, [this, id] { OnUploadReadable(id); });
  jobs_[id] = std::move(job);
}

void CheckpointTransfer::OnUploadReadable(uint64_t job_id) {
  Job* job = FindJob(job_id);
  if (job == nullptr) return;
  while (job->buffer.size() < proto::kCheckpointChunkBytes) {
    const size_t old = job->buffer.size();
    job->buffer.resize(proto::kCheckpointChunkBytes);
    const ssize_t n = ::read(job->fd, job->buffer.data() + old, proto::kCheckpointChunkBytes - old);
    job->buffer.resize(old + (n > 0 ? size_t(n) : 0));
    if (n > 0) continue;
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;  // wait for more
    if (n < 0)
      return Finish(job_id, Status::IoError(fmt::format("reading tar: {}", std::strerror(errno))));
    // EOF: tar is done; check it succeeded before committing the checkpoint.
    loop_.RemoveFd(job->fd);
    job->polled = false;
    Status tar = ReapTar(job->pid);
    job->pid = -1;
    if (!tar.ok()) return Finish(job_id, tar);
    return SendChunk(*job, /*last=*/true);
  }
  loop_.RemoveFd(job->fd);  // one chunk in flight: stop reading until it is acknowledged
  job->polled = false;
  SendChunk(*job, /*last=*/false);
}

void CheckpointTransfer::SendChunk(Job& job, bool last) {
  proto::CheckpointPut put;
  put.checkpoint_id = job.checkpoint_id;
  put.chunk_index = job.chunk++;
  put.data.assign(job.buffer.begin(), job.buffer.end());
  put.last = last;
  if (last) put.metadata_json = job.metadata.dump();
  job.bytes += int64_t(job.buffer.size());
  job.buffer.clear();
  const uint64_t id = job.id;
  store_.Request(
      put,
      [this, id, last](Result<proto::Decoded> reply) {
        Job* j = FindJob(id);
        if (j == nullptr) return;
        auto ack = reply.ok() ? reply->As<proto::CheckpointPutAck>()
                              : Result<proto::CheckpointPutAck>(reply.status());
        if (!ack.ok()) return Finish(id, ack.status());
        if (last) return Finish(id, Status::Ok());
        j->polled = true;
        loop_.AddFd(j->fd, [this, id] { OnUploadReadable(id); });
      },
      kPutTimeout);
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
  RequestChunk(id);
}

void CheckpointTransfer::RequestChunk(uint64_t job_id) {
  Job* job = FindJob(job_id);
  proto::CheckpointGet get;
  get.checkpoint_id = job->checkpoint_id;
  get.chunk_index = job->chunk;
  store_.Request(get, [this, job_id](Result<proto::Decoded> reply) {
    Job* j = FindJob(job_id);
    if (j == nullptr) return;
    auto got = reply.ok() ? reply->As<proto::CheckpointGetReply>()
                          : Result<proto::CheckpointGetReply>(reply.status());
    if (!got.ok()) return Finish(job_id, got.status());
    // tar drains its stdin as it unpacks: a blocking write of one chunk is bounded.
    if (Status written = WriteAll(j->fd, got->data.data(), got->data.size()); !written.ok()) {
      return Finish(job_id, written);
    }
    j->bytes += int64_t(got->data.size());
    if (j->hash) j->hash->Update(got->data.data(), got->data.size());
    if (++j->chunk < got->num_chunks) return RequestChunk(job_id);
    ::close(j->fd);
    j->fd = -1;
    if (j->hash) {
      if (const std::string digest = j->hash->HexDigest(); digest != j->expected_sha256) {
        return Finish(
            job_id, Status::Corruption(fmt::format("digest mismatch: the store's {} has SHA-256 {}",
                                                   j->checkpoint_id, digest)));
      }
    }
    Finish(job_id, Status::Ok());
  });
}

}  // namespace tunebus
