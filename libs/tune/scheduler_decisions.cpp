#include "libs/tune/scheduler_decisions.hpp"

namespace tunebus {

void SchedulerDecisionLog::Add(SchedulerDecision d) {
  entries_.push_back(std::move(d));
  ++total_;
  while (entries_.size() > kMaxEntries) entries_.pop_front();
}

nlohmann::json SchedulerDecisionLog::ToJson() const {
  nlohmann::json list = nlohmann::json::array();
  for (const SchedulerDecision& d : entries_) {
    list.push_back({{"kind", d.kind},
                    {"trial_id", d.trial_id},
                    {"scheduler", d.scheduler},
                    {"training_iteration", d.training_iteration},
                    {"time_total_s", d.time_total_s},
                    {"at_s", d.at_s},
                    {"detail", d.detail}});
  }
  return {{"total", total_},
          {"dropped", total_ - int64_t(entries_.size())},
          {"decisions", std::move(list)}};
}

}  // namespace tunebus
