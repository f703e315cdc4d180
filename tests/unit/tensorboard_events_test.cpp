// Tests for the TensorBoard event files (services/scheduler/tensorboard_events.hpp) and CRC-32C
// (libs/core/crc32c.hpp): the checksum matches the published check values, and a trial's event
// file is a file version then one Event per result, TFRecord-framed with masked CRC-32Cs, holding
// the scalars Ray Tune's TBXLoggerCallback shows. (tests/integration/read_results.py reads the
// same files with Python's protobuf and crc32c modules, which are not ours.)
#include "services/scheduler/tensorboard_events.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "libs/core/crc32c.hpp"
#include "services/scheduler/result_files.hpp"

namespace tunebus {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(Crc32cTest, MatchesThePublishedCheckValues) {
  // RFC 3720 B.4 and the CRC catalogue's CRC-32/ISCSI check value.
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  EXPECT_EQ(Crc32c(""), 0u);
}

uint64_t Le(const std::string& s, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[at + size_t(i)]);
  return v;
}

// The Events of a TFRecord file, every CRC checked.
std::vector<tensorboard::Event> ReadEvents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string bytes = buf.str();
  std::vector<tensorboard::Event> events;
  size_t at = 0;
  while (at < bytes.size()) {
    EXPECT_GE(bytes.size() - at, 16u);
    const uint64_t length = Le(bytes, at, 8);
    EXPECT_EQ(Le(bytes, at + 8, 4), MaskCrc32c(Crc32c(bytes.substr(at, 8))));
    const std::string data = bytes.substr(at + 12, length);
    EXPECT_EQ(Le(bytes, at + 12 + length, 4), MaskCrc32c(Crc32c(data)));
    tensorboard::Event e;
    EXPECT_TRUE(e.ParseFromString(data));
    events.push_back(e);
    at += 12 + length + 4;
  }
  return events;
}

TEST(TensorBoardEventsTest, ATrialsEventFileHoldsItsResultsAsRayTuneScalars) {
  // Two results of a trial: the file starts with the file version, then one Event per result at
  // step training_iteration and wall time timestamp, with "ray/tune/<column>" scalars: nested
  // keys joined by '/', booleans as 0/1 (zero values included), strings, NaN, config, pid,
  // timestamp, time_total_s and training_iteration left out.
  const fs::path dir = fs::temp_directory_path() / ("tunebus-tb-" + std::to_string(::getpid()));
  const fs::path trial = dir / "t0";
  {
    ResultFiles files;
    const json config = {{"lr", 0.1}};
    for (int i = 1; i <= 2; ++i) {
      json r = {{"acc", 0.25 * i},
                {"done", i == 2},
                {"info", {{"a", i}}},
                {"hostname", "h"},
                {"pid", 7},
                {"timestamp", 1700000000 + i},
                {"time_total_s", 1.5},
                {"training_iteration", i},
                {"nan", std::nan("")}};
      std::string bytes;
      json::to_msgpack(r, bytes);
      files.AppendResult(0, trial.string(), std::move(bytes), 0, &config);
    }
    files.Drain();
  }
  const std::string path = FindEventFile(trial.string());
  ASSERT_FALSE(path.empty());
  EXPECT_EQ(fs::path(path).filename().string().rfind("events.out.tfevents.", 0), 0u) << path;
  const auto events = ReadEvents(path);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_GT(events[0].wall_time(), 1.7e9);
  for (int i = 1; i <= 2; ++i) {
    const tensorboard::Event& e = events[size_t(i)];
    EXPECT_EQ(e.step(), i);
    EXPECT_EQ(e.wall_time(), 1700000000.0 + i);
    std::map<std::string, float> scalars;
    for (const auto& v : e.summary().value()) {
      EXPECT_TRUE(v.has_simple_value()) << v.tag();
      scalars[v.tag()] = v.simple_value();
    }
    EXPECT_EQ(scalars, (std::map<std::string, float>{{"ray/tune/acc", 0.25f * float(i)},
                                                     {"ray/tune/done", i == 2 ? 1.0f : 0.0f},
                                                     {"ray/tune/info/a", float(i)}}));
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tunebus
