#include "libs/trainable/allowed_commands.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace tunebus::trainable {

namespace fs = std::filesystem;

namespace {

// glibc's confstr(_CS_PATH): what execvp and posix_spawnp search when PATH is unset.
constexpr char kDefaultPath[] = "/bin:/usr/bin";

// Ok when `file` is an executable regular file; else Unavailable "<file> (<why>)".
Status CheckExecutable(const fs::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) {
    return Status::Unavailable(fmt::format("{} (no such file)", file.string()));
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::Unavailable(fmt::format("{} (not a regular file)", file.string()));
  }
  if (::access(file.c_str(), X_OK) != 0) {
    return Status::Unavailable(fmt::format("{} (not executable)", file.string()));
  }
  return Status::Ok();
}

// The two paths of an executable file `file` (absolute). Errors: Unavailable (it vanished).
Result<ResolvedProgram> Canonical(const fs::path& file) {
  std::error_code ec;
  const fs::path folder = fs::canonical(file.parent_path(), ec);
  if (ec) return Status::Unavailable(fmt::format("{}: {}", file.string(), ec.message()));
  const fs::path real = fs::canonical(file, ec);
  if (ec) return Status::Unavailable(fmt::format("{}: {}", file.string(), ec.message()));
  return ResolvedProgram{.path = (folder / file.filename()).string(), .real_path = real.string()};
}

}  // namespace

Result<ResolvedProgram> ResolveProgram(const std::string& program, const std::string& working_dir) {
  if (program.empty()) return Status::InvalidArgument("the program (argv[0]) is empty");
  std::error_code ec;
  const fs::path base = working_dir.empty() ? fs::current_path(ec) : fs::path(working_dir);
  if (ec) return Status::Unavailable("cannot read the working directory: " + ec.message());
  if (program.find('/') != std::string::npos) {
    const fs::path file = base / program;  // an absolute `program` replaces `base`
    if (Status s = CheckExecutable(file); !s.ok()) return s;
    return Canonical(file);
  }
  const char* env_path = std::getenv("PATH");
  const std::string dirs = env_path != nullptr ? env_path : kDefaultPath;
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const fs::path dir = base / dirs.substr(start, end - start);  // "" = base itself
    const fs::path candidate = dir / program;
    if (CheckExecutable(candidate).ok()) return Canonical(candidate);
    start = end + 1;
  }
  return Status::Unavailable(fmt::format("{}: not found in PATH ({})", program, dirs));
}

Result<AllowedCommands> AllowedCommands::Make(std::vector<std::string> patterns) {
  for (const std::string& p : patterns) {
    if (p.empty()) return Status::InvalidArgument("--allow-command: empty pattern");
    if (p[0] != '/' && p[0] != '*' && p[0] != '?' && p[0] != '[') {
      return Status::InvalidArgument(
          fmt::format("--allow-command '{}' can never match: patterns match absolute paths (e.g. "
                      "/usr/bin/python3*)",
                      p));
    }
  }
  return AllowedCommands(std::move(patterns));
}

std::string AllowedCommands::Describe() const {
  if (patterns_.empty()) return "every command";
  return fmt::format("{}", fmt::join(patterns_, ", "));
}

Status AllowedCommands::Check(const ResolvedProgram& program) const {
  if (patterns_.empty()) return Status::Ok();
  for (const std::string& p : patterns_) {
    if (::fnmatch(p.c_str(), program.path.c_str(), 0) == 0 ||
        ::fnmatch(p.c_str(), program.real_path.c_str(), 0) == 0) {
      return Status::Ok();
    }
  }
  const std::string which = program.real_path == program.path
                                ? program.path
                                : fmt::format("{} ({})", program.path, program.real_path);
  return Status::Forbidden(fmt::format(
      "command {} is not allowed on this worker (--allow-command: {})", which, Describe()));
}

}  // namespace tunebus::trainable
