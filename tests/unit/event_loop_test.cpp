// EventLoop (libs/bus/event_loop.hpp) on a ManualClock: timers are due by the loop's clock, so a
// test moves time by hand and never sleeps.
#include "libs/bus/event_loop.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "libs/core/clock.hpp"

namespace tunebus {
namespace {

using namespace std::chrono_literals;

// A one-shot timer at 5 s and a periodic one every 1 s: nothing fires until the clock moves,
// each fires when the clock reaches it, and the periodic one then counts from that round.
TEST(EventLoopTest, TimersFireOnlyWhenTheManualClockReachesThem) {
  ManualClock clock;
  bus::EventLoop loop(clock);
  EXPECT_EQ(&loop.clock(), &clock);
  std::vector<std::string> fired;
  loop.AddTimer(bus::Duration{5000}, [&] { fired.push_back("once"); });
  loop.AddPeriodic(bus::Duration{1000}, [&] { fired.push_back("tick"); });

  ASSERT_TRUE(loop.RunOnce(bus::Duration{0}));
  EXPECT_TRUE(fired.empty());
  clock.Advance(999ms);
  ASSERT_TRUE(loop.RunOnce(bus::Duration{0}));
  EXPECT_TRUE(fired.empty());
  clock.Advance(1ms);  // 1 s
  ASSERT_TRUE(loop.RunOnce(bus::Duration{0}));
  EXPECT_EQ(fired, (std::vector<std::string>{"tick"}));
  ASSERT_TRUE(loop.RunOnce(bus::Duration{0}));  // the same instant again: nothing new
  EXPECT_EQ(fired.size(), 1u);
  clock.Advance(4000ms);  // 5 s: both due; the periodic one fires once, not four times
  ASSERT_TRUE(loop.RunOnce(bus::Duration{0}));
  EXPECT_EQ(fired, (std::vector<std::string>{"tick", "once", "tick"}));
  clock.Advance(10000ms);  // the one-shot is gone
  ASSERT_TRUE(loop.RunOnce(bus::Duration{0}));
  EXPECT_EQ(fired, (std::vector<std::string>{"tick", "once", "tick", "tick"}));
}

// A cancelled timer never fires, however far the clock moves.
TEST(EventLoopTest, ACancelledTimerNeverFires) {
  ManualClock clock;
  bus::EventLoop loop(clock);
  bool fired = false;
  const auto id = loop.AddTimer(bus::Duration{10}, [&] { fired = true; });
  loop.CancelTimer(id);
  clock.Advance(1h);
  ASSERT_TRUE(loop.RunOnce(bus::Duration{0}));
  EXPECT_FALSE(fired);
}

}  // namespace
}  // namespace tunebus
