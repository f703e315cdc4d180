#include "services/scheduler/control/result_page.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>

namespace tunebus {

namespace {

// `text` without the blanks around it (' ', '\t', '\r').
std::string_view Trimmed(std::string_view text) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!text.empty() && blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && blank(text.back())) text.remove_suffix(1);
  return text;
}

}  // namespace

ResultRowsCutter::ResultRowsCutter(std::string source, int64_t offset, int64_t limit,
                                   size_t max_bytes)
    : source_(std::move(source)), offset_(offset), limit_(limit), max_bytes_(max_bytes) {
  page_.rows_json = "[";
}

Status ResultRowsCutter::Line(std::string_view line) {
  ++lines_;
  line = Trimmed(line);
  if (line.size() < 2 || line.front() != '{' || line.back() != '}') return Status::Ok();
  const int64_t index = page_.total++;
  if (full_ || index < offset_) return Status::Ok();
  if (!nlohmann::json::accept(line)) {
    return Status::Corruption(fmt::format("{}:{}: not a JSON object", source_, lines_));
  }
  if (page_.rows > 0) page_.rows_json.push_back(',');
  page_.rows_json.append(line);
  ++page_.rows;
  full_ = page_.rows >= limit_ || page_.rows_json.size() >= max_bytes_;
  return Status::Ok();
}

Status ResultRowsCutter::Feed(std::string_view bytes) {
  while (!bytes.empty()) {
    const void* found = std::memchr(bytes.data(), '\n', bytes.size());
    if (found == nullptr) {
      partial_.append(bytes);
      return Status::Ok();
    }
    const size_t end = size_t(static_cast<const char*>(found) - bytes.data());
    Status s;
    if (partial_.empty()) {
      s = Line(bytes.substr(0, end));
    } else {
      partial_.append(bytes.substr(0, end));
      s = Line(partial_);
      partial_.clear();
    }
    if (!s.ok()) return s;
    bytes.remove_prefix(end + 1);
  }
  return Status::Ok();
}

ResultRowsPage ResultRowsCutter::Finish() {
  partial_.clear();
  page_.rows_json.push_back(']');
  return std::move(page_);
}

Result<ResultRowsPage> ReadResultRows(const std::string& path, int64_t offset, int64_t limit,
                                      size_t max_bytes) {
  ResultRowsCutter cutter(path, offset, limit, max_bytes);
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (file == nullptr) {
    if (errno == ENOENT) return cutter.Finish();
    return Status::IoError(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  }
  std::string chunk(size_t(1) << 20, '\0');
  while (true) {
    const size_t n = std::fread(chunk.data(), 1, chunk.size(), file.get());
    if (n > 0) {
      if (Status s = cutter.Feed(std::string_view(chunk.data(), n)); !s.ok()) return s;
    }
    if (n < chunk.size()) break;
  }
  if (std::ferror(file.get())) {
    return Status::IoError(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  }
  return cutter.Finish();
}

}  // namespace tunebus
