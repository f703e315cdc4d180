// TensorBoard event files of a trial (events.out.tfevents.*), as Ray Tune 2.x's
// TBXLoggerCallback writes them (ray/tune/logger/tensorboardx.py), without TensorBoard's or
// tensorboardX's writer (Debian packages neither): Event protobufs (tensorboard/event.proto, a
// subset of TensorBoard's schema with its field numbers) framed as TFRecords.
//
// The Events are written in protobuf's wire format directly (varint keys and lengths, fixed64
// wall_time, fixed32 floats, fields in number order, proto3 defaults left out: the bytes
// libprotobuf's SerializeToString gives, which tests/unit/tensorboard_events_test.cpp checks
// byte for byte against the generated results/tensorboard/event.pb.h). Building and freeing an
// Event message per result was a fifth of the result file writer's samples
// (docs/explanation/performance/index.md, item 33).
//
// TFRecord framing (TensorFlow's tensorflow/core/lib/io/record_writer.cc, and the TFRecord
// format in the TensorFlow guide "TFRecord and tf.train.Example"), every integer little-endian:
//     uint64 length
//     uint32 masked_crc32c(length)     (the 8 bytes of length)
//     byte   data[length]              (one serialized Event)
//     uint32 masked_crc32c(data)
// with CRC-32C (Castagnoli) masked as MaskCrc32c (libs/core/crc32c.hpp).
//
// A file starts with one Event{wall_time, file_version: "brain.Event:2"}, then holds one Event
// per result (one row of result.json), so its records after the first are the trial's rows:
// ResultFilesRepair counts, cuts and completes them like the other files (ScanTfRecords).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "services/scheduler/results/result_text.hpp"

namespace tunebus {

/// Appends `data` to `out` as one TFRecord (see above).
void AppendTfRecord(std::string_view data, std::string& out);

/// Formats a trial's events; one per writer thread (its buffers are reused).
class TensorBoardEvents {
 public:
  /// The first record of a new file: Event{wall_time (seconds since the Unix epoch),
  /// file_version "brain.Event:2"}, appended to `out`.
  void AppendFileVersion(double wall_time, std::string& out);
  /// One result (decoded in `text`) as one record appended to `out`: Event{wall_time = the
  /// result's `timestamp` (s), step = `timesteps_total` if non-zero else `training_iteration`,
  /// summary = one simple_value per number or boolean of the result, tagged
  /// "ray/tune/<column>" with nested keys joined by '/' ("ray/tune/info/a")}. As Ray Tune's
  /// TBXLoggerCallback, `config`, `pid`, `timestamp`, `time_total_s` and `training_iteration`
  /// are left out, NaN is left out, a boolean is 0 or 1, and strings are not shown. (Ray also
  /// shows lists as histograms and writes hparams at the trial's end; tunebus does not.)
  void AppendResult(const ResultText& text, std::string& out);

 private:
  std::string data_, summary_;
};

/// Prefix of every event file's name.
inline constexpr std::string_view kEventFilePrefix = "events.out.tfevents.";
/// The name of a new event file: "events.out.tfevents.<now_s, 10 digits>.<hostname>" (the
/// name TensorFlow's and tensorboardX's writers give, without their optional suffixes).
std::string EventFileName(int64_t now_s, std::string_view hostname);
/// The path of the event file in `dir` that tunebus writes to: the first by name if there are
/// several, "" if there is none.
std::string FindEventFile(const std::string& dir);

/// Calls `on_record(end_offset)` after every complete TFRecord of the file at `path` (the
/// offset just past it) whose length CRC matches; `on_record` returns false to stop early.
/// Returns the file's size (0 if it cannot be read). A damaged length ends the scan (what
/// follows it cannot be framed). The data CRC is not checked (ResultFilesRepair cuts only
/// by count; readers check it).
int64_t ScanTfRecords(const std::string& path, const std::function<bool(int64_t)>& on_record);

}  // namespace tunebus
