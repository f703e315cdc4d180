// AllowList: the public keys a server accepts, with their roles: a folder of public key files
// (curve_keys.hpp), one per client, like ssh's authorized_keys. Every `*.key` file in the folder
// is an entry; its `role` metadata is the key's role (a file without one is refused). Other files
// (README, *.key_secret put there by mistake: refused with a warning) are skipped.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "libs/bus/curve_keys.hpp"
#include "libs/bus/roles.hpp"
#include "libs/core/status.hpp"

namespace tunebus::bus {

/// One allowed key.
struct AllowedKey {
  std::string name;  // the file's metadata name (or file name): how logs name the key
  Role role = Role::kViewer;
  std::string file;  // where it was read
};

/// An immutable snapshot of the allow-list folder.
class AllowList {
 public:
  /// Reads every `*.key` file in `dir` (not recursive). Errors: IoError if `dir` cannot be read;
  /// InvalidArgument naming the first bad file (unreadable key, no role, unknown role, the same
  /// public key twice with different roles). An empty folder is a valid, empty list.
  static Result<AllowList> Load(const std::string& dir);

  /// The entry of `public_key` (Z85), or nullptr.
  const AllowedKey* Find(const std::string& public_key) const;
  size_t size() const { return keys_.size(); }
  /// The names of the keys with `role`, sorted (for a log line).
  std::vector<std::string> NamesWith(Role role) const;
  /// "3 keys: alice (operator), bob (viewer), worker (worker)".
  std::string Summary() const;

 private:
  std::map<std::string, AllowedKey> keys_;  // by public key (Z85)
};

}  // namespace tunebus::bus
