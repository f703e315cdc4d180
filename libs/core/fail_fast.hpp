// FailFast: what a trial that ends in ERROR does to its experiment (Ray Tune's tune.run
// `fail_fast`). Spelled as the experiment file's `fail_fast` value: false, true or raise.
#pragma once

#include <string_view>

#include "libs/core/enum_names.hpp"
#include "libs/core/status.hpp"

namespace tunebus {

enum class FailFast {
  kOff,             // false: an ERROR trial changes nothing for the others
  kStopExperiment,  // true: stop every unfinished trial, the experiment ends ERROR
  kRaise,           // raise: the experiment ends ERROR at once, other trials keep their status
};

inline constexpr EnumName<FailFast> kFailFastNames[] = {
    {FailFast::kOff, "false"},
    {FailFast::kStopExperiment, "true"},
    {FailFast::kRaise, "raise"},
};

/// "false" | "true" | "raise".
inline const char* FailFastName(FailFast mode) { return NameIn(kFailFastNames, mode); }
/// Parses "false", "true" or "raise". Errors: InvalidArgument naming the word.
inline Result<FailFast> ParseFailFast(std::string_view word) {
  return ParseIn(kFailFastNames, word, "fail_fast");
}

}  // namespace tunebus
