// EmbeddedSuite: the whole tunebus suite in one process (`tunectl run` without --connect,
// `tunectl up`): the same four service classes the separate binaries run, each on its own
// thread with its own event loop, talking over inproc:// endpoints of one shared context.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "libs/bus/security.hpp"
#include "libs/core/status.hpp"
#include "services/scheduler/core/retention_policy.hpp"

namespace tunebus {

class CheckpointStore;
class ResourceManager;
class Scheduler;
class TrialWorker;

struct SuiteOptions {
  std::string data_dir;  // checkpoint-store RocksDB folder
  std::string control_endpoint = "inproc://tunebus-control";
  std::string events_endpoint = "inproc://tunebus-events";
  int64_t cpus = 0;  // 0 = this machine's core count
  int64_t gpus = 0;
  std::map<std::string, double> custom;  // custom resources of the embedded worker
  /// Secures the control and events endpoints (the others are inproc://): `tunectl up
  /// --keys-dir` serves them with CURVE; without keys a non-loopback tcp:// bind is refused.
  std::shared_ptr<bus::Security> security = bus::Security::Plaintext();
  /// The scheduler's dashboard (SchedulerOptions::http, http_key_name): `tunectl up --http`.
  std::string http;
  std::string http_key_name;
  /// The scheduler's finished cache and release delay (SchedulerOptions::finished_cache_mb,
  /// release_after_ms): `tunectl up --finished-cache-mb`, `--release-after-ms`.
  int64_t finished_cache_mb = 64;
  int64_t release_after_ms = 15000;
  /// The scheduler's retention rules (SchedulerOptions::retention): `tunectl up
  /// --retain-experiments / --retain-days`.
  RetentionRules retention;
};

class EmbeddedSuite {
 public:
  /// Creates every service (binds, opens RocksDB) and starts their threads.
  /// Errors: the first service's Create() error (e.g. the control port is taken).
  static Result<std::unique_ptr<EmbeddedSuite>> Start(zmq::context_t& ctx,
                                                      const SuiteOptions& options);
  /// Stops the services in reverse order and joins their threads (idempotent).
  void Stop();
  ~EmbeddedSuite();

  /// The bound control and events endpoints (wildcard ports resolved).
  std::string control_endpoint() const { return control_endpoint_; }
  std::string events_endpoint() const;
  /// The dashboard's URL, "" without SuiteOptions::http.
  std::string http_url() const;

 private:
  EmbeddedSuite() = default;
  std::unique_ptr<CheckpointStore> store_;
  std::unique_ptr<ResourceManager> rm_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<TrialWorker> worker_;
  std::vector<std::thread> threads_;
  std::string control_endpoint_;
};

}  // namespace tunebus
