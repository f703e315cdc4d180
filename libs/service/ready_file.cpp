#include "libs/service/ready_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

namespace tunebus::service {

std::string ReadyFileText(const std::string& service, int pid, const BoundEndpoints& endpoints,
                          int metrics_port) {
  nlohmann::json ready = {{"service", service},
                          {"pid", pid},
                          {"endpoints", nlohmann::json::object()},
                          {"metrics_port", metrics_port}};
  for (const auto& [flag, endpoint] : endpoints) ready["endpoints"][flag] = endpoint;
  return ready.dump() + "\n";
}

Status WriteReadyFile(const std::string& path, const std::string& service,
                      const BoundEndpoints& endpoints, int metrics_port) {
  const std::string text = ReadyFileText(service, ::getpid(), endpoints, metrics_port);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::IoError("cannot write the ready file " + path + ": " + std::strerror(errno));
  }
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return Status::IoError("cannot write the ready file " + path + ": " + std::strerror(err));
    }
    written += size_t(n);
  }
  ::close(fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return Status::IoError("cannot write the ready file " + path + ": " + std::strerror(err));
  }
  return Status::Ok();
}

}  // namespace tunebus::service
