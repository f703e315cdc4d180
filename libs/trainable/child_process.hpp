// ChildProcess: one program started by a service and owned by it until it is reaped, for
// children that must not outlive their parent (a searcher the scheduler starts for
// `search: {type: external, command: [...]}`, proto/PROTOCOL.md section 7a).
//
// Spawn() forks and, in the child, makes only async-signal-safe system calls before execve:
// prctl(PR_SET_PDEATHSIG) (which posix_spawn cannot set: it is why this is not posix_spawn, as
// CommandTrainable is), a new process group (so Signal reaches the child's own children), every
// signal back to its default and unblocked, stdin /dev/null, stdout and stderr onto
// `output_fd`, chdir, every other descriptor close-on-exec. Everything that allocates (argv,
// the environment, the PATH lookup) is done before the fork, so it is safe in a multi-threaded
// process (the embedded mode runs the services as threads). An execve that fails is reported
// through a close-on-exec pipe, so Spawn's error names it.
//
// The parent-death signal goes to the child when the *thread* that spawned it ends (Linux
// prctl(2)): spawn from the thread that owns the child for its whole life (a service's loop).
//
// Exit: exit_fd() (a pidfd, Linux >= 5.3; -1 without) becomes readable when the child exits;
// Poll() reaps it with waitpid(pid, WNOHANG) on its pid only (never -1, never SIGCHLD).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "libs/core/status.hpp"
#include "libs/trainable/fd.hpp"

namespace tunebus::trainable {

/// This process's environment, name -> value (entries without a name are skipped).
std::map<std::string, std::string> CurrentEnvironment();
/// Errors: InvalidArgument "invalid environment variable name '<name>'" (empty, '=' or NUL).
Status CheckEnvironmentName(const std::string& name);

/// The argv / envp array execve takes: pointers to `strings` (which must outlive it), then
/// nullptr.
std::vector<char*> NullTerminated(const std::vector<std::string>& strings);

/// How a child ended.
struct ChildExit {
  int exit_code = 0;  // with signal == 0
  int signal = 0;     // the signal that killed it, 0 if it exited

  /// "exit code 3", "signal 9".
  std::string Describe() const;
};

class ChildProcess {
 public:
  struct Options {
    /// The program and its arguments. A program without '/' is looked up in PATH; a relative
    /// path resolves against `working_dir`.
    std::vector<std::string> argv;
    /// The child's working directory ("" = the parent's).
    std::string working_dir;
    /// Set over the parent's environment (a name given twice: the last value).
    std::vector<std::pair<std::string, std::string>> env;
    /// stdout and stderr of the child (the parent's descriptor, not taken); -1 = /dev/null.
    int output_fd = -1;
    /// Sent to the child when the spawning thread ends (PR_SET_PDEATHSIG); 0 = none.
    int parent_death_signal = 0;
  };

  /// Errors: InvalidArgument (empty argv, an environment name with '=' or NUL), Unavailable
  /// naming the program (not found in PATH, no such file, not executable, `working_dir`
  /// missing) or IoError (pipe, fork).
  static Result<std::unique_ptr<ChildProcess>> Spawn(const Options& options);
  /// SIGKILLs the child's process group and reaps the child if it was not reaped.
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  /// Readable once the child exited (a pidfd, open until this object is destroyed); -1 when
  /// the kernel has no pidfd_open (then call Poll() periodically).
  int exit_fd() const { return pidfd_.get(); }
  /// Non-blocking: how the child ended once it has (it is then reaped), else nullopt.
  std::optional<ChildExit> Poll();
  /// Sends `signal` to the child's process group (and to the child, had it left the group).
  /// No-op once reaped.
  void Signal(int signal);
  /// Blocking: SIGTERM, up to `grace` for the child to exit, then SIGKILL; reaps it.
  ChildExit Terminate(std::chrono::milliseconds grace);
  bool reaped() const { return exit_.has_value(); }

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}

  pid_t pid_;
  UniqueFd pidfd_;
  std::optional<ChildExit> exit_;
};

}  // namespace tunebus::trainable
