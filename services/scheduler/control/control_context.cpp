// ControlContext: the replies every control handler answers with and the experiment a request
// names.
#include "services/scheduler/control/control_context.hpp"

#include <fmt/format.h>

#include <utility>

#include "libs/journal/records.hpp"
#include "proto/control.hpp"
#include "services/scheduler/core/experiment.hpp"
#include "services/scheduler/core/experiment_registry.hpp"

namespace tunebus {

using nlohmann::json;

ControlContext::ControlContext(zmq::socket_t& socket, service::MessageDispatcher& dispatcher,
                               const ControlOptions& options, const ControlParts& parts)
    : socket_(socket), dispatcher_(dispatcher), options_(options), parts_(parts) {}

bus::Incoming ControlContext::ReplyTo(const std::vector<std::string>& route) {
  bus::Incoming to;
  to.route = route;
  return to;
}

void ControlContext::ReplyJson(Experiment* e, const bus::Incoming& in, uint64_t id,
                               const json& body) {
  proto::ControlReply reply;
  reply.id = id;
  reply.body_json = body.dump();
  auto send = [this, in_route = in.route, payload = proto::Encode(reply)] {
    bus::Incoming route;
    route.route = in_route;
    bus::Reply(socket_, route, payload);
  };
  // A request's records are durable once every record its experiment appended so far is.
  if (e != nullptr && !e->read_only()) {
    e->journal().AfterDurable(std::move(send));
  } else {
    send();
  }
}

void ControlContext::ReplyRead(const bus::Incoming& in, uint64_t id, const json& body) {
  ReplyReadText(in, id, body.dump());
}

void ControlContext::ReplyReadText(const bus::Incoming& in, uint64_t id, std::string body_json) {
  proto::ControlReply reply;
  reply.id = id;
  reply.body_json = std::move(body_json);
  bus::Reply(socket_, in, proto::Encode(reply));
}

void ControlContext::ReplyEncoded(const bus::Incoming& in, const std::string& payload) {
  bus::Reply(socket_, in, payload);
}

void ControlContext::ReplyError(const bus::Incoming& in, uint64_t id, const std::string& type,
                                const Status& status) {
  dispatcher_.Refuse(in, id, type, status);
}

void ControlContext::AnswerRead(const bus::Incoming& in, const proto::Decoded& d,
                                const std::string& experiment,
                                std::function<Result<json>(Result<Experiment*>)> answer) {
  AnswerReadText(in, d, experiment,
                 [answer = std::move(answer)](Result<Experiment*> e) -> Result<std::string> {
                   Result<json> body = answer(std::move(e));
                   if (!body.ok()) return body.status();
                   return body->dump();
                 });
}

void ControlContext::AnswerReadText(
    const bus::Incoming& in, const proto::Decoded& d, const std::string& experiment,
    std::function<Result<std::string>(Result<Experiment*>)> answer) {
  parts_.experiments.FindExperiment(experiment,
                                    [this, route = in.route, id = d.id(), type = d.type(),
                                     answer = std::move(answer)](Result<Experiment*> e) {
                                      Result<std::string> body = answer(std::move(e));
                                      if (!body.ok())
                                        return ReplyError(ReplyTo(route), id, type, body.status());
                                      ReplyReadText(ReplyTo(route), id, std::move(*body));
                                    });
}

Status ControlContext::JournalWritable(const Experiment* e) const {
  if (e != nullptr && !e->read_only() &&
      e->journal().state() == journal::JournalWriter::State::kFailing) {
    return Status::Unavailable(fmt::format(
        "journal writes of experiment {} are failing since {}: {}; nothing acknowledged is "
        "lost; try again once the checkpoint-store takes writes",
        e->name(), FormatTimeOfDayUtc(e->journal().failing_since_wall_s()),
        e->journal().last_error().ToString()));
  }
  if (parts_.store_health.state() == StoreHealth::State::kDegraded) {
    const json h = parts_.store_health.ToJson();
    return Status::Unavailable(fmt::format(
        "the checkpoint-store refuses writes (degraded since {}: {}); try again once it recovers",
        FormatTimeOfDayUtc(h["since_unix_s"].get<double>()), h["reason"].get<std::string>()));
  }
  return Status::Ok();
}

Result<Experiment*> ControlContext::Target(const std::string& experiment,
                                           const std::string& trial_id) {
  auto e = parts_.experiments.Target(experiment, trial_id);
  if (!e.ok()) return e;
  if (Status s = JournalWritable(*e); !s.ok()) return s;
  return e;
}

json JournalHealthJson(const Experiment& e) {
  const journal::JournalWriter& w = e.journal();
  const bool failing = w.state() == journal::JournalWriter::State::kFailing;
  json health = {{"state", failing ? "failing" : "ok"},
                 {"not_durable_records", w.appended() - w.durable()}};
  if (failing) {
    health["since_unix_s"] = w.failing_since_wall_s();
    health["error"] = w.last_error().ToString();
    health["failed_tries"] = w.failed_tries();
  }
  return health;
}

void MarkNotDurable(const Experiment& e, const Trial& t, json& view) {
  if (!e.read_only() && !e.recorder().IsDurable(t)) view["durable"] = false;
}

}  // namespace tunebus
