// The trainable's working_dir as one archive, packed once at submission (Ray's
// `runtime_env={"working_dir": ...}`): `tunectl` packs it, the checkpoint-store keeps it under
// its digest, and every trial-worker runs the trainable in its own unpacked copy
// (docs/how-to/ship-code.md "The trainable's code").
//
// The archive is a deterministic tar (GNU format; names sorted bytewise; mtimes, owners and
// groups zero; symbolic links followed, so a link's target content is shipped), so the same
// folder always gives the same SHA-256 digest.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "libs/core/status.hpp"
#include "libs/workdir/exclude_matcher.hpp"

namespace tunebus {

/// The experiment file's `working_dir` (docs/reference/experiment-file.md).
struct WorkingDirSpec {
  static constexpr int64_t kDefaultMaxSizeBytes = int64_t(100) << 20;  // Ray's working_dir cap
  bool shipped = true;                // false: `working_dir: false`, run at `path` as is
  std::string path;                   // absolute folder
  std::vector<std::string> excludes;  // gitignore-like patterns (ExcludeMatcher)
  int64_t max_size_bytes = kDefaultMaxSizeBytes;  // of the files' content, before tar
  /// Where the experiment file sets it, for errors ("exp.yaml:4: working_dir.path: ...");
  /// line 0 when the file has no `working_dir` (the default: the file's folder).
  std::string source_name;
  int line = 0;
};

/// A file of this name at a working_dir's root adds patterns to its excludes.
inline constexpr const char* kIgnoreFileName = ".tunebusignore";

/// One file or folder to ship, relative to the working_dir (`/`-separated).
struct WorkingDirEntry {
  std::string path;
  bool is_dir = false;
  int64_t size_bytes = 0;  // a file's content (its link target's, for a symbolic link)
};

struct WorkingDirListing {
  std::string root;                      // absolute
  std::vector<WorkingDirEntry> entries;  // sorted by path, bytewise
  int64_t total_bytes = 0;               // the files' sizes summed
};

struct WorkingDirArchive {
  std::string data;    // the tar archive
  std::string digest;  // SHA-256 of `data`, 64 lowercase hex digits
  int64_t files = 0;
  int64_t content_bytes = 0;  // the files' sizes summed (what max_size_bytes caps)
};

/// The matcher a working_dir is listed with: `.git/` and `__pycache__/` (always), the folder
/// `results_dir` when it lies inside `spec.path`, `spec.excludes`, then the root's
/// `.tunebusignore`. Errors: InvalidArgument naming the file, line and field of a bad pattern.
Result<ExcludeMatcher> WorkingDirExcludes(const WorkingDirSpec& spec,
                                          const std::string& results_dir);

/// Walks `root` following symbolic links, leaving out what `excludes` matches (an excluded
/// folder is not entered). Sockets, FIFOs and devices are left out. Errors: NotFound "no such
/// folder <root>"; InvalidArgument for a symbolic link loop ("symbolic link loop: a/b leads back
/// to /x, a folder that contains it") or a link to nothing; IoError for an unreadable folder.
Result<WorkingDirListing> ListWorkingDir(const std::string& root, const ExcludeMatcher& excludes);

/// OK when `listing.total_bytes` <= `max_size_bytes`; else ResourceExhausted naming the size,
/// the cap and the 5 largest files.
Status CheckWorkingDirSize(const WorkingDirListing& listing, int64_t max_size_bytes);

/// Packs `listing` with the system `tar` (deterministic, see above) and digests it.
/// Errors: IoError (tar failed, e.g. a file vanished meanwhile).
Result<WorkingDirArchive> PackWorkingDir(const WorkingDirListing& listing);

/// All of the above for an experiment's working_dir; errors are prefixed with
/// "<source>:<line>: working_dir[.path]: " ("<source>: " without a line when the file has no
/// `working_dir`). REQUIRES: spec.shipped.
Result<WorkingDirArchive> PackExperimentWorkingDir(const WorkingDirSpec& spec,
                                                   const std::string& results_dir);

/// "12.3 MiB", "512 B": sizes in errors.
std::string HumanBytes(int64_t bytes);

}  // namespace tunebus
