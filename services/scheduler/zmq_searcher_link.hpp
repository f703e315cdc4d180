// ZmqSearcherLink: the SearcherLink of an external searcher (libs/tune/external_searcher.hpp)
// and of the driver link (libs/tune/driver_link.hpp) over ZeroMQ: a DEALER connected to the
// peer process's ROUTER (proto/PROTOCOL.md sections 7a and 7b), requests matched to replies by
// correlation id (bus::RequestClient), timers on the scheduler's loop. Nothing here blocks the
// loop: a searcher that hangs costs a timeout.
//
// One socket for the link's life, made at the first request (so a link that never sent one, as
// an experiment whose submission is refused, leaves nothing on the loop; a link that sent one
// belongs to a live experiment, which lives as long as the scheduler's loop runs). ZeroMQ
// reconnects it to a restarted searcher by itself, and requests to one peer stay in order, so a
// request that a hung searcher answers late arrives after none of the newer ones (its reply, if
// any, is dropped as unsolicited).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <zmq.hpp>

#include "libs/bus/event_loop.hpp"
#include "libs/bus/request_client.hpp"
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
  /// ("searcher", "driver").
  ZmqSearcherLink(bus::EventLoop& loop, zmq::context_t& ctx, std::string endpoint,
                  std::string peer = "searcher");
  /// The factory MakeSearcher (peer "searcher") and the driver link (peer "driver") take.
  static SearcherLinkFactory Factory(bus::EventLoop& loop, zmq::context_t& ctx,
                                     std::string peer = "searcher");
  ~ZmqSearcherLink() override;

  /// Encodes `request` as a msgpack map with `v` and a fresh `id`; the reply's msgpack map comes
  /// back as JSON (a reply that JSON cannot hold, e.g. a non-string key, is InvalidArgument). An
  /// endpoint ZeroMQ cannot connect to fails every request with Unavailable.
  /// The first request makes the socket and goes kConnectS later (ZeroMQ connects in the
  /// background; see ConnectDealer's ZMQ_IMMEDIATE).
  void Request(nlohmann::json request, double timeout_s, ReplyCallback done) override;
  static constexpr double kConnectS = 0.02;
  void After(double delay_s, std::function<void()> fn) override;
  double NowS() const override;

 private:
  bus::EventLoop& loop_;
  zmq::context_t& ctx_;
  std::string endpoint_;
  std::string peer_;
  std::unique_ptr<bus::RequestClient> client_;
  std::set<bus::EventLoop::TimerId> timers_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace tunebus
