#include "libs/bus/identity_keys.hpp"

#include <fmt/format.h>

namespace tunebus::bus {

Status IdentityKeys::Claim(const std::string& identity, const std::string& key) {
  if (key.empty()) return Status::Ok();
  auto [it, added] = keys_.emplace(identity, key);
  if (added || it->second == key) return Status::Ok();
  return Status::Forbidden(fmt::format(
      "worker {} belongs to key {}…, not to this key {}…: a worker's identity is its key", identity,
      it->second.substr(0, 8), key.substr(0, 8)));
}

}  // namespace tunebus::bus
