#include "services/scheduler/results/result_files.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "libs/core/csv.hpp"

namespace tunebus {

namespace fs = std::filesystem;

namespace {

std::string Hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

}  // namespace

ResultFileWriter::ResultFileWriter(const Clock& clock)
    : hostname_(Hostname()), clock_(clock), thread_([this] { Loop(); }) {}

ResultFileWriter::~ResultFileWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

ResultFiles::ResultFiles(ResultFileWriter& writer) : writer_(writer) {}

ResultFiles::ResultFiles(const Clock& clock)
    : own_writer_(std::make_unique<ResultFileWriter>(clock)), writer_(*own_writer_) {}

ResultFiles::~ResultFiles() {
  Flush(0);  // what waits for no journal record; rows still waiting for theirs are dropped
  staged_.clear();
  staged_.push_back(Task{Task::Kind::kDetach, 0, -1, {}, {}, {}});
  HandOver(staged_.end());
  writer_.WaitWritten(channel_, handed_over_);
}

void ResultFiles::WriteParams(int64_t trial_index, const std::string& trial_dir,
                              nlohmann::json config, uint64_t after_record) {
  staged_.push_back(
      Task{Task::Kind::kParams, after_record, trial_index, trial_dir, {}, std::move(config)});
}

void ResultFiles::SetConfig(int64_t trial_index, nlohmann::json config, uint64_t after_record) {
  if (!IsOpen(trial_index)) return;  // the next AppendResult brings it
  staged_.push_back(
      Task{Task::Kind::kConfig, after_record, trial_index, {}, {}, std::move(config)});
}

void ResultFiles::AppendResult(int64_t trial_index, const std::string& trial_dir,
                               std::string result_msgpack, uint64_t after_record,
                               const nlohmann::json* config) {
  const bool opening = open_on_writer_.insert(trial_index).second;
  staged_.push_back(Task{Task::Kind::kResult, after_record, trial_index,
                         opening ? trial_dir : std::string(), std::move(result_msgpack),
                         opening && config ? *config : nlohmann::json()});
}

void ResultFiles::Close(int64_t trial_index, uint64_t after_record) {
  if (open_on_writer_.erase(trial_index) > 0) {
    staged_.push_back(Task{Task::Kind::kClose, after_record, trial_index, {}, {}, {}});
  }
}

void ResultFiles::Flush(uint64_t durable) {
  // Positions only grow along staged_: the tasks to hand over are a prefix.
  HandOver(std::find_if(staged_.begin(), staged_.end(),
                        [durable](const Task& t) { return t.after_record > durable; }));
}

void ResultFiles::HandOver(std::vector<Task>::iterator end) {
  if (end == staged_.begin()) return;
  for (auto it = staged_.begin(); it != end; ++it) it->channel = &channel_;
  handed_over_ += uint64_t(end - staged_.begin());
  writer_.HandOver(staged_.begin(), end);
  staged_.erase(staged_.begin(), end);
}

void ResultFileWriter::HandOver(std::vector<Task>::iterator begin,
                                std::vector<Task>::iterator end) {
  const size_t n = size_t(end - begin);
  std::unique_lock<std::mutex> lock(mu_);
  const bool wake = queued_.empty() && !busy_;  // a busy writer looks at the queue when it is done
  queued_.insert(queued_.end(), std::make_move_iterator(begin), std::make_move_iterator(end));
  backlog_ += n;
  peak_backlog_ = std::max(peak_backlog_, backlog_.load());
  if (wake) wake_.notify_one();
  if (backlog_ > kMaxBacklog) {
    // The files cannot keep up (a slow disk): the loop waits rather than let memory grow.
    ++backpressure_waits_;
    space_.wait(lock, [this] { return backlog_ <= kMaxBacklog / 2; });
  }
}

void ResultFiles::FlushAll() {
  staged_.push_back(Task{Task::Kind::kFlushFiles, 0, -1, {}, {}, {}});
  HandOver(staged_.end());
}

void ResultFiles::ReplaceFile(std::string path, std::string text) {
  // Ahead of the staged tasks: handed over alone, at once.
  std::vector<Task> task;
  task.push_back(
      Task{Task::Kind::kReplaceFile, 0, -1, std::move(path), std::move(text), nullptr, &channel_});
  ++handed_over_;
  writer_.HandOver(task.begin(), task.end());
}

void ResultFileWriter::Replace(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int error = fd < 0 ? errno : 0;
  for (size_t done = 0; error == 0 && done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n > 0) {
      done += size_t(n);
    } else if (n < 0 && errno != EINTR) {
      error = errno;
    }
  }
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (fd >= 0) ::close(fd);
  if (error != 0) {
    spdlog::warn("Could not write {}: {}; {} stays as it was", tmp, std::strerror(error), path);
    return;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) spdlog::warn("Could not rename {} into place: {}", tmp, ec.message());
}

void ResultFiles::Drain() {
  FlushAll();
  writer_.WaitWritten(channel_, handed_over_);
}

void ResultFileWriter::WaitWritten(const Channel& channel, uint64_t n) {
  std::unique_lock<std::mutex> lock(mu_);
  written_.wait(lock, [&] { return channel.written.load() >= n; });
}

void ResultFileWriter::Loop() {
  pthread_setname_np(pthread_self(), "result-files");  // as top -H and perf show it
  // Linux applies a PRIO_PROCESS priority to the one thread named by its id.
  if (setpriority(PRIO_PROCESS, id_t(gettid()), kWriterNice) != 0) {
    spdlog::debug("Result file writer keeps its priority: {}", std::strerror(errno));
  }
  std::unique_lock<std::mutex> lock(mu_);
  std::vector<Task> chunk;
  auto flushed_at = clock_.Now();
  while (true) {
    // Rows written since the last flush reach the kernel within kFileFlushInterval, busy or idle.
    const auto due = flushed_at + kFileFlushInterval;
    if (dirty_.empty()) {
      wake_.wait(lock, [this] { return stopping_ || !queued_.empty(); });
    } else {
      wake_.wait_until(lock, due, [this] { return stopping_ || !queued_.empty(); });
    }
    if (!dirty_.empty() && clock_.Now() >= due) {
      lock.unlock();
      FlushDirty();
      flushed_at = clock_.Now();
      lock.lock();
    }
    if (queued_.empty()) {
      if (stopping_) return;  // everything is written (the files flush as they close)
      continue;
    }
    const size_t n = std::min(queued_.size(), kChunk);
    chunk.assign(std::make_move_iterator(queued_.begin()),
                 std::make_move_iterator(queued_.begin() + long(n)));
    queued_.erase(queued_.begin(), queued_.begin() + long(n));
    busy_ = true;
    lock.unlock();
    for (Task& task : chunk) {
      Run(task);
      // The last touch of the channel: once a kDetach is counted, its ResultFiles may be gone.
      task.channel->written.fetch_add(1);
    }
    chunk.clear();
    lock.lock();
    busy_ = false;
    backlog_ -= n;
    if (backlog_ <= kMaxBacklog / 2) space_.notify_all();
    written_.notify_all();
  }
}

void ResultFileWriter::Flush(TrialFiles& f) {
  f.result_json.flush();
  f.progress_csv.flush();
  f.events.flush();
  f.dirty = false;
}

void ResultFileWriter::FlushDirty() {
  for (auto [channel, index] : dirty_) {
    auto it = channel->open.find(index);
    if (it == channel->open.end() || !it->second->dirty) continue;  // closed (flushed) since
    Flush(*it->second);
  }
  dirty_.clear();
}

bool ResultFileWriter::MakeTrialDir(const std::string& trial_dir) {
  // One mkdir when the experiment's folder exists (create_directories stats every level first).
  if (::mkdir(trial_dir.c_str(), 0777) == 0) return true;
  if (errno == EEXIST) return false;
  std::error_code ec;
  return fs::create_directories(trial_dir, ec);
}

ResultFileWriter::TrialFiles* ResultFileWriter::Open(const Task& task) {
  auto& slot = task.channel->open[task.trial_index];
  if (!slot) {
    if (task.trial_dir.empty())
      return nullptr;  // closed meanwhile: not reachable from the loop's calls
    const std::string& trial_dir = task.trial_dir;
    slot = std::make_unique<TrialFiles>();
    // A folder this writer made holds no result files yet; another one may (a resumed or
    // reopened trial), and their rows are appended to.
    const bool new_dir = task.channel->new_dirs.erase(task.trial_index) > 0;
    // The folder is there (WriteParams made it when the trial was added) unless it was removed
    // since: only then is it made again.
    slot->result_json.open(trial_dir + "/result.json", std::ios::app);
    if (!slot->result_json) {
      MakeTrialDir(trial_dir);
      slot->result_json.clear();
      slot->result_json.open(trial_dir + "/result.json", std::ios::app);
    }
    const std::string csv = trial_dir + "/progress.csv";
    slot->progress_csv.open(csv, std::ios::app);
    if (!new_dir && slot->progress_csv.seekp(0, std::ios::end).tellp() > 0) {
      // Reopened (a resumed or unpaused trial): keep the columns of the header already there.
      std::ifstream existing(csv);
      std::string header, column;
      std::getline(existing, header);
      std::istringstream cells(header);
      while (std::getline(cells, column, ',')) slot->csv_columns.push_back(column);
    }
    // TensorBoard: the trial's event file if there is one (a resumed or reopened trial), else a
    // new one starting with the file version.
    std::string events = new_dir ? std::string() : FindEventFile(trial_dir);
    const double now = clock_.WallSeconds();
    if (events.empty()) events = trial_dir + "/" + EventFileName(int64_t(now), hostname_);
    slot->events.open(events, std::ios::app | std::ios::binary);
    if (new_dir || slot->events.seekp(0, std::ios::end).tellp() == 0) {
      event_.clear();
      events_.AppendFileVersion(now, event_);
      slot->events.write(event_.data(), std::streamsize(event_.size()));
    }
    if (!task.config.is_null()) slot->config = std::make_unique<ConfigText>(task.config);
    if (!slot->result_json || !slot->progress_csv || !slot->events) {
      spdlog::error("Cannot write result files in {}", trial_dir);
    }
  }
  return slot.get();
}

void ResultFileWriter::Run(Task& task) {
  Channel& channel = *task.channel;
  switch (task.kind) {
    case Task::Kind::kParams:
    case Task::Kind::kConfig: {
      if (auto it = channel.open.find(task.trial_index); it != channel.open.end()) {
        it->second->config = std::make_unique<ConfigText>(task.config);
      }
      if (task.kind == Task::Kind::kConfig) return;
      if (MakeTrialDir(task.trial_dir)) channel.new_dirs.insert(task.trial_index);
      std::ofstream params(task.trial_dir + "/params.json", std::ios::trunc);
      params << task.config.dump(2) << "\n";
      if (!params) spdlog::error("Cannot write {}/params.json", task.trial_dir);
      return;
    }
    case Task::Kind::kResult: {
      TrialFiles* files = Open(task);
      if (files == nullptr || !text_.Decode(task.result_msgpack, files->config.get())) return;
      TrialFiles& f = *files;
      line_.clear();
      text_.AppendJsonLine(line_);
      f.result_json.write(line_.data(), std::streamsize(line_.size()));
      row_.clear();
      if (f.csv_columns.empty()) {
        f.csv_columns = text_.Keys();
        for (size_t i = 0; i < f.csv_columns.size(); ++i) {
          if (i) row_.push_back(',');
          AppendCsvField(f.csv_columns[i], row_);
        }
        row_.push_back('\n');
      }
      text_.AppendCsvRow(f.csv_columns, row_);
      f.progress_csv.write(row_.data(), std::streamsize(row_.size()));
      event_.clear();
      events_.AppendResult(text_, event_);
      f.events.write(event_.data(), std::streamsize(event_.size()));
      if (!f.dirty) {
        f.dirty = true;
        dirty_.emplace_back(&channel, task.trial_index);
      }
      return;
    }
    case Task::Kind::kClose:
      channel.open.erase(task.trial_index);  // the files flush as they close
      channel.new_dirs.erase(task.trial_index);
      return;
    case Task::Kind::kReplaceFile:
      Replace(task.trial_dir, task.result_msgpack);
      return;
    case Task::Kind::kFlushFiles:
      for (auto& [index, f] : channel.open) Flush(*f);  // their dirty_ entries are skipped
      return;
    case Task::Kind::kDetach:
      std::erase_if(dirty_, [&](const auto& d) { return d.first == &channel; });
      channel.open.clear();  // the files flush as they close
      channel.new_dirs.clear();
      return;
  }
}

}  // namespace tunebus
