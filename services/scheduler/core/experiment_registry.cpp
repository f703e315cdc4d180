// ExperimentRegistry's live experiments: a new one from a submission, one resumed from its
// journal, their routing by trial id and by name, name claims and the rounds' steps.
#include "services/scheduler/core/experiment_registry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <malloc.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string_view>
#include <utility>

#include "libs/bus/service_guard.hpp"
#include "services/scheduler/core/experiment.hpp"

namespace tunebus {

namespace fs = std::filesystem;

ExperimentRegistry::ExperimentRegistry(Options options, const Clock& clock, JournalReader& journals)
    : options_(std::move(options)),
      clock_(clock),
      journals_(journals),
      journaled_(options_.finished_cache_bytes),
      next_state_file_(clock.Now()) {}

ExperimentRegistry::~ExperimentRegistry() = default;

Result<Experiment*> ExperimentRegistry::Submit(ExperimentContext& ctx,
                                               const proto::SubmitExperiment& msg,
                                               ExperimentSpec spec,
                                               std::optional<CheckpointRef> restore_from,
                                               nlohmann::json warm_start) {
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
    return Status::IoError(
        fmt::format("{} on the scheduler's host; set a results_dir it can write in the "
                    "experiment file, or start the scheduler with --results-dir "
                    "(TUNEBUS_RESULTS_DIR)",
                    s.message()));
  }
  const uint64_t seed = spec.seed.value_or((uint64_t(rd()) << 32) | rd());
  auto created = Experiment::Create(
      ctx, std::move(spec), experiment_dir,
      ExperimentIdentity{experiment_id, seed, clock_.WallSeconds(), msg.base_dir, msg.source_name,
                         std::move(restore_from), results_folder, msg.working_dir_digest,
                         msg.working_dir_size_bytes, std::move(warm_start)});
  if (!created.ok()) return created.status();
  Experiment* e = Adopt(std::move(*created));
  e->Submit(msg.spec_yaml);
  return e;
}

void ExperimentRegistry::Resume(ExperimentContext& ctx, const std::string& journal_name,
                                journal::ReplayedExperiment replayed, uint64_t store_last_seq,
                                std::function<void(Result<Experiment*>)> done) {
  if (const Experiment* taken = ById(replayed.identity.experiment_id)) {
    return done(Status::FailedPrecondition(
        fmt::format("experiment id {} of journal {} is taken by experiment {} in this scheduler",
                    replayed.identity.experiment_id, journal_name, taken->journal_name())));
  }
  auto spec = ParseExperimentYaml(replayed.spec_yaml, replayed.identity.base_dir,
                                  replayed.identity.source_name);
  if (!spec.ok()) return done(spec.status());
  const std::string experiment_dir = ExperimentDir(*spec, replayed.identity.results_folder);
  auto created = Experiment::Create(ctx, std::move(*spec), experiment_dir, replayed.identity);
  if (!created.ok()) return done(created.status());
  if (Status s = NameFree((*created)->name()); !s.ok()) return done(s);
  // Kept even if the resume fails half-way: callbacks it registered may still come.
  Experiment* e = Adopt(std::move(*created));
  if (Status s = e->Resume(journals_, journal_name, std::move(replayed), store_last_seq,
                           options_.reattach_grace, [e, done] { done(e); });
      !s.ok()) {
    e->MarkEnded();
    return done(s);
  }
}

void ExperimentRegistry::ResumeAll(ExperimentContext& ctx, std::function<void(Status)> done) {
  if (!options_.resume) return done(Status::Ok());
  journals_.List([this, &ctx, done](Result<std::vector<JournalSummary>> journals) {
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
    *next = [this, &ctx, unfinished, self = std::weak_ptr(next), done](size_t i) {
      if (i == unfinished->size()) return done(Status::Ok());
      const JournalSummary& j = (*unfinished)[i];
      journals_.ReplayToResume(j.journal, j.last_seq,
                               [this, &ctx, journal = j.journal, i,
                                next = self.lock()](Result<JournalReader::Resumable>&& r) {
                                 auto go_on = [journal, i, next](Result<Experiment*> resumed) {
                                   if (!resumed.ok()) {
                                     spdlog::error("Could not resume experiment {}: {}", journal,
                                                   resumed.status().ToString());
                                   }
                                   (*next)(i + 1);
                                 };
                                 if (!r.ok()) return go_on(r.status());
                                 Resume(ctx, journal, std::move(r->replayed), r->last_seq, go_on);
                               });
    };
    (*next)(0);
  });
}

Experiment* ExperimentRegistry::Adopt(std::unique_ptr<Experiment> e) {
  Experiment* raw = e.get();
  experiments_.push_back(std::move(e));
  by_experiment_id_[raw->experiment_id()] = raw;
  return raw;
}

void ExperimentRegistry::Forget(const std::string& journal) {
  for (auto it = experiments_.begin(); it != experiments_.end();) {
    if ((*it)->journal_name() != journal) {
      ++it;
      continue;
    }
    if (auto r = by_experiment_id_.find((*it)->experiment_id());
        r != by_experiment_id_.end() && r->second == it->get()) {
      by_experiment_id_.erase(r);
    }
    retired_.push_back(std::move(*it));
    it = experiments_.erase(it);
  }
  journaled_.Erase(journal);  // a read-only load: nothing calls back into it
  released_counts_.erase(journal);
  lsx_rows_.erase(journal);
  journals_.Forget(journal);
}

std::vector<Experiment*> ExperimentRegistry::Unfinished() const {
  std::vector<Experiment*> out;
  for (const auto& e : experiments_) {
    if (e->phase() != Experiment::Phase::kEnded) out.push_back(e.get());
  }
  return out;
}

Experiment* ExperimentRegistry::ForTrial(const std::string& trial_id) const {
  const size_t underscore = trial_id.rfind('_');
  if (underscore == std::string::npos) return nullptr;
  const auto it = by_experiment_id_.find(std::string_view(trial_id).substr(0, underscore));
  return it == by_experiment_id_.end() ? nullptr : it->second;
}

Experiment* ExperimentRegistry::ById(const std::string& experiment_id) const {
  const auto it = by_experiment_id_.find(experiment_id);
  return it == by_experiment_id_.end() ? nullptr : it->second;
}

Experiment* ExperimentRegistry::InMemory(const std::string& name) const {
  for (auto it = experiments_.rbegin(); !name.empty() && it != experiments_.rend(); ++it) {
    if ((*it)->name() == name || (*it)->journal_name() == name) return it->get();
  }
  return nullptr;
}

Result<Experiment*> ExperimentRegistry::DefaultExperiment() const {
  const std::vector<Experiment*> unfinished = Unfinished();
  if (unfinished.size() == 1) return unfinished.front();
  if (unfinished.size() > 1) {
    std::vector<std::string> names;
    for (const Experiment* e : unfinished) names.push_back(e->name());
    return Status::FailedPrecondition(
        fmt::format("{} experiments are running ({}); name one with -e/--experiment", names.size(),
                    fmt::join(names, ", ")));
  }
  return experiments_.empty() ? nullptr : experiments_.back().get();
}

Result<Experiment*> ExperimentRegistry::Target(const std::string& experiment,
                                               const std::string& trial_id) const {
  Experiment* e = nullptr;
  if (!trial_id.empty()) {
    e = ForTrial(trial_id);
    if (e == nullptr || e->runner().FindTrial(trial_id) == nullptr)
      return Status::NotFound("no trial " + trial_id);
    if (!experiment.empty() && experiment != e->name() && experiment != e->journal_name()) {
      return Status::NotFound(fmt::format("no trial {} in experiment {} (it is {}'s)", trial_id,
                                          experiment, e->journal_name()));
    }
  } else if (!experiment.empty()) {
    e = InMemory(experiment);
    if (e == nullptr) {
      std::vector<std::string> names;
      for (const Experiment* x : Unfinished()) names.push_back(x->name());
      return Status::NotFound(
          fmt::format("no experiment {} runs in this scheduler; running: {}", experiment,
                      names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "))));
    }
  } else {
    auto found = DefaultExperiment();
    if (!found.ok()) return found.status();
    if (*found == nullptr) return Status::NotFound("no experiment has been submitted");
    e = *found;
  }
  if (e->phase() == Experiment::Phase::kResuming) {
    return Status::FailedPrecondition(fmt::format(
        "experiment {} is being resumed (its journal is being read); try again", e->name()));
  }
  return e;
}

Status ExperimentRegistry::NameFree(const std::string& name) const {
  if (claimed_names_.contains(name)) {
    return Status::FailedPrecondition(
        fmt::format("experiment {} is being submitted or resumed; try again", name));
  }
  for (const Experiment* e : Unfinished()) {
    if (e->name() == name) {
      return Status::FailedPrecondition(fmt::format(
          "experiment {} is still running (journal {}); stop it first, or give this one "
          "another name",
          name, e->journal_name()));
    }
  }
  return Status::Ok();
}

std::string ExperimentRegistry::ExperimentDir(const ExperimentSpec& spec,
                                              const std::string& results_folder) const {
  const bool deployed = !options_.results_dir.empty() && spec.results_dir_beside_file;
  return (deployed ? options_.results_dir : spec.results_dir) + "/" +
         (results_folder.empty() ? spec.name : results_folder);
}

void ExperimentRegistry::StepRunning() {
  for (auto& owned : experiments_) {
    Experiment* e = owned.get();
    if (e->phase() != Experiment::Phase::kRunning) continue;
    e->runner().Step();
    if (!e->runner().IsFinished()) continue;
    e->MarkEnded();
    spdlog::info("Experiment {} ended: {} ({})", e->name(),
                 ExperimentStatusName(e->runner().status()), e->runner().end_reason());
    if (Unfinished().empty()) {
      // Give back to the system what the runs' transient buffers (result batches, journal
      // records, the file writer's queue) left free in malloc's arenas.
      malloc_trim(0);
      const struct mallinfo2 heap = mallinfo2();
      spdlog::info(
          "Heap after the experiment: {} bytes in use, {} free in the main arena, {} mmapped",
          heap.uordblks, heap.fordblks, heap.hblkhd);
    }
  }
}

void ExperimentRegistry::AfterRound(int64_t snapshot_every_records) {
  // An ended experiment may still release resources and append records (a late checkpoint).
  for (auto& e : experiments_) e->AfterRound(snapshot_every_records);
}

void ExperimentRegistry::StepStateFiles() {
  // experiment_state.json of each unfinished experiment, every state_file_interval or 20 times
  // what building it cost the loop (at most 5% of its time, as Ray Tune's "auto" checkpoint
  // period), built kStateFileTrialsPerRound trials a round across the experiments.
  const SteadyTime now = clock_.Now();
  if (!state_file_pass_ && now < next_state_file_) return;
  if (!state_file_pass_) state_file_pass_ = StateFilePass{now, {}, Unfinished()};
  std::vector<Experiment*>& waiting = state_file_pass_->waiting;
  size_t budget = kStateFileTrialsPerRound;
  while (!waiting.empty() && budget > 0) {
    // One that ended meanwhile wrote its file at its end (WriteStateFile).
    if (waiting.front()->phase() == Experiment::Phase::kEnded ||
        waiting.front()->recorder().StepStateFile(budget)) {
      waiting.erase(waiting.begin());
    }
  }
  state_file_pass_->cost += clock_.Now() - now;
  if (waiting.empty()) {
    next_state_file_ =
        state_file_pass_->started +
        std::max<SteadyTime::duration>(options_.state_file_interval, 20 * state_file_pass_->cost);
    state_file_pass_.reset();
  }
}

void ExperimentRegistry::WriteStateFiles() {
  for (auto& e : experiments_) e->recorder().WriteStateFile();
}

void ExperimentRegistry::RetryJournals() {
  for (auto& e : experiments_) e->journal().RetryNow();
}

}  // namespace tunebus
