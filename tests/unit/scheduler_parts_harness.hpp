// SchedulerPartsHarness: what the scheduler's parts (ExperimentRegistry, FairShareArbiter,
// ControlService, WorkerService) are built on, without a Scheduler: an EventLoop on a
// ManualClock, the resource-manager and checkpoint-store clients connected to inproc endpoints
// no service binds (their requests wait unanswered: journal appends stay not durable, placements
// stay in flight), the experiments' batchers, result-file writer and event publisher, and an
// ExperimentContext over them. Tests submit experiments of the mock trainable into a registry
// (Submit) and drive a part alone. Time moves only when a test advances `clock`.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <zmq.hpp>

#include "libs/bus/event_loop.hpp"
#include "libs/bus/request_client.hpp"
#include "libs/bus/socket.hpp"
#include "libs/core/clock.hpp"
#include "libs/spec/experiment_spec.hpp"
#include "proto/codec.hpp"
#include "proto/control.hpp"
#include "services/scheduler/core/experiment.hpp"
#include "services/scheduler/core/experiment_registry.hpp"
#include "services/scheduler/results/event_publisher.hpp"
#include "services/scheduler/results/result_files.hpp"
#include "services/scheduler/store/bus_journal_sink.hpp"
#include "services/scheduler/store/journal_reader.hpp"
#include "services/scheduler/workers/placement_batcher.hpp"
#include "services/scheduler/workers/worker_outbox.hpp"

namespace tunebus::testing {

class SchedulerPartsHarness {
 public:
  SchedulerPartsHarness() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "tunebus-parts-test-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    dir = pattern;
    tag = std::to_string(reinterpret_cast<uintptr_t>(this));
    outbox_socket = zmq::socket_t(ctx, zmq::socket_type::router);
    outbox_socket.set(zmq::sockopt::linger, 0);
    outbox_socket.bind("inproc://parts-workers-" + tag);
    events_socket = zmq::socket_t(ctx, zmq::socket_type::xpub);
    events_socket.set(zmq::sockopt::linger, 0);
    events_socket.bind("inproc://parts-events-" + tag);
    rm = std::make_unique<bus::RequestClient>(loop, Dealer("inproc://parts-rm-" + tag),
                                              "resource-manager");
    store = std::make_unique<bus::RequestClient>(loop, Dealer("inproc://parts-store-" + tag),
                                                 "checkpoint-store");
    journals = std::make_unique<JournalReader>(*store, kJournalReadTimeout);
    placements = std::make_unique<PlacementBatcher>(*rm);
    journal_appends = std::make_unique<JournalAppendBatcher>(*store);
    outbox = std::make_unique<WorkerOutbox>(outbox_socket);
    publisher = std::make_unique<EventPublisher>(events_socket);
    result_files = std::make_unique<ResultFileWriter>(clock);
    context.reset(new ExperimentContext{
        loop, *rm, *placements, *store, *journal_appends, *outbox, *publisher, *result_files, clock,
        [](const std::string&) { return true; }, SearcherLinkFactory(), SearcherLinkFactory()});
    registry =
        std::make_unique<ExperimentRegistry>(ExperimentRegistry::Options{}, clock, *journals);
  }
  ~SchedulerPartsHarness() {
    registry.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }

  /// An experiment file of the mock trainable: `trials` grid points, one CPU per trial.
  std::string Yaml(const std::string& name, int trials, const std::string& extra = "") const {
    std::string grid;
    for (int i = 0; i < trials; ++i) grid += (i ? ", " : "") + std::to_string(i);
    return "name: " + name +
           "\n"
           "trainable: {builtin: mock}\n"
           "param_space: {x: {grid_search: [" +
           grid +
           "]}}\n"
           "metric: score\n"
           "mode: max\n"
           "resources_per_trial: {cpu: 1}\n"
           "results_dir: " +
           dir + "/results\n" + extra;
  }
  proto::SubmitExperiment SubmitRequest(const std::string& yaml) const {
    proto::SubmitExperiment submit;
    submit.spec_yaml = yaml;
    submit.base_dir = dir;
    submit.source_name = "exp.yaml";
    return submit;
  }
  /// Submits experiment `name` of `trials` trials into the registry (as the control socket's
  /// submit does); fails the test and returns null if it is refused.
  Experiment* Submit(const std::string& name, int trials, const std::string& extra = "") {
    const proto::SubmitExperiment msg = SubmitRequest(Yaml(name, trials, extra));
    auto spec = ParseExperimentYaml(msg.spec_yaml, msg.base_dir, msg.source_name);
    if (!spec.ok()) {
      ADD_FAILURE() << spec.status().ToString();
      return nullptr;
    }
    auto e = registry->Submit(*context, msg, std::move(*spec), std::nullopt);
    if (!e.ok()) {
      ADD_FAILURE() << e.status().ToString();
      return nullptr;
    }
    return *e;
  }

  /// A DEALER connected to `endpoint` (bound or not).
  zmq::socket_t Dealer(const std::string& endpoint) {
    zmq::socket_t s(ctx, zmq::socket_type::dealer);
    s.set(zmq::sockopt::linger, 0);
    s.connect(endpoint);
    return s;
  }

  ManualClock clock;
  zmq::context_t ctx;
  std::string dir, tag;
  bus::EventLoop loop{clock};
  zmq::socket_t outbox_socket, events_socket;
  std::unique_ptr<bus::RequestClient> rm, store;
  std::unique_ptr<JournalReader> journals;
  std::unique_ptr<PlacementBatcher> placements;
  std::unique_ptr<JournalAppendBatcher> journal_appends;
  std::unique_ptr<WorkerOutbox> outbox;
  std::unique_ptr<EventPublisher> publisher;
  std::unique_ptr<ResultFileWriter> result_files;
  std::unique_ptr<ExperimentContext> context;
  std::unique_ptr<ExperimentRegistry> registry;
};

/// The next message on `socket` within `wait` (real time) while `loop` runs its rounds,
/// decoded; nullopt if none came.
inline std::optional<proto::Decoded> NextWhileLooping(bus::EventLoop& loop, zmq::socket_t& socket,
                                                      std::chrono::milliseconds wait) {
  for (auto deadline = std::chrono::steady_clock::now() + wait;
       std::chrono::steady_clock::now() < deadline;) {
    loop.RunOnce(bus::Duration{10});
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::milliseconds(10)) == 0) continue;
    bus::Incoming in;
    if (!bus::Receive(socket, in)) continue;
    auto d = proto::Decode(in.payload.data(), in.payload.size());
    if (d.ok()) return std::move(*d);
  }
  return std::nullopt;
}

}  // namespace tunebus::testing
