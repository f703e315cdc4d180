#include "libs/workdir/tar_process.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace tunebus {

Result<std::pair<pid_t, int>> SpawnTar(const std::vector<std::string>& args, bool child_writes) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0)
    return Status::IoError(fmt::format("pipe: {}", std::strerror(errno)));
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

Status ReapTar(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::Ok();
  return Status::IoError(WIFEXITED(status)
                             ? fmt::format("tar exited with code {}", WEXITSTATUS(status))
                             : fmt::format("tar was killed by signal {}", WTERMSIG(status)));
}

Status WriteAll(int fd, const char* data, size_t size) {
  size_t off = 0;
  while (off < size) {
    const ssize_t n = ::write(fd, data + off, size - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IoError(fmt::format("writing to tar: {}", std::strerror(errno)));
    off += size_t(n);
  }
  return Status::Ok();
}

}  // namespace tunebus
