#include "services/scheduler/core/retention_policy.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace tunebus {

namespace {

constexpr double kSecondsPerDay = 86400;

std::string UtcMinute(double epoch_s) {
  const auto t = std::chrono::sys_seconds(std::chrono::seconds(int64_t(std::floor(epoch_s))));
  return fmt::format("{:%Y-%m-%d %H:%M} UTC", t);
}

}  // namespace

std::string Ordinal(int64_t n) {
  const int64_t tens = n % 100;
  const char* suffix = "th";
  if (tens < 11 || tens > 13) {
    switch (n % 10) {
      case 1:
        suffix = "st";
        break;
      case 2:
        suffix = "nd";
        break;
      case 3:
        suffix = "rd";
        break;
      default:
        break;
    }
  }
  return fmt::format("{}{}", n, suffix);
}

std::vector<RetentionVerdict> JudgeRetention(const RetentionRules& rules,
                                             std::vector<FinishedExperiment> finished,
                                             double now_s) {
  std::sort(finished.begin(), finished.end(),
            [](const FinishedExperiment& a, const FinishedExperiment& b) {
              if (a.ended_at_s != b.ended_at_s) return a.ended_at_s > b.ended_at_s;
              return a.journal > b.journal;
            });
  std::vector<RetentionVerdict> verdicts;
  verdicts.reserve(finished.size());
  for (size_t i = 0; i < finished.size(); ++i) {
    const FinishedExperiment& f = finished[i];
    RetentionVerdict v;
    v.journal = f.journal;
    v.keep_results = f.keep_results;
    const double days = f.days.value_or(rules.max_age_days);
    if (days > 0) v.expires_at_s = f.ended_at_s + days * kSecondsPerDay;
    if (rules.keep_newest > 0) v.rank = int64_t(i) + 1;
    if (v.rank > rules.keep_newest && rules.keep_newest > 0) {
      v.delete_now = true;
      v.rule = fmt::format("--retain-experiments {}: it is the {} newest finished experiment",
                           rules.keep_newest, Ordinal(v.rank));
    } else if (v.expires_at_s && now_s > *v.expires_at_s) {
      v.delete_now = true;
      v.rule = fmt::format("{} {}: it ended {}, {:.2f} days ago",
                           f.days ? "retention.days" : "--retain-days", days,
                           UtcMinute(f.ended_at_s), (now_s - f.ended_at_s) / kSecondsPerDay);
    }
    verdicts.push_back(std::move(v));
  }
  return verdicts;
}

std::string RetentionExpiresText(const RetentionRules& rules, const RetentionVerdict& v) {
  if (v.delete_now) return "now";
  std::string text;
  if (v.expires_at_s) text = UtcMinute(*v.expires_at_s);
  if (v.rank > 0) {
    if (!text.empty()) text += ", ";
    text += fmt::format("keep {} newest: {}", rules.keep_newest, Ordinal(v.rank));
  }
  return text.empty() ? "never" : text;
}

}  // namespace tunebus
