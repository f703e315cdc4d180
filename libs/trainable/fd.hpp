// Small POSIX helpers for trainables: an owning file descriptor and a one-shot timer fd.
#pragma once

#include <chrono>
#include <string>

#include "libs/core/status.hpp"

namespace tunebus::trainable {

/// Owns one file descriptor; closes it on destruction. -1 = none.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) Reset(other.Release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void Reset(int fd = -1);

 private:
  int fd_ = -1;
};

/// A CLOCK_MONOTONIC timerfd: readable once the armed delay has passed (until Consume()).
class TimerFd {
 public:
  /// Errors: IoError with errno's text.
  [[nodiscard]] Status Open();
  /// Fires once after `delay` (0 fires at once). Re-arming replaces the previous delay.
  [[nodiscard]] Status Arm(std::chrono::nanoseconds delay);
  /// Fires every `interval` (> 0).
  [[nodiscard]] Status ArmPeriodic(std::chrono::nanoseconds interval);
  void Disarm();
  /// Reads the expiration count (non-blocking). True if it had fired.
  bool Consume();
  int fd() const { return fd_.get(); }

 private:
  UniqueFd fd_;
};

/// "strerror(errno)" for the current errno, thread-safe.
std::string ErrnoText(int err);

}  // namespace tunebus::trainable
