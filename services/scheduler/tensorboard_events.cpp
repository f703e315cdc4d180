#include "services/scheduler/tensorboard_events.hpp"

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

void TensorBoardEvents::AppendFileVersion(double wall_time, std::string& out) {
  event_.Clear();
  event_.set_wall_time(wall_time);
  event_.set_file_version("brain.Event:2");
  data_.clear();
  event_.SerializeToString(&data_);
  AppendTfRecord(data_, out);
}

void TensorBoardEvents::AppendResult(const ResultText& text, std::string& out) {
  event_.Clear();
  event_.set_wall_time(text.Number("timestamp").value_or(0));
  const std::optional<double> timesteps = text.Number("timesteps_total");
  event_.set_step(int64_t(
      timesteps && *timesteps != 0 ? *timesteps : text.Number("training_iteration").value_or(0)));
  tensorboard::Summary* summary = event_.mutable_summary();
  text.ForEachNumber([&](std::string_view column, double value) {
    if (LeftOut(column)) return;
    tensorboard::Summary::Value* v = summary->add_value();
    tag_.assign("ray/tune/");
    tag_.append(column);
    v->set_tag(tag_);
    v->set_simple_value(float(value));
  });
  data_.clear();
  event_.SerializeToString(&data_);
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
