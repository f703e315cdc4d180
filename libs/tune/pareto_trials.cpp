#include "libs/tune/pareto_trials.hpp"

#include <algorithm>
#include <optional>

namespace tunebus {

std::vector<const Trial*> ParetoTrials(const std::vector<Trial>& trials,
                                       const std::vector<Objective>& objectives) {
  if (objectives.size() < 2) return {};
  std::vector<const Trial*> candidates;
  std::vector<std::vector<double>> losses;
  for (const Trial& t : trials) {
    if (t.status != TrialStatus::kTerminated || t.last_result_msgpack.empty()) continue;
    std::optional<std::vector<double>> l = Losses(objectives, t.LastResult());
    if (!l) continue;
    candidates.push_back(&t);
    losses.push_back(std::move(*l));
  }
  // In lexicographic order of the losses (then by index) a trial's dominators come before it,
  // and a dominated trial is dominated by a member of the front (dominance is transitive): so
  // one pass that keeps each trial no kept one dominates gives the front, in this order, which
  // sorts by the first objective.
  std::vector<size_t> order(candidates.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (losses[a] != losses[b]) return losses[a] < losses[b];
    return candidates[a]->index < candidates[b]->index;
  });
  std::vector<size_t> front;
  for (size_t i : order) {
    const bool dominated = std::any_of(front.begin(), front.end(),
                                       [&](size_t f) { return Dominates(losses[f], losses[i]); });
    if (!dominated) front.push_back(i);
  }
  std::vector<const Trial*> out;
  out.reserve(front.size());
  for (size_t i : front) out.push_back(candidates[i]);
  return out;
}

}  // namespace tunebus
