#include "services/scheduler/control/retention_sweeper.hpp"

#include <spdlog/spdlog.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "libs/spec/experiment_spec.hpp"
#include "services/scheduler/core/experiment.hpp"
#include "services/scheduler/core/experiment_registry.hpp"

namespace tunebus {

using nlohmann::json;

RetentionSweeper::RetentionSweeper(RetentionRules rules, ExperimentRegistry& experiments,
                                   const Clock& clock, DeleteFn delete_experiment)
    : rules_(rules),
      experiments_(experiments),
      clock_(clock),
      delete_(std::move(delete_experiment)) {}

RetentionSweeper::~RetentionSweeper() {
  if (loop_ != nullptr && timer_ != 0) loop_->CancelTimer(timer_);
}

void RetentionSweeper::Start(bus::EventLoop& loop) {
  loop_ = &loop;
  if (rules_.any()) {
    spdlog::info(
        "Retention: keep the {} newest finished experiments; delete those ended {} days "
        "ago (0: that rule is off)",
        rules_.keep_newest, rules_.max_age_days);
  }
  timer_ = loop.AddPeriodic(kPassInterval, [this] {
    if (Active()) Sweep();
  });
  Sweep();
}

bool RetentionSweeper::Active() const {
  if (rules_.any() || any_section_) return true;
  for (const auto& e : experiments_.experiments()) {
    if (e->spec().retention) return true;
  }
  return false;
}

std::string RetentionSweeper::Expires(const std::string& journal) const {
  auto it = verdicts_.find(journal);
  if (it == verdicts_.end()) return "";
  return RetentionExpiresText(rules_, it->second);
}

void RetentionSweeper::Sweep() {
  if (state_ != State::kIdle) return;
  state_ = State::kListing;
  experiments_.journals().List([this](Result<std::vector<JournalSummary>> journals) {
    if (!journals.ok()) {
      spdlog::warn("Retention: cannot list the journals ({}); the next pass retries",
                   journals.status().ToString());
      return EndPass();
    }
    Listed(std::move(*journals));
  });
}

void RetentionSweeper::Listed(std::vector<JournalSummary> journals) {
  // Held here: unfinished experiments (running, paused, resuming) and names being submitted
  // or resumed.
  std::set<std::string> held;
  for (const Experiment* e : experiments_.Unfinished()) held.insert(e->journal_name());
  finished_.clear();
  std::set<std::string> listed;
  for (JournalSummary& j : journals) {
    listed.insert(j.journal);
    if (!j.ended || held.contains(j.journal)) continue;
    if (experiments_.Claimed(ExperimentNameOfJournal(j.journal)) ||
        experiments_.Claimed(j.journal)) {
      continue;
    }
    finished_.push_back(std::move(j));
  }
  std::erase_if(sections_, [&listed](const auto& kv) { return !listed.contains(kv.first); });
  state_ = State::kReading;
  ReadSections(0);
}

void RetentionSweeper::ReadSections(size_t i) {
  while (i < finished_.size() && sections_.contains(finished_[i].journal)) ++i;
  if (i == finished_.size()) return Judge();
  const JournalSummary j = finished_[i];
  auto first = std::make_shared<json>();
  experiments_.journals().ForEachRecord(
      j.journal, 1, 1, [first](const json& r) { *first = r; },
      [this, i, j, first](Status s) {
        Section section;
        if (!s.ok()) {
          spdlog::warn("Retention: cannot read journal {} ({}); the next pass retries", j.journal,
                       s.ToString());
          return EndPass();
        }
        if (first->is_object()) {
          auto spec =
              ParseExperimentYaml(first->value("spec_yaml", ""), first->value("base_dir", ""),
                                  first->value("source_name", ""));
          if (spec.ok() && spec->retention) {
            section = {spec->retention->days, spec->retention->keep_results, true};
          } else if (!spec.ok()) {
            spdlog::warn(
                "Retention: journal {}'s experiment file does not parse ({}); only the "
                "scheduler's rules apply to it",
                j.journal, spec.status().message());
          }
        }
        any_section_ = any_section_ || section.given;
        sections_[j.journal] = section;
        ReadSections(i + 1);
      });
}

void RetentionSweeper::Judge() {
  std::vector<FinishedExperiment> finished;
  finished.reserve(finished_.size());
  for (const JournalSummary& j : finished_) {
    const Section& s = sections_[j.journal];
    finished.push_back(
        {j.journal, j.ended_at_s > 0 ? j.ended_at_s : j.submitted_at_s, s.days, s.keep_results});
  }
  verdicts_.clear();
  doomed_.clear();
  for (RetentionVerdict& v : JudgeRetention(rules_, std::move(finished), clock_.WallSeconds())) {
    if (v.delete_now) doomed_.push_back(v);
    verdicts_[v.journal] = std::move(v);
  }
  state_ = State::kDeleting;
  DeleteNext(0);
}

void RetentionSweeper::DeleteNext(size_t i) {
  if (i == doomed_.size()) return EndPass();
  const RetentionVerdict v = doomed_[i];
  spdlog::info("Retention: deleting experiment {} ({}){}", v.journal, v.rule,
               v.keep_results ? "; its results folder is kept (retention.keep_results)" : "");
  delete_(v.journal, v.keep_results, [this, i, v](Status s) {
    if (s.ok()) {
      ++deleted_;
      verdicts_.erase(v.journal);
      sections_.erase(v.journal);
    } else {
      spdlog::warn("Retention: deleting experiment {} failed ({}); the next pass retries",
                   v.journal, s.ToString());
    }
    DeleteNext(i + 1);
  });
}

void RetentionSweeper::EndPass() {
  finished_.clear();
  doomed_.clear();
  state_ = State::kIdle;
}

}  // namespace tunebus
