// ExcludeMatcher: which paths of a working_dir are not shipped, by gitignore-like patterns
// (git's gitignore(5) rules, the syntax Ray's runtime_env `excludes` takes):
//   - `*` and `?` match within one path component, `[a-z]` a character class (fnmatch(3));
//     `**` as a whole component matches zero or more components (`**/logs`, `a/**`, `a/**/b`);
//   - a pattern with a `/` at its start or in its middle is anchored at the working_dir's root
//     (`/build`, `data/raw`); one without matches a component at any depth (`*.ckpt`);
//   - a trailing `/` matches directories only (`data/`);
//   - a leading `!` re-includes what an earlier pattern excluded (the last matching pattern
//     wins); as in git, a path inside an excluded directory cannot be re-included, because the
//     directory is never walked.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "libs/core/status.hpp"

namespace tunebus {

class ExcludeMatcher {
 public:
  /// Adds `pattern`. Errors: InvalidArgument with the reason alone (the caller names the file,
  /// line and field): an empty pattern, one that is only `/` or `!`, or a `..` component.
  Status Add(std::string_view pattern);
  /// Adds each line of a `.tunebusignore` text: blank lines and lines starting with `#` are
  /// skipped, trailing spaces trimmed. Errors: InvalidArgument "<source>:<line>: <why>".
  Status AddIgnoreFile(std::string_view text, std::string_view source);

  /// Whether `path` (relative to the root, `/`-separated, no leading `/`) is excluded;
  /// `is_dir` says whether it names a directory.
  bool Excluded(std::string_view path, bool is_dir) const;

  size_t size() const { return rules_.size(); }

 private:
  struct Rule {
    std::vector<std::string> components;  // `**` stands for zero or more components
    bool negated = false;
    bool dir_only = false;
  };
  std::vector<Rule> rules_;
};

}  // namespace tunebus
