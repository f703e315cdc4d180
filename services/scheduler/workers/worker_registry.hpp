// WorkerRegistry: the trial-workers this scheduler process hears from. A worker is *connected*
// from its first message until the resource-manager reports it lost, and *registered* once it
// sent register_worker to this process (a worker of an earlier scheduler process is connected
// but not registered until it registers again). Liveness is the resource-manager's job; this
// only answers "may I send to it" and "does it show as connected".
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>

#include "libs/core/clock.hpp"

namespace tunebus {

class WorkerRegistry {
 public:
  /// A message from `worker_id` arrived at `now`.
  void Seen(const std::string& worker_id, SteadyTime now) { last_seen_[worker_id] = now; }
  /// `worker_id` sent register_worker to this process.
  void Register(const std::string& worker_id) { registered_.insert(worker_id); }
  /// The resource-manager reported `worker_id` lost: it no longer shows as connected.
  void Lost(const std::string& worker_id) { last_seen_.erase(worker_id); }

  bool IsRegistered(const std::string& worker_id) const { return registered_.contains(worker_id); }
  bool IsConnected(const std::string& worker_id) const { return last_seen_.contains(worker_id); }
  size_t registered_count() const { return registered_.size(); }

 private:
  std::map<std::string, SteadyTime> last_seen_;  // worker_id -> its last message
  std::set<std::string> registered_;
};

}  // namespace tunebus
