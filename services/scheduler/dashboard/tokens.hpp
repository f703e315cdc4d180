// LoginTokens: the dashboard's login tokens (docs/how-to/dashboard.md "Sign-in"). The scheduler
// keeps a 32-byte secret and signs each token with it (libsodium's crypto_auth, HMAC-SHA-512-256);
// it alone issues tokens (`tunectl dashboard-token`, an operator's request) and checks them (at
// sign-in and at every action). A token is
//
//   tbt1.<claims>.<tag>     claims: base64url of {"v":1,"name","role","iat","exp","jti"} (JSON)
//                           tag:    base64url of crypto_auth(claims' bytes, secret)
//
// so it names who it was made for, its role (viewer or operator) and its expiry, and cannot be
// changed or made without the secret. The secret lives in a file (kept across restarts: tokens
// stay valid) or, without one, in memory (tokens end with the process). Replacing the file's
// secret (delete it and restart) ends every token made before.
#pragma once

#include <sodium.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "libs/bus/roles.hpp"
#include "libs/core/status.hpp"

namespace tunebus::dashboard {

/// What a token says.
struct TokenClaims {
  std::string name;                     // who it was made for (logs, the page's action log)
  bus::Role role = bus::Role::kViewer;  // kViewer or kOperator
  int64_t issued_at = 0;                // seconds since the epoch
  int64_t expires_at = 0;               // seconds since the epoch; invalid from then on
};

class LoginTokens {
 public:
  /// The longest a token may be valid: 30 days.
  static constexpr int64_t kMaxTtlS = 30 * 24 * 3600;
  static constexpr size_t kMaxNameBytes = 64;
  static constexpr std::string_view kPrefix = "tbt1.";

  /// A random secret held only in memory.
  static LoginTokens InMemory();
  /// The secret in `path`: read (64 hex digits and a newline), or, when the file does not exist,
  /// made from 32 random bytes and written with mode 0600 (atomically: a temporary file renamed).
  /// Errors: IoError naming the file when it cannot be read or written; InvalidArgument when it
  /// holds anything but 64 hex digits; FailedPrecondition when others may read it (mode & 077).
  static Result<LoginTokens> Load(const std::string& path);

  /// A token for `claims`. REQUIRES: CheckClaims(claims) is Ok.
  std::string Issue(const TokenClaims& claims) const;
  /// The claims of `token` when its tag verifies and now_unix_s < expires_at. Errors:
  /// InvalidArgument "not a dashboard login token" (not of the form above, or claims that are not
  /// the JSON object above); Forbidden "... does not verify ..." (tampered, made with another
  /// secret); Forbidden "... expired at <UTC time>".
  Result<TokenClaims> Verify(std::string_view token, int64_t now_unix_s) const;

  /// Ok, or InvalidArgument: a role other than viewer and operator, a name empty, over
  /// kMaxNameBytes or with control characters, an expiry not after issued_at or more than
  /// kMaxTtlS after it.
  static Status CheckClaims(const TokenClaims& claims);

  /// The secret's file, "" when in memory.
  const std::string& path() const { return path_; }

 private:
  LoginTokens() = default;
  std::array<unsigned char, crypto_auth_KEYBYTES> key_{};
  std::string path_;
};

/// Seconds of a token's life as `tunectl dashboard-token --ttl` takes it: a number with an
/// optional unit s, m, h or d ("90s", "30m", "12h", "7d"; no unit: seconds). Errors:
/// InvalidArgument for anything else, for 0 or less, or for more than kMaxTtlS.
Result<int64_t> ParseTokenTtl(std::string_view text);

/// "2026-11-27 16:45:00 UTC" of `unix_s`.
std::string UtcDateTime(int64_t unix_s);

/// `bytes` random bytes (randombytes_buf) as unpadded base64url: session ids, CSRF tokens.
std::string RandomToken(size_t bytes);
/// `data` as unpadded base64url (sodium_bin2base64).
std::string Base64Url(std::string_view data);
/// Whether a and b are equal, in time that depends only on their lengths (sodium_memcmp).
bool SameSecret(std::string_view a, std::string_view b);

}  // namespace tunebus::dashboard
