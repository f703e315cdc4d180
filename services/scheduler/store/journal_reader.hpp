// JournalReader: asynchronous reads of experiment journals from the checkpoint-store over the
// scheduler's own loop-owned store client (bus::RequestClient), for the resume at start, `tunectl
// resume` of an experiment not in memory, `lsx` and reads of a finished experiment. Every read is
// a chain of requests whose replies arrive on the loop thread: nothing blocks the loop and no
// socket is opened per call, so the loop keeps serving workers and deciding while the store is
// slow. Each completion callback runs exactly once, on the loop thread, never inside
// the call that started it.
//
// Each request is sent once and waits `timeout` (set_timeout) for its answer: the loop's DEALER
// holds a request until the store connects, and a resend would only be a second request whose
// answer a slow store delays as long. Errors: Unavailable "the checkpoint-store did not answer
// <request> within <ms> ms" (the request it waited for), or the store's error reply.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "libs/bus/event_loop.hpp"
#include "libs/bus/request_client.hpp"
#include "libs/core/status.hpp"
#include "libs/journal/replay.hpp"

namespace tunebus {

/// A journal's name and length as journal_list reports it.
struct JournalLength {
  std::string journal;    // "<name>-<experiment_id>"
  uint64_t last_seq = 0;  // records in it
};

struct JournalSummary {
  std::string journal;        // "<name>-<experiment_id>"
  uint64_t last_seq = 0;      // records in it
  double submitted_at_s = 0;  // from its experiment_submitted record, seconds since the epoch
  bool ended = false;         // see JournalReader::Ended
  /// When it ended: its experiment_ended record's `at`, seconds since the epoch; 0 when it has
  /// not ended, or ended in a journal written before experiment_ended had `at`.
  double ended_at_s = 0;
};

/// "digits-3e962" -> "digits": journals are named "<experiment name>-<experiment_id>" (5 hex
/// digits).
std::string ExperimentNameOfJournal(const std::string& journal);

/// How long a control request waits for each store answer of the journals it reads (the store
/// may be busy; the loop goes on meanwhile).
constexpr bus::Duration kJournalReadTimeout{10000};

class JournalReader {
 public:
  template <typename T>
  using Done = std::function<void(Result<T>)>;
  using RecordFn = std::function<void(const nlohmann::json&)>;

  /// Requests go over `store` (the loop's client of the checkpoint-store, which outlives this)
  /// and each waits `timeout` for its answer.
  JournalReader(bus::RequestClient& store, bus::Duration timeout);
  JournalReader(const JournalReader&) = delete;
  JournalReader& operator=(const JournalReader&) = delete;

  /// The wait for each request started from now on.
  void set_timeout(bus::Duration timeout) { timeout_ = timeout; }

  /// Every non-empty journal with its length: one journal_list round trip. Its answer also
  /// becomes RecentLengths' list.
  void ListLengths(Done<std::vector<JournalLength>> done);
  /// The newest ListLengths answer at hand, without waiting for the store (nullopt before the
  /// first answer); a list older than kRecentLengthsMaxAge starts one journal_list in the
  /// background for the next call. Only the scheduler appends to and deletes journals, so the
  /// lengths that can be stale are those of the experiments it holds in memory (answered from
  /// memory by the callers) and those it deleted (Forget drops them).
  std::optional<std::vector<JournalLength>> RecentLengths();
  static constexpr bus::Duration kRecentLengthsMaxAge{1000};
  /// Drops `journal` from RecentLengths' list (it was deleted).
  void Forget(const std::string& journal);
  /// Sets `journal`'s length in RecentLengths' list to `last_seq` (the scheduler released the
  /// experiment it appended to: its length is no longer answered from memory).
  void NoteLength(const std::string& journal, uint64_t last_seq);
  /// Every non-empty journal with its submission time and whether it ended. A journal whose
  /// length did not change since an earlier List is answered from memory; the others read their
  /// first record and Ended (all journals at once, pipelined). Errors: Unavailable.
  void List(Done<std::vector<JournalSummary>> done);
  /// True if the experiment of `journal` (holding `last_seq` records) ended: its newest record
  /// other than checkpoint_saved / checkpoint_deleted / checkpoint_failed is experiment_ended. A
  /// checkpoint the store committed late may be journaled after the end; the experiment stays
  /// finished (a read-only load adopts it) and is not resumed. Reads the newest record, then 32
  /// records a request. Errors: Unavailable.
  void Ended(const std::string& journal, uint64_t last_seq, Done<bool> done);
  /// Ended's answer as the experiment_ended record itself (nullopt: not ended).
  void EndRecord(const std::string& journal, uint64_t last_seq,
                 Done<std::optional<nlohmann::json>> done);
  /// The experiment's state: the newest snapshot in the store (if any) plus the records after
  /// it, up to last_seq, 1,000 a request. A record that fails its frame's CRC or does not decode
  /// (torn or flipped, docs/reference/journal-format.md) or does not apply ends the replay there,
  /// with an error log line naming its seq. Errors: Unavailable; Corruption for a journal that does
  /// not start with experiment_submitted.
  void Replay(const std::string& journal, uint64_t last_seq,
              Done<journal::ReplayedExperiment> done);

  /// What ReplayToResume gives: the state and the journal's length after the cut.
  struct Resumable {
    journal::ReplayedExperiment replayed;
    uint64_t last_seq = 0;
  };
  /// Replay() for a resume: a torn or corrupt tail (records after the last one that decodes
  /// and applies) is reported and cut from the store (Truncate), so appends continue right after
  /// the last good record and the next replay reads them. Errors: as Replay and Truncate.
  void ReplayToResume(const std::string& journal, uint64_t last_seq, Done<Resumable> done);
  /// Calls `on_record` with every record of `journal` from seq `from` through `last_seq`, in
  /// order, stopping before a record that is torn or corrupt; then `done`. Errors: Unavailable.
  void ForEachRecord(const std::string& journal, uint64_t from, uint64_t last_seq,
                     RecordFn on_record, std::function<void(Status)> done);
  /// The stored records of `journal` from seq `from` through `last_seq`, in order, as the store
  /// holds them (framed, not decoded: ReadStoredRecord decodes one), 10,000 a request; fewer
  /// when the journal ends sooner. For a reader that decodes them off the loop (whatif).
  /// Errors: Unavailable.
  void ReadStored(const std::string& journal, uint64_t from, uint64_t last_seq,
                  Done<std::vector<std::string>> done);
  /// Cuts `journal` after `keep_through_seq` (its corrupt tail), fenced on its last seq being
  /// `expected_last_seq`. Gives the records removed. Errors: Unavailable; FailedPrecondition.
  void Truncate(const std::string& journal, uint64_t keep_through_seq, uint64_t expected_last_seq,
                Done<uint64_t> done);

 private:
  /// One request; `done` gets the decoded `Reply`, the store's error, or Unavailable.
  template <typename Reply, typename Request>
  void Call(Request request, Done<Reply> done);
  /// One page of a journal: the records read, in order, and whether a torn or corrupt record
  /// ended it (the journal's usable part ends with `records`).
  struct Page {
    std::vector<nlohmann::json> records;
    bool torn = false;
  };
  /// Records from..from+max-1 (fewer at the journal's end); a torn or corrupt one is logged and
  /// ends the page (`torn`).
  void Read(const std::string& journal, uint64_t from, uint32_t max, Done<Page> done);
  /// The newest snapshot of `journal`, or nullopt when there is none (or it does not decode).
  void NewestSnapshot(const std::string& journal,
                      Done<std::optional<journal::ReplayedExperiment>> done);
  /// submitted_at and Ended of one journal, into `summary`.
  void Summarize(JournalSummary summary, Done<JournalSummary> done);

  bus::RequestClient& store_;
  bus::Duration timeout_;
  /// List's answers by journal, reused while a journal keeps its length.
  std::map<std::string, JournalSummary> summaries_;
  /// The newest journal_list answer, when it came, and whether a refresh is in flight.
  struct RecentList {
    std::vector<JournalLength> lengths;
    SteadyTime at{};
    bool refreshing = false;
  };
  std::optional<RecentList> recent_;
  uint64_t forgotten_ = 0;  // Forget calls so far
};

}  // namespace tunebus
