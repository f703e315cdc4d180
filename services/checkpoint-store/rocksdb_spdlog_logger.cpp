#include "services/checkpoint-store/rocksdb_spdlog_logger.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <string>

namespace tunebus::store {

spdlog::level::level_enum RocksDbSpdlogLogger::SpdlogLevel(rocksdb::InfoLogLevel level) {
  switch (level) {
    case rocksdb::InfoLogLevel::WARN_LEVEL:
      return spdlog::level::warn;
    case rocksdb::InfoLogLevel::ERROR_LEVEL:
      return spdlog::level::err;
    case rocksdb::InfoLogLevel::FATAL_LEVEL:
      return spdlog::level::critical;
    default:  // DEBUG, INFO, HEADER
      return spdlog::level::debug;
  }
}

void RocksDbSpdlogLogger::Logv(rocksdb::InfoLogLevel level, const char* format, va_list ap) {
  if (level < GetInfoLogLevel()) return;
  const spdlog::level::level_enum to = SpdlogLevel(level);
  if (!spdlog::should_log(to)) return;
  char small[512];
  va_list copy;
  va_copy(copy, ap);
  const int n = std::vsnprintf(small, sizeof(small), format, copy);
  va_end(copy);
  if (n < 0) return;
  std::string line;
  if (size_t(n) < sizeof(small)) {
    line.assign(small, size_t(n));
  } else {
    line.resize(size_t(n) + 1);
    std::vsnprintf(line.data(), line.size(), format, ap);
    line.resize(size_t(n));
  }
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  spdlog::log(to, "rocksdb: {}", line);
}

void RocksDbSpdlogLogger::Logv(const char* format, va_list ap) {
  Logv(rocksdb::InfoLogLevel::INFO_LEVEL, format, ap);
}

void RocksDbSpdlogLogger::LogHeader(const char* format, va_list ap) {
  Logv(rocksdb::InfoLogLevel::HEADER_LEVEL, format, ap);
}

}  // namespace tunebus::store
