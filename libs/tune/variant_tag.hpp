// How a sampled value appears in a trial's tag (Variant.tag, Ray Tune's experiment_tag): doubles
// "{:.4g}", strings raw with '/' replaced by '_', anything else compact JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tunebus {

std::string TagValue(const nlohmann::json& value);

/// How a choice's conditional branch (a map holding samplers, VariantGenerator) appears in a
/// tag: TagValue of its one constant leaf when it has exactly one ({type: adam, lr: {...}} ->
/// "adam"), else its index in the choice ("2"). The branch's samplers follow as their own
/// "path=value" entries.
std::string BranchTag(const nlohmann::json& branch, size_t index);

}  // namespace tunebus
