#include "services/tunectl/embedded_suite.hpp"

#include <unistd.h>

#include <filesystem>
#include <thread>

#include "services/checkpoint-store/checkpoint_store.hpp"
#include "services/resource-manager/resource_manager.hpp"
#include "services/scheduler/scheduler.hpp"
#include "services/trial-worker/trial_worker.hpp"

namespace tunebus {

namespace {
constexpr const char* kRm = "inproc://tunebus-rm";
constexpr const char* kRmEvents = "inproc://tunebus-rm-events";
constexpr const char* kStore = "inproc://tunebus-store";
constexpr const char* kWorkers = "inproc://tunebus-workers";
}  // namespace

Result<std::unique_ptr<EmbeddedSuite>> EmbeddedSuite::Start(zmq::context_t& ctx,
                                                            const SuiteOptions& o) {
  std::unique_ptr<EmbeddedSuite> s(new EmbeddedSuite());

  CheckpointStoreOptions so;
  so.endpoint = kStore;
  so.data_dir = o.data_dir;
  auto store = CheckpointStore::Create(ctx, so);
  if (!store.ok()) return store.status();
  s->store_ = std::move(*store);

  ResourceManagerOptions ro;
  ro.endpoint = kRm;
  ro.events_endpoint = kRmEvents;
  auto rm = ResourceManager::Create(ctx, ro);
  if (!rm.ok()) return rm.status();
  s->rm_ = std::move(*rm);

  SchedulerOptions sch;
  sch.control_endpoint = o.control_endpoint;
  sch.worker_endpoint = kWorkers;
  sch.events_endpoint = o.events_endpoint;
  sch.rm_endpoint = kRm;
  sch.rm_events_endpoint = kRmEvents;
  sch.store_endpoint = kStore;
  sch.security = o.security;
  sch.http = o.http;
  sch.http_key_name = o.http_key_name;
  sch.finished_cache_mb = o.finished_cache_mb;
  sch.release_after_ms = o.release_after_ms;
  sch.retention = o.retention;
  // Login tokens outlive a restart of `tunectl up` with the same --data-dir.
  if (!o.http.empty() && !o.data_dir.empty()) {
    sch.dashboard_secret_file =
        (std::filesystem::path(o.data_dir).parent_path() / "dashboard_token.secret").string();
  }
  auto scheduler = Scheduler::Create(ctx, sch);
  if (!scheduler.ok()) return scheduler.status();
  s->scheduler_ = std::move(*scheduler);
  s->control_endpoint_ = s->scheduler_->control_endpoint();

  TrialWorkerOptions wo;
  wo.worker_id = "local-" + std::to_string(::getpid());
  wo.scheduler_endpoint = kWorkers;
  wo.rm_endpoint = kRm;
  wo.store_endpoint = kStore;
  wo.cpus = o.cpus > 0 ? o.cpus : int64_t(std::max(1u, std::thread::hardware_concurrency()));
  wo.gpus = o.gpus;
  wo.custom = o.custom;
  // Shipped working_dirs unpack beside the store's data (<results>/.tunebus/working-dirs).
  if (!o.data_dir.empty()) {
    wo.cache_dir = (std::filesystem::path(o.data_dir).parent_path() / "working-dirs").string();
  }
  auto worker = TrialWorker::Create(ctx, wo);
  if (!worker.ok()) return worker.status();
  s->worker_ = std::move(*worker);

  s->threads_.emplace_back([p = s->store_.get()] { p->Run(); });
  s->threads_.emplace_back([p = s->rm_.get()] { p->Run(); });
  s->threads_.emplace_back([p = s->scheduler_.get()] { p->Run(); });
  s->threads_.emplace_back([p = s->worker_.get()] { p->Run(); });
  return s;
}

std::string EmbeddedSuite::events_endpoint() const { return scheduler_->events_endpoint(); }

std::string EmbeddedSuite::http_url() const { return scheduler_->http_url(); }

void EmbeddedSuite::Stop() {
  if (threads_.empty()) return;
  // Workers first (they kill their trainables), the store last (it takes the final appends).
  worker_->Stop();
  threads_[3].join();
  scheduler_->Stop();
  threads_[2].join();
  rm_->Stop();
  threads_[1].join();
  store_->Stop();
  threads_[0].join();
  threads_.clear();
}

EmbeddedSuite::~EmbeddedSuite() { Stop(); }

}  // namespace tunebus
