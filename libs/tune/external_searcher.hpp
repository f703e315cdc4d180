// ExternalSearcher: `search: {type: external, endpoint: ...}` — a searcher in another process
// (any language) that speaks the ask/tell protocol of proto/PROTOCOL.md section 7a over a
// SearcherLink (clients/python/tunebus/searcher.py wraps Optuna's samplers). DESIGN.md
// "Search": a searcher in another language is a process on the bus, never a plugin.
//
// The state that matters lives here and is journaled (searcher.hpp "Journaling"), not in the
// remote process: the ordered log of what the remote must know, as events in their wire form
//   {"event": "suggested", "trial_id", "params", "config"}   a config the remote suggested
//   {"event": "completed", "trial_id", "result", "error"}    a suggested trial ended
//   {"event": "evaluated", "params", "config", "value"}      AddEvaluatedPoint
// plus {"event": "finished"} (the remote answered finished; not sent back to it). Every session
// with the remote starts with `hello`, upon which the remote forgets everything, and then tells
// it the whole log (batches of `tell`) before the first `ask`: so a restarted remote, a remote
// that outlived a scheduler SIGKILL and a fresh one all hold exactly the journaled
// observations. Intermediate results are not journaled: they are sent live (`tell` of `result`
// events, every one, in report order per trial) and held while their trial runs, so a new
// session is told, after the journaled events and before its first `ask`, every result of the
// trials still running that this scheduler process saw.
//
// Never blocking: Suggest answers NotNow while the answer to its `ask` is on the way (the
// runner asks again the next poll round) or while the remote is unreachable; one request is in
// flight at a time. A request that fails (no reply within timeout_s, or a typed error other
// than failed_precondition) makes the link unavailable: retried with exponential backoff
// (backoff_initial_s doubling up to backoff_max_s) by a new hello and the replay. A
// failed_precondition answer (the remote does not know the session: it was restarted) is
// followed by a new hello at once. Trials already running are not affected by any of this.
//
// Values from the remote are snapped to the param space's domains (SearchSpace::Snap:
// quantised, clamped) and built into a full config with the constants; a reply that names an
// unknown trial, lacks a parameter or has a value of the wrong type is an error (backoff).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "libs/core/status.hpp"
#include "libs/tune/journaled_searcher.hpp"
#include "libs/tune/search_space.hpp"
#include "libs/tune/searcher_link.hpp"

namespace tunebus {

/// The `search:` parameters of type external (docs/reference/search.md).
struct ExternalOptions {
  std::string endpoint;  // tcp://host:port, ipc://path or inproc://name; "" with command
  std::vector<std::string> command;  // the searcher the scheduler starts; empty: started by others
  /// The searcher's CURVE public key on a tcp:// endpoint: 40 Z85 characters or a public key
  /// file's path (relative to the experiment file's folder); "" = <keys-dir>/searcher.key.
  std::string server_key;
  double timeout_s = 10;           // a request unanswered this long: the remote is unavailable
  double backoff_initial_s = 0.5;  // first retry after a failure, seconds
  double backoff_max_s = 30;       // the backoff doubles up to this
  nlohmann::json options = nlohmann::json::object();  // sent as is in `hello`

  /// Errors: InvalidArgument "<key>: ..." (endpoint missing without a command, not a ZeroMQ
  /// endpoint, a tcp port `*`, inproc:// with a command; "server_key" empty or given for an
  /// endpoint that is not tcp://; "command" not a non-empty list of
  /// strings or "command[i]" not a string; a number out of range, backoff_max_s <
  /// backoff_initial_s, options not a map, an unknown key).
  static Result<ExternalOptions> Parse(const nlohmann::json& params);
  /// What the link factory gets: endpoint, command, server key and the backoff.
  SearcherTarget Target() const;
};

class ExternalSearcher final : public JournaledSearcher {
 public:
  /// Where the link to the remote stands (Describe's "state").
  enum class LinkState {
    kOffline,      // no link (a spec check, a read-only experiment): nothing is suggested
    kIdle,         // not connected yet: the next call that needs the remote sends hello
    kConnecting,   // hello sent
    kReplaying,    // hello answered; telling the remote the journaled events
    kReady,        // the remote holds every journaled event; asks go out
    kUnavailable,  // the last request failed; a new hello is due after the backoff
  };

  /// `num_samples` (-1: unbounded) bounds the suggestions; `seed` and `experiment` are sent in
  /// hello; `session_nonce` makes session ids unique across scheduler processes. `link` may be
  /// null (kOffline).
  ExternalSearcher(ExternalOptions options, int64_t num_samples, uint64_t seed,
                   std::string experiment, uint64_t session_nonce,
                   std::unique_ptr<SearcherLink> link);
  ~ExternalSearcher() override;

  const char* name() const override { return "external"; }
  /// Errors: InvalidArgument "metric: ..." / "mode: ..." without them (the remote optimises
  /// the metric in a direction), SearchSpace::Create's errors (grid_search).
  Status SetSearchProperties(const std::string& metric, const std::string& mode,
                             const nlohmann::json& param_space) override;
  /// The journaled config for a trial already suggested; Finished after num_samples or the
  /// remote's `finished`; the remote's answer to this trial's `ask` once it came; else NotNow
  /// (the ask is sent, or the remote is unavailable).
  Suggestion Suggest(const std::string& trial_id) override;
  /// Errors: InvalidArgument when `config` lacks a parameter of the space.
  Status AddEvaluatedPoint(const nlohmann::json& config, double value) override;
  void OnTrialResult(const std::string& trial_id, const TrainingResult& result) override;
  void OnTrialComplete(const std::string& trial_id, const TrainingResult* last_result,
                       bool error) override;
  int64_t Total() const override { return num_samples_; }
  int64_t suggested() const override { return suggested_; }
  /// {"searcher": "external", "endpoint", "state", "remote" (what hello answered), "suggested",
  /// "total", "observations", and while unavailable "last_error", "retries", "retry_in_s";
  /// "sessions" once more than one hello was answered}.
  nlohmann::json Describe() const override;

  /// {"events": [...], "finished": bool}.
  nlohmann::json SaveState() const override;
  Status RestoreState(const nlohmann::json& state) override;

  LinkState link_state() const { return state_; }
  static const char* LinkStateName(LinkState s);

 protected:
  Status Apply(const nlohmann::json& event) override;

 private:
  struct Answer {
    std::string trial_id;
    Suggestion::Kind kind = Suggestion::Kind::kNotNow;
    nlohmann::json params, config;
  };
  /// Sends the next request if none is in flight (hello, a tell, or the wanted ask).
  void Pump();
  void SendHello();
  void SendTell();
  void SendAsk();
  void OnHello(Result<nlohmann::json> reply);
  /// `results`: per trial, how many of its results the remote holds once this tell succeeded.
  void OnTell(Result<nlohmann::json> reply, size_t events, bool informative,
              std::map<std::string, size_t> results);
  /// Whether a running trial has results the remote was not told in this session.
  bool HasUntoldResults() const;
  void OnAsk(Result<nlohmann::json> reply, const std::string& trial_id);
  /// A failed request: unavailable, retried after the backoff. failed_precondition (the remote
  /// lost the session) re-hellos at once unless the hello itself failed.
  void Fail(const Status& status, bool was_hello);
  /// A reply of the expected `type` (a reply of another type is InvalidArgument).
  static Result<nlohmann::json> Expect(Result<nlohmann::json> reply, const char* type);
  /// The config for the remote's `params`, snapped to the space. Errors: InvalidArgument.
  Result<nlohmann::json> ConfigOf(const nlohmann::json& params) const;
  /// {dim name: value} of a config. Errors: InvalidArgument naming a missing parameter.
  Result<nlohmann::json> ParamsOf(const nlohmann::json& config) const;
  nlohmann::json SpaceMessage() const;

  ExternalOptions options_;
  int64_t num_samples_;
  uint64_t seed_;
  std::string experiment_;
  uint64_t session_nonce_;
  std::string metric_, mode_;
  nlohmann::json param_space_;
  std::optional<SearchSpace> space_;

  // Journaled state (Apply).
  std::vector<nlohmann::json> events_;                       // the log the remote must hold
  std::unordered_map<std::string, nlohmann::json> configs_;  // suggested trial -> config
  std::set<std::string> ended_;                              // suggested trials that completed
  int64_t suggested_ = 0;
  int64_t observations_ = 0;
  bool finished_ = false;

  // The link (not journaled).
  LinkState state_ = LinkState::kOffline;
  std::string session_;
  uint64_t sessions_ = 0;     // hellos sent
  uint64_t sessions_ok_ = 0;  // hellos answered
  bool in_flight_ = false;
  size_t sent_ = 0;  // events_[0, sent_) the remote holds
  // Every result of each suggested, not yet completed trial this process saw (OnTrialResult), in
  // report order: a new session is told them after the log (Optuna's pruners read every
  // intermediate value), and results_told_ counts, per trial, how many this session holds.
  std::map<std::string, std::vector<nlohmann::json>> running_results_;
  std::map<std::string, size_t> results_told_;
  std::string wanted_;            // the trial Suggest waits for
  std::optional<Answer> answer_;  // the remote's answer for `wanted_`
  double not_now_until_ = 0;      // after a not_now: ask again then
  int64_t retries_ = 0;           // consecutive failures
  int64_t lost_sessions_ = 0;     // failed_precondition answers since a request last succeeded
  double retry_at_ = 0;
  std::string last_error_;
  nlohmann::json remote_;               // hello's reply
  std::unique_ptr<SearcherLink> link_;  // last: destroyed first (no late callbacks)
};

}  // namespace tunebus
