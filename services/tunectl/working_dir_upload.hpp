// Uploading a packed working_dir (libs/workdir/working_dir_archive.hpp) through the scheduler's
// control socket: proto/control.hpp WorkingDirStat, then WorkingDirPut chunk by chunk.
#pragma once

#include "libs/bus/control_client.hpp"
#include "libs/core/status.hpp"
#include "libs/workdir/working_dir_archive.hpp"

namespace tunebus {

/// Stores `archive` in the checkpoint-store under its digest unless it is there already (the
/// same folder packs to the same digest, so a resubmission uploads nothing). Returns true when
/// it uploaded, false when the store held it. Errors: the scheduler's or store's, as Status
/// (e.g. Corruption when the store computed another digest, Unavailable).
Result<bool> UploadWorkingDir(ControlClient& client, const WorkingDirArchive& archive);

}  // namespace tunebus
