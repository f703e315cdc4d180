#include "libs/tune/make_trial_scheduler.hpp"

#include "libs/tune/asha_scheduler.hpp"
#include "libs/tune/hyperband_for_bohb.hpp"
#include "libs/tune/hyperband_scheduler.hpp"
#include "libs/tune/median_stopping_rule.hpp"
#include "libs/tune/pbt_scheduler.hpp"

namespace tunebus {

Result<std::unique_ptr<TrialScheduler>> MakeTrialScheduler(const std::string& name,
                                                           const nlohmann::json& config,
                                                           const std::string& metric,
                                                           const std::string& mode, uint64_t seed) {
  using Ptr = std::unique_ptr<TrialScheduler>;
  if (name == "fifo" || name.empty()) return Ptr(new FifoScheduler());
  if (name == "asha") return AshaScheduler::Create(config, metric, mode, seed);
  if (name == "hyperband") return HyperBandScheduler::Create(config, metric, mode);
  if (name == "hyperband_bohb") return HyperBandForBohb::Create(config, metric, mode);
  if (name == "median_stopping") return MedianStoppingRule::Create(config, metric, mode);
  if (name == "pbt") return PopulationBasedTraining::Create(config, metric, mode, seed);
  return Status::InvalidArgument("type: unknown trial scheduler '" + name + "'");
}

}  // namespace tunebus
