#include "libs/tune/driver_holds.hpp"

#include <utility>

namespace tunebus {

void DriverHolds::Hold(TrialSlot& slot, const Trial& t, HeldResult held) {
  nlohmann::json shown = held.metrics.ToJson();
  shown["config"] = t.config;
  const int64_t attempt = held.attempt, seq = held.seq;
  slot.held = std::move(held);
  link_->Ask(t.trial_id, attempt, seq, std::move(shown));
}

std::optional<HeldResult> DriverHolds::Take(TrialSlot& slot, int64_t attempt, int64_t seq) {
  std::optional<HeldResult>& h = slot.held;
  if (!h || h->attempt != attempt || h->seq != seq) return std::nullopt;
  std::optional<HeldResult> taken = std::move(h);
  h.reset();
  return taken;
}

void DriverHolds::Drop(TrialSlot& slot, const std::string& trial_id) {
  if (!slot.held) return;
  slot.held.reset();
  if (link_ != nullptr) link_->Forget(trial_id);
}

std::optional<JournaledAnswer> DriverHolds::TakeJournaled(TrialSlot& slot, int64_t attempt,
                                                          int64_t seq) {
  std::optional<JournaledAnswer> journaled = std::move(slot.journaled_answer);
  slot.journaled_answer.reset();
  if (!journaled || journaled->attempt != attempt || journaled->seq != seq) return std::nullopt;
  return journaled;
}

void DriverHolds::Restore(const std::map<std::string, nlohmann::json>& records,
                          const std::vector<Trial>& trials, std::vector<TrialSlot>& slots) {
  for (TrialSlot& slot : slots) slot.journaled_answer.reset();
  for (const Trial& t : trials) {
    auto record = records.find(t.trial_id);
    if (record == records.end()) continue;
    const int64_t attempt = record->second.value("attempt", int64_t(0));
    const int64_t seq = record->second.value("seq", int64_t(0));
    if (t.status != TrialStatus::kRunning || attempt != t.attempt || seq <= t.last_seq) {
      continue;  // its result was journaled too: decided, nothing to reuse
    }
    Result<DriverAnswer> answer = DriverAnswer::FromJson(record->second);
    if (answer.ok()) {
      slots[size_t(t.index)].journaled_answer =
          JournaledAnswer{attempt, seq, std::move(answer).value()};
    }
  }
}

}  // namespace tunebus
