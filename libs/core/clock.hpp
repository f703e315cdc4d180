// Clock: the one time source of every service and library (LevelDB's Env idea, DESIGN.md style 5).
//
// Code that needs the time takes a `const Clock&` (an EventLoop carries one, see
// libs/bus/event_loop.hpp) instead of reading std::chrono clocks itself, so a test can hold
// time still and advance it by hand with ManualClock instead of sleeping. This file and
// clock.cpp are the only places that read the system clocks.
#pragma once

#include <chrono>
#include <mutex>
#include <string>

namespace tunebus {

using SteadyTime = std::chrono::steady_clock::time_point;

class Clock {
 public:
  virtual ~Clock() = default;
  /// Monotonic time: for durations, deadlines and timers.
  virtual SteadyTime Now() const = 0;
  /// Seconds since the Unix epoch (UTC): for timestamps written to files and the journal.
  virtual double WallSeconds() const = 0;

  /// Seconds elapsed since `since` on this clock.
  double SecondsSince(SteadyTime since) const {
    return std::chrono::duration<double>(Now() - since).count();
  }

  /// The process's real clock (steady_clock and system_clock). Lives for the whole process.
  static const Clock& Real();
};

/// A clock that moves only when told: Now() and WallSeconds() start at the given values and
/// change only by Advance(). Thread-safe, so a test thread may advance a loop's clock.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(double wall_seconds = 1.7e9) : wall_seconds_(wall_seconds) {}
  SteadyTime Now() const override;
  double WallSeconds() const override;
  /// Moves both times forward by `d` (d >= 0).
  void Advance(std::chrono::nanoseconds d);
  /// Sets WallSeconds() to exactly `wall_seconds` and moves Now() forward by as much (Mesos'
  /// Clock::update). REQUIRES: wall_seconds >= WallSeconds().
  void AdvanceTo(double wall_seconds);

 private:
  mutable std::mutex mu_;
  SteadyTime now_{std::chrono::hours(1)};
  double wall_seconds_;
};

/// "HH:MM:SS UTC" of `unix_s` (Unix seconds), for messages that say since when something holds.
std::string FormatTimeOfDayUtc(double unix_s);

}  // namespace tunebus
