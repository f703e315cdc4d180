// Near misses for error messages ("did you mean loguniform?"): the Levenshtein distance
// (insertions, deletions, substitutions; a swap of two neighbours counts as one, as in
// Damerau's optimal string alignment) between a word and the names it should have been.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tunebus {

/// Edits that turn `a` into `b` (optimal string alignment distance).
size_t EditDistance(std::string_view a, std::string_view b);
/// The name in `names` nearest to `word` if it is at most `max_edits` away and is not `word`
/// itself; the first such on a tie.
std::optional<std::string> NearMiss(std::string_view word, const std::vector<std::string>& names,
                                    size_t max_edits = 2);

}  // namespace tunebus
