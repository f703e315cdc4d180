// Security: how this process secures its TCP sockets (docs/explanation/security.md).
//
// With a keys folder (--keys-dir / TUNEBUS_KEYS_DIR), every tcp:// socket speaks CurveZMQ
// (ZeroMQ RFC 26: Curve25519 key exchange, every frame encrypted and authenticated):
//
//   <keys-dir>/<key-name>.key_secret   this process's keypair (--key-name / TUNEBUS_KEY_NAME,
//                                      default the service's name: "scheduler", "worker", ...)
//   <keys-dir>/<server>.key            the public key of each server it connects to, by the
//                                      server's name: scheduler.key, checkpoint-store.key,
//                                      resource-manager.key
//   <keys-dir>/authorized/*.key        a server's allow-list (allow_list.hpp; another folder with
//                                      --authorized-keys / TUNEBUS_AUTHORIZED_KEYS), reloaded on
//                                      SIGHUP
//
// A server authenticates each connecting client in a ZAP handler (ZeroMQ RFC 27,
// zap_authenticator.hpp): the client's public key must be in the allow-list with a role the
// socket's Domain admits, else the handshake fails and the server logs the drop. Each message
// then carries the client's key (Incoming::key); Authorize() checks it against the allow-list as
// it is now (a key removed and SIGHUPed stops working at its next request) and the message
// type's roles.
//
// Without keys, tcp:// sockets are plaintext, and a server refuses to bind a non-loopback
// address unless started with --insecure (logged as a warning at every start). inproc:// and
// ipc:// never use CURVE: they are reachable only from this process or through the file system.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <zmq.hpp>

#include "libs/bus/allow_list.hpp"
#include "libs/bus/curve_keys.hpp"
#include "libs/bus/roles.hpp"
#include "libs/core/status.hpp"

namespace tunebus::bus {

class ZapAuthenticator;
struct Incoming;

/// The security flags every service and tunectl take (libs/service/security_flags.hpp).
struct SecurityOptions {
  std::string keys_dir;         // "" = no CURVE
  std::string key_name;         // "" = the default name the process gives Security::Load
  std::string authorized_keys;  // "" = <keys_dir>/authorized
  bool insecure = false;        // allow plaintext binds of non-loopback addresses
};

/// A server socket's ZAP domain: its name (in logs and as ZMQ_ZAP_DOMAIN) and the roles whose
/// keys may connect to it.
struct Domain {
  std::string name;
  RoleSet roles;
};

/// The public key a client expects its server to prove: by name (`<keys-dir>/<name>.key`) or
/// given (Z85, e.g. a driver's key from an experiment file).
struct ServerKey {
  std::string name;        // "scheduler": names the server in errors
  std::string public_key;  // "" = read <keys-dir>/<name>.key
};

class Security {
 public:
  /// Plaintext: no keys, loopback and local endpoints only. Shared, never reloaded.
  static std::shared_ptr<Security> Plaintext();
  /// Reads this process's keypair (and the allow-list if its folder exists) as `options` say.
  /// `default_key_name` is used when options.key_name is empty. Without keys_dir: plaintext with
  /// options.insecure. Errors: the key file's (ReadCurveKeyFile), or the allow-list's.
  static Result<std::shared_ptr<Security>> Load(const SecurityOptions& options,
                                                std::string_view default_key_name);
  ~Security();
  Security(const Security&) = delete;
  Security& operator=(const Security&) = delete;

  /// True with keys: every tcp:// socket uses CURVE.
  bool curve() const { return !own_.public_key.empty(); }
  bool insecure() const { return options_.insecure; }
  /// This process's key (empty without keys).
  const CurveKeyFile& own_key() const { return own_; }
  const std::string& authorized_dir() const { return authorized_dir_; }
  /// The keys folder (--keys-dir); "" without keys.
  const std::string& keys_dir() const { return options_.keys_dir; }

  /// Makes `socket`, about to bind `endpoint`, a CURVE server of `domain` (starting this
  /// context's ZAP handler first), or checks that a plaintext bind is allowed. Errors:
  /// FailedPrecondition "refusing to bind <endpoint> without CURVE keys: ..." (a non-loopback
  /// tcp address without keys or --insecure); the allow-list's (it must load to serve).
  Status SecureBind(zmq::context_t& ctx, zmq::socket_t& socket, const std::string& endpoint,
                    const Domain& domain);
  /// Makes `socket`, about to connect to `endpoint`, a CURVE client that expects `server`'s key
  /// (tcp:// with keys only). Errors: the server key file's ("... copy <dir>/scheduler.key from
  /// the scheduler's host").
  Status SecureConnect(zmq::socket_t& socket, const std::string& endpoint,
                       const ServerKey& server) const;

  /// Whether the sender of `in` may send a `request` that needs `roles`. A message without a key
  /// (plaintext, inproc, ipc socket) is allowed. Errors: Forbidden "key bob has role viewer;
  /// stop_experiment needs operator", or "key bob is no longer in the allow-list".
  Status Authorize(const Incoming& in, RoleSet roles, std::string_view request) const;
  /// The allow-list entry of a Z85 public key now, or false.
  bool Find(const std::string& public_key, AllowedKey& out) const;
  /// The name logs give a Z85 public key: its allow-list name, else "unknown key <first 8>…".
  std::string KeyName(const std::string& public_key) const;

  /// Re-reads the allow-list folder. On an error the current list stays and the error is
  /// returned (and logged by the caller).
  Status ReloadAllowList();
  /// Asks every Security of the process to reload its allow-list within ~0.2 s (the ZAP
  /// handler's poll). Async-signal-safe: RunService's SIGHUP handler calls it.
  static void RequestReload();
  /// Reload requests so far (RequestReload calls).
  static uint64_t ReloadRequests();

 private:
  explicit Security(SecurityOptions options);
  Result<std::string> ServerPublicKey(const ServerKey& server) const;
  friend class ZapAuthenticator;

  SecurityOptions options_;
  CurveKeyFile own_;
  std::string authorized_dir_;
  mutable std::mutex mu_;
  std::shared_ptr<const AllowList> allow_list_;             // guarded by mu_; null until loaded
  mutable std::map<std::string, std::string> server_keys_;  // by name; guarded by mu_
  std::map<void*, std::unique_ptr<ZapAuthenticator>> authenticators_;  // by context handle
};

/// True for tcp:// endpoints on a loopback address (127.0.0.0/8, ::1, localhost, the lo
/// interface), and for every inproc:// and ipc:// endpoint.
bool IsLocalEndpoint(const std::string& endpoint);

}  // namespace tunebus::bus
