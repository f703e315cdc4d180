// ControlContext: what the control socket's handler groups (control/handlers/) share: the parts
// requests are served with, the one reply each request gets, and which experiment a request
// names.
//
// Replies: every request gets exactly one, a ControlReply with a JSON body or an ErrorReply
// (through the dispatcher: Refuse), or for fetch_checkpoint a CheckpointChunk. A request that
// changed state is answered once every journal record its experiment appended so far is durable
// (ReplyJson, write-ahead); a read is answered at once (ReplyRead), marking what is not durable
// yet (MarkNotDurable, JournalHealthJson). A request that changes state is refused
// (unavailable, naming the cause) while the checkpoint-store refuses writes or its experiment's
// journal fails (JournalWritable).
//
// Owns nothing: the socket and the dispatcher are ControlService's, the parts the scheduler's.
//
// Threads: the scheduler's loop thread only (callbacks that answer later run there too).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "libs/bus/request_client.hpp"
#include "libs/bus/security.hpp"
#include "libs/bus/socket.hpp"
#include "libs/core/clock.hpp"
#include "libs/core/status.hpp"
#include "libs/core/trial.hpp"
#include "libs/service/message_dispatcher.hpp"
#include "proto/codec.hpp"
#include "services/scheduler/core/retention_policy.hpp"
#include "services/scheduler/store/store_health.hpp"
#include "services/scheduler/workers/worker_registry.hpp"

namespace tunebus {

class Experiment;
struct ExperimentContext;
class ExperimentRegistry;
class FairShareArbiter;

/// How the control socket is set up (ControlService::Options).
struct ControlOptions {
  /// CURVE keys and roles (each request's key is checked against its entry's roles).
  std::shared_ptr<const bus::Security> security = bus::Security::Plaintext();
  /// The events socket as bound: get_experiment names it (where `tunectl watch` subscribes).
  std::string events_endpoint;
  /// The dashboard's login-token secret file (SchedulerOptions::dashboard_secret_file).
  std::string dashboard_secret_file;
  /// The retention rules (SchedulerOptions::retention; RetentionSweeper).
  RetentionRules retention;
};

/// What the handlers use (ControlService::Parts); each outlives the control socket.
struct ControlParts {
  const Clock& clock;
  ExperimentRegistry& experiments;
  ExperimentContext& experiment_context;  // what new and resumed experiments are wired to
  FairShareArbiter& arbiter;
  const WorkerRegistry& workers;
  bus::RequestClient& store;  // checkpoint-store
  bus::RequestClient& rm;     // resource-manager
  const StoreHealth& store_health;
};

class ControlContext {
 public:
  /// Replies go out on `socket`; refusals through `dispatcher` (which answers on the same
  /// socket). Everything handed in outlives the context.
  ControlContext(zmq::socket_t& socket, service::MessageDispatcher& dispatcher,
                 const ControlOptions& options, const ControlParts& parts);
  ControlContext(const ControlContext&) = delete;
  ControlContext& operator=(const ControlContext&) = delete;

  const ControlOptions& options() const { return options_; }
  const ControlParts& parts() const { return parts_; }
  ExperimentRegistry& experiments() const { return parts_.experiments; }

  /// The address of a reply that callbacks can copy (bus::Incoming holds the request's payload
  /// and is not copyable).
  static bus::Incoming ReplyTo(const std::vector<std::string>& route);
  /// Answers a request that changed state: sent once every journal record appended so far is
  /// durable. `e`: the experiment the request changed (null: none, sent at once).
  void ReplyJson(Experiment* e, const bus::Incoming& in, uint64_t id, const nlohmann::json& body);
  /// Answers a read at once, whatever the journal's state: what it shows may include changes
  /// not yet durable, marked as proto/PROTOCOL.md §2 says ("durable": false on a trial, the
  /// experiment's "journal_health").
  void ReplyRead(const bus::Incoming& in, uint64_t id, const nlohmann::json& body);
  /// ReplyRead of a body already written as JSON text.
  void ReplyReadText(const bus::Incoming& in, uint64_t id, std::string body_json);
  /// Answers with an encoded message of another type than ControlReply (checkpoint_chunk).
  void ReplyEncoded(const bus::Incoming& in, const std::string& payload);
  /// Refuses control request `id` of `type` (logged, answered with an ErrorReply).
  void ReplyError(const bus::Incoming& in, uint64_t id, const std::string& type,
                  const Status& status);

  /// Answers the read `d` (from `in`) with what `answer` makes of the experiment
  /// ExperimentRegistry::FindExperiment finds for `experiment` (ReplyRead, or ReplyError with its
  /// error); maybe after the store answered, so `answer` captures copies only.
  void AnswerRead(const bus::Incoming& in, const proto::Decoded& d, const std::string& experiment,
                  std::function<Result<nlohmann::json>(Result<Experiment*>)> answer);
  /// AnswerRead whose `answer` writes the body as JSON text.
  void AnswerReadText(const bus::Incoming& in, const proto::Decoded& d,
                      const std::string& experiment,
                      std::function<Result<std::string>(Result<Experiment*>)> answer);

  /// Ok, or Unavailable naming the cause while `e`'s journal writes fail (e may be null) or the
  /// checkpoint-store refuses writes: mutating control requests are refused then.
  Status JournalWritable(const Experiment* e) const;
  /// The experiment a request that changes one names (ExperimentRegistry::Target), if its
  /// journal takes writes (JournalWritable). Errors: Target's, then JournalWritable's.
  Result<Experiment*> Target(const std::string& experiment, const std::string& trial_id = "");

 private:
  zmq::socket_t& socket_;
  service::MessageDispatcher& dispatcher_;
  const ControlOptions& options_;
  const ControlParts& parts_;
};

/// `e`'s journal: {"state": "ok"|"failing", "since_unix_s", "error", "failed_tries",
///  "not_durable_records"} ("since_unix_s", "error", "failed_tries" only while failing).
/// REQUIRES: !e.read_only().
nlohmann::json JournalHealthJson(const Experiment& e);
/// Adds "durable": false to a trial's view while one of its changes waits for the journal.
void MarkNotDurable(const Experiment& e, const Trial& t, nlohmann::json& view);

}  // namespace tunebus
