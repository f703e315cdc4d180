#include "services/scheduler/results/experiment_recorder.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>

#include "libs/bus/socket.hpp"
#include "libs/journal/records.hpp"
#include "libs/tune/trial_runner.hpp"
#include "services/scheduler/control/trial_json.hpp"

namespace tunebus {

namespace fs = std::filesystem;
using Event = proto::SchedulerEventKind;
using nlohmann::json;

ExperimentRecorder::ExperimentRecorder(std::string name, std::string experiment_dir,
                                       journal::JournalWriter& journal, EventPublisher& events,
                                       ResultFileWriter& files, const Clock& clock)
    : name_(std::move(name)),
      experiment_dir_(std::move(experiment_dir)),
      journal_(journal),
      events_(events),
      clock_(clock),
      files_(files) {
  std::error_code ec;
  fs::create_directories(experiment_dir_, ec);
  if (ec) spdlog::error("Cannot create results folder {}: {}", experiment_dir_, ec.message());
  started_at_ = clock_.WallSeconds();
}

ExperimentRecorder::~ExperimentRecorder() = default;

std::string ExperimentRecorder::TrialDir(const Trial& t) const {
  return experiment_dir_ + "/" + t.DirName();
}

void ExperimentRecorder::NoteRecord(const Trial& t, uint64_t record) {
  const size_t i = size_t(t.index);
  if (i >= last_record_.size()) last_record_.resize(i + 1, 0);
  last_record_[i] = record;
}

bool ExperimentRecorder::IsDurable(const Trial& t) const {
  const size_t i = size_t(t.index);
  return i >= last_record_.size() || last_record_[i] <= journal_.durable();
}

void ExperimentRecorder::OnTrialAdded(const Trial& t) {
  const uint64_t record = journal_.AppendEncoded(journal::EncodeTrialAdded(t));
  NoteRecord(t, record);
  files_.WriteParams(t.index, TrialDir(t), t.config, record);
  events_.Publish(Event::kTrialAdded, name_, t.trial_id,
                  [&] { return TrialToJson(t, experiment_dir_); });
}

void ExperimentRecorder::OnTrialStarted(const Trial& t) {
  NoteRecord(t, journal_.AppendEncoded(journal::EncodeTrialStarted(t)));
  events_.Publish(Event::kTrialStarted, name_, t.trial_id,
                  [&] { return TrialToJson(t, experiment_dir_); });
}

void ExperimentRecorder::OnTrialResult(const Trial& t, const TrainingResult& result,
                                       Action decision) {
  (void)result;
  // The runner encoded the result once (Trial::last_result_msgpack): the journal record embeds
  // those bytes and the file writer formats them on its own thread.
  const uint64_t record =
      journal_.AppendEncoded(journal::EncodeResultRecord(t, t.last_result_msgpack, decision));
  NoteRecord(t, record);
  files_.AppendResult(t.index, files_.IsOpen(t.index) ? std::string() : TrialDir(t),
                      t.last_result_msgpack, record, &t.config);
  events_.Publish(Event::kTrialResult, name_, t.trial_id,
                  [&] { return TrialToJson(t, experiment_dir_); });
}

void ExperimentRecorder::OnTrialStatus(const Trial& t) {
  const uint64_t record = journal_.AppendEncoded(journal::EncodeTrialStatusRecord(t));
  NoteRecord(t, record);
  if (IsFinished(t.status)) files_.Close(t.index, record);
  if (t.status == TrialStatus::kError) {
    const auto written = error_file_attempt_.find(t.index);
    if (written == error_file_attempt_.end() || written->second != t.attempt)
      WriteErrorFile(t, t.error);
    error_file_attempt_.erase(t.index);
  }
  events_.Publish(Event::kTrialStatus, name_, t.trial_id,
                  [&] { return TrialToJson(t, experiment_dir_); });
}

void ExperimentRecorder::OnCheckpointSaved(const Trial& t, const CheckpointRef& ref) {
  NoteRecord(t, journal_.Append(journal::CheckpointSavedRecord(t, ref)));
  events_.Publish(Event::kCheckpointSaved, name_, t.trial_id,
                  [&] { return CheckpointToJson(ref); });
}

void ExperimentRecorder::OnCheckpointDeleted(const Trial& t, const std::string& checkpoint_id) {
  NoteRecord(t, journal_.Append(journal::CheckpointDeletedRecord(t, checkpoint_id)));
}

void ExperimentRecorder::OnCheckpointFailed(const Trial& t, const CheckpointNotStored& failed) {
  NoteRecord(t, journal_.Append(journal::CheckpointFailedRecord(t, failed)));
}

void ExperimentRecorder::OnDriverDecision(const Trial& t, int64_t seq, const json& answer) {
  NoteRecord(t, journal_.Append(journal::DriverDecisionRecord(t, seq, answer)));
}

void ExperimentRecorder::OnTrialUpdated(const Trial& t, const json& change) {
  const uint64_t record = journal_.Append(journal::TrialUpdated(t, change));
  NoteRecord(t, record);
  if (change.contains("pbt_exploit")) files_.WriteParams(t.index, TrialDir(t), t.config, record);
  events_.Publish(Event::kTrialUpdated, name_, t.trial_id,
                  [&] { return TrialToJson(t, experiment_dir_); });
}

void ExperimentRecorder::OnSearcherState(const json& state) {
  journal_.Append(journal::SearcherState(state));
}

void ExperimentRecorder::OnSearcherDelta(const json& delta) {
  journal_.AppendEncoded(journal::EncodeSearcherDelta(delta));
}

void ExperimentRecorder::OnTrialSchedulerState(const json& delta) {
  journal_.AppendEncoded(journal::EncodeTrialSchedulerDelta(delta));
}

void ExperimentRecorder::OnExperimentEnded(ExperimentStatus status, const std::string& reason) {
  WriteStateFile();
  files_.FlushAll();
  pending_end_ = PendingEnd{status, reason, files_.handed_over()};
  CompleteEnd(false);
}

bool ExperimentRecorder::CompleteEnd(bool wait) {
  if (!pending_end_) return true;
  if (!files_.WrittenThrough(pending_end_->files_through)) {
    if (!wait) return false;
    files_.Drain();
  }
  spdlog::info(
      "Result files of {} written; the writer's backlog peaked at {} tasks ({} waits for it)",
      name_, files_.writer().peak_backlog(), files_.writer().backpressure_waits());
  const PendingEnd end = std::move(*pending_end_);
  pending_end_.reset();
  journal_.Append(journal::ExperimentEnded(end.status, end.reason, clock_.WallSeconds()));
  // Who waits for the end (tunectl run, watch, the dashboard) hears of it once it is durable:
  // a scheduler stopped right after still finds the experiment finished.
  journal_.AfterDurable([this, end] {
    end_durable_ = true;
    events_.Publish(Event::kExperimentEnded, name_, "", [&] {
      return json{{"status", ExperimentStatusName(end.status)}, {"reason", end.reason}};
    });
  });
  return true;
}

void ExperimentRecorder::WriteErrorFile(const Trial& t, const std::string& text) {
  const std::string dir = TrialDir(t);
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::ofstream out(dir + "/error.txt", std::ios::app);
  if (t.attempt == 0) {
    out << "not started: " << text << "\n";  // e.g. a trial no worker can hold
  } else {
    out << "attempt " << t.attempt << ": " << text << "\n";
  }
  if (!IsFinished(t.status)) error_file_attempt_[t.index] = t.attempt;
}

void ExperimentRecorder::WriteStateFile() {
  state_text_.clear();
  size_t unbounded = std::numeric_limits<size_t>::max();
  StepStateFile(unbounded);
}

bool ExperimentRecorder::StepStateFile(size_t& budget) {
  FlushFiles();
  if (runner_ == nullptr) return true;
  if (state_text_.empty()) {
    json state =
        ExperimentToJson(name_, *runner_, experiment_dir_, clock_.WallSeconds() - started_at_);
    state["journal"] = journal_.experiment();
    // The summary's fields, then "trials" appended one trial at a time: no document of every
    // trial is built (it would be hundreds of MB of small nodes at 100,000 trials). The writer
    // thread writes, fsyncs and renames it (ResultFiles::ReplaceFile).
    state_text_ = state.dump(1);
    state_text_.pop_back();  // the closing brace
    state_text_ += ",\n \"trials\": [";
    state_next_trial_ = 0;
  }
  const std::vector<Trial>& trials = runner_->trials();
  for (; budget > 0 && state_next_trial_ < trials.size(); --budget) {
    state_text_ += state_next_trial_ == 0 ? "\n  " : ",\n  ";
    AppendTrialJson(trials[state_next_trial_++], experiment_dir_, state_text_);
  }
  if (state_next_trial_ < trials.size()) return false;
  state_text_ += "\n ]\n}\n";
  files_.ReplaceFile(experiment_dir_ + "/experiment_state.json", std::move(state_text_));
  state_text_.clear();
  return true;
}

}  // namespace tunebus
