// The scheduler's experiments: a new one from a submission, one resumed from its journal (at
// start, or by `tunectl resume`: HandleResumeExperiment), the `lsx` rows
// (HandleListExperiments), and the experiment a read request names (finished ones loaded
// read-only from their journals). Journals not in memory are read asynchronously with the
// scheduler's JournalReader: each request answers `in` from the reader's completion callback.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <random>

#include "libs/bus/service_guard.hpp"
#include "libs/journal/replay.hpp"
#include "proto/control.hpp"
#include "services/scheduler/core/experiment.hpp"
#include "services/scheduler/store/journal_reader.hpp"
#include "services/scheduler/scheduler.hpp"
#include "services/scheduler/control/trial_json.hpp"

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
  std::string experiment_id;
  do {  // trial ids route worker messages: unique among the experiments in this process
    experiment_id = fmt::format("{:05x}", rd() & 0xfffff);
  } while (by_experiment_id_.contains(experiment_id));
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
  Experiment* e = Adopt(std::move(*created));
  e->Submit(msg.spec_yaml);
  ReplyJson(e, in, id, ExperimentToJson(e->name(), e->runner(), e->experiment_dir(), 0));
}

void Scheduler::ResumeFromJournals(std::function<void(Status)> done) {
  if (!options_.resume) return done(Status::Ok());
  journals_->List([this, done](Result<std::vector<JournalSummary>> journals) {
    if (!journals.ok()) return done(journals.status());
    auto unfinished = std::make_shared<std::vector<JournalSummary>>();
    for (const JournalSummary& j : *journals) {
      if (!j.ended) unfinished->push_back(j);
    }
    std::sort(unfinished->begin(), unfinished->end(),
              [](const JournalSummary& a, const JournalSummary& b) {
                return a.submitted_at_s < b.submitted_at_s;
              });
    // One at a time: each resume reads its journal, then the next starts. The pending read's
    // callback holds `next` (the function holds itself only weakly).
    auto next = std::make_shared<std::function<void(size_t)>>();
    *next = [this, unfinished, self = std::weak_ptr(next), done](size_t i) {
      if (i == unfinished->size()) return done(Status::Ok());
      const JournalSummary& j = (*unfinished)[i];
      journals_->ReplayToResume(
          j.journal, j.last_seq,
          [this, journal = j.journal, i, next = self.lock()](Result<JournalReader::Resumable>&& r) {
            auto go_on = [journal, i, next](Result<Experiment*> resumed) {
              if (!resumed.ok()) {
                spdlog::error("Could not resume experiment {}: {}", journal,
                              resumed.status().ToString());
              }
              (*next)(i + 1);
            };
            if (!r.ok()) return go_on(r.status());
            ResumeExperiment(journal, std::move(r->replayed), r->last_seq, go_on);
          });
    };
    (*next)(0);
  });
}

void Scheduler::ResumeExperiment(const std::string& journal_name,
                                 journal::ReplayedExperiment replayed, uint64_t store_last_seq,
                                 std::function<void(Result<Experiment*>)> done) {
  if (by_experiment_id_.contains(replayed.identity.experiment_id)) {
    return done(Status::FailedPrecondition(
        fmt::format("experiment id {} of journal {} is taken by experiment {} in this scheduler",
                    replayed.identity.experiment_id, journal_name,
                    by_experiment_id_[replayed.identity.experiment_id]->journal_name())));
  }
  auto spec = ParseExperimentYaml(replayed.spec_yaml, replayed.identity.base_dir,
                                  replayed.identity.source_name);
  if (!spec.ok()) return done(spec.status());
  const std::string experiment_dir = ExperimentDir(*spec, replayed.identity.results_folder);
  auto created =
      Experiment::Create(*experiment_context_, std::move(*spec), experiment_dir, replayed.identity);
  if (!created.ok()) return done(created.status());
  if (Status s = NameFree((*created)->name()); !s.ok()) return done(s);
  // Kept even if the resume fails half-way: callbacks it registered may still come.
  Experiment* e = Adopt(std::move(*created));
  if (Status s = e->Resume(*journals_, journal_name, std::move(replayed), store_last_seq,
                           bus::Duration{options_.reattach_grace_ms}, [e, done] { done(e); });
      !s.ok()) {
    e->MarkEnded();
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
  if (name.empty()) {
    auto found = DefaultExperiment();
    if (!found.ok() || *found != nullptr) return then(found);
  }
  if (Experiment* e = InMemory(name)) return then(e);
  journals_->List([this, name, then](Result<std::vector<JournalSummary>> journals) {
    if (!journals.ok()) return then(journals.status());
    // What the store said is from before now: an experiment submitted or resumed meanwhile wins.
    if (name.empty()) {
      auto found = DefaultExperiment();
      if (!found.ok() || *found != nullptr) return then(found);
    }
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
      j.journal, j.last_seq, [this, j, t0, then](Result<journal::ReplayedExperiment>&& replayed) {
        if (!replayed.ok()) return then(replayed.status());
        auto spec = ParseExperimentYaml(replayed->spec_yaml, replayed->identity.base_dir,
                                        replayed->identity.source_name);
        if (!spec.ok()) return then(spec.status());
        const uint64_t records = replayed->records;
        const std::string experiment_dir = ExperimentDir(*spec, replayed->identity.results_folder);
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

Status Scheduler::HandleResumeExperiment(bus::Incoming& in, const proto::Decoded& d) {
  auto msg = d.As<proto::ResumeExperimentCommand>();
  if (!msg.ok()) return msg.status();
  const auto mode = ParseRerunMode(msg->rerun_errored);
  if (!mode.ok()) {
    return Status::InvalidArgument("--rerun-errored must be restore or restart, got '" +
                                   msg->rerun_errored + "'");
  }
  Experiment* e = nullptr;
  for (auto& x : experiments_) {
    if (x->name() == msg->name) e = x.get();
  }
  if (claimed_names_.contains(msg->name)) {
    return Status::FailedPrecondition(
        fmt::format("experiment {} is being submitted or resumed; try again", msg->name));
  }
  if (e != nullptr && e->phase() == Experiment::Phase::kResuming) {
    return Status::FailedPrecondition(fmt::format(
        "experiment {} is being resumed (its journal is being read); try again", e->name()));
  }
  if (e != nullptr) {
    if (Status s = JournalWritable(e); !s.ok()) return s;
    ContinueResume(in, d.id(), e, *mode);
    return Status::Ok();
  }
  // Not in this process: the newest journal with that name. Its name is claimed meanwhile.
  claimed_names_.insert(msg->name);
  const std::function<void(const Status&)> fail = [this, route = in.route, id = d.id(),
                                                   name = msg->name](const Status& s) {
    claimed_names_.erase(name);
    ReplyError(ReplyTo(route), id, proto::ResumeExperimentCommand::kType, s);
  };
  const std::function<void(const JournalSummary&)> resume = [this, route = in.route, id = d.id(),
                                                             mode = *mode, name = msg->name,
                                                             fail](const JournalSummary& j) {
    journals_->ReplayToResume(
        j.journal, j.last_seq,
        [this, route, id, mode, name, fail,
         journal = j.journal](Result<JournalReader::Resumable>&& r) {
          if (!r.ok()) return fail(r.status());
          claimed_names_.erase(name);  // ResumeExperiment checks the name itself
          ResumeExperiment(journal, std::move(r->replayed), r->last_seq,
                           [this, route, id, mode, fail](Result<Experiment*> resumed) {
                             if (!resumed.ok()) return fail(resumed.status());
                             ContinueResume(ReplyTo(route), id, *resumed, mode);
                           });
        });
  };
  journals_->List([this, name = msg->name, mode = *mode, fail,
                   resume](Result<std::vector<JournalSummary>> journals) {
    if (!journals.ok()) return fail(journals.status());
    const JournalSummary* newest = nullptr;
    for (const JournalSummary& j : *journals) {
      if (ExperimentNameOfJournal(j.journal) != name) continue;
      if (newest == nullptr || j.submitted_at_s > newest->submitted_at_s) newest = &j;
    }
    if (newest == nullptr) return fail(Status::NotFound("no experiment named " + name));
    if (!newest->ended || mode != RerunMode::kNone) return resume(*newest);
    // Finished for good (not INTERRUPTED): answered from a read-only load, its files untouched.
    LoadJournaled(*newest, [fail, resume, j = *newest](Result<Experiment*> loaded) {
      if (!loaded.ok()) return fail(loaded.status());
      if ((*loaded)->runner().status() != ExperimentStatus::kInterrupted)
        return fail((*loaded)->FinishedError());
      resume(j);
    });
  });
  return Status::Ok();
}

void Scheduler::ContinueResume(const bus::Incoming& in, uint64_t id, Experiment* e,
                               RerunMode mode) {
  const std::string type = proto::ResumeExperimentCommand::kType;
  e->recorder().CompleteEnd(true);  // its experiment_ended record comes before what follows
  if (e->runner().Reopen()) {
    e->journal().Append(journal::ExperimentResumed(clock_.WallSeconds(), RerunMode::kNone));
    spdlog::info("Experiment {} continues after its interruption", e->name());
  }
  int64_t rerun = 0;
  if (mode != RerunMode::kNone) {
    auto n = e->runner().RerunErrored(mode);
    if (!n.ok()) return ReplyError(in, id, type, n.status());
    rerun = *n;
    if (rerun > 0) e->journal().Append(journal::ExperimentResumed(clock_.WallSeconds(), mode));
  }
  if (e->runner().IsFinished()) return ReplyError(in, id, type, e->FinishedError());
  if (e->phase() == Experiment::Phase::kEnded) e->MarkRunning();
  spdlog::info("Experiment {} resumed by tunectl (rerun_errored='{}': {} trials)", e->name(),
               RerunModeName(mode), rerun);
  e->runner().Step();
  json body = ExperimentToJson(e->name(), e->runner(), e->experiment_dir(), 0);
  body["rerun"] = rerun;
  ReplyJson(e, in, id, body);
}

namespace {

// An experiment's lsx row.
json ListRow(const std::string& name, const std::string& journal, ExperimentStatus status,
             const std::vector<Trial>& trials, int64_t total, double submitted_at_s) {
  return {{"name", name},
          {"journal", journal},
          {"status", ExperimentStatusName(status)},
          {"counts", TrialCountsJson(trials)},
          {"total", total},
          {"submitted_at", submitted_at_s}};
}

}  // namespace

void Scheduler::JournalRow(const JournalLength& j, std::function<void(Result<json>)> then) {
  if (auto it = lsx_rows_.find(j.journal);
      it != lsx_rows_.end() && it->second.first == j.last_seq) {
    return then(it->second.second);
  }
  journals_->Replay(
      j.journal, j.last_seq, [this, j, then](Result<journal::ReplayedExperiment>&& replayed) {
        if (!replayed.ok()) return then(replayed.status());
        const journal::ReplayedExperiment& x = *replayed;
        json row = ListRow(ExperimentNameOfJournal(j.journal), j.journal,
                           x.ended_status.value_or(ExperimentStatus::kInterrupted), x.trials,
                           int64_t(x.trials.size()), x.identity.submitted_at_s);
        lsx_rows_[j.journal] = {j.last_seq, row};
        then(std::move(row));
      });
}

Status Scheduler::HandleListExperiments(bus::Incoming& in, const proto::Decoded& d) {
  // The experiments in memory answer from memory; the others' journals do not change while
  // this scheduler runs, so a recent journal list names them, and their rows are cached by
  // length: an lsx is answered in this call, without waiting for the store.
  if (auto recent = journals_->RecentLengths()) {
    ListExperiments(in.route, d.id(), d.type(), std::move(*recent));
    return Status::Ok();
  }
  journals_->ListLengths([this, route = in.route, id = d.id(),
                          type = d.type()](Result<std::vector<JournalLength>> lengths) {
    if (!lengths.ok()) return ReplyError(ReplyTo(route), id, type, lengths.status());
    ListExperiments(route, id, type, std::move(*lengths));
  });
  return Status::Ok();
}

void Scheduler::ListExperiments(const std::vector<std::string>& route, uint64_t id,
                                const std::string& type, std::vector<JournalLength> lengths) {
  // Rows of journals not in memory (replayed, or cached by length), joined; the rows of the
  // experiments in memory are made when all are in (the loop ran meanwhile).
  struct Join {
    std::map<std::string, json> rows;  // by journal
    size_t waiting = 0;
    bool failed = false;
  };
  auto join = std::make_shared<Join>();
  const auto finish = [this, route, id, join] {
    json body = json::array();
    for (const auto& e : experiments_) {
      join->rows.erase(e->journal_name());
      body.push_back(ListRow(e->name(), e->journal_name(), e->runner().status(),
                             e->runner().trials(), e->runner().TotalTrials(),
                             e->identity().submitted_at_s));
      body.back().update(ShareJson(*e));
    }
    for (auto& [journal, row] : join->rows) body.push_back(std::move(row));
    std::sort(body.begin(), body.end(), [](const json& a, const json& b) {
      return a.value("submitted_at", 0.0) < b.value("submitted_at", 0.0);
    });
    ReplyRead(ReplyTo(route), id, body);
  };
  std::set<std::string> listed, in_memory;
  for (const auto& e : experiments_) in_memory.insert(e->journal_name());
  std::vector<JournalLength> wanted;
  for (const JournalLength& j : lengths) {
    listed.insert(j.journal);
    if (!in_memory.contains(j.journal)) wanted.push_back(j);
  }
  std::erase_if(lsx_rows_, [&listed](const auto& kv) { return !listed.contains(kv.first); });
  join->waiting = wanted.size();
  if (wanted.empty()) return finish();
  for (const JournalLength& j : wanted) {
    JournalRow(j, [this, route, id, type, join, finish, journal = j.journal](Result<json> row) {
      if (join->failed) return;
      if (!row.ok()) {
        join->failed = true;
        return ReplyError(ReplyTo(route), id, type, row.status());
      }
      join->rows[journal] = std::move(*row);
      if (--join->waiting == 0) finish();
    });
  }
}

}  // namespace tunebus
