// FinishedCache: the finished experiments read back from their journals (ExperimentRegistry's
// read-only loads), kept while they fit a budget of bytes and dropped least recently read first
// (LRU, as a web cache's or RocksDB's block cache). Each entry is keyed by journal name and the
// journal length it was read at (a longer journal is read again), and carries the bytes it holds,
// estimated from its contents (TrialBytes, JsonBytes): the sizes of its strings, JSON values and
// vectors, not malloc's overhead.
//
// An entry bigger than the whole budget is kept until the next Trim, so the request that read it
// is answered from it; ExperimentRegistry trims once the reply is sent. So after each reply the
// entries held total at most the budget.
//
// Invariants (checked in debug builds): bytes() is the sum of the entries' bytes; after Trim,
// bytes() <= capacity_bytes(); order_ and index_ hold the same keys.
//
// Threads: not thread-safe; the scheduler's loop thread only.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/core/trial.hpp"

namespace tunebus {

/// Bytes a JSON value holds: the value itself, its strings' characters and its elements',
/// recursively (object members count a tree node each). An estimate, without malloc's overhead.
size_t JsonBytes(const nlohmann::json& j);
/// Bytes a Trial holds: the struct, its strings, its config (JsonBytes), its last result and its
/// failure and checkpoint lists. An estimate, as JsonBytes.
size_t TrialBytes(const Trial& t);

/// Bytes a TrialRunner holds per trial besides the Trial (its phase table and lookups by trial
/// id): about 280 in heaptrack's count of a read-only load of 2,000 trials.
inline constexpr size_t kRunnerBytesPerTrial = 288;

template <typename Entry>
class FinishedCache {
 public:
  /// Holds at most `capacity_bytes` between Trims (0: nothing is kept past a Trim).
  explicit FinishedCache(size_t capacity_bytes) : capacity_(capacity_bytes) {}

  /// The entry of `key` read at journal length `version`, made the most recently used; null when
  /// there is none, or only one read at another length.
  Entry* Find(const std::string& key, uint64_t version) {
    const auto it = index_.find(key);
    if (it == index_.end() || it->second->version != version) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return it->second->entry.get();
  }

  /// Keeps `entry` (holding `bytes`) under `key` at `version` as the most recently used,
  /// replacing one under the same key, and drops the least recently used others while over the
  /// budget. The new entry stays until the next Trim even when it alone is over the budget.
  /// Returns it (valid until it is dropped).
  Entry* Put(const std::string& key, uint64_t version, std::unique_ptr<Entry> entry, size_t bytes) {
    Erase(key);
    order_.push_front(Node{key, version, std::move(entry), bytes});
    index_[key] = order_.begin();
    bytes_ += bytes;
    Entry* kept = order_.front().entry.get();
    while (bytes_ > capacity_ && order_.size() > 1) DropLast();
    CheckInvariants();
    return kept;
  }

  /// Drops the least recently used entries until the total is within the budget (the newest too
  /// when it alone is over it). Returns how many were dropped.
  size_t Trim() {
    size_t dropped = 0;
    for (; bytes_ > capacity_; ++dropped) DropLast();
    CheckInvariants();
    return dropped;
  }

  /// Drops the entry of `key`, if any; true if there was one.
  bool Erase(const std::string& key) {
    const auto it = index_.find(key);
    if (it == index_.end()) return false;
    bytes_ -= it->second->bytes;
    order_.erase(it->second);
    index_.erase(it);
    return true;
  }

  size_t bytes() const { return bytes_; }
  size_t size() const { return order_.size(); }
  size_t capacity_bytes() const { return capacity_; }
  /// The keys, most recently used first.
  std::vector<std::string> Keys() const {
    std::vector<std::string> keys;
    for (const Node& n : order_) keys.push_back(n.key);
    return keys;
  }

 private:
  struct Node {
    std::string key;
    uint64_t version = 0;
    std::unique_ptr<Entry> entry;
    size_t bytes = 0;
  };

  void DropLast() {
    assert(!order_.empty());
    bytes_ -= order_.back().bytes;
    index_.erase(order_.back().key);
    order_.pop_back();
  }

  void CheckInvariants() const {
#ifndef NDEBUG
    size_t sum = 0;
    for (const Node& n : order_) sum += n.bytes;
    assert(sum == bytes_ && index_.size() == order_.size());
#endif
  }

  size_t capacity_;
  size_t bytes_ = 0;
  std::list<Node> order_;  // most recently used first
  std::map<std::string, typename std::list<Node>::iterator> index_;
};

}  // namespace tunebus
