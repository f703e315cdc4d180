// Waiting in a test for a condition, not for a time: the condition is asked until it holds or a
// deadline of real time passes, so a test is as fast as the system it checks and still bounded.
// Header-only, for the unit tests and the process tests alike (harness.hpp brings both names
// into tunebus::testing). Its own namespace, not tunebus::testing: a unit test's unqualified
// `testing::` inside namespace tunebus must still find GoogleTest's.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string_view>
#include <thread>

namespace tunebus::test_support {

/// Calls `condition` until it returns true, for at most `timeout` of real time, pausing `poll`
/// between calls (the pause is the poll interval: what is polled is a file, a process or another
/// thread's state with no notification to wait on). It is called a last time at the deadline.
/// Returns whether it held. REQUIRES: poll > 0.
inline bool PollUntil(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
                      std::chrono::milliseconds poll = std::chrono::milliseconds{10}) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (condition()) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(poll, deadline - now));
  }
}

/// PollUntil as an assertion: success once `condition` holds, else a failure saying that `what`
/// did not happen within `timeout` (for ASSERT_TRUE / EXPECT_TRUE, which add the caller's
/// details after it).
inline ::testing::AssertionResult WaitUntil(
    std::string_view what, const std::function<bool()>& condition,
    std::chrono::milliseconds timeout = std::chrono::milliseconds{10000},
    std::chrono::milliseconds poll = std::chrono::milliseconds{10}) {
  if (PollUntil(condition, timeout, poll)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "not within " << timeout.count() << " ms: " << what;
}

}  // namespace tunebus::test_support
