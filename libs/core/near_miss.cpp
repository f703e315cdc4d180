#include "libs/core/near_miss.hpp"

#include <algorithm>

namespace tunebus {

size_t EditDistance(std::string_view a, std::string_view b) {
  // d[i][j]: edits from a[0, i) to b[0, j), three rows kept.
  std::vector<size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitute = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitute});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        current[j] = std::min(current[j], before[j - 2] + 1);  // neighbours swapped
      }
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[b.size()];
}

std::optional<std::string> NearMiss(std::string_view word, const std::vector<std::string>& names,
                                    size_t max_edits) {
  std::optional<std::string> best;
  size_t best_edits = max_edits + 1;
  for (const std::string& name : names) {
    const size_t edits = EditDistance(word, name);
    if (edits > 0 && edits < best_edits) {
      best = name;
      best_edits = edits;
    }
  }
  return best;
}

}  // namespace tunebus
