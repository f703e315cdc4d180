// Tests for JournalReader: asynchronous journal reads over a RequestClient, against a
// checkpoint-store stand-in (a test-owned ROUTER on inproc, served by the same EventLoop) that
// answers journal_list, journal_read (at most two records a page, so replays page),
// checkpoint_list (no snapshots) and journal_truncate from in-memory journals, or holds every
// answer while `stalled`. The test thread drives the loop with RunOnce.
#include "services/scheduler/store/journal_reader.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "libs/bus/event_loop.hpp"
#include "libs/bus/request_client.hpp"
#include "libs/bus/socket.hpp"
#include "libs/core/clock.hpp"
#include "libs/journal/record_frame.hpp"
#include "libs/journal/records.hpp"
#include "proto/codec.hpp"
#include "proto/store.hpp"

namespace tunebus {
namespace {

using json = nlohmann::json;

std::string Stored(const json& record) {
  return journal::FrameRecord(journal::EncodeRecord(record));
}

json Submitted(double at_s) {
  return journal::ExperimentSubmitted({"abcde", 1, at_s, "/", "x.yaml"}, "name: x\n");
}

json Added(const std::string& trial_id) {
  Trial t;
  t.trial_id = trial_id;
  return journal::TrialAdded(t);
}

// A checkpoint-store stand-in on `loop`.
class FakeStore {
 public:
  FakeStore(zmq::context_t& ctx, const std::string& endpoint, bus::EventLoop& loop) {
    auto s = bus::Bind(ctx, zmq::socket_type::router, endpoint, *bus::Security::Plaintext(),
                       {"test", bus::RoleSet::Any()});
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (s.ok()) router_ = std::move(*s);
    loop.AddSocket(router_, [this] { OnReadable(); });
  }

  std::map<std::string, std::vector<std::string>> journals;  // stored records by journal
  std::map<std::string, int> requests;                       // requests received by type
  bool stalled = false;                                      // no answers at all

 private:
  void OnReadable() {
    bus::Incoming in;
    while (bus::Receive(router_, in)) {
      auto d = proto::Decode(in.payload.data(), in.payload.size());
      ASSERT_TRUE(d.ok()) << d.status().ToString();
      ++requests[d->type()];
      if (stalled) continue;
      bus::Reply(router_, in, Answer(*d));
    }
  }

  std::string Answer(const proto::Decoded& d) {
    if (d.type() == proto::JournalList::kType) {
      proto::JournalListReply reply;
      reply.id = d.id();
      for (const auto& [name, records] : journals) {
        reply.experiments.push_back(name);
        reply.last_seqs.push_back(records.size());
      }
      return proto::Encode(reply);
    }
    if (d.type() == proto::JournalRead::kType) {
      auto m = d.As<proto::JournalRead>();
      proto::JournalReadReply reply;
      reply.id = d.id();
      reply.experiment = m->experiment;
      reply.first_seq = m->from_seq;
      const std::vector<std::string>& records = journals[m->experiment];
      for (uint64_t seq = m->from_seq;
           seq <= records.size() && seq < m->from_seq + std::min<uint32_t>(m->max_records, 2);
           ++seq) {
        reply.records.push_back(records[seq - 1]);
      }
      reply.end = m->from_seq + reply.records.size() > records.size();
      return proto::Encode(reply);
    }
    if (d.type() == proto::CheckpointList::kType) {
      proto::CheckpointListReply reply;
      reply.id = d.id();
      return proto::Encode(reply);
    }
    if (d.type() == proto::JournalTruncate::kType) {
      auto m = d.As<proto::JournalTruncate>();
      std::vector<std::string>& records = journals[m->experiment];
      if (records.size() != m->expected_last_seq) {
        return proto::Encode(proto::MakeError(Status::FailedPrecondition("fenced"), d.id(),
                                              proto::JournalTruncate::kType));
      }
      proto::JournalTruncateAck ack;
      ack.id = d.id();
      ack.experiment = m->experiment;
      ack.removed = records.size() - m->keep_through_seq;
      records.resize(m->keep_through_seq);
      ack.last_seq = records.size();
      return proto::Encode(ack);
    }
    return proto::Encode(proto::MakeError(Status::InvalidArgument("unexpected"), d.id(), d.type()));
  }

  zmq::socket_t router_;
};

int g_endpoint_counter = 0;

class JournalReaderTest : public ::testing::Test {
 protected:
  JournalReaderTest()
      : endpoint_("inproc://journal-reader-test-" + std::to_string(g_endpoint_counter++)),
        store_(ctx_, endpoint_, loop_) {
    auto dealer = bus::Connect(ctx_, zmq::socket_type::dealer, endpoint_,
                               *bus::Security::Plaintext(), {"test", ""});
    EXPECT_TRUE(dealer.ok()) << dealer.status().ToString();
    client_ = std::make_unique<bus::RequestClient>(loop_, std::move(*dealer), "checkpoint-store");
    reader_ = std::make_unique<JournalReader>(*client_, bus::Duration{2000});
  }

  // Runs the loop until `done()`, for at most 3 s; the loop's clock moves 10 ms a round (the
  // requests' timeouts are timers on it).
  bool SpinUntil(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{3};
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      loop_.RunOnce(bus::Duration{10});
      clock_.Advance(std::chrono::milliseconds{10});
    }
    return done();
  }
  template <typename T>
  bool SpinUntilSet(const std::optional<T>& result) {
    return SpinUntil([&result] { return result.has_value(); });
  }

  template <typename T>
  Result<T> Wait(const std::function<void(JournalReader::Done<T>)>& start) {
    std::optional<Result<T>> got;
    start([&got](Result<T> r) { got.emplace(std::move(r)); });
    EXPECT_FALSE(got.has_value()) << "completed inside the call";
    if (!SpinUntilSet(got)) return Status::Internal("no completion within 3 s");
    return std::move(*got);
  }

  zmq::context_t ctx_;
  std::string endpoint_;
  ManualClock clock_;
  bus::EventLoop loop_{clock_};
  FakeStore store_;
  std::unique_ptr<bus::RequestClient> client_;
  std::unique_ptr<JournalReader> reader_;
};

TEST_F(JournalReaderTest, ReplayPagesThroughTheJournal) {
  // Five records, two a page: three journal_reads chained by callbacks.
  store_.journals["x-abcde"] = {Stored(Submitted(100)), Stored(Added("t1")), Stored(Added("t2")),
                                Stored(Added("t3")), Stored(Added("t4"))};
  auto replayed = Wait<journal::ReplayedExperiment>(
      [&](auto done) { reader_->Replay("x-abcde", 5, std::move(done)); });
  ASSERT_TRUE(replayed.ok()) << replayed.status().ToString();
  EXPECT_EQ(replayed->records, 5u);
  EXPECT_EQ(replayed->trials.size(), 4u);
  EXPECT_EQ(replayed->identity.submitted_at_s, 100);
  EXPECT_EQ(store_.requests[proto::JournalRead::kType], 3);
}

TEST_F(JournalReaderTest, ATornRecordEndsTheReplayAndReplayToResumeCutsIt) {
  std::string torn = Stored(Added("t2"));
  torn.back() ^= 0x5a;  // its CRC no longer matches
  store_.journals["x-abcde"] = {Stored(Submitted(100)), Stored(Added("t1")), torn,
                                Stored(Added("t3"))};
  auto replayed = Wait<journal::ReplayedExperiment>(
      [&](auto done) { reader_->Replay("x-abcde", 4, std::move(done)); });
  ASSERT_TRUE(replayed.ok()) << replayed.status().ToString();
  EXPECT_EQ(replayed->records, 2u);
  EXPECT_EQ(store_.journals["x-abcde"].size(), 4u) << "Replay cuts nothing";

  auto resumable = Wait<JournalReader::Resumable>(
      [&](auto done) { reader_->ReplayToResume("x-abcde", 4, std::move(done)); });
  ASSERT_TRUE(resumable.ok()) << resumable.status().ToString();
  EXPECT_EQ(resumable->last_seq, 2u);
  EXPECT_EQ(resumable->replayed.trials.size(), 1u);
  EXPECT_EQ(store_.journals["x-abcde"].size(), 2u);
}

TEST_F(JournalReaderTest, AJournalNotStartingWithExperimentSubmittedIsCorrupt) {
  store_.journals["x-abcde"] = {Stored(journal::ExperimentEnded(ExperimentStatus::kFinished, ""))};
  auto replayed = Wait<journal::ReplayedExperiment>(
      [&](auto done) { reader_->Replay("x-abcde", 1, std::move(done)); });
  ASSERT_FALSE(replayed.ok());
  EXPECT_EQ(replayed.status().code(), StatusCode::kCorruption) << replayed.status().ToString();
  EXPECT_NE(replayed.status().message().find("x-abcde"), std::string::npos);
}

TEST_F(JournalReaderTest, EndedLooksBehindLateCheckpointRecords) {
  const json saved = {{"kind", "checkpoint_saved"}, {"trial_id", "t1"}};
  store_.journals["x-abcde"] = {Stored(Submitted(100)),
                                Stored(journal::ExperimentEnded(ExperimentStatus::kFinished, "")),
                                Stored(saved), Stored(saved)};
  store_.journals["y-01234"] = {Stored(Submitted(200)), Stored(Added("t1"))};
  auto ended = Wait<bool>([&](auto done) { reader_->Ended("x-abcde", 4, std::move(done)); });
  ASSERT_TRUE(ended.ok()) << ended.status().ToString();
  EXPECT_TRUE(*ended);
  auto running = Wait<bool>([&](auto done) { reader_->Ended("y-01234", 2, std::move(done)); });
  ASSERT_TRUE(running.ok()) << running.status().ToString();
  EXPECT_FALSE(*running);
}

TEST_F(JournalReaderTest, ListReadsOnlyTheJournalsWhoseLengthChanged) {
  store_.journals["x-abcde"] = {Stored(Submitted(100)),
                                Stored(journal::ExperimentEnded(ExperimentStatus::kFinished, ""))};
  store_.journals["y-01234"] = {Stored(Submitted(200)), Stored(Added("t1"))};
  store_.journals["z-empty"] = {};
  auto first =
      Wait<std::vector<JournalSummary>>([&](auto done) { reader_->List(std::move(done)); });
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->size(), 2u);  // the empty journal is left out
  EXPECT_EQ((*first)[0].journal, "x-abcde");
  EXPECT_TRUE((*first)[0].ended);
  EXPECT_EQ((*first)[0].submitted_at_s, 100);
  EXPECT_EQ((*first)[1].journal, "y-01234");
  EXPECT_FALSE((*first)[1].ended);
  EXPECT_EQ((*first)[1].last_seq, 2u);
  const int reads = store_.requests[proto::JournalRead::kType];
  EXPECT_EQ(reads, 4);  // each journal's first and last record

  // Unchanged: journal_list only. y grew: its two reads again.
  auto again =
      Wait<std::vector<JournalSummary>>([&](auto done) { reader_->List(std::move(done)); });
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(store_.requests[proto::JournalRead::kType], reads);
  store_.journals["y-01234"].push_back(
      Stored(journal::ExperimentEnded(ExperimentStatus::kStopped, "")));
  auto grown =
      Wait<std::vector<JournalSummary>>([&](auto done) { reader_->List(std::move(done)); });
  ASSERT_TRUE(grown.ok());
  EXPECT_EQ(store_.requests[proto::JournalRead::kType], reads + 2);
  EXPECT_TRUE((*grown)[1].ended);
  EXPECT_EQ((*grown)[1].last_seq, 3u);
  EXPECT_EQ(store_.requests[proto::JournalList::kType], 3);
}

TEST_F(JournalReaderTest, AStoreThatDoesNotAnswerIsUnavailableNamingTheRequest) {
  store_.stalled = true;
  reader_->set_timeout(bus::Duration{50});
  auto listed =
      Wait<std::vector<JournalLength>>([&](auto done) { reader_->ListLengths(std::move(done)); });
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(listed.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(listed.status().message(),
            "the checkpoint-store did not answer journal_list within 50 ms");
}

TEST_F(JournalReaderTest, RecentLengthsAnswersFromTheLastListAndRefreshesItInTheBackground) {
  store_.journals["x-abcde"] = {Stored(Submitted(100))};
  EXPECT_FALSE(reader_->RecentLengths().has_value()) << "no journal_list answer yet";
  ASSERT_TRUE(Wait<std::vector<JournalLength>>([&](auto done) {
                reader_->ListLengths(std::move(done));
              }).ok());
  const int lists = store_.requests[proto::JournalList::kType];

  // A journal the store gained since is not in the recent list, and no request is sent.
  store_.journals["y-01234"] = {Stored(Submitted(200)), Stored(Added("t1"))};
  auto recent = reader_->RecentLengths();
  ASSERT_TRUE(recent.has_value());
  ASSERT_EQ(recent->size(), 1u);
  EXPECT_EQ((*recent)[0].journal, "x-abcde");
  EXPECT_EQ(store_.requests[proto::JournalList::kType], lists);

  // Older than kRecentLengthsMaxAge: the same list at once, and one journal_list behind it.
  clock_.Advance(JournalReader::kRecentLengthsMaxAge);
  EXPECT_EQ(reader_->RecentLengths()->size(), 1u);
  ASSERT_TRUE(SpinUntil([&] { return reader_->RecentLengths()->size() == 2; }));
  EXPECT_EQ(store_.requests[proto::JournalList::kType], lists + 1);

  // A deleted journal leaves the list at once.
  reader_->Forget("y-01234");
  ASSERT_EQ(reader_->RecentLengths()->size(), 1u);
  EXPECT_EQ((*reader_->RecentLengths())[0].journal, "x-abcde");
}

TEST_F(JournalReaderTest, ForEachRecordStopsBeforeATornRecord) {
  std::string torn = Stored(Added("t3"));
  torn.back() ^= 0x5a;
  store_.journals["x-abcde"] = {Stored(Submitted(100)), Stored(Added("t1")), Stored(Added("t2")),
                                torn, Stored(Added("t4"))};
  std::vector<std::string> kinds;
  auto done = Wait<bool>([&](JournalReader::Done<bool> finish) {
    reader_->ForEachRecord(
        "x-abcde", 2, 5, [&kinds](const json& r) { kinds.push_back(r.value("trial_id", "")); },
        [finish](Status s) { finish(s.ok() ? Result<bool>(true) : Result<bool>(s)); });
  });
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(kinds, (std::vector<std::string>{"t1", "t2"}));
}

}  // namespace
}  // namespace tunebus
