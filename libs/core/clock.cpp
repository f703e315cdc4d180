#include "libs/core/clock.hpp"

#include <fmt/chrono.h>

#include <algorithm>
#include <ctime>

namespace tunebus {

namespace {

class RealClock final : public Clock {
 public:
  SteadyTime Now() const override { return std::chrono::steady_clock::now(); }
  double WallSeconds() const override {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace

const Clock& Clock::Real() {
  static const RealClock clock;
  return clock;
}

SteadyTime ManualClock::Now() const {
  std::lock_guard lock(mu_);
  return now_;
}

double ManualClock::WallSeconds() const {
  std::lock_guard lock(mu_);
  return wall_seconds_;
}

void ManualClock::Advance(std::chrono::nanoseconds d) {
  std::lock_guard lock(mu_);
  now_ += d;
  wall_seconds_ += std::chrono::duration<double>(d).count();
}

void ManualClock::AdvanceTo(double wall_seconds) {
  std::lock_guard lock(mu_);
  now_ += std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(std::max(0.0, wall_seconds - wall_seconds_)));
  wall_seconds_ = std::max(wall_seconds_, wall_seconds);
}

std::string FormatTimeOfDayUtc(double unix_s) {
  return fmt::format("{:%H:%M:%S} UTC", fmt::gmtime(std::time_t(unix_s)));
}

}  // namespace tunebus
