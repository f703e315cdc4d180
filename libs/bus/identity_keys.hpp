// IdentityKeys: binds a peer's self-chosen identity (a trial-worker's routing id and worker id)
// to the CURVE key that first used it, so on a CURVE socket a worker's identity is its key: a
// second key cannot speak as, or take over, a worker another key registered. Identities seen
// without a key (plaintext sockets) are not bound.
#pragma once

#include <map>
#include <string>

#include "libs/core/status.hpp"

namespace tunebus::bus {

class IdentityKeys {
 public:
  /// Binds `identity` to `key` (Z85) if unbound, or checks it is bound to `key`. `key` "" (no
  /// CURVE) is always Ok. Errors: Forbidden "worker <identity> belongs to another key".
  Status Claim(const std::string& identity, const std::string& key);
  size_t size() const { return keys_.size(); }

 private:
  std::map<std::string, std::string> keys_;  // identity -> key
};

}  // namespace tunebus::bus
