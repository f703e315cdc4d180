#include "services/scheduler/core/fair_share_arbiter.hpp"

#include <chrono>
#include <utility>

#include "proto/resources.hpp"
#include "services/scheduler/core/experiment.hpp"
#include "services/scheduler/core/experiment_registry.hpp"
#include "services/scheduler/core/fair_share.hpp"

namespace tunebus {

FairShareArbiter::FairShareArbiter(ExperimentRegistry& registry, bus::RequestClient& rm,
                                   bus::EventLoop& loop, const Clock& clock)
    : registry_(registry), rm_(rm), loop_(loop), clock_(clock) {}

void FairShareArbiter::Start() { RefreshEvery(); }

void FairShareArbiter::RefreshEvery() {
  RefreshCapacity();
  loop_.AddTimer(kCapacityRefresh, [this] { RefreshEvery(); });
}

void FairShareArbiter::RefreshCapacity() {
  rm_.Request(proto::GetClusterView{}, [this](Result<proto::Decoded> reply) {
    auto view =
        reply.ok() ? reply->As<proto::ClusterView>() : Result<proto::ClusterView>(reply.status());
    if (!view.ok()) return;  // the last known capacity stays
    Resources total;
    for (const proto::NodeView& node : view->nodes) {
      auto capacity = Resources::FromUnits(node.capacity);
      if (node.alive && capacity.ok()) total += *capacity;
    }
    SetCapacity(std::move(total));
  });
}

void FairShareArbiter::Apply() {
  const auto& experiments = registry_.experiments();
  if (experiments.size() == 1) {  // the common case, every round: nothing to share
    experiments.front()->set_trial_quota(std::nullopt);
    experiments.front()->Readmit(std::nullopt);
    return;
  }
  std::vector<Experiment*> running;
  std::vector<int64_t> wanted;
  std::vector<double> weights;
  int wanting = 0;
  for (const auto& e : experiments) {
    if (e->phase() != Experiment::Phase::kRunning) continue;
    running.push_back(e.get());
    wanted.push_back(e->Wanted());
    weights.push_back(e->weight());
    wanting += wanted.back() > 0;
  }
  if (wanting < 2 || capacity_.empty()) {
    fill_.reset();
    for (Experiment* e : running) {
      e->set_trial_quota(std::nullopt);
      e->Readmit(std::nullopt);
    }
    return;
  }
  // The previous filling's quotas stand while nothing they depend on changed (most rounds: each
  // round's results change what experiments want, rarely their quotas).
  const SteadyTime now = clock_.Now();
  const Fill* last = fill_ ? &*fill_ : nullptr;
  if (!last || last->running != running || last->weights != weights ||
      last->capacity != capacity_ || now - last->filled >= kQuotaRefresh ||
      !QuotasStillHold(last->quotas, last->wanted, wanted)) {
    std::vector<FairShareDemand> demands;  // from this round's wants and weights
    for (size_t i = 0; i < running.size(); ++i) {
      demands.push_back({weights[i], running[i]->runner().options().resources_per_trial, wanted[i],
                         running[i]->attained()});
    }
    fill_ = Fill{running, weights, wanted, capacity_, now, WeightedDrfQuotas(capacity_, demands)};
  }
  const std::vector<int64_t>& quotas = fill_->quotas;
  // Whether an experiment waits below its quota: then preemptible ones above theirs give way.
  bool starved = false;
  for (size_t i = 0; i < running.size(); ++i) {
    running[i]->set_trial_quota(quotas[i]);
    starved = starved || (running[i]->runner().phases().count(RunnerPhase::kQueued) > 0 &&
                          running[i]->runner().phases().in_flight() < quotas[i]);
  }
  for (size_t i = 0; i < running.size(); ++i) {
    if (starved && running[i]->spec().preemptible) running[i]->Preempt(quotas[i]);
    running[i]->Readmit(quotas[i]);
  }
}

void FairShareArbiter::Accrue() {
  const SteadyTime now = clock_.Now();
  const double seconds = std::chrono::duration<double>(now - last_accrual_).count();
  last_accrual_ = now;
  const auto& experiments = registry_.experiments();
  if (experiments.size() < 2) return;  // the tie-break it feeds needs two experiments
  for (const auto& e : experiments) {
    if (e->phase() != Experiment::Phase::kRunning) continue;
    e->AccrueService(DominantShare(e->runner().options().resources_per_trial, capacity_), seconds);
  }
}

nlohmann::json FairShareArbiter::ShareJson(const Experiment& e) const {
  const Resources held = e.Held();
  nlohmann::json share = {{"weight", e.weight()},
                          {"share", DominantShare(held, capacity_)},
                          {"usage", held.ToAmounts()}};
  if (e.trial_quota()) share["trial_quota"] = *e.trial_quota();
  return share;
}

}  // namespace tunebus
