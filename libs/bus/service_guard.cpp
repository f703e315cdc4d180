#include "libs/bus/service_guard.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>

namespace tunebus::bus {

Status MakeWritableDir(const std::string& dir, std::string_view what) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError(fmt::format("cannot create {} {}: {}", what, dir, ec.message()));
  // create_directories succeeds on a folder that exists but is not ours to write: probe it.
  const std::string probe = fmt::format("{}/.tunebus-write-probe-{}", dir, ::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return Status::IoError(
        fmt::format("cannot write in {} {}: {}", what, dir, std::strerror(errno)));
  ::close(fd);
  ::unlink(probe.c_str());
  return Status::Ok();
}

int GuardMain(std::string_view service, const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    spdlog::critical("{} failed: {}", service, e.what());
  } catch (...) {
    spdlog::critical("{} failed: an unknown exception", service);
  }
  return 1;
}

}  // namespace tunebus::bus
