#include "libs/core/sha256.hpp"

#include <algorithm>
#include <cstdlib>

namespace tunebus {

Sha256::Sha256() {
  if (sodium_init() < 0) std::abort();  // only when the system has no entropy source at all
  crypto_hash_sha256_init(&state_);
}

void Sha256::Update(std::string_view data) {
  crypto_hash_sha256_update(&state_, reinterpret_cast<const unsigned char*>(data.data()),
                            data.size());
}

std::string Sha256::HexDigest() {
  unsigned char out[crypto_hash_sha256_BYTES];
  crypto_hash_sha256_final(&state_, out);
  char hex[2 * crypto_hash_sha256_BYTES + 1];
  sodium_bin2hex(hex, sizeof hex, out, sizeof out);
  return std::string(hex, 2 * crypto_hash_sha256_BYTES);
}

std::string Sha256Hex(std::string_view data) {
  Sha256 h;
  h.Update(data);
  return h.HexDigest();
}

bool IsSha256Hex(std::string_view text) {
  return text.size() == 2 * crypto_hash_sha256_BYTES &&
         std::all_of(text.begin(), text.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace tunebus
