// The security flags of every service and of tunectl (libs/bus/security.hpp,
// docs/explanation/security.md), each with its TUNEBUS_* variable:
//   --keys-dir DIR         TUNEBUS_KEYS_DIR         keys folder: CURVE on every tcp:// socket
//   --key-name NAME        TUNEBUS_KEY_NAME         this process's keypair <DIR>/<NAME>.key_secret
//   --authorized-keys DIR  TUNEBUS_AUTHORIZED_KEYS  the allow-list (default <DIR>/authorized)
//   --insecure             TUNEBUS_INSECURE         serve non-loopback tcp:// without keys
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string_view>

#include "libs/bus/security.hpp"

namespace tunebus::service {

/// Declares the flags above on `app`, into `options`.
void AddSecurityFlags(CLI::App& app, bus::SecurityOptions& options);

/// Loads `options` (bus::Security::Load with `default_key_name`) and logs what it secures:
/// "CURVE on: key scheduler (<first 8>…), allow-list <dir>: 3 keys: ..." or "no keys: plaintext
/// tcp:// on loopback only". Errors: Load's.
Result<std::shared_ptr<bus::Security>> LoadSecurity(const bus::SecurityOptions& options,
                                                    std::string_view default_key_name);

}  // namespace tunebus::service
