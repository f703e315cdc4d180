#include "services/scheduler/results/tensorboard_events.hpp"

#include <dirent.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#include "libs/core/crc32c.hpp"

namespace tunebus {

namespace {

void AppendLittleEndian(uint64_t v, int bytes, std::string& out) {
  for (int i = 0; i < bytes; ++i) out.push_back(char((v >> (8 * i)) & 0xFFu));
}

uint64_t ReadLittleEndian(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// Ray Tune's TBXLoggerCallback: "not useful to log these".
bool LeftOut(std::string_view column) {
  return column == "pid" || column == "timestamp" || column == "time_total_s" ||
         column == "training_iteration" || column.rfind("config/", 0) == 0;
}

}  // namespace

void AppendTfRecord(std::string_view data, std::string& out) {
  const size_t length_at = out.size();
  AppendLittleEndian(data.size(), 8, out);
  const uint32_t length_crc = MaskCrc32c(Crc32c(std::string_view(out).substr(length_at, 8)));
  AppendLittleEndian(length_crc, 4, out);
  out.append(data);
  AppendLittleEndian(MaskCrc32c(Crc32c(data)), 4, out);
}

namespace {

// Protobuf wire format (https://protobuf.dev/programming-guides/encoding/): a field's key is the
// varint (field_number << 3) | wire_type.
constexpr char kWallTimeKey = 0x09;     // Event.wall_time = 1, fixed64 (double)
constexpr char kStepKey = 0x10;         // Event.step = 2, varint (int64)
constexpr char kFileVersionKey = 0x1A;  // Event.file_version = 3, length-delimited
constexpr char kSummaryKey = 0x2A;      // Event.summary = 5, length-delimited
constexpr char kValueKey = 0x0A;        // Summary.value = 1, length-delimited
constexpr char kTagKey = 0x0A;          // Summary.Value.tag = 1, length-delimited
constexpr char kSimpleValueKey = 0x15;  // Summary.Value.simple_value = 2, fixed32 (float)
constexpr std::string_view kTagPrefix = "ray/tune/";

void AppendVarint(uint64_t v, std::string& out) {
  while (v >= 0x80) {
    out.push_back(char(v | 0x80));
    v >>= 7;
  }
  out.push_back(char(v));
}

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  for (; v >= 0x80; v >>= 7) ++n;
  return n;
}

// Event's wall_time and step as libprotobuf writes them: proto3 leaves a field out when it holds
// its default (a double by its bits, so -0.0 is written).
void AppendWallTimeAndStep(double wall_time, int64_t step, std::string& out) {
  uint64_t bits;
  std::memcpy(&bits, &wall_time, sizeof(bits));
  if (bits != 0) {
    out.push_back(kWallTimeKey);
    AppendLittleEndian(bits, 8, out);
  }
  if (step != 0) {
    out.push_back(kStepKey);
    AppendVarint(uint64_t(step), out);  // a negative int64 takes 10 bytes, as protobuf's
  }
}

}  // namespace

void TensorBoardEvents::AppendFileVersion(double wall_time, std::string& out) {
  constexpr std::string_view kFileVersion = "brain.Event:2";
  data_.clear();
  AppendWallTimeAndStep(wall_time, 0, data_);
  data_.push_back(kFileVersionKey);
  AppendVarint(kFileVersion.size(), data_);
  data_.append(kFileVersion);
  AppendTfRecord(data_, out);
}

void TensorBoardEvents::AppendResult(const ResultText& text, std::string& out) {
  // One pass over the numbers: the Summary's values, and the three keys Event's fields take.
  double timestamp = 0, timesteps_total = 0, training_iteration = 0;
  summary_.clear();
  text.ForEachNumber([&](std::string_view column, double value) {
    if (column == "timestamp") timestamp = value;
    if (column == "timesteps_total") timesteps_total = value;
    if (column == "training_iteration") training_iteration = value;
    if (LeftOut(column)) return;
    const size_t tag_size = kTagPrefix.size() + column.size();
    summary_.push_back(kValueKey);
    AppendVarint(1 + VarintSize(tag_size) + tag_size + 5, summary_);
    summary_.push_back(kTagKey);
    AppendVarint(tag_size, summary_);
    summary_.append(kTagPrefix);
    summary_.append(column);
    summary_.push_back(kSimpleValueKey);
    const float scalar = float(value);
    uint32_t bits;
    std::memcpy(&bits, &scalar, sizeof(bits));
    AppendLittleEndian(bits, 4, summary_);
  });
  data_.clear();
  AppendWallTimeAndStep(
      timestamp, int64_t(timesteps_total != 0 ? timesteps_total : training_iteration), data_);
  data_.push_back(kSummaryKey);
  AppendVarint(summary_.size(), data_);
  data_.append(summary_);
  AppendTfRecord(data_, out);
}

std::string EventFileName(int64_t now_s, std::string_view hostname) {
  return fmt::format("{}{:010d}.{}", kEventFilePrefix, now_s, hostname);
}

std::string FindEventFile(const std::string& dir) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), &::closedir);
  if (!d) return "";
  std::string first;
  while (const dirent* e = ::readdir(d.get())) {
    const std::string_view name = e->d_name;
    if (name.rfind(kEventFilePrefix, 0) != 0) continue;
    if (first.empty() || name < first) first.assign(name);
  }
  return first.empty() ? "" : dir + "/" + first;
}

int64_t ScanTfRecords(const std::string& path, const std::function<bool(int64_t)>& on_record) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return 0;
  in.seekg(0, std::ios::end);
  const int64_t size = in.tellg();
  in.seekg(0);
  int64_t offset = 0;
  char header[12];
  while (offset + 12 <= size) {
    in.seekg(offset);
    if (!in.read(header, 12)) break;
    const uint64_t length = ReadLittleEndian(header, 8);
    const uint32_t length_crc = uint32_t(ReadLittleEndian(header + 8, 4));
    if (MaskCrc32c(Crc32c(std::string_view(header, 8))) != length_crc) break;
    const int64_t end = offset + 12 + int64_t(length) + 4;
    if (length > uint64_t(size) || end > size) break;
    offset = end;
    if (!on_record(end)) break;
  }
  return size;
}

}  // namespace tunebus
