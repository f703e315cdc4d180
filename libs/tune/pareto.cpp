#include "libs/tune/pareto.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace tunebus {
namespace {

using Point = std::vector<double>;

// The points strictly better than `reference` in every entry.
std::vector<Point> InsideReference(const std::vector<Point>& points, const Point& reference) {
  std::vector<Point> inside;
  inside.reserve(points.size());
  for (const Point& p : points) {
    bool ok = true;
    for (size_t i = 0; i < reference.size() && ok; ++i) ok = p[i] < reference[i];
    if (ok) inside.push_back(p);
  }
  return inside;
}

// Two objectives: sorted by the first, each point adds the slab between it and the best second
// objective seen so far. REQUIRES: every point inside the reference.
double SweepHypervolume2(std::vector<Point> points, const Point& reference) {
  std::sort(points.begin(), points.end());
  double volume = 0, best = reference[1];
  for (const Point& p : points) {
    if (p[1] < best) {
      volume += (reference[0] - p[0]) * (best - p[1]);
      best = p[1];
    }
  }
  return volume;
}

// The non-dominated points of `points`, each distinct vector once.
std::vector<Point> NonDominated(std::vector<Point> points) {
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  std::vector<Point> kept;
  kept.reserve(points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    bool dominated = false;
    for (size_t j = 0; j < points.size() && !dominated; ++j) {
      dominated = j != i && Dominates(points[j], points[i]);
    }
    if (!dominated) kept.push_back(points[i]);
  }
  return kept;
}

double BoxVolume(const Point& p, const Point& reference) {
  double v = 1;
  for (size_t i = 0; i < p.size(); ++i) v *= reference[i] - p[i];
  return v;
}

// WFG (While et al. 2012, figure 4): REQUIRES every point inside the reference.
double Wfg(std::vector<Point> points, const Point& reference) {
  if (points.empty()) return 0;
  if (reference.size() == 1) {
    double best = reference[0];
    for (const Point& p : points) best = std::min(best, p[0]);
    return reference[0] - best;
  }
  if (reference.size() == 2) return SweepHypervolume2(std::move(points), reference);
  // Sorted by the last objective, worst first, the limit sets are small (While et al., IV-B).
  std::sort(points.begin(), points.end(),
            [](const Point& a, const Point& b) { return a.back() > b.back(); });
  double volume = 0;
  std::vector<Point> limited;
  for (size_t k = 0; k < points.size(); ++k) {
    limited.clear();
    for (size_t j = k + 1; j < points.size(); ++j) {
      Point q(points[k].size());
      for (size_t i = 0; i < q.size(); ++i) q[i] = std::max(points[k][i], points[j][i]);
      limited.push_back(std::move(q));
    }
    volume += BoxVolume(points[k], reference) - Wfg(NonDominated(limited), reference);
  }
  return volume;
}

}  // namespace

std::optional<std::vector<double>> Losses(const std::vector<Objective>& objectives,
                                          const nlohmann::json& result) {
  if (!result.is_object()) return std::nullopt;
  std::vector<double> losses;
  losses.reserve(objectives.size());
  for (const Objective& o : objectives) {
    auto it = result.find(o.metric);
    if (it == result.end() || !it->is_number()) return std::nullopt;
    const double v = it->get<double>();
    if (!std::isfinite(v)) return std::nullopt;
    losses.push_back(o.mode == "max" ? -v : v);
  }
  return losses;
}

bool Dominates(const std::vector<double>& a, const std::vector<double>& b) {
  bool strictly = false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] > b[i]) return false;
    if (a[i] < b[i]) strictly = true;
  }
  return strictly;
}

std::vector<std::vector<size_t>> NonDominatedSort(const std::vector<std::vector<double>>& losses) {
  const size_t n = losses.size();
  std::vector<std::vector<size_t>> dominated(n);  // S_p: the points p dominates
  std::vector<size_t> count(n, 0);                // n_p: how many points dominate p
  for (size_t p = 0; p < n; ++p) {
    for (size_t q = p + 1; q < n; ++q) {
      if (Dominates(losses[p], losses[q])) {
        dominated[p].push_back(q);
        ++count[q];
      } else if (Dominates(losses[q], losses[p])) {
        dominated[q].push_back(p);
        ++count[p];
      }
    }
  }
  std::vector<std::vector<size_t>> fronts;
  std::vector<size_t> current;
  for (size_t p = 0; p < n; ++p) {
    if (count[p] == 0) current.push_back(p);
  }
  while (!current.empty()) {
    std::vector<size_t> next;
    for (size_t p : current) {
      for (size_t q : dominated[p]) {
        if (--count[q] == 0) next.push_back(q);
      }
    }
    std::sort(next.begin(), next.end());
    fronts.push_back(std::move(current));
    current = std::move(next);
  }
  return fronts;
}

std::vector<size_t> ParetoFront(const std::vector<std::vector<double>>& losses) {
  std::vector<std::vector<size_t>> fronts = NonDominatedSort(losses);
  if (fronts.empty()) return {};
  return std::move(fronts[0]);
}

std::vector<double> CrowdingDistance(const std::vector<std::vector<double>>& losses,
                                     const std::vector<size_t>& front) {
  const size_t n = front.size();
  std::vector<double> distance(n, 0.0);
  if (n == 0) return distance;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<size_t> order(n);
  for (size_t m = 0; m < losses[front[0]].size(); ++m) {
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return losses[front[a]][m] < losses[front[b]][m]; });
    const double low = losses[front[order.front()]][m];
    const double high = losses[front[order.back()]][m];
    if (low == high) continue;
    distance[order.front()] = inf;
    distance[order.back()] = inf;
    for (size_t i = 1; i + 1 < n; ++i) {
      distance[order[i]] +=
          (losses[front[order[i + 1]]][m] - losses[front[order[i - 1]]][m]) / (high - low);
    }
  }
  return distance;
}

double Hypervolume(const std::vector<std::vector<double>>& points,
                   const std::vector<double>& reference) {
  if (reference.empty()) return 0;
  std::vector<Point> inside = InsideReference(points, reference);
  if (reference.size() <= 2) return Wfg(std::move(inside), reference);
  return Wfg(NonDominated(std::move(inside)), reference);
}

}  // namespace tunebus
