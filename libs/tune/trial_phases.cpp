#include "libs/tune/trial_phases.hpp"

#include <fmt/format.h>

#include <cassert>
#include <cstdio>
#include <cstdlib>

namespace tunebus {

namespace {

bool IsRunningPhase(RunnerPhase p) {
  return p == RunnerPhase::kRunning || p == RunnerPhase::kPauseRequested ||
         p == RunnerPhase::kPausing;
}

bool CarriesData(PhaseEvent e) {
  return e == PhaseEvent::kStartPausing || e == PhaseEvent::kLeaveSaving ||
         e == PhaseEvent::kAdoptSaving;
}

// The transition table of the header, row for row.
struct TransitionRow {
  RunnerPhase from;
  PhaseEvent event;
  RunnerPhase to;
};
constexpr TransitionRow kTransitions[] = {
    {RunnerPhase::kIdle, PhaseEvent::kQueue, RunnerPhase::kQueued},
    {RunnerPhase::kQueued, PhaseEvent::kPlace, RunnerPhase::kPlacing},
    {RunnerPhase::kPlacing, PhaseEvent::kPlaced, RunnerPhase::kRunning},
    {RunnerPhase::kPlacing, PhaseEvent::kDefer, RunnerPhase::kQueued},
    {RunnerPhase::kQueued, PhaseEvent::kDrop, RunnerPhase::kIdle},
    {RunnerPhase::kPlacing, PhaseEvent::kDrop, RunnerPhase::kIdle},
    {RunnerPhase::kRunning, PhaseEvent::kRequestPause, RunnerPhase::kPauseRequested},
    {RunnerPhase::kPauseRequested, PhaseEvent::kRequestPause, RunnerPhase::kPauseRequested},
    {RunnerPhase::kPauseRequested, PhaseEvent::kTakePauseRequest, RunnerPhase::kRunning},
    {RunnerPhase::kRunning, PhaseEvent::kStartPausing, RunnerPhase::kPausing},
    {RunnerPhase::kRunning, PhaseEvent::kLeave, RunnerPhase::kIdle},
    {RunnerPhase::kPauseRequested, PhaseEvent::kLeave, RunnerPhase::kIdle},
    {RunnerPhase::kPausing, PhaseEvent::kLeave, RunnerPhase::kIdle},
    {RunnerPhase::kRunning, PhaseEvent::kLeaveSaving, RunnerPhase::kSaving},
    {RunnerPhase::kPauseRequested, PhaseEvent::kLeaveSaving, RunnerPhase::kSaving},
    {RunnerPhase::kPausing, PhaseEvent::kLeaveSaving, RunnerPhase::kSaving},
    {RunnerPhase::kSaving, PhaseEvent::kSetRequeue, RunnerPhase::kSaving},
    {RunnerPhase::kSaving, PhaseEvent::kEndSaving, RunnerPhase::kIdle},
    {RunnerPhase::kIdle, PhaseEvent::kAdopt, RunnerPhase::kRunning},
    {RunnerPhase::kIdle, PhaseEvent::kAdoptSaving, RunnerPhase::kSaving},
};

}  // namespace

std::optional<RunnerPhase> TrialPhases::Next(RunnerPhase from, PhaseEvent event) {
  for (const TransitionRow& row : kTransitions) {
    if (row.from == from && row.event == event) return row.to;
  }
  return std::nullopt;
}

void TrialPhases::Reset(size_t n) {
  phases_.assign(n, TrialPhase{});
  queued_.clear();
  saving_.clear();
  counts_.fill(0);
  counts_[size_t(RunnerPhase::kIdle)] = int64_t(n);
}

int64_t TrialPhases::Add() {
  phases_.emplace_back();
  ++counts_[size_t(RunnerPhase::kIdle)];
  return int64_t(phases_.size()) - 1;
}

bool TrialPhases::IsRunning(int64_t index) const { return IsRunningPhase(phase(index)); }

int64_t TrialPhases::running() const {
  return count(RunnerPhase::kRunning) + count(RunnerPhase::kPauseRequested) +
         count(RunnerPhase::kPausing);
}

Status TrialPhases::Apply(int64_t index, PhaseEvent event) {
  if (CarriesData(event)) {
    return Status::InvalidArgument(
        fmt::format("{} carries data: call its named method", PhaseEventName(event)));
  }
  return Move(index, event, TrialPhase{});
}

Status TrialPhases::Move(int64_t index, PhaseEvent event, TrialPhase data) {
  if (index < 0 || size_t(index) >= phases_.size()) {
    return Status::InvalidArgument(fmt::format("trial {} is not held ({} trials)", index, size()));
  }
  TrialPhase& p = phases_[size_t(index)];
  const std::optional<RunnerPhase> to = Next(p.phase, event);
  if (!to) {
    return Status::FailedPrecondition(fmt::format("trial {} cannot {} from {}", index,
                                                  PhaseEventName(event), RunnerPhaseName(p.phase)));
  }
  const RunnerPhase from = p.phase;
  if (from == RunnerPhase::kQueued) queued_.erase(index);
  if (from == RunnerPhase::kSaving && *to != RunnerPhase::kSaving) saving_.erase(index);
  if (*to == RunnerPhase::kQueued) queued_.insert(index);
  if (*to == RunnerPhase::kSaving && from != RunnerPhase::kSaving) saving_.insert(index);
  --counts_[size_t(from)];
  ++counts_[size_t(*to)];
  if (event == PhaseEvent::kSetRequeue) {
    p.requeue = data.requeue;
  } else {
    const bool keeps_attempt = *to == RunnerPhase::kPausing || *to == RunnerPhase::kSaving;
    p.attempt = keeps_attempt ? data.attempt : 0;
    p.worker_id = *to == RunnerPhase::kSaving ? std::move(data.worker_id) : std::string();
    p.requeue = *to == RunnerPhase::kSaving && data.requeue;
  }
  p.phase = *to;
  AssertInvariants();
  return Status::Ok();
}

bool TrialPhases::TakePauseRequest(int64_t index) {
  if (!Is(index, RunnerPhase::kPauseRequested)) return false;
  Must(Apply(index, PhaseEvent::kTakePauseRequest));
  return true;
}

void TrialPhases::StartPausing(int64_t index, int64_t attempt) {
  TrialPhase data;
  data.attempt = attempt;
  Must(Move(index, PhaseEvent::kStartPausing, std::move(data)));
}

void TrialPhases::LeaveSaving(int64_t index, int64_t attempt, std::string worker_id, bool requeue) {
  Must(Move(index, PhaseEvent::kLeaveSaving,
            TrialPhase{RunnerPhase::kSaving, attempt, std::move(worker_id), requeue}));
}

void TrialPhases::SetRequeue(int64_t index, bool requeue) {
  TrialPhase data;
  data.requeue = requeue;
  Must(Move(index, PhaseEvent::kSetRequeue, std::move(data)));
}

TrialPhase TrialPhases::EndSaving(int64_t index) {
  TrialPhase was = Is(index, RunnerPhase::kSaving) ? at(index) : TrialPhase{};
  Must(Apply(index, PhaseEvent::kEndSaving));
  return was;
}

void TrialPhases::AdoptSaving(int64_t index, int64_t attempt, std::string worker_id) {
  Must(Move(index, PhaseEvent::kAdoptSaving,
            TrialPhase{RunnerPhase::kSaving, attempt, std::move(worker_id), false}));
}

std::vector<int64_t> TrialPhases::SavingOn(const std::string& worker_id) const {
  std::vector<int64_t> out;
  for (int64_t index : saving_) {
    if (at(index).worker_id == worker_id) out.push_back(index);
  }
  return out;
}

Status TrialPhases::CheckInvariants() const {
  std::array<int64_t, kRunnerPhaseCount> counts{};
  size_t queued = 0, saving = 0;
  for (size_t i = 0; i < phases_.size(); ++i) {
    const TrialPhase& p = phases_[i];
    const auto index = int64_t(i);
    ++counts[size_t(p.phase)];
    const bool is_queued = p.phase == RunnerPhase::kQueued;
    const bool is_saving = p.phase == RunnerPhase::kSaving;
    queued += is_queued;
    saving += is_saving;
    if (is_queued != queued_.contains(index)) {
      return Status::Internal(fmt::format("trial {} is {} but {} the queue", i,
                                          RunnerPhaseName(p.phase), is_queued ? "not in" : "in"));
    }
    if (is_saving != saving_.contains(index)) {
      return Status::Internal(fmt::format("trial {} is {} but {} the saving set", i,
                                          RunnerPhaseName(p.phase), is_saving ? "not in" : "in"));
    }
    const bool keeps_attempt = is_saving || p.phase == RunnerPhase::kPausing;
    if (!keeps_attempt && p.attempt != 0) {
      return Status::Internal(fmt::format("trial {} is {} and holds attempt {}", i,
                                          RunnerPhaseName(p.phase), p.attempt));
    }
    if (!is_saving && (!p.worker_id.empty() || p.requeue)) {
      return Status::Internal(
          fmt::format("trial {} is {} and holds saving data", i, RunnerPhaseName(p.phase)));
    }
  }
  if (queued != queued_.size() || saving != saving_.size()) {
    return Status::Internal(fmt::format("queue {} / saving set {} hold trials not in phase",
                                        queued_.size(), saving_.size()));
  }
  for (size_t k = 0; k < kRunnerPhaseCount; ++k) {
    if (counts[k] != counts_[k]) {
      return Status::Internal(fmt::format("{} count is {}, {} trials are",
                                          RunnerPhaseName(RunnerPhase(k)), counts_[k], counts[k]));
    }
  }
  return Status::Ok();
}

void TrialPhases::Must(const Status& s) {
  if (s.ok()) return;
  std::fprintf(stderr, "TrialPhases: %s\n", s.ToString().c_str());
  std::abort();
}

void TrialPhases::AssertInvariants() const {
#ifndef NDEBUG
  const Status s = CheckInvariants();
  if (!s.ok()) std::fprintf(stderr, "TrialPhases invariant broken: %s\n", s.ToString().c_str());
  assert(s.ok());
#endif
}

}  // namespace tunebus
