// EventLoop (libs/bus/event_loop.hpp) on a ManualClock: timers are due by the loop's clock, so a
// test moves time by hand and never sleeps.
#include "libs/bus/event_loop.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
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

// Two sockets with a message each are ready in the same round; the first handler called removes
// and closes the other, which is then not called (its handler would read a freed socket), and
// later rounds poll only what is left. A handler may also remove its own socket.
TEST(EventLoopTest, ASocketRemovedDuringARoundIsNotCalledOrPolledAgain) {
  zmq::context_t ctx;
  bus::EventLoop loop;
  struct Pair {
    zmq::socket_t in, out;
  };
  std::vector<std::unique_ptr<Pair>> pairs;
  for (int i = 0; i < 2; ++i) {
    auto p = std::make_unique<Pair>(Pair{zmq::socket_t(ctx, zmq::socket_type::pair),
                                         zmq::socket_t(ctx, zmq::socket_type::pair)});
    const std::string endpoint = "inproc://event-loop-remove-" + std::to_string(i);
    p->in.bind(endpoint);
    p->out.connect(endpoint);
    pairs.push_back(std::move(p));
  }
  std::vector<int> called;
  for (int i = 0; i < 2; ++i) {
    loop.AddSocket(pairs[i]->in, [&, i] {
      called.push_back(i);
      const int other = 1 - i;
      if (pairs[other]) {
        loop.RemoveSocket(pairs[other]->in);
        pairs[other].reset();  // both sockets closed
      }
      zmq::message_t m;
      (void)pairs[i]->in.recv(m, zmq::recv_flags::dontwait);
    });
  }
  ASSERT_EQ(loop.sources(), 2u);
  for (auto& p : pairs) p->out.send(zmq::str_buffer("x"), zmq::send_flags::none);
  for (int round = 0; round < 100 && called.empty(); ++round) loop.RunOnce(bus::Duration{10});
  ASSERT_EQ(called.size(), 1u);
  EXPECT_EQ(loop.sources(), 1u);
  const int kept = called[0];
  ASSERT_NE(pairs[kept], nullptr);
  EXPECT_EQ(pairs[1 - kept], nullptr);
  for (int round = 0; round < 5; ++round) EXPECT_TRUE(loop.RunOnce(bus::Duration{0}));
  EXPECT_EQ(called.size(), 1u);

  // The kept socket removes itself from its own handler: called once, then never polled.
  loop.AddSocket(pairs[kept]->in, [&] {
    called.push_back(10);
    loop.RemoveSocket(pairs[kept]->in);
  });
  loop.RemoveSocket(pairs[kept]->in);  // both registrations of it go
  EXPECT_EQ(loop.sources(), 0u);
  loop.AddSocket(pairs[kept]->in, [&] {
    called.push_back(10);
    loop.RemoveSocket(pairs[kept]->in);
  });
  pairs[kept]->out.send(zmq::str_buffer("y"), zmq::send_flags::none);
  for (int round = 0; round < 100 && called.size() < 2; ++round) loop.RunOnce(bus::Duration{10});
  EXPECT_EQ(called, (std::vector<int>{kept, 10}));
  EXPECT_EQ(loop.sources(), 0u);
  EXPECT_TRUE(loop.RunOnce(bus::Duration{0}));
  EXPECT_EQ(called.size(), 2u);
}

}  // namespace
}  // namespace tunebus
