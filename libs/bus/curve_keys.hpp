// CURVE key files: the keypairs `tunectl keygen` writes and every service and client reads.
//
// The format is ZeroMQ's certificate file (ZPL, as czmq's zcert and pyzmq's
// zmq.auth.create_certificates write it), so pyzmq's zmq.auth.load_certificate reads tunebus keys:
//
//   <dir>/<name>.key          the public key: share it, put it in a server's allow-list
//   <dir>/<name>.key_secret   the public and the secret key: mode 0600, never shared
//
//   #   ****  tunectl keygen: CURVE certificate of "alice"  ****
//   metadata
//       name = "alice"
//       role = "operator"
//   curve
//       public-key = "<40 Z85 characters>"
//       secret-key = "<40 Z85 characters>"      (only in the .key_secret file)
//
// Keys are Z85 text (ZeroMQ RFC 32) of 32-byte Curve25519 keys.
#pragma once

#include <string>

#include "libs/bus/roles.hpp"
#include "libs/core/status.hpp"

namespace tunebus::bus {

/// Suffixes of the two files of a keypair.
inline constexpr const char* kPublicKeySuffix = ".key";
inline constexpr const char* kSecretKeySuffix = ".key_secret";

/// One key file as read.
struct CurveKeyFile {
  std::string path;
  std::string name;        // metadata `name`, else the file name without its suffix
  std::string role;        // metadata `role` ("" when the file has none)
  std::string public_key;  // Z85, 40 characters
  std::string secret_key;  // Z85, 40 characters; "" in a public key file
};

/// Reads a key file (either kind). A file holding a secret key must not be readable or writable
/// by group or others (the mode ssh demands of a private key). Errors: IoError (cannot read),
/// InvalidArgument naming the file and line (no public-key, a key that is not 40 Z85 characters,
/// a secret key that does not match the public one, group- or world-accessible secret file:
/// "... has mode 0644; chmod 600 it").
Result<CurveKeyFile> ReadCurveKeyFile(const std::string& path);

/// The two paths of keypair `name` in `dir`.
struct CurveKeyPaths {
  std::string public_file;
  std::string secret_file;
};
CurveKeyPaths KeyPathsOf(const std::string& dir, const std::string& name);

/// Generates a keypair (zmq_curve_keypair) and writes `<dir>/<name>.key` (0644) and
/// `<dir>/<name>.key_secret` (created 0600), creating `dir` (0700) if missing. Never overwrites:
/// an existing file is FailedPrecondition unless `overwrite`. `name` is a file name
/// ([A-Za-z0-9._-], not starting with '.'). Errors: InvalidArgument (name), FailedPrecondition,
/// IoError naming the file.
Result<CurveKeyPaths> WriteCurveKeyPair(const std::string& dir, const std::string& name, Role role,
                                        bool overwrite = false);

/// Writes the public half of `key` as `<dir>/<key.name>.key` (an allow-list entry), creating
/// `dir`. Errors: IoError.
Status WritePublicKeyFile(const std::string& dir, const CurveKeyFile& key, bool overwrite = false);

/// True if `key` is 40 characters that decode as Z85 (ZeroMQ RFC 32) to 32 bytes.
bool IsZ85Key(const std::string& key);

}  // namespace tunebus::bus
