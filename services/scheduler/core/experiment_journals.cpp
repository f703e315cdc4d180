// ExperimentRegistry's experiments that are only in the store's journals: the release of finished
// ones from memory (a read-only copy kept in the finished cache when it fits), the experiment a
// read request names (finished ones loaded read-only, kept in the finished cache), and the lsx
// rows. Journals are read
// asynchronously with the JournalReader; each callback looks at the registry again, since the
// loop served others meanwhile.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <malloc.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <utility>

#include "libs/tune/runner_queries.hpp"
#include "services/scheduler/control/trial_json.hpp"
#include "services/scheduler/core/experiment.hpp"
#include "services/scheduler/core/experiment_registry.hpp"

namespace tunebus {

using nlohmann::json;

namespace {

// Beyond the resume's reattach timer, before an ended experiment is released.
constexpr bus::Duration kTimerMargin{1000};

// A read of a cached finished experiment with at least this many trials is followed by
// malloc_trim(3): the reply built from it (a row per trial) was freed between the cached
// entries' pages, where the heap's top trimming does not reach (12,000 trials: +69 MB resident
// per read without it, docs/explanation/performance/memory.md).
constexpr size_t kTrimAfterReadTrials = 1000;

// An experiment's lsx row.
json LsxRow(const std::string& name, const std::string& journal, ExperimentStatus status,
            const std::vector<Trial>& trials, int64_t total, double submitted_at_s) {
  return {{"name", name},
          {"journal", journal},
          {"status", ExperimentStatusName(status)},
          {"counts", TrialCountsJson(trials)},
          {"total", total},
          {"submitted_at", submitted_at_s}};
}

// What the finished cache counts for a read-only experiment of `x` holding `trials`: its trials
// (and the runner's per-trial tables), its spec's text (kept, and parsed into the spec), the
// searcher state it restores (its trial scheduler is not restored).
size_t ReadOnlyBytes(const journal::ReplayedExperiment& x, const std::vector<Trial>& trials) {
  size_t bytes = sizeof(Experiment) + 2 * x.spec_yaml.size() + JsonBytes(x.searcher_state);
  for (const json& delta : x.searcher_deltas) bytes += JsonBytes(delta);
  for (const Trial& t : trials) bytes += TrialBytes(t) + kRunnerBytesPerTrial;
  return bytes;
}

}  // namespace

size_t ExperimentRegistry::ReleaseFinished() {
  const SteadyTime now = clock_.Now();
  std::vector<Experiment*> due;
  for (const auto& e : experiments_) {
    if (!e->Quiet()) {
      quiet_since_.erase(e.get());
      continue;
    }
    const SteadyTime since = quiet_since_.try_emplace(e.get(), now).first->second;
    // Past every request's timeout and the resume's reattach timer: nothing calls back.
    if (now - since >= std::max(options_.release_after, options_.reattach_grace + kTimerMargin))
      due.push_back(e.get());
  }
  for (Experiment* e : due) {
    quiet_since_.erase(e);
    if (auto r = by_experiment_id_.find(e->experiment_id());
        r != by_experiment_id_.end() && r->second == e) {
      by_experiment_id_.erase(r);
    }
    if (state_file_pass_) std::erase(state_file_pass_->waiting, e);
    released_counts_[e->journal_name()] = CountByStatus(e->runner().trials());
    // Its lsx row as a read from its journal would give it, at the journal's length now.
    const std::vector<Trial>& trials = e->runner().trials();
    lsx_rows_[e->journal_name()] = {
        e->journal().store_seq(), LsxRow(e->name(), e->journal_name(), e->runner().status(), trials,
                                         int64_t(trials.size()), e->identity().submitted_at_s)};
    journals_.NoteLength(e->journal_name(), e->journal().store_seq());
    spdlog::info(
        "Experiment {} ({} trials) released from memory: it ended and its journal and files are "
        "complete",
        e->name(), trials.size());
    CacheReleased(*e);
    std::erase_if(experiments_, [e](const std::unique_ptr<Experiment>& x) { return x.get() == e; });
    ++released_;
  }
  if (!due.empty()) malloc_trim(0);
  return due.size();
}

void ExperimentRegistry::CacheReleased(const Experiment& e) {
  const SteadyTime t0 = clock_.Now();
  journal::ReplayedExperiment state = e.EndedState();
  const std::vector<Trial>& trials = e.runner().trials();
  const size_t bytes = ReadOnlyBytes(state, trials);
  if (bytes > journaled_.capacity_bytes()) {
    spdlog::info(
        "Experiment {}: its read-only form (about {} bytes) is over the finished cache's {} "
        "bytes; reads of it come from journal {}",
        e.name(), bytes, journaled_.capacity_bytes(), e.journal_name());
    return;
  }
  state.trials = trials;  // a copy: each string and vector at its size, as a replay makes them
  const uint64_t length = state.records;
  auto loaded = ReadOnly(e.journal_name(), length, std::move(state));
  if (!loaded.ok()) {
    spdlog::warn("Experiment {}: no read-only copy kept ({}); reads of it come from journal {}",
                 e.name(), loaded.status().ToString(), e.journal_name());
    return;
  }
  journaled_.Put(e.journal_name(), length, std::move(*loaded), bytes);
  spdlog::info(
      "Experiment {}: read-only copy kept in the finished cache (about {} bytes, {:.3f} s; the "
      "cache holds {} bytes of {})",
      e.name(), bytes, clock_.SecondsSince(t0), journaled_.bytes(), journaled_.capacity_bytes());
}

Result<std::unique_ptr<Experiment>> ExperimentRegistry::ReadOnly(
    const std::string& journal, uint64_t last_seq, journal::ReplayedExperiment replayed) {
  auto spec = ParseExperimentYaml(replayed.spec_yaml, replayed.identity.base_dir,
                                  replayed.identity.source_name);
  if (!spec.ok()) return spec.status();
  std::string experiment_dir = ExperimentDir(*spec, replayed.identity.results_folder);
  return Experiment::LoadReadOnly(std::move(*spec), std::move(experiment_dir), journal,
                                  std::move(replayed), last_seq, clock_);
}

std::map<TrialStatus, int64_t> ExperimentRegistry::ReleasedCounts() const {
  std::map<TrialStatus, int64_t> sum;
  for (const auto& [journal, counts] : released_counts_) {
    for (const auto& [status, n] : counts) sum[status] += n;
  }
  return sum;
}

json ExperimentRegistry::MemoryJson() const {
  return {{"resident", experiments_.size()},
          {"released", released_},
          {"finished_cache",
           {{"entries", journaled_.size()},
            {"bytes", journaled_.bytes()},
            {"capacity_bytes", journaled_.capacity_bytes()}}}};
}

void ExperimentRegistry::FindExperiment(const std::string& name,
                                        std::function<void(Result<Experiment*>)> then) {
  if (name.empty()) {
    auto found = DefaultExperiment();
    if (!found.ok() || *found != nullptr) return then(found);
  }
  if (Experiment* e = InMemory(name)) return then(e);
  journals_.List([this, name, then](Result<std::vector<JournalSummary>> journals) {
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

void ExperimentRegistry::LoadJournaled(const JournalSummary& j,
                                       std::function<void(Result<Experiment*>)> then) {
  if (Experiment* cached = journaled_.Find(j.journal, j.last_seq)) {
    const bool large = cached->runner().trials().size() >= kTrimAfterReadTrials;
    then(cached);
    if (large) malloc_trim(0);
    return;
  }
  const SteadyTime t0 = clock_.Now();
  journals_.Replay(
      j.journal, j.last_seq, [this, j, t0, then](Result<journal::ReplayedExperiment>&& replayed) {
        if (!replayed.ok()) return then(replayed.status());
        const uint64_t records = replayed->records;
        const size_t bytes = ReadOnlyBytes(*replayed, replayed->trials);
        auto loaded = ReadOnly(j.journal, j.last_seq, std::move(*replayed));
        if (!loaded.ok()) return then(loaded.status());
        std::unique_ptr<Experiment> e = std::move(*loaded);
        spdlog::info(
            "Loaded experiment {} read-only from journal {} ({} records, {} trials, about {} "
            "bytes, {:.3f} s)",
            e->name(), j.journal, records, e->runner().trials().size(), bytes,
            clock_.SecondsSince(t0));
        then(journaled_.Put(j.journal, j.last_seq, std::move(e), bytes));
        // The reply is out: the cache goes back within its budget, and what the replay's pages
        // left free in malloc's arenas goes back to the system.
        journaled_.Trim();
        malloc_trim(0);
      });
}

void ExperimentRegistry::JournalRow(const JournalLength& j,
                                    std::function<void(Result<json>)> then) {
  if (auto it = lsx_rows_.find(j.journal);
      it != lsx_rows_.end() && it->second.first == j.last_seq) {
    return then(it->second.second);
  }
  journals_.Replay(
      j.journal, j.last_seq, [this, j, then](Result<journal::ReplayedExperiment>&& replayed) {
        if (!replayed.ok()) return then(replayed.status());
        const journal::ReplayedExperiment& x = *replayed;
        json row = LsxRow(ExperimentNameOfJournal(j.journal), j.journal,
                          x.ended_status.value_or(ExperimentStatus::kInterrupted), x.trials,
                          int64_t(x.trials.size()), x.identity.submitted_at_s);
        lsx_rows_[j.journal] = {j.last_seq, row};
        then(std::move(row));
        malloc_trim(0);  // what the replay's pages left free in malloc's arenas
      });
}

void ExperimentRegistry::ListRows(std::vector<JournalLength> lengths,
                                  std::function<json(const Experiment&)> live_extra,
                                  std::function<void(Result<json>)> then) {
  // Rows of journals not in memory (replayed, or cached by length), joined; the rows of the
  // live experiments are made when all are in (the loop ran meanwhile).
  struct Join {
    std::map<std::string, json> rows;  // by journal
    size_t waiting = 0;
    bool failed = false;
  };
  auto join = std::make_shared<Join>();
  std::set<std::string> listed, in_memory;
  for (const auto& e : experiments_) in_memory.insert(e->journal_name());
  std::vector<JournalLength> wanted;
  for (const JournalLength& j : lengths) {
    listed.insert(j.journal);
    if (!in_memory.contains(j.journal)) wanted.push_back(j);
  }
  std::erase_if(lsx_rows_, [&listed](const auto& kv) { return !listed.contains(kv.first); });
  join->waiting = wanted.size();
  if (wanted.empty()) return then(LiveRows({}, live_extra));
  for (const JournalLength& j : wanted) {
    JournalRow(j, [this, join, live_extra, then, journal = j.journal](Result<json> row) {
      if (join->failed) return;
      if (!row.ok()) {
        join->failed = true;
        return then(row.status());
      }
      join->rows[journal] = std::move(*row);
      if (--join->waiting == 0) then(LiveRows(std::move(join->rows), live_extra));
    });
  }
}

json ExperimentRegistry::LiveRows(std::map<std::string, json> rows,
                                  const std::function<json(const Experiment&)>& live_extra) const {
  json body = json::array();
  for (const auto& e : experiments_) {
    rows.erase(e->journal_name());
    body.push_back(LsxRow(e->name(), e->journal_name(), e->runner().status(), e->runner().trials(),
                          e->runner().TotalTrials(), e->identity().submitted_at_s));
    if (live_extra) body.back().update(live_extra(*e));
  }
  for (auto& [journal, row] : rows) body.push_back(std::move(row));
  std::sort(body.begin(), body.end(), [](const json& a, const json& b) {
    return a.value("submitted_at", 0.0) < b.value("submitted_at", 0.0);
  });
  return body;
}

}  // namespace tunebus
