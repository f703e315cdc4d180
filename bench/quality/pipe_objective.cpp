#include "bench/quality/pipe_objective.hpp"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace tunebus::bench {

PipeObjective::~PipeObjective() {
  if (to_child_ != nullptr) std::fclose(to_child_);  // EOF: the child's loop ends
  if (from_child_ != nullptr) std::fclose(from_child_);
  if (pid_ > 0) waitpid(pid_, nullptr, 0);
}

Status PipeObjective::Start(const std::vector<std::string>& argv) {
  if (pid_ > 0 || argv.empty()) return Status::Internal("PipeObjective: started twice or no argv");
  int in[2], out[2];  // in: parent -> child stdin; out: child stdout -> parent
  if (pipe(in) != 0) return Status::Internal(fmt::format("pipe: {}", std::strerror(errno)));
  if (pipe(out) != 0) {
    close(in[0]);
    close(in[1]);
    return Status::Internal(fmt::format("pipe: {}", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  for (int fd : {in[0], in[1], out[0], out[1]}) posix_spawn_file_actions_addclose(&actions, fd);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int rc = posix_spawn(&pid_, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  close(out[1]);
  if (rc != 0) {
    pid_ = -1;
    close(in[1]);
    close(out[0]);
    return Status::Internal(fmt::format("cannot start {}: {}", argv[0], std::strerror(rc)));
  }
  to_child_ = fdopen(in[1], "w");
  from_child_ = fdopen(out[0], "r");
  return Status::Ok();
}

Result<double> PipeObjective::Evaluate(const nlohmann::json& config) {
  if (to_child_ == nullptr) return Status::Internal("PipeObjective: not started");
  const std::string line = config.dump() + "\n";
  if (std::fputs(line.c_str(), to_child_) < 0 || std::fflush(to_child_) != 0) {
    return Status::Internal("PipeObjective: the evaluator's stdin is closed");
  }
  char answer[128];
  if (std::fgets(answer, sizeof answer, from_child_) == nullptr) {
    return Status::Internal("PipeObjective: the evaluator exited without an answer");
  }
  char* end = nullptr;
  const double value = std::strtod(answer, &end);
  if (end == answer) {
    return Status::Internal(fmt::format("PipeObjective: the evaluator answered '{}'", answer));
  }
  ++evaluations_;
  return value;
}

}  // namespace tunebus::bench
