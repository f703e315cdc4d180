#include "services/scheduler/dashboard/views/importance.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace tunebus::dashboard {

namespace {

// epsilon^2 of `values` grouped by `group` (0..k-1), clipped to [0, 1].
double EpsilonSquared(const std::vector<double>& values, const std::vector<size_t>& group,
                      size_t k) {
  const size_t n = values.size();
  if (n < 3 || k < 2 || n <= k) return 0;
  const double mean = std::accumulate(values.begin(), values.end(), 0.0) / double(n);
  std::vector<double> sum(k, 0.0);
  std::vector<size_t> count(k, 0);
  double ss_total = 0;
  for (size_t i = 0; i < n; ++i) {
    sum[group[i]] += values[i];
    ++count[group[i]];
    ss_total += (values[i] - mean) * (values[i] - mean);
  }
  if (!(ss_total > 0)) return 0;
  double ss_between = 0;
  size_t used = 0;  // groups that hold a trial
  for (size_t g = 0; g < k; ++g) {
    if (count[g] == 0) continue;
    ++used;
    const double d = sum[g] / double(count[g]) - mean;
    ss_between += double(count[g]) * d * d;
  }
  if (used < 2 || n <= used) return 0;
  const double ms_within = (ss_total - ss_between) / double(n - used);
  const double eps = (ss_between - double(used - 1) * ms_within) / ss_total;
  return std::clamp(eps, 0.0, 1.0);
}

}  // namespace

std::vector<ParamImportance> BinnedVarianceImportance(const std::vector<ParamColumn>& params,
                                                      const std::vector<double>& metric,
                                                      size_t max_bins) {
  std::vector<ParamImportance> out;
  for (const ParamColumn& p : params) {
    ParamImportance imp;
    imp.name = p.name;
    std::vector<double> values;
    std::vector<size_t> group;
    if (p.categorical) {
      std::map<std::string, size_t> ids;
      for (size_t i = 0; i < metric.size() && i < p.labels.size(); ++i) {
        if (!std::isfinite(metric[i]) || p.labels[i].empty()) continue;
        values.push_back(metric[i]);
        group.push_back(ids.try_emplace(p.labels[i], ids.size()).first->second);
      }
      imp.bins = ids.size();
    } else {
      std::vector<std::pair<double, double>> xy;  // (parameter, metric)
      for (size_t i = 0; i < metric.size() && i < p.numeric.size(); ++i) {
        if (std::isfinite(metric[i]) && std::isfinite(p.numeric[i])) {
          xy.emplace_back(p.numeric[i], metric[i]);
        }
      }
      std::sort(xy.begin(), xy.end());
      size_t distinct = 0;
      for (size_t i = 0; i < xy.size(); ++i) {
        if (i == 0 || xy[i].first != xy[i - 1].first) ++distinct;
      }
      const size_t k = std::min({max_bins, distinct, std::max<size_t>(2, xy.size() / 4)});
      // Equal-count bins by rank; equal values share the bin of their first rank.
      size_t bin = 0;
      for (size_t i = 0; i < xy.size(); ++i) {
        if (i == 0 || xy[i].first != xy[i - 1].first) bin = k == 0 ? 0 : i * k / xy.size();
        values.push_back(xy[i].second);
        group.push_back(bin);
      }
      imp.bins = k;
    }
    imp.trials = values.size();
    imp.variance_explained = EpsilonSquared(values, group, std::max<size_t>(imp.bins, 1));
    out.push_back(std::move(imp));
  }
  double total = 0;
  for (const ParamImportance& i : out) total += i.variance_explained;
  for (ParamImportance& i : out) i.importance = total > 0 ? i.variance_explained / total : 0;
  std::sort(out.begin(), out.end(), [](const ParamImportance& a, const ParamImportance& b) {
    return a.importance != b.importance ? a.importance > b.importance : a.name < b.name;
  });
  return out;
}

}  // namespace tunebus::dashboard
