// FailureKind: what ended a trial attempt that failed, and its one name table. Spelled as a
// trial failure's `kind` (the control socket's trial view, snapshots) and as a trial_status
// record's `failure_kind` (docs/reference/journal-format.md).
#pragma once

#include <string_view>

#include "libs/core/enum_names.hpp"

namespace tunebus {

enum class FailureKind {
  kError = 0,       // "error": the trainable failed (counts toward max_failures)
  kWorkerLost = 1,  // "worker_lost": its worker was lost (counts toward max_worker_losses)
};

inline constexpr EnumName<FailureKind> kFailureKindNames[] = {
    {FailureKind::kError, "error"},
    {FailureKind::kWorkerLost, "worker_lost"},
};

/// "error" | "worker_lost".
constexpr const char* FailureKindName(FailureKind kind) { return NameIn(kFailureKindNames, kind); }

/// The kind spelled `word`; kError for any other word, "" included (a record or snapshot that
/// names no kind is a trainable's failure).
constexpr FailureKind FailureKindNamed(std::string_view word) {
  return FindIn(kFailureKindNames, word).value_or(FailureKind::kError);
}

}  // namespace tunebus
