#include "libs/journal/journal_writer.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "libs/journal/record_frame.hpp"
#include "libs/journal/records.hpp"

namespace tunebus::journal {

JournalWriter::JournalWriter(std::unique_ptr<JournalSink> sink, std::string journal,
                             Duration retry_delay, const Clock& clock)
    : sink_(std::move(sink)),
      journal_(std::move(journal)),
      retry_delay_(retry_delay),
      backoff_(retry_delay),
      clock_(clock) {}

uint64_t JournalWriter::Append(const nlohmann::json& record) {
  return AppendEncoded(EncodeRecord(record));
}

uint64_t JournalWriter::AppendEncoded(std::string_view record) {
  queued_.push_back(FrameRecord(record));
  return ++appended_;
}

void JournalWriter::AfterDurable(std::function<void()> effect) {
  if (effects_.empty() && durable_ >= appended_) {
    effect();
    return;
  }
  effects_.emplace_back(appended_, std::move(effect));
}

void JournalWriter::Flush() {
  if (queued_.empty() || in_flight_) return;
  in_flight_ = true;
  size_t bytes = 0;
  do {
    bytes += queued_.front().size();
    in_flight_records_.push_back(std::move(queued_.front()));
    queued_.pop_front();
  } while (!queued_.empty() && bytes + queued_.front().size() <= kMaxBatchBytes);
  in_flight_last_ = appended_ - queued_.size();
  Send();
}

void JournalWriter::Send() {
  const SteadyTime sent = clock_.Now();
  const uint64_t last = in_flight_last_;
  // expected_first_seq: a retry after a lost ack is not written twice.
  sink_->Append(
      journal_, store_seq_ + 1, in_flight_records_,
      [this, sent, last](Result<uint64_t> last_seq) { OnAppended(last_seq, sent, last); });
}

void JournalWriter::RetryNow() {
  if (!retry_pending_) return;
  retry_pending_ = false;
  ++retry_generation_;
  Send();
}

void JournalWriter::OnAppended(const Result<uint64_t>& last_seq, SteadyTime sent, uint64_t last) {
  if (last_seq.ok()) {
    if (failed_tries_ > 0) {
      spdlog::warn(
          "Journal writes for {} resumed after {:.1f} s and {} failed tries; nothing "
          "acknowledged was lost",
          journal_, clock_.WallSeconds() - failing_since_wall_s_, failed_tries_);
    }
    failed_tries_ = 0;
    store_seq_ = std::max(store_seq_, *last_seq);
    last_latency_s_ = clock_.SecondsSince(sent);
    backoff_ = retry_delay_;
    in_flight_records_.clear();
    OnDurable(last);
    return;
  }
  const SteadyTime now = clock_.Now();
  if (failed_tries_++ == 0) failing_since_wall_s_ = clock_.WallSeconds();
  last_error_ = last_seq.status();
  const Duration delay = backoff_;
  backoff_ = std::min(backoff_ * 2, kMaxBackoff);
  if (failed_tries_ == 1 || now - last_failure_log_ >= kFailureLogPeriod) {
    last_failure_log_ = now;
    spdlog::error(
        "Journal append of {} records for {} failed ({}; {} tries so far); retrying in {} ms, "
        "trials that wait on it are held",
        in_flight_records_.size(), journal_, last_error_.ToString(), failed_tries_, delay.count());
  }
  retry_pending_ = true;
  sink_->AddTimer(delay, [this, generation = retry_generation_] {
    if (generation != retry_generation_) return;  // RetryNow sent it already
    retry_pending_ = false;
    Send();
  });
}

void JournalWriter::OnDurable(uint64_t last) {
  in_flight_ = false;
  durable_ = std::max(durable_, last);
  while (!effects_.empty() && effects_.front().first <= durable_) {
    auto effect = std::move(effects_.front().second);
    effects_.pop_front();
    effect();
  }
  Flush();  // what was appended while this batch was in flight
}

}  // namespace tunebus::journal
