// ControlService: the scheduler's control socket (proto/control.hpp, proto/dashboard.hpp):
// tunectl's requests, the dashboard's reads, login tokens and actions.
//
// Owns:
//   - the control ROUTER (bound by the scheduler) and its MessageDispatcher table, one handler
//     per request type (control_service.cpp AddHandlers), with the roles each needs: reads are
//     the viewers', everything that submits, uploads or changes state the operators';
//   - the dashboard's login-token secret (dashboard/tokens.hpp): loaded or made by Create.
// Every request gets exactly one reply: ControlReply with a JSON body, or ErrorReply (through the
// dispatcher: Refuse). A request that changed state is answered once every journal record its
// experiment appended so far is durable (ReplyJson, write-ahead); a read is answered at once
// (ReplyRead), marking what is not durable yet. A request that changes state is refused
// (unavailable, naming the cause) while the checkpoint-store refuses writes or its experiment's
// journal fails (JournalWritable). Requests that wait for the store or the resource-manager
// (lsx, resume of an experiment not in memory, reads of one only in the journals, checkpoint
// export, working_dir upload, list-workers) answer from the client's callback with a copy of
// what they need, and look at the experiments again there: the loop served others meanwhile.
//
// Uses (handed to Create, all outliving it): the ExperimentRegistry (which experiment a request
// names; new and resumed experiments, wired to the ExperimentContext), the FairShareArbiter
// (share views), the workers' WorkerRegistry (list-workers' "connected"), the store and
// resource-manager clients, the store's health.
//
// Threads: all on the scheduler's loop thread (its socket is the loop's; every callback it
// registers runs there).
//
// Invariants: one reply per request, whatever path it takes; a name claimed while a submission
// or resume waits for the store is released on every path that ends the wait.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "libs/bus/event_loop.hpp"
#include "libs/bus/request_client.hpp"
#include "libs/bus/security.hpp"
#include "libs/core/clock.hpp"
#include "libs/core/rerun_mode.hpp"
#include "libs/core/status.hpp"
#include "libs/core/trial.hpp"
#include "libs/service/message_dispatcher.hpp"
#include "libs/spec/experiment_spec.hpp"
#include "proto/control.hpp"
#include "services/scheduler/store/journal_reader.hpp"
#include "services/scheduler/store/store_health.hpp"
#include "services/scheduler/workers/worker_registry.hpp"

namespace tunebus {

class Experiment;
struct ExperimentContext;
class ExperimentRegistry;
class FairShareArbiter;
namespace dashboard {
class LoginTokens;
}  // namespace dashboard

class ControlService {
 public:
  struct Options {
    /// CURVE keys and roles (each request's key is checked against its entry's roles).
    std::shared_ptr<const bus::Security> security = bus::Security::Plaintext();
    /// The events socket as bound: get_experiment names it (where `tunectl watch` subscribes).
    std::string events_endpoint;
    /// The dashboard's login-token secret file (SchedulerOptions::dashboard_secret_file).
    std::string dashboard_secret_file;
  };
  /// What the handlers use; each outlives the service.
  struct Parts {
    const Clock& clock;
    ExperimentRegistry& experiments;
    ExperimentContext& experiment_context;  // what new and resumed experiments are wired to
    FairShareArbiter& arbiter;
    const WorkerRegistry& workers;
    bus::RequestClient& store;  // checkpoint-store
    bus::RequestClient& rm;     // resource-manager
    const StoreHealth& store_health;
  };

  /// Takes the bound control ROUTER `socket` and loads the login-token secret: the file
  /// `options.dashboard_secret_file` (made if absent), else with CURVE keys
  /// <keys-dir>/dashboard_token.secret (in memory when it cannot be made there), else in memory.
  /// Errors: the secret file's (an explicit one, or one that exists, that does not load).
  static Result<std::unique_ptr<ControlService>> Create(zmq::socket_t socket, Options options,
                                                        Parts parts);
  ~ControlService();
  ControlService(const ControlService&) = delete;
  ControlService& operator=(const ControlService&) = delete;

  /// Serves the socket on `loop`.
  void Start(bus::EventLoop& loop);
  /// Handles every queued request.
  void OnReadable();
  /// The dashboard's "http://HOST:PORT/" (named in issued tokens' login_url); "" = none.
  void set_http_url(std::string url) { http_url_ = std::move(url); }
  const service::MessageDispatcher& dispatcher() const { return dispatcher_; }

 private:
  using Handler = Status (ControlService::*)(bus::Incoming& in, const proto::Decoded& d);
  ControlService(zmq::socket_t socket, Options options, Parts parts);
  void AddHandlers();
  /// LoadDashboardTokens: reads or makes the token secret (tokens_).
  Status LoadDashboardTokens();

  // experiments: submit, resume, lsx, delete (experiment_handlers.cpp)
  Status HandleSubmit(bus::Incoming& in, const proto::Decoded& d);
  /// Submits a parsed, checked experiment: with restore_from, after the store named the
  /// checkpoint's iteration; then StartExperiment.
  void SubmitParsed(const bus::Incoming& in, uint64_t id, const proto::SubmitExperiment& msg,
                    ExperimentSpec spec);
  /// Starts the experiment (ExperimentRegistry::Submit) and answers `in`.
  void StartExperiment(const bus::Incoming& in, uint64_t id, const proto::SubmitExperiment& msg,
                       ExperimentSpec spec, std::optional<CheckpointRef> restore_from);
  Status HandleResumeExperiment(bus::Incoming& in, const proto::Decoded& d);
  /// `tunectl resume` of an experiment found in memory (or just resumed from its journal):
  /// reopens an interrupted one, reruns its errored trials as `mode` says, and answers `in`.
  void ContinueResume(const bus::Incoming& in, uint64_t id, Experiment* e, RerunMode mode);
  Status HandleListExperiments(bus::Incoming& in, const proto::Decoded& d);
  /// Answers list_experiments (request `id` of `type` from `route`) with the registry's rows.
  void ListExperiments(const std::vector<std::string>& route, uint64_t id, const std::string& type,
                       std::vector<JournalLength> lengths);
  Status HandleDeleteExperiment(bus::Incoming& in, const proto::Decoded& d);
  /// Deletes the finished experiment `e` (loaded from journal `journal`): the store's
  /// experiment_delete, then its results folder unless `keep_results`, then answers `route`.
  void DeleteFinished(const std::vector<std::string>& route, uint64_t id, const Experiment& e,
                      const std::string& journal, bool keep_results);

  // trials and experiments (control_handlers.cpp)
  Status HandleListTrials(bus::Incoming& in, const proto::Decoded& d);
  Status HandleShowTrial(bus::Incoming& in, const proto::Decoded& d);
  Status HandleStopTrial(bus::Incoming& in, const proto::Decoded& d);
  Status HandleStopExperiment(bus::Incoming& in, const proto::Decoded& d);
  Status HandleGetExperiment(bus::Incoming& in, const proto::Decoded& d);
  Status HandleListWorkers(bus::Incoming& in, const proto::Decoded& d);
  Status HandlePauseTrial(bus::Incoming& in, const proto::Decoded& d);
  Status HandleResumeTrial(bus::Incoming& in, const proto::Decoded& d);
  Status HandleAddTrial(bus::Incoming& in, const proto::Decoded& d);
  Status HandleSetTrialResources(bus::Incoming& in, const proto::Decoded& d);
  Status HandleSetExperimentWeight(bus::Incoming& in, const proto::Decoded& d);
  Status HandleFetchCheckpoint(bus::Incoming& in, const proto::Decoded& d);
  /// ListSchedulerDecisions (analysis_handlers.cpp).
  Status HandleListSchedulerDecisions(bus::Incoming& in, const proto::Decoded& d);
  // The dashboard's login tokens and actions (dashboard_control_handlers.cpp).
  Status HandleIssueDashboardToken(bus::Incoming& in, const proto::Decoded& d);
  Status HandleVerifyDashboardToken(bus::Incoming& in, const proto::Decoded& d);
  Status HandleDashboardAction(bus::Incoming& in, const proto::Decoded& d);
  // The shipped working_dir's archive (working_dir_handlers.cpp): stored in the checkpoint-store
  // as proto::WorkingDirBlobId(digest), which checks its digest before committing it.
  Status HandleWorkingDirStat(bus::Incoming& in, const proto::Decoded& d);
  Status HandleWorkingDirPut(bus::Incoming& in, const proto::Decoded& d);
  /// Asks the store for the archive `digest`: `done` gets its size, nullopt when the store does
  /// not hold it, or the store's error (prefixed "checkpoint-store: ").
  void StatWorkingDir(const std::string& digest,
                      std::function<void(Result<std::optional<int64_t>>)> done);

  // replies (control_service.cpp)
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
  /// Refuses control request `id` of `type` (logged, answered with an ErrorReply).
  void ReplyError(const bus::Incoming& in, uint64_t id, const std::string& type,
                  const Status& status);
  /// Answers the read `d` (from `in`) with what `answer` makes of the experiment FindExperiment
  /// finds for `experiment` (ReplyRead, or ReplyError with its error); maybe after the store
  /// answered, so `answer` captures copies only.
  void AnswerRead(const bus::Incoming& in, const proto::Decoded& d, const std::string& experiment,
                  std::function<Result<nlohmann::json>(Result<Experiment*>)> answer);
  /// Ok, or Unavailable naming the cause while `e`'s journal writes fail (e may be null) or the
  /// checkpoint-store refuses writes: mutating control requests are refused then.
  Status JournalWritable(const Experiment* e) const;
  /// The experiment a request that changes one names (ExperimentRegistry::Target), if its
  /// journal takes writes (JournalWritable). Errors: Target's, then JournalWritable's.
  Result<Experiment*> Target(const std::string& experiment, const std::string& trial_id = "");
  /// `e`'s journal: {"state": "ok"|"failing", "since_unix_s", "error", "failed_tries",
  ///  "not_durable_records"} ("since_unix_s", "error", "failed_tries" only while failing).
  /// REQUIRES: !e.read_only().
  static nlohmann::json JournalHealthJson(const Experiment& e);
  /// Adds "durable": false to a trial's view while one of its changes waits for the journal.
  static void MarkNotDurable(const Experiment& e, const Trial& t, nlohmann::json& view);

  zmq::socket_t socket_;
  Options options_;
  Parts parts_;
  ExperimentRegistry& experiments_;  // parts_.experiments
  service::MessageDispatcher dispatcher_;
  std::unique_ptr<dashboard::LoginTokens> tokens_;
  std::string http_url_;
};

}  // namespace tunebus
