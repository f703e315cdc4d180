#include "services/scheduler/scheduler.hpp"

#include <fmt/format.h>
#include <malloc.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <string_view>
#include <utility>

#include "libs/bus/service_guard.hpp"
#include "libs/service/stop_request.hpp"
#include "proto/resources.hpp"
#include "proto/worker.hpp"
#include "services/scheduler/dashboard/server.hpp"
#include "services/scheduler/core/experiment.hpp"
#include "services/scheduler/search/zmq_searcher_link.hpp"

namespace tunebus {

Result<std::unique_ptr<Scheduler>> Scheduler::Create(zmq::context_t& ctx, SchedulerOptions options,
                                                     const Clock& clock) {
  std::unique_ptr<Scheduler> s(new Scheduler(ctx, std::move(options), clock));
  Status st = s->Init();
  if (!st.ok()) return st;
  if (st = s->LoadDashboardTokens(); !st.ok()) return st;
  if (st = s->StartDashboard(); !st.ok()) return st;
  return s;
}

std::string Scheduler::http_url() const { return dashboard_ ? dashboard_->url() : ""; }

Status Scheduler::StartDashboard() {
  if (options_.http.empty()) return Status::Ok();
  auto address = dashboard::ParseHttpAddress(options_.http);
  if (!address.ok()) return address.status();
  dashboard::DashboardOptions o;
  o.address = *address;
  o.control_endpoint = dashboard::LocalConnectEndpoint(control_bound_);
  o.events_endpoint = dashboard::LocalConnectEndpoint(events_bound_);
  const bus::Security& security = *options_.security;
  if (security.curve()) {
    // The dashboard is a viewer client of this scheduler: its own key, which the allow-list
    // must hold as a viewer's, so the control socket refuses it any change.
    if (options_.http_key_name.empty()) {
      return Status::FailedPrecondition(
          "--http with --keys-dir needs --http-key-name (TUNEBUS_HTTP_KEY_NAME): a viewer key "
          "for the dashboard, e.g. `tunectl keygen dashboard --role viewer --authorize "
          "--dir <keys-dir>` (docs/dashboard.md)");
    }
    auto key = bus::Security::Load({security.keys_dir(), options_.http_key_name,
                                    security.authorized_dir(), security.insecure()},
                                   options_.http_key_name);
    if (!key.ok()) return key.status();
    bus::AllowedKey allowed;
    if (!security.Find((*key)->own_key().public_key, allowed)) {
      return Status::FailedPrecondition(fmt::format(
          "the dashboard's key {} is not in the allow-list {}: authorize it as a viewer",
          options_.http_key_name, security.authorized_dir()));
    }
    if (allowed.role != bus::Role::kViewer) {
      return Status::FailedPrecondition(fmt::format(
          "the dashboard's key {} has role {} in the allow-list; the dashboard only reads: give "
          "it a key with role viewer",
          options_.http_key_name, bus::RoleName(allowed.role)));
    }
    o.security = std::move(*key);
  }
  auto started = dashboard::DashboardServer::Start(ctx_, std::move(o));
  if (!started.ok()) return started.status();
  dashboard_ = std::move(*started);
  return Status::Ok();
}

Scheduler::Scheduler(zmq::context_t& ctx, SchedulerOptions options, const Clock& clock)
    : ctx_(ctx), options_(std::move(options)), clock_(clock), loop_(clock) {}

Scheduler::~Scheduler() = default;

Status Scheduler::Init() {
  if (!options_.results_dir.empty()) {
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(options_.results_dir, ec);
    if (!ec) options_.results_dir = abs.lexically_normal().string();
    if (Status s = bus::MakeWritableDir(options_.results_dir, "the results folder"); !s.ok())
      return s;
  }
  bus::Security& security = *options_.security;
  auto control = bus::Bind(ctx_, zmq::socket_type::router, options_.control_endpoint, security,
                           bus::kControlDomain);
  if (!control.ok()) return control.status();
  auto workers = bus::Bind(ctx_, zmq::socket_type::router, options_.worker_endpoint, security,
                           bus::kWorkersDomain);
  if (!workers.ok()) return workers.status();
  auto events = bus::Bind(ctx_, zmq::socket_type::xpub, options_.events_endpoint, security,
                          bus::kEventsDomain);
  if (!events.ok()) return events.status();
  auto rm = bus::Connect(ctx_, zmq::socket_type::dealer, options_.rm_endpoint, security,
                         bus::kResourceManagerKey);
  if (!rm.ok()) return rm.status();
  auto rm_sub = bus::Connect(ctx_, zmq::socket_type::sub, options_.rm_events_endpoint, security,
                             bus::kResourceManagerKey);
  if (!rm_sub.ok()) return rm_sub.status();
  auto store = bus::Connect(ctx_, zmq::socket_type::dealer, options_.store_endpoint, security,
                            bus::kCheckpointStoreKey);
  if (!store.ok()) return store.status();

  control_ = std::move(*control);
  workers_ = std::move(*workers);
  outbox_ = std::make_unique<WorkerOutbox>(workers_);
  events_ = std::move(*events);
  publisher_ = std::make_unique<EventPublisher>(events_);
  rm_sub_ = std::move(*rm_sub);
  rm_sub_.set(zmq::sockopt::subscribe, "node");
  control_bound_ = bus::BoundEndpoint(control_);
  workers_bound_ = bus::BoundEndpoint(workers_);
  events_bound_ = bus::BoundEndpoint(events_);
  rm_ = std::make_unique<bus::RequestClient>(loop_, std::move(*rm), "resource-manager");
  store_ = std::make_unique<bus::RequestClient>(loop_, std::move(*store), "checkpoint-store");
  journals_ = std::make_unique<JournalReader>(*store_, kJournalReadTimeout);
  // A store that says it takes writes again: a journal batch waiting for its retry goes now.
  store_health_ = std::make_unique<StoreHealth>(loop_, *store_, [this] {
    for (auto& e : experiments_) e->journal().RetryNow();
  });

  loop_.AddSocket(events_, [this] { publisher_->OnReadable(); });
  loop_.SetIdleHook([this] { AfterRound(); });
  control_dispatcher_ = std::make_unique<service::MessageDispatcher>(
      service::MessageDispatcher::Options{.reply_socket = &control_,
                                          .peer_name = "tunectl",
                                          .refusal_level = spdlog::level::info,
                                          .security = options_.security,
                                          .roles = bus::kViewers});
  AddControlHandlers();
  worker_dispatcher_ =
      std::make_unique<service::MessageDispatcher>(service::MessageDispatcher::Options{
          .reply_socket = &workers_, .security = options_.security, .roles = {bus::Role::kWorker}});
  AddWorkerHandlers();
  result_files_ = std::make_unique<ResultFileWriter>(clock_);
  journal_appends_ = std::make_unique<JournalAppendBatcher>(*store_);
  placements_ = std::make_unique<PlacementBatcher>(*rm_);
  experiment_context_.reset(new ExperimentContext{
      loop_, *rm_, *placements_, *store_, *journal_appends_, *outbox_, *publisher_, *result_files_,
      clock_, [this](const std::string& worker) { return worker_registry_.IsRegistered(worker); },
      ZmqSearcherLink::Factory(loop_, ctx_, options_.security, "searcher",
                               ZmqSearcherLink::kSearcherRoles),
      ZmqSearcherLink::Factory(loop_, ctx_, options_.security, "driver",
                               ZmqSearcherLink::kDriverRoles)});
  next_state_file_ = clock_.Now();
  return Status::Ok();
}

std::string Scheduler::endpoint() const {
  return "control=" + control_bound_ + " workers=" + workers_bound_ + " events=" + events_bound_;
}

void Scheduler::ServeClients() {
  loop_.AddSocket(control_, [this] { OnControlReadable(); });
  loop_.AddSocket(workers_, [this] { OnWorkerReadable(); });
  loop_.AddSocket(rm_sub_, [this] { OnNodeEvent(); });
  RefreshCapacityEvery();
}

void Scheduler::RefreshCapacityEvery() {
  RefreshCapacity();
  loop_.AddTimer(kCapacityRefresh, [this] { RefreshCapacityEvery(); });
}

void Scheduler::RefreshCapacity() {
  rm_->Request(proto::GetClusterView{}, [this](Result<proto::Decoded> reply) {
    auto view =
        reply.ok() ? reply->As<proto::ClusterView>() : Result<proto::ClusterView>(reply.status());
    if (!view.ok()) return;  // the last known capacity stays
    Resources total;
    for (const proto::NodeView& node : view->nodes) {
      auto capacity = Resources::FromUnits(node.capacity);
      if (node.alive && capacity.ok()) total += *capacity;
    }
    cluster_capacity_ = std::move(total);
  });
}

void Scheduler::ApplyFairShare() {
  if (experiments_.size() == 1) {  // the common case, every round: nothing to share
    experiments_.front()->set_trial_quota(std::nullopt);
    experiments_.front()->Readmit(std::nullopt);
    return;
  }
  std::vector<Experiment*> running;
  std::vector<int64_t> wanted;
  std::vector<double> weights;
  int wanting = 0;
  for (auto& e : experiments_) {
    if (e->phase() != Experiment::Phase::kRunning) continue;
    running.push_back(e.get());
    wanted.push_back(e->Wanted());
    weights.push_back(e->weight());
    wanting += wanted.back() > 0;
  }
  if (wanting < 2 || cluster_capacity_.empty()) {
    fair_share_.reset();
    for (Experiment* e : running) {
      e->set_trial_quota(std::nullopt);
      e->Readmit(std::nullopt);
    }
    return;
  }
  // The previous filling's quotas stand while nothing they depend on changed (most rounds: each
  // round's results change what experiments want, rarely their quotas).
  const SteadyTime now = clock_.Now();
  FairShareFill* last = fair_share_ ? &*fair_share_ : nullptr;
  if (!last || last->running != running || last->weights != weights ||
      last->capacity != cluster_capacity_ || now - last->filled >= kQuotaRefresh ||
      !QuotasStillHold(last->quotas, last->wanted, wanted)) {
    std::vector<FairShareDemand> demands;  // from this round's wants and weights
    for (size_t i = 0; i < running.size(); ++i) {
      demands.push_back({weights[i], running[i]->runner().options().resources_per_trial, wanted[i],
                         running[i]->attained()});
    }
    fair_share_ =
        FairShareFill{running,           weights, wanted,
                      cluster_capacity_, now,     WeightedDrfQuotas(cluster_capacity_, demands)};
  }
  const std::vector<int64_t>& quotas = fair_share_->quotas;
  // Whether an experiment waits below its quota: then preemptible ones above theirs give way.
  bool starved = false;
  for (size_t i = 0; i < running.size(); ++i) {
    running[i]->set_trial_quota(quotas[i]);
    starved = starved || (running[i]->runner().TrialsQueued() > 0 &&
                          running[i]->runner().TrialsInFlight() < quotas[i]);
  }
  for (size_t i = 0; i < running.size(); ++i) {
    if (starved && running[i]->spec().preemptible) running[i]->Preempt(quotas[i]);
    running[i]->Readmit(quotas[i]);
  }
}

void Scheduler::AccrueAttainedService() {
  const SteadyTime now = clock_.Now();
  const double seconds = std::chrono::duration<double>(now - last_accrual_).count();
  last_accrual_ = now;
  if (experiments_.size() < 2) return;  // the tie-break it feeds needs two experiments
  for (auto& e : experiments_) {
    if (e->phase() != Experiment::Phase::kRunning) continue;
    e->AccrueService(DominantShare(e->runner().options().resources_per_trial, cluster_capacity_),
                     seconds);
  }
}

nlohmann::json Scheduler::ShareJson(const Experiment& e) const {
  const Resources held = e.Held();
  nlohmann::json share = {{"weight", e.weight()},
                          {"share", DominantShare(held, cluster_capacity_)},
                          {"usage", held.ToAmounts()}};
  if (e.trial_quota()) share["trial_quota"] = *e.trial_quota();
  return share;
}

void Scheduler::Run() {
  spdlog::info("scheduler serving {}", endpoint());
  std::optional<Status> resumed;
  journals_->set_timeout(bus::Duration{options_.resume_timeout_ms});
  ResumeFromJournals([&resumed](Status s) { resumed = std::move(s); });
  while (!resumed && loop_.RunOnce(bus::Duration{100})) {
  }
  if (!resumed)
    service::NoteWaitStopped("the checkpoint-store's answers to the resume's journal reads");
  journals_->set_timeout(kJournalReadTimeout);
  if (resumed && !resumed->ok()) {
    spdlog::error("Could not resume from the journals: {}; serving without resuming",
                  resumed->ToString());
  }
  ServeClients();
  store_health_->Start();
  if (Status s = metrics_.Start(loop_, options_.metrics,
                                [this](metrics::MetricsText& m) { RenderMetrics(m); });
      !s.ok()) {
    spdlog::error("No metrics endpoint: {}", s.ToString());
  }
  loop_.Run();
  for (auto& e : experiments_) e->recorder().WriteStateFile();
  spdlog::info("scheduler stopped; control requests: {}; worker messages: {}; node events: {}",
               control_dispatcher_->CountsSummary(), worker_dispatcher_->CountsSummary(),
               node_events_);
}

// After every poll round: let each running experiment's runner make progress, then send the
// journal batches and the decisions this round released.
void Scheduler::AfterRound() {
  ApplyFairShare();
  for (auto& owned : experiments_) {
    Experiment* e = owned.get();
    if (e->phase() != Experiment::Phase::kRunning) continue;
    e->runner().Step();
    if (!e->runner().IsFinished()) continue;
    e->MarkEnded();
    spdlog::info("Experiment {} ended: {} ({})", e->name(),
                 ExperimentStatusName(e->runner().status()), e->runner().end_reason());
    if (Unfinished().empty()) {
      // Give back to the system what the runs' transient buffers (result batches, journal
      // records, the file writer's queue) left free in malloc's arenas.
      malloc_trim(0);
      const struct mallinfo2 heap = mallinfo2();
      spdlog::info(
          "Heap after the experiment: {} bytes in use, {} free in the main arena, {} mmapped",
          heap.uordblks, heap.fordblks, heap.hblkhd);
    }
  }
  AccrueAttainedService();
  // An ended experiment may still release resources and append records (a late checkpoint).
  for (auto& e : experiments_) e->AfterRound(options_.snapshot_every_records);
  journal_appends_->Send();  // every experiment's appends of this round, as one request
  placements_->Send();       // and its resource-manager requests
  outbox_->Flush();
  // experiment_state.json of each unfinished experiment, every state_file_interval_ms or 20
  // times what building it cost the loop (at most 5% of its time, as Ray Tune's "auto"
  // checkpoint period), built kStateFileTrialsPerRound trials a round across the experiments.
  const SteadyTime now = clock_.Now();
  if (state_file_pass_ || now >= next_state_file_) {
    if (!state_file_pass_) state_file_pass_ = StateFilePass{now, {}, Unfinished()};
    std::vector<Experiment*>& waiting = state_file_pass_->waiting;
    size_t budget = kStateFileTrialsPerRound;
    while (!waiting.empty() && budget > 0) {
      // One that ended meanwhile wrote its file at its end (WriteStateFile).
      if (waiting.front()->phase() == Experiment::Phase::kEnded ||
          waiting.front()->recorder().StepStateFile(budget)) {
        waiting.erase(waiting.begin());
      }
    }
    state_file_pass_->cost += clock_.Now() - now;
    if (waiting.empty()) {
      next_state_file_ =
          state_file_pass_->started +
          std::max<SteadyTime::duration>(bus::Duration{options_.state_file_interval_ms},
                                         20 * state_file_pass_->cost);
      state_file_pass_.reset();
    }
  }
}

// A worker of an earlier scheduler process may send results, trial_exited, checkpoint_saved,
// checkpoint_failed or heartbeats before it registers with this one: it is answered not_found (so
// it registers again and reports its trials) and the message is handled anyway. A worker sends
// trial_exited, checkpoint_saved and checkpoint_failed once (results are resent only while
// unacknowledged), so dropping them would lose a trial that ended while no scheduler ran;
// handling them is safe because every handler checks the trial's current attempt (and a
// result's seq) against the journal-restored runner.
void Scheduler::AddWorkerHandlers() {
  auto seen = [this](Handler handler) {
    return [this, handler](bus::Incoming& in, const proto::Decoded& d) {
      if (Status s = worker_keys_.Claim(in.peer(), in.key); !s.ok()) return s;
      worker_registry_.Seen(in.peer(), clock_.Now());
      return (this->*handler)(in, d);
    };
  };
  auto registered_only = [this, seen](Handler handler) {
    return [this, handler = seen(handler)](bus::Incoming& in, const proto::Decoded& d) {
      if (!worker_registry_.IsRegistered(in.peer())) {
        worker_dispatcher_->Reply(
            in, proto::MakeError(Status::NotFound("worker " + in.peer() + " is not registered"),
                                 d.id(), d.type()));
      }
      return handler(in, d);
    };
  };
  worker_dispatcher_->On(proto::RegisterWorker::kType, seen(&Scheduler::HandleRegisterWorker))
      .On(proto::ReportResults::kType, registered_only(&Scheduler::HandleReportResults))
      .On(proto::ReportResult::kType, registered_only(&Scheduler::HandleReportResult))
      .On(proto::TrialExited::kType, registered_only(&Scheduler::HandleTrialExited))
      .On(proto::CheckpointSaved::kType, registered_only(&Scheduler::HandleCheckpointSaved))
      .On(proto::CheckpointFailed::kType, registered_only(&Scheduler::HandleCheckpointFailed))
      .On(proto::WorkerHeartbeat::kType, registered_only(&Scheduler::HandleWorkerHeartbeat));
}

void Scheduler::OnWorkerReadable() {
  bus::Incoming in;
  for (size_t n = 1; bus::Receive(workers_, in); ++n) {
    worker_dispatcher_->Dispatch(in);
    // At saturation the workers' messages arrive as fast as they are handled: control requests
    // (tunectl lsx, status) are served between batches instead of after the whole drain.
    if (n % kWorkerMessagesBetweenControl == 0) OnControlReadable();
  }
}

void Scheduler::OnNodeEvent() {
  bus::Incoming in;
  while (bus::Receive(rm_sub_, in)) {
    auto d = proto::Decode(in.payload.data(), in.payload.size());
    if (!d.ok()) {
      spdlog::warn("Dropping node event because it is malformed: {}", d.status().ToString());
      continue;
    }
    auto ev = d->As<proto::NodeEvent>();
    if (!ev.ok()) continue;
    auto kind = proto::ParseNodeEventKind(ev->event);
    if (!kind.ok()) {
      spdlog::warn("Dropping node event because it is unknown: {}", kind.status().message());
      continue;
    }
    ++node_events_;
    if (*kind == proto::NodeEventKind::kNodeLost) {
      spdlog::warn("Worker {} was lost; requeueing its trials", ev->worker_id);
      worker_registry_.Lost(ev->worker_id);
    }
    // resources_freed answers a release: with one experiment its executor's placement budget
    // already counts it; with more (an ended one may still release), another experiment's may
    // have been waiting for the room. A worker added or lost changes what fits, and the
    // capacity fair shares divide.
    if (*kind != proto::NodeEventKind::kResourcesFreed) RefreshCapacity();
    const bool others_may_wait = experiments_.size() > 1;
    for (Experiment* e : Unfinished()) {
      if (*kind != proto::NodeEventKind::kResourcesFreed || others_may_wait)
        e->executor().Unblock();
      // A worker (re-)registered: after a resource-manager restart it reported what it runs,
      // stale attempts included; give back what no RUNNING trial owns.
      if (*kind == proto::NodeEventKind::kNodeAdded) e->ReconcileAllocations();
      if (*kind == proto::NodeEventKind::kNodeLost) e->runner().OnWorkerLost(ev->worker_id);
    }
  }
}

}  // namespace tunebus
