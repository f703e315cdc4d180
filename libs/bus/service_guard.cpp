#include "libs/bus/service_guard.hpp"

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
  const bool created = std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError(fmt::format("cannot create {} {}: {}", what, dir, ec.message()));
  // A folder this process just created is its own; one that existed may not be ours to write.
  // access(2) checks permissions (ACLs included) and a read-only mount without touching the disk.
  if (!created && ::access(dir.c_str(), W_OK | X_OK) != 0)
    return Status::IoError(
        fmt::format("cannot write in {} {}: {}", what, dir, std::strerror(errno)));
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
