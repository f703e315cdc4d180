#include "services/scheduler/trial_json.hpp"

#include <fmt/format.h>

#include <utility>

#include "services/scheduler/result_text.hpp"

namespace tunebus {

using nlohmann::json;

json CheckpointToJson(const CheckpointRef& c) {
  return {{"checkpoint_id", c.checkpoint_id},
          {"training_iteration", c.training_iteration},
          {"time_total_s", c.time_total_s},
          {"score", c.score ? json(*c.score) : json(nullptr)},
          {"size_bytes", c.size_bytes}};
}

json TrialToJson(const Trial& t, const std::string& experiment_dir) {
  json checkpoints = json::array();
  for (const CheckpointRef& c : t.checkpoints) checkpoints.push_back(CheckpointToJson(c));
  json failures = json::array();
  for (const TrialFailure& f : t.failures) {
    failures.push_back({{"attempt", f.attempt},
                        {"error", f.error},
                        {"then", TrialStatusName(f.then)},
                        {"kind", FailureKindName(f.kind)}});
  }
  return {{"trial_id", t.trial_id},
          {"failures", std::move(failures)},
          {"status", TrialStatusName(t.status)},
          {"config", t.config},
          {"last_result", t.last_result_msgpack.empty() ? json::object() : t.LastResult()},
          {"num_failures", t.num_failures},
          {"num_worker_losses", t.num_worker_losses},
          {"resources", t.resources.ToAmounts()},
          {"worker", t.worker_id.empty() ? json(nullptr) : json(t.worker_id)},
          {"gpu_ids", t.gpu_ids},
          {"error", t.error.empty() ? json(nullptr) : json(t.error)},
          {"experiment_tag", t.experiment_tag},
          {"training_iteration", t.training_iteration},
          {"time_total_s", t.time_total_s},
          {"attempt", t.attempt},
          {"checkpoints", std::move(checkpoints)},
          {"restored_checkpoint_id",
           t.restored_checkpoint_id.empty() ? json(nullptr) : json(t.restored_checkpoint_id)},
          {"dir", experiment_dir + "/" + t.DirName()}};
}

namespace {

// Compact JSON text of one object, written field by field.
class ObjectText {
 public:
  explicit ObjectText(std::string& out) : out_(out) { out_.push_back('{'); }
  ~ObjectText() { out_.push_back('}'); }
  std::string& Key(std::string_view key) {
    if (!first_) out_.push_back(',');
    first_ = false;
    AppendJsonString(key, out_);
    out_.push_back(':');
    return out_;
  }
  void Int(std::string_view key, int64_t v) {
    const fmt::format_int digits(v);
    Key(key).append(digits.data(), digits.size());
  }
  void Double(std::string_view key, double v) { AppendJsonDouble(v, Key(key)); }
  void String(std::string_view key, std::string_view v) { AppendJsonString(v, Key(key)); }
  // A JSON array of `items`, each written by write(item, out).
  template <typename Items, typename Write>
  void Array(std::string_view key, const Items& items, Write write) {
    std::string& out = Key(key);
    out.push_back('[');
    bool first = true;
    for (const auto& item : items) {
      if (!std::exchange(first, false)) out.push_back(',');
      write(item, out);
    }
    out.push_back(']');
  }
  void StringOrNull(std::string_view key, std::string_view v) {
    if (v.empty()) {
      Key(key) += "null";
    } else {
      String(key, v);
    }
  }

 private:
  std::string& out_;
  bool first_ = true;
};

}  // namespace

void AppendTrialJson(const Trial& t, const std::string& experiment_dir, std::string& out) {
  // TrialToJson's fields in the (sorted) order its dump gives them, then "config" and
  // "last_result".
  ObjectText o(out);
  o.Int("attempt", t.attempt);
  o.Array("checkpoints", t.checkpoints, [](const CheckpointRef& c, std::string& out) {
    ObjectText ck(out);
    ck.String("checkpoint_id", c.checkpoint_id);
    if (c.score) {
      ck.Double("score", *c.score);
    } else {
      ck.Key("score") += "null";
    }
    ck.Int("size_bytes", c.size_bytes);
    ck.Double("time_total_s", c.time_total_s);
    ck.Int("training_iteration", c.training_iteration);
  });
  o.String("dir", experiment_dir + "/" + t.DirName());
  o.StringOrNull("error", t.error);
  o.String("experiment_tag", t.experiment_tag);
  o.Array("failures", t.failures, [](const TrialFailure& f, std::string& out) {
    ObjectText fo(out);
    fo.Int("attempt", f.attempt);
    fo.String("error", f.error);
    fo.String("kind", FailureKindName(f.kind));
    fo.String("then", TrialStatusName(f.then));
  });
  o.Array("gpu_ids", t.gpu_ids,
          [](const std::string& id, std::string& out) { AppendJsonString(id, out); });
  o.Int("num_failures", t.num_failures);
  o.Int("num_worker_losses", t.num_worker_losses);
  {
    ObjectText resources(o.Key("resources"));
    for (const auto& [name, amount] : t.resources.ToAmounts()) resources.Double(name, amount);
  }
  o.StringOrNull("restored_checkpoint_id", t.restored_checkpoint_id);
  o.String("status", TrialStatusName(t.status));
  o.Double("time_total_s", t.time_total_s);
  o.Int("training_iteration", t.training_iteration);
  o.String("trial_id", t.trial_id);
  o.StringOrNull("worker", t.worker_id);
  o.Key("config") += t.config.dump();
  std::string& last_result = o.Key("last_result");
  if (t.last_result_msgpack.empty()) {
    last_result += "{}";
  } else {
    // Formatted from the stored bytes: no document of the last result is built.
    const msgpack::object_handle h =
        msgpack::unpack(t.last_result_msgpack.data(), t.last_result_msgpack.size());
    AppendJson(h.get(), last_result);
  }
}

json ExperimentToJson(const std::string& name, const TrialRunner& runner,
                      const std::string& experiment_dir, double elapsed_s) {
  json counts = json::object();
  for (auto s : {TrialStatus::kPending, TrialStatus::kRunning, TrialStatus::kPaused,
                 TrialStatus::kTerminated, TrialStatus::kError}) {
    counts[TrialStatusName(s)] = 0;
  }
  for (const auto& [status, n] : runner.CountByStatus()) counts[TrialStatusName(status)] = n;
  const Trial* best = runner.BestTrial();
  return {{"name", name},
          {"experiment_id", runner.options().experiment_id},
          {"status", ExperimentStatusName(runner.status())},
          {"reason", runner.end_reason()},
          {"counts", counts},
          {"total", runner.TotalTrials()},
          {"created", runner.trials().size()},
          {"finished", runner.IsFinished()},
          {"metric", runner.options().metric},
          {"mode", runner.options().mode},
          {"results_dir", experiment_dir},
          {"best", best ? TrialToJson(*best, experiment_dir) : json(nullptr)},
          {"elapsed_s", elapsed_s}};
}

}  // namespace tunebus
