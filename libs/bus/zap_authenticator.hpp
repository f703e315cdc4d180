// ZapAuthenticator: a context's ZAP handler (ZeroMQ RFC 27), answering the CURVE handshakes of
// every server socket of one Security on that context.
//
// It binds inproc://zeromq.zap.01 (one handler per context) and runs one thread: for each
// request it finds the client's public key in the Security's allow-list and accepts it
// ("200", user id = the key in Z85, so each message carries it: Incoming::key) if the key's role
// is one the socket's Domain (its ZMQ_ZAP_DOMAIN) admits. Anything else gets "400" and a log line
//   Dropping connection to <domain> from <address> because key <name> has role <role>; ...
//   Dropping connection to <domain> from <address> because key <first 8>… is not in the
//     allow-list <dir>
// (at most one line per key and domain every 10 s, with the count of drops meanwhile). Between
// requests it polls every 200 ms for Security::RequestReload and reloads the allow-list.
//
// libzmq 4.3 accepts every CURVE client when no handler is bound to the context, so the handler
// must exist before the first CURVE server socket binds: Security::SecureBind starts it.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "libs/bus/roles.hpp"
#include "libs/core/status.hpp"

namespace tunebus::bus {

class Security;
struct Domain;

class ZapAuthenticator {
 public:
  /// Binds the context's ZAP endpoint and starts the thread. Errors: Unavailable if another
  /// handler already serves `ctx`.
  static Result<std::unique_ptr<ZapAuthenticator>> Start(zmq::context_t& ctx, Security& security);
  /// Admits `domain`'s roles from now on (a socket about to bind).
  void AddDomain(const Domain& domain);
  /// Handshakes answered so far: accepted and refused.
  uint64_t accepted() const { return accepted_.load(); }
  uint64_t refused() const { return refused_.load(); }
  /// Stops and joins the thread, closing the ZAP socket.
  ~ZapAuthenticator();

 private:
  ZapAuthenticator(zmq::socket_t socket, Security& security);
  void Run();
  void Answer();
  void LogDrop(const std::string& domain, const std::string& address, const std::string& key,
               const std::string& why);

  zmq::socket_t socket_;
  Security& security_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> accepted_{0}, refused_{0};
  std::mutex mu_;
  std::map<std::string, RoleSet> domains_;  // guarded by mu_
  struct DropLog {
    std::chrono::steady_clock::time_point last;
    uint64_t suppressed = 0;
  };
  std::map<std::string, DropLog> drop_logs_;  // by domain + key; the thread's own
  std::thread thread_;
};

}  // namespace tunebus::bus
