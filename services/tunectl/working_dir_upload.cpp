#include "services/tunectl/working_dir_upload.hpp"

#include <algorithm>

#include "proto/control.hpp"
#include "proto/envelope.hpp"

namespace tunebus {

Result<bool> UploadWorkingDir(ControlClient& client, const WorkingDirArchive& archive) {
  proto::WorkingDirStat stat;
  stat.digest = archive.digest;
  auto stored = client.Call(stat);
  if (!stored.ok()) return stored.status();
  if (stored->value("stored", false)) return false;
  const size_t size = archive.data.size();
  uint32_t chunk = 0;
  size_t offset = 0;
  do {
    const size_t n = std::min(proto::kCheckpointChunkBytes, size - offset);
    proto::WorkingDirPut put;
    put.digest = archive.digest;
    put.chunk_index = chunk++;
    put.data.assign(archive.data.begin() + offset, archive.data.begin() + offset + n);
    offset += n;
    put.last = offset == size;
    auto acked = client.Call(put);
    if (!acked.ok()) return acked.status();
  } while (offset < size);
  return true;
}

}  // namespace tunebus
