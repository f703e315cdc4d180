#include "services/scheduler/experiment_recorder.hpp"

#include <chrono>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "libs/bus/socket.hpp"
#include "libs/journal/records.hpp"
#include "libs/tune/trial_runner.hpp"
#include "services/scheduler/trial_json.hpp"

namespace tunebus {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// One CSV cell: numbers and strings as-is, everything else as compact JSON; quoted when needed.
std::string CsvCell(const json& v) {
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

ExperimentRecorder::ExperimentRecorder(std::string name, std::string experiment_dir, journal::JournalWriter& journal,
                                       EventPublisher& events)
    : name_(std::move(name)), experiment_dir_(std::move(experiment_dir)), journal_(journal), events_(events) {
  std::error_code ec;
  fs::create_directories(experiment_dir_, ec);
  if (ec) spdlog::error("Cannot create results folder {}: {}", experiment_dir_, ec.message());
  started_at_ = WallSeconds();
}

ExperimentRecorder::~ExperimentRecorder() = default;

std::string ExperimentRecorder::TrialDir(const Trial& t) const { return experiment_dir_ + "/" + t.DirName(); }

ExperimentRecorder::TrialFiles& ExperimentRecorder::Files(const Trial& t) {
  auto& slot = files_[t.trial_id];
  if (!slot) {
    slot = std::make_unique<TrialFiles>();
    const std::string dir = TrialDir(t);
    std::error_code ec;
    fs::create_directories(dir, ec);
    slot->result_json.open(dir + "/result.json", std::ios::app);
    slot->progress_csv.open(dir + "/progress.csv", std::ios::app);
    if (!slot->result_json || !slot->progress_csv) spdlog::error("Cannot write result files in {}", dir);
  }
  return *slot;
}

void ExperimentRecorder::OnTrialAdded(const Trial& t) {
  journal_.Append(journal::TrialAdded(t));
  const std::string dir = TrialDir(t);
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::ofstream params(dir + "/params.json", std::ios::trunc);
  params << t.config.dump(2) << "\n";
  events_.Publish("trial", "trial_added", name_, t.trial_id, [&] { return TrialToJson(t, experiment_dir_); });
}

void ExperimentRecorder::OnTrialStarted(const Trial& t) {
  journal_.Append(journal::TrialStarted(t));
  events_.Publish("trial", "trial_started", name_, t.trial_id, [&] { return TrialToJson(t, experiment_dir_); });
}

void ExperimentRecorder::OnTrialResult(const Trial& t, const json& result, const char* decision) {
  journal_.Append(journal::ResultRecord(t, result, decision));
  TrialFiles& f = Files(t);
  f.result_json << result.dump() << "\n";
  if (f.csv_columns.empty()) {
    std::string header;
    for (const auto& [key, value] : result.items()) {
      f.csv_columns.push_back(key);
      header += (header.empty() ? "" : ",") + CsvCell(key);
    }
    f.progress_csv << header << "\n";
  }
  std::string row;
  for (size_t i = 0; i < f.csv_columns.size(); ++i) {
    auto it = result.find(f.csv_columns[i]);
    if (i) row += ",";
    if (it != result.end()) row += CsvCell(*it);
  }
  f.progress_csv << row << "\n";
  events_.Publish("trial", "trial_result", name_, t.trial_id, [&] { return TrialToJson(t, experiment_dir_); });
}

void ExperimentRecorder::OnTrialStatus(const Trial& t) {
  journal_.Append(journal::TrialStatusRecord(t));
  auto it = files_.find(t.trial_id);
  if (it != files_.end()) {
    it->second->result_json.flush();
    it->second->progress_csv.flush();
    if (IsFinished(t.status)) files_.erase(it);
  }
  events_.Publish("trial", "trial_status", name_, t.trial_id, [&] { return TrialToJson(t, experiment_dir_); });
}

void ExperimentRecorder::OnCheckpointSaved(const Trial& t, const CheckpointRef& ref) {
  journal_.Append(journal::CheckpointSavedRecord(t, ref));
  events_.Publish("trial", "checkpoint_saved", name_, t.trial_id, [&] { return CheckpointToJson(ref); });
}

void ExperimentRecorder::OnCheckpointDeleted(const Trial& t, const std::string& checkpoint_id) {
  journal_.Append(journal::CheckpointDeletedRecord(t, checkpoint_id));
}

void ExperimentRecorder::OnTrialUpdated(const Trial& t, const json& change) {
  journal_.Append(journal::TrialUpdated(t, change));
  if (change.contains("pbt_exploit")) {
    std::ofstream params(TrialDir(t) + "/params.json", std::ios::trunc);
    params << t.config.dump(2) << "\n";
  }
  events_.Publish("trial", "trial_updated", name_, t.trial_id, [&] { return TrialToJson(t, experiment_dir_); });
}

void ExperimentRecorder::OnSearcherState(const json& state) { journal_.Append(journal::SearcherState(state)); }

void ExperimentRecorder::OnTrialSchedulerState(const json& delta) {
  journal_.Append(journal::TrialSchedulerDelta(delta));
}

void ExperimentRecorder::OnExperimentEnded(const std::string& status, const std::string& reason) {
  journal_.Append(journal::ExperimentEnded(status, reason));
  Checkpoint();
  events_.Publish("experiment", "experiment_ended", name_, "", [&] { return json{{"status", status}, {"reason", reason}}; });
}

void ExperimentRecorder::WriteErrorFile(const Trial& t, const std::string& text) {
  const std::string dir = TrialDir(t);
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::ofstream out(dir + "/error.txt", std::ios::app);
  out << "attempt " << t.attempt << ": " << text << "\n";
}

void ExperimentRecorder::Checkpoint() {
  for (auto& [id, f] : files_) {
    f->result_json.flush();
    f->progress_csv.flush();
  }
  if (runner_ == nullptr) return;
  json state = ExperimentToJson(name_, *runner_, experiment_dir_, WallSeconds() - started_at_);
  state["trials"] = json::array();
  for (const Trial& t : runner_->trials()) state["trials"].push_back(TrialToJson(t, experiment_dir_));
  state["journal"] = journal_.experiment();
  const std::string path = experiment_dir_ + "/experiment_state.json";
  {
    std::ofstream out(path + ".tmp", std::ios::trunc);
    out << state.dump(1) << "\n";
  }
  std::error_code ec;
  fs::rename(path + ".tmp", path, ec);
}

}  // namespace tunebus
