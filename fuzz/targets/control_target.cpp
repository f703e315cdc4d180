#include <stdlib.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "fuzz/fuzz_targets.hpp"
#include "libs/bus/socket.hpp"
#include "libs/spec/experiment_spec.hpp"
#include "proto/codec.hpp"
#include "proto/control.hpp"
#include "services/checkpoint-store/checkpoint_store.hpp"
#include "services/resource-manager/resource_manager.hpp"
#include "services/scheduler/scheduler.hpp"

namespace tunebus::fuzz {

namespace {

// How long one frame's reply is awaited. A reply that comes later is drained before the next
// frame is sent; none at all is no failure here (tests/integration cover the protocol).
constexpr auto kReplyWait = std::chrono::seconds(5);

// The scheduler, its checkpoint-store and resource-manager on their own threads (as
// services/tunectl/embedded_suite.cpp runs them, without its trial-worker), and the DEALER the
// frames go through. Made once per process; stopped, and its folder removed, at exit.
struct ControlSuite {
  std::string dir;
  zmq::context_t ctx;
  std::unique_ptr<CheckpointStore> store;
  std::unique_ptr<ResourceManager> rm;
  std::unique_ptr<Scheduler> scheduler;
  std::vector<std::thread> threads;
  zmq::socket_t client;

  void Stop() {
    if (threads.empty()) return;
    scheduler->Stop();
    threads[2].join();
    rm->Stop();
    threads[1].join();
    store->Stop();
    threads[0].join();
    threads.clear();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

ControlSuite* g_suite = nullptr;

ControlSuite& Suite() {
  if (g_suite != nullptr) return *g_suite;
  auto* s = new ControlSuite();  // lives until exit: its threads use it
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp ? tmp : "/tmp") + "/tunebus-fuzz-control-XXXXXX";
  Check(::mkdtemp(pattern.data()) != nullptr, "mkdtemp failed");
  s->dir = pattern;

  CheckpointStoreOptions so;
  so.endpoint = "inproc://fuzz-store";
  so.data_dir = s->dir + "/store";
  so.sync = false;
  auto store = CheckpointStore::Create(s->ctx, so);
  Check(store.ok(), "checkpoint-store: " + store.status().ToString());
  s->store = std::move(*store);

  ResourceManagerOptions ro;
  ro.endpoint = "inproc://fuzz-rm";
  ro.events_endpoint = "inproc://fuzz-rm-events";
  auto rm = ResourceManager::Create(s->ctx, ro);
  Check(rm.ok(), "resource-manager: " + rm.status().ToString());
  s->rm = std::move(*rm);

  SchedulerOptions sch;
  sch.control_endpoint = "inproc://fuzz-control";
  sch.worker_endpoint = "inproc://fuzz-workers";
  sch.events_endpoint = "inproc://fuzz-events";
  sch.rm_endpoint = ro.endpoint;
  sch.rm_events_endpoint = ro.events_endpoint;
  sch.store_endpoint = so.endpoint;
  sch.resume = false;
  sch.results_dir = s->dir + "/results";
  auto scheduler = Scheduler::Create(s->ctx, sch);
  Check(scheduler.ok(), "scheduler: " + scheduler.status().ToString());
  s->scheduler = std::move(*scheduler);

  s->threads.emplace_back([p = s->store.get()] { p->Run(); });
  s->threads.emplace_back([p = s->rm.get()] { p->Run(); });
  s->threads.emplace_back([p = s->scheduler.get()] { p->Run(); });

  s->client = zmq::socket_t(s->ctx, zmq::socket_type::dealer);
  s->client.set(zmq::sockopt::linger, 0);
  s->client.connect(sch.control_endpoint);
  g_suite = s;
  std::atexit([] { g_suite->Stop(); });
  return *s;
}

// False for a submission that would reach outside the suite's folder: an absolute results_dir
// (the scheduler writes there) or an external searcher the scheduler would start as a process.
bool SafeToSend(const uint8_t* data, size_t size) {
  Result<proto::Decoded> d = proto::Decode(data, size);
  if (!d.ok() || d->type() != proto::SubmitExperiment::kType) return true;
  Result<proto::SubmitExperiment> msg = d->As<proto::SubmitExperiment>();
  if (!msg.ok()) return true;
  Result<ExperimentSpec> spec =
      ParseExperimentYaml(msg->spec_yaml, msg->base_dir, msg->source_name);
  if (!spec.ok()) return true;  // the scheduler refuses it as well
  if (!spec->results_dir_beside_file) return false;
  return !(spec->search == "external" && spec->search_config.contains("command"));
}

}  // namespace

int FuzzControl(const uint8_t* data, size_t size) {
  ControlSuite& s = Suite();
  if (!SafeToSend(data, size)) return 0;
  zmq::message_t stale;
  while (s.client.recv(stale, zmq::recv_flags::dontwait)) {
  }
  s.client.send(zmq::buffer(data, size), zmq::send_flags::none);
  zmq::pollitem_t item{s.client.handle(), 0, ZMQ_POLLIN, 0};
  const auto deadline = std::chrono::steady_clock::now() + kReplyWait;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    int ready = 0;
    try {
      ready = zmq::poll(&item, 1, left);
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;  // libFuzzer's timers interrupt the poll: wait on
    }
    if (ready <= 0) continue;
    zmq::message_t reply;
    if (!s.client.recv(reply, zmq::recv_flags::dontwait)) continue;
    // Every answer is a frame the protocol allows: a control_reply or an error.
    Result<proto::Decoded> d = proto::Decode(reply.data(), reply.size());
    Check(d.ok(), "the scheduler's reply does not decode: " + d.status().ToString());
    Check(d->type() == proto::ControlReply::kType || d->type() == proto::ErrorReply::kType,
          "the scheduler answered with a " + d->type());
    break;
  }
  return 0;
}

}  // namespace tunebus::fuzz
