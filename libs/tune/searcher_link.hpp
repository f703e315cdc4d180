// SearcherLink: the request/reply channel between ExternalSearcher and a searcher process
// (proto/PROTOCOL.md "External searchers"). It is ExternalSearcher's only way out, so libs/tune
// stays free of I/O: the scheduler gives it a ZeroMQ link (services/scheduler/zmq_searcher_link
// .hpp), unit tests a fake one.
//
// Threading: one thread calls everything and receives every callback (the scheduler's loop).
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/core/status.hpp"

namespace tunebus {

class SearcherLink {
 public:
  using ReplyCallback = std::function<void(Result<nlohmann::json>)>;

  virtual ~SearcherLink() = default;

  /// Sends `request` (a JSON object with `type` and its fields; the link adds `v` and `id`) and
  /// calls `done` exactly once, later, on the loop thread: with the reply (an object with its
  /// `type`), with the peer's typed `error` as a Status (its code and message), or with
  /// Unavailable when no reply came within `timeout_s` seconds (a late reply is dropped).
  /// Nothing is called after the link is destroyed.
  virtual void Request(nlohmann::json request, double timeout_s, ReplyCallback done) = 0;
  /// Calls `fn` once, `delay_s` seconds from now, on the loop thread (unless destroyed first).
  virtual void After(double delay_s, std::function<void()> fn) = 0;
  /// Monotonic seconds.
  virtual double NowS() const = 0;
  /// What the link knows of its peer beyond the protocol, merged into the searcher's Describe
  /// (a searcher process the scheduler started: "endpoint", "pid", "restarts", "last_exit").
  virtual nlohmann::json Describe() const { return nlohmann::json::object(); }
};

/// Where the searcher process is (`search: {type: external}`, docs/reference/search.md).
struct SearcherTarget {
  /// "tcp://host:port" or "ipc://path"; may be empty when `command` is given (the link's maker
  /// picks one).
  std::string endpoint;
  /// Empty: somebody else runs the searcher at `endpoint`. Else the program and its arguments,
  /// started (and restarted after `backoff_initial_s` doubling to `backoff_max_s`) by the link's
  /// maker in the experiment file's folder.
  std::vector<std::string> command;
  /// The searcher's CURVE public key, as the experiment file gives it: 40 Z85 characters or the
  /// path of a public key file; "" = <keys-dir>/searcher.key. Used only on a tcp:// endpoint
  /// when the scheduler has keys.
  std::string server_key;
  double backoff_initial_s = 0.5;
  double backoff_max_s = 30;
};

/// Builds the link to the process at `endpoint` ("tcp://host:port", "ipc://path") whose CURVE
/// public key is `server_key` (40 Z85 characters, or an absolute key file path; "" = the
/// default key file of the link's peer): the scheduler's ZeroMQ links (to a searcher, to a
/// driver).
using SearcherLinkFactory = std::function<std::unique_ptr<SearcherLink>(
    const std::string& endpoint, const std::string& server_key)>;

/// Builds the link to the searcher of `target` (`search: {type: external}`), starting its
/// process when `target.command` is given. The scheduler provides one; without it (a spec check,
/// a read-only experiment) an external searcher has no link and only replays its journaled
/// state. Errors: whatever keeps the link from being made (e.g. IoError for the private folder of
/// a spawned searcher's endpoint).
using ExternalLinkFactory =
    std::function<Result<std::unique_ptr<SearcherLink>>(const SearcherTarget&)>;

/// `reply` when it is a map of `type`; a failed reply as it is; else InvalidArgument "the <peer>
/// answered <its type> where <type> was expected" (`peer`: "searcher", "driver").
Result<nlohmann::json> ExpectReply(Result<nlohmann::json> reply, const char* type,
                                   const char* peer);

}  // namespace tunebus
