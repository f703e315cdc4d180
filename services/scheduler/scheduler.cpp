#include "services/scheduler/scheduler.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <utility>

#include "libs/bus/domains.hpp"
#include "libs/bus/service_guard.hpp"
#include "libs/service/stop_request.hpp"
#include "libs/tune/runner_queries.hpp"
#include "proto/resources.hpp"
#include "services/scheduler/control/control_service.hpp"
#include "services/scheduler/core/experiment.hpp"
#include "services/scheduler/core/experiment_registry.hpp"
#include "services/scheduler/core/fair_share_arbiter.hpp"
#include "services/scheduler/dashboard/server.hpp"
#include "services/scheduler/results/event_publisher.hpp"
#include "services/scheduler/search/zmq_searcher_link.hpp"
#include "services/scheduler/workers/worker_service.hpp"

namespace tunebus {

Result<std::unique_ptr<Scheduler>> Scheduler::Create(zmq::context_t& ctx, SchedulerOptions options,
                                                     const Clock& clock) {
  std::unique_ptr<Scheduler> s(new Scheduler(ctx, std::move(options), clock));
  if (Status st = s->Init(); !st.ok()) return st;
  if (Status st = s->StartDashboard(); !st.ok()) return st;
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
          "--dir <keys-dir>` (docs/how-to/dashboard.md)");
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
  control_->set_http_url(dashboard_->url());
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

  control_bound_ = bus::BoundEndpoint(*control);
  workers_bound_ = bus::BoundEndpoint(*workers);
  events_bound_ = bus::BoundEndpoint(*events);
  events_ = std::move(*events);
  publisher_ = std::make_unique<EventPublisher>(events_);
  rm_ = std::make_unique<bus::RequestClient>(loop_, std::move(*rm), "resource-manager");
  store_ = std::make_unique<bus::RequestClient>(loop_, std::move(*store), "checkpoint-store");
  journals_ = std::make_unique<JournalReader>(*store_, kJournalReadTimeout);
  result_files_ = std::make_unique<ResultFileWriter>(clock_);
  journal_appends_ = std::make_unique<JournalAppendBatcher>(*store_);
  placements_ = std::make_unique<PlacementBatcher>(*rm_);

  registry_ = std::make_unique<ExperimentRegistry>(
      ExperimentRegistry::Options{options_.results_dir, options_.resume,
                                  bus::Duration{options_.reattach_grace_ms},
                                  bus::Duration{options_.state_file_interval_ms},
                                  size_t(std::max<int64_t>(0, options_.finished_cache_mb)) << 20,
                                  bus::Duration{options_.release_after_ms}},
      clock_, *journals_);
  // A store that says it takes writes again: a journal batch waiting for its retry goes now.
  store_health_ = std::make_unique<StoreHealth>(
      loop_, *store_, [registry = registry_.get()] { registry->RetryJournals(); });
  arbiter_ = std::make_unique<FairShareArbiter>(*registry_, *rm_, loop_, clock_);
  workers_ =
      std::make_unique<WorkerService>(std::move(*workers), std::move(*rm_sub), options_.security,
                                      loop_, clock_, *registry_, *arbiter_);
  experiment_context_.reset(
      new ExperimentContext{loop_, *rm_, *placements_, *store_, *journal_appends_,
                            workers_->outbox(), *publisher_, *result_files_, clock_,
                            [workers = workers_.get()](const std::string& worker) {
                              return workers->workers().IsRegistered(worker);
                            },
                            ZmqSearcherLink::Factory(loop_, ctx_, options_.security, "searcher",
                                                     ZmqSearcherLink::kSearcherRoles),
                            ZmqSearcherLink::Factory(loop_, ctx_, options_.security, "driver",
                                                     ZmqSearcherLink::kDriverRoles)});
  auto control_service = ControlService::Create(
      std::move(*control),
      ControlService::Options{options_.security, events_bound_, options_.dashboard_secret_file,
                              options_.retention},
      ControlService::Parts{clock_, *registry_, *experiment_context_, *arbiter_,
                            workers_->workers(), *store_, *rm_, *store_health_});
  if (!control_service.ok()) return control_service.status();
  control_ = std::move(*control_service);

  loop_.AddSocket(events_, [this] { publisher_->OnReadable(); });
  loop_.SetIdleHook([this] { AfterRound(); });
  return Status::Ok();
}

std::string Scheduler::endpoint() const {
  return "control=" + control_bound_ + " workers=" + workers_bound_ + " events=" + events_bound_;
}

void Scheduler::Run() {
  spdlog::info("scheduler serving {}", endpoint());
  std::optional<Status> resumed;
  journals_->set_timeout(bus::Duration{options_.resume_timeout_ms});
  registry_->ResumeAll(*experiment_context_, [&resumed](Status s) { resumed = std::move(s); });
  while (!resumed && loop_.RunOnce(bus::Duration{100})) {
  }
  if (!resumed)
    service::NoteWaitStopped("the checkpoint-store's answers to the resume's journal reads");
  journals_->set_timeout(kJournalReadTimeout);
  if (resumed && !resumed->ok()) {
    spdlog::error("Could not resume from the journals: {}; serving without resuming",
                  resumed->ToString());
  }
  // Serving tunectl, workers and the resource-manager's node events starts after the resume:
  // what they sent meanwhile waits in their sockets.
  control_->Start(loop_);
  workers_->Start([control = control_.get()] { control->OnReadable(); });
  arbiter_->Start();
  store_health_->Start();
  if (Status s = metrics_.Start(loop_, options_.metrics,
                                [this](metrics::MetricsText& m) { RenderMetrics(m); });
      !s.ok()) {
    spdlog::error("No metrics endpoint: {}", s.ToString());
  }
  loop_.Run();
  registry_->WriteStateFiles();
  spdlog::info("scheduler stopped; control requests: {}; worker messages: {}; node events: {}",
               control_->dispatcher().CountsSummary(), workers_->dispatcher().CountsSummary(),
               workers_->node_events());
}

void Scheduler::AfterRound() {
  arbiter_->Apply();
  registry_->StepRunning();
  arbiter_->Accrue();
  registry_->AfterRound(options_.snapshot_every_records);
  journal_appends_->Send();  // every experiment's appends of this round, as one request
  placements_->Send();       // and its resource-manager requests
  workers_->Flush();
  registry_->StepStateFiles();
  registry_->ReleaseFinished();
}

void Scheduler::RenderMetrics(metrics::MetricsText& m) {
  std::map<std::string, uint64_t> handled = control_->dispatcher().counts();
  for (const auto& [type, n] : workers_->dispatcher().counts()) handled[type] += n;
  if (workers_->node_events() > 0) handled["node_event"] += workers_->node_events();
  const SteadyTime now = clock_.Now();
  const uint64_t results = workers_->results_received() + handled[proto::ReportResult::kType];
  const double dt = std::chrono::duration<double>(now - metrics_last_at_).count();
  const double rate = metrics_last_at_ == SteadyTime{} || dt <= 0
                          ? 0
                          : double(results - metrics_last_results_) / dt;
  metrics_last_results_ = results;
  metrics_last_at_ = now;

  // Summed over the experiments in this process (finished ones too, released or not, until it
  // exits).
  std::map<TrialStatus, int64_t> counts = registry_->ReleasedCounts();
  double latency_s = 0, queued = 0, failing = 0;
  for (const auto& e : registry_->experiments()) {
    for (const auto& [status, n] : CountByStatus(e->runner().trials())) counts[status] += n;
    const journal::JournalWriter& w = e->journal();
    latency_s = std::max(latency_s, w.last_append_latency_s());
    queued += double(w.appended() - w.durable());
    if (w.state() == journal::JournalWriter::State::kFailing) failing = 1;
  }
  for (TrialStatus s : {TrialStatus::kPending, TrialStatus::kRunning, TrialStatus::kPaused,
                        TrialStatus::kTerminated, TrialStatus::kError}) {
    auto it = counts.find(s);
    m.Gauge("trials", "Trials of the experiments in this scheduler by status",
            it == counts.end() ? 0 : double(it->second), {{"status", TrialStatusName(s)}});
  }
  m.Gauge("results_per_second", "Results received per second over the last interval", rate);
  m.Counter("results_total", "Results received from workers", double(results));
  m.Gauge("journal_append_latency_seconds",
          "Time from sending the newest journal batch to its durable ack (the slowest journal)",
          latency_s);
  m.Gauge("journal_queue_records", "Journal records appended but not durable yet, all journals",
          queued);
  m.Gauge("journal_writes_failing",
          "1 while an experiment's journal appends fail (retried; effects held)", failing);
  m.Gauge("store_degraded", "1 while the checkpoint-store says it refuses writes",
          store_health_->state() == StoreHealth::State::kDegraded ? 1 : 0);
  const nlohmann::json memory = registry_->MemoryJson();
  m.Gauge("experiments_resident",
          "Experiments whose state is in memory: unfinished ones and those that ended less than "
          "--release-after-ms ago",
          memory["resident"].get<double>());
  m.Counter("experiments_released_total",
            "Finished experiments whose state left memory (reads come from their journals)",
            memory["released"].get<double>());
  m.Gauge("finished_cache_bytes",
          "Bytes of finished experiments read back from their journals kept for the next reads "
          "(estimated from their contents; at most --finished-cache-mb)",
          memory["finished_cache"]["bytes"].get<double>());
  m.Gauge("finished_cache_entries", "Finished experiments kept in the finished cache",
          memory["finished_cache"]["entries"].get<double>());
  m.Gauge("workers_connected", "Workers registered with this scheduler process",
          double(workers_->workers().registered_count()));
  for (const auto& [type, n] : handled) {
    m.Counter("messages_total", "Messages handled, by type", double(n), {{"type", type}});
  }
}

}  // namespace tunebus
