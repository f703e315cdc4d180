#include "services/scheduler/result_files.hpp"

#include <filesystem>
#include <sstream>

#include <spdlog/spdlog.h>

#include "libs/core/csv.hpp"

namespace tunebus {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// One CSV cell: strings as-is, everything else as compact JSON.
std::string CsvCell(const json& v) { return CsvQuote(v.is_string() ? v.get<std::string>() : v.dump()); }

}  // namespace

ResultFiles::ResultFiles() : thread_([this] { Loop(); }) {}

ResultFiles::~ResultFiles() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void ResultFiles::Post(std::function<void()> task) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake = tasks_.empty() && !busy_;  // a busy writer takes the whole queue when it is done
    tasks_.push_back(std::move(task));
  }
  if (wake) wake_.notify_one();
}

void ResultFiles::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stopping, and everything is written
    std::deque<std::function<void()>> batch;
    batch.swap(tasks_);
    busy_ = true;
    lock.unlock();
    for (auto& task : batch) task();
    lock.lock();
    busy_ = false;
    if (tasks_.empty()) idle_.notify_all();
  }
}

void ResultFiles::Drain() {
  Post([this] {
    for (auto& [dir, f] : open_) {
      f->result_json.flush();
      f->progress_csv.flush();
    }
  });
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [this] { return tasks_.empty() && !busy_; });
}

ResultFiles::TrialFiles& ResultFiles::Open(const std::string& trial_dir) {
  auto& slot = open_[trial_dir];
  if (!slot) {
    slot = std::make_unique<TrialFiles>();
    std::error_code ec;
    fs::create_directories(trial_dir, ec);
    slot->result_json.open(trial_dir + "/result.json", std::ios::app);
    const std::string csv = trial_dir + "/progress.csv";
    if (std::ifstream existing(csv); existing) {
      // Reopened (a resumed or unpaused trial): keep the columns of the header already there.
      std::string header, column;
      std::getline(existing, header);
      std::istringstream cells(header);
      while (std::getline(cells, column, ',')) slot->csv_columns.push_back(column);
    }
    slot->progress_csv.open(csv, std::ios::app);
    if (!slot->result_json || !slot->progress_csv) spdlog::error("Cannot write result files in {}", trial_dir);
  }
  return *slot;
}

void ResultFiles::WriteParams(const std::string& trial_dir, json config) {
  Post([trial_dir, config = std::move(config)] {
    std::error_code ec;
    fs::create_directories(trial_dir, ec);
    std::ofstream params(trial_dir + "/params.json", std::ios::trunc);
    params << config.dump(2) << "\n";
    if (!params) spdlog::error("Cannot write {}/params.json", trial_dir);
  });
}

void ResultFiles::AppendResult(const std::string& trial_dir, std::string result_msgpack) {
  Post([this, trial_dir, bytes = std::move(result_msgpack)] {
    const json result = json::from_msgpack(bytes, /*strict=*/true, /*allow_exceptions=*/false);
    if (!result.is_object()) return;
    TrialFiles& f = Open(trial_dir);
    f.result_json << result.dump() << "\n";
    if (f.csv_columns.empty()) {
      std::string header;
      for (const auto& [key, value] : result.items()) {
        f.csv_columns.push_back(key);
        if (!header.empty()) header.push_back(',');
        header.append(CsvCell(key));
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
  });
}

void ResultFiles::Close(const std::string& trial_dir) {
  Post([this, trial_dir] { open_.erase(trial_dir); });
}

void ResultFiles::FlushAll() {
  Post([this] {
    for (auto& [dir, f] : open_) {
      f->result_json.flush();
      f->progress_csv.flush();
    }
  });
}

}  // namespace tunebus
