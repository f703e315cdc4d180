// Scheduler control handlers for whole experiments found in memory or in the store's journals:
// resume (with --rerun-errored) and lsx, and the experiment a read request names (finished ones
// loaded read-only from their journals). Journals not in memory are read with a blocking
// JournalReader (bounded by kJournalTimeout).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "libs/journal/records.hpp"
#include "libs/journal/replay.hpp"
#include "proto/control.hpp"
#include "services/scheduler/experiment.hpp"
#include "services/scheduler/journal_reader.hpp"
#include "services/scheduler/trial_json.hpp"

namespace tunebus {

using nlohmann::json;

namespace {

constexpr std::chrono::milliseconds kJournalTimeout{5000};
// Read-only experiments kept loaded (each holds its trials).
constexpr size_t kJournaledCacheSize = 4;

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// "digits-3e962" -> "digits": journals are named "<experiment name>-<5 hex digits>".
std::string NameOfJournal(const std::string& journal) {
  return journal.size() > 6 ? journal.substr(0, journal.size() - 6) : journal;
}

json CountsOf(const std::vector<Trial>& trials) {
  json counts = json::object();
  for (auto s : {TrialStatus::kPending, TrialStatus::kRunning, TrialStatus::kPaused,
                 TrialStatus::kTerminated, TrialStatus::kError}) {
    counts[TrialStatusName(s)] = 0;
  }
  for (const Trial& t : trials)
    counts[TrialStatusName(t.status)] = counts[TrialStatusName(t.status)].get<int64_t>() + 1;
  return counts;
}

// Seconds from the submission to the newest result any trial reported (a journal has no end time).
double ElapsedToLastResult(const std::vector<Trial>& trials, double submitted_at_s) {
  double last = submitted_at_s;
  for (const Trial& t : trials) {
    if (!t.last_result_msgpack.empty())
      last = std::max(last, t.LastResult().value("timestamp", 0.0));
  }
  return last - submitted_at_s;
}

}  // namespace

NoEffects& NoEffects::Instance() {
  static NoEffects instance;
  return instance;
}

void NoEffects::PlaceTrial(const Trial& trial, int64_t attempt) {
  (void)attempt;
  Refuse("PlaceTrial", trial);
}

void NoEffects::DeleteCheckpoint(const std::string& checkpoint_id) {
  spdlog::error("Ignoring DeleteCheckpoint {} of a read-only experiment", checkpoint_id);
}

void NoEffects::Refuse(const char* what, const Trial& trial) {
  spdlog::error("Ignoring {} for trial {} of a read-only experiment", what, trial.trial_id);
}

Result<Scheduler::Experiment*> Scheduler::FindExperiment(const std::string& name) {
  if (name.empty() && Current() != nullptr) return Current();
  for (auto it = experiments_.rbegin(); !name.empty() && it != experiments_.rend(); ++it) {
    if ((*it)->spec.name == name || (*it)->journal_name == name) return it->get();
  }
  JournalReader reader(ctx_, options_.store_endpoint, kJournalTimeout);
  auto journals = reader.List();
  if (!journals.ok()) return journals.status();
  const JournalSummary* newest = nullptr;
  std::set<std::string> known;
  for (const auto& e : experiments_) known.insert(e->spec.name);
  for (const JournalSummary& j : *journals) {
    known.insert(NameOfJournal(j.journal));
    if (!name.empty() && NameOfJournal(j.journal) != name && j.journal != name) continue;
    if (newest == nullptr || j.submitted_at_s > newest->submitted_at_s) newest = &j;
  }
  if (newest != nullptr) return LoadJournaled(reader, *newest);
  if (name.empty()) return Status::NotFound("no experiment has been submitted");
  return Status::NotFound(
      fmt::format("no experiment named {}; known experiments: {}", name,
                  known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", "))));
}

Result<Scheduler::Experiment*> Scheduler::LoadJournaled(JournalReader& reader,
                                                        const JournalSummary& j) {
  if (auto it = journaled_.find(j.journal);
      it != journaled_.end() && it->second->journal_base == j.last_seq) {
    return it->second.get();
  }
  const auto t0 = bus::Clock::now();
  auto replayed = reader.Replay(j.journal, j.last_seq);
  if (!replayed.ok()) return replayed.status();
  auto spec = ParseExperimentYaml(replayed->spec_yaml, replayed->base_dir, replayed->source_name);
  if (!spec.ok()) return spec.status();
  auto built = NewExperiment(std::move(*spec), replayed->experiment_id, replayed->seed,
                             replayed->restore_from,
                             /*read_only=*/true);
  if (!built.ok()) return built.status();
  std::unique_ptr<Experiment> e = std::move(*built);
  if (e->journal_name != j.journal) {
    return Status::Corruption(
        fmt::format("journal {} holds experiment {}", j.journal, e->journal_name));
  }
  e->submitted_at_s = replayed->submitted_at_s;
  e->base_dir = replayed->base_dir;
  e->source_name = replayed->source_name;
  e->seed = replayed->seed;
  e->journal_base = j.last_seq;
  const double elapsed_s = ElapsedToLastResult(replayed->trials, replayed->submitted_at_s);
  e->ended = bus::Clock::now();
  e->started = *e->ended - std::chrono::duration_cast<bus::Clock::duration>(
                               std::chrono::duration<double>(elapsed_s));
  // A journal without experiment_ended (its scheduler died and it was never resumed) is what lsx
  // calls INTERRUPTED.
  const ExperimentStatus status = replayed->ended_status.value_or(ExperimentStatus::kInterrupted);
  if (Status s = e->runner->Restore(std::move(replayed->trials), replayed->searcher_state,
                                    replayed->last_action, replayed->submitted_at_s, status,
                                    replayed->ended_reason);
      !s.ok()) {
    return s;
  }
  spdlog::info("Loaded experiment {} read-only from journal {} ({} records, {} trials, {:.3f} s)",
               e->spec.name, j.journal, replayed->records, e->runner->trials().size(),
               std::chrono::duration<double>(bus::Clock::now() - t0).count());
  if (journaled_.size() >= kJournaledCacheSize && !journaled_.contains(j.journal))
    journaled_.erase(journaled_.begin());
  Experiment* raw = e.get();
  journaled_[j.journal] = std::move(e);
  return raw;
}

void Scheduler::HandleResumeExperiment(const bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::ResumeExperimentCommand>();
  if (!msg.ok()) return ReplyError(in, d.id(), d.type(), msg.status());
  const auto mode = ParseRerunMode(msg->rerun_errored);
  if (!mode.ok()) {
    return ReplyError(in, d.id(), d.type(),
                      Status::InvalidArgument("--rerun-errored must be restore or restart, got '" +
                                              msg->rerun_errored + "'"));
  }
  Experiment* e = nullptr;
  for (auto& x : experiments_) {
    if (x->spec.name == msg->name) e = x.get();
  }
  if (state_ == State::kRunning && Current() != e) {
    return ReplyError(in, d.id(), d.type(),
                      Status::FailedPrecondition(fmt::format(
                          "experiment {} is running; stop it first", Current()->spec.name)));
  }
  if (e == nullptr) {  // not in this process: the newest journal with that name
    JournalReader reader(ctx_, options_.store_endpoint, kJournalTimeout);
    auto journals = reader.List();
    if (!journals.ok()) return ReplyError(in, d.id(), d.type(), journals.status());
    const JournalSummary* newest = nullptr;
    for (const JournalSummary& j : *journals) {
      if (NameOfJournal(j.journal) != msg->name) continue;
      if (newest == nullptr || j.submitted_at_s > newest->submitted_at_s) newest = &j;
    }
    if (newest == nullptr) {
      return ReplyError(in, d.id(), d.type(), Status::NotFound("no experiment named " + msg->name));
    }
    uint64_t last_seq = newest->last_seq;
    auto replayed = reader.ReplayToResume(newest->journal, &last_seq);
    if (!replayed.ok()) return ReplyError(in, d.id(), d.type(), replayed.status());
    if (Status s = ResumeExperiment(reader, newest->journal, std::move(*replayed), last_seq);
        !s.ok()) {
      return ReplyError(in, d.id(), d.type(), s);
    }
    e = Current();
  }
  if (e->runner->Reopen()) {
    e->journal->Append(journal::ExperimentResumed(WallSeconds(), RerunMode::kNone));
    spdlog::info("Experiment {} continues after its interruption", msg->name);
  }
  int64_t rerun = 0;
  if (*mode != RerunMode::kNone) {
    auto n = e->runner->RerunErrored(*mode);
    if (!n.ok()) return ReplyError(in, d.id(), d.type(), n.status());
    rerun = *n;
    if (rerun > 0) e->journal->Append(journal::ExperimentResumed(WallSeconds(), *mode));
  }
  if (e->runner->IsFinished()) {
    const int64_t errored = CountsOf(e->runner->trials())["ERROR"].get<int64_t>();
    return ReplyError(
        in, d.id(), d.type(),
        Status::FailedPrecondition(fmt::format(
            "experiment {} is finished ({}); nothing to resume{}", msg->name,
            e->runner->end_reason(),
            errored > 0
                ? fmt::format(" — rerun its {} errored trials with --rerun-errored=restore|restart",
                              errored)
                : "")));
  }
  state_ = State::kRunning;
  spdlog::info("Experiment {} resumed by tunectl (rerun_errored='{}': {} trials)", msg->name,
               RerunModeName(*mode), rerun);
  e->runner->Step();
  json body = ExperimentToJson(e->spec.name, *e->runner, e->experiment_dir, 0);
  body["rerun"] = rerun;
  ReplyJson(in, d.id(), body);
}

void Scheduler::HandleListExperiments(const bus::Incoming& in, const proto::Decoded& d) {
  json body = json::array();
  std::set<std::string> listed;
  for (const auto& e : experiments_) {
    listed.insert(e->journal_name);
    body.push_back({{"name", e->spec.name},
                    {"journal", e->journal_name},
                    {"status", ExperimentStatusName(e->runner->status())},
                    {"counts", CountsOf(e->runner->trials())},
                    {"total", e->runner->TotalTrials()},
                    {"submitted_at", e->submitted_at_s}});
  }
  JournalReader reader(ctx_, options_.store_endpoint, kJournalTimeout);
  auto journals = reader.List();
  if (!journals.ok()) return ReplyError(in, d.id(), d.type(), journals.status());
  for (const JournalSummary& j : *journals) {
    if (listed.contains(j.journal)) continue;
    auto replayed = reader.Replay(j.journal, j.last_seq);
    if (!replayed.ok()) return ReplyError(in, d.id(), d.type(), replayed.status());
    const journal::ReplayedExperiment& x = *replayed;
    body.push_back(
        {{"name", NameOfJournal(j.journal)},
         {"journal", j.journal},
         {"status", ExperimentStatusName(x.ended_status.value_or(ExperimentStatus::kInterrupted))},
         {"counts", CountsOf(x.trials)},
         {"total", int64_t(x.trials.size())},
         {"submitted_at", x.submitted_at_s}});
  }
  std::sort(body.begin(), body.end(), [](const json& a, const json& b) {
    return a.value("submitted_at", 0.0) < b.value("submitted_at", 0.0);
  });
  ReplyJson(in, d.id(), body);
}

}  // namespace tunebus
