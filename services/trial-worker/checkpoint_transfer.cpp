#include "services/trial-worker/checkpoint_transfer.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "proto/store.hpp"

extern char** environ;

namespace tunebus {

namespace {

// Starts `tar args...` with one end of a pipe as its stdout (`child_writes`) or stdin; returns
// the pid and our end of the pipe (close-on-exec).
Result<std::pair<pid_t, int>> SpawnTar(const std::vector<std::string>& args, bool child_writes) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return Status::IoError(fmt::format("pipe: {}", std::strerror(errno)));
  const int child_end = child_writes ? p[1] : p[0];
  const int our_end = child_writes ? p[0] : p[1];
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, child_end, child_writes ? STDOUT_FILENO : STDIN_FILENO);
  std::vector<std::string> argv_s = {"tar"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, "tar", &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(child_end);
  if (rc != 0) {
    ::close(our_end);
    return Status::IoError(fmt::format("cannot start tar: {}", std::strerror(rc)));
  }
  return std::make_pair(pid, our_end);
}

Status Reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::Ok();
  return Status::IoError(WIFEXITED(status) ? fmt::format("tar exited with code {}", WEXITSTATUS(status))
                                           : fmt::format("tar was killed by signal {}", WTERMSIG(status)));
}

}  // namespace

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
      (void)Reap(job->pid);
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
    Status reaped = Reap(job->pid);
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
    if (n < 0) return Finish(job_id, Status::IoError(fmt::format("reading tar: {}", std::strerror(errno))));
    // EOF: tar is done; check it succeeded before committing the checkpoint.
    loop_.RemoveFd(job->fd);
    job->polled = false;
    Status tar = Reap(job->pid);
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
  store_.Request(put, [this, id, last](Result<proto::Decoded> reply) {
    Job* j = FindJob(id);
    if (j == nullptr) return;
    auto ack = reply.ok() ? reply->As<proto::CheckpointPutAck>() : Result<proto::CheckpointPutAck>(reply.status());
    if (!ack.ok()) return Finish(id, ack.status());
    if (last) return Finish(id, Status::Ok());
    j->polled = true;
    loop_.AddFd(j->fd, [this, id] { OnUploadReadable(id); });
  });
}

void CheckpointTransfer::Download(const std::string& checkpoint_id, const std::string& dir, Done done) {
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
    auto got = reply.ok() ? reply->As<proto::CheckpointGetReply>() : Result<proto::CheckpointGetReply>(reply.status());
    if (!got.ok()) return Finish(job_id, got.status());
    // tar drains its stdin as it unpacks: a blocking write of one chunk is bounded.
    size_t off = 0;
    while (off < got->data.size()) {
      const ssize_t n = ::write(j->fd, got->data.data() + off, got->data.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Finish(job_id, Status::IoError(fmt::format("writing to tar: {}", std::strerror(errno))));
      off += size_t(n);
    }
    j->bytes += int64_t(got->data.size());
    if (++j->chunk < got->num_chunks) return RequestChunk(job_id);
    ::close(j->fd);
    j->fd = -1;
    Finish(job_id, Status::Ok());
  });
}

}  // namespace tunebus
