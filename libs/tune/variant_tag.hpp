// How a sampled value appears in a trial's tag (Variant.tag, Ray Tune's experiment_tag): doubles
// "{:.4g}", strings raw with '/' replaced by '_', anything else compact JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tunebus {

std::string TagValue(const nlohmann::json& value);

}  // namespace tunebus
