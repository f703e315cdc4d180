// The scheduler's experiments: a new one from a submission, one resumed from its journal (at
// start, or by tunectl), and the experiment a read request names (finished ones loaded
// read-only from their journals). Journals not in memory are read asynchronously with the
// scheduler's JournalReader: each request answers `in` from the reader's completion callback.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <random>

#include "libs/bus/service_guard.hpp"
#include "libs/journal/replay.hpp"
#include "proto/control.hpp"
#include "services/scheduler/experiment.hpp"
#include "services/scheduler/journal_reader.hpp"
#include "services/scheduler/scheduler.hpp"
#include "services/scheduler/trial_json.hpp"

namespace tunebus {

using nlohmann::json;

namespace fs = std::filesystem;

namespace {

// Read-only experiments kept loaded (each holds its trials).
constexpr size_t kJournaledCacheSize = 4;

}  // namespace

void Scheduler::StartExperiment(const bus::Incoming& in, uint64_t id,
                                const proto::SubmitExperiment& msg, ExperimentSpec spec,
                                std::optional<CheckpointRef> restore_from) {
  std::random_device rd;
  const std::string experiment_id = fmt::format("{:05x}", rd() & 0xfffff);
  // A new run never mixes its trial folders with an earlier run's: when <name> holds files, it
  // writes to <name>-<experiment id> (the journal's name), journaled as its results_folder.
  std::string results_folder;
  if (std::error_code ec; !fs::is_empty(ExperimentDir(spec, ""), ec) && !ec) {
    results_folder = spec.name + "-" + experiment_id;
    spdlog::info("The results folder {} holds an earlier run of {}; this run writes to {}",
                 ExperimentDir(spec, ""), spec.name, ExperimentDir(spec, results_folder));
  }
  const std::string experiment_dir = ExperimentDir(spec, results_folder);
  // The folder is checked before anything is journaled: an experiment whose results cannot be
  // written is refused, and the scheduler goes on serving.
  if (Status s = bus::MakeWritableDir(experiment_dir, "the results folder"); !s.ok()) {
    spdlog::warn("Refusing experiment {}: {}", spec.name, s.message());
    return ReplyError(in, id, proto::SubmitExperiment::kType,
                      Status::IoError(fmt::format(
                          "{} on the scheduler's host; set a results_dir it can write in the "
                          "experiment file, or start the scheduler with --results-dir "
                          "(TUNEBUS_RESULTS_DIR)",
                          s.message())));
  }
  const uint64_t seed = spec.seed.value_or((uint64_t(rd()) << 32) | rd());
  auto created = Experiment::Create(
      *experiment_context_, std::move(spec), experiment_dir,
      ExperimentIdentity{experiment_id, seed, clock_.WallSeconds(), msg.base_dir, msg.source_name,
                         std::move(restore_from), results_folder, msg.working_dir_digest,
                         msg.working_dir_size_bytes});
  if (!created.ok()) return ReplyError(in, id, proto::SubmitExperiment::kType, created.status());
  experiments_.push_back(std::move(*created));
  Experiment* e = experiments_.back().get();
  state_ = State::kRunning;
  e->Submit(msg.spec_yaml);
  ReplyJson(in, id, ExperimentToJson(e->name(), e->runner(), e->experiment_dir(), 0));
}

void Scheduler::ResumeFromJournals(std::function<void(Status)> done) {
  if (!options_.resume) return done(Status::Ok());
  journals_->List([this, done](Result<std::vector<JournalSummary>> journals) {
    if (!journals.ok()) return done(journals.status());
    // The newest unfinished experiment (by submission time) is resumed.
    const JournalSummary* newest = nullptr;
    for (const JournalSummary& j : *journals) {
      if (j.ended) continue;
      if (newest == nullptr || j.submitted_at_s > newest->submitted_at_s) newest = &j;
    }
    if (newest == nullptr) return done(Status::Ok());
    journals_->ReplayToResume(
        newest->journal, newest->last_seq,
        [this, journal = newest->journal, done](Result<JournalReader::Resumable> r) {
          if (!r.ok()) return done(r.status());
          ResumeExperiment(journal, std::move(r->replayed), r->last_seq, done);
        });
  });
}

void Scheduler::ResumeExperiment(const std::string& journal_name,
                                 journal::ReplayedExperiment replayed, uint64_t store_last_seq,
                                 std::function<void(Status)> done) {
  auto spec = ParseExperimentYaml(replayed.spec_yaml, replayed.base_dir, replayed.source_name);
  if (!spec.ok()) return done(spec.status());
  const std::string experiment_dir = ExperimentDir(*spec, replayed.results_folder);
  auto created = Experiment::Create(
      *experiment_context_, std::move(*spec), experiment_dir,
      ExperimentIdentity{replayed.experiment_id, replayed.seed, replayed.submitted_at_s,
                         replayed.base_dir, replayed.source_name, replayed.restore_from,
                         replayed.results_folder, replayed.working_dir_digest,
                         replayed.working_dir_size_bytes});
  if (!created.ok()) return done(created.status());
  // Kept even if the resume fails half-way: callbacks it registered may still come.
  experiments_.push_back(std::move(*created));
  Experiment* e = experiments_.back().get();
  state_ = State::kResuming;
  if (Status s = e->Resume(*journals_, journal_name, std::move(replayed), store_last_seq,
                           bus::Duration{options_.reattach_grace_ms},
                           [this, e, done] {
                             state_ = e->runner().IsFinished() ? State::kIdle : State::kRunning;
                             done(Status::Ok());
                           });
      !s.ok()) {
    state_ = State::kIdle;
    return done(s);
  }
}

Experiment* Scheduler::InMemory(const std::string& name) {
  for (auto it = experiments_.rbegin(); !name.empty() && it != experiments_.rend(); ++it) {
    if ((*it)->name() == name || (*it)->journal_name() == name) return it->get();
  }
  return nullptr;
}

void Scheduler::FindExperiment(const std::string& name,
                               std::function<void(Result<Experiment*>)> then) {
  if (name.empty() && Current() != nullptr) return then(Current());
  if (Experiment* e = InMemory(name)) return then(e);
  journals_->List([this, name, then](Result<std::vector<JournalSummary>> journals) {
    if (!journals.ok()) return then(journals.status());
    // What the store said is from before now: an experiment submitted or resumed meanwhile wins.
    if (name.empty() && Current() != nullptr) return then(Current());
    if (Experiment* e = InMemory(name)) return then(e);
    const JournalSummary* newest = nullptr;
    std::set<std::string> known;
    for (const auto& e : experiments_) known.insert(e->name());
    for (const JournalSummary& j : *journals) {
      known.insert(ExperimentNameOfJournal(j.journal));
      if (!name.empty() && ExperimentNameOfJournal(j.journal) != name && j.journal != name)
        continue;
      if (newest == nullptr || j.submitted_at_s > newest->submitted_at_s) newest = &j;
    }
    if (newest != nullptr) return LoadJournaled(*newest, then);
    if (name.empty()) return then(Status::NotFound("no experiment has been submitted"));
    then(Status::NotFound(
        fmt::format("no experiment named {}; known experiments: {}", name,
                    known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", ")))));
  });
}

void Scheduler::LoadJournaled(const JournalSummary& j,
                              std::function<void(Result<Experiment*>)> then) {
  if (auto it = journaled_.find(j.journal);
      it != journaled_.end() && it->second->journal_base() == j.last_seq) {
    return then(it->second.get());
  }
  const SteadyTime t0 = clock_.Now();
  journals_->Replay(
      j.journal, j.last_seq, [this, j, t0, then](Result<journal::ReplayedExperiment> replayed) {
        if (!replayed.ok()) return then(replayed.status());
        auto spec =
            ParseExperimentYaml(replayed->spec_yaml, replayed->base_dir, replayed->source_name);
        if (!spec.ok()) return then(spec.status());
        const uint64_t records = replayed->records;
        const std::string experiment_dir = ExperimentDir(*spec, replayed->results_folder);
        auto loaded = Experiment::LoadReadOnly(std::move(*spec), experiment_dir, j.journal,
                                               std::move(*replayed), j.last_seq, clock_);
        if (!loaded.ok()) return then(loaded.status());
        std::unique_ptr<Experiment> e = std::move(*loaded);
        spdlog::info(
            "Loaded experiment {} read-only from journal {} ({} records, {} "
            "trials, {:.3f} s)",
            e->name(), j.journal, records, e->runner().trials().size(), clock_.SecondsSince(t0));
        if (journaled_.size() >= kJournaledCacheSize && !journaled_.contains(j.journal))
          journaled_.erase(journaled_.begin());
        Experiment* raw = e.get();
        journaled_[j.journal] = std::move(e);
        then(raw);
      });
}

std::string Scheduler::ExperimentDir(const ExperimentSpec& spec,
                                     const std::string& results_folder) const {
  const bool deployed = !options_.results_dir.empty() && spec.results_dir_beside_file;
  return (deployed ? options_.results_dir : spec.results_dir) + "/" +
         (results_folder.empty() ? spec.name : results_folder);
}

}  // namespace tunebus
