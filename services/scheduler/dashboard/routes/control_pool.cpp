#include "services/scheduler/dashboard/routes/control_pool.hpp"

namespace tunebus::dashboard {

Result<ControlClient> ControlPool::Take() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      ControlClient client = std::move(idle_.back());
      idle_.pop_back();
      return client;
    }
  }
  return ControlClient::Connect(ctx_, endpoint_, *security_, timeout_);
}

void ControlPool::Return(ControlClient client) {
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < kMaxIdle) idle_.push_back(std::move(client));
}

}  // namespace tunebus::dashboard
