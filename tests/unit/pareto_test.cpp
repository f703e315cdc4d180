// Pareto helpers: loss vectors of results, dominance, non-dominated sorting, crowding distance
// and the exact hypervolume, against values computed by hand (and, for the hypervolume in 3 and
// 4 objectives, against counting the unit cells of an integer grid).
#include "libs/tune/pareto.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace tunebus {
namespace {

using nlohmann::json;
using Points = std::vector<std::vector<double>>;

TEST(ParetoTest, LossesNegateMaxMetricsAndRefuseMissingOrNonFiniteValues) {
  // val_accuracy is maximised, latency_ms minimised: the loss vector is (-acc, latency).
  const std::vector<Objective> objectives = {{"val_accuracy", "max"}, {"latency_ms", "min"}};
  auto losses = Losses(objectives, json{{"val_accuracy", 0.9}, {"latency_ms", 12}});
  ASSERT_TRUE(losses.has_value());
  EXPECT_EQ(*losses, (std::vector<double>{-0.9, 12.0}));
  EXPECT_FALSE(Losses(objectives, json{{"val_accuracy", 0.9}}).has_value());
  EXPECT_FALSE(Losses(objectives, json{{"val_accuracy", 0.9}, {"latency_ms", "12"}}));
  EXPECT_FALSE(Losses(objectives, json{{"val_accuracy", true}, {"latency_ms", 12}}));
  EXPECT_FALSE(
      Losses(objectives, json{{"val_accuracy", std::nan("")}, {"latency_ms", 1}}).has_value());
  EXPECT_FALSE(Losses(objectives, json{{"val_accuracy", 0.5},
                                       {"latency_ms", std::numeric_limits<double>::infinity()}})
                   .has_value());
  EXPECT_FALSE(Losses(objectives, json::array()).has_value());
}

TEST(ParetoTest, DominanceNeedsOneStrictlyBetterEntryAndNoWorseOne) {
  EXPECT_TRUE(Dominates({1, 2}, {1, 3}));
  EXPECT_FALSE(Dominates({1, 3}, {1, 2}));
  EXPECT_FALSE(Dominates({1, 2}, {1, 2}));  // equal: neither dominates
  EXPECT_FALSE(Dominates({1, 3}, {2, 2}));  // a trade-off
  EXPECT_FALSE(Dominates({2, 2}, {1, 3}));
}

TEST(ParetoTest, NonDominatedSortGivesTheFrontsInOrder) {
  // 0 (1,5), 1 (2,3), 2 (3,1) and 5 (1,5) trade off; 3 (2,4) is dominated by 1 only; 4 (3,4) by
  // 1 and 3. Equal points 0 and 5 share the front.
  const Points losses = {{1, 5}, {2, 3}, {3, 1}, {2, 4}, {3, 4}, {1, 5}};
  const auto fronts = NonDominatedSort(losses);
  ASSERT_EQ(fronts.size(), 3u);
  EXPECT_EQ(fronts[0], (std::vector<size_t>{0, 1, 2, 5}));
  EXPECT_EQ(fronts[1], (std::vector<size_t>{3}));
  EXPECT_EQ(fronts[2], (std::vector<size_t>{4}));
  EXPECT_EQ(ParetoFront(losses), fronts[0]);
  EXPECT_TRUE(NonDominatedSort({}).empty());
  EXPECT_TRUE(ParetoFront({}).empty());
}

TEST(ParetoTest, CrowdingDistanceSumsNeighbourGapsOverEachObjectivesRange) {
  // Objective 0 spans 1..5 (range 4), objective 1 spans 0..5 (range 5). Member (2,3): gaps
  // (3-1)/4 + (5-2.5)/5 = 1.0; member (3,2.5): (5-2)/4 + (3-0)/5 = 1.35; the extremes infinite.
  const Points losses = {{9, 9}, {1, 5}, {2, 3}, {3, 2.5}, {5, 0}};
  const std::vector<size_t> front = {4, 2, 1, 3};
  const auto d = CrowdingDistance(losses, front);
  const double inf = std::numeric_limits<double>::infinity();
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0], inf);
  EXPECT_DOUBLE_EQ(d[1], 1.0);
  EXPECT_EQ(d[2], inf);
  EXPECT_DOUBLE_EQ(d[3], 1.35);
}

TEST(ParetoTest, CrowdingDistanceSkipsAnObjectiveOnWhichAllMembersAreEqual) {
  // Objective 0 is 1 everywhere (adds nothing); objective 1: extremes infinite, middle 2/2.
  const Points losses = {{1, 1}, {1, 2}, {1, 3}};
  const auto d = CrowdingDistance(losses, {0, 1, 2});
  EXPECT_EQ(d[0], std::numeric_limits<double>::infinity());
  EXPECT_DOUBLE_EQ(d[1], 1.0);
  EXPECT_EQ(d[2], std::numeric_limits<double>::infinity());
  EXPECT_EQ(CrowdingDistance({{1, 1}, {1, 1}}, {0, 1}), (std::vector<double>{0, 0}));
  EXPECT_TRUE(CrowdingDistance(losses, {}).empty());
}

TEST(ParetoTest, HypervolumeInTwoObjectivesIsTheStaircaseArea) {
  // Staircase under (4,4): 3*1 + 2*1 + 1*1 = 6; (3,3) is dominated, (5,0) and (4,1) are not
  // strictly inside the reference: none adds anything.
  const Points points = {{1, 3}, {2, 2}, {3, 1}, {3, 3}, {5, 0}, {4, 1}};
  EXPECT_DOUBLE_EQ(Hypervolume(points, {4, 4}), 6.0);
  EXPECT_DOUBLE_EQ(Hypervolume({{1, 3}}, {4, 4}), 3.0);
  EXPECT_DOUBLE_EQ(Hypervolume({}, {4, 4}), 0.0);
  EXPECT_DOUBLE_EQ(Hypervolume({{2}, {1}}, {4}), 3.0);
}

TEST(ParetoTest, HypervolumeInThreeAndFourObjectivesByInclusionExclusion) {
  // Three boxes of volume 2 under (2,2,2), every intersection the unit box at (1,1,1):
  // 3*2 - 3*1 + 1 = 4.
  EXPECT_DOUBLE_EQ(Hypervolume({{0, 1, 1}, {1, 0, 1}, {1, 1, 0}}, {2, 2, 2}), 4.0);
  EXPECT_DOUBLE_EQ(Hypervolume({{0, 1, 1}, {1, 0, 1}}, {2, 2, 2}), 3.0);
  EXPECT_DOUBLE_EQ(Hypervolume({{1, 1, 1}, {1, 1, 1}, {1.5, 1.5, 1.5}}, {2, 2, 2}), 1.0);
  EXPECT_DOUBLE_EQ(Hypervolume({{0, 0, 0, 0}}, {1, 2, 3, 4}), 24.0);
  EXPECT_DOUBLE_EQ(Hypervolume({{0, 1, 1, 1}, {1, 0, 1, 1}}, {2, 2, 2, 2}), 3.0);
}

// The unit cells of [0, side)^m dominated by some point (integer coordinates).
double CountCells(const Points& points, size_t m, int side) {
  double count = 0;
  std::vector<int> cell(m, 0);
  while (true) {
    for (const auto& p : points) {
      bool inside = true;
      for (size_t i = 0; i < m && inside; ++i) inside = p[i] <= cell[i];
      if (inside) {
        ++count;
        break;
      }
    }
    size_t i = 0;
    while (i < m && ++cell[i] == side) cell[i++] = 0;
    if (i == m) break;
  }
  return count;
}

TEST(ParetoTest, HypervolumeMatchesCountingGridCellsOnRandomIntegerPoints) {
  // Random integer points in [0, 6)^m under the reference (6, ..., 6): the hypervolume is the
  // number of unit cells some point dominates.
  std::mt19937 rng(7);
  for (size_t m : {2u, 3u, 4u}) {
    for (int round = 0; round < 20; ++round) {
      Points points(1 + rng() % 9, std::vector<double>(m));
      for (auto& p : points) {
        for (double& v : p) v = double(rng() % 6);
      }
      EXPECT_DOUBLE_EQ(Hypervolume(points, std::vector<double>(m, 6.0)), CountCells(points, m, 6))
          << "m " << m << " round " << round;
    }
  }
}

}  // namespace
}  // namespace tunebus
