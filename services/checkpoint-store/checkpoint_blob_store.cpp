#include "services/checkpoint-store/checkpoint_blob_store.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "libs/core/sha256.hpp"
#include "proto/codec.hpp"

namespace tunebus::store {

namespace {

Result<CheckpointMeta> DecodeMeta(std::string_view bytes, std::string_view checkpoint_id) {
  try {
    msgpack::object_handle handle = msgpack::unpack(bytes.data(), bytes.size());
    CheckpointMeta meta;
    handle.get().convert(meta);
    return meta;
  } catch (const std::exception& e) {
    return Status::Corruption(
        fmt::format("meta of checkpoint '{}' does not decode: {}", checkpoint_id, e.what()));
  }
}

}  // namespace

Status CheckpointBlobStore::ValidateId(const std::string& checkpoint_id) {
  if (checkpoint_id.empty()) return Status::InvalidArgument("checkpoint id is empty");
  if (checkpoint_id.size() > kMaxCheckpointIdBytes) {
    return Status::InvalidArgument(fmt::format("checkpoint id is {} bytes, the limit is {}",
                                               checkpoint_id.size(), kMaxCheckpointIdBytes));
  }
  if (checkpoint_id.find('\0') != std::string::npos)
    return Status::InvalidArgument("checkpoint id contains NUL");
  return Status::Ok();
}

Result<std::optional<CheckpointMeta>> CheckpointBlobStore::LoadMeta(
    const std::string& checkpoint_id) {
  auto value = db_.Get(CheckpointMetaKey(checkpoint_id));
  if (!value.ok()) return value.status();
  if (!value->has_value()) return std::optional<CheckpointMeta>();
  auto meta = DecodeMeta(**value, checkpoint_id);
  if (!meta.ok()) return meta.status();
  return std::optional<CheckpointMeta>(std::move(*meta));
}

Status CheckpointBlobStore::Put(const std::string& checkpoint_id, uint32_t index,
                                const std::vector<char>& data, bool last,
                                const std::string& metadata_json, const std::string& sha256) {
  if (Status s = ValidateId(checkpoint_id); !s.ok()) return s;
  if (data.size() > proto::kCheckpointChunkBytes) {
    return Status::InvalidArgument(fmt::format("chunk is {} bytes, the limit is {}", data.size(),
                                               proto::kCheckpointChunkBytes));
  }
  if (last && metadata_json.size() > kMaxCheckpointMetadataBytes) {
    return Status::InvalidArgument(fmt::format("metadata_json is {} bytes, the limit is {}",
                                               metadata_json.size(), kMaxCheckpointMetadataBytes));
  }
  if (last && !metadata_json.empty() && !nlohmann::json::accept(metadata_json)) {
    return Status::InvalidArgument("metadata_json is not valid JSON");
  }
  auto loaded = LoadMeta(checkpoint_id);
  if (!loaded.ok()) return loaded.status();
  std::optional<CheckpointMeta>& existing = *loaded;
  if (existing && existing->committed) {
    return Status::FailedPrecondition(
        fmt::format("checkpoint '{}' is already committed; delete it first", checkpoint_id));
  }

  rocksdb::WriteBatch batch;
  CheckpointMeta meta;
  if (index == 0) {
    // A new upload, or a restart of an unfinished one: drop whatever it wrote before.
    if (existing) {
      if (auto s = batch.DeleteRange(ChunkPrefix(checkpoint_id), ChunkRangeEnd(checkpoint_id));
          !s.ok()) {
        return FromRocks(s, "build checkpoint batch");
      }
    }
  } else if (!existing) {
    return Status::FailedPrecondition(
        fmt::format("chunk {} of checkpoint '{}' has no upload in progress; start with chunk 0",
                    index, checkpoint_id));
  } else if (index != existing->num_chunks) {
    return Status::FailedPrecondition(
        fmt::format("chunk {} of checkpoint '{}' is out of order; expected chunk {}", index,
                    checkpoint_id, existing->num_chunks));
  } else {
    meta = *existing;
  }
  if (last && !sha256.empty()) {
    if (!IsSha256Hex(sha256)) {
      return Status::InvalidArgument(
          fmt::format("sha256 '{}' is not 64 lowercase hex digits", sha256.substr(0, 80)));
    }
    auto digest = DigestOfUpload(checkpoint_id, index, data);
    if (!digest.ok()) return digest.status();
    if (*digest != sha256) {
      if (auto deleted = Delete(checkpoint_id); !deleted.ok()) return deleted.status();
      return Status::Corruption(
          fmt::format("'{}' has SHA-256 {}, not the {} its uploader named; the upload is dropped",
                      checkpoint_id, *digest, sha256));
    }
  }
  meta.num_chunks = index + 1;
  meta.size_bytes += data.size();
  if (last) {
    meta.committed = true;
    meta.metadata_json = metadata_json;
  }
  if (auto s = batch.Put(ChunkKey(checkpoint_id, index), rocksdb::Slice(data.data(), data.size()));
      !s.ok()) {
    return FromRocks(s, "build checkpoint batch");
  }
  if (auto s = batch.Put(CheckpointMetaKey(checkpoint_id), proto::Encode(meta)); !s.ok()) {
    return FromRocks(s, "build checkpoint batch");
  }
  if (!last) return db_.WriteUnlogged(batch);
  // The earlier chunks went without the WAL: on disk before the commit that makes them visible.
  if (index > 0) {
    if (Status s = db_.Flush(); !s.ok()) return s;
  }
  return db_.Write(batch, /*durable=*/true);
}

Result<std::string> CheckpointBlobStore::DigestOfUpload(const std::string& checkpoint_id,
                                                        uint32_t num_chunks,
                                                        const std::vector<char>& tail) {
  Sha256 hash;
  for (uint32_t i = 0; i < num_chunks; ++i) {
    auto data = db_.Get(ChunkKey(checkpoint_id, i));
    if (!data.ok()) return data.status();
    if (!data->has_value()) {
      return Status::Corruption(
          fmt::format("chunk {} of the upload of '{}' is missing", i, checkpoint_id));
    }
    hash.Update(**data);
  }
  hash.Update(tail.data(), tail.size());
  return hash.HexDigest();
}

Result<CheckpointChunk> CheckpointBlobStore::Get(const std::string& checkpoint_id, uint32_t index) {
  if (Status s = ValidateId(checkpoint_id); !s.ok()) return s;
  auto loaded = LoadMeta(checkpoint_id);
  if (!loaded.ok()) return loaded.status();
  if (!loaded->has_value() || !(*loaded)->committed) {
    return Status::NotFound(
        fmt::format("checkpoint '{}' does not exist or is not committed", checkpoint_id));
  }
  CheckpointChunk chunk{std::string(), std::move(**loaded)};
  if (index >= chunk.meta.num_chunks) {
    return Status::NotFound(fmt::format("checkpoint '{}' has {} chunks, no chunk {}", checkpoint_id,
                                        chunk.meta.num_chunks, index));
  }
  auto data = db_.Get(ChunkKey(checkpoint_id, index));
  if (!data.ok()) return data.status();
  if (!data->has_value()) {
    return Status::Corruption(
        fmt::format("chunk {} of committed checkpoint '{}' is missing", index, checkpoint_id));
  }
  chunk.data = std::move(**data);
  return chunk;
}

Result<std::vector<CheckpointEntry>> CheckpointBlobStore::List(const std::string& prefix) {
  if (prefix.size() > kMaxCheckpointIdBytes || prefix.find('\0') != std::string::npos) {
    return Status::InvalidArgument(
        fmt::format("prefix must be at most {} bytes without NUL", kMaxCheckpointIdBytes));
  }
  std::vector<CheckpointEntry> entries;
  const std::string key_prefix = std::string(kCheckpointMetaPrefix) + prefix;
  auto range = db_.NewRange(key_prefix, PrefixSuccessor(key_prefix));
  size_t bytes = 0;
  for (; range->Valid(); range->Next()) {
    const std::string id = range->key().ToString().substr(kCheckpointMetaPrefix.size());
    auto meta = DecodeMeta(std::string_view(range->value().data(), range->value().size()), id);
    if (!meta.ok()) return meta.status();
    if (!meta->committed) continue;
    bytes += id.size() + meta->metadata_json.size();
    if (entries.size() == kMaxListEntries || bytes > kListReplyBudgetBytes) {
      return Status::ResourceExhausted(
          fmt::format("more than {} checkpoints or {} bytes of ids and metadata match prefix '{}'; "
                      "use a longer prefix",
                      kMaxListEntries, kListReplyBudgetBytes, prefix));
    }
    entries.push_back(CheckpointEntry{id, std::move(*meta)});
  }
  if (Status s = FromRocks(range->status(), "list checkpoints"); !s.ok()) return s;
  return entries;
}

Result<uint64_t> CheckpointBlobStore::DeletePrefixInto(const std::string& prefix,
                                                       rocksdb::WriteBatch& batch) {
  const std::string metas = std::string(kCheckpointMetaPrefix) + prefix;
  const std::string chunks = std::string(kChunkPrefix) + prefix;
  uint64_t count = 0;
  auto range = db_.NewRange(metas, PrefixSuccessor(metas));
  for (; range->Valid(); range->Next()) ++count;
  if (Status s = FromRocks(range->status(), "scan checkpoints to delete"); !s.ok()) return s;
  for (const std::string& p : {metas, chunks}) {
    if (auto s = batch.DeleteRange(p, PrefixSuccessor(p)); !s.ok()) {
      return FromRocks(s, "build checkpoints delete");
    }
  }
  return count;
}

Result<bool> CheckpointBlobStore::Delete(const std::string& checkpoint_id) {
  if (Status s = ValidateId(checkpoint_id); !s.ok()) return s;
  auto loaded = LoadMeta(checkpoint_id);
  if (!loaded.ok()) return loaded.status();
  if (!loaded->has_value()) return false;
  rocksdb::WriteBatch batch;
  if (auto s = batch.DeleteRange(ChunkPrefix(checkpoint_id), ChunkRangeEnd(checkpoint_id));
      !s.ok()) {
    return FromRocks(s, "build delete batch");
  }
  if (auto s = batch.Delete(CheckpointMetaKey(checkpoint_id)); !s.ok())
    return FromRocks(s, "build delete batch");
  if (Status s = db_.Write(batch, /*durable=*/true); !s.ok()) return s;
  return true;
}

}  // namespace tunebus::store
