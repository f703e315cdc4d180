// Which experiment a message is for: worker messages by their trial id's experiment id
// (Scheduler::ForTrial), control requests by the experiment they name or the only unfinished
// one (Scheduler::Target, DefaultExperiment), and the rule that names are unique among
// unfinished experiments (NameFree).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "services/scheduler/core/experiment.hpp"
#include "services/scheduler/scheduler.hpp"

namespace tunebus {

Experiment* Scheduler::Adopt(std::unique_ptr<Experiment> e) {
  Experiment* raw = e.get();
  experiments_.push_back(std::move(e));
  by_experiment_id_[raw->experiment_id()] = raw;
  return raw;
}

Experiment* Scheduler::ForTrial(const std::string& trial_id) {
  const size_t underscore = trial_id.rfind('_');
  if (underscore == std::string::npos) return nullptr;
  const auto it = by_experiment_id_.find(std::string_view(trial_id).substr(0, underscore));
  return it == by_experiment_id_.end() ? nullptr : it->second;
}

std::vector<Experiment*> Scheduler::Unfinished() const {
  std::vector<Experiment*> out;
  for (const auto& e : experiments_) {
    if (e->phase() != Experiment::Phase::kEnded) out.push_back(e.get());
  }
  return out;
}

Status Scheduler::NameFree(const std::string& name) const {
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

Result<Experiment*> Scheduler::DefaultExperiment() {
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

Result<Experiment*> Scheduler::Target(const std::string& experiment, const std::string& trial_id) {
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
  if (Status s = JournalWritable(e); !s.ok()) return s;
  return e;
}

}  // namespace tunebus
