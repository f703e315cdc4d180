#include "libs/core/clock.hpp"

#include <gtest/gtest.h>

namespace tunebus {
namespace {

// A test holds a ManualClock still and moves it by hand: both times move together, by exactly
// the step, and never on their own.
TEST(ClockTest, ManualClockMovesOnlyWhenAdvanced) {
  ManualClock clock(1000.0);
  const SteadyTime t0 = clock.Now();
  EXPECT_EQ(clock.Now(), t0);
  EXPECT_DOUBLE_EQ(clock.WallSeconds(), 1000.0);
  clock.Advance(std::chrono::milliseconds(1500));
  EXPECT_DOUBLE_EQ(clock.SecondsSince(t0), 1.5);
  EXPECT_DOUBLE_EQ(clock.WallSeconds(), 1001.5);
}

// The real clock is the system's: wall time is after 2020 and steady time does not go back.
TEST(ClockTest, RealClockReadsTheSystemClocks) {
  const Clock& clock = Clock::Real();
  EXPECT_GT(clock.WallSeconds(), 1.577e9);
  const SteadyTime a = clock.Now();
  EXPECT_GE(clock.SecondsSince(a), 0.0);
}

}  // namespace
}  // namespace tunebus
