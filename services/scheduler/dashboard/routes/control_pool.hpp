// ControlPool: the dashboard's clients of the scheduler's control socket, shared by the HTTP
// threads. A route's request borrows a ControlClient (a DEALER connected as the dashboard's
// viewer key allows), uses it on its own thread alone and gives it back, so the pages cost the
// scheduler's event loop only the control requests they send and no connection per request.
//
// Invariants: a client is either idle in the pool or held by exactly one thread; a client whose
// request timed out is never returned (its late answer would reach the next request); at most
// kMaxIdle clients are kept idle.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "libs/bus/control_client.hpp"
#include "libs/bus/security.hpp"
#include "libs/core/status.hpp"

namespace tunebus::dashboard {

class ControlPool {
 public:
  /// Idle clients kept (the HTTP threads' number: one each at most).
  static constexpr size_t kMaxIdle = 12;

  /// Clients connect to `endpoint` with `security`, each request waiting up to
  /// `request_timeout`. `ctx` and `security` outlive the pool.
  ControlPool(zmq::context_t& ctx, std::string endpoint, std::shared_ptr<bus::Security> security,
              std::chrono::milliseconds request_timeout)
      : ctx_(ctx),
        endpoint_(std::move(endpoint)),
        security_(std::move(security)),
        timeout_(request_timeout) {}

  /// A control request on a pooled client: one is taken (or connected), used by this thread
  /// alone, and given back unless the request timed out. Errors: Take's, then the reply's.
  template <typename M>
  Result<nlohmann::json> Call(M request) {
    auto client = Take();
    if (!client.ok()) return client.status();
    Result<nlohmann::json> reply = client->Call(std::move(request));
    // A client whose request timed out may still get that answer later: it is not reused.
    if (reply.ok() || reply.status().code() != StatusCode::kUnavailable) {
      Return(std::move(*client));
    }
    return reply;
  }
  /// A client for this thread alone: a pooled one, or a new connection. Errors:
  /// ControlClient::Connect's.
  Result<ControlClient> Take();
  /// Gives `client` back to the pool; pass only a client whose last request was answered (one
  /// that timed out may still receive that answer later).
  void Return(ControlClient client);

 private:
  zmq::context_t& ctx_;
  const std::string endpoint_;
  const std::shared_ptr<bus::Security> security_;
  const std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::vector<ControlClient> idle_;  // guarded by mu_
};

}  // namespace tunebus::dashboard
