#include "libs/workdir/working_dir_archive.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "libs/core/sha256.hpp"
#include "libs/workdir/tar_process.hpp"

namespace tunebus {
namespace {

namespace fs = std::filesystem;

using FileId = std::pair<dev_t, ino_t>;

class Walker {
 public:
  Walker(const ExcludeMatcher& excludes, WorkingDirListing& out) : excludes_(excludes), out_(out) {}

  // Lists folder `abs` (the working_dir's `rel`, "" for its root) whose identity is `id`.
  Status Walk(const std::string& abs, const std::string& rel, FileId id) {
    ancestors_.push_back(id);
    std::vector<std::string> names;
    std::error_code ec;
    for (fs::directory_iterator it(abs, ec), end; !ec && it != end; it.increment(ec)) {
      names.push_back(it->path().filename().string());
    }
    if (ec) return Status::IoError(fmt::format("cannot list {}: {}", abs, ec.message()));
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      const std::string child_abs = abs + "/" + name;
      const std::string child_rel = rel.empty() ? name : rel + "/" + name;
      struct stat link_st {};
      struct stat st {};
      if (::lstat(child_abs.c_str(), &link_st) != 0) continue;  // vanished meanwhile
      const bool is_link = S_ISLNK(link_st.st_mode);
      if (::stat(child_abs.c_str(), &st) != 0) {
        if (is_link && excludes_.Excluded(child_rel, false)) continue;
        return Status::InvalidArgument(fmt::format(
            "symbolic link {} -> {} points to nothing ({})", child_rel, LinkTarget(child_abs),
            errno == ELOOP ? "a loop of links" : std::strerror(errno)));
      }
      const bool is_dir = S_ISDIR(st.st_mode);
      if (!is_dir && !S_ISREG(st.st_mode)) continue;  // sockets, FIFOs, devices
      if (excludes_.Excluded(child_rel, is_dir)) continue;
      if (is_dir) {
        const FileId child_id{st.st_dev, st.st_ino};
        if (std::find(ancestors_.begin(), ancestors_.end(), child_id) != ancestors_.end()) {
          std::error_code canonical_ec;
          const fs::path real = fs::canonical(child_abs, canonical_ec);
          return Status::InvalidArgument(
              fmt::format("symbolic link loop: {} leads back to {}, a folder that contains it",
                          child_rel, canonical_ec ? LinkTarget(child_abs) : real.string()));
        }
        out_.entries.push_back({child_rel, true, 0});
        if (Status s = Walk(child_abs, child_rel, child_id); !s.ok()) return s;
      } else {
        out_.entries.push_back({child_rel, false, int64_t(st.st_size)});
        out_.total_bytes += int64_t(st.st_size);
      }
    }
    ancestors_.pop_back();
    return Status::Ok();
  }

 private:
  static std::string LinkTarget(const std::string& path) {
    std::error_code ec;
    fs::path target = fs::read_symlink(path, ec);
    return ec ? std::string("?") : target.string();
  }

  const ExcludeMatcher& excludes_;
  WorkingDirListing& out_;
  std::vector<FileId> ancestors_;
};

Status Prefixed(const WorkingDirSpec& spec, std::string_view field, const Status& s) {
  // No `working_dir` in the file (line 0): the default, the file's folder, has no line to name.
  std::string where;
  if (!spec.source_name.empty()) {
    where = spec.line > 0 ? fmt::format("{}:{}: ", spec.source_name, spec.line)
                          : fmt::format("{}: ", spec.source_name);
  }
  return Status(s.code(), fmt::format("{}{}: {}", where, field, s.message()));
}

}  // namespace

std::string HumanBytes(int64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (bytes < (int64_t(1) << 20)) return fmt::format("{:.1f} KiB", double(bytes) / 1024);
  if (bytes < (int64_t(1) << 30)) return fmt::format("{:.1f} MiB", double(bytes) / (1 << 20));
  return fmt::format("{:.2f} GiB", double(bytes) / (1 << 30));
}

Result<ExcludeMatcher> WorkingDirExcludes(const WorkingDirSpec& spec,
                                          const std::string& results_dir) {
  ExcludeMatcher m;
  (void)m.Add(".git/");
  (void)m.Add("__pycache__/");
  const fs::path rel = fs::path(results_dir).lexically_relative(spec.path);
  if (!results_dir.empty() && !rel.empty() && *rel.begin() != ".." && rel != ".") {
    (void)m.Add(fmt::format("/{}/", rel.generic_string()));
  }
  for (size_t i = 0; i < spec.excludes.size(); ++i) {
    if (Status s = m.Add(spec.excludes[i]); !s.ok()) {
      return Prefixed(spec, fmt::format("working_dir.excludes[{}]", i), s);
    }
  }
  const std::string ignore_path = spec.path + "/" + kIgnoreFileName;
  if (std::ifstream in(ignore_path); in) {
    std::stringstream text;
    text << in.rdbuf();
    if (Status s = m.AddIgnoreFile(text.str(), ignore_path); !s.ok()) return s;
  }
  return m;
}

Result<WorkingDirListing> ListWorkingDir(const std::string& root, const ExcludeMatcher& excludes) {
  struct stat st {};
  if (::stat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::NotFound(fmt::format("no such folder {}", root));
  }
  WorkingDirListing listing;
  listing.root = root;
  Walker walker(excludes, listing);
  if (Status s = walker.Walk(root, "", {st.st_dev, st.st_ino}); !s.ok()) return s;
  // Walk visits each folder's names sorted, but "a/x" sorts after "a-b" bytewise: sort the whole.
  std::sort(listing.entries.begin(), listing.entries.end(),
            [](const WorkingDirEntry& a, const WorkingDirEntry& b) { return a.path < b.path; });
  return listing;
}

Status CheckWorkingDirSize(const WorkingDirListing& listing, int64_t max_size_bytes) {
  if (listing.total_bytes <= max_size_bytes) return Status::Ok();
  std::vector<const WorkingDirEntry*> files;
  for (const WorkingDirEntry& e : listing.entries) {
    if (!e.is_dir) files.push_back(&e);
  }
  const size_t n = std::min<size_t>(5, files.size());
  std::partial_sort(files.begin(), files.begin() + n, files.end(),
                    [](const WorkingDirEntry* a, const WorkingDirEntry* b) {
                      return a->size_bytes != b->size_bytes ? a->size_bytes > b->size_bytes
                                                            : a->path < b->path;
                    });
  std::vector<std::string> largest;
  for (size_t i = 0; i < n; ++i) {
    largest.push_back(fmt::format("{} ({})", files[i]->path, HumanBytes(files[i]->size_bytes)));
  }
  return Status::ResourceExhausted(fmt::format(
      "{} holds {} to ship, over the cap of {} (max_size_mb); the largest files: {}; exclude "
      "them (working_dir.excludes or {}) or raise working_dir.max_size_mb",
      listing.root, HumanBytes(listing.total_bytes), HumanBytes(max_size_bytes),
      fmt::join(largest, ", "), kIgnoreFileName));
}

Result<WorkingDirArchive> PackWorkingDir(const WorkingDirListing& listing) {
  // The names go to tar through a file: NUL-separated, taken verbatim (a name may start with -).
  char list_path[] = "/tmp/tunebus-working-dir-XXXXXX";
  const int list_fd = ::mkstemp(list_path);
  if (list_fd < 0) {
    return Status::IoError(fmt::format("cannot create a temporary file: {}", std::strerror(errno)));
  }
  std::string names;
  for (const WorkingDirEntry& e : listing.entries) {
    names += e.path;
    names.push_back('\0');
  }
  Status written = WriteAll(list_fd, names.data(), names.size());
  ::close(list_fd);
  struct Unlink {
    const char* path;
    ~Unlink() { ::unlink(path); }
  } unlink_list{list_path};
  if (!written.ok()) return written;
  auto spawned = SpawnTar({"-c", "-f", "-", "--format=gnu", "--no-recursion", "--dereference",
                           "--mtime=@0", "--owner=0", "--group=0", "--numeric-owner", "--null",
                           "--verbatim-files-from", "-C", listing.root, "-T", list_path},
                          /*child_writes=*/true);
  if (!spawned.ok()) return spawned.status();
  WorkingDirArchive archive;
  char buf[1 << 16];
  Status read_status;
  for (;;) {
    const ssize_t n = ::read(spawned->second, buf, sizeof buf);
    if (n > 0) {
      archive.data.append(buf, size_t(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) read_status = Status::IoError(fmt::format("reading tar: {}", std::strerror(errno)));
    break;
  }
  ::close(spawned->second);
  Status reaped = ReapTar(spawned->first);
  if (!read_status.ok()) return read_status;
  if (!reaped.ok()) {
    return Status::IoError(fmt::format("packing {}: {}", listing.root, reaped.message()));
  }
  archive.digest = Sha256Hex(archive.data);
  archive.content_bytes = listing.total_bytes;
  for (const WorkingDirEntry& e : listing.entries) archive.files += e.is_dir ? 0 : 1;
  return archive;
}

Result<WorkingDirArchive> PackExperimentWorkingDir(const WorkingDirSpec& spec,
                                                   const std::string& results_dir) {
  auto excludes = WorkingDirExcludes(spec, results_dir);
  if (!excludes.ok()) return excludes.status();
  auto listing = ListWorkingDir(spec.path, *excludes);
  if (!listing.ok()) {
    return Prefixed(
        spec, listing.status().code() == StatusCode::kNotFound ? "working_dir.path" : "working_dir",
        listing.status());
  }
  if (Status s = CheckWorkingDirSize(*listing, spec.max_size_bytes); !s.ok()) {
    return Prefixed(spec, "working_dir", s);
  }
  auto archive = PackWorkingDir(*listing);
  if (!archive.ok()) return Prefixed(spec, "working_dir", archive.status());
  return archive;
}

}  // namespace tunebus
