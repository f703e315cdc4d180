// Tests for Resources: fixed-point quantities (1/10000 units) per key (DESIGN.md "Trial
// lifecycle": 0.33 + 0.33 + 0.33 GPU never drifts below zero or above capacity).
#include "libs/core/resources.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>

namespace tunebus {
namespace {

Resources Make(const std::map<std::string, double>& amounts) {
  auto r = Resources::FromAmounts(amounts);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : Resources();
}

TEST(ResourcesTest, FromAmountsRoundsToNearestUnit) {
  // Amounts become integer units of 1/10000, rounded to nearest (half away from zero).
  Resources r =
      Make({{"cpu", 2.5}, {"gpu", 0.33333}, {"a", 0.00006}, {"b", 0.00005}, {"c", 0.00004}});
  EXPECT_EQ(r.units("cpu"), 25000);
  EXPECT_EQ(r.units("gpu"), 3333);
  EXPECT_EQ(r.units("a"), 1);
  EXPECT_EQ(r.units("b"), 1);
  // Rounds to zero units: the key is absent, like every zero quantity.
  EXPECT_EQ(r.units("c"), 0);
  EXPECT_EQ(r.units_map().count("c"), 0u);
  EXPECT_DOUBLE_EQ(r.amount("cpu"), 2.5);
  EXPECT_DOUBLE_EQ(r.amount("gpu"), 0.3333);
}

TEST(ResourcesTest, ZeroAmountsAndMissingKeysAreZero) {
  // A zero amount is not stored; an absent key reads as zero.
  Resources r = Make({{"cpu", 0.0}, {"gpu", 1.0}});
  EXPECT_EQ(r.units_map().size(), 1u);
  EXPECT_EQ(r.units("cpu"), 0);
  EXPECT_EQ(r.units("memory"), 0);
  EXPECT_DOUBLE_EQ(r.amount("memory"), 0.0);
  EXPECT_TRUE(Make({{"cpu", 0.0}}).empty());
  EXPECT_TRUE(Resources().empty());
}

TEST(ResourcesTest, NegativeNanAndInfiniteAmountsAreRejectedNamingTheKey) {
  // Each invalid amount is InvalidArgument and the message names the offending key.
  const std::map<std::string, double> bad[] = {
      {{"cpu", 1.0}, {"gpu", -0.5}},
      {{"cpu", 1.0}, {"gpu", std::nan("")}},
      {{"cpu", 1.0}, {"gpu", std::numeric_limits<double>::infinity()}},
      {{"cpu", 1.0}, {"gpu", -std::numeric_limits<double>::infinity()}},
      {{"cpu", 1.0}, {"gpu", 1e300}},  // overflows the fixed-point range
  };
  for (const auto& amounts : bad) {
    auto r = Resources::FromAmounts(amounts);
    ASSERT_FALSE(r.ok()) << amounts.at("gpu");
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("gpu"), std::string::npos) << r.status().message();
  }
}

TEST(ResourcesTest, FromUnitsRejectsNegativeUnitsAndDropsZero) {
  // Wire format: raw units; negative is InvalidArgument naming the key, zero is absent.
  auto ok = Resources::FromUnits({{"cpu", 10000}, {"gpu", 0}});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->units("cpu"), 10000);
  EXPECT_EQ(ok->units_map().count("gpu"), 0u);
  auto bad = Resources::FromUnits({{"cpu", 1}, {"tpu", -1}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("tpu"), std::string::npos);
}

TEST(ResourcesTest, ThreeThirdsOfAGpuFitExactlyWithoutDrift) {
  // 0.33 x 3 fits in 1 GPU and leaves exactly 0.01; a further 0.34 does not fit.
  const Resources capacity = Make({{"gpu", 1.0}});
  const Resources third = Make({{"gpu", 0.33}});
  Resources committed;
  for (int i = 0; i < 3; ++i) {
    Resources next = committed;
    next += third;
    ASSERT_TRUE(next.FitsIn(capacity)) << i;
    committed = next;
  }
  EXPECT_EQ(committed.units("gpu"), 9900);
  Resources more = committed;
  more += Make({{"gpu", 0.34}});
  EXPECT_FALSE(more.FitsIn(capacity));

  Resources free = capacity;
  free -= committed;
  EXPECT_EQ(free.units("gpu"), 100);
  EXPECT_FALSE(Make({{"gpu", 0.34}}).FitsIn(free));
  EXPECT_TRUE(Make({{"gpu", 0.01}}).FitsIn(free));
  EXPECT_FALSE(Make({{"gpu", 0.0101}}).FitsIn(free));

  // 0.33 + 0.33 + 0.34 is exactly one GPU, and ten 0.1 CPUs are exactly one CPU.
  Resources whole = third;
  whole += third;
  whole += Make({{"gpu", 0.34}});
  EXPECT_EQ(whole, capacity);
  Resources tenths;
  for (int i = 0; i < 10; ++i) tenths += Make({{"cpu", 0.1}});
  EXPECT_EQ(tenths, Make({{"cpu", 1.0}}));
}

TEST(ResourcesTest, AddThenSubtractReturnsExactlyToEmpty) {
  // Commit two trials' worth of mixed resources and return them: nothing is left over.
  const Resources a = Make({{"cpu", 1.5}, {"gpu", 0.33}, {"memory", 2147483648.0}});
  const Resources b = Make({{"cpu", 0.25}, {"accel", 3.0}});
  Resources r;
  r += a;
  r += b;
  EXPECT_EQ(r.units("cpu"), 17500);
  EXPECT_EQ(r.units("accel"), 30000);
  r -= a;
  EXPECT_EQ(r, b);
  r -= b;
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r, Resources());
  EXPECT_TRUE(r.units_map().empty());
}

TEST(ResourcesTest, FitsInTreatsMissingKeysAsZero) {
  // A key absent from `available` has zero capacity; keys the request lacks need nothing.
  const Resources cluster = Make({{"cpu", 4.0}});
  EXPECT_TRUE(Make({{"cpu", 4.0}}).FitsIn(cluster));
  EXPECT_FALSE(Make({{"cpu", 4.0001}}).FitsIn(cluster));
  EXPECT_FALSE(Make({{"cpu", 1.0}, {"gpu", 0.5}}).FitsIn(cluster));
  EXPECT_TRUE(Make({{"cpu", 1.0}}).FitsIn(Make({{"cpu", 2.0}, {"gpu", 1.0}})));
  EXPECT_TRUE(Resources().FitsIn(Resources()));
  EXPECT_TRUE(Resources().FitsIn(cluster));
  EXPECT_FALSE(Make({{"cpu", 0.0001}}).FitsIn(Resources()));
}

TEST(ResourcesTest, ToStringListsSortedKeysOrNothing) {
  // "cpu=1, gpu=0.5" with keys sorted; an empty set prints "nothing".
  EXPECT_EQ(Make({{"gpu", 0.5}, {"cpu", 1.0}}).ToString(), "cpu=1, gpu=0.5");
  EXPECT_EQ(Make({{"gpu", 0.33}}).ToString(), "gpu=0.33");
  EXPECT_EQ(Resources().ToString(), "nothing");
  EXPECT_EQ(Make({{"memory", 8589934592.0}}).ToString(), "memory=8589934592");
}

TEST(ResourcesTest, ToAmountsGivesWholeUnits) {
  // ToAmounts is the inverse of FromAmounts for representable amounts, without zero keys.
  const std::map<std::string, double> amounts = {{"cpu", 1.0}, {"gpu", 0.5}, {"custom", 0.0001}};
  EXPECT_EQ(Make(amounts).ToAmounts(), amounts);
  EXPECT_TRUE(Resources().ToAmounts().empty());
  EXPECT_EQ(Make({{"cpu", 2.0}, {"gpu", 0.0}}).ToAmounts(),
            (std::map<std::string, double>{{"cpu", 2.0}}));
}

TEST(ResourcesTest, SetUnitsZeroRemovesTheKey) {
  // set_units with zero erases; a positive value overwrites.
  Resources r;
  r.set_units("gpu", 5000);
  EXPECT_EQ(r.units("gpu"), 5000);
  r.set_units("gpu", 7);
  EXPECT_EQ(r.units("gpu"), 7);
  r.set_units("gpu", 0);
  EXPECT_TRUE(r.empty());
}

}  // namespace
}  // namespace tunebus
