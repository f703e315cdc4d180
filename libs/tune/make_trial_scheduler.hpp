// MakeTrialScheduler: the trial scheduler an experiment file names, built from its parameters.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "libs/core/status.hpp"
#include "libs/tune/trial_scheduler.hpp"

namespace tunebus {

/// Builds the trial scheduler named in an experiment file: "fifo" (or ""), "asha", "hyperband",
/// "hyperband_bohb", "median_stopping" or "pbt". `config` holds its parameters (the file's
/// `scheduler` map); `metric`/`mode` are the experiment's, used when the config names none (Ray
/// Tune's behaviour). `seed` seeds the schedulers that draw random numbers (ASHA's bracket choice,
/// PBT), so a run is reproducible.
/// Errors: InvalidArgument for an unknown name, or "<param>: <what is wrong>" (SchedulerParams).
Result<std::unique_ptr<TrialScheduler>> MakeTrialScheduler(const std::string& name,
                                                           const nlohmann::json& config,
                                                           const std::string& metric,
                                                           const std::string& mode,
                                                           uint64_t seed = 0);

}  // namespace tunebus
