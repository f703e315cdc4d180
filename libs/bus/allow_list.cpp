#include "libs/bus/allow_list.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

namespace tunebus::bus {

Result<AllowList> AllowList::Load(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec)
    return Status::IoError(fmt::format("cannot read allow-list folder {}: {}", dir, ec.message()));
  std::vector<fs::path> files;
  for (const auto& entry : it) {
    if (entry.path().extension() == kPublicKeySuffix) {
      files.push_back(entry.path());
    } else if (entry.path().extension() == kSecretKeySuffix) {
      spdlog::warn("allow-list {}: skipping {}: a secret key file does not belong here", dir,
                   entry.path().filename().string());
    }
  }
  std::sort(files.begin(), files.end());
  AllowList list;
  for (const auto& file : files) {
    auto key = ReadCurveKeyFile(file.string());
    if (!key.ok()) return key.status();
    if (key->role.empty())
      return Status::InvalidArgument(fmt::format(
          "{}: no role; an allow-list entry needs `role = \"...\"` under metadata (one of {})",
          file.string(), RoleNames()));
    AllowedKey entry{key->name, *ParseRole(key->role), file.string()};
    auto [at, added] = list.keys_.emplace(key->public_key, entry);
    if (!added && at->second.role != entry.role)
      return Status::InvalidArgument(
          fmt::format("{} and {} hold the same public key with roles {} and {}", at->second.file,
                      entry.file, RoleName(at->second.role), RoleName(entry.role)));
  }
  return list;
}

const AllowedKey* AllowList::Find(const std::string& public_key) const {
  auto it = keys_.find(public_key);
  return it == keys_.end() ? nullptr : &it->second;
}

std::vector<std::string> AllowList::NamesWith(Role role) const {
  std::vector<std::string> names;
  for (const auto& [key, entry] : keys_)
    if (entry.role == role) names.push_back(entry.name);
  std::sort(names.begin(), names.end());
  return names;
}

std::string AllowList::Summary() const {
  std::vector<std::string> parts;
  for (const auto& [key, entry] : keys_)
    parts.push_back(fmt::format("{} ({})", entry.name, RoleName(entry.role)));
  std::sort(parts.begin(), parts.end());
  return fmt::format("{} key{}{}{}", keys_.size(), keys_.size() == 1 ? "" : "s",
                     parts.empty() ? "" : ": ", fmt::join(parts, ", "));
}

}  // namespace tunebus::bus
