// DriverLink: the scheduler's side of the driver link (proto/PROTOCOL.md section 7b). Ray Tune
// runs some user callables in the driver process, not in a trainable: stoppers
// (`(trial_id, result) -> bool` and tune.Stopper's __call__ / stop_all), PBT
// hyperparam_mutations given as functions and `tune.sample_from` in the param space. A Python
// driver (the tunebus package's Tuner) binds a ROUTER and answers two requests:
// - driver_result, for every result of the experiment: what those callables decided; the runner
//   holds the result (and so the trainable, which blocks on its decision) until the answer came,
//   then decides (TrialRunner::OnDriverAnswer). DESIGN.md "Where the next features sit".
// - driver_sample, before a trial is added: the values of its config's sample_from keys
//   (SampleFromResolver, sample_from_resolver.hpp).
//
// A request/reply link over a SearcherLink (the same channel as the external searcher's,
// external_searcher.hpp), so libs/tune stays free of I/O: one request in flight at a time,
// results asked in the order they came. Every session starts with `hello`; a request that fails
// (no reply within timeout_s, a typed error, a reply of the wrong type or shape) makes the link
// unavailable, and a new hello follows after a backoff (backoff_initial_s doubling up to
// backoff_max_s), after which the held results are asked again, oldest first. A
// failed_precondition answer (the driver does not know the session: it restarted) is followed
// by a new hello at once. The link keeps no journaled state: the runner journals every answer
// (record driver_decision) before its decision leaves.
//
// Memory: one entry per held result; each trainable blocks on its decision, so at most one per
// RUNNING trial; plus at most one sample request (the resolver asks for one trial at a time).
//
// Threading: one thread calls everything and receives every callback (the scheduler's loop).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/core/status.hpp"
#include "libs/tune/searcher_link.hpp"

namespace tunebus {

/// The experiment file's `driver:` section (docs/reference/experiment-file.md).
struct DriverOptions {
  std::string endpoint;            // the driver's ROUTER: tcp://host:port, ipc://path, inproc://
  bool on_result = true;           // ask the driver about every result before deciding
  double timeout_s = 10;           // a request unanswered this long: the driver is unavailable
  double backoff_initial_s = 0.5;  // first retry after a failure, seconds
  double backoff_max_s = 30;       // the backoff doubles up to this
};

/// The driver's answer to one `driver_sample`: one value per asked path, in order, or the error
/// the driver's sample_from function raised (`error` non-empty, `values` empty).
struct DriverSamples {
  std::vector<nlohmann::json> values;
  std::string error;

  /// From a `driver_samples` reply to a request of `paths` values. Errors: InvalidArgument when
  /// neither `values` (a list of exactly `paths` values) nor `error` (a string) is there.
  static Result<DriverSamples> FromJson(const nlohmann::json& j, size_t paths);
};

/// The driver's answer to one result (`driver_decision`).
struct DriverAnswer {
  bool stop_trial = false;  // the trial ends at this result (TERMINATED), as Ray's stopper
  bool stop_all = false;    // the experiment stops (Ray's Stopper.stop_all)
  /// The trial checkpoints at this result, as a result carrying Ray Tune's `should_checkpoint`
  /// does (a driver callback's `on_trial_result` set `result["should_checkpoint"]`).
  bool should_checkpoint = false;
  /// Mutation key path ("lr", "model.lr") -> the value the driver's function drew for it, used
  /// when PBT resamples a `driver` mutation of this trial at this result.
  nlohmann::json samples = nlohmann::json::object();

  /// {"stop_trial", "stop_all", "should_checkpoint", "samples"}.
  nlohmann::json ToJson() const;
  /// From a `driver_decision` reply or a journaled driver_decision record: missing fields take
  /// their defaults. Errors: InvalidArgument naming the field of the wrong type.
  static Result<DriverAnswer> FromJson(const nlohmann::json& j);
};

class DriverLink {
 public:
  /// Where the link stands (Describe's "state").
  enum class State {
    kIdle,         // no session: the next held result sends hello
    kConnecting,   // hello sent
    kReady,        // hello answered: driver_result requests go out
    kUnavailable,  // the last request failed; a new hello is due after the backoff
  };
  static const char* StateName(State s);

  /// Called with the driver's answer to result `seq` of (trial_id, attempt).
  using AnswerCallback = std::function<void(const std::string& trial_id, int64_t attempt,
                                            int64_t seq, DriverAnswer answer)>;
  /// Called once with the driver's answer to a Sample.
  using SampleCallback = std::function<void(DriverSamples samples)>;
  /// A key path in a config: ["model", "width"].
  using KeyPath = std::vector<std::string>;

  /// `experiment` (the journal name), `metric` and `mode` go in hello; `session_nonce` makes
  /// session ids unique across scheduler processes. REQUIRES: link != nullptr.
  DriverLink(DriverOptions options, std::string experiment, std::string metric, std::string mode,
             uint64_t session_nonce, std::unique_ptr<SearcherLink> link);
  ~DriverLink();

  /// Who receives answers (the runner). Set before the first Ask.
  void SetAnswerCallback(AnswerCallback done) { on_answer_ = std::move(done); }
  /// Holds result `seq` of (trial_id, attempt) until the driver answers it: `result` is the map
  /// sent as driver_result's `result`. A trial has at most one held result: a new one replaces
  /// the older.
  void Ask(const std::string& trial_id, int64_t attempt, int64_t seq, nlohmann::json result);
  /// Drops the trial's held result (it left RUNNING); a late answer to it is ignored.
  void Forget(const std::string& trial_id);
  /// Asks the values of new trial `trial_id`'s sample_from keys at `paths` (param-space order)
  /// in `config` (the trial's config drawn so far, each of those keys holding its
  /// `{sample_from: driver}` placeholder); `done` gets them once the driver answered. Asked in
  /// turn with the held results, retried across failures as they are; dropped unanswered only
  /// when the link is destroyed.
  void Sample(const std::string& trial_id, nlohmann::json config, std::vector<KeyPath> paths,
              SampleCallback done);

  /// Held results (sample requests not counted).
  size_t held() const;
  State state() const { return state_; }
  const DriverOptions& options() const { return options_; }
  /// {"endpoint", "state", "held", "answered", "sessions", and while unavailable "last_error",
  /// "retries", "retry_in_s"} (get_experiment's "driver", `tunectl status`'s driver line).
  nlohmann::json Describe() const;

 private:
  /// A request waiting for its answer: a held result (`done` empty) or a sample request.
  struct Held {
    uint64_t ticket = 0;  // unique per request: an answer finds its request by it
    std::string trial_id;
    int64_t attempt = 0, seq = 0;
    nlohmann::json result;  // driver_result's result; driver_sample's config
    std::vector<KeyPath> paths;
    SampleCallback done;
    bool is_sample() const { return done != nullptr; }
  };
  /// Sends hello or the oldest waiting request, if nothing is in flight and the backoff is over.
  void Pump();
  void SendHello();
  void SendRequest();
  void OnHello(Result<nlohmann::json> reply);
  void OnReply(Result<nlohmann::json> reply, uint64_t ticket);
  /// A failed request: unavailable, retried after the backoff; failed_precondition (the driver
  /// lost the session) re-hellos at once unless the hello itself failed.
  void Fail(const Status& status, bool was_hello);

  DriverOptions options_;
  std::string experiment_, metric_, mode_;
  uint64_t session_nonce_;
  AnswerCallback on_answer_;
  std::deque<Held> queue_;  // waiting requests, oldest first
  uint64_t next_ticket_ = 1;
  State state_ = State::kIdle;
  std::string session_;
  uint64_t sessions_ = 0;  // hellos sent
  bool in_flight_ = false;
  bool retry_due_ = false;  // a backoff timer is set
  int64_t answered_ = 0;
  int64_t retries_ = 0;  // consecutive failures
  int64_t lost_sessions_ = 0;
  double retry_at_ = 0;
  std::string last_error_;
  std::unique_ptr<SearcherLink> link_;  // last: destroyed first (no late callbacks)
};

}  // namespace tunebus
