// TrainingResult: one result of a trial as the runner handles it, Ray Tune's result dict (the
// metrics the trainable reported plus the keys Tune fills in: training_iteration,
// time_total_s, done, ...), held as msgpack key/value pairs with each top-level value's kind
// indexed for the trial schedulers, the stoppers and the best-trial metric.
//
// It is built once per result straight from the trainable's JSON text (nlohmann's SAX parser
// writing msgpack, no JSON document) and encoded once (Encode) as the msgpack map the trial
// keeps as its last result, the journal records and the file writer formats, with no JSON
// document per result: building, filling in, encoding and freeing one would be most of the
// scheduler loop's cost (docs/explanation/performance/index.md, "Results without a JSON document").
//
// Keys are unique in the encoded map and sorted bytewise (the order nlohmann::json's std::map
// gave earlier results, so result.json lines and progress.csv columns keep their order); when
// a key is set twice the later value wins, as in a Python dict (Ray Tune overwrites the
// auto-filled keys a trainable reports itself; JSON text with a repeated key keeps the last).
#pragma once

#include <cstdint>
#include <msgpack.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libs/core/status.hpp"

namespace tunebus {

class TrainingResult {
 public:
  TrainingResult() = default;

  /// Parses a trainable's report: the text of one JSON object (RFC 8259). Nested objects and
  /// arrays are kept as values. Errors: InvalidArgument with the parser's message when the
  /// text is not JSON, or "is not a JSON object" when it is another value.
  static Result<TrainingResult> FromJsonText(std::string_view text);
  /// Builds a result from a decoded msgpack map with string keys (a trial-worker's report,
  /// proto::MsgpackMap): each entry is packed as it is, but for a top-level float, packed as
  /// float64 (so a flat report gives the bytes of its JSON text). Errors: InvalidArgument when
  /// `map` is not a map, a key is not a string, or a top-level value is binary or an extension
  /// (a result must be JSON: result.json, the control socket).
  static Result<TrainingResult> FromMsgpack(const msgpack::object& map);
  /// The same from the map's encoding (no bytes: the empty map); also InvalidArgument when the
  /// bytes are not msgpack.
  static Result<TrainingResult> FromMsgpack(std::string_view bytes);
  /// The same from a JSON value (tests, a restored last result); a non-object gives an empty
  /// result.
  static TrainingResult FromJson(const nlohmann::json& object);

  /// Set top-level `key` to `value` (one name per type, so no argument converts silently);
  /// a later Set of the same key wins.
  void SetInt(std::string_view key, int64_t value);
  void SetDouble(std::string_view key, double value);
  void SetBool(std::string_view key, bool value);
  void SetString(std::string_view key, std::string_view value);
  void SetJson(std::string_view key, const nlohmann::json& value);

  /// The value of `key` if it is a number (integers converted to double), else nullopt.
  std::optional<double> Number(std::string_view key) const;
  bool Has(std::string_view key) const;
  /// The value of `key` decoded as JSON (objects and arrays included), or null when absent.
  nlohmann::json Value(std::string_view key) const;
  /// Ray Tune's `if result.get(key)`: booleans as they are, numbers when not 0, strings,
  /// arrays and objects when not empty; null and a missing key are false.
  bool Truthy(std::string_view key) const;
  /// The keys, unique and sorted (as Encode writes them).
  std::vector<std::string> Keys() const;

  /// The result as one msgpack map (keys unique, sorted), sized to fit.
  std::string Encode() const;
  /// The result as a JSON object (decoded from Encode()).
  nlohmann::json ToJson() const;

 private:
  friend class JsonTextToResult;
  // One top-level key/value: body_[begin, end) holds the packed key then the packed value;
  // the key's raw bytes are body_[key_begin, key_begin + key_size).
  struct Entry {
    uint32_t begin = 0;
    uint32_t key_begin = 0;
    uint32_t key_size = 0;
    uint32_t end = 0;
    double number = 0;
    bool is_number = false;
    bool truthy = false;
  };
  std::string_view KeyOf(const Entry& e) const {
    return std::string_view(body_).substr(e.key_begin, e.key_size);
  }
  const Entry* Find(std::string_view key) const;  // the latest entry of `key`
  // Starts an entry for `key` (packs the key); the caller packs the value and calls EndEntry.
  void BeginEntry(std::string_view key);
  void EndEntry(bool is_number, double number, bool truthy);
  // The entries Encode writes, in its order: sorted by key, the latest of each key.
  std::vector<const Entry*> Order() const;
  // Up to this many entries Order sorts by insertion: entries_ is a few sorted runs (the
  // report's keys, sorted by the worker's encoder; the auto-filled keys, set in sorted order;
  // `done`), so that costs about one comparison per entry plus one per entry out of place.
  static constexpr size_t kInsertionSortMax = 64;

  static constexpr size_t kAutoFilledBytes = 256;  // Ray Tune's auto-filled keys, packed
  static constexpr size_t kEntriesReserved = 24;

  std::string body_;
  std::vector<Entry> entries_;
};

}  // namespace tunebus
