#include "services/scheduler/store/journal_reader.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "libs/journal/record_frame.hpp"
#include "libs/journal/records.hpp"
#include "libs/journal/snapshot.hpp"
#include "proto/codec.hpp"
#include "proto/store.hpp"

namespace tunebus {

std::string ExperimentNameOfJournal(const std::string& journal) {
  return journal.size() > 6 ? journal.substr(0, journal.size() - 6) : journal;
}

using nlohmann::json;

namespace {

// Records a journal_read asks for while paging through a journal whose records it keeps as they
// come (ReadStored).
constexpr uint32_t kPageRecords = 10000;
// Records a journal_read asks for while paging through a journal it decodes and lets go page by
// page (Replay, ForEachRecord): a page's decoded records and its reply are the replay's transient
// memory (at 10,000 records of results, about 12 MB decoded plus 10 MB of reply buffers on both
// sides, which stay behind as fragmented malloc arenas), while the round trips it adds cost little.
constexpr uint32_t kDecodedPageRecords = 1000;

bool IsCheckpointRecord(std::optional<journal::RecordKind> kind) {
  using journal::RecordKind;
  return kind == RecordKind::kCheckpointSaved || kind == RecordKind::kCheckpointDeleted ||
         kind == RecordKind::kCheckpointFailed;
}

}  // namespace

JournalReader::JournalReader(bus::RequestClient& store, bus::Duration timeout)
    : store_(store), timeout_(timeout) {}

template <typename Reply, typename Request>
void JournalReader::Call(Request request, Done<Reply> done) {
  store_.Request(
      request,
      [done = std::move(done), timeout = timeout_](Result<proto::Decoded> reply) {
        if (!reply.ok()) {
          if (reply.status().code() != StatusCode::kUnavailable) return done(reply.status());
          return done(
              Status::Unavailable(fmt::format("the checkpoint-store did not answer {} within {} ms",
                                              Request::kType, timeout.count())));
        }
        if (reply->type() != Reply::kType) {
          return done(Status::Internal(fmt::format("the checkpoint-store answered {} with {}",
                                                   Request::kType, reply->type())));
        }
        done(reply->As<Reply>());
      },
      timeout_);
}

void JournalReader::Read(const std::string& journal, uint64_t from, uint32_t max, Done<Page> done) {
  proto::JournalRead read;
  read.experiment = journal;
  read.from_seq = from;
  read.max_records = max;
  Call<proto::JournalReadReply>(std::move(read), [journal, done = std::move(done)](
                                                     Result<proto::JournalReadReply> got) {
    if (!got.ok()) return done(got.status());
    Page page;
    page.records.reserve(got->records.size());
    for (size_t i = 0; i < got->records.size(); ++i) {
      auto r = journal::ReadStoredRecord(got->records[i]);
      if (!r.ok()) {  // a torn or flipped record ends the usable journal
        spdlog::error("Journal {} record {} is torn or corrupt ({}); using the records before it",
                      journal, got->first_seq + i, r.status().message());
        page.torn = true;
        break;
      }
      page.records.push_back(std::move(*r));
    }
    done(std::move(page));
  });
}

void JournalReader::ListLengths(Done<std::vector<JournalLength>> done) {
  const SteadyTime asked = store_.loop().clock().Now();
  Call<proto::JournalListReply>(
      proto::JournalList{}, [this, asked, forgotten = forgotten_,
                             done = std::move(done)](Result<proto::JournalListReply> list) {
        if (!list.ok()) return done(list.status());
        std::vector<JournalLength> out;
        for (size_t i = 0; i < list->experiments.size() && i < list->last_seqs.size(); ++i) {
          if (list->last_seqs[i] == 0) continue;
          out.push_back({list->experiments[i], list->last_seqs[i]});
        }
        // An answer asked for before a Forget may still list the journal: it is not kept.
        if (forgotten == forgotten_ && (!recent_ || recent_->at <= asked)) {
          recent_ = RecentList{out, asked, false};
        }
        done(std::move(out));
      });
}

std::optional<std::vector<JournalLength>> JournalReader::RecentLengths() {
  if (!recent_) return std::nullopt;
  if (!recent_->refreshing && store_.loop().clock().Now() - recent_->at >= kRecentLengthsMaxAge) {
    recent_->refreshing = true;
    ListLengths([this](const Result<std::vector<JournalLength>>&) {
      if (recent_)
        recent_->refreshing = false;  // on an error or a Forget, the next call tries again
    });
  }
  return recent_->lengths;
}

void JournalReader::Forget(const std::string& journal) {
  ++forgotten_;
  if (recent_) {
    std::erase_if(recent_->lengths,
                  [&journal](const JournalLength& j) { return j.journal == journal; });
  }
  summaries_.erase(journal);
}

void JournalReader::NoteLength(const std::string& journal, uint64_t last_seq) {
  if (!recent_ || last_seq == 0) return;
  for (JournalLength& j : recent_->lengths) {
    if (j.journal == journal) {
      j.last_seq = last_seq;
      return;
    }
  }
  recent_->lengths.push_back({journal, last_seq});
}

void JournalReader::Ended(const std::string& journal, uint64_t last_seq, Done<bool> done) {
  EndRecord(journal, last_seq, [done = std::move(done)](Result<std::optional<json>> end) {
    if (!end.ok()) return done(end.status());
    done(end->has_value());
  });
}

void JournalReader::EndRecord(const std::string& journal, uint64_t last_seq,
                              Done<std::optional<json>> done) {
  // The newest record alone first (it answers for almost every journal), then 32 at a time.
  struct Job {
    std::string journal;
    uint64_t end;
    Done<std::optional<json>> done;
  };
  auto job = std::make_shared<Job>(Job{journal, last_seq, std::move(done)});
  auto step = std::make_shared<std::function<void(uint64_t)>>();
  *step = [this, job, step](uint64_t window) {
    if (job->end < 1) {
      *step = nullptr;  // `step` holds itself: break the cycle
      return job->done(std::optional<json>());
    }
    const uint64_t from = job->end > window ? job->end - window + 1 : 1;
    const uint32_t n = uint32_t(job->end - from + 1);
    Read(job->journal, from, n, [job, step, from, n](Result<Page> page) {
      if (!page.ok()) {
        *step = nullptr;
        return job->done(page.status());
      }
      if (page->torn) {  // the usable journal ends before its end: not ended
        *step = nullptr;
        return job->done(std::optional<json>());
      }
      const std::vector<json>* records = &page->records;
      for (auto it = records->rbegin(); it != records->rend(); ++it) {
        const std::optional<journal::RecordKind> kind = journal::KindOf(*it);
        if (!IsCheckpointRecord(kind)) {
          *step = nullptr;
          if (kind != journal::RecordKind::kExperimentEnded)
            return job->done(std::optional<json>());
          return job->done(std::optional<json>(*it));
        }
      }
      if (records->size() != n) {  // a short read: treated as not ended
        *step = nullptr;
        return job->done(std::optional<json>());
      }
      job->end = from - 1;
      (*step)(32);
    });
  };
  (*step)(1);
}

void JournalReader::Summarize(JournalSummary summary, Done<JournalSummary> done) {
  // Its first record and Ended at once.
  struct Join {
    JournalSummary summary;
    int waiting = 2;
    bool failed = false;
    Done<JournalSummary> done;
    void Arrived(const Status& s) {
      if (failed) return;
      if (!s.ok()) {
        failed = true;
        return done(s);
      }
      if (--waiting == 0) done(summary);
    }
  };
  auto join = std::make_shared<Join>(Join{std::move(summary), 2, false, std::move(done)});
  Read(join->summary.journal, 1, 1, [join](Result<Page> first) {
    if (first.ok() && !first->records.empty())
      join->summary.submitted_at_s = first->records.front().value("submitted_at", 0.0);
    join->Arrived(first.status());
  });
  EndRecord(join->summary.journal, join->summary.last_seq, [join](Result<std::optional<json>> end) {
    if (end.ok() && end->has_value()) {
      join->summary.ended = true;
      join->summary.ended_at_s = (*end)->value("at", 0.0);
    }
    join->Arrived(end.status());
  });
}

void JournalReader::List(Done<std::vector<JournalSummary>> done) {
  ListLengths([this, done = std::move(done)](Result<std::vector<JournalLength>> lengths) {
    if (!lengths.ok()) return done(lengths.status());
    // Summaries in listing order; the changed journals are read all at once.
    struct Join {
      std::vector<JournalSummary> out;
      size_t waiting = 0;
      bool failed = false;
      Done<std::vector<JournalSummary>> done;
    };
    auto join = std::make_shared<Join>();
    join->done = done;
    for (const JournalLength& j : *lengths) {
      auto it = summaries_.find(j.journal);
      if (it != summaries_.end() && it->second.last_seq == j.last_seq) {
        join->out.push_back(it->second);
        continue;
      }
      join->out.push_back(JournalSummary{j.journal, j.last_seq});
      ++join->waiting;
    }
    if (join->waiting == 0) return join->done(std::move(join->out));
    for (size_t i = 0; i < join->out.size(); ++i) {
      const JournalSummary& s = join->out[i];
      if (auto it = summaries_.find(s.journal);
          it != summaries_.end() && it->second.last_seq == s.last_seq) {
        continue;
      }
      Summarize(s, [this, join, i](Result<JournalSummary> got) {
        if (join->failed) return;
        if (!got.ok()) {
          join->failed = true;
          return join->done(got.status());
        }
        summaries_[got->journal] = *got;
        join->out[i] = std::move(*got);
        if (--join->waiting == 0) join->done(std::move(join->out));
      });
    }
  });
}

void JournalReader::NewestSnapshot(const std::string& name,
                                   Done<std::optional<journal::ReplayedExperiment>> done) {
  using Snapshot = std::optional<journal::ReplayedExperiment>;
  proto::CheckpointList list;
  list.prefix = journal::SnapshotPrefix(name);
  Call<proto::CheckpointListReply>(std::move(list), [this, done = std::move(done)](
                                                        Result<proto::CheckpointListReply> listed) {
    if (!listed.ok()) return done(listed.status());
    std::string newest;  // ids end in a zero-padded seq: the greatest is the newest
    for (const proto::CheckpointInfo& info : listed->checkpoints)
      newest = std::max(newest, info.checkpoint_id);
    if (newest.empty()) return done(Snapshot());
    // Its chunks one after another.
    auto bytes = std::make_shared<std::string>();
    auto get = std::make_shared<std::function<void(uint32_t)>>();
    *get = [this, bytes, get, newest, done](uint32_t chunk) {
      proto::CheckpointGet req;
      req.checkpoint_id = newest;
      req.chunk_index = chunk;
      Call<proto::CheckpointGetReply>(
          std::move(req), [bytes, get, newest, done, chunk](Result<proto::CheckpointGetReply> got) {
            if (!got.ok()) {
              *get = nullptr;  // `get` holds itself: break the cycle
              return done(got.status());
            }
            bytes->append(got->data.begin(), got->data.end());
            if (chunk + 1 < got->num_chunks) return (*get)(chunk + 1);
            *get = nullptr;
            auto state = journal::DecodeSnapshot(*bytes);
            if (!state.ok()) {
              spdlog::error("Snapshot {} is unusable ({}); replaying the whole journal", newest,
                            state.status().message());
              return done(Snapshot());
            }
            done(Snapshot(std::move(*state)));
          });
    };
    (*get)(0);
  });
}

void JournalReader::Replay(const std::string& name, uint64_t last_seq,
                           Done<journal::ReplayedExperiment> done) {
  struct Job {
    std::string name;
    uint64_t last_seq;
    journal::JournalReplayer replayer;
    Done<journal::ReplayedExperiment> done;
    std::function<void()> next;  // reads the page after the records applied so far

    // The state so far, or Corruption when the journal did not start with experiment_submitted.
    void Finish() {
      next = nullptr;  // `next` holds the job: break the cycle
      if (replayer.state().identity.experiment_id.empty()) {
        return done(
            Status::Corruption("journal " + name + " does not start with experiment_submitted"));
      }
      done(replayer.Take());
    }
  };
  auto job = std::make_shared<Job>();
  job->name = name;
  job->last_seq = last_seq;
  job->done = std::move(done);
  job->next = [this, job] {
    if (job->replayer.state().records >= job->last_seq) return job->Finish();
    Read(job->name, job->replayer.state().records + 1, kDecodedPageRecords,
         [job](Result<Page> got) {
           if (!got.ok()) {
             job->next = nullptr;
             return job->done(got.status());
           }
           for (const json& r : got->records) {
             if (Status s = job->replayer.Apply(r); !s.ok()) {
               spdlog::error("Journal {}: {}; using the state before it", job->name, s.message());
               return job->Finish();
             }
           }
           if (got->torn || got->records.empty()) return job->Finish();
           job->next();
         });
  };
  NewestSnapshot(name, [job](Result<std::optional<journal::ReplayedExperiment>> snapshot) {
    if (!snapshot.ok()) {
      job->next = nullptr;
      return job->done(snapshot.status());
    }
    if (snapshot->has_value() && (*snapshot)->records <= job->last_seq)
      job->replayer.Reset(std::move(**snapshot));
    job->next();
  });
}

void JournalReader::ReplayToResume(const std::string& journal, uint64_t last_seq,
                                   Done<Resumable> done) {
  Replay(journal, last_seq,
         [this, journal, last_seq,
          done = std::move(done)](Result<journal::ReplayedExperiment>&& replayed) mutable {
           if (!replayed.ok()) return done(replayed.status());
           if (replayed->records >= last_seq) {
             return done(Resumable{std::move(*replayed), last_seq});
           }
           spdlog::error(
               "Journal {}: records {}..{} are torn or corrupt; cutting them (the state is that "
               "of record {})",
               journal, replayed->records + 1, last_seq, replayed->records);
           const uint64_t good = replayed->records;
           auto state = std::make_shared<journal::ReplayedExperiment>(std::move(*replayed));
           Truncate(journal, good, last_seq, [state, good, done](Result<uint64_t> removed) {
             if (!removed.ok()) return done(removed.status());
             done(Resumable{std::move(*state), good});
           });
         });
}

void JournalReader::Truncate(const std::string& journal, uint64_t keep_through_seq,
                             uint64_t expected_last_seq, Done<uint64_t> done) {
  proto::JournalTruncate cut;
  cut.experiment = journal;
  cut.keep_through_seq = keep_through_seq;
  cut.expected_last_seq = expected_last_seq;
  Call<proto::JournalTruncateAck>(std::move(cut),
                                  [done = std::move(done)](Result<proto::JournalTruncateAck> ack) {
                                    if (!ack.ok()) return done(ack.status());
                                    done(ack->removed);
                                  });
}

void JournalReader::ForEachRecord(const std::string& journal, uint64_t from, uint64_t last_seq,
                                  RecordFn on_record, std::function<void(Status)> done) {
  struct Job {
    std::string journal;
    uint64_t from, last_seq;
    RecordFn on_record;
    std::function<void(Status)> done;
    std::function<void()> next;
    void Finish(Status s) {
      next = nullptr;  // `next` holds the job: break the cycle
      done(std::move(s));
    }
  };
  auto job = std::make_shared<Job>(
      Job{journal, from, last_seq, std::move(on_record), std::move(done), nullptr});
  job->next = [this, job] {
    if (job->from > job->last_seq) return job->Finish(Status::Ok());
    const auto n = uint32_t(std::min<uint64_t>(kDecodedPageRecords, job->last_seq - job->from + 1));
    Read(job->journal, job->from, n, [job](Result<Page> got) {
      if (!got.ok()) return job->Finish(got.status());
      for (const json& r : got->records) job->on_record(r);
      if (got->torn || got->records.empty()) return job->Finish(Status::Ok());
      job->from += got->records.size();
      job->next();
    });
  };
  job->next();
}

void JournalReader::ReadStored(const std::string& journal, uint64_t from, uint64_t last_seq,
                               Done<std::vector<std::string>> done) {
  struct Job {
    std::string journal;
    uint64_t from, last_seq;
    std::vector<std::string> records;
    Done<std::vector<std::string>> done;
    std::function<void()> next;
    void Finish(Result<std::vector<std::string>> out) {
      next = nullptr;  // `next` holds the job: break the cycle
      done(std::move(out));
    }
  };
  auto job = std::make_shared<Job>(Job{journal, from, last_seq, {}, std::move(done), nullptr});
  job->next = [this, job] {
    if (job->from > job->last_seq) return job->Finish(std::move(job->records));
    proto::JournalRead read;
    read.experiment = job->journal;
    read.from_seq = job->from;
    read.max_records = uint32_t(std::min<uint64_t>(kPageRecords, job->last_seq - job->from + 1));
    Call<proto::JournalReadReply>(std::move(read), [job](Result<proto::JournalReadReply> got) {
      if (!got.ok()) return job->Finish(got.status());
      if (got->records.empty()) return job->Finish(std::move(job->records));
      job->from += got->records.size();
      if (job->records.empty()) {
        job->records = std::move(got->records);
      } else {
        for (std::string& r : got->records) job->records.push_back(std::move(r));
      }
      job->next();
    });
  };
  job->next();
}

}  // namespace tunebus
