#include "services/scheduler/trial_json.hpp"

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

namespace {

// Every field of TrialToJson but "config" and "last_result".
json TrialFieldsToJson(const Trial& t, const std::string& experiment_dir) {
  json checkpoints = json::array();
  for (const CheckpointRef& c : t.checkpoints) checkpoints.push_back(CheckpointToJson(c));
  json failures = json::array();
  for (const TrialFailure& f : t.failures) {
    failures.push_back({{"attempt", f.attempt}, {"error", f.error}, {"then", TrialStatusName(f.then)},
                        {"kind", FailureKindName(f.kind)}});
  }
  return {{"trial_id", t.trial_id},
          {"failures", std::move(failures)},
          {"status", TrialStatusName(t.status)},
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
          {"restored_checkpoint_id", t.restored_checkpoint_id.empty() ? json(nullptr) : json(t.restored_checkpoint_id)},
          {"dir", experiment_dir + "/" + t.DirName()}};
}

}  // namespace

json TrialToJson(const Trial& t, const std::string& experiment_dir) {
  json trial = TrialFieldsToJson(t, experiment_dir);
  trial["config"] = t.config;
  trial["last_result"] = t.last_result_msgpack.empty() ? json::object() : t.LastResult();
  return trial;
}

void AppendTrialJson(const Trial& t, const std::string& experiment_dir, std::string& out) {
  std::string fields = TrialFieldsToJson(t, experiment_dir).dump();
  fields.pop_back();  // the closing brace
  out += fields;
  out += ",\"config\":";
  out += t.config.dump();
  out += ",\"last_result\":";
  if (t.last_result_msgpack.empty()) {
    out += "{}";
  } else {
    // Formatted from the stored bytes: no document of the last result is built.
    const msgpack::object_handle h = msgpack::unpack(t.last_result_msgpack.data(), t.last_result_msgpack.size());
    AppendJson(h.get(), out);
  }
  out += '}';
}

json ExperimentToJson(const std::string& name, const TrialRunner& runner, const std::string& experiment_dir,
                      double elapsed_s) {
  json counts = json::object();
  for (auto s : {TrialStatus::kPending, TrialStatus::kRunning, TrialStatus::kPaused, TrialStatus::kTerminated,
                 TrialStatus::kError}) {
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
