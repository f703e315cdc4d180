// The ready file (`--ready-file PATH` of every service and of `tunectl up`): once a process has
// bound all its sockets and its metrics port, it writes what it bound to PATH as one JSON object,
// so that whoever started it on wildcard ports (`tcp://127.0.0.1:*`, `--metrics-port *`: tests,
// supervisors) learns the ports without guessing free ones beforehand:
//
//   {"service": "scheduler", "pid": 4242,
//    "endpoints": {"control": "tcp://127.0.0.1:40123", "workers": "tcp://127.0.0.1:40124",
//                  "events": "tcp://127.0.0.1:40125"},
//    "metrics_port": 40126}
//
// `endpoints` is keyed by the flag that named each bound socket (without its dashes), with
// wildcard ports resolved (ZMQ_LAST_ENDPOINT); `metrics_port` is 0 when metrics are off. A
// trial-worker binds no socket: its `endpoints` is empty. `pid` tells this process's file from
// a stale one that an earlier process (e.g. a killed one) left at the same path.
#pragma once

#include <map>
#include <string>

#include "libs/core/status.hpp"

namespace tunebus::service {

/// Bound endpoints by flag name ("control" -> "tcp://127.0.0.1:40123").
using BoundEndpoints = std::map<std::string, std::string>;

/// The ready file's text (the object above, one line, with a trailing newline).
std::string ReadyFileText(const std::string& service, int pid, const BoundEndpoints& endpoints,
                          int metrics_port);

/// Writes ReadyFileText(service, getpid(), ...) to `path` atomically: a temporary file beside it
/// is renamed over it, so a reader sees no file or the whole of it. The folder must exist.
/// Errors: IoError naming the path and the reason.
[[nodiscard]] Status WriteReadyFile(const std::string& path, const std::string& service,
                                    const BoundEndpoints& endpoints, int metrics_port);

}  // namespace tunebus::service
