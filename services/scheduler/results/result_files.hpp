// ResultFiles: writes a trial's files in Ray Tune's layout (<trial>/params.json, result.json as
// JSON lines, progress.csv with the columns of the first result, events.out.tfevents.* for
// TensorBoard; shapes in result_text.hpp and tensorboard_events.hpp,
// docs/reference/results-folder.md) on a background thread, the ResultFileWriter, so the
// scheduler's event loop never waits on the file system (creating a trial's files costs ext4 inode
// allocations; formatting a result line and a CSV row costs more than deciding on it). One
// ResultFiles per experiment; one ResultFileWriter per scheduler process writes for all of them (a
// writer thread per experiment would cost 50 experiments 50 thread creations at submission and up
// to 50 futex wake-ups per poll round, more than the rows cost the loop:
// docs/explanation/performance/many-experiments.md). The journal, not these files, is the
// record of an experiment: the files are its projection for humans and tools
// (docs/explanation/recovery.md "The results folder"). A task staged with `after_record` reaches
// the writer only once that journal record is durable (Flush(durable)), so the files never hold a
// row a crash could take from the journal; the writer flushes what it wrote to the kernel within
// kFileFlushInterval, so `tail -f` and notebooks see results live and a killed scheduler loses no
// written row. ResultFilesRepair completes the files from the journal on resume.
//
// Threading: ResultFiles' methods are called by one thread (the scheduler's loop). They stage
// work without a lock; Flush() hands what is staged to the writer in one go (once per poll round),
// so the loop takes the writer's lock once per round and experiment, not once per result, and
// wakes the writer only when it is idle.
//
// The writer thread runs at nice kWriterNice: on a busy host the loop's decisions, which workers
// wait for, take the CPU first, and the files catch up when it is free (measured in
// docs/explanation/performance/index.md, "The result file writer at nice 19").
//
// Memory stays bounded when the files cannot keep up: Backlog() tells the scheduler to start
// no new trial while it is high (the scheduler's placement gate), and past kMaxBacklog tasks
// Flush waits for the writer (a slow disk slows the experiments instead of growing the heap).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "libs/core/clock.hpp"
#include "services/scheduler/results/result_text.hpp"
#include "services/scheduler/results/tensorboard_events.hpp"

namespace tunebus {

class ResultFiles;

/// The thread that writes the result files of every ResultFiles attached to it, in the order
/// each one hands its tasks over. Outlives them (a ResultFiles' destructor waits for its tasks).
class ResultFileWriter {
 public:
  /// `clock` times the flushes (kFileFlushInterval) and dates new TensorBoard event files.
  explicit ResultFileWriter(const Clock& clock = Clock::Real());
  /// Writes everything handed over, then stops the thread.
  ~ResultFileWriter();
  ResultFileWriter(const ResultFileWriter&) = delete;
  ResultFileWriter& operator=(const ResultFileWriter&) = delete;

  /// Tasks handed over by any ResultFiles and not written yet (any thread).
  size_t Backlog() const { return backlog_.load(); }
  /// The most tasks the writer had waiting, and how often a Flush waited for it (loop thread).
  size_t peak_backlog() const { return peak_backlog_; }
  size_t backpressure_waits() const { return backpressure_waits_; }
  /// Flush waits for the writer above this many tasks (about 400 bytes each).
  static constexpr size_t kMaxBacklog = 65536;
  /// The writer thread's nice value: the lowest priority (the loop's own is untouched).
  static constexpr int kWriterNice = 19;
  /// A written row reaches the kernel (visible to readers, safe from a kill) within this delay.
  static constexpr std::chrono::milliseconds kFileFlushInterval{500};

 private:
  friend class ResultFiles;
  struct TrialFiles {
    std::ofstream result_json;
    std::ofstream progress_csv;
    std::ofstream events;  // events.out.tfevents.*
    std::vector<std::string> csv_columns;
    std::unique_ptr<ConfigText> config;  // null: rows show no config
    bool dirty = false;                  // written to since the last flush to the kernel
  };
  /// One ResultFiles' files, as the writer thread sees them.
  struct Channel {
    std::unordered_map<int64_t, std::unique_ptr<TrialFiles>> open;  // trial index -> its files
    // Trials whose folder the writer made (WriteParams) and whose files it has not opened yet:
    // their first Open creates the files without looking for older ones (no directory scan).
    std::unordered_set<int64_t> new_dirs;
    std::atomic<uint64_t> written{0};  // tasks of this channel written (any thread)
  };
  struct Task {
    enum class Kind { kParams, kConfig, kResult, kClose, kFlushFiles, kReplaceFile, kDetach } kind;
    uint64_t after_record = 0;   // journal position to wait for (0: none)
    int64_t trial_index = -1;    // kParams, kConfig, kResult, kClose
    std::string trial_dir;       // kParams; kResult when the files are not open yet;
                                 // kReplaceFile: the file's path
    std::string result_msgpack;  // kResult; kReplaceFile: the file's text
    nlohmann::json config;       // kParams, kConfig; kResult when opening (null: none)
    Channel* channel = nullptr;  // set as the task is handed over
  };
  /// Appends `tasks` to the queue (loop thread); waits while the backlog is over kMaxBacklog.
  void HandOver(std::vector<Task>::iterator begin, std::vector<Task>::iterator end);
  /// Blocks until `channel` has `n` tasks written.
  void WaitWritten(const Channel& channel, uint64_t n);
  void Loop();
  void Run(Task& task);  // writer thread only
  void FlushDirty();     // writer thread only
  static void Flush(TrialFiles& f);
  static void Replace(const std::string& path, const std::string& text);  // writer thread only
  TrialFiles* Open(const Task& task);                                     // writer thread only
  // mkdir, or create_directories; true if it made the trial's folder (it was not there).
  static bool MakeTrialDir(const std::string& trial_dir);

  static constexpr size_t kChunk = 1024;  // tasks the writer takes at a time
  std::mutex mu_;
  std::condition_variable wake_, written_, space_;
  std::deque<Task> queued_;  // guarded by mu_
  bool busy_ = false, stopping_ = false;
  std::atomic<size_t> backlog_{0};                    // queued_ plus the chunk in progress
  size_t peak_backlog_ = 0, backpressure_waits_ = 0;  // loop thread
  // Writer thread only.
  std::vector<std::pair<Channel*, int64_t>> dirty_;  // trials written to since the last flush
  ResultText text_;
  TensorBoardEvents events_;
  std::string line_, row_, event_;
  std::string hostname_;  // in new event files' names
  const Clock& clock_;
  std::thread thread_;
};

/// One experiment's result files, staged on the loop thread and written by a ResultFileWriter.
class ResultFiles {
 public:
  /// Writes through `writer` (the scheduler's, shared by its experiments).
  explicit ResultFiles(ResultFileWriter& writer);
  /// Writes through a writer thread of its own (tools, tests).
  explicit ResultFiles(const Clock& clock = Clock::Real());
  /// Hands over what waits for no journal record and waits until the writer has written it and
  /// closed this experiment's files. Rows still waiting for their record are dropped: the
  /// journal may never hold them (a resume writes them from the journal if it does).
  ~ResultFiles();
  ResultFiles(const ResultFiles&) = delete;
  ResultFiles& operator=(const ResultFiles&) = delete;

  /// Creates `trial_dir` and (re)writes <trial_dir>/params.json with `config` (indented); the
  /// rows of trial `trial_index` that follow show this config (SetConfig).
  /// `after_record`: the journal position (JournalWriter::Append's) this task waits for; 0 = none.
  void WriteParams(int64_t trial_index, const std::string& trial_dir, nlohmann::json config,
                   uint64_t after_record = 0);
  /// The rows of trial `trial_index` that follow show `config` (a PBT exploit changed it), if its
  /// files are open; otherwise the next AppendResult brings the config.
  void SetConfig(int64_t trial_index, nlohmann::json config, uint64_t after_record = 0);
  /// Appends a result of trial `trial_index` to <trial_dir>/result.json, a row to
  /// <trial_dir>/progress.csv (header from the first result of the trial; later keys outside it
  /// are left out, as Ray Tune's CSV logger) and an event to its TensorBoard event file (created
  /// on the first result; an existing one is appended to). Files are opened on the first result
  /// and kept open until Close. `trial_dir` and `config` (the trial's config, shown in every row;
  /// nullptr: none) are needed only while the trial's files are not open (IsOpen false): the
  /// loop builds no path and copies no config per result. `result_msgpack`: the result object as
  /// msgpack (formatted on the writer thread).
  void AppendResult(int64_t trial_index, const std::string& trial_dir, std::string result_msgpack,
                    uint64_t after_record = 0, const nlohmann::json* config = nullptr);
  /// True while the files of `trial_index` are open (between its first result and Close).
  bool IsOpen(int64_t trial_index) const { return open_on_writer_.contains(trial_index); }
  /// Flushes and closes the trial's files (it finished); a later result reopens them.
  void Close(int64_t trial_index, uint64_t after_record = 0);
  /// Hands the staged work to the writer, in order, up to the first task waiting for a
  /// journal record past `durable` (JournalWriter::durable()).
  void Flush(uint64_t durable);
  /// Hands over everything staged, and the writer flushes every open file of this experiment.
  void FlushAll();
  /// Blocks until everything staged before the call is written and flushed.
  void Drain();
  /// Tasks handed to the writer so far (FlushAll's, Flush's and ReplaceFile's; loop thread).
  uint64_t handed_over() const { return handed_over_; }
  /// Whether the writer has written the first `n` tasks handed to it (any thread).
  bool WrittenThrough(uint64_t n) const { return channel_.written.load() >= n; }
  /// Replaces the file `path` with `text` on the writer thread, atomically: written to
  /// `path`.tmp, fsynced, renamed over `path` (after a machine crash the file holds the old or
  /// the new text, never a partial one). Handed to the writer at once, ahead of staged tasks
  /// that wait for journal records; a later ReplaceFile of the same path lands after it. A
  /// failure is logged and leaves the old file. For the experiment state file, whose fsync took
  /// the event loop 20-60 ms at 6,000 trials (docs/explanation/performance/cluster.md "Cluster
  /// scale").
  void ReplaceFile(std::string path, std::string text);
  /// True when this experiment has nothing staged and the writer has written every task it
  /// handed over (other experiments' tasks may still wait).
  bool Idle() const { return staged_.empty() && WrittenThrough(handed_over_); }
  /// Tasks this experiment has staged plus every task the writer has not written yet (all
  /// experiments': they wait for the same disk) (loop thread).
  size_t Backlog() const { return writer_.Backlog() + staged_.size(); }
  const ResultFileWriter& writer() const { return writer_; }
  static constexpr int kWriterNice = ResultFileWriter::kWriterNice;

 private:
  using Task = ResultFileWriter::Task;
  void HandOver(std::vector<Task>::iterator end);  // staged_[begin, end) to the writer

  std::unique_ptr<ResultFileWriter> own_writer_;  // null when the writer is shared
  ResultFileWriter& writer_;
  ResultFileWriter::Channel channel_;           // read by the writer thread
  std::vector<Task> staged_;                    // the loop thread's, until Flush
  std::unordered_set<int64_t> open_on_writer_;  // the loop thread's view of channel_.open
  uint64_t handed_over_ = 0;
};

}  // namespace tunebus
