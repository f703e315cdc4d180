#include "libs/trainable/fd.hpp"

#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace tunebus::trainable {

void UniqueFd::Reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

std::string ErrnoText(int err) {
  char buf[256];
  // GNU strerror_r returns a pointer that may or may not be buf.
  const char* text = strerror_r(err, buf, sizeof(buf));
  return text;
}

Status TimerFd::Open() {
  const int fd = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (fd < 0) return Status::IoError("timerfd_create: " + ErrnoText(errno));
  fd_.Reset(fd);
  return Status::Ok();
}

namespace {

timespec ToTimespec(std::chrono::nanoseconds d) {
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(d);
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(secs.count());
  ts.tv_nsec = static_cast<long>((d - secs).count());
  return ts;
}

Status SetTime(int fd, std::chrono::nanoseconds delay, std::chrono::nanoseconds interval) {
  itimerspec spec{};
  // it_value zero would disarm: "at once" is one nanosecond.
  spec.it_value = ToTimespec(delay.count() > 0 ? delay : std::chrono::nanoseconds{1});
  spec.it_interval = ToTimespec(interval);
  if (::timerfd_settime(fd, 0, &spec, nullptr) != 0) {
    return Status::IoError("timerfd_settime: " + ErrnoText(errno));
  }
  return Status::Ok();
}

}  // namespace

Status TimerFd::Arm(std::chrono::nanoseconds delay) {
  Consume();
  return SetTime(fd_.get(), delay, std::chrono::nanoseconds{0});
}

Status TimerFd::ArmPeriodic(std::chrono::nanoseconds interval) {
  Consume();
  return SetTime(fd_.get(), interval, interval);
}

void TimerFd::Disarm() {
  itimerspec spec{};
  ::timerfd_settime(fd_.get(), 0, &spec, nullptr);
  Consume();
}

bool TimerFd::Consume() {
  uint64_t expirations = 0;
  const ssize_t n = ::read(fd_.get(), &expirations, sizeof(expirations));
  return n == static_cast<ssize_t>(sizeof(expirations)) && expirations > 0;
}

}  // namespace tunebus::trainable
