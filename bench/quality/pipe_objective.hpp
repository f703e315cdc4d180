// PipeObjective: an objective evaluated by a child process, one JSON config per line on its
// stdin, one value per line on its stdout (bench/quality/digits_objective.py --serve). The
// search quality benchmark uses it for the digits model, so tunebus' searchers and Optuna's
// TPESampler score configs with the same Python function.
//
// Owns the child: started by Start, ended (stdin closed, waited for) by the destructor.
#pragma once

#include <sys/types.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/core/status.hpp"

namespace tunebus::bench {

class PipeObjective {
 public:
  PipeObjective() = default;
  PipeObjective(const PipeObjective&) = delete;
  PipeObjective& operator=(const PipeObjective&) = delete;
  ~PipeObjective();

  /// Starts `argv` (argv[0] a path) with pipes on its stdin and stdout. Errors: Internal when
  /// the pipes or the process cannot be made.
  Status Start(const std::vector<std::string>& argv);
  /// The child's value of `config`. Errors: Internal when the child is not running, exited, or
  /// answered something that is not a number.
  Result<double> Evaluate(const nlohmann::json& config);
  /// How many configs it evaluated.
  int64_t evaluations() const { return evaluations_; }

 private:
  pid_t pid_ = -1;
  FILE* to_child_ = nullptr;
  FILE* from_child_ = nullptr;
  int64_t evaluations_ = 0;
};

}  // namespace tunebus::bench
