// RetentionPolicy: which finished experiments the scheduler deletes, and when each will go
// (docs/how-to/retention.md). Pure: no I/O, no clock; `now` is given by the caller (the scheduler's
// Clock::WallSeconds), so tests step it.
//
// Rules (each off unless given):
//   - count (--retain-experiments N): the N newest finished experiments are kept, by end time
//     (ties: the greater journal name is newer); every older finished one is deleted;
//   - age (--retain-days D, or the experiment's own `retention.days`, which replaces D for it):
//     a finished experiment whose end is more than D days (86,400 s each) before `now` is
//     deleted.
// An experiment is deleted when either rule says so. Running or paused experiments are never
// given here (the caller passes finished ones only), so they are neither deleted nor counted.
// A deletion keeps the results folder when the experiment's `retention.keep_results` says so.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tunebus {

/// The scheduler's rules (SchedulerOptions::retention); both 0: no scheduler-wide rule.
struct RetentionRules {
  int64_t keep_newest = 0;  // --retain-experiments N (>= 0; 0 = no count rule)
  double max_age_days = 0;  // --retain-days D (>= 0; 0 = no age rule)

  bool any() const { return keep_newest > 0 || max_age_days > 0; }
};

/// A finished experiment as the policy sees it.
struct FinishedExperiment {
  std::string journal;         // "<name>-<experiment id>"
  double ended_at_s = 0;       // its end, seconds since the epoch
  std::optional<double> days;  // its `retention.days`, nullopt: RetentionRules'
  bool keep_results = false;   // its `retention.keep_results`
};

/// The policy's word on one finished experiment.
struct RetentionVerdict {
  std::string journal;
  /// When the age rule deletes it (seconds since the epoch); nullopt: no age rule applies.
  std::optional<double> expires_at_s;
  /// Its place among the finished experiments, newest first (1 = newest), when the count rule
  /// applies; 0 otherwise.
  int64_t rank = 0;
  bool delete_now = false;
  /// Why it is deleted now (the rule and the fact), e.g. "--retain-experiments 2: it is the 3rd
  /// newest finished experiment"; "" when it is kept.
  std::string rule;
  bool keep_results = false;
};

/// One verdict per experiment of `finished`, newest first. Errors: none (days <= 0 or NaN in
/// an experiment's `days` are refused by the spec parser; here they mean "no age rule").
std::vector<RetentionVerdict> JudgeRetention(const RetentionRules& rules,
                                             std::vector<FinishedExperiment> finished,
                                             double now_s);

/// What `tunectl lsx` shows in its expires column: "2026-12-06 10:00 UTC" (the age rule),
/// "keep 2 newest: 1st" (the count rule), both joined by ", ", "now" (deleted at the next
/// pass), or "never" (no rule applies).
std::string RetentionExpiresText(const RetentionRules& rules, const RetentionVerdict& verdict);

/// "1st", "2nd", "3rd", "4th", "11th", "21st", ...
std::string Ordinal(int64_t n);

}  // namespace tunebus
