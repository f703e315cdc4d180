#include "libs/tune/result_ledger.hpp"

#include <utility>

namespace tunebus {

namespace rk = result_keys;

void ResultLedger::AutoFill(TrainingResult& metrics, const Trial& t, double time_this_iter_s,
                            double now_s, nlohmann::json exploit_note) {
  // The counters this result moves the trial to (Accept sets them once it is decided).
  const int64_t training_iteration = t.training_iteration + 1;
  const double time_total_s = t.time_total_s + time_this_iter_s;
  const int64_t timestamp = int64_t(now_s);
  if (timestamp != date_of_) {  // formatted once a second at most
    date_of_ = timestamp;
    date_ = RayDate(timestamp);
  }
  metrics.SetString(rk::kDate, date_);
  metrics.SetString(rk::kExperimentTag, t.experiment_tag);
  metrics.SetInt(rk::kIterationsSinceRestore, training_iteration - t.restored_iteration);
  if (!exploit_note.is_null()) metrics.SetJson("pbt_exploit", std::move(exploit_note));
  metrics.SetDouble(rk::kTimeSinceRestore, time_total_s - t.restored_time_total_s);
  metrics.SetDouble(rk::kTimeThisIterS, time_this_iter_s);
  metrics.SetDouble(rk::kTimeTotalS, time_total_s);
  metrics.SetInt(rk::kTimestamp, timestamp);
  metrics.SetInt(rk::kTrainingIteration, training_iteration);
  metrics.SetString(rk::kTrialId, t.trial_id);
}

void ResultLedger::Accept(Trial& t, int64_t seq, double time_this_iter_s) {
  t.last_seq = seq;
  t.training_iteration += 1;
  t.time_total_s += time_this_iter_s;
  ++t.num_results;
}

void ResultLedger::SetLast(Trial& t, const TrainingResult& result) const {
  t.last_result_msgpack = result.Encode();
  CacheMetric(t, result);
}

void ResultLedger::CacheMetric(Trial& t, const TrainingResult& result) const {
  t.last_metric.reset();
  if (!metric_.empty()) t.last_metric = result.Number(metric_);
}

void ResultLedger::RecordReturn(Trial& t) const {
  if (t.last_seq == 0 || t.last_result_msgpack.empty()) return;  // no result in this attempt
  Result<TrainingResult> last = TrainingResult::FromMsgpack(t.last_result_msgpack);
  if (!last.ok() || last->Truthy(rk::kDone)) return;  // the last result already says done
  last->SetBool(rk::kDone, true);
  SetLast(t, *last);
  t.returned = true;  // journaled with the TERMINATED status that follows
}

}  // namespace tunebus
