// ZmqSearcherLink: the SearcherLink of an external searcher (libs/tune/external_searcher.hpp)
// and of the driver link (libs/tune/driver_link.hpp) over ZeroMQ: a DEALER connected to the
// peer process's ROUTER (proto/PROTOCOL.md sections 7a and 7b), requests matched to replies by
// correlation id (bus::RequestClient), timers on the scheduler's loop. Nothing here blocks the
// loop: a searcher that hangs costs a timeout.
//
// One socket for the link's life, made at the first request (so a link that never sent one, as
// an experiment whose submission is refused, leaves nothing on the loop). The link may be
// destroyed while the loop runs (ExperimentRegistry::ReleaseFinished frees an ended experiment):
// its RequestClient then takes the socket off the loop and no callback of it runs. ZeroMQ
// reconnects it to a restarted searcher by itself, and requests to one peer stay in order, so a
// request that a hung searcher answers late arrives after none of the newer ones (its reply, if
// any, is dropped as unsolicited).
//
// Under CURVE (the scheduler has keys, the endpoint is tcp://) the link is a CURVE client that
// expects the peer's public key: the experiment file's server_key (40 Z85 characters, or a key
// file's path) or else <keys-dir>/<peer>.key. Before every request that key must be in the
// scheduler's allow-list with one of the link's roles (searcher links: searcher, or operator for
// the Python driver's own searcher; the driver link: operator, the user's key the driver serves
// with), else the request fails with Forbidden naming the key and the role it needs: the
// searcher's backoff retries it, so a key authorized later (SIGHUP) is used from then on, and
// one removed stops the link at its next request. ipc:// and inproc:// links need no key.

#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <zmq.hpp>

#include "libs/bus/event_loop.hpp"
#include "libs/bus/request_client.hpp"
#include "libs/bus/security.hpp"
#include "libs/tune/searcher_link.hpp"
#include "proto/codec.hpp"

namespace tunebus {

/// A searcher's (or driver's) decoded reply frame as the JSON object the link's callback gets:
/// its msgpack map converted by nlohmann's from_msgpack. Errors: InvalidArgument "<type>: the
/// reply is not a map JSON can hold: ..." (e.g. a non-string key, a string that is not UTF-8).
Result<nlohmann::json> SearcherReplyToJson(const proto::Decoded& decoded);

class ZmqSearcherLink final : public SearcherLink {
 public:
  /// `loop` and `ctx` outlive the link; `peer` names the other side in logs and errors
  /// ("searcher", "driver") and, on a tcp:// endpoint with CURVE keys and no `server_key`, the
  /// peer's public key file <keys-dir>/<peer>.key. `server_key`: 40 Z85 characters, an absolute
  /// key file path, or "". `roles`: the allow-list roles the peer's key may have.
  ZmqSearcherLink(bus::EventLoop& loop, zmq::context_t& ctx,
                  std::shared_ptr<const bus::Security> security, std::string endpoint,
                  std::string server_key, std::string peer, bus::RoleSet roles);
  /// The factory MakeSearcher (peer "searcher") and the driver link (peer "driver") take.
  static SearcherLinkFactory Factory(bus::EventLoop& loop, zmq::context_t& ctx,
                                     std::shared_ptr<const bus::Security> security,
                                     std::string peer, bus::RoleSet roles);
  /// The roles a searcher's key may have: searcher, or operator (the Python driver serves its
  /// sample_from searcher with its user's key).
  static constexpr bus::RoleSet kSearcherRoles{bus::Role::kSearcher, bus::Role::kOperator};
  /// The role a driver's key must have: operator.
  static constexpr bus::RoleSet kDriverRoles{bus::Role::kOperator};
  ~ZmqSearcherLink() override;

  /// Encodes `request` as a msgpack map with `v` and a fresh `id`; the reply's msgpack map comes
  /// back as JSON (a reply that JSON cannot hold, e.g. a non-string key, is InvalidArgument). An
  /// endpoint ZeroMQ cannot connect to fails every request with Unavailable; under CURVE, a peer
  /// key that cannot be read fails it with FailedPrecondition, one that is not in the allow-list
  /// with the link's roles with Forbidden.
  /// The first request makes the socket and goes kConnectS later (ZeroMQ connects in the
  /// background; see ConnectDealer's ZMQ_IMMEDIATE).
  void Request(nlohmann::json request, double timeout_s, ReplyCallback done) override;
  static constexpr double kConnectS = 0.02;
  void After(double delay_s, std::function<void()> fn) override;
  double NowS() const override;

 private:
  /// The peer's Z85 public key, allowed: "" without CURVE. Errors: see Request.
  Result<std::string> AllowedPeerKey() const;

  bus::EventLoop& loop_;
  zmq::context_t& ctx_;
  std::shared_ptr<const bus::Security> security_;
  std::string endpoint_;
  std::string server_key_;
  std::string peer_;
  bus::RoleSet roles_;
  std::unique_ptr<bus::RequestClient> client_;
  std::set<bus::EventLoop::TimerId> timers_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace tunebus
