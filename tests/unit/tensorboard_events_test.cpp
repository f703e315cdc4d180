// Tests for the TensorBoard event files (services/scheduler/results/tensorboard_events.hpp) and
// CRC-32C (libs/core/crc32c.hpp): the checksum matches the published check values, and a trial's
// event file is a file version then one Event per result, TFRecord-framed with masked CRC-32Cs,
// holding the scalars Ray Tune's TBXLoggerCallback shows. (tests/integration/read_results.py reads
// the same files with Python's protobuf and crc32c modules, which are not ours.)
#include "services/scheduler/results/tensorboard_events.hpp"

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
#include "services/scheduler/results/result_files.hpp"
#include "services/scheduler/results/tensorboard/event.pb.h"

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

// The Event libprotobuf serializes for a decoded result, built field by field from the rules in
// tensorboard_events.hpp: the reference the hand-written wire format must equal byte for byte.
std::string ReferenceEvent(const ResultText& text) {
  tensorboard::Event event;
  event.set_wall_time(text.Number("timestamp").value_or(0));
  const std::optional<double> timesteps = text.Number("timesteps_total");
  event.set_step(int64_t(
      timesteps && *timesteps != 0 ? *timesteps : text.Number("training_iteration").value_or(0)));
  tensorboard::Summary* summary = event.mutable_summary();
  text.ForEachNumber([&](std::string_view column, double value) {
    if (column == "pid" || column == "timestamp" || column == "time_total_s" ||
        column == "training_iteration" || column.rfind("config/", 0) == 0)
      return;
    tensorboard::Summary::Value* v = summary->add_value();
    v->set_tag("ray/tune/" + std::string(column));
    v->set_simple_value(float(value));
  });
  std::string record;
  AppendTfRecord(event.SerializeAsString(), record);
  return record;
}

TEST(TensorBoardEventsTest, EventsAreTheBytesLibprotobufSerializes) {
  // Defaults left out (zero step and wall time, an empty summary), -0.0 written, a negative step
  // as a 10-byte varint, long tags (2-byte lengths), floats rounded, nested and unicode keys.
  const std::vector<json> results = {
      {{"acc", 0.5}, {"timestamp", 1700000000}, {"training_iteration", 3}},
      {{"acc", 0}, {"done", false}, {"timestamp", 0}, {"training_iteration", 0}},
      {{"timestamp", -0.0}, {"training_iteration", -5}, {"hostname", "h"}},
      {{"timesteps_total", 1e12}, {"training_iteration", 2}, {"loss", -1e-40}, {"big", 1e300}},
      {{"pid", 7}, {"time_total_s", 1.5}, {"config", {{"lr", 0.1}}}},
      {{"info", {{"a", 1}, {"b", {{"c", true}}}}}, {"nan", std::nan("")}, {"\u00e9t\u00e9", 2}},
      {{std::string(200, 'k'), 1.25}, {"u", uint64_t(1) << 63}, {"i", int64_t(-3)}},
  };
  const ConfigText config(json{{"lr", 0.1}, {"model", {{"depth", 3}}}});
  TensorBoardEvents events;
  ResultText text;
  for (const json& r : results) {
    std::string bytes;
    json::to_msgpack(r, bytes);
    for (const ConfigText* c : {static_cast<const ConfigText*>(nullptr), &config}) {
      ASSERT_TRUE(text.Decode(bytes, c));
      std::string ours;
      events.AppendResult(text, ours);
      EXPECT_EQ(ours, ReferenceEvent(text)) << r.dump();
    }
  }
  for (double wall_time : {0.0, 1700000000.25, -0.0}) {
    tensorboard::Event version;
    version.set_wall_time(wall_time);
    version.set_file_version("brain.Event:2");
    std::string expected, ours;
    AppendTfRecord(version.SerializeAsString(), expected);
    events.AppendFileVersion(wall_time, ours);
    EXPECT_EQ(ours, expected) << wall_time;
  }
}

}  // namespace
}  // namespace tunebus
