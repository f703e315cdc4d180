#include "libs/service/security_flags.hpp"

#include <spdlog/spdlog.h>

namespace tunebus::service {

void AddSecurityFlags(CLI::App& app, bus::SecurityOptions& options) {
  app.add_option("--keys-dir", options.keys_dir,
                 "CURVE keys folder (tunectl keygen): every tcp:// socket is encrypted and "
                 "authenticated (docs/explanation/security.md)")
      ->envname("TUNEBUS_KEYS_DIR");
  app.add_option("--key-name", options.key_name,
                 "this process's keypair: <keys-dir>/<name>.key_secret (default: the service's "
                 "name)")
      ->envname("TUNEBUS_KEY_NAME");
  app.add_option("--authorized-keys", options.authorized_keys,
                 "allow-list folder of clients' public key files, reloaded on SIGHUP (default: "
                 "<keys-dir>/authorized)")
      ->envname("TUNEBUS_AUTHORIZED_KEYS");
  app.add_flag("--insecure", options.insecure,
               "serve non-loopback tcp:// addresses without keys: anyone who reaches them can "
               "run commands on every worker")
      ->envname("TUNEBUS_INSECURE");
}

Result<std::shared_ptr<bus::Security>> LoadSecurity(const bus::SecurityOptions& options,
                                                    std::string_view default_key_name) {
  auto loaded = bus::Security::Load(options, default_key_name);
  if (!loaded.ok()) return loaded.status();
  const bus::Security& s = **loaded;
  if (s.curve()) {
    spdlog::info("CURVE on every tcp:// socket: key {} ({}…), allow-list {}", s.own_key().name,
                 s.own_key().public_key.substr(0, 8), s.authorized_dir());
  } else if (s.insecure()) {
    spdlog::warn("INSECURE: no keys and --insecure: tcp:// sockets are plaintext on every address");
  } else {
    spdlog::info("no keys (--keys-dir): plaintext tcp:// on loopback addresses only");
  }
  return loaded;
}

}  // namespace tunebus::service
