#include "services/checkpoint-store/journal_store.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tunebus::store {

Result<std::unique_ptr<JournalStore>> JournalStore::Open(StoreDb& db) {
  std::unique_ptr<JournalStore> store(new JournalStore(db));
  const std::string prefix(kJournalMetaPrefix);
  auto range = db.NewRange(prefix, PrefixSuccessor(prefix));
  for (; range->Valid(); range->Next()) {
    const std::string experiment = range->key().ToString().substr(prefix.size());
    const auto last =
        GetBigEndian64(std::string_view(range->value().data(), range->value().size()));
    if (!last) {
      return Status::Corruption(
          fmt::format("journal meta of experiment '{}' is {} bytes, expected 8", experiment,
                      range->value().size()));
    }
    store->last_seqs_[experiment] = *last;
  }
  if (Status s = FromRocks(range->status(), "scan journal meta"); !s.ok()) return s;
  return store;
}

Status JournalStore::ValidateExperiment(const std::string& experiment) {
  if (experiment.empty()) return Status::InvalidArgument("experiment name is empty");
  if (experiment.size() > kMaxExperimentNameBytes) {
    return Status::InvalidArgument(fmt::format("experiment name is {} bytes, the limit is {}",
                                               experiment.size(), kMaxExperimentNameBytes));
  }
  if (experiment.find('/') != std::string::npos || experiment.find('\0') != std::string::npos) {
    return Status::InvalidArgument(
        fmt::format("experiment name '{}' contains '/' or NUL", experiment));
  }
  return Status::Ok();
}

Status JournalStore::ValidateAppend(const JournalAppendRequest& request) {
  if (Status s = ValidateExperiment(request.experiment); !s.ok()) return s;
  if (request.records.empty()) return Status::InvalidArgument("append has no records");
  if (request.records.size() > kMaxRecordsPerAppend) {
    return Status::InvalidArgument(fmt::format("append has {} records, the limit is {}",
                                               request.records.size(), kMaxRecordsPerAppend));
  }
  for (size_t i = 0; i < request.records.size(); ++i) {
    if (request.records[i].size() > kMaxJournalRecordBytes) {
      return Status::InvalidArgument(fmt::format("record {} is {} bytes, the limit is {}", i,
                                                 request.records[i].size(),
                                                 kMaxJournalRecordBytes));
    }
  }
  return Status::Ok();
}

uint64_t JournalStore::LastSeq(const std::string& experiment) const {
  auto it = last_seqs_.find(experiment);
  return it == last_seqs_.end() ? 0 : it->second;
}

Result<std::vector<SeqRange>> JournalStore::AppendBatch(
    const std::vector<JournalAppendRequest>& requests) {
  std::map<std::string, uint64_t> next_last;  // experiment -> last seq after this batch
  std::vector<SeqRange> ranges;
  ranges.reserve(requests.size());
  rocksdb::WriteBatch batch;
  for (const auto& request : requests) {
    auto [it, inserted] = next_last.try_emplace(request.experiment, 0);
    if (inserted) it->second = LastSeq(request.experiment);
    const uint64_t expected = request.expected_first_seq;
    if (expected != 0 && expected != it->second + 1) {
      const bool retried = expected + request.records.size() - 1 <= it->second;
      ranges.push_back(retried ? SeqRange{expected, expected + request.records.size() - 1}
                               : SeqRange{});
      continue;
    }
    SeqRange range{it->second + 1, it->second + request.records.size()};
    for (size_t i = 0; i < request.records.size(); ++i) {
      if (auto s = batch.Put(JournalRecordKey(request.experiment, range.first_seq + i),
                             request.records[i]);
          !s.ok()) {
        return FromRocks(s, "build journal batch");
      }
    }
    it->second = range.last_seq;
    ranges.push_back(range);
  }
  for (const auto& [experiment, last] : next_last) {
    std::string value;
    PutBigEndian64(value, last);
    if (auto s = batch.Put(JournalMetaKey(experiment), value); !s.ok())
      return FromRocks(s, "build journal batch");
  }
  if (Status s = db_.Write(batch, /*durable=*/true); !s.ok()) return s;
  for (const auto& [experiment, last] : next_last) last_seqs_[experiment] = last;
  return ranges;
}

Result<uint64_t> JournalStore::Truncate(const std::string& experiment, uint64_t keep_through_seq,
                                        uint64_t expected_last_seq) {
  const uint64_t last = LastSeq(experiment);
  if (last != expected_last_seq) {
    return Status::FailedPrecondition(
        fmt::format("journal {} ends at seq {}, not {}: another writer appended to it", experiment,
                    last, expected_last_seq));
  }
  if (keep_through_seq >= last) return uint64_t{0};
  rocksdb::WriteBatch batch;
  std::string value;
  PutBigEndian64(value, keep_through_seq);
  if (auto s = batch.DeleteRange(JournalRecordKey(experiment, keep_through_seq + 1),
                                 PrefixSuccessor(JournalRecordPrefix(experiment)));
      !s.ok()) {
    return FromRocks(s, "build journal cut");
  }
  if (auto s = batch.Put(JournalMetaKey(experiment), value); !s.ok()) {
    return FromRocks(s, "build journal cut");
  }
  if (Status s = db_.Write(batch, /*durable=*/true); !s.ok()) return s;
  last_seqs_[experiment] = keep_through_seq;
  return last - keep_through_seq;
}

Result<uint64_t> JournalStore::DeleteInto(const std::string& experiment,
                                          rocksdb::WriteBatch& batch) const {
  const std::string prefix = JournalRecordPrefix(experiment);
  if (auto s = batch.DeleteRange(prefix, PrefixSuccessor(prefix)); !s.ok()) {
    return FromRocks(s, "build journal delete");
  }
  if (auto s = batch.Delete(JournalMetaKey(experiment)); !s.ok()) {
    return FromRocks(s, "build journal delete");
  }
  return LastSeq(experiment);
}

Result<JournalPage> JournalStore::Read(const std::string& experiment, uint64_t from_seq,
                                       uint32_t max_records) {
  JournalPage page;
  from_seq = std::max<uint64_t>(from_seq, 1);
  max_records = std::clamp<uint32_t>(max_records, 1, kMaxReadRecords);
  const uint64_t last = LastSeq(experiment);
  if (from_seq > last) return page;  // unknown experiment or nothing new: empty, end=true

  const std::string prefix = JournalRecordPrefix(experiment);
  auto range = db_.NewRange(JournalRecordKey(experiment, from_seq), PrefixSuccessor(prefix));
  size_t bytes = 0;
  uint64_t expected = from_seq;
  for (; range->Valid() && page.records.size() < max_records && expected <= last; range->Next()) {
    const rocksdb::Slice key = range->key();
    const auto seq =
        GetBigEndian64(std::string_view(key.data() + prefix.size(), key.size() - prefix.size()));
    if (!seq || *seq != expected) {
      return Status::Corruption(
          fmt::format("journal of '{}' has a gap or a bad key at seq {} (last seq {})", experiment,
                      expected, last));
    }
    const size_t size = range->value().size();
    if (!page.records.empty() && bytes + size > kReadReplyBudgetBytes) break;
    bytes += size;
    page.records.push_back(range->value().ToString());
    ++expected;
  }
  if (Status s = FromRocks(range->status(), "read journal"); !s.ok()) return s;
  if (page.records.empty()) {
    return Status::Corruption(
        fmt::format("journal of '{}' is missing seq {} (last seq {})", experiment, from_seq, last));
  }
  page.first_seq = from_seq;
  page.end = expected > last;
  return page;
}

}  // namespace tunebus::store
