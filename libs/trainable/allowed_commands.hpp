// Which program a command runs, and whether this worker allows it (trial-worker
// --allow-command; docs/explanation/security.md "Workers: allowed commands and trainable
// environment").
//
// ResolveProgram finds the file execvp(3) would run for argv[0]: a name without '/' is looked up
// in the worker's PATH (as posix_spawnp does: the worker's PATH, not the child's), a relative
// path — also a relative PATH entry, and an empty one, which means "." — resolves against the
// command's working directory (the child changes into it before it execs). The program is then
// spawned by that resolved path, so the file checked is the file run.
//
// AllowedCommands is the worker's allow-list: fnmatch(3) globs without FNM_PATHNAME (so '*'
// also matches '/': `/usr/bin/*` allows /usr/bin/x/y, `/opt/ml/*` everything under /opt/ml) and
// without FNM_PERIOD. A program is allowed when a pattern matches either of its two absolute
// paths:
//   path       its folder with every symlink, "." and ".." resolved, and its own name as found
//              (`/usr/bin/python3`, the name an operator reads in `ls` and writes in a pattern);
//   real_path  every symlink resolved, its own name included (`/usr/bin/python3.11`, the file
//              that runs).
// Matching `path` is no weaker than matching `real_path` alone: whoever can create a symlink in
// an allowed folder can as well put a script there, which runs whatever it likes. Resolving the
// folder keeps `..` and symlinked folders from dressing another file up as an allowed one
// (`/opt/ml/../../usr/bin/curl` is matched as /usr/bin/curl). An empty list allows every
// program. The list constrains programs, not their arguments: an allowed interpreter runs any
// script or `-c` code it is given.
#pragma once

#include <string>
#include <vector>

#include "libs/core/status.hpp"

namespace tunebus::trainable {

/// The file a command's argv[0] names, as two absolute paths (see above).
struct ResolvedProgram {
  std::string path;       // folder resolved, own name kept: what is spawned
  std::string real_path;  // every symlink resolved
};

/// Resolves argv[0] `program` the way execvp(3) would after a chdir into `working_dir`
/// ("" = this process's working directory); PATH is this process's (unset: "/bin:/usr/bin",
/// glibc's default). Errors: InvalidArgument (empty program); Unavailable naming it:
/// "<program>: not found in PATH (<PATH>)", "<path> (no such file)", "<path> (not executable)",
/// "<path> (not a regular file)".
Result<ResolvedProgram> ResolveProgram(const std::string& program, const std::string& working_dir);

class AllowedCommands {
 public:
  /// Every program allowed (no --allow-command).
  AllowedCommands() = default;
  /// Errors: InvalidArgument naming the pattern: an empty one, or one that can never match an
  /// absolute path (it starts with neither '/' nor one of the wildcards '*', '?', '[').
  static Result<AllowedCommands> Make(std::vector<std::string> patterns);

  bool allows_every_command() const { return patterns_.empty(); }
  const std::vector<std::string>& patterns() const { return patterns_; }
  /// "/usr/bin/python3*, /opt/ml/*"; "every command" when the list is empty.
  std::string Describe() const;
  /// Ok when a pattern matches `program.path` or `program.real_path` (or the list is empty).
  /// Errors: Forbidden "command /usr/bin/curl is not allowed on this worker
  /// (--allow-command: /usr/bin/python3*, /opt/ml/*)"; the real path follows the path in
  /// parentheses when they differ.
  Status Check(const ResolvedProgram& program) const;

 private:
  explicit AllowedCommands(std::vector<std::string> patterns) : patterns_(std::move(patterns)) {}

  std::vector<std::string> patterns_;
};

}  // namespace tunebus::trainable
