#include "libs/bus/curve_keys.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tunebus::bus {

namespace {

namespace fs = std::filesystem;

// `line` as `key = "value"` (quotes optional), or false.
bool ParseAssignment(const std::string& line, std::string& key, std::string& value) {
  const size_t eq = line.find('=');
  if (eq == std::string::npos) return false;
  auto trim = [](std::string s, const char* chars) {
    const size_t b = s.find_first_not_of(chars);
    if (b == std::string::npos) return std::string();
    const size_t e = s.find_last_not_of(chars);
    return s.substr(b, e - b + 1);
  };
  key = trim(line.substr(0, eq), " \t");
  value = trim(trim(line.substr(eq + 1), " \t\r"), "\"'");
  return !key.empty();
}

std::string FileStem(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  for (const char* suffix : {kSecretKeySuffix, kPublicKeySuffix}) {
    const std::string s = suffix;
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0)
      return name.substr(0, name.size() - s.size());
  }
  return name;
}

std::string Render(const CurveKeyFile& key, bool with_secret) {
  std::string out = fmt::format(
      "#   ****  tunectl keygen: CURVE certificate of \"{}\"  ****\n"
      "#   ZeroMQ CURVE {} Certificate\n"
      "#   {}\n\n"
      "metadata\n    name = \"{}\"\n",
      key.name, with_secret ? "**Secret**" : "Public",
      with_secret ? "DO NOT PROVIDE THIS FILE TO OTHER USERS nor change its permissions."
                  : "Exchange securely, or use a secure mechanism to verify the contents",
      key.name);
  if (!key.role.empty()) out += fmt::format("    role = \"{}\"\n", key.role);
  out += fmt::format("curve\n    public-key = \"{}\"\n", key.public_key);
  if (with_secret) out += fmt::format("    secret-key = \"{}\"\n", key.secret_key);
  return out;
}

// Writes `text` to a new file `path` with `mode` (O_EXCL unless overwrite: then it replaces the
// file through a temporary, so the mode is the new one).
Status WriteNewFile(const std::string& path, const std::string& text, mode_t mode, bool overwrite) {
  const std::string target = overwrite ? path + ".tmp" : path;
  if (overwrite) ::unlink(target.c_str());
  const int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    if (errno == EEXIST)
      return Status::FailedPrecondition(
          fmt::format("{} exists; remove it first (keys are never overwritten)", path));
    return Status::IoError(fmt::format("cannot create {}: {}", target, std::strerror(errno)));
  }
  ::fchmod(fd, mode);  // the umask may have narrowed it; never widens beyond `mode`
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(target.c_str());
      return Status::IoError(fmt::format("cannot write {}: {}", target, std::strerror(err)));
    }
    done += size_t(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(target.c_str());
    return Status::IoError(fmt::format("cannot write {}: {}", target, std::strerror(errno)));
  }
  if (overwrite && ::rename(target.c_str(), path.c_str()) != 0)
    return Status::IoError(fmt::format("cannot rename {}: {}", target, std::strerror(errno)));
  return Status::Ok();
}

bool IsFileName(const std::string& name) {
  if (name.empty() || name[0] == '.' || name.size() > 128) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
      return false;
  return true;
}

Status MakeKeyDir(const std::string& dir) {
  std::error_code ec;
  if (fs::is_directory(dir, ec)) return Status::Ok();
  fs::create_directories(dir, ec);
  if (ec) return Status::IoError(fmt::format("cannot create key folder {}: {}", dir, ec.message()));
  fs::permissions(dir, fs::perms::owner_all, ec);
  return Status::Ok();
}

}  // namespace

bool IsZ85Key(const std::string& key) {
  if (key.size() != 40) return false;
  std::array<uint8_t, 32> raw{};
  return zmq_z85_decode(raw.data(), key.c_str()) != nullptr;
}

Result<CurveKeyFile> ReadCurveKeyFile(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    return Status::IoError(fmt::format("cannot read key file {}: {}", path, std::strerror(errno)));
  CurveKeyFile key;
  key.path = path;
  std::string line, k, v;
  int number = 0, public_line = 0, secret_line = 0;
  while (std::getline(in, line)) {
    ++number;
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    if (!ParseAssignment(line, k, v)) continue;  // section headers: "metadata", "curve"
    if (k == "public-key") {
      key.public_key = v;
      public_line = number;
    } else if (k == "secret-key") {
      key.secret_key = v;
      secret_line = number;
    } else if (k == "name") {
      key.name = v;
    } else if (k == "role") {
      key.role = v;
    }
  }
  if (in.bad()) return Status::IoError(fmt::format("cannot read key file {}", path));
  if (key.name.empty()) key.name = FileStem(path);
  if (public_line == 0) return Status::InvalidArgument(fmt::format("{}: no public-key line", path));
  if (!IsZ85Key(key.public_key))
    return Status::InvalidArgument(
        fmt::format("{}:{}: public-key is not a CURVE key (40 Z85 characters)", path, public_line));
  if (!key.role.empty() && !ParseRole(key.role))
    return Status::InvalidArgument(
        fmt::format("{}: role \"{}\" is not one of {}", path, key.role, RoleNames()));
  if (secret_line != 0) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0)
      return Status::InvalidArgument(fmt::format(
          "{} holds a secret key but has mode {:04o}: group or others may read it; chmod 600 it",
          path, st.st_mode & 07777));
    if (!IsZ85Key(key.secret_key))
      return Status::InvalidArgument(fmt::format(
          "{}:{}: secret-key is not a CURVE key (40 Z85 characters)", path, secret_line));
    std::array<char, 41> derived{};
    if (zmq_curve_public(derived.data(), key.secret_key.c_str()) != 0 ||
        key.public_key != derived.data())
      return Status::InvalidArgument(
          fmt::format("{}: secret-key does not belong to its public-key", path));
  }
  return key;
}

CurveKeyPaths KeyPathsOf(const std::string& dir, const std::string& name) {
  const fs::path base = fs::path(dir) / name;
  return {base.string() + kPublicKeySuffix, base.string() + kSecretKeySuffix};
}

Result<CurveKeyPaths> WriteCurveKeyPair(const std::string& dir, const std::string& name, Role role,
                                        bool overwrite) {
  if (!IsFileName(name))
    return Status::InvalidArgument(
        fmt::format("key name \"{}\" must be a file name: letters, digits, '.', '_', '-'", name));
  if (Status s = MakeKeyDir(dir); !s.ok()) return s;
  std::array<char, 41> public_key{}, secret_key{};
  if (zmq_curve_keypair(public_key.data(), secret_key.data()) != 0)
    return Status::Internal(fmt::format("zmq_curve_keypair: {} (libzmq without libsodium?)",
                                        zmq_strerror(zmq_errno())));
  CurveKeyFile key{"", name, std::string(RoleName(role)), public_key.data(), secret_key.data()};
  const CurveKeyPaths paths = KeyPathsOf(dir, name);
  if (!overwrite) {
    for (const auto& p : {paths.public_file, paths.secret_file}) {
      std::error_code ec;
      if (fs::exists(p, ec))
        return Status::FailedPrecondition(
            fmt::format("{} exists; remove it first or pass --force", p));
    }
  }
  if (Status s = WriteNewFile(paths.secret_file, Render(key, true), 0600, overwrite); !s.ok())
    return s;
  if (Status s = WriteNewFile(paths.public_file, Render(key, false), 0644, overwrite); !s.ok())
    return s;
  return paths;
}

Status WritePublicKeyFile(const std::string& dir, const CurveKeyFile& key, bool overwrite) {
  if (Status s = MakeKeyDir(dir); !s.ok()) return s;
  CurveKeyFile pub = key;
  pub.secret_key.clear();
  return WriteNewFile(KeyPathsOf(dir, key.name).public_file, Render(pub, false), 0644, overwrite);
}

}  // namespace tunebus::bus
