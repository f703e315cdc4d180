#include "services/scheduler/results/result_files_repair.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "libs/journal/replay.hpp"

namespace tunebus {

namespace {

namespace fs = std::filesystem;

// Calls `on_row(end_offset)` after every complete row of `path` (the offset just past its
// '\n'); returns the file's size (0 if it cannot be read). `on_row` returns false to stop early.
int64_t ScanRows(const std::string& path, bool csv, const std::function<bool(int64_t)>& on_row) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return 0;
  std::vector<char> buffer(1 << 20);
  int64_t offset = 0;
  bool quoted = false;
  while (in) {
    in.read(buffer.data(), std::streamsize(buffer.size()));
    const std::streamsize n = in.gcount();
    for (std::streamsize i = 0; i < n; ++i) {
      const char c = buffer[size_t(i)];
      if (csv && c == '"') quoted = !quoted;  // "" inside a quoted field toggles twice
      if (c == '\n' && !quoted && !on_row(offset + i + 1)) return offset + n;
    }
    offset += n;
  }
  return offset;
}

}  // namespace

FileRows CountRows(const std::string& path, bool csv) {
  FileRows rows;
  int64_t last_end = 0;
  int64_t complete = 0;
  const int64_t size = ScanRows(path, csv, [&](int64_t end) {
    ++complete;
    last_end = end;
    return true;
  });
  rows.header = csv && complete > 0;
  rows.rows = csv ? std::max<int64_t>(0, complete - 1) : complete;
  rows.torn = size > last_end;
  return rows;
}

bool CutAfterRows(const std::string& path, bool csv, int64_t keep) {
  const int64_t wanted = keep + (csv ? 1 : 0);  // rows to keep, the header included
  int64_t kept = 0;
  int64_t cut_at = 0;
  ScanRows(path, csv, [&](int64_t end) {
    if (kept == wanted) return false;
    ++kept;
    cut_at = end;
    return true;
  });
  if (csv && kept == 0) cut_at = 0;  // a torn header goes too: the next row writes a new one
  if (::truncate(path.c_str(), off_t(cut_at)) != 0 && errno != ENOENT) {
    spdlog::error("Cannot cut {} after {} rows: {}", path, keep, std::strerror(errno));
    return false;
  }
  return true;
}

FileRows CountEventRows(const std::string& path) {
  FileRows rows;
  int64_t complete = 0, last_end = 0;
  const int64_t size = ScanTfRecords(path, [&](int64_t end) {
    ++complete;
    last_end = end;
    return true;
  });
  rows.header = complete > 0;
  rows.rows = std::max<int64_t>(0, complete - 1);
  rows.torn = size > last_end;
  return rows;
}

bool CutAfterEventRows(const std::string& path, int64_t keep) {
  const int64_t wanted = keep + 1;  // the file version first
  int64_t kept = 0, cut_at = 0;
  ScanTfRecords(path, [&](int64_t end) {
    if (kept == wanted) return false;
    ++kept;
    cut_at = end;
    return true;
  });
  if (kept == 0) cut_at = 0;  // a torn file version goes too: the writer writes a new one
  if (::truncate(path.c_str(), off_t(cut_at)) != 0 && errno != ENOENT) {
    spdlog::error("Cannot cut {} after {} events: {}", path, keep, std::strerror(errno));
    return false;
  }
  return true;
}

ResultFilesRepair::ResultFilesRepair(std::string experiment_dir, ResultFiles& files)
    : experiment_dir_(std::move(experiment_dir)), files_(files) {}

int64_t ResultFilesRepair::Plan(const std::vector<Trial>& trials) {
  for (const Trial& t : trials) {
    const std::string dir = experiment_dir_ + "/" + t.DirName();
    std::error_code ec;
    if (!fs::exists(dir + "/params.json", ec)) {
      files_.WriteParams(t.index, dir, t.config);
      ++summary_.params_written;
    }
    const std::string json_path = dir + "/result.json", csv_path = dir + "/progress.csv";
    const FileRows json = CountRows(json_path, /*csv=*/false);
    const FileRows csv = CountRows(csv_path, /*csv=*/true);
    const std::string events_path = FindEventFile(dir);
    const FileRows events = events_path.empty() ? FileRows{} : CountEventRows(events_path);
    ++summary_.trials;
    summary_.torn_lines += int64_t(json.torn) + int64_t(csv.torn) + int64_t(events.torn);
    summary_.surplus_rows +=
        std::max<int64_t>(0, std::max({json.rows, csv.rows, events.rows}) - t.num_results);
    // The files keep the rows they share with the journal; the rest is written again.
    const int64_t kept = std::min({json.rows, csv.rows, events.rows, t.num_results});
    if (json.rows != kept || json.torn) CutAfterRows(json_path, false, kept);
    if (csv.rows != kept || csv.torn) CutAfterRows(csv_path, true, kept);
    if (!events_path.empty() && (events.rows != kept || events.torn))
      CutAfterEventRows(events_path, kept);
    summary_.missing_rows += t.num_results - kept;
    if (t.num_results > 0) progress_[t.index] = Progress{kept, 0, t.num_results, t.config};
  }
  return summary_.missing_rows;
}

void ResultFilesRepair::OnConfigRecord(const Trial& t, const nlohmann::json& config) {
  auto it = progress_.find(t.index);
  if (it == progress_.end()) return;
  it->second.config = config;
  files_.SetConfig(t.index, config);  // rows staged from here on show it (if the files are open)
}

void ResultFilesRepair::OnResultRecord(const Trial& t, const nlohmann::json& record) {
  auto it = progress_.find(t.index);
  if (it == progress_.end()) return;
  Progress& p = it->second;
  const int64_t attempt = record.value("attempt", int64_t(0));
  const bool copy = attempt == p.attempt && journal::IsReturnCopy(p.seq, record);
  p.attempt = attempt;
  p.seq = record.value("seq", int64_t(0));
  if (copy) return;
  const nlohmann::json& result = record.at("result");
  ++p.seen;
  if (p.seen <= p.kept || p.seen > p.total) return;
  std::string bytes;
  nlohmann::json::to_msgpack(result, bytes);
  files_.AppendResult(t.index,
                      files_.IsOpen(t.index) ? std::string() : experiment_dir_ + "/" + t.DirName(),
                      std::move(bytes), 0, &p.config);
  p.wrote = true;
  ++summary_.rows_written;
}

void ResultFilesRepair::Finish() {
  for (const auto& [index, p] : progress_) {
    if (p.wrote) files_.Close(index);
  }
}

}  // namespace tunebus
