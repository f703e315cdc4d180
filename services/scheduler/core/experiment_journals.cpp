// ExperimentRegistry's experiments that are only in the store's journals: the experiment a read
// request names (finished ones loaded read-only), and the lsx rows. Journals are read
// asynchronously with the JournalReader; each callback looks at the registry again, since the
// loop served others meanwhile.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <utility>

#include "services/scheduler/control/trial_json.hpp"
#include "services/scheduler/core/experiment.hpp"
#include "services/scheduler/core/experiment_registry.hpp"

namespace tunebus {

using nlohmann::json;

namespace {

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

}  // namespace

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
  if (auto it = journaled_.find(j.journal);
      it != journaled_.end() && it->second->journal_base() == j.last_seq) {
    return then(it->second.get());
  }
  const SteadyTime t0 = clock_.Now();
  journals_.Replay(
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
