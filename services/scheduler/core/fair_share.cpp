#include "services/scheduler/core/fair_share.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <queue>
#include <tuple>

namespace tunebus {

namespace {

// True when every kind `per_trial` asks is in `capacity` (the cluster has some of it).
bool KindsExist(const Resources& per_trial, const Resources& capacity) {
  for (const auto& [kind, units] : per_trial.units_map()) {
    if (units > 0 && capacity.units(kind) <= 0) return false;
  }
  return true;
}

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "WeightedDrfQuotas: invariant broken: %s\n", what);
  std::abort();
}

}  // namespace

bool QuotasStillHold(const std::vector<int64_t>& quotas, const std::vector<int64_t>& wanted_then,
                     const std::vector<int64_t>& wanted_now) {
  for (size_t i = 0; i < quotas.size(); ++i) {
    const bool got_all = quotas[i] == wanted_then[i];
    if (got_all ? wanted_now[i] != wanted_then[i] : wanted_now[i] <= quotas[i]) return false;
  }
  return true;
}

double DominantShare(const Resources& held, const Resources& capacity) {
  double share = 0;
  for (const auto& [kind, units] : held.units_map()) {
    const int64_t total = capacity.units(kind);
    if (total > 0) share = std::max(share, double(units) / double(total));
  }
  return share;
}

std::vector<int64_t> WeightedDrfQuotas(const Resources& capacity,
                                       const std::vector<FairShareDemand>& demands) {
  std::vector<int64_t> quota(demands.size(), 0);
  // (weighted dominant share of what it holds so far, weighted attained service, index): the
  // smallest gets the next trial.
  using Entry = std::tuple<double, double, size_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> next;
  std::vector<double> step(demands.size(), 0);  // weighted share of one trial
  for (size_t i = 0; i < demands.size(); ++i) {
    const FairShareDemand& d = demands[i];
    Check(d.weight > 0 && d.wanted >= 0 && d.attained >= 0,
          "a weight <= 0, a negative wanted or a negative attained");
    const double share = DominantShare(d.per_trial, capacity);
    if (share <= 0 || !KindsExist(d.per_trial, capacity)) {
      quota[i] = d.wanted;  // nothing of the shared capacity to divide
      continue;
    }
    step[i] = share / d.weight;
    if (d.wanted > 0) next.emplace(0.0, d.attained / d.weight, i);
  }
  Resources left = capacity;
  while (!next.empty()) {
    const auto [share, attained, i] = next.top();
    next.pop();
    if (!demands[i].per_trial.FitsIn(left)) continue;  // its trials ask the same: none fits now
    left -= demands[i].per_trial;
    ++quota[i];
    if (quota[i] < demands[i].wanted) next.emplace(double(quota[i]) * step[i], attained, i);
  }
  std::map<std::string, int64_t, std::less<>> given;  // units of each kind the quotas hold
  for (size_t i = 0; i < demands.size(); ++i) {
    Check(quota[i] >= 0 && quota[i] <= demands[i].wanted, "a quota outside [0, wanted]");
    if (step[i] <= 0) continue;
    for (const auto& [kind, units] : demands[i].per_trial.units_map())
      given[kind] += units * quota[i];
  }
  for (const auto& [kind, units] : given)
    Check(units <= capacity.units(kind), "the quotas ask more than the capacity");
  return quota;
}

}  // namespace tunebus
