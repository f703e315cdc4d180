// Latency measurement helpers shared by the searcher benchmarks (searcher_bench, search_quality).
#pragma once

#include <time.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace tunebus::bench {

/// This thread's CPU time so far, in milliseconds (CLOCK_THREAD_CPUTIME_ID): a call's cost
/// without the time the host's other work preempted it.
inline double ThreadCpuMs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

/// The q-quantile (0 <= q <= 1) of non-empty ascending `sorted`, nearest rank.
inline double At(const std::vector<double>& sorted, double q) {
  return sorted[std::min(sorted.size() - 1, size_t(q * double(sorted.size())))];
}

}  // namespace tunebus::bench
