#include "libs/tune/trial_scheduler.hpp"

namespace tunebus {

const char* DecisionName(Decision d) {
  switch (d) {
    case Decision::kContinue: return "continue";
    case Decision::kPause: return "pause";
    case Decision::kStop: return "stop";
  }
  return "continue";
}

Result<std::unique_ptr<TrialScheduler>> MakeTrialScheduler(const std::string& name,
                                                           const nlohmann::json& config,
                                                           const std::string& metric,
                                                           const std::string& mode) {
  (void)config;
  (void)metric;
  (void)mode;
  if (name == "fifo" || name.empty()) return std::unique_ptr<TrialScheduler>(new FifoScheduler());
  return Status::InvalidArgument("unknown trial scheduler '" + name + "'");
}

}  // namespace tunebus
